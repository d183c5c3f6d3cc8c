#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, a month to date's chart: a range of a few days is charted by the
// hour, and the server summed the range's hour rows of rollup_charges for it,
// 8.4 M rows for 14 days of a 1,000-node fleet (70 s for a JSON or HTML month
// to date, docs/performance.md). day_charts is to a day what month_charts is
// to a month: when the database verifies a day roll-up, it gathers its hours'
// current rows into one row a GPU-day (each hour's first start, team and
// money, as arrays), which counts only while the day roll-up still matches
// window_totals (then the day holds exactly the windows its hours did). A
// GPU-day without one (an hour not rolled up when the day came) has its hours
// summed instead, as before.
//
// gathered_chart_of is PL/pgSQL with a generic plan, as charge_rows_of became
// in schema 10: a SQL function with its own search_path is planned again at
// every call (the backfill below calls it once a stored day roll-up).
const char* const kMigration13 = R"SQL(
CREATE TABLE gpuledger.day_charts(
  period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  windows bigint NOT NULL, cost_micros bigint NOT NULL, digests numeric NOT NULL,
  min_span bigint NOT NULL,  -- the shortest of its hours' (end - start)
  -- By each hour's first start, account (only one that may be special: '__...'; else '') and team.
  first_starts bigint[] NOT NULL, accounts text[] NOT NULL, teams text[] NOT NULL, micros bigint[] NOT NULL,
  PRIMARY KEY (cluster, node, gpu_uuid, period_start, windows)
) PARTITION BY RANGE (period_start);
GRANT SELECT ON gpuledger.day_charts TO gpuledger_reader;

-- A verified roll-up's chart row (a month's or a day's), from the current
-- rows of its parts (its days or its hours); none unless every part that has
-- windows has them. Schema 6's month_chart_of, for either period: the months
-- are read through it from now on too, so there is one rule of what a
-- gathered row holds.
CREATE FUNCTION gpuledger.gathered_chart_of(r gpuledger.rollups, part text) RETURNS SETOF gpuledger.month_charts
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp SET plan_cache_mode = force_generic_plan AS $fn$
BEGIN
  RETURN QUERY
  SELECT r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests, min(g.span),
         coalesce(array_agg(g.first_start ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.account ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.team ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.micros ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}')
  FROM (SELECT t.period_start AS part_start, c.first_start, c.charged,
               CASE WHEN left(c.account, 2) = '__' THEN c.account ELSE '' END AS account, c.team,
               sum(c.micros)::bigint AS micros, min(c.span) AS span
        FROM gpuledger.window_totals t JOIN gpuledger.rollup_charges c
          ON c.period = t.period AND c.cluster = t.cluster AND c.node = t.node AND c.gpu_uuid = t.gpu_uuid
         AND c.period_start = t.period_start AND c.windows = t.windows AND c.cost_micros = t.cost_micros
         AND c.digests = t.digests
        WHERE t.period = part AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
          AND t.period_start >= r.period_start AND t.period_start < gpuledger.period_end(r.period, r.period_start)
          -- Said of c too: a generic plan read every hour of the GPU's month for a day (7.5 ms, not 0.3)
          AND c.period_start >= r.period_start AND c.period_start < gpuledger.period_end(r.period, r.period_start)
        GROUP BY 1, 2, 3, 4, 5) g
  HAVING count(*) > 0 AND count(DISTINCT g.part_start) = (
    SELECT count(*) FROM gpuledger.window_totals t
    WHERE t.period = part AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
      AND t.period_start >= r.period_start AND t.period_start < gpuledger.period_end(r.period, r.period_start));
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.gathered_chart_of(gpuledger.rollups, text) FROM PUBLIC;
CREATE OR REPLACE FUNCTION gpuledger.month_chart_of(r gpuledger.rollups) RETURNS SETOF gpuledger.month_charts
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT * FROM gpuledger.gathered_chart_of(r, 'day')
$fn$;

-- Its partitions come with the other chart tables' (create_charges_partition,
-- schema 6, which create_partitions calls), for the months that have them too.
CREATE OR REPLACE FUNCTION gpuledger.create_charges_partition(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['rollup_charges', 'month_charts', 'day_charts'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl, extract(epoch FROM lo)::bigint,
                   extract(epoch FROM lo + interval '1 month')::bigint);
  END LOOP;
END
$fn$;
SELECT gpuledger.create_charges_partition(extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM'))::bigint)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.month_charts'::regclass;

-- The hours first, then the days (their hours may have come in the same
-- statement), then the months (their days may have).
CREATE OR REPLACE FUNCTION gpuledger.keep_rollup_charges() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.rollup_charges
  SELECT c.* FROM fresh f CROSS JOIN LATERAL gpuledger.charge_rows_of(f) c
  WHERE f.verified AND f.period IN ('hour', 'day');
  INSERT INTO gpuledger.day_charts
  SELECT c.* FROM fresh f CROSS JOIN LATERAL gpuledger.gathered_chart_of(f, 'hour') c
  WHERE f.verified AND f.period = 'day';
  INSERT INTO gpuledger.month_charts
  SELECT c.* FROM fresh f CROSS JOIN LATERAL gpuledger.month_chart_of(f) c WHERE f.verified AND f.period = 'month';
  RETURN NULL;
END
$fn$;
INSERT INTO gpuledger.day_charts
SELECT c.* FROM gpuledger.rollups f CROSS JOIN LATERAL gpuledger.gathered_chart_of(f, 'hour') c
WHERE f.verified AND f.period = 'day';
ANALYZE gpuledger.day_charts;
)SQL";

}  // namespace gpuledger::fleet
