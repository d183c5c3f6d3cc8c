#pragma once
// /healthz (liveness: the agent's loops still turn) and /readyz (readiness:
// probes attached and the counter maps read once), each answered with a
// reason per check so an operator sees why without reading logs.
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::exporter {

struct HealthStatus {
  bool ok = true;
  std::string reason;  // one line
};
using HealthCheck = std::function<HealthStatus()>;

// The last turn of a loop, written by the loop and read by the checks.
class Heartbeat {
 public:
  void beat() { ns_ = std::chrono::steady_clock::now().time_since_epoch().count(); }
  std::optional<std::chrono::steady_clock::time_point> last() const;

 private:
  std::atomic<int64_t> ns_{0};
};

// A loop is alive when it turned within `allowed`.
HealthStatus loop_alive(const std::string& name, std::optional<std::chrono::steady_clock::time_point> last,
                        std::chrono::seconds allowed,
                        std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
// Ready once probes are attached and the counter maps were read.
HealthStatus attribution_ready(size_t probes_attached, bool map_read);

struct HealthAnswer {
  int status = 200;   // 200 when every check is ok, else 503
  std::string body;   // "ok" or "unhealthy", then one "- reason" line per check
};
HealthAnswer run_health_checks(const std::vector<HealthCheck>& checks);

}  // namespace gpuledger::exporter
