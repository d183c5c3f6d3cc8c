#include "probes/pin_heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>

namespace gpuledger::probes {
namespace {

bool holds_a_pin(const std::string& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_directory(ec)) return true;
  return false;
}

}  // namespace

std::optional<std::chrono::seconds> pins_heartbeat_age(const std::string& dir) {
  struct stat st {};
  if (dir.empty() || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !holds_a_pin(dir)) return std::nullopt;
  const auto beat = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - beat);
  return std::max(age, std::chrono::seconds(0));  // a clock stepped back: just now
}

void beat_pins_heartbeat(const std::string& dir) {
  if (!dir.empty()) ::utimensat(AT_FDCWD, dir.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}

}  // namespace gpuledger::probes
