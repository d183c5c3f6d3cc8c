#include "fleet/fleet_schema.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
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

// Migration n is kMigrations[n - 1]; append, never edit one that shipped.
const std::vector<const char*> kMigrations = {kMigration1, kMigration2};
static_assert(kFleetSchemaVersion == 2, "a new migration goes into kMigrations");

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
    const int64_t month = report::period_start(now, report::Granularity::kMonth);
    db.query("SELECT gpuledger.ensure_month($1)", {std::to_string(month)});
    db.query("SELECT gpuledger.ensure_month($1)", {std::to_string(report::period_end(month, report::Granularity::kMonth))});
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

}  // namespace gpuledger::fleet
