#include "probes/overlay_layers.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/mountinfo.h"

namespace gpuledger::probes {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "a:b\:c" -> {"a", "b:c"}: overlayfs escapes a colon inside a layer path.
std::vector<std::string> split_layers(const std::string& value) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '\\' && i + 1 < value.size() && value[i + 1] == ':') {
      cur += ':';
      ++i;
    } else if (value[i] == ':') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += value[i];
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// Whether `mount_point` contains `path`, component-wise.
bool contains(const std::string& mount_point, const std::string& path) {
  if (mount_point == "/") return true;
  return path.starts_with(mount_point) && (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

std::string device_text(uint64_t dev) {
  return std::to_string(dev >> 20) + ":" + std::to_string(dev & ((1u << 20) - 1));
}

// The host's view of mounts: PID 1's (an agent in a pod with hostPID, or on
// the host), else the agent's own - never a tenant's: both tables are
// written by root (the host, the container runtime).
std::string host_view(const std::string& proc) {
  if (UniqueFd(::open((proc + "/1/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)).valid()) return proc + "/1";
  return proc + "/self";
}

}  // namespace

std::optional<OverlayLayers> overlay_layers(const std::string& host_mountinfo, const std::string& device) {
  std::istringstream in(host_mountinfo);
  for (std::string text; std::getline(in, text);) {
    auto line = parse_mountinfo_line(text);
    if (!line || line->fstype != "overlay" || line->device != device) continue;
    OverlayLayers layers;
    std::istringstream opts(line->super_options);
    for (std::string opt; std::getline(opts, opt, ',');) {
      if (opt.starts_with("upperdir=")) layers.upper = unescape_mountinfo(opt.substr(9));
      if (opt.starts_with("lowerdir=")) {
        for (auto& l : split_layers(unescape_mountinfo(opt.substr(9)))) layers.lowers.push_back(std::move(l));
      }
      if (opt.starts_with("lowerdir+=")) layers.lowers.push_back(unescape_mountinfo(opt.substr(10)));
    }
    return layers;
  }
  return std::nullopt;
}

std::optional<std::string> path_in_overlay(const std::string& mountinfo, const std::string& device,
                                           const std::string& path) {
  // The mount that holds `path` is the last one listed at the longest
  // matching mount point (later mounts stack over earlier ones).
  std::optional<MountInfoLine> best;
  std::istringstream in(mountinfo);
  for (std::string text; std::getline(in, text);) {
    auto line = parse_mountinfo_line(text);
    if (!line || !contains(line->mount_point, path)) continue;
    if (best && line->mount_point.size() < best->mount_point.size()) continue;
    best = std::move(line);
  }
  if (!best || best->device != device) return std::nullopt;
  std::string rel = path.substr(best->mount_point == "/" ? 0 : best->mount_point.size());
  return best->root == "/" ? rel : best->root + rel;
}

std::optional<OpenedFile> open_overlay_backing(const std::string& proc, uint32_t pid, const std::string& path,
                                               uint64_t overlay_dev, const FileId& expected) {
  const std::string device = device_text(overlay_dev);
  auto rel = path_in_overlay(read_text(proc + "/" + std::to_string(pid) + "/mountinfo"), device, path);
  const std::string host = host_view(proc);
  if (host.empty()) return std::nullopt;
  auto layers = overlay_layers(read_text(host + "/mountinfo"), device);
  if (!rel || !layers) return std::nullopt;
  UniqueFd host_root(::open((host + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!host_root.valid()) return std::nullopt;
  std::vector<std::string> dirs;
  if (!layers->upper.empty()) dirs.push_back(layers->upper);
  dirs.insert(dirs.end(), layers->lowers.begin(), layers->lowers.end());
  for (const auto& dir : dirs) {
    struct open_how how {};
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const std::string candidate = dir + *rel;
    UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, host_root.get(), candidate.c_str(), &how, sizeof(how))));
    if (!fd.valid()) continue;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || file_id_from_stat(st) != expected) continue;
    OpenedFile out;
    out.fd = std::move(fd);
    out.id = expected;
    out.label = "pid " + std::to_string(pid) + ": " + path + " (layer " + dir + ")";
    return out;
  }
  return std::nullopt;
}

}  // namespace gpuledger::probes
