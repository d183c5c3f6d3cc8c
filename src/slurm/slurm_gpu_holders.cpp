#include "slurm/slurm_gpu_holders.h"

#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "slurm/scontrol_gres.h"
#include "slurm/slurm_jobs.h"

namespace gpuledger::slurm {

SlurmGpuHolders::SlurmGpuHolders(std::function<std::vector<std::string>()> jobs, std::chrono::milliseconds interval,
                                 std::string host, std::string scontrol)
    : jobs_(jobs),
      host_(std::move(host)),
      scontrol_(std::move(scontrol)),
      poller_(std::move(jobs), interval, [this](const std::vector<std::string>& j) { return refresh(j); }) {}

void SlurmGpuHolders::start() {
  refresh(jobs_());
  poller_.start();
}

std::optional<JobMapping> SlurmGpuHolders::mapping_for(const std::vector<std::string>& running, bool* pending,
                                                       const std::function<bool(const std::string&)>& known) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  *pending = false;
  const bool answered = answered_ && running == *answered_;
  const bool ready = answered && (!known || std::all_of(running.begin(), running.end(), known));
  if (!answered_ || ready) {  // never answered: unknown, not held back
    waiting_since_.reset();
    return mapping_;
  }
  if (!waiting_since_ || waiting_for_ != running) {  // a new wait for each new set of jobs
    waiting_since_ = now;
    waiting_for_ = running;
  }
  *pending = now - *waiting_since_ < kWaitForAnswer;
  if (*pending && !answered) poller_.wake();
  return mapping_;
}

std::string SlurmGpuHolders::down_reason() const {
  std::lock_guard lock(mu_);
  return mapping_ ? "" : down_reason_;
}

std::optional<std::vector<int>> SlurmGpuHolders::ask(const std::string& job, size_t* dropped) const {
  const auto text = run_bounded({scontrol_, "-d", "show", "job", job}, kTimeout, kMaxOutputBytes);
  if (!text) return std::nullopt;
  return job_gpus_on_node(*text, node_, dropped);
}

bool SlurmGpuHolders::refresh(const std::vector<std::string>& jobs) {
  auto down = [&](std::string why) {
    std::lock_guard lock(mu_);
    if (answered_ != jobs) mapping_.reset();  // the jobs changed: who holds what is not known
    if (down_reason_ != why) spdlog::warn("slurm: {}", why);
    down_reason_ = std::move(why);
    return false;
  };
  if (node_.empty()) {
    std::string why;
    node_ = ask_node_name(host_, &why, scontrol_);
    if (node_.empty()) return down(why);
  }
  JobMapping m;
  for (size_t i = 0; i < jobs.size() && i < kMaxJobsAsked; ++i) {
    const auto gpus = ask(jobs[i], &m.skipped_lines);
    if (!gpus) return down("scontrol -d show job " + jobs[i] + " did not answer");
    for (int gpu : *gpus) m.jobs_by_gpu[std::to_string(gpu)].push_back(jobs[i]);
  }
  if (jobs.size() > kMaxJobsAsked) m.skipped_lines += jobs.size() - kMaxJobsAsked;
  if (m.skipped_lines) spdlog::debug("slurm: {} GRES lines of this node were no IDX list", m.skipped_lines);
  std::lock_guard lock(mu_);
  if (!mapping_) spdlog::info("slurm: the controller says which job holds each GPU of node {}", node_);
  mapping_ = std::move(m);
  answered_ = jobs;
  return true;
}

std::string ask_node_name(const std::string& host, std::string* why, const std::string& scontrol) {
  const auto nodes = run_bounded({scontrol, "show", "node", "--oneliner"}, kTimeout, kMaxOutputBytes);
  if (!nodes) {
    *why = "scontrol show node did not answer";
    return "";
  }
  std::string node = slurm_node_for_host(*nodes, host);
  if (node.empty()) *why = "Slurm's controller knows no one node (NodeName or NodeHostName) " + host;
  return node;
}

std::string short_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  std::string host(name);
  return host.substr(0, host.find('.'));
}

}  // namespace gpuledger::slurm
