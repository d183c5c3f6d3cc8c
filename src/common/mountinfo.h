#pragma once
// Reading /proc/PID/mountinfo lines, shared by everything that needs to know
// what is mounted where (cgroup hierarchies, overlay layers).
#include <optional>
#include <string>
#include <string_view>

namespace gpuledger {

struct MountInfoLine {
  std::string device;       // "major:minor" as the kernel wrote it (st_dev of files there)
  std::string root;         // the part of the filesystem mounted here
  std::string mount_point;
  std::string fstype;
  std::string super_options;  // comma-separated, still escaped per option value
};

// Parses one line; nullopt for a malformed one.
std::optional<MountInfoLine> parse_mountinfo_line(const std::string& line);

// mountinfo writes space, tab, newline and backslash as \ooo octal escapes.
std::string unescape_mountinfo(std::string_view s);

}  // namespace gpuledger
