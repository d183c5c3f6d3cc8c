// Retention against a real PostgreSQL server (issue 30 item 4): `fleet-db
// prune` drops a month's windows only once every GPU's hours, days and month
// there have verified roll-ups; afterwards the month's bill, read from the
// roll-ups alone, is the one its windows gave, to the micro-unit; a read that
// would need the pruned windows fails instead of billing less, and a late
// window of that month is refused.
#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/fleet_periods.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/fleet_sink_postgres.h"
#include "cli_process.h"
#include "fleet_db_fixture.h"
#include "ledger/outbox.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;

constexpr int64_t kJan = 1798761600;  // 2027-01-01T00:00:00Z
constexpr int64_t kFeb = 1801440000;

// Two GPUs, a window every 6 hours of January, and one on February 1st (so January is complete).
std::vector<ledger::WindowRecord> january() {
  std::vector<ledger::WindowRecord> ws;
  for (int64_t t = kJan; t <= kFeb; t += 6 * 3600)
    for (const char* gpu : {"GPU-a", "GPU-b"}) ws.push_back(fleet_window(t, gpu, (t / 3600) % 89));
  return ws;
}

int64_t partitions_of(fleet::PgConnection& db, const std::string& table) {
  return db.query("SELECT count(*) FROM pg_inherits WHERE inhparent = 'gpuledger." + table + "'::regclass").i64(0, 0);
}

TEST_F(FleetDb, PruneDropsAMonthsWindowsOnlyOnceItsRollUpsAreVerifiedAndTheBillStaysTheSame) {
  const std::string path = (scratch_ / "ledger.db").string();
  const auto ws = january();
  {
    ledger::Store store(path);
    store.insert_windows(ws);
  }
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  const int64_t now = kFeb + 86400;

  // No roll-ups yet: January keeps its windows.
  auto kept = fleet::prune_before(*admin_, kFeb, now);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].month_start, kJan);
  ASSERT_TRUE(kept[0].kept_because);
  // 2 GPUs x (124 hours + 31 days + 1 month)
  EXPECT_EQ(*kept[0].kept_because, "312 GPU-hours, -days or -months have no verified roll-up of their windows yet");
  EXPECT_EQ(count("windows"), static_cast<int64_t>(ws.size()));

  // The agent's shipper sends the roll-ups of every complete hour, day and month.
  {
    fleet::FleetShipper shipper(shipper_options(pg_->conninfo(), pg_->admin_password_file(), path, {"prod", "node-1"}));
    shipper.start();
    EXPECT_TRUE(eventually([&] { return count("rollups") == 312; }, std::chrono::seconds(60)))
        << shipper.status().reason << "; roll-ups: " << count("rollups");
    shipper.stop();
  }
  const Read windows = read(*admin_, kJan, kFeb, std::nullopt);
  const Read rollups = read(*admin_, kJan, kFeb, Period::kMonth);
  expect_same_bill(rollups, windows);
  const int64_t a = kJan + 5 * 86400 + 6 * 3600, b = kJan + 9 * 86400 + 18 * 3600;  // whole hours
  const Read part = read(*admin_, a, b, std::nullopt);

  // Refused: --before must be a month start, no later than this month.
  EXPECT_THROW(fleet::prune_before(*admin_, kFeb + 3600, now), Error);
  EXPECT_THROW(fleet::prune_before(*admin_, kFeb, kJan + 86400), Error);

  const int64_t partitions = partitions_of(*admin_, "windows");
  EXPECT_EQ(partitions_of(*admin_, "window_parts"), partitions);
  auto pruned = fleet::prune_before(*admin_, kFeb, now);
  ASSERT_EQ(pruned.size(), 1u);
  EXPECT_FALSE(pruned[0].kept_because) << *pruned[0].kept_because;
  EXPECT_EQ(pruned[0].windows, static_cast<int64_t>(ws.size()) - 2);  // February's two stay
  EXPECT_EQ(partitions_of(*admin_, "windows"), partitions - 1);
  EXPECT_EQ(partitions_of(*admin_, "window_parts"), partitions - 1);  // the windows' parts with them
  EXPECT_EQ(count("windows"), 2);
  EXPECT_EQ(count("window_parts WHERE hour_start < " + std::to_string(kFeb)), 0);
  EXPECT_EQ(count("accounts"), 4);
  EXPECT_EQ(count("rollups"), 312);
  EXPECT_EQ(admin_->query("SELECT windows FROM gpuledger.pruned_months").text(0, 0), std::to_string(ws.size() - 2));
  EXPECT_TRUE(fleet::prune_before(*admin_, kFeb, now).empty()) << "safe to repeat";

  // The month's bill, and any whole hours of it, from the roll-ups alone: the same to the micro-unit.
  const Read after = read(*admin_, kJan, kFeb, Period::kMonth);
  expect_same_bill(after, windows);
  EXPECT_EQ(after.records, 2);
  expect_same_bill(read(*admin_, a, b, Period::kMonth), part);
  expect_same_bill(read(*admin_, a, b, Period::kHour), part);

  // Reads that need the pruned windows say so instead of billing less.
  for (const auto& [from, to, coarsest] :
       std::vector<std::tuple<int64_t, int64_t, std::optional<Period>>>{
           {kJan, kFeb, std::nullopt}, {a + 60, b, Period::kMonth}, {kJan - 3600, kJan + 3600 + 1, Period::kDay}}) {
    try {
      read(*admin_, from, to, coarsest);
      ADD_FAILURE() << "read " << from << ".." << to;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the windows of 2027-01 were pruned from the fleet database"),
                std::string::npos)
          << e.what();
    }
  }
  // February is untouched.
  EXPECT_EQ(read(*admin_, kFeb, kFeb + 60, std::nullopt).records, 2);

  // A late window of January is refused (its totals' windows are gone), and stays pending with the agent.
  auto late = fleet_window(kJan + 3 * 86400 + 120, "GPU-a", 7);
  fleet::FleetSinkPostgres again(*admin_, {"prod", "node-1"});
  try {
    again.ship({&late});
    ADD_FAILURE() << "a window of a pruned month was stored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the windows of 2027-01 were pruned"), std::string::npos) << e.what();
  }
  EXPECT_THROW(admin_->query("SELECT gpuledger.create_month($1)", {std::to_string(kJan)}), Error);
  expect_same_bill(read(*admin_, kJan, kFeb, Period::kMonth), windows);
}

// The command: a month as YYYY-MM, at most this one; nothing to prune is not a failure.
TEST_F(FleetDb, PruneTakesAMonthNoLaterThanThisOne) {
  const std::string cmd = gpuledger() + " fleet-db prune --fleet-db '" + pg_->conninfo() +
                          "' --fleet-db-password-file " + pg_->admin_password_file() + " --before ";
  Proc p = run(cmd + "2026-13");
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.out.find("--before takes a month as YYYY-MM, not '2026-13'"), std::string::npos) << p.out;
  p = run(cmd + "2999-01");
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.out.find("--before must be the start of a month no later than this one"), std::string::npos) << p.out;
  p = run(cmd + "2026-01");  // the fixture's months are 2027's
  EXPECT_EQ(p.status, 0) << p.out;
  EXPECT_EQ(p.out, "");
  EXPECT_EQ(partitions_of(*admin_, "windows"), 2);
}

}  // namespace
}  // namespace gpuledger::testing
