#pragma once
// `gpuledger doctor --fleet-db`: can this node ship its windows, and if not, why.
#include <string>

namespace gpuledger::fleet {

struct FleetCheck {
  bool ok = false;
  std::string reason;  // one line, the database named redacted
};
// Connects, checks the schema and the role's INSERT privilege, and (with a
// store path) counts the windows pending and refused in the outbox.
FleetCheck check_fleet_db(const std::string& conninfo, const std::string& password_file, const std::string& store_path);

}  // namespace gpuledger::fleet
