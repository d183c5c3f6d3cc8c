// `gpuledger fleet-db migrate`, `add-node`, `prune` and `pack`, and where the fleet database is for every command.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "fleet/fleet_packs.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"
#include "report/calendar.h"
#include "report/report_text.h"
#include "report/report_time.h"

namespace gpuledger::cli {

namespace {

// `gpuledger fleet-db add-node NODE [--cluster NAME]`: the node's own login role.
struct AddNodeCommand {
  fleet::FleetDbOptions db;
  std::string node, cluster;
};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string conninfo_of(const fleet::FleetDbOptions& db, const std::string& command) {
  std::string conninfo = db.resolve();
  if (conninfo.empty()) throw Error("fleet-db " + command + ": give the database with --fleet-db or $GPULEDGER_FLEET_DB");
  return conninfo;
}

int run_fleet_db_add_node(const AddNodeCommand& cmd) {
  fleet::PgConnection db(conninfo_of(cmd.db, "add-node"), cmd.db.password_file);
  const std::optional<std::string> cluster = cmd.cluster.empty() ? std::nullopt : std::optional(cmd.cluster);
  std::cout << fleet::add_node_role(db, cmd.node, cluster) << "\n";  // its only line
  return 0;
}

// `gpuledger fleet-db prune --before YYYY-MM`: the windows of earlier months,
// once their roll-ups are verified (fleet_schema.h, prune_before).
struct PruneCommand {
  fleet::FleetDbOptions db;
  std::string before;
};

int run_fleet_db_prune(const PruneCommand& cmd) {
  int year = 0, month = 0;
  char extra = 0;
  if (std::sscanf(cmd.before.c_str(), "%4d-%2d%c", &year, &month, &extra) != 2 || cmd.before.size() != 7 ||
      month < 1 || month > 12 || year < 1970)
    throw Error("fleet-db prune: --before takes a month as YYYY-MM, not '" + cmd.before + "'");
  const int64_t before = report::days_from_civil(year, month, 1) * 86400;
  fleet::PgConnection db(conninfo_of(cmd.db, "prune"), cmd.db.password_file);
  const int64_t now = unix_now();
  int kept = 0;
  for (const auto& r : fleet::prune_before(db, before, now)) {
    const std::string month_name = report::format_utc(r.month_start, "%Y-%m");
    if (r.kept_because) {
      ++kept;
      std::cout << month_name << ": kept its windows: " << *r.kept_because << "\n";
    } else {
      std::cout << month_name << ": pruned its " << r.windows << " windows; roll-ups and totals kept\n";
    }
  }
  return kept ? 1 : 0;
}

// `gpuledger fleet-db pack --before TIME`: the windows of each verified
// GPU-hour before TIME in one compressed row (fleet_packs.h).
struct PackCommand {
  fleet::FleetDbOptions db;
  std::string before;
};

int run_fleet_db_pack(const PackCommand& cmd) {
  const int64_t now = unix_now();
  const int64_t before = report::parse_time(cmd.before, now);
  fleet::PgConnection db(conninfo_of(cmd.db, "pack"), cmd.db.password_file);
  const fleet::PackResult r = fleet::pack_before(db, before);
  std::cout << "packed " << r.windows << " windows of " << r.gpu_hours << " GPU-hours; " << r.left
            << " GPU-hours before " << report::format_rfc3339(before - before % 3600)
            << " keep their windows in rows (no verified roll-up of them yet)\n";
  return 0;
}

}  // namespace

int run_fleet_db_migrate(const FleetDbCommand& cmd) {
  fleet::PgConnection db(conninfo_of(cmd.db, "migrate"), cmd.db.password_file);
  const int before = fleet::schema_version(db);
  const int64_t now = unix_now();
  const int after = fleet::migrate(db, now);
  std::cout << "fleet database " << db.name() << ": schema version " << after
            << (after == before ? " (already current)" : " (was " + std::to_string(before) + ")") << "\n";
  return 0;
}

Subcommand add_fleet_db_command(CLI::App& app) {
  auto o = std::make_shared<FleetDbCommand>();
  CLI::App* fleet_db_cmd = app.add_subcommand("fleet-db", "The PostgreSQL fleet ledger (docs/fleet-db.md)");
  fleet_db_cmd->require_subcommand(1);
  CLI::App* cmd = fleet_db_cmd->add_subcommand(
      "migrate", "Apply the fleet database's schema migrations (as its owner; safe to repeat)");
  cmd->footer("Also creates the month partitions; agents refuse a schema older or newer than they know.");
  add_fleet_db_options(cmd, o->db, "The fleet database (default: $GPULEDGER_FLEET_DB)");

  auto a = std::make_shared<AddNodeCommand>();
  CLI::App* add = fleet_db_cmd->add_subcommand(
      "add-node", "Create NODE's own login role, which may ship only that node's windows (as the owner; safe to "
                  "repeat); prints the role's name");
  add->add_option("NODE", a->node, "The node's name, as its agent's --node-name")->required();
  add->add_option("--cluster", a->cluster, "Only in this cluster (its agent's --cluster-name); default: any cluster");
  add_fleet_db_options(add, a->db, "The fleet database (default: $GPULEDGER_FLEET_DB)");
  add->footer("Log in as the role with a password (ALTER ROLE ... PASSWORD, as the owner) or a client certificate "
              "whose CN maps to it in pg_ident.conf (docs/fleet-db.md).");

  auto p = std::make_shared<PruneCommand>();
  CLI::App* prune = fleet_db_cmd->add_subcommand(
      "prune", "Drop the windows of every month before --before whose roll-ups the database verified, keeping "
               "roll-ups and totals (as the owner; safe to repeat)");
  prune->add_option("--before", p->before, "The first month kept whole, YYYY-MM (at most this month)")->required();
  add_fleet_db_options(prune, p->db, "The fleet database (default: $GPULEDGER_FLEET_DB)");
  prune->footer("A month whose hours, days or month lack a verified roll-up keeps its windows (exit status 1). "
                "Reports of a pruned month read whole UTC hours only; late windows of it are refused.");

  auto k = std::make_shared<PackCommand>();
  CLI::App* pack = fleet_db_cmd->add_subcommand(
      "pack",
      "Move the windows of every whole UTC hour before --before whose hour roll-up the database verified "
      "into one compressed row a GPU-hour (as the owner or a member of gpuledger_maintainer; safe to repeat)");
  pack->add_option("--before", k->before,
                   "The first hour kept in rows: RFC 3339, a date, Unix seconds or -24h (before now)")
      ->required();
  add_fleet_db_options(pack, k->db, "The fleet database (default: $GPULEDGER_FLEET_DB)");
  pack->footer(
      "Reports read packed hours as before. A GPU then takes no window that starts before its packed windows "
      "end (one is refused and stays in its agent's store): pack only hours older than an agent's longest "
      "outage.");
  return {fleet_db_cmd, [o, a, add, p, prune, k, pack] {
            if (*add) return run_fleet_db_add_node(*a);
            if (*prune) return run_fleet_db_prune(*p);
            if (*pack) return run_fleet_db_pack(*k);
            return run_fleet_db_migrate(*o);
          }};
}

}  // namespace gpuledger::cli
