#include "probes/overlay_backing.h"

#include "common/mountinfo.h"

#include <sys/stat.h>

#include <sstream>
#include <vector>

namespace gpuledger::probes {
namespace {

// Whether `mount_point` contains `path`, component-wise.
bool contains(const std::string& mount_point, const std::string& path) {
  if (mount_point == "/") return true;
  return path.rfind(mount_point, 0) == 0 && (path.size() == mount_point.size() || path[mount_point.size()] == '/');
}

struct OverlayMount {
  std::string mount_point;
  std::string root;  // the part of the overlay mounted there ("/" for a whole one)
  std::string upper;
  std::vector<std::string> lowers;  // topmost first
};

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

std::optional<OverlayMount> overlay_mount(const MountInfoLine& line) {
  if (line.fstype != "overlay") return std::nullopt;
  OverlayMount m;
  m.root = line.root;
  m.mount_point = line.mount_point;
  std::istringstream opts(line.super_options);
  for (std::string opt; std::getline(opts, opt, ',');) {
    if (opt.rfind("upperdir=", 0) == 0) m.upper = unescape_mountinfo(opt.substr(9));
    if (opt.rfind("lowerdir=", 0) == 0)
      for (auto& l : split_layers(unescape_mountinfo(opt.substr(9)))) m.lowers.push_back(l);
    if (opt.rfind("lowerdir+=", 0) == 0) m.lowers.push_back(unescape_mountinfo(opt.substr(10)));
  }
  return m;
}

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::optional<std::string> overlay_backing_file(const std::string& mountinfo, const std::string& path,
                                                const std::vector<std::string>& roots) {
  // The mount that holds `path` is the last one listed at the longest
  // matching mount point (later mounts stack over earlier ones).
  std::optional<OverlayMount> best;
  size_t best_len = 0;
  bool best_is_overlay = false;
  std::istringstream in(mountinfo);
  for (std::string text; std::getline(in, text);) {
    auto line = parse_mountinfo_line(text);
    if (!line || !contains(line->mount_point, path) || line->mount_point.size() < best_len) continue;
    best_len = line->mount_point.size();
    best = overlay_mount(*line);
    best_is_overlay = best.has_value();
  }
  if (!best_is_overlay) return std::nullopt;

  std::string rel = path.substr(best->mount_point == "/" ? 0 : best->mount_point.size());
  if (best->root != "/") rel = best->root + rel;
  // A copied-up file lives in the upper layer; otherwise the topmost lower wins.
  for (const auto& root : roots) {
    if (!best->upper.empty() && is_regular(root + best->upper + rel)) return root + best->upper + rel;
    for (const auto& lower : best->lowers)
      if (is_regular(root + lower + rel)) return root + lower + rel;
  }
  return std::nullopt;
}

}  // namespace gpuledger::probes
