#pragma once
// The server's share of ingest, measured alone (gpuledger-fleet-db-bench
// --replay). On one VM the shippers and PostgreSQL share the cores (the
// shippers ~40 % of them), while in a fleet every shipper runs on its own
// node and the server's cores are its own. So the statements each shipper
// sent are recorded as they go (FleetShipperOptions::statement_log) and sent
// again, unchanged and in order, one connection a shipper as before, to a
// fresh database of the same server: PostgreSQL does all of the same work
// (every body checked, every part, total and roll-up check kept), the
// client only sends bytes it already holds. The two databases must then hold
// the same windows, totals and verified roll-ups.
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/pg_connection.h"
#include "pg_server.h"

namespace gpuledger::bench {

// One shipper's statements, in the order it sent them (its own thread only).
struct StatementStream {
  std::vector<fleet::PgStatement> statements;
  fleet::PgStatementLog recorder() {
    return [this](const fleet::PgStatement& s) { statements.push_back(s); };
  }
};

struct ReplayResult {
  double seconds = 0;
  double server_cpu_seconds = 0;  // PostgreSQL's, over the replay
  size_t statements = 0;
  // pg_stat_user_functions of the replay: where the server's time went.
  struct Function {
    std::string name;
    int64_t calls = 0;
    double total_seconds = 0, self_seconds = 0;
  };
  std::vector<Function> functions;
};

// Migrates a fresh database `dbname` as of `start_time`, sends every stream on
// a connection of its own (all at once), checks that it then holds what
// `postgres` holds (throws std::runtime_error naming the difference), and
// drops it.
ReplayResult replay_ingest(testing::PgServer& pg, const std::string& dbname, int64_t start_time,
                           const std::vector<StatementStream>& streams);

}  // namespace gpuledger::bench
