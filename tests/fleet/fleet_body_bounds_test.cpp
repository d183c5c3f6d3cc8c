// Issue 30, an agent's bytes bounded (schema 15, fleet/body_bounds.h): a
// node's credentials stored a body of any size up to PostgreSQL's 1 GB, the
// server parsed it, and every fleet report fetched it in a page of 5,000
// rows. Replayed with an agent's role against a real server: refused before
// anything parses it. Bodies under the bound but over a page's share are read
// apart from their page, to the bit; a window the agent cannot ship is kept
// in its store, counted and said.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/error.h"
#include "fleet/body_bounds.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_shipper.h"
#include "fleet/pg_connection.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"

namespace gpuledger::testing {
namespace {

const int64_t kHour0 = kFleetT0 / 3600 * 3600;

// A window of `n` accounts named as long as Kubernetes lets a tenant name
// them, its charges and energy parts adding up as an agent's do.
ledger::WindowRecord crowded_window(int64_t start, const std::string& uuid, int n, int tag = 0) {
  using ledger::ChargeKind;
  ledger::WindowRecord w = fleet_window(start, uuid);
  const ledger::AccountRecord like = w.accounts[0];
  w.accounts.clear();
  w.charges.clear();
  w.energy->charges.clear();
  for (int i = 0; i < n; ++i) {
    ledger::AccountRecord a = like;
    const std::string pod = fmt::format("pod-{:05}-{:02}-{}", i, tag, std::string(240, 'p'));  // 253 characters
    a.account = "k8s/" + pod;
    a.labels = {std::string(63, 'n'), pod, std::string(63, 'c'), std::string(63, 't')};
    w.accounts.push_back(a);
    w.charges.push_back({a.account, ChargeKind::kBusy, 20});
    w.charges.push_back({a.account, ChargeKind::kIdle, 10});
    w.energy->charges.push_back({a.account, ChargeKind::kBusy, 2000});
    w.energy->charges.push_back({a.account, ChargeKind::kIdle, 1000});
  }
  w.busy_micros = 20 * n;
  w.idle_micros = 10 * n;
  w.cost_micros = 30 * n;
  w.energy->millijoules = 3000 * n;
  return w;
}

// `body` followed by spaces (a form the database takes) to `size` bytes.
std::string padded(const std::string& body, size_t size) {
  return body + std::string(size - body.size(), ' ');
}

// Attack: one window or roll-up of a body as large as PostgreSQL takes,
// inserted with a node's own role, had the server parse it into several times
// its size in one backend. Refused at the bound, before any parse: a body
// nothing could read, padded past it, is refused for its size, not its shape.
TEST_F(FleetDb, AttackABodyOverItsBoundIsRefusedBeforeTheServerParsesIt) {
  const std::string role = fleet::add_node_role(*admin_, "node-a", std::string("prod"));
  fleet::PgConnection agent(pg_->conninfo(role), pg_->set_password(role));
  const std::string body = fleet::window_children_to_json(fleet_window(kFleetT0, "GPU-a"));
  auto insert = [&](int64_t start, const std::string& text) {
    return refusal(agent, kAgentWindowInsert, {std::to_string(start), std::string("18000000"), text});
  };
  EXPECT_EQ(insert(kFleetT0, padded(body, fleet::kMaxWindowBodyBytes)), "");
  for (const auto& [start, text] : {std::pair{kFleetT0 + 60, padded(body, fleet::kMaxWindowBodyBytes + 1)},
                                    std::pair{kFleetT0 + 120, padded("{\"accounts\": 5}", size_t{64} << 20)}}) {
    const std::string said = insert(start, text);
    EXPECT_EQ(fleet::sqlstate_of(said), "23514") << said.substr(0, 300);
    EXPECT_NE(said.find("window_body_bounded"), std::string::npos) << said.substr(0, 300);
  }
  EXPECT_EQ(count("windows"), 1);
  // Any other text of the row: 256 bytes taken, 257 refused (a model here).
  std::string insert_model = kAgentWindowInsert;
  insert_model.replace(insert_model.find("'m'"), 3, "$4");
  auto with_model = [&](int64_t start, size_t bytes) {
    return refusal(agent, insert_model,
                   {std::to_string(start), std::string("18000000"), body, std::string(bytes, 'm')});
  };
  EXPECT_EQ(with_model(kFleetT0 + 180, fleet::kMaxFieldBytes), "");
  const std::string long_model = with_model(kFleetT0 + 240, fleet::kMaxFieldBytes + 1);
  EXPECT_EQ(fleet::sqlstate_of(long_model), "23514") << long_model.substr(0, 300);
  EXPECT_NE(long_model.find("window_fields_bounded"), std::string::npos) << long_model.substr(0, 300);
  EXPECT_EQ(count("windows"), 2);

  // A roll-up: its check would have stored it unverified, with a refusal.
  const std::string rollup = fleet::window_to_json(fleet_window(kHour0, "GPU-a"));
  const char* const insert_rollup =
      "INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, digests, "
      "digest, body) VALUES ('hour', $1, 'prod', 'node-a', 'GPU-a', 1, 60000, 0, 'd', $2::json)";
  for (const std::string& text :
       {padded(rollup, fleet::kMaxRollupBodyBytes + 1), padded("{\"accounts\": 5}", fleet::kMaxRollupBodyBytes + 1)}) {
    const std::string said = refusal(agent, insert_rollup, {std::to_string(kHour0), text});
    EXPECT_EQ(fleet::sqlstate_of(said), "23514") << said.substr(0, 300);
    EXPECT_NE(said.find("is 16777217 bytes, over the 16777216 a roll-up may hold"), std::string::npos)
        << said.substr(0, 300);
  }
  const std::string long_digest =
      refusal(agent, std::string(insert_rollup).replace(std::string(insert_rollup).find("'d'"), 3, "repeat('d', 257)"),
              {std::to_string(kHour0), rollup});
  EXPECT_EQ(fleet::sqlstate_of(long_digest), "23514") << long_digest;
  EXPECT_NE(long_digest.find("are at most 256 bytes each"), std::string::npos) << long_digest;
  EXPECT_EQ(count("rollups"), 0);
  // At the bound: taken, and checked as any roll-up is (not the windows': unverified).
  EXPECT_EQ(refusal(agent, insert_rollup, {std::to_string(kHour0), padded(rollup, fleet::kMaxRollupBodyBytes)}), "");
  EXPECT_EQ(pg_->psql("SELECT verified FROM gpuledger.rollups"), "f\n");
}

// A node's large windows, under the bound but over a page's share, shipped
// by its shipper and read back by a report exactly, apart from their pages (a
// few a statement); their hour's roll-up, too large for a page, is read as its
// windows. A window too large to store (its accounts; a model's name of 257
// bytes) is kept in the store, refused, counted and said, and the rest of its
// batch ships.
TEST_F(FleetDb, LargeBodiesReadAsTheirWindowsAndOneTooLargeIsKeptAndSaid) {
  const std::string role = fleet::add_node_role(*admin_, "node-1", std::string("prod"));
  const std::string path = (scratch_ / "ledger.db").string();
  std::vector<ledger::WindowRecord> sent;  // what the database should hold
  const ledger::WindowRecord huge = crowded_window(kHour0 + 7200, "GPU-c", 700);
  ASSERT_GT(fleet::window_children_to_json(huge).size(), fleet::kMaxWindowBodyBytes);
  {
    ledger::Store store(path);
    for (int i = 0; i < 60; ++i) {
      // GPU-a: every fourth window of 300 accounts (~560 KiB), 15 in the hour: over 8 MiB of them in one page.
      sent.push_back(i % 4 == 0 ? crowded_window(kHour0 + 60 * i, "GPU-a", 300)
                                : fleet_window(kHour0 + 60 * i, "GPU-a", i));
      sent.push_back(fleet_window(kHour0 + 60 * i, "GPU-b", i));
    }
    sent.push_back(fleet_window(kHour0 + 7200 + 60, "GPU-c"));
    for (const auto& w : sent) store.insert_window(w);
    store.insert_window(huge);
    ledger::WindowRecord named = fleet_window(kHour0 + 7200 + 120, "GPU-c");  // a model NVML never names
    named.slot.model = std::string(fleet::kMaxFieldBytes + 1, 'm');
    store.insert_window(named);
  }
  const size_t large = fleet::window_children_to_json(sent[0]).size();
  ASSERT_GT(large, fleet::kPageBodyBytes);
  ASSERT_LT(large, fleet::kMaxWindowBodyBytes);
  ASSERT_GT(15 * large, fleet::kViewsBodyBytes);

  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(role), pg_->set_password(role), path, {"prod", "node-1"}));
  shipper.start();
  ASSERT_TRUE(eventually(
      [&] {
        const auto st = shipper.status();
        return st.shipped == sent.size() && st.refused == 2 && st.pending == 0 &&
               sample(metrics(shipper), "gpuledger_fleet_db_shipped_rollups_total{period=\"hour\"}") >= 2;
      },
      std::chrono::seconds(30)))
      << shipper.status().reason << metrics(shipper);
  shipper.stop();
  const std::string page = metrics(shipper);
  EXPECT_TRUE(has_line(page, "gpuledger_fleet_db_errors_total{reason=\"too_large\"} 2")) << page;
  EXPECT_TRUE(has_line(page, "gpuledger_fleet_db_errors_total{reason=\"conflict\"} 0")) << page;
  EXPECT_TRUE(has_line(page, "gpuledger_fleet_db_refused_windows 2")) << page;
  EXPECT_NE(shipper.status().reason.find("2 windows refused"), std::string::npos) << shipper.status().reason;
  {
    ledger::Store store(path);  // kept: the node's own bill still has it
    EXPECT_EQ(store.windows(kHour0 + 7200, kHour0 + 7200 + 180).size(), 3u);
  }
  EXPECT_EQ(count("windows"), static_cast<int64_t>(sent.size()));
  // GPU-a's hour roll-up holds the 300 accounts: stored and verified, over a page's share.
  EXPECT_EQ(pg_->psql("SELECT verified, octet_length(body::text) > " + std::to_string(fleet::kPageBodyBytes) +
                      " FROM gpuledger.rollups WHERE period = 'hour' AND gpu_uuid = 'GPU-a'"),
            "t|t\n");

  // Windows alone: each as it was sent, to the bit. The 15 large bodies came
  // apart from their page, from the views: 14 (kViewsBodyBytes) and then 1.
  int views = 0;
  admin_->log_statements(
      [&](const fleet::PgStatement& s) { views += s.sql.find("gpuledger.body_accounts(b.j)") != std::string::npos; });
  std::vector<ledger::WindowRecord> got;
  fleet::for_each_fleet_window(*admin_, kHour0, kHour0 + 3 * 3600, {}, std::nullopt, [&](ledger::WindowRecord&& w) {
    EXPECT_EQ(w.node, "prod/node-1");
    w.node.clear();
    got.push_back(std::move(w));
  });
  auto by_key = [](const ledger::WindowRecord& a, const ledger::WindowRecord& b) {
    return std::tie(a.slot.uuid, a.start) < std::tie(b.slot.uuid, b.start);
  };
  std::sort(got.begin(), got.end(), by_key);
  std::sort(sent.begin(), sent.end(), by_key);
  ASSERT_EQ(got.size(), sent.size());
  for (size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(got[i] == sent[i]) << i;
  EXPECT_EQ(views, 2);
  admin_->log_statements({});

  // By the hour: GPU-b's hour is its roll-up (one record); GPU-a's, too large
  // for a page, its 60 windows; GPU-c's two hours' (one of them one window).
  const Read windows = read(*admin_, kHour0, kHour0 + 3 * 3600, std::nullopt);
  const Read hours = read(*admin_, kHour0, kHour0 + 3 * 3600, fleet::Period::kHour);
  expect_same_bill(windows, hours);
  EXPECT_EQ(windows.records, static_cast<int>(sent.size()));
  EXPECT_EQ(hours.records, 60 + 1 + 1);
  EXPECT_EQ(hours.notes.refused_rollups, 0);
  EXPECT_TRUE(hours.notes.unreadable.empty());
}

// A roll-up too large to store (an hour of 30 windows of 300 accounts each,
// none the same: 17 MB) is not sent, and counted; the hour is read as its
// windows, and its neighbour hour's roll-up still is.
TEST_F(FleetDb, ARollUpTooLargeToStoreIsNotSentAndItsWindowsAreRead) {
  const std::string role = fleet::add_node_role(*admin_, "node-1", std::string("prod"));
  const std::string path = (scratch_ / "ledger.db").string();
  {
    ledger::Store store(path);
    for (int i = 0; i < 30; ++i) store.insert_window(crowded_window(kHour0 + 120 * i, "GPU-a", 300, i));
    for (int i = 0; i < 60; ++i) store.insert_window(fleet_window(kHour0 + 3600 + 60 * i, "GPU-a", i));
    store.insert_window(fleet_window(kHour0 + 7200, "GPU-a"));
  }
  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(role), pg_->set_password(role), path, {"prod", "node-1"}));
  shipper.start();
  ASSERT_TRUE(eventually(
      [&] {
        const std::string page = metrics(shipper);
        return shipper.status().shipped == 91 &&
               sample(page, "gpuledger_fleet_db_shipped_rollups_total{period=\"hour\"}") == 1 &&
               sample(page, "gpuledger_fleet_db_errors_total{reason=\"too_large\"}") == 1;
      },
      std::chrono::seconds(30)))
      << shipper.status().reason << metrics(shipper);
  shipper.stop();
  EXPECT_EQ(shipper.status().refused, 0);
  EXPECT_EQ(pg_->psql("SELECT period_start - " + std::to_string(kHour0) + " FROM gpuledger.rollups"), "3600\n");
  const Read windows = read(*admin_, kHour0, kHour0 + 7200, std::nullopt);
  const Read hours = read(*admin_, kHour0, kHour0 + 7200, fleet::Period::kHour);
  expect_same_bill(windows, hours);
  EXPECT_EQ(windows.records, 90);
  EXPECT_EQ(hours.records, 30 + 1);
}

// A GPU's day whose roll-ups are all over a page's share (an hour's first
// window holds 300 accounts): its day roll-up, met in the merge of a week's
// whole days, and its hours' are read as its 1,440 windows; its other days and
// another GPU's are their roll-ups, in the same read. The same bill either way.
TEST_F(FleetDb, RollUpsTooLargeForAPageAreReadAsTheirFinerPeriods) {
  const std::string role = fleet::add_node_role(*admin_, "node-1", std::string("prod"));
  const std::string path = (scratch_ / "ledger.db").string();
  {
    ledger::Store store(path);
    for (int i = 0; i <= 7 * 1440; ++i) {
      const int64_t t = kFleetDay0 + 60 * i;
      store.insert_window(i % 60 == 0 && i < 1440 ? crowded_window(t, "GPU-a", 300) : fleet_window(t, "GPU-a", i));
      store.insert_window(fleet_window(t, "GPU-b", i));
    }
  }
  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(role), pg_->set_password(role), path, {"prod", "node-1"}));
  shipper.start();
  ASSERT_TRUE(eventually(
      [&] { return sample(metrics(shipper), "gpuledger_fleet_db_shipped_rollups_total{period=\"day\"}") == 14; },
      std::chrono::seconds(60)))
      << shipper.status().reason << metrics(shipper);
  shipper.stop();
  EXPECT_EQ(pg_->psql("SELECT gpu_uuid, period, verified, octet_length(body::text) > " +
                      std::to_string(fleet::kPageBodyBytes) +
                      " FROM gpuledger.rollups WHERE period_start = " + std::to_string(kFleetDay0) + " ORDER BY 1, 2"),
            "GPU-a|day|t|t\nGPU-a|hour|t|t\nGPU-b|day|t|f\nGPU-b|hour|t|f\n");
  const Read windows = read(*admin_, kFleetDay0, kFleetDay0 + 7 * 86400, std::nullopt);
  const Read days = read(*admin_, kFleetDay0, kFleetDay0 + 7 * 86400, fleet::Period::kMonth);
  expect_same_bill(windows, days);
  EXPECT_EQ(windows.records, 2 * 7 * 1440);
  EXPECT_EQ(days.records, 1440 + 6 + 7);
  EXPECT_EQ(days.notes.refused_rollups, 0);
}

}  // namespace
}  // namespace gpuledger::testing
