#pragma once
// Ships the node's closed windows to the fleet database, off the agent's
// event loop: its own thread, its own connection to the store (the outbox,
// ledger/outbox.h) and to PostgreSQL (fleet_sink_postgres.h), batches of at
// most batch_windows. A database that is down, slow or refusing only grows
// the backlog (the store keeps it); it drains oldest first when the database
// is back. Attribution and the ledger never wait on it.
//
// Once a UTC hour, day or month is complete in the database (every window
// that starts in it committed, and a later one stored), the node's roll-ups of
// it follow (fleet_rollups.h), so a fleet report reads a month of a GPU as one
// row; a window shipped late into a rolled-up period sends its periods again.
//
// Self-metrics: gpuledger_fleet_db_up, gpuledger_fleet_db_pending_windows,
// gpuledger_fleet_db_oldest_pending_window_age_seconds,
// gpuledger_fleet_db_shipped_windows_total, gpuledger_fleet_db_refused_windows,
// gpuledger_fleet_db_errors_total{reason} (kFleetErrorReasons),
// gpuledger_fleet_db_shipped_rollups_total{period}.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fleet/fleet_rows.h"
#include "fleet/pg_connection.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::fleet {

// connect: no connection; schema: not migrated or newer; privilege: the role
// may not do what shipping needs; not_this_node: the role is another node's
// (row-level security refused the batch: it stays pending); conflict: a window
// differs from the stored one (refused); rollup: a roll-up the database found
// not to be its windows' merge; too_large: a window (refused) or roll-up
// (not shipped) whose body is over what the database stores (body_bounds.h);
// store: the local store failed; query: any other database error.
inline constexpr const char* kFleetErrorReasons[] = {"connect", "schema",    "privilege", "not_this_node", "conflict",
                                                     "rollup",  "too_large", "store",     "query"};
// The class of a failure, from its message (PgConnection's SQLSTATE, the schema check's words).
std::string fleet_error_reason(const std::string& message);

struct FleetShipperOptions {
  std::string conninfo;       // libpq URI or keyword string
  std::string password_file;  // empty: PGPASSFILE / ~/.pgpass / none
  std::string store_path;
  Origin origin;
  // A batch is batch_windows, grown with the backlog (a quarter of what is
  // pending) up to max_batch_windows: after an outage fewer, larger
  // transactions (one trigger run and one commit each) drain it faster; in
  // steady state a batch stays small and short.
  size_t batch_windows = 500;
  size_t max_batch_windows = 4000;
  std::chrono::milliseconds interval{std::chrono::seconds(5)};  // between looks at an empty outbox
  std::chrono::milliseconds first_retry{std::chrono::seconds(1)};
  std::chrono::milliseconds max_retry{std::chrono::minutes(2)};
  // At a stop, what is pending (the window in progress the agent stored last)
  // is shipped for at most this long; the rest waits in the store.
  std::chrono::milliseconds stop_budget{std::chrono::seconds(5)};
  // Told every statement sent to the database, from the shipper's thread
  // (the fleet bench's replay of ingest); none when empty.
  PgStatementLog statement_log;
};

class FleetShipper : public metrics::MetricsContributor {
 public:
  explicit FleetShipper(FleetShipperOptions options);
  ~FleetShipper() override;  // stops
  void start();
  // Ships what is pending within stop_budget, then stops the thread (a batch
  // cut short is not marked, and is resent by the next agent: stored once).
  void stop();

  struct Status {
    bool up = false;           // connected, schema checked, last batch committed
    std::string reason;        // why not (redacted), or where it ships
    int64_t pending = 0;       // windows not shipped yet
    int64_t refused = 0;       // windows refused: conflicting, or too large to store
    std::optional<int64_t> oldest_pending_end;
    uint64_t shipped = 0;
  };
  Status status() const;
  void write_metrics(metrics::ExpositionWriter& out) const override;

 private:
  struct Session;  // the store, the outbox, the connection and the sink
  void run();
  // One round: ship a batch; returns true when more may be waiting.
  bool round(Session& s);
  // The roll-ups (fleet_rollups.h) of the periods the database now holds
  // whole, oldest first and a few a round; progress in the store's meta
  // "fleet/rolled/<period>" (the next period to roll up).
  void ship_rollups(Session& s);
  void failed(const std::string& message);

  FleetShipperOptions options_;
  std::string name_;  // the database, redacted
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_deadline_{};
  Status status_;
  std::map<std::string, uint64_t> errors_;
  std::map<std::string, uint64_t> rollups_;  // by period: shipped (or already there)
  bool not_this_node_logged_ = false;        // logged once until a batch ships again
  std::thread thread_;
};

}  // namespace gpuledger::fleet
