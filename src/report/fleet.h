#pragma once
// The fleet report: the same report for every node, from a Prometheus server
// that scrapes each node's agent (/metrics: gpuledger_cost_total,
// gpuledger_held_gpu_seconds_total, gpuledger_busy_gpu_seconds_total,
// gpuledger_ledger_info{currency}).
//
// Amounts are counter differences: the value of
//   sum by (namespace,pod,container,team,UUID[,kind]) (<counter>)
// at --to minus its value at --from (a series absent at --from counts 0; one
// that went down - an agent whose ledger was pruned - counts its value at
// --to). The counters grow when windows close, so the fleet report covers
// the windows that closed in (from, to], and the local report the windows
// that started in [from, to). Unlike increase(), this does not extrapolate,
// so the fleet amounts are the nodes' ledgers' exact sums (micro-units).
// Efficiency columns are unknown in the fleet report (not exported per
// account); --by workload groups by namespace/pod/container.
#include <string>

#include "report/report.h"

namespace gpuledger::report {

Report fleet_report(const std::string& prometheus_url, int64_t from, int64_t to, GroupBy by,
                    unsigned timeout_ms = 10000);

// The group key of a series' labels (namespace, pod, container, team, UUID).
std::string fleet_group_key(GroupBy by, const std::map<std::string, std::string>& labels);

}  // namespace gpuledger::report
