#include "attribution/runtime_discovery_worker.h"

#include <sys/resource.h>
#include <unistd.h>

#include <utility>

#include "probes/runtime_discovery.h"

namespace gpuledger::attribution {

RuntimeDiscoveryWorker::RuntimeDiscoveryWorker(probes::RuntimeAttacher& attacher, std::string proc_root,
                                               std::function<std::set<probes::FileId>()> drivers)
    : attacher_(attacher), proc_root_(std::move(proc_root)), drivers_(std::move(drivers)), thread_([this] { run(); }) {}

RuntimeDiscoveryWorker::~RuntimeDiscoveryWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void RuntimeDiscoveryWorker::look_at(uint32_t pid) {
  {
    std::lock_guard lock(mu_);
    pids_.insert(pid);
  }
  wake_.notify_one();
}

void RuntimeDiscoveryWorker::scan_all(std::vector<probes::LibraryCandidate> scanned) {
  {
    std::lock_guard lock(mu_);
    scanned_ = std::move(scanned);  // a scan not looked at yet is replaced: bounded to one
  }
  wake_.notify_one();
}

void RuntimeDiscoveryWorker::scan_all_now() {
  for (const auto& candidate : probes::scan_runtime_candidates(proc_root_, drivers_())) attacher_.offer(candidate);
}

void RuntimeDiscoveryWorker::run() {
  // Background work: the tenants and the agent's event thread come first.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || scanned_ || !pids_.empty(); });
    if (stopping_) return;
    auto pids = std::exchange(pids_, {});
    auto scanned = std::exchange(scanned_, std::nullopt);
    lock.unlock();
    for (uint32_t pid : pids)
      for (const auto& candidate : probes::runtime_candidates(proc_root_, pid, "map")) attacher_.offer(candidate);
    if (scanned)
      for (const auto& candidate : probes::runtime_candidates_among(std::move(*scanned), drivers_()))
        attacher_.offer(candidate);
    lock.lock();
  }
}

}  // namespace gpuledger::attribution
