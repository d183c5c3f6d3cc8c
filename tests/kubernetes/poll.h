#pragma once
// Polls a condition with a deadline; tests never sleep to synchronise.
#include <chrono>
#include <functional>
#include <thread>

namespace gpuledger::testing {

inline bool poll_until(const std::function<bool()>& condition,
                       std::chrono::milliseconds deadline = std::chrono::milliseconds(5000)) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace gpuledger::testing
