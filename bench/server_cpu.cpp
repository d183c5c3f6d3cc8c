#include "server_cpu.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace gpuledger::bench {

namespace {

struct Stat {
  long ppid = 0;
  double own = 0, reaped = 0;  // seconds: utime + stime, cutime + cstime
};

// /proc/PID/stat after the command's closing parenthesis (a command may hold spaces).
bool read_stat(long pid, Stat& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
  if (f.size() < 15) return false;  // f[0] is field 3 (state)
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  out.ppid = std::stol(f[1]);
  out.own = (std::stod(f[11]) + std::stod(f[12])) / tick;
  out.reaped = (std::stod(f[13]) + std::stod(f[14])) / tick;
  return true;
}

}  // namespace

long postmaster_pid(const std::string& data_dir) {
  std::ifstream pidfile(data_dir + "/postmaster.pid");
  long postmaster = 0;
  return pidfile >> postmaster ? postmaster : 0;
}

double server_cpu_seconds(const std::string& data_dir) {
  const long postmaster = postmaster_pid(data_dir);
  if (postmaster == 0) return 0;
  Stat pm;
  if (!read_stat(postmaster, pm)) return 0;
  double total = pm.own + pm.reaped;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    Stat s;
    if (read_stat(std::stol(name), s) && s.ppid == postmaster) total += s.own;
  }
  return total;
}

double own_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace gpuledger::bench
