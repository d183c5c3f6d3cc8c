#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, ingest: what the server does for each window it takes, cheaper,
// the same answers (docs/performance.md, "Schema 8").
// - count_windows sums a statement's windows by hour first and its days and
//   months from those sums (the sums of sums are the sums), one digest part
//   a window, written out: it summed every window three times through two
//   functions that PostgreSQL cannot inline (their SET search_path), 8 us of
//   the server's ~150 a window.
// - check_rollup (schema 7's, the same rules and reasons) takes from each
//   charge, energy part and account only its own fields, an account's labels
//   as text, where it built two JSON arrays of every element to group by:
//   a fifth less time for an hour's 60 windows; and a day or a month reads
//   the windows of its hours or days without a verified roll-up only, where
//   it read all its windows to find those.
const char* const kMigration8 = R"SQL(
CREATE OR REPLACE FUNCTION gpuledger.count_windows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.window_totals AS t (period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digests)
  SELECT p.period, p.period_start, h.cluster, h.node, h.gpu_uuid, sum(h.windows), sum(h.cost), sum(h.digests)
  FROM (SELECT f.start_time - f.start_time % 3600 AS hour, f.cluster, f.node, f.gpu_uuid, count(*) AS windows,
               sum(f.cost_micros) AS cost, sum(('x' || substr(f.digest, 1, 15))::bit(60)::bigint) AS digests
        FROM fresh f GROUP BY 1, 2, 3, 4) h
  CROSS JOIN LATERAL gpuledger.periods_of(h.hour) p
  GROUP BY 1, 2, 3, 4, 5
  ON CONFLICT (period, cluster, node, gpu_uuid, period_start)
  DO UPDATE SET windows = t.windows + EXCLUDED.windows, cost_micros = t.cost_micros + EXCLUDED.cost_micros,
                digests = t.digests + EXCLUDED.digests;
  RETURN NULL;
END
$fn$;

CREATE OR REPLACE FUNCTION gpuledger.check_rollup(r gpuledger.rollups) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  b json := r.body;
  period_end bigint;
  finer text := CASE r.period WHEN 'day' THEN 'hour' WHEN 'month' THEN 'day' END;
  finer_len bigint := CASE r.period WHEN 'day' THEN 3600 ELSE 86400 END;
  w record;
  x record;
BEGIN
  IF NOT EXISTS (SELECT FROM gpuledger.periods_of(r.period_start) p
                 WHERE p.period = r.period AND p.period_start = r.period_start) THEN
    RETURN 'not the start of a period';
  END IF;
  period_end := gpuledger.period_end(r.period, r.period_start);
  IF NOT EXISTS (SELECT FROM gpuledger.window_totals t WHERE t.period = r.period AND t.period_start = r.period_start
                 AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
                 AND t.windows = r.windows AND t.cost_micros = r.cost_micros AND t.digests = r.digests) THEN
    RETURN 'not the windows the database holds';
  END IF;
  BEGIN
    SELECT min(v.start_time) AS s, max(v.end_time) AS e, sum(v.cost_micros) AS cost, sum(v.busy_micros) AS busy,
           sum(v.idle_micros) AS idle, sum(v.memory_micros) AS memory, sum(v.energy_millijoules) AS mj,
           min(v.currency) AS cur, max(v.currency) AS cur2
    INTO w FROM gpuledger.windows v
    WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid
      AND v.start_time >= r.period_start AND v.start_time < period_end;
    IF json_typeof(b) IS DISTINCT FROM 'object' OR (b->'slot'->>0) IS DISTINCT FROM r.gpu_uuid
       OR (b->>'start')::bigint IS DISTINCT FROM w.s OR (b->>'end')::bigint IS DISTINCT FROM w.e
       OR (b->'micros'->>0)::bigint IS DISTINCT FROM r.cost_micros OR (b->'micros'->>0)::numeric IS DISTINCT FROM w.cost
       OR (b->'micros'->>1)::numeric IS DISTINCT FROM w.busy OR (b->'micros'->>2)::numeric IS DISTINCT FROM w.idle
       OR (b->'micros'->>3)::numeric IS DISTINCT FROM w.memory OR (b->>'currency') IS DISTINCT FROM w.cur
       OR w.cur IS DISTINCT FROM w.cur2 OR (b->'energy'->>'mj')::numeric IS DISTINCT FROM w.mj THEN
      RETURN 'its body is not its windows'' merge';
    END IF;
    WITH finer_rollups AS MATERIALIZED (
      SELECT f.period_start, f.body::jsonb AS j FROM gpuledger.window_totals t JOIN gpuledger.rollups f
        ON f.period = t.period AND f.cluster = t.cluster AND f.node = t.node AND f.gpu_uuid = t.gpu_uuid
       AND f.period_start = t.period_start AND f.windows = t.windows AND f.cost_micros = t.cost_micros
       AND f.digests = t.digests AND f.verified
      WHERE t.period = finer AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
        AND t.period_start >= r.period_start AND t.period_start < period_end),
    -- The stretches read from their windows: the whole period for an hour;
    -- for a day or a month, its hours or days with windows (a window_totals
    -- row) and no verified, current roll-up. A month read every window it
    -- had to find none of them uncovered (43,200 a GPU-month: 150 of its
    -- 441 ms).
    uncovered AS (
      SELECT r.period_start AS a, period_end AS b WHERE finer IS NULL
      UNION ALL
      SELECT t.period_start, t.period_start + finer_len FROM gpuledger.window_totals t
      WHERE finer IS NOT NULL AND t.period = finer AND t.cluster = r.cluster AND t.node = r.node
        AND t.gpu_uuid = r.gpu_uuid AND t.period_start >= r.period_start AND t.period_start < period_end
        AND NOT EXISTS (SELECT FROM finer_rollups f WHERE f.period_start = t.period_start)),
    -- Every charge ('c'), energy part ('e') and account ('a') of the period,
    -- each with only its own fields taken out (an account's labels as text).
    parts AS (
      SELECT p.* FROM finer_rollups f CROSS JOIN LATERAL (
        SELECT 'c' AS part, c->>0 AS account, c->>1 AS kind, NULL::text AS namespace, NULL::text AS pod,
               NULL::text AS container, NULL::text AS team, NULL::text AS slurm_user, NULL::text AS slurm_account,
               (c->>2)::bigint AS n
        FROM jsonb_array_elements(f.j->'charges') c
        UNION ALL SELECT 'e', c->>0, c->>1, NULL, NULL, NULL, NULL, NULL, NULL, (c->>2)::bigint
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(f.j->'energy') = 'object' THEN f.j->'energy'->'parts'
                                       ELSE '[]' END) c
        UNION ALL SELECT 'a', c->>0, '', c->>1, c->>2, c->>3, c->>4, coalesce(c->>23, ''), coalesce(c->>24, ''), NULL
        FROM jsonb_array_elements(f.j->'accounts') c) p
      UNION ALL
      -- OFFSET 0: each body parsed once, not once a use.
      -- OFFSET 0: each stretch's windows by the key's index (joined, the
      -- planner parsed every window of the month first: 418 ms a day).
      SELECT p.* FROM uncovered u CROSS JOIN LATERAL (
        SELECT v.body FROM gpuledger.windows v
        WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid AND v.start_time >= u.a
          AND v.start_time < u.b OFFSET 0) v
      CROSS JOIN LATERAL (SELECT v.body::jsonb AS j OFFSET 0) vb
      CROSS JOIN LATERAL (
        SELECT 'c' AS part, c->>0 AS account, c->>1 AS kind, NULL::text AS namespace, NULL::text AS pod,
               NULL::text AS container, NULL::text AS team, NULL::text AS slurm_user, NULL::text AS slurm_account,
               (c->>2)::bigint AS n
        FROM jsonb_array_elements(vb.j->'charges') c
        UNION ALL SELECT 'e', c->>0, c->>1, NULL, NULL, NULL, NULL, NULL, NULL, (c->>2)::bigint
        FROM jsonb_array_elements(coalesce(vb.j->'energy', '[]')) c
        UNION ALL SELECT 'a', c->>0, '', c->>1, c->>2, c->>3, c->>4, coalesce(c->>23, ''), coalesce(c->>24, ''), NULL
        FROM jsonb_array_elements(vb.j->'accounts') c) p),
    -- Charges and parts summed by account and kind; accounts by name and labels.
    theirs AS MATERIALIZED (
      SELECT t.part, t.account, t.kind, t.namespace, t.pod, t.container, t.team, t.slurm_user, t.slurm_account,
             sum(t.n) AS n
      FROM parts t GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9),
    mine AS (
      SELECT p.part, c->>0 AS account, c->>1 AS kind, sum((c->>2)::bigint) AS n, min((c->>2)::bigint) AS least
      FROM (VALUES ('c', b->'charges'), ('e', CASE WHEN json_typeof(b->'energy') = 'object'
                                                   THEN b->'energy'->'parts' ELSE '[]'::json END)) p(part, a)
      CROSS JOIN LATERAL json_array_elements(p.a) c GROUP BY 1, 2, 3)
    SELECT
      EXISTS (SELECT FROM mine FULL JOIN (SELECT * FROM theirs WHERE part <> 'a') t
                ON mine.part = t.part AND mine.account = t.account AND mine.kind = t.kind
              WHERE mine.n IS DISTINCT FROM t.n OR mine.least < 0) AS charges,
      (SELECT count(*) FROM json_array_elements(b->'accounts'))
        <> (SELECT count(DISTINCT t.account) FROM theirs t WHERE t.part = 'a')
      OR (SELECT count(DISTINCT a->>0) FROM json_array_elements(b->'accounts') a)
        <> (SELECT count(*) FROM json_array_elements(b->'accounts'))
      OR EXISTS (SELECT FROM json_array_elements(b->'accounts') a WHERE NOT EXISTS (
           SELECT FROM theirs t WHERE t.part = 'a' AND t.account = a->>0
             AND (t.namespace, t.pod, t.container, t.team) IS NOT DISTINCT FROM (a->>1, a->>2, a->>3, a->>4)))
        AS accounts,
      EXISTS (SELECT FROM json_array_elements(b->'accounts') a WHERE NOT EXISTS (
           SELECT FROM theirs t WHERE t.part = 'a' AND t.account = a->>0
             AND (t.slurm_user, t.slurm_account) = (coalesce(a->>23, ''), coalesce(a->>24, '')))) AS slurm,
      EXISTS (SELECT FROM theirs t WHERE t.part = 'a' GROUP BY t.account HAVING count(*) > 1) AS relabelled
    INTO x;
    IF x.charges THEN RETURN 'its charges or energy are not its windows'''; END IF;
    IF x.accounts THEN RETURN 'its accounts are not its windows'''; END IF;
    IF x.slurm THEN RETURN 'its accounts'' Slurm users or accounts are not its windows'''; END IF;
    IF x.relabelled THEN
      RETURN 'an account''s labels changed within the period (one merged account would bill it all to its last team)';
    END IF;
  EXCEPTION WHEN data_exception OR invalid_text_representation OR numeric_value_out_of_range THEN
    RETURN 'its body is malformed (' || SQLERRM || ')';
  END;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.check_rollup(gpuledger.rollups) FROM PUBLIC;
)SQL";

}  // namespace gpuledger::fleet
