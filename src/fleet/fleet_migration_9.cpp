#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, ingest: a window's body is parsed once. Up to schema 8 the
// server parsed every body twice: once when the window came in (its check,
// refuse_unreadable_bodies) and again when its hour's roll-up came (the
// check_rollup of an hour read its 60 windows' bodies, json to jsonb, and
// took their charges, energy parts and accounts apart: 46 of the server's
// ~130 us a window, docs/performance.md "Schema 9").
//
// From schema 9 the body's check also keeps what an hour's check needs of
// it: window_parts holds, per GPU-hour and statement, each charge's and
// energy part's sum by account and kind and each account's labels, written
// by the database from the bodies it has just parsed and accepted (so no
// agent writes it; agents are granted nothing on it), in the same statement
// and transaction as the windows. Windows are never updated or deleted
// (only whole months dropped by prune_month, which drops their parts with
// them), so the parts of an hour are always its windows'. check_rollup reads
// them where it read the windows' bodies: the same rules and reasons, on the
// same sums.
const char* const kMigration9 = R"SQL(
CREATE TABLE gpuledger.window_parts(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  hour_start bigint NOT NULL,  -- the hour of the windows' start_time
  part text NOT NULL,          -- 'c' a charge, 'e' an energy part, 'a' an account
  account text, kind text, namespace text, pod text, container text, team text, slurm_user text,
  slurm_account text,
  n numeric                    -- a charge's or part's sum; NULL for an account
) PARTITION BY RANGE (hour_start);
CREATE INDEX window_parts_hour ON gpuledger.window_parts (cluster, node, gpu_uuid, hour_start);

-- A window body's parts as the views read them (body_accounts, body_charges,
-- body_energy: an account's labels as text, its Slurm user and account ''
-- when it has none), each with `ok`: whether schema 7's check takes it (the
-- columns NOT NULL there not null, the kinds, the bounds). An array that is
-- not one reads as none (its body is refused by its shape, window_body_shaped).
-- A value the views cannot cast raises: refused too. Plain SQL: inlined.
CREATE FUNCTION gpuledger.window_body_parts(b jsonb) RETURNS TABLE(
  part text, account text, kind text, namespace text, pod text, container text, team text, slurm_user text,
  slurm_account text, n bigint, ok boolean)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT 'a', a.account, '', a.namespace, a.pod, a.container, a.team, a.slurm_user, a.slurm_account, NULL::bigint,
         NOT (a.account IS NULL OR a.namespace IS NULL OR a.pod IS NULL OR a.container IS NULL OR a.team IS NULL
           OR a.held_share IS NULL OR a.allocated_share IS NULL OR a.allocated_share_known IS NULL
           OR a.busy_seconds IS NULL OR a.activity_share IS NULL OR a.gpu_busy_seconds IS NULL
           OR a.vram_byte_seconds IS NULL OR a.launches IS NULL
           OR (a.idle_lead_seconds IS NULL) <> (a.idle_trail_seconds IS NULL)
           OR (a.idle_lead_seconds IS NULL) <> (a.idle_longest_seconds IS NULL))
  FROM gpuledger.body_accounts(CASE WHEN pg_catalog.jsonb_typeof(b->'accounts') = 'array' THEN b
                                    ELSE '{"accounts": []}' END) a
  UNION ALL
  SELECT 'c', c.account, c.kind, NULL, NULL, NULL, NULL, NULL, NULL, c.micros,
         NOT (c.account IS NULL OR c.kind IS NULL OR c.kind NOT IN ('busy', 'idle', 'memory') OR c.micros IS NULL
           OR c.micros < 0 OR c.micros > 10000000000)
  FROM gpuledger.body_charges(CASE WHEN pg_catalog.jsonb_typeof(b->'charges') = 'array' THEN b
                                   ELSE '{"charges": []}' END) c
  UNION ALL
  SELECT 'e', e.account, e.kind, NULL, NULL, NULL, NULL, NULL, NULL, e.millijoules,
         NOT (e.account IS NULL OR e.kind IS NULL OR e.kind NOT IN ('busy', 'idle') OR e.millijoules IS NULL
           OR e.millijoules < 0 OR e.millijoules > 10000000000000)
  FROM gpuledger.body_energy(CASE WHEN pg_catalog.jsonb_typeof(b->'energy') = 'array' THEN b ELSE '{}' END) e
$fn$;
-- Schema 7's shape of a body: an object of accounts, charges and (exactly when
-- the window knows its energy) energy parts, each an array.
CREATE FUNCTION gpuledger.window_body_shaped(b jsonb, energy boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT (pg_catalog.jsonb_typeof(b) = 'object' AND pg_catalog.jsonb_typeof(b->'accounts') = 'array'
          AND pg_catalog.jsonb_typeof(b->'charges') = 'array' AND (b ? 'energy') = energy
          AND (NOT energy OR pg_catalog.jsonb_typeof(b->'energy') = 'array')) IS TRUE
$fn$;

-- Schema 7's check of a statement's bodies (the same rules, the same
-- refusal), in one pass that also keeps the parts: each body parsed once, and
-- each account, charge and energy part read once, for its check and for its
-- GPU-hour's sums. The window a refusal names is looked for only when there
-- is one (the first query answers per GPU-hour, not per window).
CREATE OR REPLACE FUNCTION gpuledger.refuse_unreadable_bodies() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  readable boolean;
  bad record;
BEGIN
  WITH parsed AS MATERIALIZED (
    SELECT f.cluster, f.node, f.gpu_uuid, f.start_time, f.body::jsonb AS b, f.energy_millijoules IS NOT NULL AS energy
    FROM fresh f),
  groups AS MATERIALIZED (
    SELECT x.cluster, x.node, x.gpu_uuid, x.start_time - ((x.start_time % 3600) + 3600) % 3600 AS hour_start, p.part,
           p.account, p.kind, p.namespace, p.pod, p.container, p.team, p.slurm_user, p.slurm_account, sum(p.n) AS n,
           bool_and(p.ok) AS ok
    FROM parsed x CROSS JOIN LATERAL gpuledger.window_body_parts(x.b) p
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
  kept AS (
    INSERT INTO gpuledger.window_parts
    SELECT g.cluster, g.node, g.gpu_uuid, g.hour_start, g.part, g.account, g.kind, g.namespace, g.pod, g.container,
           g.team, g.slurm_user, g.slurm_account, g.n
    FROM groups g)
  SELECT coalesce((SELECT bool_and(g.ok IS TRUE) FROM groups g), true)
     AND coalesce((SELECT bool_and(gpuledger.window_body_shaped(x.b, x.energy)) FROM parsed x), true)
  INTO readable;
  IF readable THEN
    RETURN NULL;
  END IF;
  -- Refused (and the parts above with it): the first window that was not.
  SELECT f.cluster, f.node, f.gpu_uuid, f.start_time INTO bad
  FROM fresh f CROSS JOIN LATERAL (SELECT f.body::jsonb AS b OFFSET 0) x
  WHERE NOT gpuledger.window_body_shaped(x.b, f.energy_millijoules IS NOT NULL)
     OR EXISTS (SELECT FROM gpuledger.window_body_parts(x.b) p WHERE p.ok IS NOT TRUE)
  ORDER BY f.start_time, f.gpu_uuid
  LIMIT 1;
  RAISE EXCEPTION 'gpuledger: the body of window %/%/% at % is not accounts, charges and energy parts a report '
    'can read', bad.cluster, bad.node, bad.gpu_uuid, bad.start_time USING ERRCODE = 'check_violation';
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.refuse_unreadable_bodies() FROM PUBLIC;

-- A month's partitions: window_parts' too.
CREATE OR REPLACE FUNCTION gpuledger.create_partitions_5(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['windows', 'window_totals', 'rollups', 'window_parts'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl, extract(epoch FROM lo)::bigint,
                   extract(epoch FROM lo + interval '1 month')::bigint);
  END LOOP;
END
$fn$;
-- Every month that has windows partitions (a pruned month has none, and gets none), and the parts of
-- the windows there.
SELECT gpuledger.create_partitions_5(extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM'))::bigint)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.windows'::regclass;
INSERT INTO gpuledger.window_parts
SELECT w.cluster, w.node, w.gpu_uuid, w.start_time - ((w.start_time % 3600) + 3600) % 3600, p.part, p.account, p.kind,
       p.namespace, p.pod, p.container, p.team, p.slurm_user, p.slurm_account, sum(p.n)
FROM gpuledger.windows w CROSS JOIN LATERAL gpuledger.window_body_parts(w.body::jsonb) p
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13;
ANALYZE gpuledger.window_parts;

-- prune_month of schema 4, dropping the month's window_parts with its windows.
CREATE OR REPLACE FUNCTION gpuledger.prune_month(m bigint) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := to_timestamp(m) AT TIME ZONE 'UTC';
  hi bigint := extract(epoch FROM lo + interval '1 month')::bigint;
  suffix text := to_char(lo, 'YYYY_MM');
  tbl text;
  missing bigint;
  counted numeric;
BEGIN
  IF date_trunc('month', lo) <> lo THEN RETURN 'not the start of a month'; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('gpuledger.ensure_month'));  -- no month created meanwhile
  IF EXISTS (SELECT FROM gpuledger.pruned_months p WHERE p.month_start = m) THEN RETURN NULL; END IF;
  FOREACH tbl IN ARRAY ARRAY['windows', 'window_parts'] LOOP
    IF to_regclass(format('gpuledger.%I', tbl || '_' || suffix)) IS NOT NULL THEN
      EXECUTE format('LOCK TABLE gpuledger.%I IN ACCESS EXCLUSIVE MODE', tbl || '_' || suffix);
    END IF;
  END LOOP;
  SELECT count(*) INTO missing FROM gpuledger.window_totals t
  WHERE t.period_start >= m AND t.period_start < hi AND NOT EXISTS (
    SELECT FROM gpuledger.rollups r WHERE r.period = t.period AND r.cluster = t.cluster AND r.node = t.node
      AND r.gpu_uuid = t.gpu_uuid AND r.period_start = t.period_start AND r.windows = t.windows
      AND r.cost_micros = t.cost_micros AND r.digests = t.digests AND r.verified);
  IF missing > 0 THEN
    RETURN missing || ' GPU-hours, -days or -months have no verified roll-up of their windows yet';
  END IF;
  SELECT coalesce(sum(t.windows), 0) INTO counted FROM gpuledger.window_totals t
  WHERE t.period = 'month' AND t.period_start = m;
  INSERT INTO gpuledger.pruned_months(month_start, windows) VALUES (m, counted);
  FOREACH tbl IN ARRAY ARRAY['windows', 'window_parts'] LOOP
    EXECUTE format('DROP TABLE IF EXISTS gpuledger.%I', tbl || '_' || suffix);
  END LOOP;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.prune_month(bigint) FROM PUBLIC;

-- Schema 8's check (the same rules and reasons), the windows' charges, energy
-- parts and accounts read from window_parts instead of their bodies: an
-- hour's 60 bodies were parsed again for it, now a few rows a GPU-hour.
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
    -- The stretches read from their windows' parts: the whole period for an
    -- hour; for a day or a month, its hours or days with windows and no
    -- verified, current roll-up.
    uncovered AS (
      SELECT r.period_start AS a, period_end AS b WHERE finer IS NULL
      UNION ALL
      SELECT t.period_start, t.period_start + finer_len FROM gpuledger.window_totals t
      WHERE finer IS NOT NULL AND t.period = finer AND t.cluster = r.cluster AND t.node = r.node
        AND t.gpu_uuid = r.gpu_uuid AND t.period_start >= r.period_start AND t.period_start < period_end
        AND NOT EXISTS (SELECT FROM finer_rollups f WHERE f.period_start = t.period_start)),
    -- Every charge ('c'), energy part ('e') and account ('a') of the period.
    parts AS (
      SELECT p.part, p.account, p.kind, p.namespace, p.pod, p.container, p.team, p.slurm_user, p.slurm_account,
             p.n::numeric AS n
      FROM finer_rollups f CROSS JOIN LATERAL (
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
      -- OFFSET 0: each stretch's parts by the index, one stretch at a time.
      SELECT v.* FROM uncovered u CROSS JOIN LATERAL (
        SELECT v.part, v.account, v.kind, v.namespace, v.pod, v.container, v.team, v.slurm_user, v.slurm_account, v.n
        FROM gpuledger.window_parts v
        WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid AND v.hour_start >= u.a
          AND v.hour_start < u.b OFFSET 0) v),
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
