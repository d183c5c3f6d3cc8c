#include "device/process_sm_time.h"

#include <algorithm>
#include <set>

namespace gpuledger::device {

void ProcessSmTime::add(const std::string& uuid, unsigned long long cursor, const std::vector<Sample>& samples) {
  Device& d = devices_[uuid];
  if (samples.empty()) return;
  std::set<unsigned long long> instants;
  for (const auto& s : samples) instants.insert(s.timestamp_us);
  std::vector<double> gaps;
  for (auto it = std::next(instants.begin()); it != instants.end(); ++it)
    gaps.push_back(static_cast<double>(*it - *std::prev(it)) / 1e6);
  if (!gaps.empty()) {
    std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
    d.period_s = gaps[gaps.size() / 2];
  } else if (!d.period_s && cursor != 0 && *instants.begin() > cursor) {
    d.period_s = static_cast<double>(*instants.begin() - cursor) / 1e6;
  }
  const double period = d.period_s.value_or(1.0);
  for (const auto& s : samples) {
    Entry& e = d.processes[s.pid];
    e.seconds += std::min(s.sm_percent, 100u) / 100.0 * period;
    e.quiet_polls = 0;
    e.last_us = std::max(e.last_us, s.timestamp_us);
  }
  while (d.processes.size() > kMaxProcesses) {
    auto smallest = std::min_element(d.processes.begin(), d.processes.end(),
                                     [](const auto& a, const auto& b) { return a.second.seconds < b.second.seconds; });
    d.processes.erase(smallest);
    ++dropped_;
  }
}

std::map<uint32_t, double> ProcessSmTime::totals(const std::string& uuid) {
  std::map<uint32_t, double> out;
  auto it = devices_.find(uuid);
  if (it == devices_.end()) return out;
  for (auto p = it->second.processes.begin(); p != it->second.processes.end();) {
    if (p->second.quiet_polls++ >= kKeepPolls) {
      p = it->second.processes.erase(p);
      continue;
    }
    out[p->first] = p->second.seconds;
    ++p;
  }
  return out;
}

unsigned long long ProcessSmTime::last_sample_us(const std::string& uuid, uint32_t pid) const {
  auto d = devices_.find(uuid);
  if (d == devices_.end()) return 0;
  auto p = d->second.processes.find(pid);
  return p == d->second.processes.end() ? 0 : p->second.last_us;
}

}  // namespace gpuledger::device
