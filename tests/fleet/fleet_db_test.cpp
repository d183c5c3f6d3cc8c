// The fleet ledger against a real PostgreSQL server (pg_server.h): migrations,
// roles, idempotent delivery, conflicts, the shipper through an outage, and
// the fleet report equal to the local one to the micro-unit.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <limits>
#include <thread>

#include "common/error.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/fleet_sql.h"
#include "fleet/page_receiver.h"
#include "fleet/pg_connection.h"
#include "fleet_db_fixture.h"
#include "fleet_windows.h"
#include "focus/focus_rules.h"
#include "ledger/outbox.h"
#include "metrics/prometheus_text.h"
#include "pg_server.h"
#include "report/report.h"

namespace gpuledger::testing {
namespace {

namespace fs = std::filesystem;
using fleet::Delivery;

TEST_F(FleetDb, MigrationsAreVersionedRepeatableAndANewerSchemaIsRefused) {
  EXPECT_EQ(fleet::schema_version(*admin_), 19);
  EXPECT_EQ(fleet::migrate(*admin_, kFleetT0), 19) << "a second run changes nothing";
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.schema_migrations"), "19\n");
  // This month's and the next month's partitions, of every table.
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'windows'"),
            "windows_2027_01,windows_2027_02\n");
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'rollups'"),
            "rollups_2027_01,rollups_2027_02\n");
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'window_parts'"),
            "window_parts_2027_01,window_parts_2027_02\n");
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'day_charts'"),
            "day_charts_2027_01,day_charts_2027_02\n");
  EXPECT_EQ(pg_->psql("SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i JOIN pg_class c ON "
                      "c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'node_day_charts'"),
            "node_day_charts_2027_01,node_day_charts_2027_02\n");
  EXPECT_NO_THROW(fleet::check_schema(*admin_));
  const std::string newer = std::to_string(fleet::kFleetSchemaVersion + 1);
  pg_->psql("INSERT INTO gpuledger.schema_migrations(version) VALUES (" + newer + ")");
  try {
    fleet::check_schema(*admin_);
    FAIL() << "a newer schema was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version " + newer + " is newer than this gpuledger knows (" +
                                           std::to_string(fleet::kFleetSchemaVersion) + ")"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fleet::migrate(*admin_, kFleetT0), Error);
  // A database never migrated: the agent says what to run.
  pg_->psql("CREATE DATABASE empty");
  fleet::PgConnection empty(pg_->conninfo("gpuledger_admin", "empty"), pg_->admin_password_file());
  try {
    fleet::check_schema(empty);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run `gpuledger fleet-db migrate`"), std::string::npos) << e.what();
  }
}

TEST_F(FleetDb, AWindowIsStoredOnceAConflictIsRefusedAndTheReaderGivesItBackExactly) {
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  std::vector<ledger::WindowRecord> ws;
  for (int i = 0; i < 3; ++i) ws.push_back(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
  ws.push_back(fleet_window(kFleetT0, "MIG-b"));
  ws.back().slot.mig_profile = "3g.40gb";
  ws.back().energy.reset();
  EXPECT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(4, Delivery::kStored));
  // A resend (crash between commit and mark): stored once.
  EXPECT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(4, Delivery::kDuplicate));
  EXPECT_EQ(count("windows"), 4);
  EXPECT_EQ(count("accounts"), 8);
  EXPECT_EQ(count("charges"), 16);
  EXPECT_EQ(count("energy_charges"), 12);
  // The same key with another content: refused, the stored one stays.
  auto changed = ws[1];
  changed.charges[0].micros += 1;
  changed.charges[2].micros -= 1;
  EXPECT_EQ(sink.ship({&changed}), std::vector<Delivery>{Delivery::kConflict});
  EXPECT_EQ(pg_->psql("SELECT sum(micros) FROM gpuledger.charges"), std::to_string(4 * 60'000 + 0 + 1 + 2) + "\n");
  // Another node, same GPU and start: its own window.
  fleet::FleetSinkPostgres other(*admin_, {"prod", "node-2"});
  EXPECT_EQ(other.ship({&ws[0]}), std::vector<Delivery>{Delivery::kStored});

  std::vector<ledger::WindowRecord> back;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 3600, {std::nullopt, std::string("node-1")},
                               [&](ledger::WindowRecord&& w) { back.push_back(std::move(w)); });
  ASSERT_EQ(back.size(), 4u);
  std::sort(ws.begin(), ws.end(), [](const auto& a, const auto& b) {
    return std::tie(a.slot.uuid, a.start) < std::tie(b.slot.uuid, b.start);
  });
  for (size_t i = 0; i < ws.size(); ++i) {
    EXPECT_EQ(back[i].node, "prod/node-1");
    back[i].node.clear();
    EXPECT_EQ(back[i], ws[i]) << "window " << i << " read back differs";
  }
  int all = 0;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 3600, {}, [&](ledger::WindowRecord&&) { ++all; });
  EXPECT_EQ(all, 5);
  int none = 0;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 3600, {std::string("staging"), std::nullopt},
                               [&](ledger::WindowRecord&&) { ++none; });
  EXPECT_EQ(none, 0);
}

// The sink sends each column's values as one array (FleetSinkPostgres::
// insert_rows): names with quotes, backslashes, braces, commas, the word NULL
// or nothing at all, and unknown values, come back exactly as sent.
TEST_F(FleetDb, AnyTextAndUnknownsComeBackExactlyThroughTheColumnArrays) {
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  const std::vector<std::string> names = {"say \"hi\"", "back\\slash\\", "{a,b}", "NULL", "",
                                          "caf\xc3\xa9 \xe2\x80\xae", "it's", " spaced , ", "\x01\ttab\nline\x7f"};
  std::vector<ledger::WindowRecord> ws;
  for (size_t i = 0; i < names.size(); ++i) {
    ws.push_back(fleet_window(kFleetT0 + 60 * static_cast<int64_t>(i), "GPU-a", static_cast<int>(i)));
    for (auto& a : ws.back().accounts) {
      a.labels.team = names[i];
      a.labels.pod = names[(i + 1) % names.size()];
      if (i % 2) a.labels.slurm_user = names[(i + 2) % names.size()];  // rows with and without the Slurm columns
    }
    ws.back().accounts[0].efficiency.sm_active.reset();  // unknown: NULL in its column
  }
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  std::vector<ledger::WindowRecord> back;
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 3600, {},
                               [&](ledger::WindowRecord&& w) { back.push_back(std::move(w)); });
  ASSERT_EQ(back.size(), ws.size());
  for (size_t i = 0; i < ws.size(); ++i) {
    back[i].node.clear();
    EXPECT_EQ(back[i], ws[i]) << "window " << i << " read back differs";
  }
  // Floats JSON has no number for come back as they went (the rows of schema 6 stored them too).
  auto odd = fleet_window(kFleetT0 + 7200, "GPU-a");
  odd.accounts[0].held_share = std::numeric_limits<double>::quiet_NaN();
  odd.accounts[0].vram_byte_seconds = std::numeric_limits<double>::infinity();
  odd.accounts[1].efficiency.sm_active = -std::numeric_limits<double>::infinity();
  ASSERT_EQ(sink.ship({&odd}), std::vector<Delivery>{Delivery::kStored});
  back.clear();
  fleet::for_each_fleet_window(*admin_, kFleetT0 + 7200, kFleetT0 + 7260, {},
                               [&](ledger::WindowRecord&& w) { back.push_back(std::move(w)); });
  ASSERT_EQ(back.size(), 1u);
  EXPECT_TRUE(std::isnan(back[0].accounts[0].held_share));
  EXPECT_EQ(back[0].accounts[0].vram_byte_seconds, std::numeric_limits<double>::infinity());
  EXPECT_EQ(back[0].accounts[1].efficiency.sm_active, -std::numeric_limits<double>::infinity());
  // A NUL (PostgreSQL text holds none) is stored as '?', in the body as in every fleet row, and ships.
  auto nul = fleet_window(kFleetT0 + 3600, "GPU-a");
  nul.accounts[0].labels.team = std::string("a\0b", 3);
  ASSERT_EQ(sink.ship({&nul}), std::vector<Delivery>{Delivery::kStored});
  EXPECT_EQ(pg_->psql("SELECT team FROM gpuledger.accounts WHERE start_time = " + std::to_string(kFleetT0 + 3600) +
                      " AND account = 'k8s/pod-a'"),
            "a?b\n");
}

TEST_F(FleetDb, AgentsMayOnlyInsertAndReportsOnlyRead) {
  // Schema 3: the node's own role (`gpuledger fleet-db add-node node-1 --cluster prod`).
  const std::string role = fleet::add_node_role(*admin_, "node-1", std::string("prod"));
  const std::string agent_pw = pg_->set_password(role);
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  fleet::PgConnection agent(pg_->conninfo(role), agent_pw);
  fleet::check_schema(agent);
  fleet::FleetSinkPostgres sink(agent, {"prod", "node-1"});
  const auto w = fleet_window(kFleetT0 + 40 * 86400, "GPU-a");  // next month but one: a partition the agent makes
  const auto resent = w;
  EXPECT_EQ(sink.ship({&w}), std::vector<Delivery>{Delivery::kStored});
  EXPECT_EQ(sink.ship({&resent}), std::vector<Delivery>{Delivery::kDuplicate});
  auto denied = [&](fleet::PgConnection& db, const std::string& sql) {
    try {
      db.query(sql);
      return false;
    } catch (const Error& e) {
      return fleet::sqlstate_of(e.what()) == "42501";
    }
  };
  // Schema 7: a window's charges are its body.
  EXPECT_TRUE(denied(agent, "UPDATE gpuledger.windows SET body = '{\"accounts\": [], \"charges\": []}'"));
  EXPECT_TRUE(denied(agent, "DELETE FROM gpuledger.windows"));
  EXPECT_TRUE(denied(agent, "TRUNCATE gpuledger.windows"));
  EXPECT_TRUE(denied(agent, "SELECT cost_micros FROM gpuledger.windows"));
  EXPECT_TRUE(denied(agent, "SELECT body FROM gpuledger.windows"));
  EXPECT_TRUE(denied(agent, "SELECT * FROM gpuledger.charges"));
  EXPECT_TRUE(denied(agent, "SELECT * FROM gpuledger.accounts"));
  EXPECT_TRUE(denied(agent, "SELECT * FROM gpuledger.energy_charges"));
  EXPECT_TRUE(denied(agent, "CREATE TABLE gpuledger.x(i int)"));
  EXPECT_TRUE(denied(agent, "DROP TABLE gpuledger.windows_2027_01"));
  // The totals a roll-up is checked against are the database's own; roll-ups are insert-only.
  EXPECT_TRUE(denied(agent, "INSERT INTO gpuledger.window_totals VALUES ('day', 0, 'prod', 'node-1', 'GPU-a', 1, 0, 0)"));
  EXPECT_TRUE(denied(agent, "UPDATE gpuledger.window_totals SET cost_micros = 0"));
  EXPECT_TRUE(denied(agent, "SELECT cost_micros FROM gpuledger.window_totals"));
  EXPECT_TRUE(denied(agent, "UPDATE gpuledger.rollups SET cost_micros = 0"));
  EXPECT_TRUE(denied(agent, "DELETE FROM gpuledger.rollups"));
  EXPECT_TRUE(denied(agent, "SELECT body FROM gpuledger.rollups"));
  EXPECT_TRUE(denied(agent, "SELECT gpuledger.count_windows()"));
  fleet::PgConnection reader(pg_->conninfo("finance"), reader_pw);
  fleet::check_schema(reader);
  int seen = 0;
  fleet::for_each_fleet_window(reader, kFleetT0, kFleetT0 + 60 * 86400, {}, [&](ledger::WindowRecord&&) { ++seen; });
  EXPECT_EQ(seen, 1);
  EXPECT_TRUE(denied(reader, "INSERT INTO gpuledger.windows(cluster) VALUES ('c')"));
  EXPECT_TRUE(denied(reader, "UPDATE gpuledger.windows SET body = body"));
  EXPECT_TRUE(denied(reader, "DELETE FROM gpuledger.windows"));
  EXPECT_TRUE(denied(reader, "SELECT gpuledger.ensure_month(0)"));
  EXPECT_TRUE(denied(reader, "DELETE FROM gpuledger.window_totals"));
  EXPECT_EQ(reader.query("SELECT windows FROM gpuledger.window_totals WHERE period = 'month'").text(0, 0), "1");
  EXPECT_EQ(count("windows"), 1);
}

TEST_F(FleetDb, ConnectionStringsAreRedactedAndPasswordsComeFromFiles) {
  EXPECT_EQ(fleet::redacted("postgresql://agent:s3cret@db.example:6432/ledger?sslmode=verify-full"),
            "postgresql://agent@db.example:6432/ledger");
  EXPECT_TRUE(fleet::has_password("host=db password=s3cret"));
  EXPECT_FALSE(fleet::has_password("host=db sslmode=require"));
  EXPECT_THROW(fleet::redacted("postgresql://[::1"), Error);
  try {
    fleet::PgConnection bad(pg_->conninfo(), scratch_ / "missing.pw");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read it"), std::string::npos);
  }
  std::ofstream(scratch_ / "wrong.pw") << "wrong\n";
  try {
    fleet::PgConnection bad(pg_->conninfo(), scratch_ / "wrong.pw");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("wrong"), std::string::npos) << "no password in an error: " << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
}

// The store is the outbox: through an outage nothing is lost, the backlog
// drains in order, and the fleet bill equals the local bill exactly.
TEST_F(FleetDb, AnOutageLosesNothingAndTheFleetBillEqualsTheLocalBill) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  for (int i = 0; i < 5; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
  fleet::FleetShipperOptions o;
  o.conninfo = pg_->conninfo();
  o.password_file = pg_->admin_password_file();
  o.store_path = path;
  o.origin = {"prod", "node-1"};
  o.batch_windows = 2;  // bounded batches: three rounds for five windows
  o.interval = std::chrono::milliseconds(100);
  o.first_retry = o.max_retry = std::chrono::milliseconds(200);
  fleet::FleetShipper shipper(o);
  shipper.start();
  ASSERT_TRUE(eventually([&] { return shipper.status().shipped == 5; }, std::chrono::seconds(20)))
      << shipper.status().reason;
  EXPECT_TRUE(has_line(metrics(shipper), "gpuledger_fleet_db_up 1"));
  EXPECT_TRUE(has_line(metrics(shipper), "gpuledger_fleet_db_pending_windows 0"));

  pg_->stop();
  for (int i = 5; i < 12; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
  ASSERT_TRUE(eventually([&] { return !shipper.status().up && shipper.status().pending == 7; }, std::chrono::seconds(20)))
      << shipper.status().reason;
  const std::string down = metrics(shipper);
  EXPECT_TRUE(has_line(down, "gpuledger_fleet_db_up 0")) << down;
  EXPECT_TRUE(has_line(down, "gpuledger_fleet_db_pending_windows 7")) << down;
  EXPECT_EQ(down.find("gpuledger_fleet_db_errors_total{reason=\"connect\"} 0\n"), std::string::npos) << down;
  EXPECT_NE(down.find("gpuledger_fleet_db_oldest_pending_window_age_seconds "), std::string::npos) << down;
  EXPECT_NE(shipper.status().reason.find("(connect)"), std::string::npos) << shipper.status().reason;

  pg_->start();
  ASSERT_TRUE(eventually([&] { return shipper.status().up && shipper.status().pending == 0; }, std::chrono::seconds(30)))
      << shipper.status().reason;
  shipper.stop();
  admin_ = std::make_unique<fleet::PgConnection>(pg_->conninfo(), pg_->admin_password_file());  // the outage cut it
  EXPECT_EQ(shipper.status().shipped, 12u);
  EXPECT_EQ(count("windows"), 12);
  // In order: the shipped_at stamps follow the windows' starts.
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM (SELECT start_time, shipped_at, lag(shipped_at) OVER (ORDER BY start_time) "
                      "AS before FROM gpuledger.windows) x WHERE shipped_at < before"),
            "0\n");

  const auto local = report::build_report(store, kFleetT0, kFleetT0 + 86400, report::GroupBy::kTeam);
  report::ReportBuilder builder(kFleetT0, kFleetT0 + 86400, report::GroupBy::kTeam);
  fleet::for_each_fleet_window(*admin_, kFleetT0, kFleetT0 + 86400, {}, [&](ledger::WindowRecord&& w) { builder.add(w); });
  const auto fleet_bill = builder.finish();
  EXPECT_EQ(fleet_bill.total.cost_total_micros(), local.total.cost_total_micros());
  EXPECT_EQ(local.total.cost_total_micros(), 12 * 60'000 + 66);
  ASSERT_EQ(fleet_bill.rows.size(), local.rows.size());
  for (size_t i = 0; i < local.rows.size(); ++i) {
    EXPECT_EQ(fleet_bill.rows[i].key, local.rows[i].key);
    EXPECT_EQ(fleet_bill.rows[i].cost_busy_micros, local.rows[i].cost_busy_micros);
    EXPECT_EQ(fleet_bill.rows[i].cost_idle_micros, local.rows[i].cost_idle_micros);
    EXPECT_EQ(fleet_bill.rows[i].energy_millijoules, local.rows[i].energy_millijoules);
  }
  EXPECT_EQ(report::render_csv(fleet_bill, true), report::render_csv(local, true));
}

// Issue 31: the fleet's FOCUS export, by the real CLI from the real database, passes every rule of the FinOps
// Foundation's FOCUS 1.2 model that applies (a GPU and a MIG instance without energy, two nodes).
TEST_F(FleetDb, TheFleetFocusPassesTheFoundationsRules) {
  std::vector<ledger::WindowRecord> ws;
  for (int i = 0; i < 3; ++i) ws.push_back(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
  ws.push_back(fleet_window(kFleetT0, "MIG-b"));
  ws.back().slot.mig_profile = "3g.40gb";
  ws.back().energy.reset();
  fleet::FleetSinkPostgres a(*admin_, {"prod", "node-1"});
  fleet::FleetSinkPostgres b(*admin_, {"prod", "node-2"});
  EXPECT_EQ(a.ship(pointers(ws)), std::vector<Delivery>(4, Delivery::kStored));
  EXPECT_EQ(b.ship(pointers({ws[0]})), std::vector<Delivery>(1, Delivery::kStored));
  std::vector<std::string> exports;
  for (const char* g : {"hour", "day", "month"}) {
    const Proc p = run(gpuledger() + " report --fleet-db '" + pg_->conninfo() + "' --fleet-db-password-file " +
                       pg_->admin_password_file() +
                       " --from 2027-01-15T08:00:00Z --to 2027-01-16T00:00:00Z --format focus --granularity " + g);
    ASSERT_EQ(p.status, 0) << p.out;
    EXPECT_NE(p.out.find("MIG 3g.40gb"), std::string::npos) << p.out;
    exports.push_back(p.out);
  }
  const Proc rules = run_focus_rules(scratch_, exports);
  std::printf("%s", rules.out.c_str());
  EXPECT_EQ(rules.status, 0) << rules.out;
  EXPECT_NE(rules.out.find("failed 0"), std::string::npos) << rules.out;
}

// Roll-ups and retention leave the outbox whole.
TEST_F(FleetDb, RollUpsAndRetentionNeverLoseOrResendAWindow) {
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  ledger::Outbox outbox(store);
  const int64_t hour = kFleetT0 / 3600 * 3600;
  for (int i = 0; i < 4; ++i) store.insert_window(fleet_window(hour + 60 * i, "GPU-a", i));            // will be shipped
  for (int i = 0; i < 4; ++i) store.insert_window(fleet_window(hour + 3600 + 60 * i, "GPU-a", i));     // stays pending
  auto batch = outbox.next_batch(4);
  ASSERT_EQ(batch.size(), 4u);
  EXPECT_EQ(batch.front().window.start, hour);
  std::vector<int64_t> ids;
  for (const auto& p : batch) ids.push_back(p.id);
  outbox.mark(ids, ledger::Outbox::Mark::kShipped);
  EXPECT_EQ(outbox.pending_count(), 4);
  EXPECT_EQ(store.roll_up_before(hour + 7200), 6) << "each hour merges into one window";
  EXPECT_EQ(outbox.pending_count(), 1) << "the unshipped hour is one pending window, the shipped one is not resent";
  EXPECT_EQ(outbox.next_batch(10).front().window.start, hour + 3600);
  // Retention keeps what has not been shipped.
  EXPECT_EQ(store.delete_before(hour + 86400), 1);
  EXPECT_EQ(outbox.pending_count(), 1);
  EXPECT_EQ(store.windows(0, hour + 86400).size(), 1u);
}

// Schema 8: a store of schema 6 (or 7) gets the outbox marker in place, and
// every window it held is pending (it was never shipped).
TEST(FleetOutbox, AStoreFromBeforeSchemaEightHasEveryWindowPending) {
  char tmpl[] = "/tmp/gpuledger-outbox-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/ledger.db";
  {
    ledger::Store store(path);
    store.insert_window(fleet_window(kFleetT0, "GPU-a"));
    store.insert_window(fleet_window(kFleetT0 + 60, "GPU-a"));
  }
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "DROP INDEX windows_unshipped; ALTER TABLE windows DROP COLUMN shipped; PRAGMA user_version = 6;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw);
  sqlite3_close(raw);
  {
    ledger::Store report(path, ledger::Store::Mode::kReadOnly);
    EXPECT_EQ(report.schema_version(), 6);
    EXPECT_EQ(report.windows(0, kFleetT0 + 120).size(), 2u);
  }
  ledger::Store store(path);
  EXPECT_EQ(store.schema_version(), ledger::kStoreSchemaVersion);
  ledger::Outbox outbox(store);
  EXPECT_EQ(outbox.pending_count(), 2);
  EXPECT_EQ(outbox.oldest_pending_end(), kFleetT0 + 60);
  const auto batch = outbox.next_batch(1);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].window, fleet_window(kFleetT0, "GPU-a"));
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

// Marks are made a run of consecutive ids at a time: ids out of order, with
// gaps and named twice mark exactly the windows named, none between them.
TEST(FleetOutbox, AMarkTouchesTheWindowsItNamesAndNoneBetweenThem) {
  char tmpl[] = "/tmp/gpuledger-outbox-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  {
    ledger::Store store(std::string(tmpl) + "/ledger.db");
    ledger::Outbox outbox(store);
    for (int i = 0; i < 7; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
    const auto all = outbox.next_batch(10);
    ASSERT_EQ(all.size(), 7u);
    auto id = [&](int i) { return all[static_cast<size_t>(i)].id; };
    outbox.mark({id(5), id(0), id(1), id(5), id(3)}, ledger::Outbox::Mark::kShipped);
    outbox.mark({id(2)}, ledger::Outbox::Mark::kRefused);
    EXPECT_EQ(outbox.pending_count(), 2);
    EXPECT_EQ(outbox.refused_count(), 1);
    const auto left = outbox.next_batch(10);
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].id, id(4));
    EXPECT_EQ(left[1].id, id(6));
  }
  std::error_code ec;
  fs::remove_all(tmpl, ec);
}

// A statement sent ahead (a cursor's next page) is received once; nothing
// else runs on the connection meanwhile, and its error is the query's.
TEST_F(FleetDb, AStatementSentAheadIsReceivedOnceAndBlocksTheConnectionUntilThen) {
  admin_->send("SELECT 41 + 1");
  EXPECT_THROW(admin_->query("SELECT 1"), Error);
  EXPECT_THROW(admin_->exec("SELECT 1"), Error);
  EXPECT_THROW(admin_->send("SELECT 1"), Error);
  EXPECT_EQ(admin_->receive().text(0, 0), "42");
  EXPECT_THROW(admin_->receive(), Error) << "nothing in flight";
  admin_->send("SELECT 1 / 0");
  try {
    admin_->receive();
    FAIL() << "division by zero was received";
  } catch (const Error& e) {
    EXPECT_EQ(fleet::sqlstate_of(e.what()), "22012") << e.what();
  }
  EXPECT_EQ(admin_->query("SELECT 'usable'").text(0, 0), "usable");
}

// A cursor's next page received on a thread of its own (page_receiver.h):
// the connection stays refused to this thread's statements until the page is
// received, never shared with that thread; its error is the query's, thrown
// where it is taken; a page never taken is waited for, not left on the wire.
TEST_F(FleetDb, APageReceivedOnAnotherThreadKeepsTheConnectionUntilItIsReceived) {
  {
    fleet::PageReceiver ahead(*admin_);
    EXPECT_FALSE(ahead.pending());
    ahead.send("SELECT 42 FROM pg_sleep(1)");
    EXPECT_TRUE(ahead.pending());
    EXPECT_THROW(admin_->query("SELECT 1"), Error) << "still received on the other thread";
    EXPECT_THROW(admin_->send("SELECT 1"), Error);
    EXPECT_EQ(ahead.take().text(0, 0), "42");
    EXPECT_FALSE(ahead.pending());
    EXPECT_EQ(admin_->query("SELECT 'usable'").text(0, 0), "usable");
    ahead.send("SELECT 1 / 0 FROM pg_sleep(1)");
    EXPECT_THROW(admin_->exec("SELECT 1"), Error);
    try {
      ahead.take();
      FAIL() << "division by zero was received";
    } catch (const Error& e) {
      EXPECT_EQ(fleet::sqlstate_of(e.what()), "22012") << e.what();
    }
    ahead.send("SELECT 43");  // the same thread receives again
    EXPECT_EQ(ahead.take().text(0, 0), "43");
    ahead.send("SELECT 44 FROM pg_sleep(1)");  // never taken: the receiver's end waits for it
  }
  EXPECT_EQ(admin_->query("SELECT 'usable again'").text(0, 0), "usable again");
}

}  // namespace
}  // namespace gpuledger::testing
