#include "fleet/fleet_db_options.h"

#include <cstdlib>

#include "common/error.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

std::string FleetDbOptions::resolve(bool from_environment) const {
  if (!url.empty()) {
    // A command line is readable by every user of the node (ps, /proc/PID/cmdline).
    if (has_password(url))
      throw Error("--fleet-db carries a password, which every user of this machine can read on its command line; "
                  "put it in --fleet-db-password-file, PGPASSFILE or $GPULEDGER_FLEET_DB instead");
    return url;
  }
  const char* env = from_environment ? std::getenv("GPULEDGER_FLEET_DB") : nullptr;
  if (!env || !*env) return "";
  redacted(env);  // refuses a malformed string before anything starts
  return env;
}

}  // namespace gpuledger::fleet
