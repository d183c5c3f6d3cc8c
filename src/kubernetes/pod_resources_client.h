#pragma once
// Talks to the kubelet's Pod Resources API v1 (gRPC over its unix socket) and
// keeps the latest GPU allocation of the node, polled in the background.
// The socket missing (not a Kubernetes node) or answering errors leaves the
// allocation unknown and says so in self-metrics; nothing else depends on it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <functional>
#include <map>

#include "kubernetes/gpu_allocation.h"
#include "kubernetes/sharing.h"

namespace gpuledger::kubernetes {

inline constexpr char kDefaultPodResourcesSocket[] = "/var/lib/kubelet/pod-resources/kubelet.sock";

struct PodResourcesData {
  std::vector<PodAllocation> pods;
  std::vector<ContainerDevices> allocatable;
  bool allocatable_known = false;  // GetAllocatableResources answered
};

// One synchronous round trip (List, then GetAllocatableResources). Throws Error
// with the gRPC status when List fails; an allocatable failure only leaves
// allocatable_known false.
PodResourcesData query_pod_resources(const std::string& socket_path, std::chrono::milliseconds deadline);

struct PodResourcesState {
  bool up = false;            // the last poll answered
  bool socket_present = false;
  bool ever_polled = false;
  uint64_t errors = 0;        // failed polls, in total
  uint64_t skipped_ids = 0;   // device ids that could not be parsed, last poll
  std::vector<GpuAllocation> allocations;  // from the last good poll, shares resolved (sharing.h)
  SharingStats sharing;
  // Scheduler records refused since the start, by (scheduler, reason), each
  // once while it stays refused (record_trust.h).
  std::map<std::pair<std::string, std::string>, uint64_t> refused_records;
  std::vector<GpuAllocation> inventory;
  std::string last_error;
};

class PodResourcesMonitor {
 public:
  PodResourcesMonitor(std::string socket_path, AllocationOptions options, std::chrono::milliseconds interval);
  ~PodResourcesMonitor();
  PodResourcesMonitor(const PodResourcesMonitor&) = delete;
  PodResourcesMonitor& operator=(const PodResourcesMonitor&) = delete;

  // What the API server says about sharing, read at each poll (none: the
  // kubelet's answer alone; HAMi and KAI fractions are then not seen).
  void set_sharing_facts(std::function<SharingFacts()> facts);
  void start();  // polls now, then every interval
  void stop();
  void poll_now();  // one synchronous poll (tests, start)
  PodResourcesState state() const;
  uint64_t polls() const { return polls_.load(); }

 private:
  void run();
  std::string socket_path_;
  AllocationOptions options_;
  std::function<SharingFacts()> facts_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  PodResourcesState state_;
  RefusalLog refusals_;
  bool stopping_ = false;
  std::atomic<uint64_t> polls_{0};
  std::thread thread_;
};

}  // namespace gpuledger::kubernetes
