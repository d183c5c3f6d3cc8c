#include "fleet/fleet_packs.h"

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
  // What to pack and what is left, from gpuledger.unpacked_hours (hours and
  // counts only): the maintainer's role reads nothing of the bill, and an
  // hour with nothing to pack (no verified roll-up yet) is not read again.
  const std::vector<PgParam> range = {std::to_string(months.front()), std::to_string(end)};
  PgResult hours = db.query("SELECT hour_start FROM gpuledger.unpacked_hours($1, $2) WHERE packable > 0", range);
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
  out.left =
      db.query("SELECT coalesce(sum(gpu_hours), 0)::bigint FROM gpuledger.unpacked_hours($1, $2)", range).i64(0, 0);
  return out;
}

}  // namespace gpuledger::fleet
