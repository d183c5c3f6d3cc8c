#pragma once
// Reads the fleet database's windows back as the ledger's WindowRecords, so
// `gpuledger report --fleet-db` is the local report's builder fed from
// PostgreSQL instead of SQLite (report/report.h): every grouping and format,
// and the same number to the micro-unit. Streamed through server-side cursors
// in key order, a few thousand rows at a time: a month of a fleet costs the
// memory of one window and the report's groups.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/fleet_periods.h"
#include "ledger/store.h"

namespace gpuledger::fleet {

class PgConnection;

struct FleetFilter {
  std::optional<std::string> cluster, node;  // nullopt: all
};

// One read-only snapshot (REPEATABLE READ) over several reads, e.g. a FOCUS
// export's whole bill and then its charge periods one by one: every
// for_each_fleet_window while it lives reads in it. Ended (COMMIT) by its
// destructor, or rolled back after an error.
class FleetSnapshot {
 public:
  explicit FleetSnapshot(PgConnection& db);
  // The snapshot `shared()` of another FleetSnapshot gave, joined on db: its
  // reads see what that one's do, while that one lives.
  FleetSnapshot(PgConnection& db, const std::string& shared);
  // This snapshot's name for another connection to join (pg_export_snapshot).
  std::string shared();
  ~FleetSnapshot();
  FleetSnapshot(const FleetSnapshot&) = delete;
  FleetSnapshot& operator=(const FleetSnapshot&) = delete;

 private:
  PgConnection& db_;
};

// Windows with from <= start < to, each with WindowRecord::node "cluster/node".
// One read-only snapshot (REPEATABLE READ): windows committed meanwhile are
// not half seen.
void for_each_fleet_window(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                           const std::function<void(ledger::WindowRecord&&)>& fn);
// The same range read as few rows as the roll-ups allow (fleet_rollups.h):
// each whole UTC period no coarser than `coarsest` is one merged window per
// GPU where a roll-up matches the database's own count, cost and digest sum
// of that GPU's windows there (window_totals), else its finer periods, else
// its windows. The money is the same to the micro-unit as the windows'; what
// is coarser is the time (a merged window is taken at its start) and the
// rightsizing percentiles (hourly_rollup.h). nullopt: windows only. The
// windows come in no particular order.
// `windows_digest`, when given, receives (from the same snapshot) a SHA-256
// that names the windows the range holds, the same whatever was read: over
// the database's count, cost and digest sum of every GPU's whole periods
// (window_totals) and the digests of the windows at the range's ragged ends.
// Roll-ups are read only when the database verified them as they arrived
// (gpuledger.check_rollup: the windows' merge); a body that still cannot be
// read is skipped like one that did not check out: the finer periods are read.
// So what a verified roll-up bills (money, energy, accounts and their labels)
// is the windows' that `windows_digest` names, whichever roll-ups are read.
struct FleetReadNotes {
  int64_t refused_rollups = 0;  // in the range: not verified by the database, or unreadable; not read
  std::set<std::string> unreadable;  // the verified ones whose bodies could not be read (each counted once above)
  int64_t overlaps = 0;         // windows in the range over another window of the same GPU (gpuledger.overlaps)
  std::string first_overlap;    // the earliest, in words
};
// `whole_range_notes`, when given, is added the bodies that could not be
// read that it does not name yet (as `notes` is): a read of a part of a range
// whose notes were taken over the whole.
// `ragged`, when given (and windows_digest not), is added the windows of the
// range's ragged ends as windows_digest hashes them (windows_digest.h): from
// this read where it reads them (a GPU at a time, cut as the digest cuts
// them), else from a read of their own. windows_digest too hashes the ragged
// ends this read reads, not a second read of them.
class WindowsDigest;
void for_each_fleet_window(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                           std::optional<Period> coarsest, const std::function<void(ledger::WindowRecord&&)>& fn,
                           std::string* windows_digest = nullptr, FleetReadNotes* notes = nullptr,
                           FleetReadNotes* whole_range_notes = nullptr, WindowsDigest* ragged = nullptr);
// What names a range's windows and what its report should be told
// (for_each_fleet_window's windows_digest and notes, the same values), read
// on db in its snapshot: a second connection in the report's snapshot reads
// them while the first reads the windows (fleet/second_reader.h).
// `ragged_read_elsewhere`: the ragged ends' windows are hashed by the read on
// the first connection (for_each_fleet_window's `ragged`), so this reads the
// whole periods' totals only (`totals`, for WindowsDigest::finish) and
// leaves windows_digest empty.
struct RangeNames {
  std::string windows_digest;
  std::string totals;
  FleetReadNotes notes;
};
RangeNames read_range_names(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter,
                            bool ragged_read_elsewhere = false);
// The roll-ups whose bodies could not be read added to notes, each once.
void add_unreadable(FleetReadNotes& notes, const std::set<std::string>& unreadable);
// The notes as sentences for a report's stderr (none when there is nothing to say).
std::vector<std::string> fleet_read_warnings(const FleetReadNotes& notes);

}  // namespace gpuledger::fleet
