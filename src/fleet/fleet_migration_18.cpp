#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, packing on a schedule: `fleet-db pack` ran as the owner, whose
// password or key can rewrite every bill, so a nightly job would have held
// the fleet's most powerful credential. gpuledger_maintainer (a NOLOGIN
// group, like gpuledger_agent and gpuledger_reader) may pack and nothing
// else:
// - pack_hours runs as its owner (SECURITY DEFINER): it packs only hours the
//   database verified and that still equal their totals, whoever calls it,
//   so a caller chooses when, never what a pack holds, and one hour a call,
//   so no caller holds the agents' inserts for longer than an hour's pack;
// - unpacked_hours gives the command what it plans with (hours and counts
//   of GPUs), so the group reads no window, total, roll-up or pack: no
//   cost, name or body of the bill.
// It cannot insert, delete, prune, migrate or read the bill. The worst a
// stolen maintainer credential does is pack hours early, so that another
// node's late window over them is refused and counted (as `--before` too
// close to now would). Every statement is repeatable (a second run of 17
// puts its pack_hours back; this one wraps it again).
const char* const kMigration18 = R"SQL(
DO $do$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'gpuledger_maintainer') THEN
    CREATE ROLE gpuledger_maintainer NOLOGIN;
  END IF;
END
$do$;
GRANT USAGE ON SCHEMA gpuledger TO gpuledger_maintainer;
GRANT SELECT ON gpuledger.schema_migrations TO gpuledger_maintainer;

-- The GPU-hours in [a, b) whose windows are still in rows, an hour a row:
-- how many, and how many of them pack_hours would pack (a verified hour
-- roll-up equal to their totals). `fleet-db pack` calls pack_hours for an
-- hour with one to pack only: a node whose roll-ups never check out would
-- otherwise have every run read each of its hours again, 8,000 GPUs' rows an
-- hour at 1,000 nodes. The roll-ups are probed for rows not packed only. A
-- month without rows (packed whole, or pruned) is not read again.
CREATE OR REPLACE FUNCTION gpuledger.unpacked_hours(a bigint, b bigint, OUT hour_start bigint,
                                                    OUT gpu_hours bigint, OUT packable bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  m timestamp := date_trunc('month', to_timestamp(a) AT TIME ZONE 'UTC');
  part text;
  lo bigint;
  hi bigint;
  has_rows boolean;
BEGIN
  WHILE extract(epoch FROM m)::bigint < b LOOP
    part := 'windows_' || to_char(m, 'YYYY_MM');
    lo := greatest(a, extract(epoch FROM m)::bigint);
    hi := least(b, extract(epoch FROM m + interval '1 month')::bigint);
    has_rows := false;
    IF to_regclass(format('gpuledger.%I', part)) IS NOT NULL THEN
      EXECUTE format('SELECT EXISTS (SELECT FROM gpuledger.%I)', part) INTO has_rows;
    END IF;
    IF has_rows THEN
      RETURN QUERY
        SELECT t.period_start, count(*),
               count(*) FILTER (WHERE EXISTS (
                 SELECT FROM gpuledger.rollups r
                 WHERE r.period = 'hour' AND r.cluster = t.cluster AND r.node = t.node AND r.gpu_uuid = t.gpu_uuid
                   AND r.period_start = t.period_start AND r.windows = t.windows AND r.cost_micros = t.cost_micros
                   AND r.digests = t.digests AND r.verified))
        FROM gpuledger.window_totals t
        WHERE t.period = 'hour' AND t.period_start >= lo AND t.period_start < hi
          AND NOT EXISTS (SELECT FROM gpuledger.window_packs p WHERE p.cluster = t.cluster AND p.node = t.node
                          AND p.gpu_uuid = t.gpu_uuid AND p.hour_start = t.period_start)
        GROUP BY 1 ORDER BY 1;
    END IF;
    m := m + interval '1 month';
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.unpacked_hours(bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuledger.unpacked_hours(bigint, bigint) TO gpuledger_maintainer;

-- pack_hours of schema 17, run as its owner, one hour a call: the SHARE lock
-- on windows that holds every agent's insert lasts one hour's pack, however
-- it is called (`fleet-db pack` calls it an hour a transaction).
DO $do$
BEGIN
  IF to_regprocedure('gpuledger.pack_hours_17(bigint, bigint)') IS NULL THEN
    ALTER FUNCTION gpuledger.pack_hours(bigint, bigint) RENAME TO pack_hours_17;
  END IF;
END
$do$;
CREATE OR REPLACE FUNCTION gpuledger.pack_hours(a bigint, b bigint, OUT packed_windows bigint,
                                               OUT packed_gpu_hours bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF b - a > 3600 THEN
    RAISE EXCEPTION 'pack_hours packs one hour a call, not % seconds', b - a USING ERRCODE = '22023';
  END IF;
  SELECT p.packed_windows, p.packed_gpu_hours INTO packed_windows, packed_gpu_hours
  FROM gpuledger.pack_hours_17(a, b) p;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.pack_hours(bigint, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuledger.pack_hours(bigint, bigint) TO gpuledger_maintainer;
)SQL";

}  // namespace gpuledger::fleet
