#pragma once
// `gpuledger agent` run as a separate process, the way it runs on a node, so
// its CPU time and memory can be read from /proc without the benchmark's own.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "simulation/tenant.h"

namespace gpuledger::bench {

class AgentProcess {
 public:
  // Starts `agent_binary agent --no-discovery --cuda-lib LIB --listen 127.0.0.1:PORT
  // [extra...]` on a free port and waits until /healthz answers. Throws Error.
  AgentProcess(const std::string& agent_binary, const std::string& cuda_lib,
               const std::vector<std::string>& extra_args = {});
  ~AgentProcess();  // SIGTERM, then SIGKILL if it lingers
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  pid_t pid() const { return child_->pid(); }
  std::string get(const std::string& path) const;  // body of a 200 answer; throws Error otherwise

  double cpu_seconds() const;      // utime + stime, /proc/PID/stat
  uint64_t rss_kib() const;        // VmRSS, /proc/PID/status
  uint64_t bpf_map_kib() const;    // sum of memlock over its BPF map fds (kernel memory, not in RSS)

 private:
  int port_ = 0;
  std::unique_ptr<simulation::Child> child_;
};

}  // namespace gpuledger::bench
