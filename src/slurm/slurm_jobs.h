#pragma once
// What Slurm's controller says of the jobs running here - user, account,
// partition, QOS - asked of the controller (squeue), never of the jobs'
// environment. Only the ids of the jobs whose cgroups run on this node
// (slurm_cgroups.h) are asked about, and only fields an administrator names
// (no job name, comment or command, which the job's owner writes and which
// could carry a forged field): "%i|%u|%a|%P|%q". Each field must be a plain
// name ([A-Za-z0-9._@+-], at most 64 bytes) or the line is dropped; at most
// kMaxJobs lines and kMaxOutputBytes are read, and squeue gets kTimeout.
//
// SlurmJobFacts asks in a thread of its own when the jobs here change, else
// every `interval`, so a controller
// that does not answer never holds up the agent; until it answers, a job's
// facts are unknown (empty), not guessed.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace gpuledger::slurm {

inline constexpr size_t kMaxOutputBytes = 1 << 20;
inline constexpr std::chrono::seconds kTimeout{10};

struct JobFacts {
  std::string job, user, account, partition, qos;
  bool operator==(const JobFacts&) const = default;
};

// squeue's "%i|%u|%a|%P|%q" lines, checked as above; "(null)" reads as "".
std::map<std::string, JobFacts> parse_squeue(std::string_view text, size_t* dropped = nullptr);

// Runs argv (no shell) and returns its stdout, at most `max_bytes`; nullopt when
// it cannot run, fails, or outlives `timeout` (then it is killed).
std::optional<std::string> run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                       size_t max_bytes);

class SlurmJobFacts {
 public:
  // `jobs`: the ids to ask about (the jobs running here); `squeue`: the program.
  SlurmJobFacts(std::function<std::vector<std::string>()> jobs, std::chrono::milliseconds interval,
                std::string squeue = "squeue");
  ~SlurmJobFacts();
  void start();
  void stop();
  // Thread-safe; nullopt: not known (yet).
  std::optional<JobFacts> find(const std::string& job) const;

 private:
  bool refresh(const std::vector<std::string>& jobs);  // false: squeue did not answer
  std::function<std::vector<std::string>()> jobs_;
  std::chrono::milliseconds interval_;
  std::string squeue_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::map<std::string, JobFacts> facts_;
  std::thread thread_;
};

}  // namespace gpuledger::slurm
