#include "kubernetes/record_trust.h"

#include <algorithm>

#include "common/log.h"

namespace gpuledger::kubernetes {
namespace {

const std::vector<FieldOwner>* owners_of(const PodSharingFacts& pod, std::string_view key, bool label) {
  const auto& m = label ? pod.owners.labels : pod.owners.annotations;
  auto it = m.find(std::string(key));
  return it == m.end() || it->second.empty() ? nullptr : &it->second;
}

bool listed(const std::vector<std::string>& managers, const std::string& name) {
  return std::find(managers.begin(), managers.end(), name) != managers.end();
}

// Names from the pod's metadata in the log: bounded and quoted.
std::string shown(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 128)) out += (c >= 0x20 && c < 0x7f && c != '\'') ? c : '?';
  return out + (s.size() > 128 ? "...'" : "'");
}

}  // namespace

std::string_view to_string(RefusalReason reason) {
  switch (reason) {
    case RefusalReason::kMalformed: return "malformed";
    case RefusalReason::kNotBound: return "not_bound";
    case RefusalReason::kForeignDevice: return "foreign_device";
    case RefusalReason::kNotSchedulerWritten: return "not_scheduler_written";
    case RefusalReason::kBelowRequest: return "below_request";
    case RefusalReason::kChangedAfterScheduling: return "changed_after_scheduling";
    case RefusalReason::kUnknownContainer: return "unknown_container";
    case RefusalReason::kInconsistent: return "inconsistent";
  }
  return "malformed";
}

bool written_only_by(const PodSharingFacts& pod, std::string_view key, bool label,
                     const std::vector<std::string>& managers, std::string* why) {
  const auto* owners = owners_of(pod, key, label);
  if (!owners) {
    *why = std::string(key) + (pod.owners.present ? " has no writer in managedFields" : ": the pod has no managedFields");
    return false;
  }
  for (const auto& o : *owners)
    if (!listed(managers, o.manager)) {
      *why = std::string(key) + " was written by manager " + shown(o.manager) + ", not the scheduler's";
      return false;
    }
  return true;
}

bool unchanged_since_scheduling(const PodSharingFacts& pod, std::string_view key,
                                const std::vector<std::string>& managers, std::string* why) {
  const auto* owners = owners_of(pod, key, false);
  if (!owners) {
    *why = std::string(key) + (pod.owners.present ? " has no writer in managedFields" : ": the pod has no managedFields");
    return false;
  }
  for (const auto& o : *owners) {
    if (listed(managers, o.manager)) continue;
    if (!pod.scheduled_at || !o.time) {
      *why = std::string(key) + " was written by manager " + shown(o.manager) + " at a time that cannot be told";
      return false;
    }
    if (*o.time > *pod.scheduled_at) {
      *why = std::string(key) + " was rewritten by manager " + shown(o.manager) + " " +
             std::to_string(*o.time - *pod.scheduled_at) + " s after the pod was scheduled";
      return false;
    }
  }
  return true;
}

void RefusalLog::observe(const std::vector<RefusedRecord>& refused) {
  std::lock_guard lock(mu_);
  std::set<Key> now;
  for (const auto& r : refused) {
    Key key{r.scheduler, r.namespace_name, r.pod, r.reason};
    bool known = current_.contains(key);
    if (!known) {
      ++totals_[{r.scheduler, std::string(to_string(r.reason))}];
      spdlog::warn("kubernetes sharing: refused the {} record of pod {}/{} ({}: {}); billing the whole device it holds",
                   r.scheduler == "hami" ? "HAMi" : "KAI", shown(r.namespace_name), shown(r.pod), to_string(r.reason),
                   r.detail);
    }
    if (now.size() < kMaxTracked) now.insert(std::move(key));
  }
  current_ = std::move(now);
}

std::map<std::pair<std::string, std::string>, uint64_t> RefusalLog::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace gpuledger::kubernetes
