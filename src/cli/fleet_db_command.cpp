// `gpuledger fleet-db migrate`, and where the fleet database is for every command.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "common/error.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"

namespace gpuledger::cli {

std::string FleetDbOptions::resolve(bool from_environment) const {
  if (!url.empty()) {
    // A command line is readable by every user of the node (ps, /proc/PID/cmdline).
    if (fleet::has_password(url))
      throw Error("--fleet-db carries a password, which every user of this machine can read on its command line; "
                  "put it in --fleet-db-password-file, PGPASSFILE or $GPULEDGER_FLEET_DB instead");
    return url;
  }
  const char* env = from_environment ? std::getenv("GPULEDGER_FLEET_DB") : nullptr;
  if (!env || !*env) return "";
  fleet::redacted(env);  // refuses a malformed string before anything starts
  return env;
}

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

}  // namespace gpuledger::cli
