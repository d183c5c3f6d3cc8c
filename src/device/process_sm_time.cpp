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
  judge_shape(d, samples);
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

void ProcessSmTime::judge_shape(Device& d, const std::vector<Sample>& samples) {
  std::map<unsigned long long, std::set<uint32_t>> by_instant;
  for (const auto& s : samples) by_instant[s.timestamp_us].insert(s.pid);
  // The pid of each instant in time order; a turn is a change of pid.
  std::vector<uint32_t> turns;
  for (const auto& [instant, pids] : by_instant) {
    if (pids.size() > 1) {
      d.shared_instant = true;
      return;
    }
    if (turns.empty() || turns.back() != *pids.begin()) turns.push_back(*pids.begin());
  }
  // A, B, A: both were running while the other was sampled. A, B alone is a
  // hand-over (one exited, the next started) and says nothing.
  std::map<uint32_t, unsigned> turns_of;
  for (uint32_t pid : turns)
    if (++turns_of[pid] > 1) d.interleaved = true;
}

std::optional<bool> ProcessSmTime::splits_processes(const std::string& uuid) const {
  auto d = devices_.find(uuid);
  if (d == devices_.end()) return std::nullopt;
  if (d->second.shared_instant) return true;
  if (d->second.interleaved) return false;
  return std::nullopt;
}

unsigned long long ProcessSmTime::last_sample_us(const std::string& uuid, uint32_t pid) const {
  auto d = devices_.find(uuid);
  if (d == devices_.end()) return 0;
  auto p = d->second.processes.find(pid);
  return p == d->second.processes.end() ? 0 : p->second.last_us;
}

}  // namespace gpuledger::device
