#include "probes/open_spans.h"

#include <time.h>

#include <algorithm>

namespace gpuledger::probes {

std::map<CounterKey, uint64_t> read_open_span_ns(int fd, uint64_t now_ns) {
  std::map<CounterKey, uint64_t> out;
  for (const auto& key : map_keys<gl_span_key>(fd)) {
    gl_open_spans sp{};
    if (bpf_map_lookup_elem(fd, &key, &sp) != 0) continue;
    uint64_t open = 0;
    for (uint64_t start : sp.start_ns)
      if (start != 0 && now_ns > start) open += now_ns - start;
    if (open) out[CounterKey{sp.cgroup_key, sp.device}] += open;
  }
  return out;
}

size_t drop_open_spans(int fd) {
  size_t dropped = 0;
  for (const auto& key : map_keys<gl_span_key>(fd)) dropped += bpf_map_delete_elem(fd, &key) == 0;
  return dropped;
}

uint64_t monotonic_now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void BusyToDate::add(std::map<CounterKey, gl_counters>& counters, const std::map<CounterKey, uint64_t>& open) {
  std::erase_if(reported_, [&](const auto& kv) { return !counters.contains(kv.first); });
  for (auto& [key, c] : counters) {
    auto it = open.find(key);
    uint64_t busy = c.busy_ns + (it == open.end() ? 0 : it->second);
    uint64_t& last = reported_[key];
    last = std::max(last, busy);
    c.busy_ns = last;
  }
}

}  // namespace gpuledger::probes
