#include "identity/cgroup_fs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace gpuledger::identity {
namespace fs = std::filesystem;

namespace {

// mountinfo escapes spaces and a few others as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

CgroupMounts discover_cgroup_mounts(const std::string& mountinfo, const std::string& proc_cgroups,
                                    const std::string& v1_controller) {
  CgroupMounts mounts;
  mounts.v1_controller = v1_controller;
  std::ifstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 3 > f.end()) continue;
    const std::string& fstype = *(dash + 1);
    const std::string& super_options = *(dash + 3);
    std::string mount_point = unescape_octal(f[4]);
    if (fstype == "cgroup2" && mounts.v2.empty()) {
      mounts.v2 = mount_point;
    } else if (fstype == "cgroup" && mounts.v1.empty()) {
      std::istringstream opts(super_options);
      for (std::string opt; std::getline(opts, opt, ',');)
        if (opt == v1_controller) mounts.v1 = mount_point;
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
