#pragma once
// The PostgreSQL sink: writes a batch of closed windows to the fleet database
// in one transaction, idempotently. Each window is keyed by (cluster, node,
// GPU or MIG uuid, start): a window already stored with the same digest is a
// resend (a crash, SIGKILL or restart between commit and the outbox's mark)
// and is stored once; one stored with another digest is a conflict, refused
// and reported, never overwritten. Nothing is marked here: the caller marks
// the outbox (ledger/outbox.h) only after ship() returned, i.e. committed.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fleet/fleet_rollups.h"
#include "fleet/fleet_rows.h"
#include "fleet/pg_connection.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

// kUnverified: a roll-up stored but found by the database not to be its
// windows' merge (gpuledger.check_rollup); reports do not read it.
// kTooLarge: not sent, its body over what the database stores
// (body_bounds.h); the batch's others are.
enum class Delivery { kStored, kDuplicate, kConflict, kUnverified, kTooLarge };

// Said (in an Error) when the database's row-level security refused a row:
// this role ships another node's windows or roll-ups (fleet_error_reason).
inline constexpr const char* kNotThisNode = "this role may ship only its own node's windows";

class FleetSinkPostgres {
 public:
  // Uses `db` (checked with check_schema by the caller) for this origin; the
  // tables' columns are read once (a database migrated since needs a new sink).
  FleetSinkPostgres(PgConnection& db, Origin origin);
  // One transaction for the batch; per window, what became of it. Throws
  // Error (nothing committed) when the database fails. `digest_parts`, when
  // given, gets each window's digest part (fleet_rows.h), in order.
  std::vector<Delivery> ship(const std::vector<const ledger::WindowRecord*>& windows,
                             std::vector<uint64_t>* digest_parts = nullptr);
  // The roll-ups (fleet_rollups.h) in one transaction, keyed by period,
  // start, slot and window count: the same again is a duplicate, a different
  // one under that key a conflict (refused, never overwritten).
  std::vector<Delivery> ship_rollups(const std::vector<Rollup>& rollups);
  const Origin& origin() const { return origin_; }

 private:
  void ensure_month(int64_t t);
  std::vector<PgResult> insert_rows(const std::string& table, const std::vector<std::string>& columns,
                                    const std::vector<const std::vector<PgParam>*>& rows, const std::string& tail = "");
  const std::map<std::string, std::string>& column_types(const std::string& table);
  void insert_children(const std::vector<WindowRows>& rows, const std::vector<bool>& inserted);
  // BEGIN, fn, COMMIT; ROLLBACK and rethrow when anything fails (a refusal by
  // row-level security as one sentence saying kNotThisNode).
  void in_transaction(const std::function<void()>& fn);
  PgConnection& db_;
  Origin origin_;
  std::set<int64_t> months_;  // partitions known to exist
  std::map<std::string, std::map<std::string, std::string>> column_types_;  // table -> column -> type
};

}  // namespace gpuledger::fleet
