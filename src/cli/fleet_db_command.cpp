// `gpuledger fleet-db migrate` and `add-node`, and where the fleet database is for every command.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"

namespace gpuledger::cli {

namespace {

// `gpuledger fleet-db add-node NODE [--cluster NAME]`: the node's own login role.
struct AddNodeCommand {
  fleet::FleetDbOptions db;
  std::string node, cluster;
};

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

}  // namespace

int run_fleet_db_migrate(const FleetDbCommand& cmd) {
  fleet::PgConnection db(conninfo_of(cmd.db, "migrate"), cmd.db.password_file);
  const int before = fleet::schema_version(db);
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
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
  return {fleet_db_cmd, [o, a, add] { return *add ? run_fleet_db_add_node(*a) : run_fleet_db_migrate(*o); }};
}

}  // namespace gpuledger::cli
