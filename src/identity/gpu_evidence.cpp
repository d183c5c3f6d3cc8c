#include "identity/gpu_evidence.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string_view>

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
  constexpr std::string_view kPrefix = "/dev/nvidia";
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (++examined > kMaxFdsExamined) break;
    char target[64];
    ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof(target));
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) continue;
    std::string_view t(target, static_cast<size_t>(n));
    if (!t.starts_with(kPrefix)) continue;
    t.remove_prefix(kPrefix.size());
    unsigned minor = 0;
    auto [p, err] = std::from_chars(t.data(), t.data() + t.size(), minor);
    if (err == std::errc() && p == t.data() + t.size() && !t.empty() && minor <= 247) out.push_back(minor);
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
