#include "fleet/fleet_schema.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "fleet/fleet_migrations.h"
#include "fleet/pg_connection.h"
#include "report/charge_period.h"

namespace gpuledger::fleet {

namespace {

// Identifiers compare byte by byte (COLLATE "C"): the report merges the
// tables' rows by key in that order (fleet_reader.cpp).
const char* kMigration1 = R"SQL(
CREATE SCHEMA IF NOT EXISTS gpuledger;
CREATE TABLE IF NOT EXISTS gpuledger.schema_migrations(
  version integer PRIMARY KEY,
  applied_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE gpuledger.windows(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  start_time bigint NOT NULL, end_time bigint NOT NULL CHECK (end_time > start_time),
  parent_uuid text NOT NULL, model text NOT NULL, mig_profile text,
  gpu_fraction double precision NOT NULL, currency text NOT NULL,
  cost_micros bigint NOT NULL, busy_micros bigint NOT NULL, idle_micros bigint NOT NULL, memory_micros bigint NOT NULL,
  cost_policy text NOT NULL, allocated_total double precision NOT NULL,
  busy_fraction double precision NOT NULL, busy_source text NOT NULL, exclusive boolean NOT NULL,
  observed_seconds double precision NOT NULL, source text NOT NULL,
  sm_active double precision, sm_occupancy double precision, tensor_active double precision, dram_active double precision,
  energy_millijoules bigint CHECK (energy_millijoules >= 0), energy_source text, carbon_g_per_kwh double precision,
  split_source text NOT NULL,
  digest text NOT NULL,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  CHECK (busy_micros >= 0 AND idle_micros >= 0 AND memory_micros >= 0 AND busy_micros + idle_micros + memory_micros = cost_micros),
  PRIMARY KEY (cluster, node, gpu_uuid, start_time)
) PARTITION BY RANGE (start_time);
CREATE TABLE gpuledger.accounts(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  start_time bigint NOT NULL, account text COLLATE "C" NOT NULL,
  namespace text NOT NULL, pod text NOT NULL, container text NOT NULL, team text NOT NULL,
  held_share double precision NOT NULL, allocated_share double precision NOT NULL, allocated_share_known boolean NOT NULL,
  busy_seconds double precision NOT NULL, activity_share double precision NOT NULL,
  gpu_busy_seconds double precision NOT NULL, vram_byte_seconds double precision NOT NULL, launches bigint NOT NULL,
  sm_active double precision, sm_occupancy double precision, tensor_active double precision, dram_active double precision,
  vram_peak_bytes bigint, vram_p95_bytes bigint, nvml_vram_peak_bytes bigint, nvml_vram_p95_bytes bigint,
  sm_active_p95 double precision, sm_occupancy_p95 double precision, busy_p95 double precision,
  idle_lead_seconds double precision, idle_trail_seconds double precision, idle_longest_seconds double precision,
  window_count bigint,
  PRIMARY KEY (cluster, node, gpu_uuid, start_time, account)
) PARTITION BY RANGE (start_time);
CREATE TABLE gpuledger.charges(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  start_time bigint NOT NULL, account text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL CHECK (kind IN ('busy', 'idle', 'memory')),
  micros bigint NOT NULL CHECK (micros >= 0),
  PRIMARY KEY (cluster, node, gpu_uuid, start_time, account, kind)
) PARTITION BY RANGE (start_time);
CREATE TABLE gpuledger.energy_charges(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  start_time bigint NOT NULL, account text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL CHECK (kind IN ('busy', 'idle')),
  millijoules bigint NOT NULL CHECK (millijoules >= 0),
  PRIMARY KEY (cluster, node, gpu_uuid, start_time, account, kind)
) PARTITION BY RANGE (start_time);

-- A month's partitions of the four tables, created once (by whoever comes first).
CREATE FUNCTION gpuledger.ensure_month(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  hi timestamp := lo + interval '1 month';
  tbl text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('gpuledger.ensure_month'));
  FOREACH tbl IN ARRAY ARRAY['windows', 'accounts', 'charges', 'energy_charges'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl,
                   extract(epoch FROM lo)::bigint, extract(epoch FROM hi)::bigint);
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.ensure_month(bigint) FROM PUBLIC;

DO $roles$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gpuledger_agent') THEN CREATE ROLE gpuledger_agent NOLOGIN; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gpuledger_reader') THEN CREATE ROLE gpuledger_reader NOLOGIN; END IF;
END $roles$;
GRANT USAGE ON SCHEMA gpuledger TO gpuledger_agent, gpuledger_reader;
GRANT SELECT ON gpuledger.schema_migrations TO gpuledger_agent, gpuledger_reader;
GRANT INSERT ON gpuledger.windows, gpuledger.accounts, gpuledger.charges, gpuledger.energy_charges TO gpuledger_agent;
GRANT SELECT (cluster, node, gpu_uuid, start_time, digest) ON gpuledger.windows TO gpuledger_agent;
GRANT EXECUTE ON FUNCTION gpuledger.ensure_month(bigint) TO gpuledger_agent;
GRANT SELECT ON gpuledger.windows, gpuledger.accounts, gpuledger.charges, gpuledger.energy_charges TO gpuledger_reader;
)SQL";

// Roll-ups (fleet_rollups.h). window_totals is kept by the database itself: a
// trigger counts every window committed, by GPU and UTC hour, day and month,
// with its cost and the sum of the windows' digests (digest_part). An agent's
// roll-up of a period (one merged window, as JSON) is used by a report only
// while its count, cost and digest sum equal those totals, i.e. it merged the
// very windows the database holds; a window shipped after it makes it stale,
// and the report reads the finer periods or the windows instead. So a roll-up
// can make a report faster, never different. Insert-only: a new count is a
// new row.
const char* kMigration2 = R"SQL(
CREATE TABLE gpuledger.window_totals(
  period text COLLATE "C" NOT NULL CHECK (period IN ('hour', 'day', 'month')), period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  windows bigint NOT NULL CHECK (windows > 0), cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  digests numeric NOT NULL,
  PRIMARY KEY (period, cluster, node, gpu_uuid, period_start)
) PARTITION BY RANGE (period_start);
CREATE TABLE gpuledger.rollups(
  period text COLLATE "C" NOT NULL CHECK (period IN ('hour', 'day', 'month')), period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  windows bigint NOT NULL CHECK (windows > 0), cost_micros bigint NOT NULL CHECK (cost_micros >= 0),
  digests numeric NOT NULL, digest text NOT NULL,
  body json NOT NULL,  -- json, not jsonb: kept as written and read back as text, three times faster than jsonb's output
  shipped_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (period, cluster, node, gpu_uuid, period_start, windows)
) PARTITION BY RANGE (period_start);

-- A report finds a range's whole periods by (period, start), and a GPU's
-- finer periods by the key; the windows at a range's ragged ends by start
-- (BRIN: windows arrive in time order, and a summary per 128 pages costs
-- next to nothing to keep).
CREATE INDEX window_totals_by_start ON gpuledger.window_totals (period, period_start);
CREATE INDEX windows_by_start ON gpuledger.windows USING brin (start_time);
CREATE INDEX accounts_by_start ON gpuledger.accounts USING brin (start_time);
CREATE INDEX charges_by_start ON gpuledger.charges USING brin (start_time);
CREATE INDEX energy_charges_by_start ON gpuledger.energy_charges USING brin (start_time);

CREATE OR REPLACE FUNCTION gpuledger.ensure_month(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  hi timestamp := lo + interval '1 month';
  tbl text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('gpuledger.ensure_month'));
  FOREACH tbl IN ARRAY ARRAY['windows', 'accounts', 'charges', 'energy_charges', 'window_totals', 'rollups'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl,
                   extract(epoch FROM lo)::bigint, extract(epoch FROM hi)::bigint);
  END LOOP;
END
$fn$;

-- A window's digest as a number: its first 60 bits. window_totals.digests sums
-- them, so it names the set of windows counted, whatever order they came in.
CREATE FUNCTION gpuledger.digest_part(digest text) RETURNS bigint
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT ('x' || substr(digest, 1, 15))::bit(60)::bigint
$fn$;

-- The UTC hour, day and month of a window's start.
CREATE FUNCTION gpuledger.periods_of(t bigint) RETURNS TABLE(period text, period_start bigint)
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  VALUES ('hour'::text, t - t % 3600), ('day', t - t % 86400),
         ('month', extract(epoch FROM date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC'))::bigint)
$fn$;

CREATE FUNCTION gpuledger.count_windows() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.window_totals AS t (period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digests)
  SELECT p.period, p.period_start, f.cluster, f.node, f.gpu_uuid, count(*), sum(f.cost_micros),
         sum(gpuledger.digest_part(f.digest))
  FROM fresh f CROSS JOIN LATERAL gpuledger.periods_of(f.start_time) p
  GROUP BY 1, 2, 3, 4, 5
  ON CONFLICT (period, cluster, node, gpu_uuid, period_start)
  DO UPDATE SET windows = t.windows + EXCLUDED.windows, cost_micros = t.cost_micros + EXCLUDED.cost_micros,
                digests = t.digests + EXCLUDED.digests;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.count_windows() FROM PUBLIC;

-- The months already there get their new partitions and their totals.
DO $months$ DECLARE m bigint; BEGIN
  FOR m IN SELECT DISTINCT extract(epoch FROM date_trunc('month', to_timestamp(start_time) AT TIME ZONE 'UTC'))::bigint
           FROM gpuledger.windows LOOP
    PERFORM gpuledger.ensure_month(m);
  END LOOP;
END $months$;
INSERT INTO gpuledger.window_totals(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digests)
SELECT p.period, p.period_start, w.cluster, w.node, w.gpu_uuid, count(*), sum(w.cost_micros),
       sum(gpuledger.digest_part(w.digest))
FROM gpuledger.windows w CROSS JOIN LATERAL gpuledger.periods_of(w.start_time) p
GROUP BY 1, 2, 3, 4, 5;

CREATE TRIGGER count_windows AFTER INSERT ON gpuledger.windows
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.count_windows();

GRANT INSERT ON gpuledger.rollups TO gpuledger_agent;
GRANT SELECT (period, period_start, cluster, node, gpu_uuid, windows, digests, digest) ON gpuledger.rollups TO gpuledger_agent;
GRANT SELECT ON gpuledger.window_totals, gpuledger.rollups TO gpuledger_reader;
)SQL";

// Issue 30: nothing an agent sends is believed beyond what it proves.
// - Per-node roles: node_roles says which login role ships which node (and
//   cluster); row-level security lets an agent insert and see only those rows
//   (`gpuledger fleet-db add-node`). Login roles that could ship before this
//   migration are kept, for any node (node NULL), until the owner replaces them.
// - Every amount an agent sends is bounded, and window_totals sums in numeric:
//   a sum cannot overflow, so a refused insert tells nothing of what is stored.
// - A roll-up is checked by the database as it arrives (check_rollup): its row
//   against window_totals, its body against its row and the windows it claims;
//   a report reads verified ones only.
// - Windows of one GPU that overlap in time are kept and flagged (overlaps):
//   refusing the later one would let a node pre-claim another's GPU time.
// - An agent's ensure_month creates only months near the server's clock;
//   create_month (the owner's, for migrate) any.
const char* kMigration3 = R"SQL(
CREATE TABLE gpuledger.node_roles(
  role text COLLATE "C" PRIMARY KEY,
  cluster text COLLATE "C",  -- NULL: any cluster
  node text COLLATE "C",     -- NULL: any node (a shared role from before migration 3)
  added_at timestamptz NOT NULL DEFAULT now());
ALTER TABLE gpuledger.node_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_role ON gpuledger.node_roles FOR SELECT TO gpuledger_agent USING (role = current_user);
CREATE POLICY readers ON gpuledger.node_roles FOR SELECT TO gpuledger_reader USING (true);
GRANT SELECT ON gpuledger.node_roles TO gpuledger_agent, gpuledger_reader;
INSERT INTO gpuledger.node_roles(role, cluster, node)
SELECT r.rolname, NULL, NULL FROM pg_roles r
WHERE r.rolcanlogin AND NOT r.rolsuper AND NOT r.rolbypassrls AND pg_has_role(r.oid, 'gpuledger_agent', 'MEMBER');

DO $rls$ DECLARE tbl text; BEGIN
  FOREACH tbl IN ARRAY ARRAY['windows', 'accounts', 'charges', 'energy_charges', 'rollups'] LOOP
    EXECUTE format('ALTER TABLE gpuledger.%I ENABLE ROW LEVEL SECURITY', tbl);
    -- Subqueries that do not depend on the row: PostgreSQL runs each once a
    -- statement (a hashed set), not once a row.
    EXECUTE format($p$CREATE POLICY this_node ON gpuledger.%1$I FOR ALL TO gpuledger_agent USING (
      EXISTS (SELECT FROM gpuledger.node_roles r WHERE r.role = current_user AND r.node IS NULL)
      OR (cluster, node) IN (SELECT r.cluster, r.node FROM gpuledger.node_roles r WHERE r.role = current_user)
      OR node IN (SELECT r.node FROM gpuledger.node_roles r WHERE r.role = current_user AND r.cluster IS NULL))$p$,
      tbl);
    EXECUTE format('CREATE POLICY readers ON gpuledger.%I FOR SELECT TO gpuledger_reader USING (true)', tbl);
  END LOOP;
END $rls$;

-- At most 10,000 currency units a window, 10 GJ, 31 days: far past any GPU's.
ALTER TABLE gpuledger.windows ADD CONSTRAINT bounded CHECK (
  cost_micros <= 10000000000 AND end_time - start_time <= 2678400 AND energy_millijoules <= 10000000000000) NOT VALID;
ALTER TABLE gpuledger.charges ADD CONSTRAINT bounded CHECK (micros <= 10000000000) NOT VALID;
ALTER TABLE gpuledger.energy_charges ADD CONSTRAINT bounded CHECK (millijoules <= 10000000000000) NOT VALID;
ALTER TABLE gpuledger.window_totals ALTER COLUMN cost_micros TYPE numeric;

CREATE TABLE gpuledger.overlaps(
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  start_time bigint NOT NULL, end_time bigint NOT NULL,
  other_cluster text NOT NULL, other_node text NOT NULL, other_start bigint NOT NULL, other_end bigint NOT NULL,
  found_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (cluster, node, gpu_uuid, start_time));
CREATE INDEX overlaps_by_start ON gpuledger.overlaps (start_time);
CREATE INDEX windows_by_gpu ON gpuledger.windows (gpu_uuid, start_time);
GRANT SELECT ON gpuledger.overlaps TO gpuledger_reader;

-- A window committed over another of the same GPU (any node): two index probes
-- a window, the latest that starts at or before it and the first that starts
-- inside it. A long window laid over many is found by the first of them to
-- come, or finds it.
CREATE FUNCTION gpuledger.flag_overlaps() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.overlaps(cluster, node, gpu_uuid, start_time, end_time, other_cluster, other_node,
                                 other_start, other_end)
  SELECT f.cluster, f.node, f.gpu_uuid, f.start_time, f.end_time, o.cluster, o.node, o.start_time, o.end_time
  FROM fresh f CROSS JOIN LATERAL (
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
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.flag_overlaps() FROM PUBLIC;
CREATE TRIGGER flag_overlaps AFTER INSERT ON gpuledger.windows
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.flag_overlaps();
-- The windows already there: each over the one before it (one sort, not a probe a window).
INSERT INTO gpuledger.overlaps(cluster, node, gpu_uuid, start_time, end_time, other_cluster, other_node,
                               other_start, other_end)
SELECT cluster, node, gpu_uuid, start_time, end_time, pc, pn, ps, pe FROM (
  SELECT w.cluster, w.node, w.gpu_uuid, w.start_time, w.end_time, lag(w.cluster) OVER g AS pc,
         lag(w.node) OVER g AS pn, lag(w.start_time) OVER g AS ps, lag(w.end_time) OVER g AS pe
  FROM gpuledger.windows w WINDOW g AS (PARTITION BY w.gpu_uuid ORDER BY w.start_time, w.cluster, w.node)) x
WHERE pe > start_time;

-- Why a roll-up does not check out, or NULL when it does: its row must be
-- window_totals' for its period, and its body the windows' merge (the same
-- cost, busy, idle and memory micros, charges and energy per account and kind,
-- energy, currency, first start and last end, accounts and their labels).
CREATE FUNCTION gpuledger.check_rollup(r gpuledger.rollups) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  b json := r.body;
  period_end bigint;
  w record;
BEGIN
  IF NOT EXISTS (SELECT FROM gpuledger.periods_of(r.period_start) p
                 WHERE p.period = r.period AND p.period_start = r.period_start) THEN
    RETURN 'not the start of a period';
  END IF;
  period_end := CASE r.period WHEN 'hour' THEN r.period_start + 3600 WHEN 'day' THEN r.period_start + 86400
    ELSE extract(epoch FROM (to_timestamp(r.period_start) AT TIME ZONE 'UTC') + interval '1 month')::bigint END;
  IF NOT EXISTS (SELECT FROM gpuledger.window_totals t WHERE t.period = r.period AND t.period_start = r.period_start
                 AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
                 AND t.windows = r.windows AND t.cost_micros = r.cost_micros AND t.digests = r.digests) THEN
    RETURN 'not the windows the database holds';
  END IF;
  BEGIN
    SELECT min(x.start_time) AS s, max(x.end_time) AS e, sum(x.cost_micros) AS cost, sum(x.busy_micros) AS busy,
           sum(x.idle_micros) AS idle, sum(x.memory_micros) AS memory, sum(x.energy_millijoules) AS mj,
           min(x.currency) AS cur, max(x.currency) AS cur2
    INTO w FROM gpuledger.windows x
    WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
      AND x.start_time >= r.period_start AND x.start_time < period_end;
    IF json_typeof(b) IS DISTINCT FROM 'object' OR (b->'slot'->>0) IS DISTINCT FROM r.gpu_uuid
       OR (b->>'start')::bigint IS DISTINCT FROM w.s OR (b->>'end')::bigint IS DISTINCT FROM w.e
       OR (b->'micros'->>0)::bigint IS DISTINCT FROM r.cost_micros OR (b->'micros'->>0)::numeric IS DISTINCT FROM w.cost
       OR (b->'micros'->>1)::numeric IS DISTINCT FROM w.busy OR (b->'micros'->>2)::numeric IS DISTINCT FROM w.idle
       OR (b->'micros'->>3)::numeric IS DISTINCT FROM w.memory OR (b->>'currency') IS DISTINCT FROM w.cur
       OR w.cur IS DISTINCT FROM w.cur2 OR (b->'energy'->>'mj')::numeric IS DISTINCT FROM w.mj THEN
      RETURN 'its body is not its windows'' merge';
    END IF;
    -- Money ('c') and energy ('e') per account and kind, the body's against the windows'.
    IF EXISTS (
        SELECT FROM (SELECT p.part, c->>0 AS account, c->>1 AS kind, sum((c->>2)::bigint) AS n,
                            min((c->>2)::bigint) AS least
                     FROM (VALUES ('c', b->'charges'), ('e', CASE WHEN json_typeof(b->'energy') = 'object'
                                                                 THEN b->'energy'->'parts' ELSE '[]'::json END)) p(part, a)
                     CROSS JOIN LATERAL json_array_elements(p.a) c GROUP BY 1, 2, 3) mine
        FULL JOIN (SELECT 'c' AS part, x.account, x.kind, sum(x.micros) AS n FROM gpuledger.charges x
                   WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
                     AND x.start_time >= r.period_start AND x.start_time < period_end GROUP BY 1, 2, 3
                   UNION ALL
                   SELECT 'e', x.account, x.kind, sum(x.millijoules) FROM gpuledger.energy_charges x
                   WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
                     AND x.start_time >= r.period_start AND x.start_time < period_end GROUP BY 1, 2, 3) theirs
          ON mine.part = theirs.part AND mine.account = theirs.account AND mine.kind = theirs.kind
        WHERE mine.n IS DISTINCT FROM theirs.n OR mine.least < 0) THEN
      RETURN 'its charges or energy are not its windows''';
    END IF;
    IF (SELECT count(*) FROM json_array_elements(b->'accounts')) <>
         (SELECT count(DISTINCT x.account) FROM gpuledger.accounts x
          WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
            AND x.start_time >= r.period_start AND x.start_time < period_end)
       OR EXISTS (SELECT FROM json_array_elements(b->'accounts') a WHERE NOT EXISTS (
            SELECT FROM gpuledger.accounts x
            WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
              AND x.start_time >= r.period_start AND x.start_time < period_end AND x.account = a->>0
              AND x.namespace = a->>1 AND x.pod = a->>2 AND x.container = a->>3 AND x.team = a->>4)) THEN
      RETURN 'its accounts are not its windows''';
    END IF;
  EXCEPTION WHEN data_exception OR invalid_text_representation OR numeric_value_out_of_range THEN
    RETURN 'its body is malformed (' || SQLERRM || ')';
  END;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.check_rollup(gpuledger.rollups) FROM PUBLIC;

ALTER TABLE gpuledger.rollups ADD COLUMN verified boolean NOT NULL DEFAULT false, ADD COLUMN refusal text;
CREATE FUNCTION gpuledger.verify_rollup() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  NEW.refusal := gpuledger.check_rollup(NEW);
  NEW.verified := NEW.refusal IS NULL;
  RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.verify_rollup() FROM PUBLIC;
CREATE TRIGGER verify_rollup BEFORE INSERT ON gpuledger.rollups FOR EACH ROW EXECUTE FUNCTION gpuledger.verify_rollup();
UPDATE gpuledger.rollups r SET refusal = gpuledger.check_rollup(r);
UPDATE gpuledger.rollups SET verified = refusal IS NULL;
CREATE INDEX rollups_refused ON gpuledger.rollups (period_start) WHERE NOT verified;
GRANT SELECT (verified) ON gpuledger.rollups TO gpuledger_agent;

-- Partitions: any month by the owner (migrate); an agent's only from a year
-- before the server's clock to the month after it.
ALTER FUNCTION gpuledger.ensure_month(bigint) RENAME TO create_month;
REVOKE ALL ON FUNCTION gpuledger.create_month(bigint) FROM PUBLIC, gpuledger_agent;
CREATE FUNCTION gpuledger.ensure_month(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  now_month timestamp := date_trunc('month', now() AT TIME ZONE 'UTC');
  month timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
BEGIN
  IF to_regclass(format('gpuledger.windows_%s', to_char(month, 'YYYY_MM'))) IS NOT NULL
     AND to_regclass(format('gpuledger.rollups_%s', to_char(month, 'YYYY_MM'))) IS NOT NULL THEN
    RETURN;
  END IF;
  IF month < now_month - interval '12 months' OR month > now_month + interval '1 month' THEN
    RAISE EXCEPTION 'gpuledger.ensure_month: an agent may create the partitions of a year back to a month ahead of the server''s clock, not %; the owner can (SELECT gpuledger.create_month(%))',
      to_char(month, 'YYYY-MM'), t USING ERRCODE = 'insufficient_privilege';
  END IF;
  PERFORM gpuledger.create_month(t);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.ensure_month(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuledger.ensure_month(bigint) TO gpuledger_agent;
)SQL";

// Retention (issue 30): `gpuledger fleet-db prune --before YYYY-MM` drops a
// month's windows (their four tables' partitions) once every GPU's hours, days
// and month there have a verified roll-up equal to the database's own totals,
// so every report of whole hours reads the same bill from the roll-ups alone.
// window_totals, rollups and overlaps stay. A pruned month is recorded, and
// never gets windows partitions again: a late window of it is refused (it
// would change totals whose windows are gone), and a report that would need
// its windows (a range not cut at whole hours) says so instead of billing less.
const char* kMigration4 = R"SQL(
CREATE TABLE gpuledger.pruned_months(
  month_start bigint PRIMARY KEY, windows numeric NOT NULL, pruned_at timestamptz NOT NULL DEFAULT now());
GRANT SELECT ON gpuledger.pruned_months TO gpuledger_agent, gpuledger_reader;

ALTER FUNCTION gpuledger.create_month(bigint) RENAME TO create_partitions;
REVOKE ALL ON FUNCTION gpuledger.create_partitions(bigint) FROM PUBLIC, gpuledger_agent;
CREATE FUNCTION gpuledger.create_month(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('gpuledger.ensure_month'));  -- prune_month's too
  IF EXISTS (SELECT FROM gpuledger.pruned_months p WHERE p.month_start = extract(epoch FROM lo)::bigint) THEN
    RAISE EXCEPTION 'gpuledger: the windows of % were pruned (gpuledger fleet-db prune), so no window of that month can be stored any more',
      to_char(lo, 'YYYY-MM') USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  PERFORM gpuledger.create_partitions(t);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_month(bigint) FROM PUBLIC, gpuledger_agent;

-- Drops the windows of the month starting at m, or says why not (the owner's;
-- NULL: pruned now or before). The month's windows partitions are locked
-- first, so no window arrives between the check and the drop.
CREATE FUNCTION gpuledger.prune_month(m bigint) RETURNS text
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
  FOREACH tbl IN ARRAY ARRAY['windows', 'accounts', 'charges', 'energy_charges'] LOOP
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
  FOREACH tbl IN ARRAY ARRAY['windows', 'accounts', 'charges', 'energy_charges'] LOOP
    EXECUTE format('DROP TABLE IF EXISTS gpuledger.%I', tbl || '_' || suffix);
  END LOOP;
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.prune_month(bigint) FROM PUBLIC;
)SQL";

// Issue 32: a Slurm job's user and account (store schema 10), '' for every
// other workload and every row shipped before. A roll-up's accounts carry them
// as two trailing fields when there are some (window_json.cpp); check_rollup
// is kept as check_rollup_4 and the new one also holds each account's Slurm
// user and account to its windows', as the older one holds the other labels.
const char* kMigration5 = R"SQL(
ALTER TABLE gpuledger.accounts ADD COLUMN slurm_user text NOT NULL DEFAULT '',
                               ADD COLUMN slurm_account text NOT NULL DEFAULT '';

-- The first second after a period.
CREATE FUNCTION gpuledger.period_end(period text, period_start bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT CASE period WHEN 'hour' THEN period_start + 3600 WHEN 'day' THEN period_start + 86400
    ELSE extract(epoch FROM (to_timestamp(period_start) AT TIME ZONE 'UTC') + interval '1 month')::bigint END
$fn$;

ALTER FUNCTION gpuledger.check_rollup(gpuledger.rollups) RENAME TO check_rollup_4;
CREATE FUNCTION gpuledger.check_rollup(r gpuledger.rollups) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  why text := gpuledger.check_rollup_4(r);
BEGIN
  -- Past check_rollup_4 the body's accounts are an array of arrays: ->> reads NULL, never raises.
  RETURN coalesce(why, CASE WHEN EXISTS (
    SELECT FROM json_array_elements(r.body->'accounts') a WHERE NOT EXISTS (
      SELECT FROM gpuledger.accounts x
      WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
        AND x.start_time >= r.period_start AND x.start_time < gpuledger.period_end(r.period, r.period_start)
        AND x.account = a->>0 AND x.slurm_user = coalesce(a->>23, '') AND x.slurm_account = coalesce(a->>24, '')))
    THEN 'its accounts'' Slurm users or accounts are not its windows''' END);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.check_rollup(gpuledger.rollups) FROM PUBLIC;
)SQL";

// Issue 30: a fleet's cost over time from the server. The chart of a JSON or
// HTML report needs each day's (or hour's) cost by team, and reading the
// period's roll-ups for it was most of their time (240,000 day bodies for a
// 1,000-node month). rollup_charges holds each verified hour and day roll-up's
// money per account with the account's team, written by the database from the
// body it just verified (so no agent writes it), keyed like its roll-up and
// carrying the same check numbers: a report sums a GPU-period's rows only
// while they match window_totals, as it would read the roll-up (docs/fleet-db.md,
// *The chart from the server*).
const char* kMigration6 = R"SQL(
CREATE TABLE gpuledger.rollup_charges(
  period text COLLATE "C" NOT NULL CHECK (period IN ('hour', 'day')), period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  windows bigint NOT NULL, cost_micros bigint NOT NULL, digests numeric NOT NULL,
  first_start bigint NOT NULL, span bigint NOT NULL,  -- the body's start, and its end - start
  account text COLLATE "C" NOT NULL, team text NOT NULL,  -- the team of the body's first account of that name
  micros bigint NOT NULL,  -- the account's charges, every kind
  charged boolean NOT NULL,  -- false: the one row of a roll-up without charges ('', '', 0)
  PRIMARY KEY (period, cluster, node, gpu_uuid, period_start, windows, account)
) PARTITION BY RANGE (period_start);
GRANT SELECT ON gpuledger.rollup_charges TO gpuledger_reader;
-- And per verified month roll-up, its days' costs by team in one row (from
-- its day roll-ups' rows, when every day of its windows has a current one):
-- a month's chart is then one row a GPU, not thirty.
CREATE TABLE gpuledger.month_charts(
  period_start bigint NOT NULL,
  cluster text COLLATE "C" NOT NULL, node text COLLATE "C" NOT NULL, gpu_uuid text COLLATE "C" NOT NULL,
  windows bigint NOT NULL, cost_micros bigint NOT NULL, digests numeric NOT NULL,
  min_span bigint NOT NULL,  -- the shortest of its days' (end - start)
  -- By each day's first start, account (only one that may be special: '__...'; else '') and team.
  first_starts bigint[] NOT NULL, accounts text[] NOT NULL, teams text[] NOT NULL, micros bigint[] NOT NULL,
  PRIMARY KEY (cluster, node, gpu_uuid, period_start, windows)
) PARTITION BY RANGE (period_start);
GRANT SELECT ON gpuledger.month_charts TO gpuledger_reader;

-- A verified roll-up's rows: its body's charges per account, or one uncharged row.
CREATE FUNCTION gpuledger.charge_rows_of(r gpuledger.rollups) RETURNS SETOF gpuledger.rollup_charges
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT r.period, r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests,
         (r.body->>'start')::bigint, (r.body->>'end')::bigint - (r.body->>'start')::bigint,
         coalesce(g.account, ''),
         coalesce((SELECT a->>4 FROM json_array_elements(r.body->'accounts') WITH ORDINALITY x(a, i)
                   WHERE a->>0 = g.account ORDER BY i LIMIT 1), ''),
         coalesce(g.micros, 0), g.account IS NOT NULL
  FROM (SELECT 1) one LEFT JOIN (
    SELECT ch->>0 AS account, sum((ch->>2)::bigint)::bigint AS micros
    FROM json_array_elements(r.body->'charges') ch GROUP BY 1) g ON true
$fn$;
REVOKE ALL ON FUNCTION gpuledger.charge_rows_of(gpuledger.rollups) FROM PUBLIC;

-- A verified month roll-up's chart row, from the current rows of its days;
-- none unless every day that has windows has them.
CREATE FUNCTION gpuledger.month_chart_of(r gpuledger.rollups) RETURNS SETOF gpuledger.month_charts
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $fn$
  SELECT r.period_start, r.cluster, r.node, r.gpu_uuid, r.windows, r.cost_micros, r.digests, min(g.span),
         coalesce(array_agg(g.first_start ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.account ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.team ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}'),
         coalesce(array_agg(g.micros ORDER BY g.first_start, g.account, g.team) FILTER (WHERE g.charged), '{}')
  FROM (SELECT t.period_start AS day, c.first_start, c.charged,
               CASE WHEN left(c.account, 2) = '__' THEN c.account ELSE '' END AS account, c.team,
               sum(c.micros)::bigint AS micros, min(c.span) AS span
        FROM gpuledger.window_totals t JOIN gpuledger.rollup_charges c
          ON c.period = t.period AND c.cluster = t.cluster AND c.node = t.node AND c.gpu_uuid = t.gpu_uuid
         AND c.period_start = t.period_start AND c.windows = t.windows AND c.cost_micros = t.cost_micros
         AND c.digests = t.digests
        WHERE t.period = 'day' AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
          AND t.period_start >= r.period_start AND t.period_start < gpuledger.period_end('month', r.period_start)
        GROUP BY 1, 2, 3, 4, 5) g
  HAVING count(*) > 0 AND count(DISTINCT g.day) = (
    SELECT count(*) FROM gpuledger.window_totals t
    WHERE t.period = 'day' AND t.cluster = r.cluster AND t.node = r.node AND t.gpu_uuid = r.gpu_uuid
      AND t.period_start >= r.period_start AND t.period_start < gpuledger.period_end('month', r.period_start))
$fn$;
REVOKE ALL ON FUNCTION gpuledger.month_chart_of(gpuledger.rollups) FROM PUBLIC;

-- Their month's partitions, with every other table's (create_partitions);
-- for the months that have roll-ups already (pruned ones too: their roll-ups
-- stay), alone: a pruned month never gets windows partitions again.
CREATE FUNCTION gpuledger.create_charges_partition(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  tbl text;
BEGIN
  FOREACH tbl IN ARRAY ARRAY['rollup_charges', 'month_charts'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES FROM (%s) TO (%s)',
                   tbl || '_' || to_char(lo, 'YYYY_MM'), tbl, extract(epoch FROM lo)::bigint,
                   extract(epoch FROM lo + interval '1 month')::bigint);
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_charges_partition(bigint) FROM PUBLIC;
ALTER FUNCTION gpuledger.create_partitions(bigint) RENAME TO create_partitions_5;
CREATE FUNCTION gpuledger.create_partitions(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM gpuledger.create_partitions_5(t);
  PERFORM gpuledger.create_charges_partition(t);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_partitions(bigint) FROM PUBLIC;
SELECT gpuledger.create_charges_partition(extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM'))::bigint)
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'gpuledger.rollups'::regclass;

CREATE FUNCTION gpuledger.keep_rollup_charges() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  INSERT INTO gpuledger.rollup_charges
  SELECT c.* FROM fresh f CROSS JOIN LATERAL gpuledger.charge_rows_of(f) c
  WHERE f.verified AND f.period IN ('hour', 'day');
  -- Then the months: their days may have come in this statement.
  INSERT INTO gpuledger.month_charts
  SELECT c.* FROM fresh f CROSS JOIN LATERAL gpuledger.month_chart_of(f) c WHERE f.verified AND f.period = 'month';
  RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.keep_rollup_charges() FROM PUBLIC;
CREATE TRIGGER keep_rollup_charges AFTER INSERT ON gpuledger.rollups
  REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION gpuledger.keep_rollup_charges();
INSERT INTO gpuledger.rollup_charges
SELECT c.* FROM gpuledger.rollups f CROSS JOIN LATERAL gpuledger.charge_rows_of(f) c
WHERE f.verified AND f.period IN ('hour', 'day');
INSERT INTO gpuledger.month_charts
SELECT c.* FROM gpuledger.rollups f CROSS JOIN LATERAL gpuledger.month_chart_of(f) c
WHERE f.verified AND f.period = 'month';

-- A roll-up has one set of labels per account (the last window's): where an
-- account's labels changed within the period, a report by team read at it
-- would bill the whole period to the last team (a pod relabelled on the
-- month's last day moved its month). Such a roll-up is refused from now on, so
-- the report reads the finer periods, down to the windows around the change.
ALTER FUNCTION gpuledger.check_rollup(gpuledger.rollups) RENAME TO check_rollup_5;
CREATE FUNCTION gpuledger.check_rollup(r gpuledger.rollups) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  why text := gpuledger.check_rollup_5(r);
BEGIN
  RETURN coalesce(why, CASE WHEN EXISTS (
    SELECT FROM gpuledger.accounts x
    WHERE x.cluster = r.cluster AND x.node = r.node AND x.gpu_uuid = r.gpu_uuid
      AND x.start_time >= r.period_start AND x.start_time < gpuledger.period_end(r.period, r.period_start)
    GROUP BY x.account
    HAVING count(DISTINCT (x.namespace, x.pod, x.container, x.team, x.slurm_user, x.slurm_account)) > 1)
    THEN 'an account''s labels changed within the period (one merged account would bill it all to its last team)' END);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.check_rollup(gpuledger.rollups) FROM PUBLIC;
)SQL";

// Migration n is kMigrations[n - 1]; append, never edit one that shipped.
const std::vector<const char*> kMigrations = {kMigration1,  kMigration2,  kMigration3,  kMigration4,  kMigration5,
                                              kMigration6,  kMigration7,  kMigration8,  kMigration9,  kMigration10,
                                              kMigration11, kMigration12, kMigration13, kMigration14, kMigration15,
                                              kMigration16, kMigration17, kMigration18, kMigration19};
static_assert(kFleetSchemaVersion == 19, "a new migration goes into kMigrations");

}  // namespace

int schema_version(PgConnection& db) {
  PgResult exists = db.query("SELECT to_regclass('gpuledger.schema_migrations') IS NOT NULL");
  if (exists.text(0, 0) != "t") return 0;
  PgResult v = db.query("SELECT coalesce(max(version), 0) FROM gpuledger.schema_migrations");
  return static_cast<int>(v.i64(0, 0));
}

int migrate(PgConnection& db, int64_t now, int target) {
  db.exec("SELECT pg_advisory_lock(hashtext('gpuledger.migrate'))");
  try {
    int version = schema_version(db);
    if (version > kFleetSchemaVersion)
      throw Error("fleet database " + db.name() + ": schema version " + std::to_string(version) +
                  " is newer than this gpuledger knows (" + std::to_string(kFleetSchemaVersion) + ")");
    for (; version < std::min(target, kFleetSchemaVersion); ++version) {
      db.exec("BEGIN");
      try {
        db.exec(kMigrations[static_cast<size_t>(version)]);
        db.query("INSERT INTO gpuledger.schema_migrations(version) VALUES ($1)", {std::to_string(version + 1)});
        db.exec("COMMIT");
      } catch (...) {
        if (db.ok()) db.exec("ROLLBACK");
        throw;
      }
    }
    // The owner's: any month (an agent's ensure_month is bounded from schema 3).
    const std::string create = version >= 3 ? "SELECT gpuledger.create_month($1)" : "SELECT gpuledger.ensure_month($1)";
    const int64_t month = report::period_start(now, report::Granularity::kMonth);
    db.query(create, {std::to_string(month)});
    db.query(create, {std::to_string(report::period_end(month, report::Granularity::kMonth))});
    db.exec("SELECT pg_advisory_unlock(hashtext('gpuledger.migrate'))");
    return version;
  } catch (...) {
    if (db.ok()) db.exec("SELECT pg_advisory_unlock_all()");
    throw;
  }
}

void check_schema(PgConnection& db) {
  const int version = schema_version(db);
  if (version == kFleetSchemaVersion) return;
  if (version > kFleetSchemaVersion)
    throw Error("fleet database " + db.name() + ": schema version " + std::to_string(version) +
                " is newer than this gpuledger knows (" + std::to_string(kFleetSchemaVersion) +
                "); upgrade gpuledger before it ships there");
  throw Error("fleet database " + db.name() + ": schema version " + std::to_string(version) + ", this gpuledger needs " +
              std::to_string(kFleetSchemaVersion) + "; run `gpuledger fleet-db migrate` as its owner");
}

std::vector<int64_t> months_with_windows(PgConnection& db) {
  // Named windows_YYYY_MM by create_month.
  PgResult months = db.query(
      "SELECT extract(epoch FROM to_date(right(c.relname, 7), 'YYYY_MM')::timestamp AT TIME ZONE 'UTC')::bigint m "
      "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
      "WHERE i.inhparent = 'gpuledger.windows'::regclass ORDER BY 1");
  std::vector<int64_t> out;
  for (int r = 0; r < months.rows(); ++r) out.push_back(months.i64(r, 0));
  return out;
}

std::vector<PruneResult> prune_before(PgConnection& db, int64_t before, int64_t now) {
  check_schema(db);
  const int64_t this_month = report::period_start(now, report::Granularity::kMonth);
  if (report::period_start(before, report::Granularity::kMonth) != before || before > this_month)
    throw Error(
        "fleet-db prune: --before must be the start of a month no later than this one (a month still "
        "running keeps its windows)");
  std::vector<PruneResult> out;
  for (const int64_t m : months_with_windows(db)) {
    if (m >= before) continue;
    PruneResult result{m, std::nullopt, 0};
    db.exec("BEGIN");
    try {
      PgResult why = db.query("SELECT gpuledger.prune_month($1)", {std::to_string(m)});
      if (!why.null(0, 0)) result.kept_because = why.text(0, 0);
      PgResult n = db.query("SELECT coalesce(sum(windows), 0)::bigint FROM gpuledger.window_totals "
                            "WHERE period = 'month' AND period_start = $1", {std::to_string(m)});
      result.windows = n.i64(0, 0);
      db.exec("COMMIT");
    } catch (...) {
      if (db.ok()) db.exec("ROLLBACK");
      throw;
    }
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace gpuledger::fleet
