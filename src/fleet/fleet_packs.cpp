#include "fleet/fleet_packs.h"

#include <algorithm>
#include <string>

#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"
#include "report/charge_period.h"
#include "report/report_text.h"

namespace gpuledger::fleet {

namespace {

// The GPU-hours in [$1, $2) whose windows are in rows: counted by
// window_totals (by its (period, period_start) index), not packed.
const std::string kInRows =
    " FROM gpuledger.window_totals t WHERE t.period = 'hour' AND t.period_start >= $1 AND t.period_start < $2 "
    "AND NOT EXISTS (SELECT FROM gpuledger.window_packs p WHERE p.cluster = t.cluster AND p.node = t.node "
    "AND p.gpu_uuid = t.gpu_uuid AND p.hour_start = t.period_start)";

}  // namespace

PackResult pack_before(PgConnection& db, int64_t before) {
  check_schema(db);
  const int64_t end = before - before % 3600;
  PackResult out;
  // Month by month, those with windows left in rows only: a month packed
  // whole (or pruned) is not read again.
  for (const int64_t m : months_with_windows(db)) {
    if (m >= end) break;
    const std::string month = report::format_utc(m, "%Y_%m");
    if (db.query("SELECT EXISTS (SELECT FROM gpuledger.windows_" + month + ")").text(0, 0) != "t") continue;
    const std::vector<PgParam> range = {
        std::to_string(m), std::to_string(std::min(end, report::period_end(m, report::Granularity::kMonth)))};
    PgResult hours = db.query("SELECT DISTINCT t.period_start" + kInRows + " ORDER BY 1", range);
    for (int r = 0; r < hours.rows(); ++r) {
      const std::string h = std::to_string(hours.i64(r, 0)), next = std::to_string(hours.i64(r, 0) + 3600);
      db.exec("BEGIN");
      try {
        PgResult packed = db.query("SELECT * FROM gpuledger.pack_hours($1, $2)", {h, next});
        out.windows += packed.i64(0, 0);
        out.gpu_hours += packed.i64(0, 1);
        db.exec("COMMIT");
      } catch (...) {
        if (db.ok()) db.exec("ROLLBACK");
        throw;
      }
    }
    out.left += db.query("SELECT count(*)" + kInRows, range).i64(0, 0);
  }
  return out;
}

}  // namespace gpuledger::fleet
