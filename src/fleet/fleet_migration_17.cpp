#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, a node-month's size: a window is one row of 1.3-1.8 KB (schema
// 7), and PostgreSQL compresses no value of a row under ~2 KB, so a month of
// windows stays 505-595 MiB a node. An hour's windows in one value compress:
// `gpuledger fleet-db pack` moves the windows of each GPU-hour whose hour
// roll-up the database verified into one row of window_packs, their rows as
// a JSON array (lz4 where the server has it), with the sums check_rollup
// reads: a node-month of 523.6 MiB becomes 60.0 on the bench's uniform
// windows, one of 613.6 becomes 259.5 on varied ones (docs/performance.md,
// "An hour's windows packed in one row").
//
// What holds a packed hour to its windows' bill:
// - stored_windows reads windows and packs as one relation (every column as
//   stored, hour_start to find a pack by its index); the report's window
//   reads and the three views of schema 7 read it, and the roll-up check
//   takes a packed hour's sums and parts from its pack (its window_parts
//   rows are dropped), so a packed hour reads and checks as it did;
// - a GPU takes no window that starts before the end of its packed windows
//   (packed_until, refuse_packed_windows): not one under a key a pack holds
//   (a resend would count twice), not one over a packed window from any node
//   (the overlap probes read rows); pack_hours locks the windows against
//   inserts while it packs;
// - prune_month drops a month's packs with its windows.
// Every statement is repeatable (an upgrade test runs the migrations after
// 12 again).
const char* const kMigration17 = R"SQL(
CREATE TABLE IF NOT EXISTS gpuledger.window_packs(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  hour_start bigint NOT NULL,  -- count_windows' hour: start_time - start_time % 3600
  windows integer NOT NULL,
  -- The windows' sums, as check_rollup takes them from rows: min start, max end, sums, currencies' min and max.
  first_start bigint NOT NULL, last_end bigint NOT NULL, cost_micros numeric NOT NULL, busy_micros numeric NOT NULL,
  idle_micros numeric NOT NULL, memory_micros numeric NOT NULL, energy_millijoules numeric,
  currency text NOT NULL, currency_last text NOT NULL,
  packed_at timestamptz NOT NULL DEFAULT now(),
  body json NOT NULL,          -- json_agg of the windows' rows (gpuledger.windows), in start order
  PRIMARY KEY (cluster, node, gpu_uuid, hour_start)
) PARTITION BY RANGE (hour_start);
GRANT SELECT ON gpuledger.window_packs TO gpuledger_reader;

CREATE OR REPLACE FUNCTION gpuledger.create_packs_partition(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  part text := 'window_packs_' || to_char(lo, 'YYYY_MM');
BEGIN
  IF to_regclass(format('gpuledger.%I', part)) IS NOT NULL THEN RETURN; END IF;
  EXECUTE format('CREATE TABLE gpuledger.%I PARTITION OF gpuledger.window_packs FOR VALUES FROM (%s) TO (%s)', part,
                 extract(epoch FROM lo)::bigint, extract(epoch FROM lo + interval '1 month')::bigint);
  -- lz4 where the server was built with it: 16 % smaller than pglz on windows that repeat themselves,
  -- 9 % larger on varied ones, and faster to read.
  IF EXISTS (SELECT FROM pg_settings s WHERE s.name = 'default_toast_compression' AND 'lz4' = ANY(s.enumvals)) THEN
    EXECUTE format('ALTER TABLE gpuledger.%I ALTER COLUMN body SET COMPRESSION lz4', part);
  END IF;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_packs_partition(bigint) FROM PUBLIC;

DO $do$
BEGIN
  IF to_regprocedure('gpuledger.create_partitions_16(bigint)') IS NULL THEN
    ALTER FUNCTION gpuledger.create_partitions(bigint) RENAME TO create_partitions_16;
  END IF;
END
$do$;
CREATE OR REPLACE FUNCTION gpuledger.create_partitions(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM gpuledger.create_partitions_16(t);
  PERFORM gpuledger.create_packs_partition(t);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_partitions(bigint) FROM PUBLIC, gpuledger_agent;
SELECT gpuledger.create_packs_partition(extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM'))::bigint)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.windows'::regclass;

-- Windows in rows and in packs, every column as stored, with the hour a
-- pack is found by (a reader bounds hour_start as it bounds start_time).
CREATE OR REPLACE VIEW gpuledger.stored_windows WITH (security_invoker = true) AS
  SELECT
         w.cluster, w.node, w.gpu_uuid, w.start_time, w.end_time, w.parent_uuid, w.model, w.mig_profile,
         w.gpu_fraction, w.currency, w.cost_micros, w.busy_micros, w.idle_micros, w.memory_micros,
         w.cost_policy, w.allocated_total, w.busy_fraction, w.busy_source, w.exclusive, w.observed_seconds,
         w.source, w.sm_active, w.sm_occupancy, w.tensor_active, w.dram_active, w.energy_millijoules,
         w.energy_source, w.carbon_g_per_kwh, w.split_source, w.digest, w.shipped_at, w.body, 
         w.start_time - w.start_time % 3600 AS hour_start
  FROM gpuledger.windows w
  UNION ALL
  SELECT
         p.cluster, p.node, p.gpu_uuid, r.start_time, r.end_time, r.parent_uuid, r.model, r.mig_profile,
         r.gpu_fraction, r.currency, r.cost_micros, r.busy_micros, r.idle_micros, r.memory_micros,
         r.cost_policy, r.allocated_total, r.busy_fraction, r.busy_source, r.exclusive, r.observed_seconds,
         r.source, r.sm_active, r.sm_occupancy, r.tensor_active, r.dram_active, r.energy_millijoules,
         r.energy_source, r.carbon_g_per_kwh, r.split_source, r.digest, r.shipped_at, r.body, 
         p.hour_start
  FROM gpuledger.window_packs p CROSS JOIN LATERAL json_populate_recordset(NULL::gpuledger.windows, p.body) r;
GRANT SELECT ON gpuledger.stored_windows TO gpuledger_reader;

-- Schema 7's views (accounts, charges, energy_charges), of the packed
-- windows too: each one's own query, reading stored_windows for windows.
DO $do$
DECLARE
  v text;
  def text;
BEGIN
  FOREACH v IN ARRAY ARRAY['accounts', 'charges', 'energy_charges'] LOOP
    def := pg_get_viewdef(format('gpuledger.%I', v)::regclass);
    IF position('gpuledger.stored_windows w' IN def) = 0 THEN
      IF position('gpuledger.windows w' IN def) = 0 THEN
        RAISE EXCEPTION 'gpuledger: the view % is not the one of schema 7; cannot add the packed windows to it', v;
      END IF;
      EXECUTE format('CREATE OR REPLACE VIEW gpuledger.%I WITH (security_invoker = true) AS %s', v,
                     replace(def, 'gpuledger.windows w', 'gpuledger.stored_windows w'));
    END IF;
  END LOOP;
END
$do$;

-- Schema 9's check, its windows' sums of a period (a day's, a month's) taken
-- from rows and packs, and a packed hour's parts from its windows' bodies:
-- its two statements that read windows and their parts, edited in the
-- function's own text (its settings kept), so the check is schema 9's
-- otherwise. A pack's currencies are two rows (min and max), its sums one.
DO $do$
DECLARE
  def text := pg_get_functiondef('gpuledger.check_rollup(gpuledger.rollups)'::regprocedure);
  rows_only text := $old$INTO w FROM gpuledger.windows v
    WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid
      AND v.start_time >= r.period_start AND v.start_time < period_end;$old$;
  with_packs text := $new$INTO w FROM (
      SELECT v.start_time, v.end_time, v.cost_micros, v.busy_micros, v.idle_micros, v.memory_micros,
             v.energy_millijoules, v.currency
      FROM gpuledger.windows v
      WHERE v.cluster = r.cluster AND v.node = r.node AND v.gpu_uuid = r.gpu_uuid
        AND v.start_time >= r.period_start AND v.start_time < period_end
      UNION ALL
      SELECT pk.s, pk.e, pk.cost, pk.busy, pk.idle, pk.memory, pk.mj, pk.cur
      FROM gpuledger.window_packs p CROSS JOIN LATERAL (VALUES
        (p.first_start, p.last_end, p.cost_micros, p.busy_micros, p.idle_micros, p.memory_micros,
         p.energy_millijoules, p.currency),
        (NULL, NULL, NULL, NULL, NULL, NULL, NULL, p.currency_last)) pk(s, e, cost, busy, idle, memory, mj, cur)
      WHERE p.cluster = r.cluster AND p.node = r.node AND p.gpu_uuid = r.gpu_uuid
        AND p.hour_start >= r.period_start AND p.hour_start < period_end) v;$new$;
  parts_kept text := $old$AND v.hour_start < u.b OFFSET 0) v),$old$;
  parts_of_packs text := $new$AND v.hour_start < u.b OFFSET 0) v
      UNION ALL
      -- A packed hour's parts from its windows' bodies, as refuse_unreadable_bodies took them
      -- (pack_hours drops the hour's rows of window_parts).
      SELECT q.part, q.account, q.kind, q.namespace, q.pod, q.container, q.team, q.slurm_user, q.slurm_account,
             q.n::numeric
      FROM uncovered u JOIN gpuledger.window_packs p
        ON p.cluster = r.cluster AND p.node = r.node AND p.gpu_uuid = r.gpu_uuid AND p.hour_start >= u.a
       AND p.hour_start < u.b
      CROSS JOIN LATERAL json_array_elements(p.body) e
      CROSS JOIN LATERAL gpuledger.window_body_parts((e->'body')::jsonb) q),$new$;
BEGIN
  IF position(with_packs IN def) = 0 THEN
    IF position(rows_only IN def) = 0 OR position(parts_kept IN def) = 0 THEN
      RAISE EXCEPTION 'gpuledger: check_rollup is not the one of schema 9; cannot add the packed hours to it';
    END IF;
    EXECUTE replace(replace(def, rows_only, with_packs), parts_kept, parts_of_packs);
  END IF;
END
$do$;

-- How far each GPU is packed: the latest end of its packed windows, of any
-- node. A window that starts before it is refused: it could be one a pack
-- holds (sent again: its key is no longer in windows, so it would count
-- twice) or lie over a packed window (the overlap probes read rows). A
-- shipper sends a GPU's windows in start order and an hour is packed only
-- once its roll-up is verified, so only such windows start before it.
CREATE TABLE IF NOT EXISTS gpuledger.packed_until(
  gpu_uuid text COLLATE "C" PRIMARY KEY, end_time bigint NOT NULL);
GRANT SELECT ON gpuledger.packed_until TO gpuledger_reader;  -- a report reads rows alone after its latest end

CREATE OR REPLACE FUNCTION gpuledger.refuse_packed_windows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  bad record;
BEGIN
  SELECT f.cluster, f.node, f.gpu_uuid, f.start_time INTO bad
  FROM fresh f
  WHERE EXISTS (SELECT FROM gpuledger.packed_until u WHERE u.gpu_uuid = f.gpu_uuid AND u.end_time > f.start_time)
  ORDER BY f.start_time, f.gpu_uuid
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'gpuledger: window %/%/% at % starts before the end of its GPU''s packed windows (gpuledger '
      'fleet-db pack), which take no window any more', bad.cluster, bad.node, bad.gpu_uuid, bad.start_time
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.refuse_packed_windows() FROM PUBLIC;
DROP TRIGGER IF EXISTS refuse_packed_windows ON gpuledger.windows;
CREATE TRIGGER refuse_packed_windows AFTER INSERT ON gpuledger.windows
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.refuse_packed_windows();

-- Packs the windows of each GPU-hour in [a, b) (whole hours) whose hour
-- roll-up is verified and equals its totals, and not packed yet; returns
-- how many windows and GPU-hours it packed (the owner's: `fleet-db pack`).
-- Nested loops on the keys' indexes (a GPU-hour's windows by the primary
-- key): a hash or merge join would read the whole month for each hour.
CREATE OR REPLACE FUNCTION gpuledger.pack_hours(a bigint, b bigint, OUT packed_windows bigint,
                                               OUT packed_gpu_hours bigint)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET enable_hashjoin = off SET enable_mergejoin = off
  SET jit = off AS $fn$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('gpuledger.ensure_month'));  -- no month created or pruned meanwhile
  -- Agents' windows wait: none arrives in an hour while it is packed.
  LOCK TABLE gpuledger.windows IN SHARE MODE;
  WITH ready AS MATERIALIZED (
    SELECT t.cluster, t.node, t.gpu_uuid, t.period_start AS h FROM gpuledger.window_totals t
    WHERE t.period = 'hour' AND t.period_start >= a AND t.period_start <= b - 3600
      AND EXISTS (SELECT FROM gpuledger.rollups r
                  WHERE r.period = 'hour' AND r.cluster = t.cluster AND r.node = t.node AND r.gpu_uuid = t.gpu_uuid
                    AND r.period_start = t.period_start AND r.windows = t.windows
                    AND r.cost_micros = t.cost_micros AND r.digests = t.digests AND r.verified)
      AND NOT EXISTS (SELECT FROM gpuledger.window_packs p
                      WHERE p.cluster = t.cluster AND p.node = t.node AND p.gpu_uuid = t.gpu_uuid
                        AND p.hour_start = t.period_start)),
  gone AS (
    DELETE FROM gpuledger.windows w USING ready k
    WHERE w.cluster = k.cluster AND w.node = k.node AND w.gpu_uuid = k.gpu_uuid AND w.start_time >= k.h
      AND w.start_time < k.h + 3600
    RETURNING w.*),
  -- Its parts: read from the pack by check_rollup from now on (a packed hour's totals never change).
  parted AS (
    DELETE FROM gpuledger.window_parts x USING ready k
    WHERE x.cluster = k.cluster AND x.node = k.node AND x.gpu_uuid = k.gpu_uuid AND x.hour_start = k.h),
  packed AS (
    INSERT INTO gpuledger.window_packs(cluster, node, gpu_uuid, hour_start, windows, first_start, last_end,
                                       cost_micros, busy_micros, idle_micros, memory_micros, energy_millijoules,
                                       currency, currency_last, body)
    SELECT g.cluster, g.node, g.gpu_uuid, g.start_time - g.start_time % 3600, count(*), min(g.start_time),
           max(g.end_time), sum(g.cost_micros), sum(g.busy_micros), sum(g.idle_micros), sum(g.memory_micros),
           sum(g.energy_millijoules), min(g.currency), max(g.currency), json_agg(g ORDER BY g.start_time)
    FROM gone g GROUP BY 1, 2, 3, 4
    RETURNING window_packs.gpu_uuid, window_packs.windows, window_packs.last_end),
  frontier AS (
    INSERT INTO gpuledger.packed_until AS u (gpu_uuid, end_time)
    SELECT x.gpu_uuid, max(x.last_end) FROM packed x GROUP BY 1
    ON CONFLICT (gpu_uuid) DO UPDATE SET end_time = greatest(u.end_time, EXCLUDED.end_time))
  SELECT coalesce(sum(x.windows), 0), count(*) INTO packed_windows, packed_gpu_hours FROM packed x;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.pack_hours(bigint, bigint) FROM PUBLIC;

-- prune_month of schema 9, dropping the month's packs with its windows.
DO $do$
BEGIN
  IF to_regprocedure('gpuledger.prune_month_16(bigint)') IS NULL THEN
    ALTER FUNCTION gpuledger.prune_month(bigint) RENAME TO prune_month_16;
  END IF;
END
$do$;
CREATE OR REPLACE FUNCTION gpuledger.prune_month(m bigint) RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  why text := gpuledger.prune_month_16(m);
BEGIN
  IF why IS NULL THEN
    EXECUTE format('DROP TABLE IF EXISTS gpuledger.%I',
                   'window_packs_' || to_char(to_timestamp(m) AT TIME ZONE 'UTC', 'YYYY_MM'));
  END IF;
  RETURN why;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.prune_month(bigint) FROM PUBLIC;
)SQL";

}  // namespace gpuledger::fleet
