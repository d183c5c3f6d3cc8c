#pragma once
// Test support: runs the gpuledger binary as a user would and reads what it wrote.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuledger::testing {

struct Proc {
  int status = -1;
  std::string out;  // stdout and stderr together (unless run() sends stderr elsewhere)
};

// `stderr`: where the command's stderr goes (" 2>&1": with stdout; " 2>/dev/null": nowhere).
inline Proc run(const std::string& cmd, const char* stderr_to = " 2>&1") {
  Proc r;
  FILE* p = popen((cmd + stderr_to).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string gpuledger() { return GPULEDGER_BINARY; }

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The two minutes the fixture store holds (report_fixture.h).
inline const std::string kRange = " --from 2027-01-15T08:00:00Z --to 2027-01-15T08:02:00Z";

}  // namespace gpuledger::testing
