#include "slurm/job_mapping.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "common/error.h"
#include "common/unique_fd.h"

namespace gpuledger::slurm {
namespace {

bool digits(std::string_view s, size_t max) {
  return !s.empty() && s.size() <= max && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "GPU-<hex and dashes>" or "MIG-<...>": NVML's UUID forms.
bool uuid_name(std::string_view s) {
  if (!(s.starts_with("GPU-") || s.starts_with("MIG-")) || s.size() > 96 || s.size() < 5) return false;
  return std::all_of(s.begin() + 4, s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
  });
}

// The text of a regular file at `name` under dirfd, never through a link;
// nullopt when it is none or longer than kMaxFileBytes.
std::optional<std::string> read_bounded(int dirfd, const std::string& name) {
  UniqueFd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxFileBytes))
    return std::nullopt;
  std::string text(kMaxFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > kMaxFileBytes) return std::nullopt;  // grew since the fstat
  text.resize(got);
  return text;
}

}  // namespace

bool gpu_file_name(std::string_view name) {
  if (digits(name, 4)) return true;
  if (const auto dot = name.find('.'); dot != std::string_view::npos)
    return digits(name.substr(0, dot), 4) && digits(name.substr(dot + 1), 4);
  return uuid_name(name);
}

bool job_id(std::string_view text) { return digits(text, 20); }

std::vector<std::string> parse_job_lines(std::string_view text, size_t* skipped) {
  std::vector<std::string> out;
  size_t lines = 0, bad = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (++lines > kMaxLinesPerFile) {
      ++bad;
      continue;
    }
    // "<job>" or "<job> <uid>" (dcgm-exporter's two forms); the uid is not
    // trusted here: the job's owner comes from its cgroup or from Slurm.
    const auto space = line.find(' ');
    const std::string_view job = line.substr(0, space);
    if (!job_id(job) || (space != std::string_view::npos && !digits(line.substr(space + 1), 10))) {
      ++bad;
      continue;
    }
    if (std::find(out.begin(), out.end(), job) == out.end()) out.emplace_back(job);
  }
  if (skipped) *skipped += bad;
  return out;
}

JobMapping read_job_mapping(int dirfd) {
  // A listing of its own (fdopendir takes the descriptor it is given).
  UniqueFd listing(::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* dir = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
  if (!dir) throw Error(std::string("the job-mapping directory cannot be listed: ") + std::strerror(errno));
  (void)listing.release();
  JobMapping out;
  size_t files = 0;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name.starts_with(".")) continue;  // ".", "..", the prolog's lock and files being written
    if (!gpu_file_name(name) || ++files > kMaxFiles) {
      ++out.skipped_files;
      continue;
    }
    const auto text = read_bounded(dirfd, name);
    if (!text) {
      ++out.skipped_files;
      continue;
    }
    auto jobs = parse_job_lines(*text, &out.skipped_lines);
    if (!jobs.empty()) out.jobs_by_gpu[name] = std::move(jobs);
  }
  ::closedir(dir);
  return out;
}

}  // namespace gpuledger::slurm
