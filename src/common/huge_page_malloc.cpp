#include "common/huge_page_malloc.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace gpuledger {

namespace {
constexpr const char* kTunables = "GLIBC_TUNABLES";
}  // namespace

std::optional<std::string> huge_page_malloc_tunables(const char* current) {
  if (current) return std::nullopt;
  return "glibc.malloc.hugetlb=1";
}

void restart_with_huge_page_malloc() {
  const auto tunables = huge_page_malloc_tunables(std::getenv(kTunables));
  if (!tunables) return;
  // The arguments as the kernel holds them: NUL-terminated, one after another.
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (cmdline.empty() || cmdline.back() != '\0') return;
  std::vector<char*> argv;
  for (size_t at = 0; at < cmdline.size(); at = cmdline.find('\0', at) + 1)
    argv.push_back(const_cast<char*>(cmdline.data() + at));
  argv.push_back(nullptr);
  if (setenv(kTunables, tunables->c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv.data());
  unsetenv(kTunables);  // not restarted: as it was
}

}  // namespace gpuledger
