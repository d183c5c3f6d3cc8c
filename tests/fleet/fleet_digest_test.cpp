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
#include "fleet_db_fixture.h"
#include "fleet_windows.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;

// The digest as the reader's one ORDER BY a period made it before it sorted
// the rows itself: here the range's whole hours (day 1's first three), then
// its whole day (day 0); no ragged end.
std::string digest_by_sql(fleet::PgConnection& db, int64_t day0) {
  fleet::Sha256 sha;
  sha.add("gpuledger fleet windows v1\n");
  const std::string hours = std::to_string(day0 + 86400) + ", " + std::to_string(day0 + 86400 + 3600) + ", " +
                            std::to_string(day0 + 86400 + 7200);
  for (const std::string& where : {"t.period = 'hour' AND t.period_start IN (" + hours + ")",
                                   "t.period = 'day' AND t.period_start = " + std::to_string(day0)}) {
    const fleet::PgResult r = db.query(
        "SELECT t.period, t.period_start, t.cluster, t.node, t.gpu_uuid, t.windows, t.cost_micros, t.digests "
        "FROM gpuledger.window_totals t WHERE " + where +
        " ORDER BY t.period_start, t.cluster COLLATE \"C\", t.node COLLATE \"C\", t.gpu_uuid COLLATE \"C\"");
    EXPECT_GT(r.rows(), 0) << where;
    for (int i = 0; i < r.rows(); ++i) {
      for (int c = 0; c < r.columns(); ++c) {
        sha.add(r.view(i, c));
        sha.add("\x1f");
      }
      sha.add("\n");
    }
  }
  return "sha256:" + sha.hex();
}

TEST_F(FleetDb, TheWindowsDigestTakesEachPeriodsTotalsInByteOrderWhateverTheNames) {
  // Nodes, clusters and GPUs whose byte order is neither their order of
  // arrival nor a language's (upper case before lower, "10" before "9", UTF-8 last).
  const std::vector<std::pair<std::string, std::string>> nodes = {
      {"prod", "node-b"}, {"prod", "Node-c"}, {"prod", "node-a"}, {"Prod", "nöde"}, {"prod", "node-9"}, {"prod", "node-10"}};
  const std::vector<std::string> gpus = {"GPU-b", "GPU-ä", "GPU-A", "gpu-0"};
  int64_t seed = 0;
  for (const auto& [cluster, node] : nodes) {
    fleet::FleetSinkPostgres sink(*admin_, {cluster, node});
    std::vector<ledger::WindowRecord> ws;
    // Day 0 (whole), and the first three hours of day 1 (whole hours), a window in each of some hours.
    for (const int64_t at : {kFleetDay0 + 60, kFleetDay0 + 7 * 3600 + 120, kFleetDay0 + 86400 + 180,
                             kFleetDay0 + 86400 + 3600 + 240, kFleetDay0 + 86400 + 2 * 3600 + 300})
      for (const auto& gpu : gpus) ws.push_back(fleet_window(at, gpu, ++seed));
    for (const auto d : sink.ship(pointers(ws))) ASSERT_EQ(d, Delivery::kStored);
  }
  const int64_t from = kFleetDay0, to = kFleetDay0 + 86400 + 3 * 3600;
  const Read whole = read(*admin_, from, to, std::nullopt);
  EXPECT_EQ(whole.records, static_cast<int>(nodes.size() * gpus.size() * 5));
  EXPECT_EQ(whole.windows_digest, digest_by_sql(*admin_, kFleetDay0));
}

}  // namespace
}  // namespace gpuledger::testing
