#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, ingest: the server's plans made once a session, not once a
// roll-up (docs/performance.md, "Schema 10"). Three functions the shippers'
// statements run, each the same rules and the same results:
//
// - check_rollup planned each of its queries again for every roll-up: its
//   parameters (the roll-up's row) made PL/pgSQL weigh a custom plan each
//   call, and over partitioned tables the generic plan (partitions pruned as
//   it runs) looks dearer to the planner, so it was never kept. Planning was
//   most of an hour's check (2.0 ms of it; 0.42-0.51 ms with generic plans,
//   every verdict the same over a node-month of hours, days and months).
// - charge_rows_of (the rows of rollup_charges) was a SQL function with its
//   own search_path, which PostgreSQL neither inlines nor keeps a plan of:
//   planned again at every roll-up's insert, and its body read as json
//   (reparsed at each ->). PL/pgSQL keeps the plan for the session, and the
//   body is parsed once, as jsonb: the same rows (EXCEPT ALL both ways: none).
// - refuse_unreadable_bodies grouped a statement's parts by sorting them (a
//   transition table's rows times 300 rows a body, the planner's guess for
//   three jsonb_array_elements, looked too big for work_mem's hash table):
//   52 us a window against 15 us hashed. Hash aggregation spills to disk when
//   it must, so sorting is only told to be the last resort.
const char* const kMigration10 = R"SQL(
ALTER FUNCTION gpuledger.check_rollup(gpuledger.rollups) SET plan_cache_mode = force_generic_plan;

CREATE OR REPLACE FUNCTION gpuledger.charge_rows_of(r gpuledger.rollups) RETURNS SETOF gpuledger.rollup_charges
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  b jsonb := r.body::jsonb;
BEGIN
  RETURN QUERY
  SELECT r.period, r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests,
         (b->>'start')::bigint, (b->>'end')::bigint - (b->>'start')::bigint,
         coalesce(g.account, ''),
         coalesce((SELECT a->>4 FROM jsonb_array_elements(b->'accounts') WITH ORDINALITY x(a, i)
                   WHERE a->>0 = g.account ORDER BY i LIMIT 1), ''),
         coalesce(g.micros, 0), g.account IS NOT NULL
  FROM (SELECT 1) one LEFT JOIN (
    SELECT ch->>0 AS account, sum((ch->>2)::bigint)::bigint AS micros
    FROM jsonb_array_elements(b->'charges') ch GROUP BY 1) g ON true;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.charge_rows_of(gpuledger.rollups) FROM PUBLIC;

ALTER FUNCTION gpuledger.refuse_unreadable_bodies() SET enable_sort = off;
)SQL";

}  // namespace gpuledger::fleet
