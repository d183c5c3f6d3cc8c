#include "export/health.h"

#include <fmt/format.h>

namespace gpuledger::exporter {

std::optional<std::chrono::steady_clock::time_point> Heartbeat::last() const {
  int64_t ns = ns_.load();
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ns));
}

HealthStatus loop_alive(const std::string& name, std::optional<std::chrono::steady_clock::time_point> last,
                        std::chrono::seconds allowed, std::chrono::steady_clock::time_point now) {
  if (!last) return {false, name + " loop has not started"};
  double age = std::chrono::duration<double>(now - *last).count();
  if (age > static_cast<double>(allowed.count()))
    return {false, fmt::format("{} loop stalled: last turned {:.1f}s ago (allowed {}s)", name, age, allowed.count())};
  return {true, fmt::format("{} loop turned {:.1f}s ago", name, age < 0 ? 0.0 : age)};
}

HealthStatus attribution_ready(size_t probes_attached, bool map_read) {
  if (probes_attached == 0) return {false, "no CUDA driver library probed yet (0 probes attached)"};
  if (!map_read) return {false, fmt::format("{} probes attached; counter maps not read yet", probes_attached)};
  return {true, fmt::format("{} probes attached; counter maps read", probes_attached)};
}

HealthAnswer run_health_checks(const std::vector<HealthCheck>& checks) {
  HealthAnswer answer;
  std::string lines;
  for (const auto& check : checks) {
    HealthStatus s = check();
    if (!s.ok) answer.status = 503;
    lines += (s.ok ? "- " : "- FAILING: ") + s.reason + "\n";
  }
  answer.body = (answer.status == 200 ? "ok\n" : "unhealthy\n") + lines;
  return answer;
}

}  // namespace gpuledger::exporter
