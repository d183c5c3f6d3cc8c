// The fleet's roll-ups against a real PostgreSQL server: the database counts
// every window it commits (window_totals), an agent's roll-ups of closed
// hours and days follow its windows, and a report reads a roll-up only while
// it matches those counts: a late window, a forged roll-up or a missing one
// make the report read finer rows, never a different bill.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

#include "common/error.h"
#include "fleet/fleet_periods.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_shipper.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "ledger/hourly_rollup.h"
#include "ledger/outbox.h"
#include "metrics/prometheus_text.h"
#include "report/report.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

constexpr int64_t kDay0 = kFleetDay0;  // 2027-01-15T00:00:00Z

TEST(FleetPeriods, ARangeIsCutIntoTheFewestWholePeriods) {
  const int64_t jan = 1798761600;  // 2027-01-01T00:00:00Z
  const int64_t feb = 1801440000, mar = 1803859200;
  auto pieces = fleet::cut_range(jan - 1800, mar + 86400 + 3600 + 120, Period::kMonth);
  ASSERT_EQ(pieces.size(), 6u);
  EXPECT_FALSE(pieces[0].period);  // the half hour before January: windows
  EXPECT_EQ(pieces[0].end, jan);
  EXPECT_EQ(pieces[1].period, Period::kMonth);
  EXPECT_EQ(pieces[2].period, Period::kMonth);
  EXPECT_EQ(pieces[2].start, feb);
  EXPECT_EQ(pieces[3].period, Period::kDay);
  EXPECT_EQ(pieces[4].period, Period::kHour);
  EXPECT_FALSE(pieces[5].period);
  EXPECT_EQ(pieces[5].end - pieces[5].start, 120);
  EXPECT_EQ(fleet::cut_range(jan, feb, std::nullopt).size(), 1u);
  EXPECT_EQ(fleet::cut_range(jan, feb, Period::kDay).size(), 31u);
  EXPECT_EQ(report::period_end(feb, Period::kMonth), mar);
  EXPECT_EQ(report::period_start(mar - 1, Period::kMonth), feb);
}

TEST(FleetRollupBody, AMergedWindowReadsBackExactly) {
  auto ws = two_gpus();
  std::vector<ledger::WindowRecord> a;
  for (const auto& w : ws)
    if (w.slot.uuid == "GPU-a" && w.start < kDay0 + 23 * 3600) a.push_back(w);
  auto merged = ledger::merge_windows(a);
  merged.accounts[0].efficiency.sm_active = 0.1 + 0.2;  // not a short decimal
  merged.slot.mig_profile = "3g.40gb";
  EXPECT_EQ(fleet::window_from_json(fleet::window_to_json(merged)), merged);
  merged.energy.reset();
  EXPECT_EQ(fleet::window_from_json(fleet::window_to_json(merged)), merged);
  EXPECT_THROW(fleet::window_from_json("{\"start\": 1}"), Error);
}

// A shipper keeps its hours' and days' merges for the day and month that take
// them (RollupMemo, in the store): every roll-up is the one merged from the
// store, bodies, counts and digest sums, a slot that cannot be merged (a pod
// relabelled) too.
TEST(FleetRollups, AMemoOfHoursAndDaysMakesTheRollUpsTheStoreWould) {
  char tmpl[] = "/tmp/gl_memo_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    auto ws = two_gpus();
    const int64_t day1 = kDay0 + 86400;
    for (auto& w : ws)
      if (w.slot.uuid == "GPU-b" && w.start >= day1 + 10 * 3600 + 1800) w.accounts[1].labels.team = "speech";
    ledger::Store store(dir + "/ledger.db");
    store.insert_windows(ws);
    const fleet::Origin origin{"prod", "node-1"};
    auto text = [](const std::vector<fleet::Rollup>& rs) {
      std::string out;
      for (const auto& r : rs)
        out += r.window.slot.uuid + " " + std::to_string(r.period_start) + " " + std::to_string(r.windows) + " " +
               fleet::decimal(r.digests) + " " + fleet::window_to_json(r.window) + "\n";
      return out;
    };
    fleet::RollupMemo memo(store, origin);
    for (int64_t h = kDay0 + 22 * 3600; h < day1 + 86400; h += 3600) {
      const auto kept = fleet::build_rollups(store, origin, Period::kHour, h, &memo);
      EXPECT_EQ(text(kept), text(fleet::build_rollups(store, origin, Period::kHour, h)));
      EXPECT_EQ(kept.size(), h == day1 + 10 * 3600 ? 1u : 2u);  // GPU-b's relabelled hour has none
    }
    EXPECT_EQ(memo.size(), 26u);
    EXPECT_EQ(fleet::RollupMemo(store, origin).size(), 26u) << "kept in the store: an agent restarted finds them";
    EXPECT_FALSE(fleet::RollupMemo(store, {"prod", "node-2"}).find(Period::kHour, day1))
        << "another node name's digests are another's";
    const int64_t month = report::period_start(kDay0, Period::kMonth);
    const std::string day0 = text(fleet::build_rollups(store, origin, Period::kDay, kDay0)),
                      day = text(fleet::build_rollups(store, origin, Period::kDay, day1)),
                      months = text(fleet::build_rollups(store, origin, Period::kMonth, month));
    // The store's own hourly roll-up: days 0 and 1 are one window an hour
    // there now; what was kept is what the minute windows made.
    EXPECT_EQ(store.roll_up_before(kDay0 + 2 * 86400), 2 * 26 * 59);
    EXPECT_EQ(text(fleet::build_rollups(store, origin, Period::kDay, kDay0, &memo)), day0);
    const auto kept_day = fleet::build_rollups(store, origin, Period::kDay, day1, &memo);
    EXPECT_EQ(memo.size(), 26u + 2) << "the hours kept until their days are committed";
    memo.release(Period::kDay, kDay0);
    memo.release(Period::kDay, day1);
    EXPECT_EQ(memo.size(), 2u);     // the days
    ASSERT_EQ(kept_day.size(), 1u);  // GPU-a's: GPU-b's day has the relabelled pod
    EXPECT_EQ(kept_day[0].windows, 1440);
    EXPECT_EQ(text(kept_day), day);
    const auto kept_month = fleet::build_rollups(store, origin, Period::kMonth, month, &memo);
    EXPECT_EQ(text(fleet::build_rollups(store, origin, Period::kMonth, month, &memo)), months) << "built again";
    memo.release(Period::kMonth, month);
    EXPECT_EQ(memo.size(), 0u);  // a month is kept for nothing
    ASSERT_EQ(kept_month.size(), 1u);
    EXPECT_EQ(kept_month[0].windows, static_cast<int64_t>(ws.size() / 2));
    EXPECT_EQ(text(kept_month), months);
    // A window late into day 2's 01:00: that hour is forgotten, 00:00 is kept.
    const int64_t day2 = kDay0 + 2 * 86400;
    fleet::build_rollups(store, origin, Period::kHour, day2, &memo);
    fleet::build_rollups(store, origin, Period::kHour, day2 + 3600, &memo);
    memo.forget_from(day2 + 3600 + 30);
    EXPECT_EQ(memo.size(), 1u);
    EXPECT_FALSE(memo.find(Period::kHour, day2 + 3600));
    EXPECT_TRUE(memo.find(Period::kHour, day2));
  }
  std::filesystem::remove_all(dir);
}

// Roll-ups as text: slot, windows, digest sum and merged body each.
std::string text(const std::vector<fleet::Rollup>& rs) {
  std::string out;
  for (const auto& r : rs)
    out += r.window.slot.uuid + " " + std::to_string(r.windows) + " " + fleet::decimal(r.digests) + " " +
           fleet::window_to_json(r.window) + "\n";
  return out;
}

// A shipper keeps the digest parts of the windows it shipped for their
// hours' roll-ups (ShippedDigests): the same roll-ups as hashing the store's
// windows again, each part taken once, and none taken for a row that is no
// longer the window it was kept for.
TEST(FleetRollups, TheDigestsOfShippedWindowsMakeTheRollUpsTheStoreWould) {
  const fleet::Origin origin{"prod", "node-1"};
  auto w = fleet_window(kDay0, "GPU-a");
  fleet::ShippedDigests kept;
  kept.keep(7, w, 42);
  EXPECT_EQ(kept.take(7, w), std::optional<uint64_t>(42));
  EXPECT_EQ(kept.take(7, w), std::nullopt) << "taken once";
  using Change = void (*)(ledger::WindowRecord&);
  for (Change changed : {Change([](ledger::WindowRecord& x) { x.end += 3540; }),  // merged into its hour
                         Change([](ledger::WindowRecord& x) { x.start += 60; }),
                         Change([](ledger::WindowRecord& x) { x.slot.uuid = "GPU-b"; })}) {
    kept.keep(7, w, 42);
    auto other = w;
    changed(other);
    EXPECT_EQ(kept.take(7, other), std::nullopt);
    EXPECT_EQ(kept.size(), 0u);
  }
  for (int64_t id = 0; id <= static_cast<int64_t>(fleet::ShippedDigests::kMaxEntries); ++id) kept.keep(id, w, 1);
  EXPECT_EQ(kept.size(), 1u) << "past its bound it starts again from empty";

  char tmpl[] = "/tmp/gl_shipped_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    ledger::Store store(dir + "/ledger.db");
    store.insert_windows(two_gpus());
    fleet::ShippedDigests shipped;
    const int64_t h0 = kDay0 + 22 * 3600;  // the windows' first hour
    int64_t poisoned = -1;
    for (const auto& [id, x] : store.windows_with_ids(h0, h0 + 2 * 3600)) {
      const uint64_t part = fleet::digest_part(fleet::to_window_row(origin, x).digest);
      const bool poison = poisoned < 0 && x.start >= h0 + 3600;  // one part of 23:00 made up
      if (poison) poisoned = id;
      shipped.keep(id, x, poison ? part + 1 : part);
    }
    ASSERT_GE(poisoned, 0);
    EXPECT_EQ(shipped.size(), 2u * 2 * 60);
    const std::string hour0 = text(fleet::build_rollups(store, origin, Period::kHour, h0));
    EXPECT_EQ(text(fleet::build_rollups(store, origin, Period::kHour, h0, nullptr, &shipped)), hour0);
    EXPECT_EQ(shipped.size(), 2u * 60) << "22:00's parts taken";
    // The made-up part is what 23:00's roll-up sums: the kept parts are used, not hashed again.
    const auto from_store = fleet::build_rollups(store, origin, Period::kHour, h0 + 3600);
    const auto from_kept = fleet::build_rollups(store, origin, Period::kHour, h0 + 3600, nullptr, &shipped);
    ASSERT_EQ(from_kept.size(), 2u);
    EXPECT_EQ(from_kept[0].digests + from_kept[1].digests, from_store[0].digests + from_store[1].digests + 1);
    EXPECT_EQ(shipped.size(), 0u);
  }
  std::filesystem::remove_all(dir);
}

// A shipper's round merges the hours its batch completed from the batch's
// windows (ShippedBatch) where it holds every window the store lists for the
// hour, as stored: the roll-ups the store's windows make. Otherwise the hour
// is read from the store, and none of the batch's windows is taken.
TEST(FleetRollups, AnHourWhollyInTheShippedBatchIsMergedFromItAsTheStoreWould) {
  const fleet::Origin origin{"prod", "node-1"};
  char tmpl[] = "/tmp/gl_batch_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    ledger::Store store(dir + "/ledger.db");
    store.insert_windows(two_gpus());
    auto pending = [&](int64_t from, int64_t to) {
      std::vector<ledger::Outbox::Pending> out;
      for (auto& [id, w] : store.windows_with_ids(from, to)) out.push_back({id, std::move(w)});
      return out;
    };
    auto hour = [&](int64_t start, fleet::ShippedBatch* batch) {
      return text(fleet::build_rollups(store, origin, Period::kHour, start, nullptr, nullptr, batch));
    };
    const int64_t h0 = kDay0 + 22 * 3600, h1 = h0 + 3600;  // the windows' first two hours
    const std::string hour0 = hour(h0, nullptr), hour1 = hour(h1, nullptr);
    ASSERT_EQ(std::count(hour0.begin(), hour0.end(), '\n'), 2);
    fleet::ShippedBatch batch;
    batch.hold(pending(h0, h1 + 1800));  // 22:00 whole, 23:00's first half
    EXPECT_EQ(hour(h0, &batch), hour0);
    EXPECT_EQ(hour(h1, &batch), hour1) << "read from the store";
    auto rest = pending(h1, h1 + 3600);
    ASSERT_EQ(rest.size(), 2u * 60);
    auto first_half = batch.take(store.window_keys(h1, h1 + 1800));
    ASSERT_TRUE(first_half) << "23:00's first half was not taken";
    EXPECT_EQ(first_half->size(), 2u * 30);
    EXPECT_FALSE(batch.take(store.window_keys(h1, h1 + 1800))) << "taken once";

    // The batch's windows are what is merged: one made different shows.
    auto changed = pending(h0, h1);
    changed[0].window.accounts[0].launches += 1;
    batch.hold(std::move(changed));
    EXPECT_NE(hour(h0, &batch), hour0);
    // A row that no longer holds the window shipped (the store merged it into
    // its hour since): the hour is read from the store.
    auto merged_since = pending(h0, h1);
    merged_since[5].window.end += 60;
    batch.hold(std::move(merged_since));
    EXPECT_EQ(hour(h0, &batch), hour0);

    // An hour two batches split: its first half left by the last round's
    // roll-ups, its second half this round's. Merged from both (a first half
    // made different shows), once; left over for one round only.
    auto split = [&](int64_t launches) {
      auto first = pending(h1, h1 + 1800);
      for (auto& p : first) p.window.accounts[0].launches += launches;
      batch.hold(std::move(first));
      EXPECT_EQ(hour(h0, &batch), hour0) << "no window of 22:00 held: read from the store";
    };
    split(1);
    batch.hold(pending(h1 + 1800, h1 + 3600));
    EXPECT_NE(hour(h1, &batch), hour1) << "the first half from the last round's batch";
    EXPECT_FALSE(batch.take(store.window_keys(h1, h1 + 1800))) << "taken once";
    split(0);
    batch.hold(pending(h1 + 1800, h1 + 3600));
    EXPECT_EQ(hour(h1, &batch), hour1);
    split(1);
    batch.hold({});
    batch.hold(pending(h1 + 1800, h1 + 3600));
    EXPECT_EQ(hour(h1, &batch), hour1) << "a leftover of two rounds ago is not held: read from the store";
  }
  std::filesystem::remove_all(dir);
}

// The agent merges its own windows older than rollup_after_hours (24 h by
// default) into one window an hour. A month merged from the store at its end
// then named those hourly windows, not the minute windows the database holds,
// and the database refused it. Merged from the days the shipper kept (an
// agent restarted in between: they are in the store), it is verified.
TEST_F(FleetDb, AMonthIsMergedFromTheDaysItsShipperKeptWhileTheStoreMergedTheirHours) {
  const int64_t jan = 1798761600, feb = 1801440000;
  const fleet::Origin origin{"prod", "node-1"};
  fleet::FleetSinkPostgres sink(*admin_, origin);
  ledger::Store store((scratch_ / "ledger.db").string());
  std::vector<ledger::WindowRecord> ws;  // January's last two days, and February's first ten minutes
  for (int64_t t = feb - 2 * 86400; t < feb + 600; t += 60)
    for (const char* gpu : {"GPU-a", "GPU-b"}) ws.push_back(fleet_window(t, gpu, t % 89));
  store.insert_windows(ws);
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  {
    fleet::RollupMemo memo(store, origin);
    for (int64_t h = feb - 2 * 86400; h < feb; h += 3600)
      ASSERT_EQ(sink.ship_rollups(fleet::build_rollups(store, origin, Period::kHour, h, &memo)),
                std::vector<Delivery>(2, Delivery::kStored));
    for (int64_t d = feb - 2 * 86400; d < feb; d += 86400) {
      ASSERT_EQ(sink.ship_rollups(fleet::build_rollups(store, origin, Period::kDay, d, &memo)),
                std::vector<Delivery>(2, Delivery::kStored));
      memo.release(Period::kDay, d);  // as the shipper does once they are committed
    }
  }
  EXPECT_EQ(store.roll_up_before(feb), 2 * 2 * 24 * 59) << "each hour's 60 windows now one";
  auto from_store = fleet::build_rollups(store, origin, Period::kMonth, jan);
  ASSERT_EQ(from_store.size(), 2u);
  EXPECT_EQ(from_store[0].windows, 48) << "the store's hourly windows";
  fleet::RollupMemo restarted(store, origin);
  EXPECT_EQ(restarted.size(), 2u);  // the two days
  const auto months = fleet::build_rollups(store, origin, Period::kMonth, jan, &restarted);
  ASSERT_EQ(months.size(), 2u);
  EXPECT_EQ(months[0].windows, 2 * 1440);
  EXPECT_EQ(sink.ship_rollups(months), std::vector<Delivery>(2, Delivery::kStored));
  restarted.release(Period::kMonth, jan);
  EXPECT_EQ(restarted.size(), 0u);
  EXPECT_EQ(pg_->psql("SELECT period, count(*) FROM gpuledger.rollups WHERE verified GROUP BY 1 ORDER BY 1"),
            "day|4\nhour|96\nmonth|2\n");
  // The month read at its roll-ups is the bill of its windows.
  expect_same_bill(read(*admin_, jan, feb, Period::kMonth), read(*admin_, jan, feb, std::nullopt));
  EXPECT_EQ(read(*admin_, jan, feb, Period::kMonth).records, 2);
  // What the store alone gives is refused, and read no further.
  from_store[0].windows = months[0].windows + 1;  // another key than the verified month's
  EXPECT_EQ(sink.ship_rollups({from_store[0]}), std::vector<Delivery>{Delivery::kUnverified});
}

TEST_F(FleetDb, TheDatabaseCountsEveryWindowItCommitsByHourDayAndMonth) {
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  const auto ws = two_gpus();
  for (size_t i = 0; i < ws.size(); i += 500) {
    std::vector<ledger::WindowRecord> part(ws.begin() + i, ws.begin() + std::min(ws.size(), i + 500));
    sink.ship(pointers(part));
  }
  sink.ship(pointers(ws));  // all resent: counted once
  const std::string windows = pg_->psql(
      "SELECT count(*) || ' ' || sum(cost_micros) || ' ' || sum(gpuledger.digest_part(digest)) FROM gpuledger.windows");
  for (const char* period : {"hour", "day", "month"})
    EXPECT_EQ(pg_->psql(std::string("SELECT sum(windows) || ' ' || sum(cost_micros) || ' ' || sum(digests) FROM "
                                     "gpuledger.window_totals WHERE period = '") + period + "'"),
              windows)
        << period;
  // The agent's sum of the same digests (fleet_rows.h) is the database's.
  unsigned __int128 sum = 0;
  for (const auto& w : ws) sum += fleet::digest_part(fleet::to_rows({"prod", "node-1"}, w).digest);
  EXPECT_EQ(pg_->psql("SELECT sum(digests) FROM gpuledger.window_totals WHERE period = 'month'"),
            fleet::decimal(sum) + "\n");
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.window_totals WHERE period = 'hour'"), "56\n");  // 28 h x 2
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.window_totals WHERE period = 'day'"), "6\n");
  EXPECT_EQ(pg_->psql("SELECT windows FROM gpuledger.window_totals WHERE period = 'day' AND gpu_uuid = 'GPU-a' "
                      "AND period_start = " + std::to_string(kDay0 + 86400)),
            "1440\n");
}

TEST_F(FleetDb, AnUpgradeFromSchemaOneCountsTheWindowsAlreadyThere) {
  pg_->psql("CREATE DATABASE upgrade");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "upgrade"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 1), 1);
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  const auto ws = two_gpus();
  std::vector<ledger::WindowRecord> part(ws.begin(), ws.begin() + 300);
  sink.ship(pointers(part));
  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  EXPECT_EQ(db.query("SELECT sum(windows) FROM gpuledger.window_totals WHERE period = 'day'").text(0, 0), "300");
  std::vector<ledger::WindowRecord> more(ws.begin() + 300, ws.begin() + 400);
  fleet::FleetSinkPostgres upgraded(db, {"prod", "node-1"});  // an agent of the new schema
  upgraded.ship(pointers(more));
  EXPECT_EQ(db.query("SELECT sum(windows) FROM gpuledger.window_totals WHERE period = 'month'").text(0, 0), "400");
}

// The agent's shipper sends roll-ups of the hours and days it completed; the
// report reads them where they match, and the bill is the same to the micro-unit.
TEST_F(FleetDb, AReportReadsRollUpsOnlyWhileTheyMatchAndTheBillNeverChanges) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  store.insert_windows(two_gpus());
  fleet::FleetShipperOptions o;
  o.conninfo = pg_->conninfo();
  o.password_file = pg_->admin_password_file();
  o.store_path = path;
  o.origin = {"prod", "node-1"};
  o.interval = std::chrono::milliseconds(50);
  auto run_shipper = [&](int64_t rollups) {
    fleet::FleetShipper shipper(o);
    shipper.start();
    EXPECT_TRUE(eventually([&] { return shipper.status().pending == 0 && count("rollups") == rollups; },
                           std::chrono::seconds(60)))
        << shipper.status().reason << "; roll-ups: " << count("rollups");
    shipper.stop();
    metrics::ExpositionWriter out;
    shipper.write_metrics(out);
    return out.text();
  };
  // Complete: hours 22:00 of day 0 to 00:00 of day 2 (27 a GPU), days 0 and 1; not 01:00 of day 2 (its last
  // window is the latest stored), nor January.
  const std::string page = run_shipper(2 * 27 + 2 * 2);
  EXPECT_NE(page.find("gpuledger_fleet_db_shipped_rollups_total{period=\"hour\"} 54\n"), std::string::npos) << page;
  EXPECT_NE(page.find("gpuledger_fleet_db_shipped_rollups_total{period=\"day\"} 4\n"), std::string::npos) << page;
  EXPECT_NE(page.find("gpuledger_fleet_db_shipped_rollups_total{period=\"month\"} 0\n"), std::string::npos) << page;
  EXPECT_EQ(pg_->psql("SELECT period, count(*) FROM gpuledger.rollups GROUP BY 1 ORDER BY 1"), "day|4\nhour|54\n");

  const int64_t from = kDay0, to = kDay0 + 3 * 86400;
  const Read windows = read(*admin_, from, to, std::nullopt);
  EXPECT_EQ(windows.records, static_cast<int>(two_gpus().size()));
  // Days 0 and 1 as one row a GPU; day 2: hour 00 as one row, then 01:00-01:30 as windows.
  const Read days = read(*admin_, from, to, Period::kMonth);
  EXPECT_EQ(days.records, 2 * 2 + 2 * 1 + 2 * 30);
  expect_same_bill(days, windows);
  const Read hours = read(*admin_, from, to, Period::kHour);
  EXPECT_EQ(hours.records, 2 * 27 + 2 * 30);
  expect_same_bill(hours, windows);
  // A ragged range: windows at both ends, hours between.
  const Read ragged = read(*admin_, kDay0 + 22 * 3600 + 600, kDay0 + 86400 + 3 * 3600 + 60, Period::kDay);
  expect_same_bill(ragged, read(*admin_, kDay0 + 22 * 3600 + 600, kDay0 + 86400 + 3 * 3600 + 60, std::nullopt));
  EXPECT_EQ(ragged.records, 2 * 50 + 2 * 1 + 2 * 3 + 2 * 1);  // 22:10-23:00, 23:00, day 1 00-03 hours, 03:00-03:01

  // A late window into day 1's 05:00 (shipped by the sink, the roll-ups not yet sent again):
  // that hour and that day are stale, read finer, and the bill still equals the windows'.
  auto late = fleet_window(kDay0 + 86400 + 5 * 3600 + 30, "GPU-a", 5);
  store.insert_window(late);
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  ASSERT_EQ(sink.ship({&late}), std::vector<Delivery>{Delivery::kStored});
  const Read after = read(*admin_, from, to, std::nullopt);
  EXPECT_EQ(after.total, windows.total + late.cost_micros);
  EXPECT_NE(after.windows_digest, windows.windows_digest) << "another set of windows, another bill";
  const Read stale = read(*admin_, from, to, Period::kMonth);
  expect_same_bill(stale, after);
  EXPECT_EQ(stale.records, days.records - 1 + 23 + 61) << "GPU-a's day 1: 23 hour roll-ups and 05:00's 61 windows";

  // The shipper sends the late window again (a duplicate), then that hour's and day's roll-ups.
  run_shipper(2 * 27 + 2 * 2 + 2);
  const Read rolled = read(*admin_, from, to, Period::kMonth);
  EXPECT_EQ(rolled.records, days.records);
  expect_same_bill(rolled, after);

  // A forged roll-up: the right count and cost, not the windows' digests. Ignored.
  auto forged = ledger::merge_windows({fleet_window(kDay0 + 2 * 86400 + 3600, "GPU-b")});
  const std::string hour = std::to_string(kDay0 + 2 * 86400 + 3600);
  const std::string cost = pg_->psql("SELECT cost_micros FROM gpuledger.window_totals WHERE period = 'hour' AND "
                                     "gpu_uuid = 'GPU-b' AND period_start = " + hour);
  forged.cost_micros = forged.busy_micros = std::stoll(cost);
  forged.idle_micros = forged.memory_micros = 0;
  pg_->psql("INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, "
            "digests, digest, body) VALUES ('hour', " + hour + ", 'prod', 'node-1', 'GPU-b', 30, " + cost.substr(0, cost.size() - 1) +
            ", 0, 'x', '" + fleet::window_to_json(forged) + "')");
  EXPECT_EQ(count("rollups"), 2 * 27 + 2 * 2 + 2 + 1);
  const Read still = read(*admin_, from, to, Period::kMonth);
  EXPECT_EQ(still.records, days.records);
  expect_same_bill(still, after);
}

// A running shipper keeps the hours it rolled up for their day (RollupMemo).
// A window that comes late into one of those hours has that hour rolled up
// again and the day merged with it: every roll-up the database verifies, none
// refused, and the bill read at days is the windows'.
TEST_F(FleetDb, AShipperThatKeptItsHoursRollsUpALateWindowsHourAndDayAgain) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  store.insert_windows(two_gpus());
  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(), pg_->admin_password_file(), path, {"prod", "node-1"}));
  shipper.start();
  auto settled = [&](int64_t rollups) {
    return eventually([&] { return shipper.status().pending == 0 && count("rollups") == rollups; },
                      std::chrono::seconds(60));
  };
  ASSERT_TRUE(settled(2 * 27 + 2 * 2)) << shipper.status().reason << "; roll-ups: " << count("rollups");
  // Day 2's 00:00 is rolled up and kept for day 2, which is not complete. A
  // late window into it, then the rest of day 2 and half an hour of day 3.
  const int64_t day2 = kDay0 + 2 * 86400;
  store.insert_window(fleet_window(day2 + 30, "GPU-a", 5));
  std::vector<ledger::WindowRecord> rest;
  for (int64_t t = day2 + 5400; t < day2 + 86400 + 1800; t += 60)
    for (const char* gpu : {"GPU-a", "GPU-b"}) rest.push_back(fleet_window(t, gpu, (t / 60) % 97));
  store.insert_windows(rest);
  // Day 2's hours 01-23 of both GPUs, GPU-a's 00:00 again (61 windows: a new roll-up; GPU-b's is the same), day 2.
  EXPECT_TRUE(settled(2 * 27 + 2 * 2 + 2 * 23 + 1 + 2)) << shipper.status().reason << "; roll-ups: " << count("rollups");
  shipper.stop();
  metrics::ExpositionWriter out;
  shipper.write_metrics(out);
  EXPECT_NE(out.text().find("gpuledger_fleet_db_errors_total{reason=\"rollup\"} 0\n"), std::string::npos) << out.text();
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE NOT verified"), "0\n");
  EXPECT_EQ(pg_->psql("SELECT windows FROM gpuledger.rollups WHERE period = 'day' AND gpu_uuid = 'GPU-a' AND "
                      "period_start = " + std::to_string(day2)),
            "1441\n");
  const Read windows = read(*admin_, kDay0, day2 + 86400 + 1800, std::nullopt);
  const Read days = read(*admin_, kDay0, day2 + 86400 + 1800, Period::kMonth);
  EXPECT_EQ(days.records, 2 * 3 + 2 * 30);  // days 0, 1 and 2 a GPU, then day 3's half hour of windows
  expect_same_bill(days, windows);
}

// A backlog's hours are rolled up as the batches that complete them ship,
// while their windows' digest parts are still kept (ShippedDigests), not
// once the whole backlog is in: a month's backlog shipped first had most of
// them hashed again. Hour 0's roll-ups are committed before hour 2's windows.
TEST_F(FleetDb, ABacklogsHoursAreRolledUpAsTheBatchesThatCompleteThemShip) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  std::vector<ledger::WindowRecord> ws;
  for (int64_t t = kDay0; t < kDay0 + 3 * 3600; t += 60)
    for (const char* gpu : {"GPU-a", "GPU-b"}) ws.push_back(fleet_window(t, gpu, (t / 60) % 97));
  store.insert_windows(ws);
  auto o = shipper_options(pg_->conninfo(), pg_->admin_password_file(), path, {"prod", "node-1"});
  o.batch_windows = o.max_batch_windows = 120;  // an hour of both GPUs a round
  fleet::FleetShipper shipper(o);
  shipper.start();
  // Hours 0 and 1 of each GPU; hour 2 ends after the store's last window.
  ASSERT_TRUE(
      eventually([&] { return shipper.status().pending == 0 && count("rollups") == 4; }, std::chrono::seconds(60)))
      << shipper.status().reason << "; roll-ups: " << count("rollups");
  shipper.stop();
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE period = 'hour' AND period_start = " +
                      std::to_string(kDay0) +
                      " AND verified AND shipped_at < (SELECT min(shipped_at) FROM "
                      "gpuledger.windows WHERE start_time >= " +
                      std::to_string(kDay0 + 7200) + ")"),
            "2\n");
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE NOT verified"), "0\n");
  const Read windows = read(*admin_, kDay0, kDay0 + 3 * 3600, std::nullopt);
  const Read hours = read(*admin_, kDay0, kDay0 + 3 * 3600, Period::kMonth);
  EXPECT_EQ(hours.records, 2 * 2 + 2 * 60);  // hours 0 and 1 a GPU, then hour 2's windows
  expect_same_bill(hours, windows);
}

// A pod relabelled to another team within a period: one merged account would
// carry only its last labels, so a report by team read at that roll-up would
// bill the whole period to the new team. The agent makes no roll-up of a
// period where an account's labels changed, the database refuses one that
// claims it (schema 6), and each team pays for its own time, to the micro-unit.
TEST_F(FleetDb, AnAccountRelabelledWithinAPeriodIsReadFinerAndEachTeamPaysForItsOwnTime) {
  auto ws = two_gpus();
  const int64_t change = kDay0 + 86400 + 5 * 3600 + 1800;  // day 1, 05:30
  for (auto& w : ws)
    if (w.start >= change) w.accounts[1].labels.team = "speech";
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  store.insert_windows(ws);
  {
    fleet::FleetShipper shipper(shipper_options(pg_->conninfo(), pg_->admin_password_file(), path, {"prod", "node-1"}));
    shipper.start();
    // 27 hours and 2 days a GPU, less day 1's 05:00 and day 1.
    ASSERT_TRUE(eventually([&] { return shipper.status().pending == 0 && count("rollups") == 2 * 26 + 2 * 1; },
                           std::chrono::seconds(60)))
        << shipper.status().reason << "; roll-ups: " << count("rollups");
    shipper.stop();
  }
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE NOT verified"), "0\n");
  const int64_t from = kDay0, to = kDay0 + 3 * 86400;
  const Read windows = read(*admin_, from, to, std::nullopt);
  ASSERT_EQ(windows.cost_by_team.count("speech"), 1u);
  ASSERT_EQ(windows.cost_by_team.count("nlp"), 1u);
  const Read months = read(*admin_, from, to, Period::kMonth);
  expect_same_bill(months, windows);
  EXPECT_EQ(months.records, 2 * (1 + 23 + 60 + 1 + 30)) << "day 0; day 1's other hours and 05:00's windows; day 2";

  // An agent's roll-up of day 1 with the right numbers and money, its accounts merged: refused, still not read.
  std::vector<ledger::WindowRecord> day1;
  for (const auto& w : ws)
    if (w.slot.uuid == "GPU-a" && w.start >= kDay0 + 86400 && w.start < kDay0 + 2 * 86400) day1.push_back(w);
  std::string totals = pg_->psql("SELECT period_start || ', ' || windows || ', ' || cost_micros || ', ' || digests "
                                 "FROM gpuledger.window_totals WHERE period = 'day' AND gpu_uuid = 'GPU-a' AND "
                                 "period_start = " + std::to_string(kDay0 + 86400));
  totals.pop_back();
  pg_->psql("INSERT INTO gpuledger.rollups(period, period_start, windows, cost_micros, digests, cluster, node, "
            "gpu_uuid, digest, body) VALUES ('day', " + totals + ", 'prod', 'node-1', 'GPU-a', 'x', '" +
            fleet::window_to_json(ledger::merge_windows(day1)) + "')");
  EXPECT_EQ(pg_->psql("SELECT refusal FROM gpuledger.rollups WHERE NOT verified"),
            "an account's labels changed within the period (one merged account would bill it all to its last team)\n");
  expect_same_bill(read(*admin_, from, to, Period::kMonth), windows);
}

}  // namespace
}  // namespace gpuledger::testing

namespace gpuledger::testing {
namespace {

// Nine whole days, read at days: the day roll-ups and the totals come as two
// scans in key order, merged by the reader (fleet_reader.cpp, merge_period).
// Read are only the roll-ups verified and current; the other GPU-days (none,
// refused, stale, a second roll-up under the key) are read finer, and every
// read bills what the windows bill, the same as a week's read joined.
TEST_F(FleetDb, AWeekOrMoreOfDaysIsReadFromItsCurrentVerifiedDaysAndTheRestFiner) {
  const fleet::Origin origin{"prod", "node-1"};
  ledger::Store store((scratch_ / "ledger.db").string());
  fleet::FleetSinkPostgres sink(*admin_, origin);
  std::vector<ledger::WindowRecord> ws;
  for (int64_t t = kDay0; t < kDay0 + 9 * 86400; t += 600)
    for (const char* gpu : {"GPU-a", "GPU-b"}) ws.push_back(fleet_window(t, gpu, (t / 600) % 13));
  store.insert_windows(ws);
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  auto day = [](int d) { return kDay0 + d * 86400; };
  for (int d = 0; d < 9; ++d) {
    auto rollups = fleet::build_rollups(store, origin, Period::kDay, day(d));
    std::vector<fleet::Rollup> send;
    for (auto& r : rollups) {
      if (d == 4 && r.window.slot.uuid == "GPU-a") continue;  // none
      if (d == 2 && r.window.slot.uuid == "GPU-a")            // money moved between pods: refused
        r.window.charges[0].micros += 1000, r.window.charges[2].micros -= 1000;
      send.push_back(r);
    }
    sink.ship_rollups(send);
  }
  // Late windows of GPU-b: day 3's roll-up left stale; day 6 rolled up again
  // (two roll-ups under its key, the current one with 145 windows).
  std::vector<ledger::WindowRecord> late = {fleet_window(day(3) + 7 * 3600 + 30, "GPU-b", 3),
                                            fleet_window(day(6) + 9 * 3600 + 30, "GPU-b", 6)};
  store.insert_windows(late);
  ASSERT_EQ(sink.ship(pointers(late)), std::vector<Delivery>(2, Delivery::kStored));
  for (const auto& r : fleet::build_rollups(store, origin, Period::kDay, day(6)))
    if (r.window.slot.uuid == "GPU-b") sink.ship_rollups({r});
  EXPECT_EQ(rows_of(*admin_, "SELECT count(*) FILTER (WHERE verified), count(*) FROM gpuledger.rollups"), "17|18\n");

  const Read windows = read(*admin_, day(0), day(9), std::nullopt);
  const Read days = read(*admin_, day(0), day(9), Period::kDay);
  expect_same_bill(days, windows);
  // 15 current, verified days; day 4 and day 2 of GPU-a (144 windows each), day 3 of GPU-b (145).
  EXPECT_EQ(days.records, 15 + 144 + 144 + 145);
  EXPECT_EQ(days.notes.refused_rollups, 1);
  // Six days (joined, not merged) read the same as their windows too.
  const Read six = read(*admin_, day(1), day(7), Period::kDay);
  expect_same_bill(six, read(*admin_, day(1), day(7), std::nullopt));
  EXPECT_EQ(six.records, 9 + 144 + 144 + 145);
  // One node of two: the merge keeps to the filter.
  fleet::FleetSinkPostgres other(*admin_, {"prod", "node-2"});
  ASSERT_EQ(other.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  Read node1;
  report::ReportBuilder builder(day(0), day(9), report::GroupBy::kTeam);
  fleet::for_each_fleet_window(*admin_, day(0), day(9), {std::nullopt, std::string("node-1")}, Period::kDay,
                               [&](ledger::WindowRecord&& w) {
                                 ++node1.records;
                                 builder.add(w);
                               });
  EXPECT_EQ(node1.records, days.records);
  EXPECT_EQ(builder.finish().total.cost_total_micros(), days.total);
}

}  // namespace
}  // namespace gpuledger::testing
