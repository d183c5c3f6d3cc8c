#include "attribution/exited_processes.h"

namespace gpuledger::attribution {

void ExitedProcesses::add(ProcessOwner owner) {
  std::lock_guard lock(mu_);
  const uint64_t now = owner.until_us;
  records_.push_back(std::move(owner));
  while (records_.size() > kMaxEntries) {
    records_.pop_front();
    ++evicted_;
  }
  expire_locked(now);
}

void ExitedProcesses::expire_locked(uint64_t now_us) {
  while (!records_.empty() && records_.front().until_us + kKeepUs < now_us) records_.pop_front();
}

std::vector<ProcessOwner> ExitedProcesses::recent(uint64_t now_us) {
  std::lock_guard lock(mu_);
  expire_locked(now_us);
  return {records_.begin(), records_.end()};
}

uint64_t ExitedProcesses::evicted() const {
  std::lock_guard lock(mu_);
  return evicted_;
}

}  // namespace gpuledger::attribution
