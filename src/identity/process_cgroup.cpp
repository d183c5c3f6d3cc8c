#include "identity/process_cgroup.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <sstream>

#include "common/unique_fd.h"

namespace gpuledger::identity {

namespace {

constexpr size_t kMaxRead = 16384;  // a cgroup file of many v1 hierarchies fits; more is not read

std::optional<std::string> read_at(int dir, const char* name) {
  UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd.valid()) return std::nullopt;
  std::string out(kMaxRead, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) return std::nullopt;  // ESRCH: the process is gone
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

std::optional<uint64_t> boot_unix_us(const std::string& proc_root) {
  UniqueFd dir(::open(proc_root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return std::nullopt;
  auto stat = read_at(dir.get(), "stat");
  if (!stat) return std::nullopt;
  auto pos = stat->find("\nbtime ");
  if (pos == std::string::npos) return std::nullopt;
  uint64_t btime = 0;
  const char* b = stat->data() + pos + 7;
  if (std::from_chars(b, stat->data() + stat->size(), btime).ec != std::errc{}) return std::nullopt;
  return btime * 1'000'000;
}

}  // namespace

std::optional<std::string> cgroup_path_in(const std::string& text, const std::string& v1_controller) {
  std::istringstream in(text);
  std::string line, v1;
  while (std::getline(in, line)) {
    if (line.starts_with("0::/")) return line.substr(3);
    // hierarchy-id:controller,list:path
    auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || v1_controller.empty()) continue;
    std::istringstream controllers(line.substr(a + 1, b - a - 1));
    for (std::string c; std::getline(controllers, c, ',');)
      if (c == v1_controller && line.compare(b + 1, 1, "/") == 0) v1 = line.substr(b + 1);
  }
  if (!v1.empty()) return v1;
  return std::nullopt;
}

std::optional<uint64_t> start_ticks_in(const std::string& stat) {
  auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // After ") ": field 3 (state) onwards; the start time is field 22.
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(in >> field)) return std::nullopt;
  uint64_t ticks = 0;
  if (std::from_chars(field.data(), field.data() + field.size(), ticks).ec != std::errc{}) return std::nullopt;
  return ticks;
}

std::optional<ProcessCgroup> read_process_cgroup(const std::string& proc_root, uint32_t pid,
                                                 const std::string& v1_controller) {
  if (pid == 0) return std::nullopt;
  const std::string dir_path = proc_root + "/" + std::to_string(pid);
  UniqueFd dir(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dir.valid()) return std::nullopt;
  auto cgroup = read_at(dir.get(), "cgroup");
  if (!cgroup) return std::nullopt;
  auto path = cgroup_path_in(*cgroup, v1_controller);
  if (!path) return std::nullopt;
  ProcessCgroup out{*path, 0};
  const long hz = ::sysconf(_SC_CLK_TCK);
  auto stat = read_at(dir.get(), "stat");
  auto ticks = stat ? start_ticks_in(*stat) : std::nullopt;
  auto boot = boot_unix_us(proc_root);
  if (ticks && boot && hz > 0) out.start_unix_us = *boot + *ticks * 1'000'000 / static_cast<uint64_t>(hz);
  return out;
}

}  // namespace gpuledger::identity
