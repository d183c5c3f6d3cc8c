#include "fleet/fleet_roles.h"

#include <cctype>

#include "common/error.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

namespace {

constexpr size_t kMaxRoleBytes = 63;  // PostgreSQL's NAMEDATALEN - 1

bool plain(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

std::string quoted_identifier(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string node_role_name(const std::string& node, const std::optional<std::string>& cluster) {
  if (node.empty()) throw Error("fleet-db add-node: the node's name is empty");
  // A window's origin reads as cluster/node, split at the last '/' (reports,
  // FOCUS's x_Node, this role's name): (a, b/c) would be (a/b, c). No
  // Kubernetes, Slurm or host name holds one; a cluster's name may.
  if (node.find('/') != std::string::npos)
    throw Error("fleet-db add-node: a node's name holds no '/' (a window's origin reads as cluster/node)");
  if (cluster && cluster->empty()) throw Error("fleet-db add-node: --cluster is empty");
  const std::string full = "gpuledger_node_" + (cluster ? *cluster + "/" : "") + node;
  if (plain(node) && (!cluster || plain(*cluster)) && full.size() <= kMaxRoleBytes) return full;
  // Not plain, or too long: a readable prefix and the hash of the whole name.
  std::string prefix;
  for (unsigned char c : full.substr(0, kMaxRoleBytes - 17))
    prefix += std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/' ? static_cast<char>(c) : '_';
  return prefix + "_" + sha256_hex(full).substr(0, 16);
}

std::string add_node_role(PgConnection& db, const std::string& node, const std::optional<std::string>& cluster) {
  const std::string role = node_role_name(node, cluster);
  check_schema(db);
  const PgParam cluster_param = cluster ? PgParam(*cluster) : std::nullopt;
  db.exec("BEGIN");
  try {
    db.exec("SELECT pg_advisory_xact_lock(hashtext('gpuledger.add_node'))");
    PgResult mapped = db.query("SELECT cluster, node FROM gpuledger.node_roles WHERE role = $1", {role});
    const bool exists = db.query("SELECT FROM pg_roles WHERE rolname = $1", {role}).rows() == 1;
    if (mapped.rows() == 1 && mapped.null(0, 1)) {
      // Kept by migration 3 for any node (roles are the server's, not one database's): narrowed to this node.
      db.query("UPDATE gpuledger.node_roles SET cluster = $2, node = $3 WHERE role = $1", {role, cluster_param, node});
    } else if (mapped.rows() == 1) {
      const PgParam had_cluster = mapped.null(0, 0) ? std::nullopt : PgParam(mapped.text(0, 0));
      if (mapped.text(0, 1) != node || had_cluster != cluster_param)
        throw Error("fleet-db add-node: role " + role + " ships another node in " + db.name() +
                    " (see gpuledger.node_roles)");
    } else if (exists) {
      throw Error("fleet-db add-node: role " + role + " exists in " + db.name() +
                  " and is not a node's role; drop or rename it first");
    }
    const std::string limit = " CONNECTION LIMIT " + std::to_string(kNodeRoleConnections);
    db.exec((exists ? "ALTER ROLE " : "CREATE ROLE ") + quoted_identifier(role) + (exists ? "" : " LOGIN") + limit);
    db.exec("GRANT gpuledger_agent TO " + quoted_identifier(role));
    if (mapped.rows() == 0)
      db.query("INSERT INTO gpuledger.node_roles(role, cluster, node) VALUES ($1, $2, $3)", {role, cluster_param, node});
    db.exec("COMMIT");
  } catch (...) {
    if (db.ok()) db.exec("ROLLBACK");
    throw;
  }
  return role;
}

}  // namespace gpuledger::fleet
