#include "probes/library_discovery.h"

#include <bpf/bpf.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "identity/process_cgroup.h"
#include "lib_discovery.h"
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

namespace {

// Pins the watcher's map of held processes at `path`, taking over the one a
// previous agent left there (its processes are then continued by
// continue_held): a map there that is not of this layout is replaced.
void pin_held_map(bpf_map* map, const std::string& path) {
  if (int fd = bpf_obj_get(path.c_str()); fd >= 0) {
    bpf_map_info info{};
    uint32_t len = sizeof(info);
    const bool same = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.type == BPF_MAP_TYPE_HASH &&
                      info.key_size == sizeof(uint32_t) && info.value_size == sizeof(gl_held_process) &&
                      info.max_entries == bpf_map__max_entries(map);
    if (same && bpf_map__reuse_fd(map, fd) == 0) {
      ::close(fd);
      return;
    }
    ::close(fd);
    spdlog::warn("the pinned map of held processes at {} is not of this version's layout: replaced", path);
    ::unlink(path.c_str());
  }
  if (bpf_map__set_pin_path(map, path.c_str()) != 0)
    spdlog::warn("cannot pin the map of held processes at {}: an agent that dies holding a process leaves it "
                 "stopped", path);
}

// bpf_ktime_get_ns()'s clock.
uint64_t monotonic_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(now.tv_nsec);
}

// Whether `pid` is still the process that started at `start_boottime` (ns
// since boot): /proc/PID/stat's starttime is that in clock ticks.
bool process_started_at(const std::string& proc, uint32_t pid, uint64_t start_boottime) {
  std::ifstream in(proc + "/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto ticks = identity::start_ticks_in(line);
  if (!ticks) return false;
  const long per_second = ::sysconf(_SC_CLK_TCK);
  const uint64_t per_tick = per_second > 0 ? 1'000'000'000ull / static_cast<uint64_t>(per_second) : 10'000'000ull;
  return *ticks == start_boottime / per_tick;
}

}  // namespace

LibOpenWatcher::LibOpenWatcher(bool hold_new_drivers, const std::string& held_pin_path) {
  route_libbpf_logging();
  skel_ = lib_discovery__open();
  if (!skel_) throw Error(std::string("cannot open the library watcher: ") + std::strerror(errno));
  skel_->rodata->agent_tgid = static_cast<uint32_t>(::getpid());
  skel_->rodata->hold_new_drivers = hold_new_drivers;
  if (!held_pin_path.empty()) pin_held_map(skel_->maps.held_processes, held_pin_path);
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

void LibOpenWatcher::heartbeat() {
  const uint32_t zero = 0;
  const uint64_t ns = monotonic_ns();
  bpf_map_update_elem(bpf_map__fd(skel_->maps.agent_heartbeat), &zero, &ns, BPF_ANY);
}

void LibOpenWatcher::stop_holding() {
  const uint32_t zero = 0;
  const uint64_t never = 0;
  bpf_map_update_elem(bpf_map__fd(skel_->maps.agent_heartbeat), &zero, &never, BPF_ANY);
}

void LibOpenWatcher::released(uint32_t pid) {
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.held_processes), &pid);
}

size_t LibOpenWatcher::continue_held(uint64_t older_than_ns, const std::string& proc) {
  return continue_held_in(bpf_map__fd(skel_->maps.held_processes), older_than_ns, proc);
}

size_t continue_held_in(int map, uint64_t older_than_ns, const std::string& proc) {
  const uint64_t now = monotonic_ns();
  size_t continued = 0;
  for (uint32_t pid : map_keys<uint32_t>(map)) {
    gl_held_process held{};
    if (bpf_map_lookup_elem(map, &pid, &held) != 0) continue;
    if (older_than_ns && now - held.held_at < older_than_ns) continue;
    if (process_started_at(proc, pid, held.start_boottime) && ::kill(static_cast<pid_t>(pid), SIGCONT) == 0)
      ++continued;
    bpf_map_delete_elem(map, &pid);
  }
  return continued;
}

std::string held_processes_pin_path(const std::string& pin_dir) { return pin_dir + "/watcher/held_processes"; }

size_t continue_pinned_held(const std::string& pin_path, const std::string& proc) {
  const int map = bpf_obj_get(pin_path.c_str());
  if (map < 0) return 0;
  const size_t n = continue_held_in(map, 0, proc);
  ::close(map);
  return n;
}

uint64_t LibOpenWatcher::events_dropped() const {
  return read_percpu_u64_sum(bpf_map__fd(skel_->maps.lib_events_dropped), 0);
}

}  // namespace gpuledger::probes
