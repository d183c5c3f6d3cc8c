#pragma once
// Talks to the kubelet's Pod Resources API v1 (gRPC over its unix socket) and
// keeps the latest GPU allocation of the node, polled in the background.
// The socket missing (not a Kubernetes node) or answering errors leaves the
// allocation unknown and says so in self-metrics; nothing else depends on it.
// While it does not answer, it is polled again every 500 ms (whatever the
// interval), and at once when its socket is created again (socket_watch.h: a
// kubelet restart between polls), so an allocation is read within a second of
// the socket coming back; billing() says what bills the windows meanwhile
// (allocation_outage.h).
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

#include <optional>

#include "kubernetes/allocation_outage.h"
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
  // The last answer's allocations, kept through an outage (allocation_outage.h),
  // and when it came; nullopt: the kubelet never answered.
  std::vector<GpuAllocation> last_answer;
  std::optional<std::chrono::steady_clock::time_point> last_answer_at;
};

// How soon a poll is retried while the kubelet does not answer.
inline constexpr std::chrono::milliseconds kPodResourcesRetryWhileDown{500};

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
  // For how long after its last answer an unanswering kubelet's allocation
  // still bills the windows (default 600 s; 0: not at all).
  void set_keep_last_answer(std::chrono::seconds keep);
  BillingAllocation billing() const;
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
  std::chrono::seconds keep_{600};
  bool stopping_ = false;
  std::atomic<uint64_t> polls_{0};
  std::thread thread_;
};

}  // namespace gpuledger::kubernetes
