#pragma once
// The kernel side counts what it could not keep when a map is full (a
// workload's calls go to the overflow bucket, __overflow__); a counter alone
// goes unseen. This turns those counters into log lines: one when a map
// starts overflowing, a reminder at most every `repeat` while it keeps
// overflowing (with how much since the last line), and one when it has not
// overflowed for `repeat` again.
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_probes.h"

namespace gpuledger::attribution {

class MapFullLog {
 public:
  using Clock = std::chrono::steady_clock;
  // max_workloads: the workload map's capacity (--max-workloads), for the message.
  explicit MapFullLog(uint32_t max_workloads, std::chrono::seconds repeat = std::chrono::seconds(60));
  // Looks at a reading of the kernel's stats; returns (and logs) the lines due now.
  std::vector<std::string> update(const std::array<uint64_t, GL_STAT_COUNT>& stats, Clock::time_point now);

 private:
  struct Watched {
    int stat;
    std::string name;  // "workload map"
    std::string what;  // the message when it starts
    bool full = false;
    bool seen = false;  // a first reading was taken (counts from before the agent's start are not news)
    uint64_t last = 0;
    uint64_t at_last_line = 0;
    Clock::time_point last_growth{}, last_line{};
  };
  std::chrono::seconds repeat_;
  std::vector<Watched> watched_;
};

}  // namespace gpuledger::attribution
