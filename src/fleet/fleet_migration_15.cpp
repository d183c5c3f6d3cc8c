#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, an agent's bytes bounded: one node's credentials stored a window
// body or a roll-up body of any size up to PostgreSQL's 1 GB, and the server
// parsed it (schema 14's check, check_rollup) into several times that in one
// backend, then every fleet report fetched it in a page of 5,000 rows. A
// window's body is now at most 1 MiB (kMaxWindowBodyBytes, body_bounds.h),
// checked as each row is stored, before any trigger parses it; a roll-up's
// at most 16 MiB (kMaxRollupBodyBytes), refused by a trigger that fires
// before verify_rollup's check parses it. Every other text a node writes in
// a row (a GPU's model, a source's name: 1 GB each as well, and read with
// every window) is at most 256 bytes (kMaxFieldBytes). NOT VALID: rows
// stored before are neither scanned nor refused (a report reads a body over
// 64 KiB through the views, a few at a time: fleet_reader.cpp). Every
// statement is repeatable: an upgrade test runs them again.
const char* const kMigration15 = R"SQL(
ALTER TABLE gpuledger.windows DROP CONSTRAINT IF EXISTS window_body_bounded;
ALTER TABLE gpuledger.windows ADD CONSTRAINT window_body_bounded CHECK (octet_length(body::text) <= 1048576) NOT VALID;
ALTER TABLE gpuledger.windows DROP CONSTRAINT IF EXISTS window_fields_bounded;
ALTER TABLE gpuledger.windows ADD CONSTRAINT window_fields_bounded CHECK (
  octet_length(cluster) <= 256 AND octet_length(node) <= 256 AND octet_length(gpu_uuid) <= 256 AND
  octet_length(parent_uuid) <= 256 AND octet_length(model) <= 256 AND octet_length(mig_profile) <= 256 AND
  octet_length(currency) <= 256 AND octet_length(cost_policy) <= 256 AND octet_length(busy_source) <= 256 AND
  octet_length(source) <= 256 AND octet_length(energy_source) <= 256 AND octet_length(split_source) <= 256 AND
  octet_length(digest) <= 256) NOT VALID;
-- Before verify_rollup's check parses it: a table's triggers of one event fire in their names' order.
CREATE OR REPLACE FUNCTION gpuledger.refuse_large_rollup() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
  IF greatest(octet_length(NEW.cluster), octet_length(NEW.node), octet_length(NEW.gpu_uuid), octet_length(NEW.digest),
              octet_length(NEW.digests::text)) > 256 THEN
    RAISE EXCEPTION 'gpuledger: a roll-up''s cluster, node, GPU, digest and digest sum are at most 256 bytes each'
      USING ERRCODE = 'check_violation';
  END IF;
  IF octet_length(NEW.body::text) > 16777216 THEN
    RAISE EXCEPTION 'gpuledger: the body of the % roll-up of %/%/% at % is % bytes, over the 16777216 a roll-up may hold',
      NEW.period, NEW.cluster, NEW.node, NEW.gpu_uuid, NEW.period_start, octet_length(NEW.body::text)
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION gpuledger.refuse_large_rollup() FROM PUBLIC;
DROP TRIGGER IF EXISTS bound_rollup_body ON gpuledger.rollups;
CREATE TRIGGER bound_rollup_body BEFORE INSERT ON gpuledger.rollups
  FOR EACH ROW EXECUTE FUNCTION gpuledger.refuse_large_rollup();
)SQL";

}  // namespace gpuledger::fleet
