#pragma once
// Where the fleet database is, for every command and the agent alike.
#include <string>

namespace gpuledger::fleet {

// --fleet-db (or $GPULEDGER_FLEET_DB), a libpq URI
// or keyword string; its password from --fleet-db-password-file or PGPASSFILE.
struct FleetDbOptions {
  std::string url;            // the flag's value; empty: $GPULEDGER_FLEET_DB
  std::string password_file;
  // The connection string to use ("" when none): refuses a password given on
  // the command line (throws Error).
  std::string resolve(bool from_environment = true) const;
};

}  // namespace gpuledger::fleet
