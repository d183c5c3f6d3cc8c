#include "common/mountinfo.h"

#include <sstream>
#include <vector>

namespace gpuledger {

std::string unescape_mountinfo(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    bool octal = s[i] == '\\' && i + 3 < s.size();
    if (octal) {
      for (size_t k = 1; k <= 3; ++k) octal = octal && s[i + k] >= '0' && s[i + k] <= '7';
    }
    if (octal) {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<MountInfoLine> parse_mountinfo_line(const std::string& line) {
  // id parent major:minor root mount-point options [optional fields...] - fstype source super-options
  std::istringstream in(line);
  std::vector<std::string> f;
  for (std::string w; in >> w;) f.push_back(w);
  size_t dash = 6;
  while (dash < f.size() && f[dash] != "-") ++dash;
  if (dash + 2 >= f.size()) return std::nullopt;  // no fstype and source after the separator
  MountInfoLine m;
  m.device = f[2];
  m.root = unescape_mountinfo(f[3]);
  m.mount_point = unescape_mountinfo(f[4]);
  m.fstype = f[dash + 1];
  m.super_options = dash + 3 < f.size() ? f[dash + 3] : "";
  return m;
}

}  // namespace gpuledger
