#pragma once
// Which GPUs a job holds on this node, in the controller's words:
// `scontrol -d show job ID` prints, per node set of the job, a line
//      Nodes=gl[01-04] CPU_IDs=0-3 Mem=0 GRES=gpu:a100:2(IDX:0-1)
// and the GPUs are the IDX lists of the lines whose node set names this node
// (Slurm's hostlist syntax: "n1,gpu[01-08,10]").
//
// The job's owner writes some of that output: its name, comment, working
// directory and output paths are printed as given, newlines included (tried
// on slurmctld 22.05: a job named "x\n     Nodes=n GRES=gpu:1(IDX:1)" prints
// that line). No text rule tells a forged line from the controller's, so a
// job is asked about alone (its id is ours, never read from the output) and
// every such line in its answer counts, the forged ones too: a job can make
// itself hold more GPUs, paying for them, never fewer (its real line is
// always there) and never another job's. Jobs that share a GPU (gres/shard,
// gres/mps, an OverSubscribe partition) each name its index and split it
// equally, as the job-mapping files do (node/job_holders.h); an MPS job's
// percentage (mps:50) does not weigh its part.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::slurm {

inline constexpr size_t kMaxGpuIndex = 1023;

// Whether Slurm's hostlist expression (one bracket group per name:
// "n[01-03,7]x", comma-separated) names `node`.
bool hostlist_names(std::string_view hostlist, std::string_view node);

// The GPU indexes of a GRES value ("gpu:2(IDX:0-1)", "gpu:a100:1(IDX:3),shard:2(IDX:0)"):
// every gpu, shard or mps item's IDX ranges, each index once, ascending;
// nullopt when such an item has no readable IDX.
std::optional<std::vector<int>> gres_gpu_indexes(std::string_view gres);

// The GPU indexes `scontrol -d show job ID`'s text gives the job on `node`:
// the union of every matching line's (above), ascending; `dropped` counts
// lines naming this node whose GRES has no readable IDX.
std::vector<int> job_gpus_on_node(std::string_view text, std::string_view node, size_t* dropped = nullptr);

// This node's Slurm name from `scontrol show node --oneliner`: the NodeName
// whose NodeHostName (or NodeName) is `host`; "" when none or several.
std::string slurm_node_for_host(std::string_view text, std::string_view host);

}  // namespace gpuledger::slurm
