#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, the fleet read: the totals a merge reads, from an index alone.
// A report that takes a week of days or more (CSV by day, the month to date's
// days) merges two scans in key order, the periods' window_totals and their
// verified roll-ups (fleet_reader.cpp, merge_period). Each totals row was an
// index entry and then a heap page of its own - one GPU's days lie among its
// hours, far apart - 91,000-227,000 buffers for a 1,000-node month's 240,000
// days, 1.7-2.3 s of the server. In key order with the three columns the
// merge takes (INCLUDE), PostgreSQL reads them index-only where autovacuum
// has marked the pages all-visible (a past period's totals no longer
// change): 3,685 buffers, 0.14-0.20 s (docs/performance.md, "Schema 11").
// The primary key stays (the totals trigger's ON CONFLICT names it), and so
// does (period, period_start) as it was: carrying the columns too, it made
// the 7-day ingest 15-20 % slower in two runs of two (its entries, all of
// one hour's GPUs under one key, cannot be deduplicated with INCLUDE) for
// the digest's reads, about an eighth of a month to date.
const char* const kMigration11 = R"SQL(
CREATE INDEX window_totals_by_key ON gpuledger.window_totals (period, cluster, node, gpu_uuid, period_start)
  INCLUDE (windows, cost_micros, digests);
)SQL";

}  // namespace gpuledger::fleet
