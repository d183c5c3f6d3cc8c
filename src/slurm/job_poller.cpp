#include "slurm/job_poller.h"

namespace gpuledger::slurm {

JobPoller::JobPoller(std::function<Jobs()> jobs, std::chrono::milliseconds interval,
                     std::function<bool(const Jobs&)> refresh)
    : jobs_(std::move(jobs)), interval_(interval), refresh_(std::move(refresh)) {}

JobPoller::~JobPoller() { stop(); }

void JobPoller::start() {
  thread_ = std::thread([this] {
    Jobs asked;
    bool answered = false;
    auto last = std::chrono::steady_clock::time_point{};
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      const Jobs jobs = jobs_();
      if (!answered || jobs != asked || std::chrono::steady_clock::now() - last >= interval_) {
        answered = refresh_(jobs);
        asked = jobs;
        last = std::chrono::steady_clock::now();
      }
      lock.lock();
      wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_ || woken_; });
      woken_ = false;
    }
  });
}

void JobPoller::wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  wake_.notify_all();
}

void JobPoller::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuledger::slurm
