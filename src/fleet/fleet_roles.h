#pragma once
// Per-node identity in the fleet database (schema 3): each node ships as its
// own login role, and PostgreSQL's row-level security lets that role insert
// and see only its node's windows and roll-ups (gpuledger.node_roles). How the
// node proves it is that role is PostgreSQL's: a password, or a client
// certificate whose CN maps to it (pg_ident.conf); docs/fleet-db.md.
#include <optional>
#include <string>

namespace gpuledger::fleet {

class PgConnection;

// The role of a node (and cluster): "gpuledger_node_<node>" or
// "gpuledger_node_<cluster>/<node>", with a hash in place of the rest when a
// name holds other characters than [A-Za-z0-9._-] or the role would pass
// PostgreSQL's 63 bytes. The same for the same names, always.
std::string node_role_name(const std::string& node, const std::optional<std::string>& cluster);

// The connections a node's role may hold at once (CONNECTION LIMIT). An
// agent ships on one at a time; a restart's last one not yet closed by the
// server, a second agent during a rolling update and `gpuledger doctor` make
// four. Without a limit one node's credentials took every connection the
// server has (max_connections), and no other node shipped, nor any report ran.
inline constexpr int kNodeRoleConnections = 4;

// Creates the node's login role (no password: set one, or map a certificate's
// CN to it) as a member of gpuledger_agent, limited to kNodeRoleConnections,
// and records it in node_roles, in one transaction, as the database's owner;
// returns its name. Idempotent: the same node and cluster again changes
// nothing but the limit (a role made before it had none). Throws Error when
// the role exists for anything else, or the schema is not current.
std::string add_node_role(PgConnection& db, const std::string& node, const std::optional<std::string>& cluster);

}  // namespace gpuledger::fleet
