#include "hour_packs.h"

#include <chrono>
#include <cstdio>

#include "fleet/fleet_packs.h"

namespace gpuledger::bench {

void pack_shipped_windows(fleet::PgConnection& db, int64_t before) {
  const auto began = std::chrono::steady_clock::now();
  const fleet::PackResult r = fleet::pack_before(db, before);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("pack: %lld windows of %lld GPU-hours in %.1f s (%.1f us a window); %lld GPU-hours left in rows\n",
              static_cast<long long>(r.windows), static_cast<long long>(r.gpu_hours), took,
              r.windows ? 1e6 * took / static_cast<double>(r.windows) : 0.0, static_cast<long long>(r.left));
  db.exec("VACUUM FULL gpuledger.windows");
  db.exec("VACUUM FULL gpuledger.window_packs");
  db.exec("VACUUM FULL gpuledger.window_parts");
  db.exec("ANALYZE");
}

}  // namespace gpuledger::bench
