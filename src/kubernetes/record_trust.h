#pragma once
// Whether a scheduler's record of a GPU fraction on a pod (HAMi's, KAI's) can
// be trusted, and what is done with one that cannot. A pod's annotations and
// labels are its author's to write, and a fraction lowers its holder's share
// of a shared GPU, so a record is trusted only as its scheduler wrote it:
//
//   * written by the scheduler: the field's owners in metadata.managedFields
//     are all scheduler managers (RecordTrust, configurable), or, for a value
//     the pod's author gives at creation (KAI's gpu-fraction), no one but the
//     scheduler wrote it after the pod was scheduled;
//   * consistent with what cannot be rewritten: the pod spec's container
//     resources (immutable; what the scheduler placed it by) and the devices
//     the kubelet handed the container.
//
// A refused record is logged once per pod and reason, counted by reason
// (gpuledger_gpu_sharing_refused_records_total), and billed as the safe
// default: the whole device (or replica) the container holds. docs/security.md
// says what this is worth.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "kubernetes/sharing_facts.h"

namespace gpuledger::kubernetes {

enum class RefusalReason {
  kMalformed,               // not the scheduler's format
  kNotBound,                // not (yet) bound here by the scheduler
  kForeignDevice,           // names a device the kubelet did not give that container
  kNotSchedulerWritten,     // its field's writer is not a scheduler manager (or unknown)
  kBelowRequest,            // a smaller part than the pod's immutable resource requests
  kChangedAfterScheduling,  // rewritten by another than the scheduler after the pod was bound
  kUnknownContainer,        // names a container the pod does not have
  kInconsistent,            // disagrees with the scheduler's reservation
};
std::string_view to_string(RefusalReason reason);  // "malformed", "not_bound", ... (snake_case)

struct RefusedRecord {
  std::string scheduler;  // "hami", "kai"
  std::string namespace_name, pod;
  RefusalReason reason = RefusalReason::kMalformed;
  std::string detail;  // for the log
  bool operator==(const RefusedRecord&) const = default;
};

// The annotation (or label, `label` true) `key` has owners, and all of them
// are among `managers`. *why says otherwise.
bool written_only_by(const PodSharingFacts& pod, std::string_view key, bool label,
                     const std::vector<std::string>& managers, std::string* why);
// Every owner of the annotation `key` is among `managers`, or last wrote no
// later than the pod was scheduled (its value is the one the scheduler placed
// the pod by). *why says otherwise.
bool unchanged_since_scheduling(const PodSharingFacts& pod, std::string_view key,
                                const std::vector<std::string>& managers, std::string* why);

// Logs and counts each refused record once while it stays refused: a record
// refused at every poll is one event; one that is mended and forged again is
// two. Bounded: at most kMaxTracked records are remembered (more are still
// counted and logged, each time).
class RefusalLog {
 public:
  static constexpr size_t kMaxTracked = 4096;
  // The records refused by the latest poll.
  void observe(const std::vector<RefusedRecord>& refused);
  // (scheduler, reason) -> records refused so far.
  std::map<std::pair<std::string, std::string>, uint64_t> totals() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string, RefusalReason>;
  mutable std::mutex mu_;
  std::set<Key> current_;
  std::map<std::pair<std::string, std::string>, uint64_t> totals_;
};

}  // namespace gpuledger::kubernetes
