#include "fleet/fleet_migrations.h"

namespace gpuledger::fleet {

// Issue 30, ingest: the body check of a statement's windows (schema 9's
// refuse_unreadable_bodies, its rules, refusal and parts unchanged) without a
// second copy of the bodies. Schema 9 parsed them into a MATERIALIZED CTE,
// read twice (the parts, then the shape): a batch of 3,840 windows' parsed
// bodies is ~5 MB, past PostgreSQL's default work_mem (4 MB), so every batch
// wrote them to a temporary file and read them back. Now each body is parsed
// in a fenced subquery (OFFSET 0: once a row, not once a reference) and its
// shape is one more row of its parts ('s', never kept), so one pass reads it.
// The trigger's time for those 3,840 windows: 130-146 ms -> 109-115 ms
// (docs/performance.md, "Schema 14").
const char* const kMigration14 = R"SQL(
CREATE OR REPLACE FUNCTION gpuledger.refuse_unreadable_bodies() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET enable_sort = off AS $fn$
DECLARE
  readable boolean;
  bad record;
BEGIN
  WITH groups AS MATERIALIZED (
    SELECT x.cluster, x.node, x.gpu_uuid, x.start_time - ((x.start_time % 3600) + 3600) % 3600 AS hour_start, p.part,
           p.account, p.kind, p.namespace, p.pod, p.container, p.team, p.slurm_user, p.slurm_account, sum(p.n) AS n,
           bool_and(p.ok) AS ok
    FROM (SELECT f.cluster, f.node, f.gpu_uuid, f.start_time, f.body::jsonb AS b,
                 f.energy_millijoules IS NOT NULL AS energy
          FROM fresh f OFFSET 0) x
    CROSS JOIN LATERAL (
      SELECT q.part, q.account, q.kind, q.namespace, q.pod, q.container, q.team, q.slurm_user, q.slurm_account, q.n,
             q.ok
      FROM gpuledger.window_body_parts(x.b) q
      UNION ALL
      SELECT 's', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, gpuledger.window_body_shaped(x.b, x.energy)) p
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13),
  kept AS (
    INSERT INTO gpuledger.window_parts
    SELECT g.cluster, g.node, g.gpu_uuid, g.hour_start, g.part, g.account, g.kind, g.namespace, g.pod, g.container,
           g.team, g.slurm_user, g.slurm_account, g.n
    FROM groups g WHERE g.part <> 's')
  SELECT coalesce((SELECT bool_and(g.ok IS TRUE) FROM groups g), true) INTO readable;
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
)SQL";

}  // namespace gpuledger::fleet
