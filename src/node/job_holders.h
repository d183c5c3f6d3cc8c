#pragma once
// The ledger's holders from the job-mapping files (slurm/job_mapping.h): each
// GPU file's jobs hold that GPU, in equal parts (the files say who, not how
// much), as the account "slurm/<job>" - the workload id the identity
// resolver gives the job's cgroup, so the job's own use and its holding are
// one account. A job id is billed only when a Slurm job of that id runs here
// (slurm/slurm_cgroups.h); any other line is a claim nobody can prove and
// is counted, not billed. A file naming no GPU of this node is counted too.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attribution/snapshot.h"
#include "device/device_snapshot.h"
#include "identity/workload_names.h"
#include "ledger/accountant.h"
#include "slurm/job_mapping.h"
#include "slurm/slurm_cgroups.h"

namespace gpuledger::node {

struct JobHolderCounts {
  size_t jobs_not_running = 0;  // job ids with no running job's cgroup
  size_t unknown_gpus = 0;      // files naming no whole GPU of this node (MIG instances included, for now)
};

// The slot uuid a job-mapping file name stands for: a GPU index or a GPU
// UUID of this node; "" when none.
std::string slot_of_file(const std::string& name, const device::DeviceSnapshot& devices);

// `namer` may be null; it names the jobs the snapshot does not (no CUDA yet).
std::vector<ledger::HolderEntry> job_holders(const slurm::JobMapping& mapping,
                                             const std::map<std::string, slurm::LiveJob>& running,
                                             const device::DeviceSnapshot& devices,
                                             const attribution::AttributionSnapshot& snapshot,
                                             const identity::WorkloadNamer* namer, JobHolderCounts* counts = nullptr);

// make_observation (observation_inputs.h) held by the jobs of `mapping`; with
// no mapping (its directory cannot be read) every slot is held by
// __allocation_unknown__ (allocation_unknown.h).
ledger::Observation make_job_observation(double now, const attribution::AttributionSnapshot& snapshot,
                                         const device::DeviceSnapshot& devices,
                                         const std::optional<slurm::JobMapping>& mapping,
                                         const std::map<std::string, slurm::LiveJob>& running,
                                         const identity::WorkloadNamer* namer, const ledger::PriceBook& prices,
                                         JobHolderCounts* counts = nullptr);

}  // namespace gpuledger::node
