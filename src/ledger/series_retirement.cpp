#include "ledger/series_retirement.h"

#include <algorithm>

#include "ledger/window_split.h"

namespace gpuledger::ledger {

namespace {
bool special(const AccountLabels& l) {
  return l.namespace_name.empty() && l.pod.empty() && l.container.empty() &&
         is_special_account(l.team);
}
}  // namespace

void SeriesRetirement::seen(const AccountLabels& labels, double time) {
  if (after_ <= 0 || special(labels)) return;
  double& last = last_seen_[{labels.namespace_name, labels.pod, labels.container, labels.team}];
  last = std::max(last, time);
}

std::vector<AccountLabels> SeriesRetirement::due(double now) {
  std::vector<AccountLabels> out;
  if (after_ <= 0) return out;
  std::erase_if(last_seen_, [&](const auto& kv) {
    if (now - kv.second < after_) return false;
    out.push_back({kv.first[0], kv.first[1], kv.first[2], kv.first[3]});
    return true;
  });
  return out;
}

}  // namespace gpuledger::ledger
