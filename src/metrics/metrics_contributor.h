#pragma once
// Anything beyond the attribution plane that has series for /metrics (GPU
// allocation, device counters, ...) plugs in here instead of growing the page.
#include "metrics/prometheus_text.h"

namespace gpuledger::metrics {

class MetricsContributor {
 public:
  virtual ~MetricsContributor() = default;
  // Appends whole families (HELP, TYPE, samples). Called on every scrape.
  virtual void write_metrics(ExpositionWriter& out) const = 0;
};

}  // namespace gpuledger::metrics
