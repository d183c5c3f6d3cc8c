#include "probes/library_discovery.h"

#include <bpf/bpf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"
#include "lib_discovery.skel.h"
#include "probes/bpf_handles.h"
#include "probes/map_reader.h"

namespace gpuledger::probes {
namespace fs = std::filesystem;

std::optional<FileId> file_id_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return file_id_from_stat(st);
}

std::vector<std::string> default_driver_library_paths() {
  return {
      "/usr/lib/x86_64-linux-gnu/libcuda.so.1",   // Debian, Ubuntu
      "/usr/lib64/libcuda.so.1",                  // RHEL, SUSE
      "/usr/lib/libcuda.so.1",
      "/usr/local/nvidia/lib64/libcuda.so.1",     // GKE, device-plugin installs
      "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libcuda.so.1",  // GPU operator's driver container
      "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
      "/usr/lib/wsl/lib/libcuda.so.1",
  };
}

bool is_cuda_library_name(const std::string& path) {
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.rfind("libcuda.so", 0) == 0;
}

std::vector<LibraryCandidate> scan_process_maps(const std::string& proc) {
  std::vector<LibraryCandidate> out;
  std::error_code ec;
  for (fs::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto n = static_cast<uint32_t>(std::stoul(pid));
    for (auto& m : exec_mappings(proc, n)) out.push_back(LibraryCandidate{n, std::move(m), "maps", std::nullopt});
  }
  return out;
}

LibOpenWatcher::LibOpenWatcher(bool hold_new_drivers) {
  route_libbpf_logging();
  skel_ = lib_discovery__open();
  if (!skel_) throw Error(std::string("cannot open the library watcher: ") + std::strerror(errno));
  skel_->rodata->agent_tgid = static_cast<uint32_t>(::getpid());
  skel_->rodata->hold_new_drivers = hold_new_drivers;
  if (int err = lib_discovery__load(skel_); err) {
    lib_discovery__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot load the library watcher: ") + std::strerror(-err));
  }
  if (int err = lib_discovery__attach(skel_); err) {
    lib_discovery__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot attach the library watcher (raw tracepoint sys_exit): ") +
                std::strerror(-err));
  }
}

std::optional<FileId> LibOpenWatcher::identify(int fd) {
  const long page = ::sysconf(_SC_PAGESIZE);
  void* addr = ::mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) return std::nullopt;
  const auto start = reinterpret_cast<uint64_t>(addr);
  gl_file_id id{};
  const int map = bpf_map__fd(skel_->maps.self_maps);
  const bool found = bpf_map_lookup_elem(map, &start, &id) == 0;
  bpf_map_delete_elem(map, &start);
  ::munmap(addr, static_cast<size_t>(page));
  if (!found) return std::nullopt;
  return FileId{id.dev, id.ino};
}

LibOpenWatcher::~LibOpenWatcher() {
  if (skel_) lib_discovery__destroy(skel_);
}

int LibOpenWatcher::events_fd() const { return bpf_map__fd(skel_->maps.lib_events); }

void LibOpenWatcher::remember(const FileId& id, bool is_driver) {
  gl_file_id key{id.dev, id.ino};
  uint8_t verdict = is_driver ? GL_FILE_DRIVER : GL_FILE_OTHER;
  bpf_map_update_elem(bpf_map__fd(skel_->maps.known_files), &key, &verdict, BPF_ANY);
}

void LibOpenWatcher::forget(const FileId& id) {
  gl_file_id key{id.dev, id.ino};
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.known_files), &key);
}

uint64_t LibOpenWatcher::events_dropped() const {
  return read_percpu_u64_sum(bpf_map__fd(skel_->maps.lib_events_dropped), 0);
}

}  // namespace gpuledger::probes
