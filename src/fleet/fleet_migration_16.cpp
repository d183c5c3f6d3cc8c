#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, a month to date's chart: its 14 whole days were summed from
// day_charts (schema 13), one row a GPU-day: 112,000 rows and 8 million
// array elements for 1,000 nodes, unnested and hashed by the server in
// 4.1 s of one core (2.8 s over two processes), most of a JSON or HTML month
// to date's server time (docs/performance.md, "A node's day in one chart
// row"). node_day_charts holds a node's day: its GPUs' current day_charts rows
// summed by each hour's first start, account (only one that may be special)
// and team, with the count, cost and digest sum of each GPU-day it was made
// from. A report uses it only while those are every GPU-day the node has in
// window_totals, exactly (then each day_charts row it summed was current, so
// it is their sum); else it reads that day from the GPUs' rows, as before.
//
// The database writes it, never an agent: whenever it verifies a day roll-up,
// a trigger after keep_rollup_charges' gathers the node's day again, once
// every GPU-day the node has holds a current day_charts row. Every statement is repeatable (an
// upgrade test runs the migrations after 12 again).
const char* const kMigration16 = R"SQL(
CREATE TABLE IF NOT EXISTS gpuledger.node_day_charts(
  period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL,
  -- Each GPU-day summed, in gpu_uuid's byte order: its count, cost and digest sum (window_totals').
  gpus text[] COLLATE "C" NOT NULL, windows bigint[] NOT NULL, cost_micros numeric[] NOT NULL,
  digests numeric[] NOT NULL,
  min_span bigint NOT NULL,  -- the shortest of its GPUs' hours (end - start)
  -- By each hour's first start, account (only one that may be special: '__...'; else '') and team.
  first_starts bigint[] NOT NULL, accounts text[] NOT NULL, teams text[] NOT NULL, micros bigint[] NOT NULL,
  PRIMARY KEY (cluster, node, period_start)
) PARTITION BY RANGE (period_start);
GRANT SELECT ON gpuledger.node_day_charts TO gpuledger_reader;

-- A node's day from its GPUs' current day_charts rows; none unless every
-- GPU-day the node has in window_totals has one, and none for a node of more
-- than 256 GPU-days (8 GPUs of 7 MIG instances each are 56): each of its day
-- roll-ups gathers the node's day again, so a node that named thousands of
-- GPUs would cost the server the square of them; its days are read from the
-- GPUs' rows.
-- Planned at every call (force_custom_plan): a plan kept for a session is
-- made while the month's day_charts may still be a few rows, and a scan of
-- the whole partition a call, fine then, is not once it holds 1,000 nodes'
-- days (a bench's 1,000-node month took more than 24 minutes to gather
-- instead of seconds).
CREATE OR REPLACE FUNCTION gpuledger.node_day_chart_of(c text, n text, d bigint)
RETURNS SETOF gpuledger.node_day_charts
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_custom_plan AS $fn$
DECLARE
  gpu_days bigint;
BEGIN
  SELECT count(*) INTO gpu_days FROM gpuledger.window_totals t
  WHERE t.period = 'day' AND t.cluster = c AND t.node = n AND t.period_start = d;
  IF gpu_days = 0 OR gpu_days > 256 THEN
    RETURN;
  END IF;
  -- The arrays unnested only when every GPU-day has its current row (g.rows,
  -- a lateral reference: a one-time filter on the unnest).
  RETURN QUERY
  WITH current_rows AS MATERIALIZED (
    SELECT x.* FROM gpuledger.window_totals t JOIN gpuledger.day_charts x
      ON x.cluster = t.cluster AND x.node = t.node AND x.gpu_uuid = t.gpu_uuid AND x.period_start = t.period_start
     AND x.windows = t.windows AND x.cost_micros = t.cost_micros AND x.digests = t.digests
    WHERE t.period = 'day' AND t.cluster = c AND t.node = n AND t.period_start = d
      AND x.cluster = c AND x.node = n AND x.period_start = d)
  SELECT d, c, n, g.gpus, g.windows, g.costs, g.digests, g.min_span,
         s.first_starts, s.accounts, s.teams, s.micros
  FROM (SELECT array_agg(x.gpu_uuid ORDER BY x.gpu_uuid) AS gpus, array_agg(x.windows ORDER BY x.gpu_uuid) AS windows,
               array_agg(x.cost_micros::numeric ORDER BY x.gpu_uuid) AS costs,
               array_agg(x.digests ORDER BY x.gpu_uuid) AS digests, min(x.min_span) AS min_span, count(*) AS rows
        FROM current_rows x) g
  CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(u.f ORDER BY u.f, u.a, u.t), '{}') AS first_starts,
           coalesce(array_agg(u.a ORDER BY u.f, u.a, u.t), '{}') AS accounts,
           coalesce(array_agg(u.t ORDER BY u.f, u.a, u.t), '{}') AS teams,
           coalesce(array_agg(u.m ORDER BY u.f, u.a, u.t), '{}') AS micros
    FROM (SELECT p.f, p.a, p.t, sum(p.m)::bigint AS m
          FROM current_rows x CROSS JOIN LATERAL unnest(x.first_starts, x.accounts, x.teams, x.micros) p(f, a, t, m)
          WHERE g.rows = gpu_days GROUP BY 1, 2, 3) u) s
  WHERE g.rows = gpu_days;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.node_day_chart_of(text, text, bigint) FROM PUBLIC;
-- The node's day gathered again (as the trigger does and the backfill below).
CREATE OR REPLACE FUNCTION gpuledger.gather_node_day(c text, n text, d bigint) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $fn$
  INSERT INTO gpuledger.node_day_charts SELECT * FROM gpuledger.node_day_chart_of(c, n, d)
  ON CONFLICT (cluster, node, period_start) DO UPDATE SET gpus = excluded.gpus, windows = excluded.windows,
    cost_micros = excluded.cost_micros, digests = excluded.digests, min_span = excluded.min_span,
    first_starts = excluded.first_starts, accounts = excluded.accounts, teams = excluded.teams,
    micros = excluded.micros
$fn$;
REVOKE ALL ON FUNCTION gpuledger.gather_node_day(text, text, bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION gpuledger.create_charges_partition(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['rollup_charges', 'month_charts', 'day_charts', 'node_day_charts'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl, extract(epoch FROM lo)::bigint,
                   extract(epoch FROM lo + interval '1 month')::bigint);
  END LOOP;
END
$fn$;
SELECT gpuledger.create_charges_partition(extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM'))::bigint)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.day_charts'::regclass;

-- The nodes of the day roll-ups a statement verified, gathered again after
-- keep_rollup_charges wrote their day_charts rows (a statement's AFTER
-- triggers fire in their names' order).
CREATE OR REPLACE FUNCTION gpuledger.keep_node_day_charts() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM gpuledger.gather_node_day(k.cluster, k.node, k.period_start)
  FROM (SELECT DISTINCT f.cluster, f.node, f.period_start FROM fresh f WHERE f.verified AND f.period = 'day') k;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.keep_node_day_charts() FROM PUBLIC;
DROP TRIGGER IF EXISTS keep_rollup_charges_of_nodes ON gpuledger.rollups;
CREATE TRIGGER keep_rollup_charges_of_nodes AFTER INSERT ON gpuledger.rollups
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.keep_node_day_charts();

SELECT gpuledger.gather_node_day(k.cluster, k.node, k.period_start)
FROM (SELECT DISTINCT x.cluster, x.node, x.period_start FROM gpuledger.day_charts x) k;
ANALYZE gpuledger.node_day_charts;
)SQL";

}  // namespace gpuledger::fleet
