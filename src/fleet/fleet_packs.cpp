#include "fleet/fleet_packs.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

PackResult pack_before(PgConnection& db, int64_t before) {
  check_schema(db);
  const int64_t end = before - before % 3600;
  PackResult out;
  const std::vector<int64_t> months = months_with_windows(db);
  if (months.empty() || months.front() >= end) return out;
  // What to pack and what is left, from one read of gpuledger.unpacked_hours
  // (hours and counts only): the maintainer's role reads nothing of the
  // bill, and an hour with nothing to pack (no verified roll-up yet) is not
  // read again. What is left is what was in rows less what this run packed.
  PgResult hours = db.query("SELECT hour_start, gpu_hours, packable FROM gpuledger.unpacked_hours($1, $2)",
                            {std::to_string(months.front()), std::to_string(end)});
  int64_t in_rows = 0;
  for (int r = 0; r < hours.rows(); ++r) {
    in_rows += hours.i64(r, 1);
    if (hours.i64(r, 2) == 0) continue;
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
  // At least 0: an hour may pack GPU-hours whose windows came into rows after the read.
  out.left = std::max<int64_t>(0, in_rows - out.gpu_hours);
  return out;
}

}  // namespace gpuledger::fleet
