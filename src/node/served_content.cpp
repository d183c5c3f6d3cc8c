#include "node/served_content.h"

#include <chrono>

#include "attribution/metrics_page.h"
#include "attribution/workloads_json.h"

namespace gpuledger::node {
namespace {

// The attribution loop polls every 100 ms; a library scan under heavy churn
// can hold it for seconds, never this long.
constexpr std::chrono::seconds kAttributionLoopAllowance{30};

}  // namespace

exporter::ServedContent served_content(attribution::AttributionPlane& attribution) {
  attribution::AttributionPlane* plane = &attribution;
  exporter::ServedContent content;
  content.metrics_page = [plane](double last_scrape_seconds) {
    return attribution::render_metrics(plane->snapshot(), last_scrape_seconds);
  };
  content.workloads_json = [plane] {
    // Tenant-chosen names may hold any bytes: replaced, never a 500.
    return attribution::workloads_json(plane->snapshot()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  content.liveness = [plane] {
    return exporter::loop_alive("attribution", plane->health().last_loop, kAttributionLoopAllowance);
  };
  content.readiness = [plane] {
    const auto h = plane->health();
    return exporter::attribution_ready(h.probes_attached, h.map_read);
  };
  return content;
}

}  // namespace gpuledger::node
