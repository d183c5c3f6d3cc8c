#include "node/job_holders.h"

#include "identity/workload_classifier.h"
#include "node/allocation_unknown.h"
#include "node/observation_inputs.h"
#include "node/snapshot_usage.h"

namespace gpuledger::node {

std::string slot_of_file(const std::string& name, const device::DeviceSnapshot& devices) {
  for (const auto& g : devices.gpus) {
    if (g.uuid.empty() || g.mig_enabled.value_or(false)) continue;
    if (name == g.uuid || (g.index && name == std::to_string(*g.index))) return g.uuid;
  }
  return "";
}

std::vector<ledger::HolderEntry> job_holders(const slurm::JobMapping& mapping,
                                             const std::map<std::string, slurm::LiveJob>& running,
                                             const device::DeviceSnapshot& devices,
                                             const attribution::AttributionSnapshot& snapshot,
                                             const identity::WorkloadNamer* namer, JobHolderCounts* counts) {
  std::map<std::string, const attribution::WorkloadView*> views;
  for (const auto& v : snapshot.workloads) views[v.workload.id] = &v;
  JobHolderCounts n;
  std::vector<ledger::HolderEntry> out;
  for (const auto& [file, jobs] : mapping.jobs_by_gpu) {
    const std::string slot = slot_of_file(file, devices);
    if (slot.empty()) {
      ++n.unknown_gpus;
      continue;
    }
    std::vector<const slurm::LiveJob*> holding;
    for (const auto& job : jobs) {
      auto it = running.find(job);
      if (it == running.end()) {
        ++n.jobs_not_running;
        continue;
      }
      holding.push_back(&it->second);
    }
    for (const auto* job : holding) {
      ledger::HolderEntry h;
      h.slot_uuid = slot;
      h.account = "slurm/" + job->job;
      h.weight = 1.0 / static_cast<double>(holding.size());
      identity::WorkloadNames names;
      if (auto v = views.find(h.account); v != views.end())
        names = v->second->names;
      else if (namer)
        names = namer->names_for(identity::classify_cgroup_path(job->cgroup_path));
      h.labels = account_labels(names);
      out.push_back(std::move(h));
    }
  }
  if (counts) *counts = n;
  return out;
}

ledger::Observation make_job_observation(double now, const attribution::AttributionSnapshot& snapshot,
                                         const device::DeviceSnapshot& devices,
                                         const std::optional<slurm::JobMapping>& mapping,
                                         const std::map<std::string, slurm::LiveJob>& running,
                                         const identity::WorkloadNamer* namer, const ledger::PriceBook& prices,
                                         JobHolderCounts* counts) {
  ledger::Observation o = make_observation(now, snapshot, devices, {}, true, prices);
  if (!mapping)
    hold_by_allocation_unknown(o);
  else
    o.holders = job_holders(*mapping, running, devices, snapshot, namer, counts);
  return o;
}

}  // namespace gpuledger::node
