#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, ingest and the checks a roll-up of a period still open would
// need: check_rollup (schema 9's, with schema 17's packs) read a day's or a
// month's sums from every window in it, 1,440 rows a GPU-day and 43,200 a
// GPU-month, although the same sums stand in the bodies of the finer roll-ups
// it already reads for the parts, each verified against those windows by
// this same rule; and it read its own body as json, parsed again at each of
// some twenty operators. Measured on a 1,000-node month's node-0 (5,760
// hours, 240 days, 8 months; docs/performance.md, "Schema 19"): an hour
// 0.52 -> 0.38 ms, a day 4.9 -> 1.1 ms, a month 67 -> 2.2 ms.
//
// check_rollup_19 is schema 17's check with the same rules, reasons and
// order of them, but:
// - a day's or a month's sums (first start, last end, the four micros,
//   energy, currencies) are those of its verified, current finer roll-ups'
//   bodies plus, for its finer periods without one, their windows' rows and
//   packs, as before; the parts came from the same split already;
// - each body is parsed once, as jsonb: the finer ones into an array both
//   statements read, its own on entry.
// jsonb reads a number by its value: a micros written 5.184e7 reads as
// 51840000 where json's text failed the cast ("malformed"); a report reads
// the body with its own parser and reads finer periods when it cannot.
// It is a function of its own name, and verify_rollup calls it: migration
// 17 edits check_rollup's text where it finds schema 9's, and every
// migration stays repeatable (FleetChart's upgrades run 14 to 19 again).
const char* const kMigration19 = R"SQL(
CREATE OR REPLACE FUNCTION gpuledger.check_rollup_19(r gpuledger.rollups) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  b jsonb;
  period_end bigint;
  finer text := CASE r.period WHEN 'day' THEN 'hour' WHEN 'month' THEN 'day' END;
  -- The stretches read from windows start at `uncovered`, each `len` long:
  -- an hour whole, or a day's hours and a month's days without a current roll-up.
  len bigint := CASE r.period WHEN 'month' THEN 86400 ELSE 3600 END;
  uncovered bigint[];
  bodies jsonb[];  -- the verified, current finer roll-ups' bodies, each parsed once
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
    b := r.body::jsonb;
    IF finer IS NULL THEN
      bodies := '{}';
      uncovered := ARRAY[r.period_start];
    ELSE
      SELECT coalesce(array_agg(f.body::jsonb ORDER BY t.period_start) FILTER (WHERE f.verified), '{}'),
             coalesce(array_agg(t.period_start ORDER BY t.period_start) FILTER (WHERE f.verified IS NULL), '{}')
      INTO bodies, uncovered
      FROM gpuledger.window_totals t LEFT JOIN gpuledger.rollups f
        ON f.period = t.period AND f.cluster = t.cluster AND f.node = t.node AND f.gpu_uuid = t.gpu_uuid
       AND f.period_start = t.period_start AND f.windows = t.windows AND f.cost_micros = t.cost_micros
       AND f.digests = t.digests AND f.verified
       AND f.period = finer AND f.cluster = r.cluster AND f.node = r.node AND f.gpu_uuid = r.gpu_uuid
       AND f.period_start >= r.period_start AND f.period_start < period_end
      WHERE t.period = finer AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
        AND t.period_start >= r.period_start AND t.period_start < period_end;
    END IF;
    -- The period's sums: its finer roll-ups' bodies where they are current
    -- (each verified against its windows by this rule: sums of sums are the
    -- sums), its windows' rows and packs elsewhere (an hour: all of them).
    SELECT min(v.s) AS s, max(v.e) AS e, sum(v.cost) AS cost, sum(v.busy) AS busy, sum(v.idle) AS idle,
           sum(v.memory) AS memory, sum(v.mj) AS mj, min(v.cur) AS cur, max(v.cur) AS cur2
    INTO w FROM (
      SELECT (j->>'start')::bigint AS s, (j->>'end')::bigint AS e, (j->'micros'->>0)::numeric AS cost,
             (j->'micros'->>1)::numeric AS busy, (j->'micros'->>2)::numeric AS idle,
             (j->'micros'->>3)::numeric AS memory, (j->'energy'->>'mj')::numeric AS mj, j->>'currency' AS cur
      FROM unnest(bodies) j
      UNION ALL
      SELECT v.* FROM unnest(uncovered) u(a) CROSS JOIN LATERAL (
        SELECT v.start_time, v.end_time, v.cost_micros, v.busy_micros, v.idle_micros, v.memory_micros,
               v.energy_millijoules, v.currency
        FROM gpuledger.windows v
        WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid
          AND v.start_time >= u.a AND v.start_time < u.a + len OFFSET 0) v
      UNION ALL
      SELECT pk.* FROM unnest(uncovered) u(a) JOIN gpuledger.window_packs p
        ON p.cluster = r.cluster AND p.node = r.node AND p.gpu_uuid = r.gpu_uuid AND p.hour_start >= u.a
       AND p.hour_start < u.a + len
      CROSS JOIN LATERAL (VALUES
        (p.first_start, p.last_end, p.cost_micros, p.busy_micros, p.idle_micros, p.memory_micros,
         p.energy_millijoules, p.currency),
        (NULL, NULL, NULL, NULL, NULL, NULL, NULL, p.currency_last)) pk(s, e, cost, busy, idle, memory, mj, cur)) v;
    IF jsonb_typeof(b) IS DISTINCT FROM 'object' OR (b->'slot'->>0) IS DISTINCT FROM r.gpu_uuid
       OR (b->>'start')::bigint IS DISTINCT FROM w.s OR (b->>'end')::bigint IS DISTINCT FROM w.e
       OR (b->'micros'->>0)::bigint IS DISTINCT FROM r.cost_micros OR (b->'micros'->>0)::numeric IS DISTINCT FROM w.cost
       OR (b->'micros'->>1)::numeric IS DISTINCT FROM w.busy OR (b->'micros'->>2)::numeric IS DISTINCT FROM w.idle
       OR (b->'micros'->>3)::numeric IS DISTINCT FROM w.memory OR (b->>'currency') IS DISTINCT FROM w.cur
       OR w.cur IS DISTINCT FROM w.cur2 OR (b->'energy'->>'mj')::numeric IS DISTINCT FROM w.mj THEN
      RETURN 'its body is not its windows'' merge';
    END IF;
    -- Every charge ('c'), energy part ('e') and account ('a') of the period,
    -- from the same bodies and stretches.
    WITH parts AS (
      SELECT p.part, p.account, p.kind, p.namespace, p.pod, p.container, p.team, p.slurm_user, p.slurm_account,
             p.n::numeric AS n
      FROM unnest(bodies) j CROSS JOIN LATERAL (
        SELECT 'c' AS part, c->>0 AS account, c->>1 AS kind, NULL::text AS namespace, NULL::text AS pod,
               NULL::text AS container, NULL::text AS team, NULL::text AS slurm_user, NULL::text AS slurm_account,
               (c->>2)::bigint AS n
        FROM jsonb_array_elements(j->'charges') c
        UNION ALL SELECT 'e', c->>0, c->>1, NULL, NULL, NULL, NULL, NULL, NULL, (c->>2)::bigint
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(j->'energy') = 'object' THEN j->'energy'->'parts'
                                       ELSE '[]' END) c
        UNION ALL SELECT 'a', c->>0, '', c->>1, c->>2, c->>3, c->>4, coalesce(c->>23, ''), coalesce(c->>24, ''), NULL
        FROM jsonb_array_elements(j->'accounts') c) p
      UNION ALL
      -- OFFSET 0: each stretch's parts by the index, one stretch at a time.
      SELECT v.* FROM unnest(uncovered) u(a) CROSS JOIN LATERAL (
        SELECT v.part, v.account, v.kind, v.namespace, v.pod, v.container, v.team, v.slurm_user, v.slurm_account, v.n
        FROM gpuledger.window_parts v
        WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid AND v.hour_start >= u.a
          AND v.hour_start < u.a + len OFFSET 0) v
      UNION ALL
      -- A packed hour's parts from its windows' bodies (pack_hours dropped its window_parts rows).
      SELECT q.part, q.account, q.kind, q.namespace, q.pod, q.container, q.team, q.slurm_user, q.slurm_account,
             q.n::numeric
      FROM unnest(uncovered) u(a) JOIN gpuledger.window_packs p
        ON p.cluster = r.cluster AND p.node = r.node AND p.gpu_uuid = r.gpu_uuid AND p.hour_start >= u.a
       AND p.hour_start < u.a + len
      CROSS JOIN LATERAL json_array_elements(p.body) e
      CROSS JOIN LATERAL gpuledger.window_body_parts((e->'body')::jsonb) q),
    -- Charges and parts summed by account and kind; accounts by name and labels.
    theirs AS MATERIALIZED (
      SELECT t.part, t.account, t.kind, t.namespace, t.pod, t.container, t.team, t.slurm_user, t.slurm_account,
             sum(t.n) AS n
      FROM parts t GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9),
    mine AS (
      SELECT p.part, c->>0 AS account, c->>1 AS kind, sum((c->>2)::bigint) AS n, min((c->>2)::bigint) AS least
      FROM (VALUES ('c', b->'charges'), ('e', CASE WHEN jsonb_typeof(b->'energy') = 'object'
                                                   THEN b->'energy'->'parts' ELSE '[]'::jsonb END)) p(part, a)
      CROSS JOIN LATERAL jsonb_array_elements(p.a) c GROUP BY 1, 2, 3)
    SELECT
      EXISTS (SELECT FROM mine FULL JOIN (SELECT * FROM theirs WHERE part <> 'a') t
                ON mine.part = t.part AND mine.account = t.account AND mine.kind = t.kind
              WHERE mine.n IS DISTINCT FROM t.n OR mine.least < 0) AS charges,
      (SELECT count(*) FROM jsonb_array_elements(b->'accounts'))
        <> (SELECT count(DISTINCT t.account) FROM theirs t WHERE t.part = 'a')
      OR (SELECT count(DISTINCT a->>0) FROM jsonb_array_elements(b->'accounts') a)
        <> (SELECT count(*) FROM jsonb_array_elements(b->'accounts'))
      OR EXISTS (SELECT FROM jsonb_array_elements(b->'accounts') a WHERE NOT EXISTS (
           SELECT FROM theirs t WHERE t.part = 'a' AND t.account = a->>0
             AND (t.namespace, t.pod, t.container, t.team) IS NOT DISTINCT FROM (a->>1, a->>2, a->>3, a->>4)))
        AS accounts,
      EXISTS (SELECT FROM jsonb_array_elements(b->'accounts') a WHERE NOT EXISTS (
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
REVOKE ALL ON FUNCTION gpuledger.check_rollup_19(gpuledger.rollups) FROM PUBLIC;

CREATE OR REPLACE FUNCTION gpuledger.verify_rollup() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  NEW.refusal := gpuledger.check_rollup_19(NEW);
  NEW.verified := NEW.refusal IS NULL;
  RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.verify_rollup() FROM PUBLIC;
)SQL";

}  // namespace gpuledger::fleet
