#pragma once
// `gpuledger fleet-db pack --before TIME`: the windows of each whole UTC
// hour before TIME whose hour roll-up the database verified, moved into one
// compressed row a GPU-hour (gpuledger.window_packs, schema 17), so a month
// of windows takes 0.08-0.41x its rows' bytes (docs/fleet-db.md, "Packed
// hours"). Every report reads a packed hour as before (stored_windows); a
// packed hour takes no window any more, so pack hours older than the longest
// outage an agent can have. Run by the owner or by a login role in
// gpuledger_maintainer (schema 18), which may pack and nothing else: a
// scheduled job holds no credential that could change a bill.
#include <cstdint>

namespace gpuledger::fleet {

class PgConnection;

struct PackResult {
  int64_t windows = 0;    // packed now
  int64_t gpu_hours = 0;  // packed now
  int64_t left = 0;       // GPU-hours before `before` still in rows: no verified, current hour roll-up
};

// One transaction an hour, from the first hour with windows in rows to
// `before` (rounded down to a whole hour): agents' windows wait for each
// hour's lock only. Repeatable: a packed hour is left as it is.
PackResult pack_before(PgConnection& db, int64_t before);

}  // namespace gpuledger::fleet
