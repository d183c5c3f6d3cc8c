#pragma once
// Test support: `gpuledger agent` as a separate process, as it runs on a node
// (optionally under a wrapper such as setpriv), its log in a file and its
// port read back from the "serving" line, so tests never pick a fixed port.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gpuledger::testing {

class AgentUnderTest {
 public:
  // Runs `[wrapper...] BINARY agent --listen 127.0.0.1:0 --no-nvml
  // --pod-resources-socket "" [args...]` and waits (20 s) for it to serve.
  // Throws std::runtime_error with the log when it exits or never serves.
  AgentUnderTest(const std::string& binary, const std::vector<std::string>& args,
                 const std::vector<std::string>& wrapper = {});
  ~AgentUnderTest();  // SIGTERM, then SIGKILL after 30 s; reaped
  AgentUnderTest(const AgentUnderTest&) = delete;
  AgentUnderTest& operator=(const AgentUnderTest&) = delete;

  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  std::string log() const;
  uint64_t rss_kib() const;      // VmRSS
  std::string status_field(const std::string& key) const;  // e.g. "CapEff" from /proc/PID/status

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::filesystem::path log_;
};

}  // namespace gpuledger::testing
