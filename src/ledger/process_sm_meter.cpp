#include "ledger/process_sm_meter.h"

#include "common/counter_delta.h"
#include "ledger/window_split.h"

namespace gpuledger::ledger {

std::map<std::pair<std::string, std::string>, double> ProcessSmMeter::take(const std::vector<ProcessSmUse>& readings) {
  std::map<std::pair<std::string, std::string>, double> out;
  std::map<std::pair<std::string, uint32_t>, Seen> now;
  for (const auto& r : readings) {
    const std::pair<std::string, uint32_t> key{r.slot_uuid, r.pid};
    auto before = last_.find(key);
    Seen seen{r.account, r.sm_seconds_total};
    if (seen.account.empty() && before != last_.end()) seen.account = before->second.account;
    // A process not seen before counts from 0, like one whose total went down (a reused pid).
    const double delta =
        counter_delta(before == last_.end() ? 0.0 : before->second.total, r.sm_seconds_total).delta;
    if (baseline_taken_ && delta > 0) {
      if (seen.account.empty()) {
        Unattributed& u = unattributed_[r.slot_uuid];
        u.seconds += delta;
        if (!r.gpu.empty()) u.gpu = r.gpu;
        out[{r.slot_uuid, std::string(kUnattributedAccount)}] += delta;
      } else {
        out[{r.slot_uuid, seen.account}] += delta;
      }
    }
    now[key] = std::move(seen);
  }
  last_ = std::move(now);
  baseline_taken_ = true;
  return out;
}

}  // namespace gpuledger::ledger
