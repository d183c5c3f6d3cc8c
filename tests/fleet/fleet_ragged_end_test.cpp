// A range's ragged ends, and whole periods without a roll-up to read,
// against a real PostgreSQL server: their windows are read a GPU (or a span
// of one GPU's time) at a time (key_ordered_windows, lateral_windows: no sort
// of their bodies), in the key order a sort gives (byte order, COLLATE "C"),
// whatever order they were stored in and whatever their names, and the bill
// and its id are those of the same range read as windows only.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "fleet/fleet_periods.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet_db_fixture.h"
#include "ledger/store.h"
#include "report/report.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

// A window's key as the database orders it: cluster, node, GPU, start (bytes).
using Key = std::tuple<std::string, std::string, std::string, int64_t>;
Key key_of(const ledger::WindowRecord& w) {
  const ledger::WindowOrigin o = ledger::window_origin(w.node);
  return {o.cluster, o.node, w.slot.uuid, w.start};
}

// Names whose byte order is not their order of storing nor a dictionary's:
// 'B' (0x42) before 'a' (0x61), "node-10" before "node-9", "Prod" before "prod".
const std::vector<std::pair<fleet::Origin, std::vector<std::string>>> kOddlyNamedNodes = {
    {{"prod", "node-9"}, {"GPU-b", "GPU-a"}},
    {{"prod", "node-10"}, {"GPU-a", "GPU-B"}},
    {{"Prod", "node-9"}, {"GPU-b"}},
};

TEST_F(FleetDb, RaggedEndsAndSpansAreReadAGpuAtATimeInKeyOrderWhateverTheirNames) {
  const int64_t hour = kFleetDay0 + 5 * 3600;
  int64_t seed = 0;
  int windows = 0;
  for (const auto& [origin, gpus] : kOddlyNamedNodes) {
    fleet::FleetSinkPostgres sink(*admin_, origin);
    // Two hours, the later minutes stored first: the table's order is not the key's.
    for (int64_t m = 119; m >= 0; m -= 40) {
      std::vector<ledger::WindowRecord> batch;
      for (int64_t k = m; k > m - 40; --k)
        for (const auto& gpu : gpus) batch.push_back(fleet_window(hour + k * 60, gpu, ++seed));
      std::vector<const ledger::WindowRecord*> ptrs;
      for (const auto& w : batch) ptrs.push_back(&w);
      sink.ship(ptrs);
      windows += static_cast<int>(batch.size());
    }
  }
  ASSERT_EQ(windows, 5 * 120);

  // 05:10 to 06:50: no whole hour, so ragged ends only (windows), read with roll-ups allowed.
  const int64_t from = hour + 600, to = hour + 6600;
  std::vector<Key> order;
  report::ReportBuilder builder(from, to, report::GroupBy::kTeam);
  std::string digest;
  fleet::for_each_fleet_window(
      *admin_, from, to, {}, Period::kMonth,
      [&](ledger::WindowRecord&& w) {
        order.push_back(key_of(w));
        builder.add(w);
      },
      &digest);
  ASSERT_EQ(order.size(), 5u * 100);
  // Each ragged end in key order, in the order of the range's pieces.
  const auto pieces = fleet::cut_range(from, to, Period::kMonth);
  auto first = order.begin();
  for (const auto& piece : pieces) {
    ASSERT_FALSE(piece.period) << "no whole hour in the range";
    const auto last = std::find_if(first, order.end(), [&](const Key& k) { return std::get<3>(k) >= piece.end; });
    EXPECT_TRUE(std::is_sorted(first, last));
    EXPECT_TRUE(std::all_of(first, last, [&](const Key& k) { return std::get<3>(k) >= piece.start; }));
    first = last;
  }
  EXPECT_EQ(first, order.end());
  // The first piece's GPUs, in the order they came.
  std::vector<std::string> gpus;
  for (auto k = order.begin(); k != order.end() && std::get<3>(*k) < pieces.front().end; ++k) {
    const std::string gpu = std::get<0>(*k) + "/" + std::get<1>(*k) + "/" + std::get<2>(*k);
    if (gpus.empty() || gpus.back() != gpu) gpus.push_back(gpu);
  }
  EXPECT_EQ(gpus, (std::vector<std::string>{"Prod/node-9/GPU-b", "prod/node-10/GPU-B", "prod/node-10/GPU-a",
                                            "prod/node-9/GPU-a", "prod/node-9/GPU-b"}));

  // The same bill and id as the range read as windows only (sorted by the server).
  const report::Report bill = builder.finish();
  const Read windows_only = read(*admin_, from, to, std::nullopt);
  EXPECT_EQ(bill.total.cost_total_micros(), windows_only.total);
  EXPECT_EQ(digest, windows_only.windows_digest);
  EXPECT_EQ(windows_only.records, 5 * 100);

  // Whole hours without roll-ups: each GPU's hours are a span read as its
  // windows, a span at a time, in key order (not in the order the hours
  // were met), the same bill as the windows'.
  std::vector<Key> spans;
  report::ReportBuilder by_spans(hour, hour + 7200, report::GroupBy::kTeam);
  fleet::for_each_fleet_window(*admin_, hour, hour + 7200, {}, Period::kHour, [&](ledger::WindowRecord&& w) {
    spans.push_back(key_of(w));
    by_spans.add(w);
  });
  ASSERT_EQ(spans.size(), 5u * 120);
  EXPECT_TRUE(std::is_sorted(spans.begin(), spans.end()));
  EXPECT_EQ(by_spans.finish().total.cost_total_micros(), read(*admin_, hour, hour + 7200, std::nullopt).total);

  // A filter picks its node's GPUs only, in the same order.
  std::vector<Key> one;
  fleet::for_each_fleet_window(*admin_, from, to, {std::string("prod"), std::string("node-10")}, Period::kMonth,
                               [&](ledger::WindowRecord&& w) { one.push_back(key_of(w)); });
  ASSERT_EQ(one.size(), 2u * 100);
  EXPECT_TRUE(std::is_sorted(one.begin(), one.begin() + 100));
  EXPECT_EQ(std::get<2>(one.front()), "GPU-B");
}

// Whole hours read at their roll-ups: each GPU's hours by the roll-ups'
// index a GPU at a time (key_ordered_rollups), merged with the totals in the
// key order a sort gives whatever the names; a GPU-hour whose roll-up went
// stale (a window shipped after it) and an hour without roll-ups are read
// as windows; the same bill and id as the windows only.
TEST_F(FleetDb, WholeHoursRollUpsAreReadAGpuAtATimeInKeyOrderWhateverTheirNames) {
  const int64_t hour = kFleetDay0 + 5 * 3600;
  int64_t seed = 0;
  ledger::WindowRecord late;  // prod/node-10's GPU-B at 05:30, shipped after its hour's roll-up
  for (const auto& [origin, gpus] : kOddlyNamedNodes) {
    fleet::FleetSinkPostgres sink(*admin_, origin);
    ledger::Store store((scratch_ / (origin.cluster + "-" + origin.node + ".db")).string());
    std::vector<ledger::WindowRecord> ws;
    for (int64_t m = 0; m < 180; ++m)  // 05:00 to 08:00
      for (const auto& gpu : gpus) {
        ledger::WindowRecord w = fleet_window(hour + m * 60, gpu, ++seed);
        if (origin.node == "node-10" && gpu == "GPU-B" && m == 30)
          late = w;
        else
          ws.push_back(std::move(w));
      }
    store.insert_windows(ws);
    ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
    for (int64_t h = hour; h < hour + 2 * 3600; h += 3600)  // 07:00 is left without roll-ups
      ASSERT_EQ(sink.ship_rollups(fleet::build_rollups(store, origin, Period::kHour, h)),
                std::vector<Delivery>(gpus.size(), Delivery::kStored));
    if (origin.node == "node-10") ASSERT_EQ(sink.ship({&late}), std::vector<Delivery>{Delivery::kStored});
  }

  std::vector<std::pair<Key, int64_t>> met;  // each record's key and length
  fleet::for_each_fleet_window(*admin_, hour, hour + 3 * 3600, {}, Period::kHour,
                               [&](ledger::WindowRecord&& w) { met.emplace_back(key_of(w), w.end - w.start); });
  // The 9 current roll-ups first, in key order; then the spans' windows: the
  // stale hour's 60 and every GPU's 07:00.
  ASSERT_EQ(met.size(), 9u + 60u + 5u * 60u);
  std::vector<Key> rollups;
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(met[i].second, 3600);
    rollups.push_back(met[i].first);
  }
  EXPECT_TRUE(std::is_sorted(rollups.begin(), rollups.end()));
  EXPECT_EQ(rollups.front(), (Key{"Prod", "node-9", "GPU-b", hour}));
  EXPECT_EQ(rollups[1], (Key{"Prod", "node-9", "GPU-b", hour + 3600}));
  EXPECT_EQ(rollups[2], (Key{"prod", "node-10", "GPU-B", hour + 3600})) << "its 05:00 went stale";
  EXPECT_TRUE(std::all_of(met.begin() + 9, met.end(), [](const auto& m) { return m.second == 60; }));
  expect_same_bill(read(*admin_, hour, hour + 3 * 3600, Period::kHour),
                   read(*admin_, hour, hour + 3 * 3600, std::nullopt));
  // Days allowed: no whole day in the range, the same reads.
  EXPECT_EQ(read(*admin_, hour, hour + 3 * 3600, Period::kDay).records, 9 + 60 + 5 * 60);
}

}  // namespace
}  // namespace gpuledger::testing
