#pragma once
// Finds CUDA runtimes off the agent's event thread: reading a process's files
// for runtime symbols takes tens of milliseconds the first time, and the event
// thread must stay quick (a new process's GPU view is read while it lives).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>
#include <set>
#include <string>
#include <thread>

#include "probes/runtime_attacher.h"

namespace gpuledger::attribution {

class RuntimeDiscoveryWorker {
 public:
  // `drivers`: the driver files probed now (their processes are the ones
  // whose runtimes the backstop scan looks at).
  RuntimeDiscoveryWorker(probes::RuntimeAttacher& attacher, std::string proc_root,
                         std::function<std::set<probes::FileId>()> drivers);
  ~RuntimeDiscoveryWorker();
  RuntimeDiscoveryWorker(const RuntimeDiscoveryWorker&) = delete;
  RuntimeDiscoveryWorker& operator=(const RuntimeDiscoveryWorker&) = delete;

  void look_at(uint32_t pid);  // a process that mapped the driver
  // Every process that maps a driver, in the background, among the mappings
  // of the backstop's scan (read once for the driver and the runtime).
  void scan_all(std::vector<probes::LibraryCandidate> scanned);
  void scan_all_now();         // the same, on the caller's thread (at start: before unclaimed pins go)

 private:
  void run();

  probes::RuntimeAttacher& attacher_;
  const std::string proc_root_;
  std::function<std::set<probes::FileId>()> drivers_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::set<uint32_t> pids_;
  std::optional<std::vector<probes::LibraryCandidate>> scanned_;  // the last scan's, not yet looked at
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuledger::attribution
