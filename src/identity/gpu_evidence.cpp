#include "identity/gpu_evidence.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

namespace gpuledger::identity {

std::vector<unsigned> read_open_gpu_minors(const std::string& proc_root, unsigned pid) {
  std::vector<unsigned> out;
  const std::string dir = proc_root + "/" + std::to_string(pid) + "/fd";
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return out;
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return out;
  }
  size_t examined = 0;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (++examined > kMaxFdsExamined) break;
    // The open file itself (the /proc fd entry's target), not a name in anyone's namespace.
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, 0) != 0 || !S_ISCHR(st.st_mode)) continue;
    if (major(st.st_rdev) == kNvidiaMajor && minor(st.st_rdev) <= 247) out.push_back(minor(st.st_rdev));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

GpuChoice choose_gpu(const std::optional<GpuIdentity>& hint, const std::set<std::string>& held,
                     const std::vector<GpuIdentity>& inventory) {
  auto known = [&](const std::string& uuid) -> GpuIdentity {
    for (const auto& g : inventory)
      if (g.uuid == uuid) return g;
    return {std::nullopt, uuid, std::nullopt};
  };
  if (hint && hint->uuid.rfind("GPU-", 0) != 0) return {hint, "environment", false};  // MIG: see above
  if (held.empty()) return {hint, hint ? "environment" : "", false};
  if (hint && held.contains(hint->uuid)) return {hint, "device", false};
  // The device side alone, or against the environment: it wins when it names
  // one GPU; more than one cannot say which the ordinal is.
  GpuChoice c;
  c.disagreed = hint.has_value();
  if (held.size() == 1) {
    c.gpu = known(*held.begin());
    c.source = "device";
  }
  return c;
}

}  // namespace gpuledger::identity
