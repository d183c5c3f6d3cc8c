#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30: a window is one row. Up to schema 6 a window of a GPU with three
// holders was 16 rows in four tables (the window, 3 accounts, 6 charges, 6
// energy parts), each repeating the key's text and each with its primary-key
// index: 3.9 KB a window, 1.3 GiB a node-month, and 16 heap and index inserts
// a window at ingest (docs/performance.md). From schema 7 the accounts,
// charges and energy parts are the window row's JSON body, in the
// positions of a roll-up's body (window_json.h), and
// gpuledger.accounts, charges and energy_charges are views that read them
// back as the rows they were, for the reports and for check_rollup.
//
// A body is believed only as far as those views can read it: a trigger on
// every insert runs the same expressions (body_accounts, body_charges,
// body_energy) and holds what the old tables' constraints held (the columns
// NOT NULL, the kinds, the bounds), so a stored body never makes a report
// fail. Roll-ups are checked as before, in one pass (check_rollup below).
// PostgreSQL's own compression does not apply: a window's row (~1.4 KB) is
// under the 2 KB past which it compresses anything.
const char* const kMigration7 = R"SQL(
ALTER TABLE gpuledger.windows ADD COLUMN body json;

-- A body's accounts (positions: ledger/window_fields.h, AccountField::json_at),
-- charges and energy parts as rows. Plain SQL functions: a query through the
-- views inlines them.
CREATE FUNCTION gpuledger.body_accounts(b jsonb) RETURNS TABLE(
  account text, namespace text, pod text, container text, team text,
  held_share double precision, allocated_share double precision, allocated_share_known boolean,
  busy_seconds double precision, activity_share double precision, gpu_busy_seconds double precision,
  vram_byte_seconds double precision, launches bigint,
  sm_active double precision, sm_occupancy double precision, tensor_active double precision,
  dram_active double precision,
  vram_peak_bytes bigint, vram_p95_bytes bigint, nvml_vram_peak_bytes bigint, nvml_vram_p95_bytes bigint,
  sm_active_p95 double precision, sm_occupancy_p95 double precision, busy_p95 double precision,
  idle_lead_seconds double precision, idle_trail_seconds double precision, idle_longest_seconds double precision,
  window_count bigint, slurm_user text, slurm_account text)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT a->>0, a->>1, a->>2, a->>3, a->>4, (a->>5)::float8, (a->>6)::float8, (a->>7)::boolean,
         (a->>8)::float8, (a->>9)::float8, (a->>10)::float8, (a->>11)::float8, (a->>12)::bigint,
         (a->13->>0)::float8, (a->13->>1)::float8, (a->13->>2)::float8, (a->13->>3)::float8,
         (a->>14)::bigint, (a->>15)::bigint, (a->>16)::bigint, (a->>17)::bigint,
         (a->>18)::float8, (a->>19)::float8, (a->>20)::float8,
         (a->22->>0)::float8, (a->22->>1)::float8, (a->22->>2)::float8, (a->>21)::bigint,
         coalesce(a->>23, ''), coalesce(a->>24, '')
  FROM pg_catalog.jsonb_array_elements(b->'accounts') a
$fn$;
CREATE FUNCTION gpuledger.body_charges(b jsonb) RETURNS TABLE(account text, kind text, micros bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT c->>0, c->>1, (c->>2)::bigint FROM pg_catalog.jsonb_array_elements(b->'charges') c
$fn$;
CREATE FUNCTION gpuledger.body_energy(b jsonb) RETURNS TABLE(account text, kind text, millijoules bigint)
LANGUAGE sql IMMUTABLE AS $fn$
  SELECT c->>0, c->>1, (c->>2)::bigint
  FROM pg_catalog.jsonb_array_elements(coalesce(b->'energy', '[]'::jsonb)) c
$fn$;

-- The windows of a statement whose bodies the views could not read, or would
-- read as what the tables of schema 6 would not have taken, refuse the
-- statement: each must be an object of accounts, charges and (exactly when
-- the window knows its energy) energy parts, the columns NOT NULL there not
-- null, the kinds and bounds of the charges and parts those tables had. A
-- value the views cannot cast (a string for a number, a number out of its
-- column's range) raises: refused too. An account or a charge named twice is
-- not refused (the tables' keys refused it): a node may name any account in
-- its own windows already, so it gains nothing by naming one twice. One query
-- a statement, each body parsed once: ~30 us a window (a CHECK calling a
-- function was ~50 us, the same rules as a JSON path ~190 us).
CREATE FUNCTION gpuledger.refuse_unreadable_bodies() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  bad record;
BEGIN
  SELECT f.cluster, f.node, f.gpu_uuid, f.start_time INTO bad
  FROM fresh f CROSS JOIN LATERAL (SELECT f.body::jsonb AS b, f.energy_millijoules IS NOT NULL AS energy OFFSET 0) x
  WHERE (jsonb_typeof(x.b) = 'object' AND jsonb_typeof(x.b->'accounts') = 'array'
    AND jsonb_typeof(x.b->'charges') = 'array' AND (x.b ? 'energy') = x.energy
    AND (NOT x.energy OR jsonb_typeof(x.b->'energy') = 'array')
    AND NOT EXISTS (
      SELECT FROM gpuledger.body_accounts(x.b) a
      WHERE a.account IS NULL OR a.namespace IS NULL OR a.pod IS NULL OR a.container IS NULL OR a.team IS NULL
        OR a.held_share IS NULL OR a.allocated_share IS NULL OR a.allocated_share_known IS NULL
        OR a.busy_seconds IS NULL OR a.activity_share IS NULL OR a.gpu_busy_seconds IS NULL
        OR a.vram_byte_seconds IS NULL OR a.launches IS NULL
        OR (a.idle_lead_seconds IS NULL) <> (a.idle_trail_seconds IS NULL)
        OR (a.idle_lead_seconds IS NULL) <> (a.idle_longest_seconds IS NULL))
    AND NOT EXISTS (
      SELECT FROM gpuledger.body_charges(x.b) c
      WHERE c.account IS NULL OR c.kind IS NULL OR c.kind NOT IN ('busy', 'idle', 'memory') OR c.micros IS NULL
        OR c.micros < 0 OR c.micros > 10000000000)
    AND NOT EXISTS (
      SELECT FROM gpuledger.body_energy(x.b) e
      WHERE e.account IS NULL OR e.kind IS NULL OR e.kind NOT IN ('busy', 'idle') OR e.millijoules IS NULL
        OR e.millijoules < 0 OR e.millijoules > 10000000000000)) IS NOT TRUE
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'gpuledger: the body of window %/%/% at % is not accounts, charges and energy parts a report '
      'can read', bad.cluster, bad.node, bad.gpu_uuid, bad.start_time USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.refuse_unreadable_bodies() FROM PUBLIC;

-- The windows already there: their rows in the old tables become their bodies
-- (accounts by name, charges and parts by account and kind: the order a report
-- read them in).
ALTER TABLE gpuledger.accounts RENAME TO accounts_6;
ALTER TABLE gpuledger.charges RENAME TO charges_6;
ALTER TABLE gpuledger.energy_charges RENAME TO energy_charges_6;
SET LOCAL extra_float_digits = 3;  -- every float as text that reads back as the same double
UPDATE gpuledger.windows w SET body = (jsonb_build_object(
  'accounts', coalesce((
    SELECT jsonb_agg(jsonb_build_array(a.account, a.namespace, a.pod, a.container, a.team, a.held_share,
             a.allocated_share, a.allocated_share_known, a.busy_seconds, a.activity_share, a.gpu_busy_seconds,
             a.vram_byte_seconds, a.launches,
             jsonb_build_array(a.sm_active, a.sm_occupancy, a.tensor_active, a.dram_active),
             a.vram_peak_bytes, a.vram_p95_bytes, a.nvml_vram_peak_bytes, a.nvml_vram_p95_bytes, a.sm_active_p95,
             a.sm_occupancy_p95, a.busy_p95, a.window_count,
             CASE WHEN a.idle_lead_seconds IS NOT NULL
                  THEN jsonb_build_array(a.idle_lead_seconds, a.idle_trail_seconds, a.idle_longest_seconds) END)
           || CASE WHEN a.slurm_user <> '' OR a.slurm_account <> ''
                   THEN jsonb_build_array(a.slurm_user, a.slurm_account) ELSE '[]'::jsonb END ORDER BY a.account)
    FROM gpuledger.accounts_6 a
    WHERE a.cluster = w.cluster AND a.node = w.node AND a.gpu_uuid = w.gpu_uuid AND a.start_time = w.start_time), '[]'),
  'charges', coalesce((
    SELECT jsonb_agg(jsonb_build_array(c.account, c.kind, c.micros) ORDER BY c.account, c.kind)
    FROM gpuledger.charges_6 c
    WHERE c.cluster = w.cluster AND c.node = w.node AND c.gpu_uuid = w.gpu_uuid AND c.start_time = w.start_time), '[]'))
  || CASE WHEN w.energy_millijoules IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('energy', coalesce((
    SELECT jsonb_agg(jsonb_build_array(e.account, e.kind, e.millijoules) ORDER BY e.account, e.kind)
    FROM gpuledger.energy_charges_6 e
    WHERE e.cluster = w.cluster AND e.node = w.node AND e.gpu_uuid = w.gpu_uuid AND e.start_time = w.start_time), '[]'))
  END)::json;
SET LOCAL extra_float_digits = 1;
-- The rows just rewritten sit in block ranges the BRIN index on start_time
-- has not summarised, which every read of a range's windows would scan
-- (a 3-hour report of 2 nodes took 4.4 s instead of 0.5 s after this
-- migration): summarise them, and let the planner see the new rows.
SELECT brin_summarize_new_values(x.indexrelid)
FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
JOIN pg_inherits h ON h.inhrelid = x.indrelid
WHERE a.amname = 'brin' AND h.inhparent = 'gpuledger.windows'::regclass;
ANALYZE gpuledger.windows;
DROP TABLE gpuledger.accounts_6, gpuledger.charges_6, gpuledger.energy_charges_6;
ALTER TABLE gpuledger.windows ALTER COLUMN body SET NOT NULL;
CREATE TRIGGER refuse_unreadable_bodies AFTER INSERT ON gpuledger.windows
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.refuse_unreadable_bodies();

-- The rows of schema 6, read from the bodies. Invoker's rights: an agent
-- (which is granted none of them) sees nothing; a reader sees the windows.
CREATE VIEW gpuledger.accounts WITH (security_invoker = true) AS
  SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, a.account COLLATE "C" AS account, a.namespace, a.pod,
         a.container, a.team, a.held_share, a.allocated_share, a.allocated_share_known, a.busy_seconds,
         a.activity_share, a.gpu_busy_seconds, a.vram_byte_seconds, a.launches, a.sm_active, a.sm_occupancy,
         a.tensor_active, a.dram_active, a.vram_peak_bytes, a.vram_p95_bytes, a.nvml_vram_peak_bytes,
         a.nvml_vram_p95_bytes, a.sm_active_p95, a.sm_occupancy_p95, a.busy_p95, a.idle_lead_seconds,
         a.idle_trail_seconds, a.idle_longest_seconds, a.window_count, a.slurm_user, a.slurm_account
  FROM gpuledger.windows w CROSS JOIN LATERAL gpuledger.body_accounts(w.body::jsonb) a;
CREATE VIEW gpuledger.charges WITH (security_invoker = true) AS
  SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, c.account COLLATE "C" AS account, c.kind COLLATE "C" AS kind,
         c.micros
  FROM gpuledger.windows w CROSS JOIN LATERAL gpuledger.body_charges(w.body::jsonb) c;
CREATE VIEW gpuledger.energy_charges WITH (security_invoker = true) AS
  SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, e.account COLLATE "C" AS account, e.kind COLLATE "C" AS kind,
         e.millijoules
  FROM gpuledger.windows w CROSS JOIN LATERAL gpuledger.body_energy(w.body::jsonb) e;
GRANT SELECT ON gpuledger.accounts, gpuledger.charges, gpuledger.energy_charges TO gpuledger_reader;

-- A roll-up's check (check_rollup of schemas 3, 5 and 6: the same rules, the
-- same reasons) in one pass: each body it reads is parsed once. And a day or a
-- month is checked against its hours' or days' verified roll-ups where they
-- are current (their count, cost and digest sum equal window_totals'), its
-- windows elsewhere: a verified roll-up's charges, energy and accounts are its
-- windows' (that is what verified means), and the sums of sums are the sums,
-- so the answer is the windows' while a day reads 24 bodies instead of 1,440
-- windows and a month 31 instead of 44,640 (docs/fleet-db.md, *Roll-ups*).
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
    -- Every charge ('c'), energy part ('e') and account ('a') of the period.
    parts AS (
      SELECT p.part, p.c FROM finer_rollups f CROSS JOIN LATERAL (
        SELECT 'c' AS part, c FROM jsonb_array_elements(f.j->'charges') c
        UNION ALL SELECT 'e', c FROM jsonb_array_elements(CASE WHEN jsonb_typeof(f.j->'energy') = 'object'
                                                               THEN f.j->'energy'->'parts' ELSE '[]' END) c
        UNION ALL SELECT 'a', c FROM jsonb_array_elements(f.j->'accounts') c) p
      UNION ALL
      -- OFFSET 0: each body parsed once, not once a use.
      SELECT p.part, p.c FROM gpuledger.windows v CROSS JOIN LATERAL (SELECT v.body::jsonb AS j OFFSET 0) vb
      CROSS JOIN LATERAL (
        SELECT 'c' AS part, c FROM jsonb_array_elements(vb.j->'charges') c
        UNION ALL SELECT 'e', c FROM jsonb_array_elements(coalesce(vb.j->'energy', '[]')) c
        UNION ALL SELECT 'a', c FROM jsonb_array_elements(vb.j->'accounts') c) p
      WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid
        AND v.start_time >= r.period_start AND v.start_time < period_end
        AND NOT EXISTS (SELECT FROM finer_rollups f WHERE f.period_start = v.start_time - v.start_time % finer_len)),
    -- Charges and parts summed by account and kind; accounts by name and labels.
    theirs AS MATERIALIZED (
      SELECT t.part, t.c->>0 AS account, CASE WHEN t.part = 'a' THEN '' ELSE t.c->>1 END AS kind,
             CASE WHEN t.part = 'a' THEN jsonb_build_array(t.c->>1, t.c->>2, t.c->>3, t.c->>4) END AS labels,
             CASE WHEN t.part = 'a' THEN jsonb_build_array(coalesce(t.c->>23, ''), coalesce(t.c->>24, '')) END AS slurm,
             sum(CASE WHEN t.part <> 'a' THEN (t.c->>2)::bigint END) AS n
      FROM parts t GROUP BY 1, 2, 3, 4, 5),
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
             AND t.labels = jsonb_build_array(a->>1, a->>2, a->>3, a->>4))) AS accounts,
      EXISTS (SELECT FROM json_array_elements(b->'accounts') a WHERE NOT EXISTS (
           SELECT FROM theirs t WHERE t.part = 'a' AND t.account = a->>0
             AND t.slurm = jsonb_build_array(coalesce(a->>23, ''), coalesce(a->>24, '')))) AS slurm,
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

-- A month's partitions: the windows', their totals' and the roll-ups' (the
-- other three are views now).
CREATE OR REPLACE FUNCTION gpuledger.create_partitions_5(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['windows', 'window_totals', 'rollups'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl, extract(epoch FROM lo)::bigint,
                   extract(epoch FROM lo + interval '1 month')::bigint);
  END LOOP;
END
$fn$;
)SQL";

}  // namespace gpuledger::fleet
