#include "identity/cgroup_fs.h"

#include "common/mountinfo.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuledger::identity {
namespace fs = std::filesystem;

CgroupMounts discover_cgroup_mounts(const std::string& mountinfo, const std::string& proc_cgroups,
                                    const std::string& v1_controller) {
  CgroupMounts mounts;
  mounts.v1_controller = v1_controller;
  std::ifstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    auto m = parse_mountinfo_line(line);
    if (!m) continue;
    if (m->fstype == "cgroup2" && mounts.v2.empty()) {
      mounts.v2 = m->mount_point;
    } else if (m->fstype == "cgroup" && mounts.v1.empty()) {
      std::istringstream opts(m->super_options);
      for (std::string opt; std::getline(opts, opt, ',');)
        if (opt == v1_controller) mounts.v1 = m->mount_point;
    }
  }
  // /proc/cgroups lists the compiled-in controllers in subsystem-id order.
  std::ifstream cg(proc_cgroups);
  uint32_t index = 0;
  while (std::getline(cg, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name == v1_controller) mounts.v1_subsys_index = index;
    ++index;
  }
  if (mounts.v1.empty()) mounts.v1_subsys_index.reset();
  return mounts;
}

std::optional<uint64_t> cgroup_id_of(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

std::optional<std::string> find_cgroup_path(const std::string& mount, uint64_t id) {
  std::error_code ec;
  if (cgroup_id_of(mount) == id) return "/";
  fs::recursive_directory_iterator it(mount, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    if (cgroup_id_of(it->path().string()) == id)
      return "/" + fs::relative(it->path(), mount, ec).string();
  }
  return std::nullopt;
}

}  // namespace gpuledger::identity
