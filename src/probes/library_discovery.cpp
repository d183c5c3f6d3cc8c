#include "probes/library_discovery.h"

#include <bpf/bpf.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "lib_discovery.skel.h"
#include "probes/bpf_handles.h"
#include "probes/map_reader.h"
#include "probes/overlay_backing.h"

namespace gpuledger::probes {
namespace fs = std::filesystem;

FileId file_id_from_stat(const struct stat& st) {
  return FileId{(static_cast<uint64_t>(major(st.st_dev)) << 20) | minor(st.st_dev), st.st_ino};
}

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

namespace {

bool is_cuda_library_name(const std::string& path) {
  auto slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.rfind("libcuda.so", 0) == 0;
}

}  // namespace

bool on_overlayfs(const std::string& path) {
  constexpr long kOverlayfsMagic = 0x794c7630;
  struct statfs sfs {};
  return ::statfs(path.c_str(), &sfs) == 0 && sfs.f_type == kOverlayfsMagic;
}

namespace {

// The file paths a process maps, as its /proc/PID/maps names them.
std::vector<std::string> mapped_paths(const std::string& proc, const std::string& pid) {
  std::vector<std::string> out;
  std::ifstream maps(proc + "/" + pid + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // address perms offset dev inode pathname
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);
    if (out.empty() || out.back() != path) out.push_back(path);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

LibraryCandidate candidate_in_process(const std::string& proc, uint32_t pid, const std::string& path,
                                      const std::string& origin) {
  const std::string base = proc + "/" + std::to_string(pid);
  LibraryCandidate c{base + "/root" + path, origin, pid, std::nullopt};
  if (auto backing = overlay_backing_file(read_file(base + "/mountinfo"), path, {proc + "/1/root", ""})) {
    c.path = *backing;
    c.probed_file = file_id_of(*backing);
  }
  return c;
}

std::vector<LibraryCandidate> scan_process_maps(const std::string& proc) {
  std::vector<LibraryCandidate> out;
  std::set<std::string> seen;
  std::error_code ec;
  for (fs::directory_iterator it(proc, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid = it->path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    for (const auto& path : mapped_paths(proc, pid)) {
      if (!is_cuda_library_name(path)) continue;
      if (seen.insert(pid + path).second)
        out.push_back(candidate_in_process(proc, static_cast<uint32_t>(std::stoul(pid)), path, "maps"));
    }
  }
  return out;
}

std::optional<LibraryCandidate> find_process_file(const std::string& proc, uint32_t pid, const FileId& id) {
  const std::string base = proc + "/" + std::to_string(pid);
  std::vector<std::string> paths = mapped_paths(proc, std::to_string(pid));
  std::error_code ec;
  for (fs::directory_iterator it(base + "/fd", ec), end; !ec && it != end; it.increment(ec)) {
    auto target = fs::read_symlink(it->path(), ec);
    if (!ec && target.is_absolute()) paths.push_back(target.string());
  }
  for (const auto& path : paths) {
    std::string reachable = base + "/root" + path;
    if (file_id_of(reachable) == id) return candidate_in_process(proc, pid, path, "open");
  }
  return std::nullopt;
}

LibOpenWatcher::LibOpenWatcher() {
  route_libbpf_logging();
  skel_ = lib_discovery__open_and_load();
  if (!skel_) throw Error(std::string("cannot load the library watcher: ") + std::strerror(errno));
  if (int err = lib_discovery__attach(skel_); err) {
    lib_discovery__destroy(skel_);
    skel_ = nullptr;
    throw Error(std::string("cannot attach the library watcher (raw tracepoint sys_exit): ") +
                std::strerror(-err));
  }
}

LibOpenWatcher::~LibOpenWatcher() {
  if (skel_) lib_discovery__destroy(skel_);
}

int LibOpenWatcher::events_fd() const { return bpf_map__fd(skel_->maps.lib_events); }

void LibOpenWatcher::remember(const FileId& id) {
  gl_file_id key{id.dev, id.ino};
  uint8_t handled = 1;
  bpf_map_update_elem(bpf_map__fd(skel_->maps.known_files), &key, &handled, BPF_ANY);
}

void LibOpenWatcher::forget(const FileId& id) {
  gl_file_id key{id.dev, id.ino};
  bpf_map_delete_elem(bpf_map__fd(skel_->maps.known_files), &key);
}

uint64_t LibOpenWatcher::events_dropped() const {
  return read_percpu_u64_sum(bpf_map__fd(skel_->maps.lib_events_dropped), 0);
}

}  // namespace gpuledger::probes
