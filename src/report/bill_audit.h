#pragma once
// The audit part of a bill: the node and cluster it is from, the price lists
// and policies it was made with (ledger/bill_inputs.h), whether its range is
// a closed period, and a bill identifier that changes when any input changes:
// SHA-256 over the range, the node, the cluster, the price lists and every
// stored window in the range (its GPU, times, cost, charges, accounts, shares,
// readings and energy), taken in (start, GPU) order so the storage order does
// not matter. The grouping and granularity are views of one bill: they do not
// change it.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/bill_inputs.h"
#include "ledger/store.h"
#include "report/report.h"

namespace gpuledger::report {

class BillHasher {
 public:
  void add(const ledger::WindowRecord& window);
  // The windows named by their source instead of one by one (a fleet
  // database's digest of the windows it holds, fleet/fleet_reader.h): the
  // same bill id whichever of its roll-ups or windows were read.
  void use_windows_digest(std::string digest) { windows_digest_ = std::move(digest); }
  // Said before the windows are added: they will be named by their source,
  // so add() only notes their policies.
  void windows_named_by_source() { named_by_source_ = true; }
  // "sha256:<64 hex digits>"
  std::string finish(int64_t from, int64_t to, const ledger::BillInputs& inputs);

 private:
  struct Entry {
    int64_t start;
    std::string uuid;
    std::array<unsigned char, 32> digest;
  };
  std::vector<Entry> windows_;
  std::string windows_digest_;
  bool named_by_source_ = false;
  std::vector<std::string> policies_;
  friend void fill_audit(Report&, BillHasher&, const ledger::BillInputs&, int64_t);
};

// Fills report.audit (the report's range and generated_at must be set).
void fill_audit(Report& report, BillHasher& hasher, const ledger::BillInputs& inputs, int64_t generated_at);

// The audit in plain words, one line each, for the table and the HTML:
// the bill id, node and cluster (or why unknown), the period (and whether it
// is partial), the policies, the price lists, and the line that reconciles
// GPU-hours x rate with the cost.
std::vector<std::string> audit_lines(const Report& report);

// The configured rate of the slot per GPU-hour (micro-units), from the price
// list in effect over the whole range; nullopt when none was recorded, or
// several with different rates for it were in effect (the windows' costs then
// give a measured rate).
std::optional<int64_t> listed_rate_micros(const Audit& audit, const ledger::GpuSlot& slot);

// Why node or cluster are unknown, where they stand.
inline constexpr const char* kNodeUnknown =
    "unknown (this store was written by an agent that did not record its node)";
inline constexpr const char* kClusterUnknown =
    "unknown (the agent was not given --cluster-name or $CLUSTER_NAME when it wrote this store)";

}  // namespace gpuledger::report
