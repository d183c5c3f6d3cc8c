#pragma once
// The fleet report: the same report for every node, from a Prometheus server
// that scrapes each node's agent (/metrics: gpuledger_cost_total,
// gpuledger_held_gpu_seconds_total, gpuledger_busy_gpu_seconds_total,
// gpuledger_workload_gpu_energy_joules_total, gpuledger_ledger_*,
// gpuledger_ledger_info{currency}).
//
// Amounts are each series' exact growth over [from, to) (fleet_counter.h):
// no extrapolation, the last sample of a series that ended before --to, no
// history from before --from (a node whose counters Prometheus did not see at
// --from is billed from its first sample on, and the span before is stated in
// the report's notes). The counters grow when windows close, so the fleet
// report covers the windows that closed in the range, the local report the
// windows that started in it: the two differ by at most one scrape interval
// per node at each end. VRAM, launches and efficiency come from the ledger
// counters the agents export for them (gpuledger_ledger_*): efficiency is the
// accounts' average over their GPU-seconds with a device value (equal to the
// local report's except where one group has several accounts on one shared
// GPU, which the local report adds up per window). Energy is the growth of
// gpuledger_workload_gpu_energy_joules_total (integer mJ on the agents), carbon
// of gpuledger_ledger_carbon_grams_total; both unknown (not 0) for a row with
// no such series. Allocated against used comes from the agents'
// gpuledger_ledger_*share*_gpu_seconds_total (ledger/share_seconds.h): the
// same window shares as the local report, weighted by window GPU-seconds; one
// known difference: a group with several accounts on one shared GPU in one
// window counts that window's GPU-seconds once per account in its
// denominator (share_gpu_seconds), where the local report counts it once per
// group, so that group's shares differ (lower there); groups of one account
// per GPU window (a pod, a workload; a team or namespace whose pods do not
// share a GPU) are equal to the local report. Not --by gpu (no shares, as
// locally). --by workload is per node ("<instance> namespace/pod/container").
//
// Cost: per counter family, four instant queries (last_over_time,
// min_over_time, resets over the range; the value at --from) and raw samples
// only for the rare series that went down. Prometheus loads every sample of
// the range for the *_over_time functions: a month of a large fleet can pass
// its --query.max-samples (50 M by default; ~290 series at a 15 s scrape for
// 30 days); then the query fails with Prometheus' own message (report shorter
// ranges, or raise the limit). Splitting the range into chunks is not done.
#include <string>

#include "report/report.h"

namespace gpuledger::report {

Report fleet_report(const std::string& prometheus_url, int64_t from, int64_t to, GroupBy by,
                    unsigned timeout_ms = 10000);

// The group key of a series' labels (namespace, pod, container, team, UUID).
std::string fleet_group_key(GroupBy by, const std::map<std::string, std::string>& labels);

}  // namespace gpuledger::report
