#include "fleet_codec.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "fleet/fleet_rows.h"
#include "fleet/window_json.h"

namespace gpuledger::bench {

namespace {

// Microseconds a call: the median of five runs of n calls.
double micros_per_call(int n, const std::function<size_t()>& call) {
  std::array<double, 5> runs{};
  size_t sink = 0;
  for (double& run : runs) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) sink += call();
    run = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  }
  std::sort(runs.begin(), runs.end());
  if (sink == 0) std::printf("(nothing read)\n");  // keeps the calls
  return runs[2];
}

}  // namespace

void print_codec_costs(const ledger::WindowRecord& window, int reads) {
  const std::string body = fleet::window_to_json(window);
  const double one_pass = micros_per_call(reads, [&] { return fleet::window_from_json(body).accounts.size(); });
  const double general = micros_per_call(reads, [&] { return fleet::window_from_any_json(body).accounts.size(); });
  std::printf("roll-up body read (%zu bytes, %zu accounts, x%d): one pass %.2f us, general reader %.2f us: %.2fx\n",
              body.size(), window.accounts.size(), reads, one_pass, general, one_pass / general);
  const fleet::Origin origin{"bench", "node-0"};
  const double alone = micros_per_call(reads, [&] { return fleet::window_digest(origin, window).size(); });
  const double with_row = micros_per_call(reads, [&] { return fleet::to_window_row(origin, window).digest.size(); });
  std::printf("window digest (x%d): alone %.2f us, with its row %.2f us: %.2fx\n", reads, alone, with_row,
              alone / with_row);
}

}  // namespace gpuledger::bench
