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
// - flag_overlaps probed the windows' index twice a window (the latest that
//   starts at or before it, the first that starts inside it): 11 us a window.
//   A statement's windows of a GPU come in runs (each starting at or before
//   the end of those before it: a node's minutes, one after the other), so
//   it now reads, per run, the windows that start inside it and the latest
//   one before it, and takes each window's two neighbours from them in one
//   sort. The same two neighbours, the same rule (the earlier of them that
//   overlaps, the one before within 31 days), the same rows. A run is read
//   only while it holds at most twice its own windows: a run lying over
//   others' (a window of days over a GPU's minutes) has its windows probed
//   as before, so no statement makes the server read more than twice the
//   windows it brings, or two probes each.
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

CREATE OR REPLACE FUNCTION gpuledger.flag_overlaps() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.overlaps(cluster, node, gpu_uuid, start_time, end_time, other_cluster, other_node,
                                 other_start, other_end)
  WITH marked AS (  -- a window that starts after the end of every one before it (of its GPU) starts a run
    SELECT f.cluster, f.node, f.gpu_uuid, f.start_time, f.end_time,
           (f.start_time > max(f.end_time) OVER (PARTITION BY f.gpu_uuid ORDER BY f.start_time, f.cluster, f.node
                                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) IS NOT FALSE AS first
    FROM fresh f),
  numbered AS (
    SELECT m.cluster, m.node, m.gpu_uuid, m.start_time, m.end_time,
           count(*) FILTER (WHERE m.first) OVER (PARTITION BY m.gpu_uuid ORDER BY m.start_time, m.cluster, m.node
                                                ROWS UNBOUNDED PRECEDING) AS run
    FROM marked m),
  runs AS (
    SELECT n.gpu_uuid, n.run, min(n.start_time) AS a, max(n.end_time) AS b, count(*) AS n
    FROM numbered n GROUP BY n.gpu_uuid, n.run),
  -- The windows that start in each run (its own among them), at most twice
  -- as many as it has: more, and its windows lie over others' (a window of
  -- days over a GPU's minutes), which are not read but probed for, two a
  -- window, as before (a node's windows cannot make the server read
  -- another's GPU-month).
  scanned AS (
    SELECT r.gpu_uuid, r.run, r.n, w.cluster, w.node, w.start_time, w.end_time
    FROM runs r CROSS JOIN LATERAL (
      SELECT w.cluster, w.node, w.start_time, w.end_time FROM gpuledger.windows w
      WHERE w.gpu_uuid = r.gpu_uuid AND w.start_time >= r.a AND w.start_time < r.b
      ORDER BY w.start_time LIMIT 2 * r.n + 1) w),
  tight AS (
    SELECT s.gpu_uuid, s.run FROM scanned s GROUP BY s.gpu_uuid, s.run, s.n HAVING count(*) <= 2 * s.n),
  -- Every window that can be a neighbour of a tight run's: those read, and the latest before it.
  near AS (
    SELECT DISTINCT x.cluster, x.node, x.gpu_uuid, x.start_time, x.end_time FROM (
      SELECT s.cluster, s.node, s.gpu_uuid, s.start_time, s.end_time FROM scanned s JOIN tight t USING (gpu_uuid, run)
      UNION ALL
      SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, w.end_time
      FROM runs r JOIN tight t USING (gpu_uuid, run) CROSS JOIN LATERAL (
        SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, w.end_time FROM gpuledger.windows w
        WHERE w.gpu_uuid = r.gpu_uuid AND w.start_time < r.a AND w.start_time > r.a - 2678400
        ORDER BY w.start_time DESC LIMIT 1) w) x),
  -- Each one's latest other window starting at or before it, and first starting after it.
  neighbours AS (
    SELECT n.*, last_value(n.cluster) OVER before AS p_cluster, last_value(n.node) OVER before AS p_node,
           last_value(n.start_time) OVER before AS p_start, last_value(n.end_time) OVER before AS p_end,
           first_value(n.cluster) OVER after AS n_cluster, first_value(n.node) OVER after AS n_node,
           first_value(n.start_time) OVER after AS n_start, first_value(n.end_time) OVER after AS n_end
    FROM near n
    WINDOW before AS (PARTITION BY n.gpu_uuid ORDER BY n.start_time
                      RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW),
           after AS (PARTITION BY n.gpu_uuid ORDER BY n.start_time
                     RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING EXCLUDE GROUP)),
  -- The tight runs' windows, with the earlier of their neighbours that they overlap.
  from_runs AS (
    SELECT x.cluster, x.node, x.gpu_uuid, x.start_time, x.end_time,
           CASE WHEN b.before_it THEN x.p_cluster ELSE x.n_cluster END AS o_cluster,
           CASE WHEN b.before_it THEN x.p_node ELSE x.n_node END AS o_node,
           CASE WHEN b.before_it THEN x.p_start ELSE x.n_start END AS o_start,
           CASE WHEN b.before_it THEN x.p_end ELSE x.n_end END AS o_end
    FROM neighbours x
    JOIN numbered f ON f.cluster = x.cluster AND f.node = x.node AND f.gpu_uuid = x.gpu_uuid
     AND f.start_time = x.start_time
    JOIN tight t ON t.gpu_uuid = f.gpu_uuid AND t.run = f.run
    CROSS JOIN LATERAL (SELECT (x.p_end > x.start_time AND x.p_start > x.start_time - 2678400) IS TRUE AS before_it) b
    WHERE b.before_it OR x.n_start < x.end_time),
  -- The other runs' windows: two probes each, the latest that starts at or
  -- before it and the first that starts inside it (schema 3's).
  probed AS (
    SELECT f.cluster, f.node, f.gpu_uuid, f.start_time, f.end_time, o.cluster, o.node, o.start_time, o.end_time
    FROM numbered f CROSS JOIN LATERAL (
      SELECT c.* FROM (
        (SELECT w.cluster, w.node, w.start_time, w.end_time FROM gpuledger.windows w
         WHERE w.gpu_uuid = f.gpu_uuid AND w.start_time <= f.start_time AND w.start_time > f.start_time - 2678400
           AND (w.cluster, w.node, w.start_time) IS DISTINCT FROM (f.cluster, f.node, f.start_time)
         ORDER BY w.start_time DESC LIMIT 1)
        UNION ALL
        (SELECT w.cluster, w.node, w.start_time, w.end_time FROM gpuledger.windows w
         WHERE w.gpu_uuid = f.gpu_uuid AND w.start_time > f.start_time AND w.start_time < f.end_time
         ORDER BY w.start_time LIMIT 1)) c
      WHERE c.end_time > f.start_time ORDER BY c.start_time LIMIT 1) o
    WHERE NOT EXISTS (SELECT FROM tight t WHERE t.gpu_uuid = f.gpu_uuid AND t.run = f.run))
  SELECT * FROM from_runs
  UNION ALL
  SELECT * FROM probed
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;
)SQL";

}  // namespace gpuledger::fleet
