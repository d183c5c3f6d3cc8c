#include "server_pages.h"

#include <fstream>
#include <sstream>

#include "server_cpu.h"

namespace gpuledger::bench {

long server_huge_page_mib(const std::string& data_dir) {
  const long postmaster = postmaster_pid(data_dir);
  if (postmaster == 0) return 0;
  std::ifstream smaps("/proc/" + std::to_string(postmaster) + "/smaps");
  long size_kib = 0, huge_kib = 0;  // the mapping being read: its Size, then its KernelPageSize
  for (std::string line; std::getline(smaps, line);) {
    std::istringstream in(line);
    std::string key;
    long kib = 0;
    if (!(in >> key >> kib)) continue;
    if (key == "Size:") size_kib = kib;
    else if (key == "KernelPageSize:" && kib > 4) huge_kib += size_kib;
  }
  return huge_kib / 1024;
}

std::string describe_server_pages(const std::string& data_dir) {
  const long mib = server_huge_page_mib(data_dir);
  if (mib > 0) return "huge pages (" + std::to_string(mib) + " MiB)";
  return "4 KiB pages (huge_pages=off, or vm.nr_hugepages short of its shared_memory_size_in_huge_pages)";
}

}  // namespace gpuledger::bench
