#include "report/special_accounts.h"

#include "ledger/window_split.h"

namespace gpuledger::report {

bool is_special_account(const std::string& account) {
  return account.size() > 4 && account.starts_with("__") && account.ends_with("__");
}

std::string special_account_meaning(const std::string& account) {
  if (account == ledger::kUnallocatedAccount)
    return "the part of a GPU nobody held: its time while no pod held it, work no holder or user could be named for, "
           "and under cost_policy allocated the share of it no pod was allocated";
  if (account == ledger::kIdleAccount)
    return "idle time of held GPUs kept apart from their holders (idle_policy: idle)";
  if (account == ledger::kAllocationUnknownAccount)
    return "GPU time while the kubelet's allocation could not be read: before it first answered, or once it had not "
           "answered for longer than kubernetes.allocation_keep_seconds (until then its last answer stands); busy "
           "time still goes to the workloads seen running on the GPU";
  if (account == ledger::kUnattributedAccount)
    return "SM time NVML reported for processes no workload could be named for (not seen by the probes, gone "
           "before the agent could read their cgroup): billed to nobody named, counted by "
           "gpuledger_nvml_unattributed_sm_seconds_total";
  if (account == "__overflow__")
    return "GPU work the probes could not tell the workload of, because their workload table was full "
           "(gpuledger_bpf_overflow_total counts it)";
  if (is_special_account(account)) return "a special account of gpuledger, not a workload";
  return "";
}

}  // namespace gpuledger::report
