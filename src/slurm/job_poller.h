#pragma once
// Asks Slurm's controller about the jobs running here, off the agent's path:
// a thread looks at the jobs (their cgroups: cheap) every second and calls
// `refresh` with them when they changed, else every `interval`. A controller
// that does not answer (refresh returns false) never holds up the agent; the
// same jobs are asked again at the next look.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuledger::slurm {

class JobPoller {
 public:
  using Jobs = std::vector<std::string>;
  JobPoller(std::function<Jobs()> jobs, std::chrono::milliseconds interval, std::function<bool(const Jobs&)> refresh);
  ~JobPoller();
  void start();
  void stop();
  // Looks at the jobs now rather than at the next second.
  void wake();

 private:
  std::function<Jobs()> jobs_;
  std::chrono::milliseconds interval_;
  std::function<bool(const Jobs&)> refresh_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace gpuledger::slurm
