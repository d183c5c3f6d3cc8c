// `gpuledger fleet-db migrate`, and where the fleet database is for every command.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/shared_options.h"
#include "common/error.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"

namespace gpuledger::cli {


int run_fleet_db_migrate(const FleetDbCommand& cmd) {
  const std::string conninfo = cmd.db.resolve();
  if (conninfo.empty()) throw Error("fleet-db migrate: give the database with --fleet-db or $GPULEDGER_FLEET_DB");
  fleet::PgConnection db(conninfo, cmd.db.password_file);
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

  return {cmd, [o] { return run_fleet_db_migrate(*o); }};
}

}  // namespace gpuledger::cli
