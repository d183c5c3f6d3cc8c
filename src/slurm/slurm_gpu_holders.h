#pragma once
// The jobs holding each GPU of this node, from Slurm's controller
// (`scontrol -d show job ID` for each job running here: scontrol_gres.h), in
// the job-mapping files' form (job_mapping.h) so that node/job_holders.h
// bills both sources the same way. Asked off the agent's path (job_poller.h).
// A job starts using its GPUs before anyone can ask the controller about it,
// and its first launches would find no GPU of its own (on a node of several
// GPUs: counted as unattributed, not billed), its first window no user or
// account. So while the jobs running here are not those the controller last
// answered for, or their user and account are not known yet, mapping_for()
// says `pending` (for at most kWaitForAnswer per set of jobs) and the agent
// holds its observation back: the counters are cumulative, so the next one
// carries it all. Past
// that, and before the controller's first answer, a controller that cannot
// say who holds the GPUs leaves the mapping unknown and the windows say
// "allocation unknown"; a job the controller answered for keeps its GPUs
// through a later silence of the controller.
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "slurm/job_mapping.h"
#include "slurm/job_poller.h"

namespace gpuledger::slurm {

inline constexpr size_t kMaxJobsAsked = 256;
inline constexpr std::chrono::seconds kWaitForAnswer{5};  // per refresh; more jobs on one node are not a GPU node's

class SlurmGpuHolders {
 public:
  // `jobs`: the ids of the jobs running here; `host`: this host's short name
  // (the node is the one whose NodeName or NodeHostName it is).
  SlurmGpuHolders(std::function<std::vector<std::string>()> jobs, std::chrono::milliseconds interval,
                  std::string host, std::string scontrol = "scontrol");
  // Asks once before it returns (bounded by kTimeout per call), so that the
  // ledger's first observation, its baseline, is not held back.
  void start();
  void stop() { poller_.stop(); }
  // Thread-safe; nullopt while unknown (down_reason() says why). `running`:
  // the jobs running here now; `pending` set while the answer for them is due,
  // or while `known` (when given: the jobs' user and account, slurm_jobs.h)
  // is false for one of them.
  std::optional<JobMapping> mapping_for(const std::vector<std::string>& running, bool* pending,
                                        const std::function<bool(const std::string&)>& known = {});
  std::string down_reason() const;

 private:
  bool refresh(const std::vector<std::string>& jobs);
  std::optional<std::vector<int>> ask(const std::string& job, size_t* dropped) const;

  std::function<std::vector<std::string>()> jobs_;
  std::string host_, scontrol_, node_;
  mutable std::mutex mu_;
  std::optional<JobMapping> mapping_;
  std::optional<std::vector<std::string>> answered_;  // the jobs mapping_ is the controller's answer for
  std::optional<std::chrono::steady_clock::time_point> waiting_since_;  // waiting for waiting_for_ since
  std::vector<std::string> waiting_for_;
  std::string down_reason_ = "Slurm's controller has not answered yet";
  JobPoller poller_;  // last: its thread stops before the members it uses go
};

// This host's short name (gethostname up to the first dot).
std::string short_host_name();

// This host's Slurm node name, asked of the controller (`scontrol show node`);
// "" with `why` set when it cannot be told.
std::string ask_node_name(const std::string& host, std::string* why, const std::string& scontrol = "scontrol");

}  // namespace gpuledger::slurm
