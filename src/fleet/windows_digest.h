#pragma once
// The bill id's digest of a fleet report's range (for_each_fleet_window's
// windows_digest): a SHA-256 over the digests of the windows at the range's
// ragged ends, in key order, then the database's count, cost and digest sum
// of every GPU's whole periods there (window_totals), so that it names the
// windows the range holds whatever the report read of them.
//
// Its two parts are read apart: the ragged ends' windows are the ones a
// report reads anyway, a GPU at a time in key order, and it hashes their
// digests as it meets them (add_window), while the totals are read before or
// beside it (whole_periods_text, on a second connection). A month to date at
// 1,000 nodes read its last 30 minutes' 240,000 windows twice before, once
// for the bill and once for this digest (docs/performance.md, "The ragged
// end's digest from the bill's own read").
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/fleet_reader.h"
#include "fleet/fleet_rows.h"

namespace gpuledger::fleet {

class PgConnection;
class PgResult;

class WindowsDigest {
 public:
  WindowsDigest();
  // A window of the ragged ends, in key order: row `row` of `r`, whose first
  // four columns are its key and whose `digest_column` is its digest.
  void add_window(const PgResult& r, int row, int digest_column);
  // The digest ("sha256:" and 64 hex digits): the whole periods' totals as
  // whole_periods_text gave them, hashed after the ragged ends' windows. Once.
  std::string finish(std::string_view totals);

 private:
  Sha256 sha_;
  std::string row_;  // reused: one window's text
};

// The ragged ends the digest hashes the windows of: the range's cut at whole
// months (plan_range), whatever period a report reads it at.
std::vector<std::pair<int64_t, int64_t>> digest_ragged_ends(int64_t from, int64_t to);

// The whole periods' totals of [from, to) in the digest's order and form.
std::string whole_periods_text(PgConnection& db, int64_t from, int64_t to, const FleetFilter& filter);

}  // namespace gpuledger::fleet
