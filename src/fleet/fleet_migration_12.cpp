#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, the fleet read: a month's roll-ups in three partitions, one a
// period. A month of a 1,000-node fleet holds 5.8 M hour roll-ups (11.7 GB)
// and 240,000 day roll-ups: arriving in time order, a day's lay among the
// next day's hours, one to a heap page, so a report by day (CSV by day, a
// month to date's days, FOCUS daily) read 240,000 bodies from 106,000 pages
// spread over the whole month, and a month's 8,000 from 8,000. In a
// partition of their own a month's days are 60,000 pages (469 MB), its month
// roll-ups 2,000 (docs/performance.md, "Schema 12"). Reports read through
// gpuledger.rollups as before: the period every statement names prunes the
// other two (as it is planned, or as a join runs).
//
// Each month's partition becomes a table partitioned by period, filled
// while it is not attached (no trigger fires: every roll-up keeps the
// verdict, refusal and charges it has), then attached, which builds its
// indexes and clones the parent's triggers; a CHECK on the month's range
// spares the attach a scan of what was just copied.
const char* const kMigration12 = R"SQL(
CREATE FUNCTION gpuledger.create_rollups_partition(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
  lo timestamp := date_trunc('month', to_timestamp(t) AT TIME ZONE 'UTC');
  month text := 'rollups_' || to_char(lo, 'YYYY_MM');
  p text;
BEGIN
  EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.rollups FOR VALUES FROM (%s) TO (%s) '
                 'PARTITION BY LIST (period)', month, extract(epoch FROM lo)::bigint,
                 extract(epoch FROM lo + interval '1 month')::bigint);
  FOREACH p IN ARRAY ARRAY['hour', 'day', 'month'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES IN (%L)',
                   month || '_' || p, month, p);
  END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_rollups_partition(bigint) FROM PUBLIC;

-- A month's partitions: the roll-ups' first, by period (create_partitions_11
-- leaves a roll-ups partition that exists as it is).
ALTER FUNCTION gpuledger.create_partitions(bigint) RENAME TO create_partitions_11;
CREATE FUNCTION gpuledger.create_partitions(t bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  PERFORM gpuledger.create_rollups_partition(t);
  PERFORM gpuledger.create_partitions_11(t);
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.create_partitions(bigint) FROM PUBLIC;

DO $do$
DECLARE
  part record;
  cols text;
  old text;
  p text;
BEGIN
  SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
  FROM pg_attribute a WHERE a.attrelid = 'gpuledger.rollups'::regclass AND a.attnum > 0 AND NOT a.attisdropped;
  FOR part IN
    SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''?(-?\d+)''?\) TO \(''?(-?\d+)''?\)')) AS range
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'gpuledger.rollups'::regclass AND c.relkind = 'r'
    ORDER BY c.relname
  LOOP
    CONTINUE WHEN part.range IS NULL;  -- not a month's range (made by hand): left as it is, still read
    old := part.relname || '_11';
    EXECUTE format('ALTER TABLE gpuledger.rollups DETACH PARTITION gpuledger.%I', part.relname);
    EXECUTE format('ALTER TABLE gpuledger.%I RENAME TO %I', part.relname, old);
    EXECUTE format('CREATE TABLE gpuledger.%I (LIKE gpuledger.rollups INCLUDING DEFAULTS INCLUDING CONSTRAINTS, '
                   'CONSTRAINT in_month CHECK (period_start >= %s AND period_start < %s)) PARTITION BY LIST (period)',
                   part.relname, part.range[1], part.range[2]);
    FOREACH p IN ARRAY ARRAY['hour', 'day', 'month'] LOOP
      EXECUTE format('CREATE TABLE gpuledger.%I PARTITION OF gpuledger.%I FOR VALUES IN (%L)', part.relname || '_' || p,
                     part.relname, p);
    END LOOP;
    -- In the order they lie (as they came): each period's in time order.
    EXECUTE format('INSERT INTO gpuledger.%I (%s) SELECT %s FROM gpuledger.%I', part.relname, cols, cols, old);
    EXECUTE format('ALTER TABLE gpuledger.rollups ATTACH PARTITION gpuledger.%I %s', part.relname, part.bound);
    EXECUTE format('ALTER TABLE gpuledger.%I DROP CONSTRAINT in_month', part.relname);
    EXECUTE format('DROP TABLE gpuledger.%I', old);
  END LOOP;
END
$do$;
ANALYZE gpuledger.rollups;
)SQL";

}  // namespace gpuledger::fleet
