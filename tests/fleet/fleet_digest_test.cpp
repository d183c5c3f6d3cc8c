// The fleet bill's windows digest (part of its bill id) against its
// definition, written here as PostgreSQL orders it: the whole periods'
// window_totals rows by (period_start, cluster, node, gpu_uuid) in byte order
// (the columns are COLLATE "C"), hours, then days, then months, each value
// followed by 0x1F and each row by a newline. The reader sorts a period
// start's rows itself (fleet_reader.cpp, digest_of_windows); names whose byte
// order is not their order in any language, or their order of arrival, keep
// it honest.
#include <gtest/gtest.h>

#include "fleet/fleet_reader.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/pg_connection.h"
#include "fleet/second_reader.h"
#include "fleet/windows_digest.h"
#include "fleet_db_fixture.h"
#include "fleet_windows.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;

// A query's rows hashed as the digest hashes them: each value followed by
// 0x1F, each row by a newline.
void hash_rows(fleet::Sha256& sha, fleet::PgConnection& db, const std::string& sql) {
  const fleet::PgResult r = db.query(sql);
  EXPECT_GT(r.rows(), 0) << sql;
  for (int i = 0; i < r.rows(); ++i) {
    for (int c = 0; c < r.columns(); ++c) {
      sha.add(r.view(i, c));
      sha.add("\x1f");
    }
    sha.add("\n");
  }
}

// The whole periods' totals of `where` in the digest's order.
std::string totals_in_order(const std::string& where) {
  return "SELECT t.period, t.period_start, t.cluster, t.node, t.gpu_uuid, t.windows, t.cost_micros, t.digests "
         "FROM gpuledger.window_totals t WHERE " +
         where + " ORDER BY t.period_start, t.cluster COLLATE \"C\", t.node COLLATE \"C\", t.gpu_uuid COLLATE \"C\"";
}

// The digest as the reader's one ORDER BY a period made it before it sorted
// the rows itself: here the range's whole hours (day 1's first three), then
// its whole day (day 0); no ragged end.
std::string digest_by_sql(fleet::PgConnection& db, int64_t day0) {
  fleet::Sha256 sha;
  sha.add("gpuledger fleet windows v1\n");
  const std::string hours = std::to_string(day0 + 86400) + ", " + std::to_string(day0 + 86400 + 3600) + ", " +
                            std::to_string(day0 + 86400 + 7200);
  hash_rows(sha, db, totals_in_order("t.period = 'hour' AND t.period_start IN (" + hours + ")"));
  hash_rows(sha, db, totals_in_order("t.period = 'day' AND t.period_start = " + std::to_string(day0)));
  return "sha256:" + sha.hex();
}

// Nodes, clusters and GPUs whose byte order is neither their order of
// arrival nor a language's (upper case before lower, "10" before "9", UTF-8 last).
const std::vector<std::pair<std::string, std::string>> kNodes = {{"prod", "node-b"}, {"prod", "Node-c"},
                                                                 {"prod", "node-a"}, {"Prod", "nöde"},
                                                                 {"prod", "node-9"}, {"prod", "node-10"}};
const std::vector<std::string> kGpus = {"GPU-b", "GPU-ä", "GPU-A", "gpu-0"};

// Each node's GPUs, a window each at `starts`.
void ship_windows_at(fleet::PgConnection& db, const std::vector<int64_t>& starts) {
  int64_t seed = 0;
  for (const auto& [cluster, node] : kNodes) {
    fleet::FleetSinkPostgres sink(db, {cluster, node});
    std::vector<ledger::WindowRecord> ws;
    for (const int64_t at : starts)
      for (const auto& gpu : kGpus) ws.push_back(fleet_window(at, gpu, ++seed));
    for (const auto d : sink.ship(pointers(ws))) ASSERT_EQ(d, Delivery::kStored);
  }
}

TEST_F(FleetDb, TheWindowsDigestTakesEachPeriodsTotalsInByteOrderWhateverTheNames) {
  // Day 0 (whole), and the first three hours of day 1 (whole hours), a window in each of some hours.
  ASSERT_NO_FATAL_FAILURE(
      ship_windows_at(*admin_, {kFleetDay0 + 60, kFleetDay0 + 7 * 3600 + 120, kFleetDay0 + 86400 + 180,
                                kFleetDay0 + 86400 + 3600 + 240, kFleetDay0 + 86400 + 2 * 3600 + 300}));
  const int64_t from = kFleetDay0, to = kFleetDay0 + 86400 + 3 * 3600;
  const Read whole = read(*admin_, from, to, std::nullopt);
  EXPECT_EQ(whole.records, static_cast<int>(kNodes.size() * kGpus.size() * 5));
  EXPECT_EQ(whole.windows_digest, digest_by_sql(*admin_, kFleetDay0));
}

// A range with ragged ends: the digest hashes their windows' digests in key
// order (byte order) before the whole periods' totals. A report hashes those
// windows as its own read meets them (for_each_fleet_window's `ragged`)
// instead of reading them again; on one connection, on two (the totals read
// on the second, in the first's snapshot), and with no roll-ups (the windows
// read sorted, the digest's ragged ends then read apart), it is the digest
// of its definition, here in SQL.
TEST_F(FleetDb, TheDigestsRaggedEndsHashedAsTheBillsReadMeetsThemAreItsDefinition) {
  const int64_t day1 = kFleetDay0 + 86400;
  // 23:40 to 24:00 on day 0 (ragged), day 1's 00:00-02:00 (whole hours) and
  // 02:00-02:25 (ragged), a window or two in each, and some out of the range.
  ASSERT_NO_FATAL_FAILURE(
      ship_windows_at(*admin_, {day1 - 3600 + 60, day1 - 1500, day1 - 1200 + 60, day1 - 600, day1 + 300,
                                day1 + 3600 + 120, day1 + 7200 + 60, day1 + 7200 + 1440, day1 + 7200 + 1500}));
  const int64_t from = day1 - 1200, to = day1 + 7200 + 1500;  // 23:40 to 02:25: the window at 02:25 not in it
  fleet::Sha256 sha;
  sha.add("gpuledger fleet windows v1\n");
  const std::string order =
      " ORDER BY x.cluster COLLATE \"C\", x.node COLLATE \"C\", x.gpu_uuid COLLATE \"C\", x.start_time";
  for (const auto& [a, b] : {std::pair{from, day1}, std::pair{day1 + 7200, to}})
    hash_rows(sha, *admin_,
              "SELECT x.cluster, x.node, x.gpu_uuid, x.start_time, x.digest FROM gpuledger.windows x WHERE "
              "x.start_time >= " +
                  std::to_string(a) + " AND x.start_time < " + std::to_string(b) + order);
  hash_rows(sha, *admin_,
            totals_in_order("t.period = 'hour' AND t.period_start IN (" + std::to_string(day1) + ", " +
                            std::to_string(day1 + 3600) + ")"));
  const std::string expected = "sha256:" + sha.hex();
  for (const auto coarsest : {std::optional<fleet::Period>{}, std::optional{fleet::Period::kHour},
                              std::optional{fleet::Period::kDay}, std::optional{fleet::Period::kMonth}}) {
    SCOPED_TRACE(coarsest ? report::to_string(*coarsest) : "windows only");
    const Read one = read(*admin_, from, to, coarsest);
    EXPECT_EQ(one.records, static_cast<int>(kNodes.size() * kGpus.size() * 6));
    EXPECT_EQ(one.windows_digest, expected);
    // Two connections: the totals on the second, the ragged ends hashed by the first's read.
    fleet::FleetSnapshot first(*admin_);
    fleet::FleetReadNotes notes;
    const auto second = fleet::SecondReader::open(first, pg_->conninfo(), pg_->admin_password_file(), notes);
    ASSERT_NE(second, nullptr);
    const fleet::RangeNames names = second->names(from, to, {}, true);
    EXPECT_EQ(names.windows_digest, "");
    fleet::WindowsDigest ragged;
    int records = 0;
    fleet::for_each_fleet_window(
        *admin_, from, to, {}, coarsest, [&](ledger::WindowRecord&&) { ++records; }, nullptr, nullptr, nullptr,
        &ragged);
    EXPECT_EQ(records, one.records);
    EXPECT_EQ(ragged.finish(names.totals), expected);
    EXPECT_EQ(second->names(from, to, {}).windows_digest, expected) << "the digest read on one connection alone";
  }
}

}  // namespace
}  // namespace gpuledger::testing
