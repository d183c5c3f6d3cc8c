#pragma once
// The fleet database's schema (PostgreSQL, schema `gpuledger`), its versioned
// migrations and the check an agent or a report makes before using it.
//
//   schema_migrations(version, applied_at)   one row per migration applied
//   windows(cluster, node, gpu_uuid, start_time, ..., digest, body)   one per window;
//                     body (schema 7): its accounts, charges and energy parts as JSON
//                     (window_json.h, window_children_to_json), checked as it is stored
//   accounts(cluster, node, gpu_uuid, start_time, account, ..., slurm_user, slurm_account)
//                     the Slurm user and account since schema 5 ('' before, and for
//                     other workloads); a view of the bodies from schema 7 (a table before)
//   charges(..., account, kind 'busy'|'idle'|'memory', micros)        a view from schema 7
//   energy_charges(..., account, kind 'busy'|'idle', millijoules)     a view from schema 7
//   window_totals(period, period_start, cluster, node, gpu_uuid, windows, cost_micros)
//                     kept by a trigger on windows: per GPU and UTC hour, day, month
//   rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digest, body,
//           verified, refusal)
//                     an agent's merged window of a period (fleet_rollups.h), checked
//                     by the database as it arrives (check_rollup, schema 3) and used
//                     only when verified and while windows and cost match window_totals
//   rollup_charges(period, period_start, cluster, node, gpu_uuid, windows, ..., account, team, micros)
//                     a verified hour or day roll-up's money per account, written by
//                     the database (schema 6): a report's chart sums it (fleet_chart.h)
//   month_charts(period_start, cluster, node, gpu_uuid, windows, ..., first_starts[], teams[], micros[])
//                     a verified month roll-up's days by team, from those rows (schema 6)
//   day_charts(period_start, cluster, node, gpu_uuid, windows, ..., first_starts[], teams[], micros[])
//                     a verified day roll-up's hours by team, from those rows (schema 13)
//   node_day_charts(period_start, cluster, node, gpus[], windows[], ..., first_starts[], teams[], micros[])
//                     a node's day: its GPUs' day_charts rows summed (schema 16)
//   node_roles(role, cluster, node)   which login role ships which node (schema 3)
//   overlaps(cluster, node, gpu_uuid, start_time, other_...)
//                     windows committed over another window of the same GPU (schema 3)
//   pruned_months(month_start, windows)   months whose windows were dropped once
//                     every period there had a verified roll-up (schema 4, prune_month)
//   window_packs(cluster, node, gpu_uuid, hour_start, windows, sums..., body)
//                     a GPU-hour's windows in one compressed row, once its hour roll-up
//                     was verified (schema 17, fleet_packs.h); stored_windows reads
//                     windows and packs as one
// Every table is partitioned by month on start_time (Unix seconds, UTC
// months); ensure_month(t) creates the month's partitions (SECURITY DEFINER,
// so an agent that may only insert can still start a new month; from schema 3
// only a year back to a month ahead of the server's clock, create_month(t) any
// month, for the owner).
// A window is keyed by (cluster, node, GPU or MIG instance uuid, start); its
// digest (window_digest.h) tells a resend (the same content: stored once)
// from a conflict (different content: refused, never overwritten).
//
// Roles (created by migration 1 when missing, NOLOGIN; grant them to login roles):
//   gpuledger_agent   INSERT into windows (the four tables before schema 7) and rollups, SELECT of their
//                     keys and digests only (to tell a resend from a conflict), and
//                     ensure_month(); no UPDATE, DELETE, TRUNCATE or reading of bills.
//                     From schema 3, row-level security: a member inserts and sees
//                     only the rows of the node (and cluster) node_roles gives it
//                     (fleet_roles.h: `gpuledger fleet-db add-node`).
//   gpuledger_reader  SELECT only (reports).
// `gpuledger fleet-db migrate` runs as the database's owner (docs/fleet-db.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::fleet {

class PgConnection;

// The newest migration this gpuledger knows.
inline constexpr int kFleetSchemaVersion = 19;

// Applies the migrations not applied yet, each in its own transaction
// (serialised by an advisory lock, so two runs at once are safe), and creates
// this month's and the next month's partitions. Returns the version reached.
// `target` below the newest stops there (tests of an upgrade).
int migrate(PgConnection& db, int64_t now, int target = kFleetSchemaVersion);
// The version applied; 0 when the database was never migrated.
int schema_version(PgConnection& db);
// Throws Error unless the database is at kFleetSchemaVersion: one never
// migrated or older says to run `gpuledger fleet-db migrate`; one newer is
// refused (a newer gpuledger wrote it).
void check_schema(PgConnection& db);

// `gpuledger fleet-db prune`: drops the windows of each month that starts
// before `before` (a month start, at most the month of `now`: a month still
// running keeps its windows) and has any, once its roll-ups are verified
// (gpuledger.prune_month), one transaction a month. Per month seen: its start, and nullopt when pruned
// now, or why it was kept.
struct PruneResult {
  int64_t month_start = 0;
  std::optional<std::string> kept_because;
  int64_t windows = 0;  // the month's windows, as window_totals counted them
};
std::vector<PruneResult> prune_before(PgConnection& db, int64_t before, int64_t now);
// The months that still have a windows partition (not pruned), their starts in order.
std::vector<int64_t> months_with_windows(PgConnection& db);

}  // namespace gpuledger::fleet
