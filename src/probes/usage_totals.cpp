#include "probes/usage_totals.h"

#include <algorithm>

#include "common/counter_delta.h"

namespace gpuledger::probes {

namespace {
template <typename Counters>
double busy_ns_of(const Counters& c) {
  if constexpr (requires { c.busy_ns; }) {
    return static_cast<double>(c.busy_ns);  // launch-to-completion spans (kernel side)
  } else {
    return static_cast<double>(c.sync_ns);  // until then: time blocked in synchronisation
  }
}
}  // namespace

double busy_seconds_estimate(const Usage& usage) { return busy_ns_of(usage.counters) / 1e9; }

namespace {

constexpr size_t kFields = sizeof(gl_counters) / sizeof(uint64_t);

uint64_t* fields(gl_counters& c) { return reinterpret_cast<uint64_t*>(&c); }
const uint64_t* fields(const gl_counters& c) { return reinterpret_cast<const uint64_t*>(&c); }

}  // namespace

Usage& Usage::operator+=(const Usage& other) {
  for (size_t i = 0; i < kFields; ++i) fields(counters)[i] += fields(other.counters)[i];
  for (const auto& [call, n] : other.errors_by_call) errors_by_call[call] += n;
  for (const auto& [table, n] : other.export_tables) export_tables[table] += n;
  return *this;
}

bool Usage::operator==(const Usage& other) const {
  return std::equal(fields(counters), fields(counters) + kFields, fields(other.counters)) &&
         errors_by_call == other.errors_by_call && export_tables == other.export_tables;
}

void UsageTotals::absorb(const std::map<probes::CounterKey, gl_counters>& counters,
                         const std::map<probes::ErrorKey, uint64_t>& errors, const CallNameLookup& names) {
  std::lock_guard lock(mu_);
  for (const auto& [key, now] : counters) {
    gl_counters& last = last_counters_[key];
    gl_counters& total = totals_[key].counters;
    // An entry re-created since the last reading counts from 0 (common/counter_delta.h).
    for (size_t i = 0; i < kFields; ++i) fields(total)[i] += counter_delta(fields(last)[i], fields(now)[i]).delta;
    last = now;
  }
  for (const auto& [ekey, now] : errors) {
    uint64_t& last = last_errors_[ekey];
    totals_[ekey.where].errors_by_call[names.call_name(ekey.call_id)] += counter_delta(last, now).delta;
    last = now;
  }
}

void UsageTotals::absorb_export_tables(const std::map<probes::ExportTableKey, uint64_t>& tables) {
  std::lock_guard lock(mu_);
  for (const auto& [tkey, now] : tables) {
    uint64_t& last = last_tables_[tkey];
    totals_[tkey.where].export_tables[tkey.table] += counter_delta(last, now).delta;
    last = now;
  }
}

void UsageTotals::forget_entries(uint64_t cgroup_key) { forget_entries(std::set<uint64_t>{cgroup_key}); }

void UsageTotals::forget_entries(const std::set<uint64_t>& cgroup_keys) {
  std::lock_guard lock(mu_);
  std::erase_if(last_counters_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.cgroup_key); });
  std::erase_if(last_errors_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.where.cgroup_key); });
  std::erase_if(last_tables_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.where.cgroup_key); });
}

void UsageTotals::drop(const std::set<uint64_t>& cgroup_keys) {
  std::lock_guard lock(mu_);
  std::erase_if(totals_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.cgroup_key); });
  std::erase_if(last_counters_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.cgroup_key); });
  std::erase_if(last_errors_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.where.cgroup_key); });
  std::erase_if(last_tables_, [&](const auto& kv) { return cgroup_keys.contains(kv.first.where.cgroup_key); });
}

std::map<probes::CounterKey, Usage> UsageTotals::totals() const {
  std::lock_guard lock(mu_);
  return totals_;
}

}  // namespace gpuledger::probes
