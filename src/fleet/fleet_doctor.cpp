#include "fleet/fleet_doctor.h"

#include <filesystem>
#include <memory>

#include "common/error.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/pg_connection.h"
#include "ledger/outbox.h"

namespace gpuledger::fleet {

namespace {
// The local backlog, read only: the agent may be writing the store.
std::string backlog(const std::string& store_path) {
  if (store_path.empty() || !std::filesystem::exists(store_path)) return "";
  try {
    ledger::Store store(store_path, ledger::Store::Mode::kReadOnly);
    if (store.schema_version() < 8) return "; the store has not shipped yet";
    const ledger::Outbox outbox(store, ledger::Outbox::Access::kReadOnly);
    return "; " + std::to_string(outbox.pending_count()) + " windows pending, " +
           std::to_string(outbox.refused_count()) + " refused (conflicting, or too large to store)";
  } catch (const Error& e) {
    return std::string("; the store cannot be read: ") + e.what();
  }
}
}  // namespace

FleetCheck check_fleet_db(const std::string& conninfo, const std::string& password_file, const std::string& store_path) {
  const std::string pending = backlog(store_path);
  try {
    PgConnection db(conninfo, password_file);
    check_schema(db);
    PgResult may = db.query(
        "SELECT has_table_privilege('gpuledger.windows', 'INSERT') AND has_table_privilege('gpuledger.rollups', "
        "'INSERT') AND has_function_privilege('gpuledger.ensure_month(bigint)', 'EXECUTE')");
    if (may.text(0, 0) != "t")
      return {false, db.name() + ": this role may not insert windows (grant it gpuledger_agent)" + pending};
    // Row-level security (schema 3): the nodes this role may ship, unless it owns the tables.
    PgResult node = db.query(
        "SELECT (SELECT coalesce(cluster, 'any cluster') || '/' || coalesce(node, 'any node') FROM "
        "gpuledger.node_roles "
        "WHERE role = current_user), (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user) OR "
        "pg_has_role((SELECT relowner FROM pg_class WHERE oid = 'gpuledger.windows'::regclass), 'MEMBER'), "
        "(SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user)");
    if (node.null(0, 0) && node.text(0, 1) != "t")
      return {false, db.name() + ": this role is no node's: run `gpuledger fleet-db add-node NODE` as the owner and "
                                 "log in as the role it prints" + pending};
    const std::string as = node.null(0, 0) ? "any node (the owner)" : node.text(0, 0);
    // A node's role made before add-node set a connection limit has none (fleet_roles.h).
    std::string connections;
    if (!node.null(0, 0))
      connections = node.i64(0, 2) < 0 ? "; the role has no connection limit: run `gpuledger fleet-db add-node` "
                                         "for this node again as the owner"
                                       : ", at most " + node.text(0, 2) + " connections at once";
    return {true, db.name() + ": schema " + std::to_string(kFleetSchemaVersion) + ", windows of " + as +
                      " may be shipped" + connections + pending};
  } catch (const Error& e) {
    return {false, std::string(e.what()) + " (" + fleet_error_reason(e.what()) + ")" + pending};
  }
}

}  // namespace gpuledger::fleet
