// Fleet schema 7 (issue 30): a window is one row, its accounts, charges and
// energy parts its JSON body, read back by the views gpuledger.accounts,
// charges and energy_charges. Against a real PostgreSQL server (pg_server.h):
// - an upgrade from schema 6 turns every child row into the body the views
//   read back exactly, and the bill does not move by a micro-unit;
// - a body the views could not read (or would read as what the tables of
//   schema 6 refused) is refused whole, with an agent's credentials, and
//   every report of the month still runs;
// - a day or a month roll-up is checked against its finer roll-ups where they
//   are verified and current, its windows elsewhere, with the same verdicts.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "common/error.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "full_window.h"
#include "ledger/store.h"

namespace gpuledger::testing {
namespace {

using fleet::Delivery;
using fleet::Period;
using nlohmann::json;

// Windows with every field set, every optional unknown, Slurm names, no
// energy, and two GPUs over a day: what an upgrade must carry over.
std::vector<ledger::WindowRecord> varied_windows() {
  std::vector<ledger::WindowRecord> ws = {full_window(kFleetT0, 0), full_window(kFleetT0, 1),
                                          unknown_window(kFleetT0 + 60)};
  auto slurm = fleet_window(kFleetT0 + 120, "GPU-s");
  slurm.accounts[0].labels.slurm_user = "alice";
  slurm.accounts[0].labels.slurm_account = "physics";
  slurm.energy.reset();
  ws.push_back(slurm);
  for (auto& w : two_gpus()) ws.push_back(std::move(w));
  return ws;
}

std::vector<ledger::WindowRecord> read_all(fleet::PgConnection& db) {
  std::vector<ledger::WindowRecord> out;
  fleet::for_each_fleet_window(db, kFleetDay0, kFleetDay0 + 3 * 86400, {},
                               [&](ledger::WindowRecord&& w) { out.push_back(std::move(w)); });
  return out;
}

TEST_F(FleetDb, AnUpgradeToOneRowAWindowKeepsEveryRowAndTheBill) {
  pg_->psql("CREATE DATABASE upgrade");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "upgrade"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 6), 6);
  fleet::FleetSinkPostgres sink(db, {"prod", "node-1"});
  const auto ws = varied_windows();
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  const std::string accounts = "SELECT * FROM gpuledger.accounts ORDER BY cluster, node, gpu_uuid, start_time, account";
  const std::string charges =
      "SELECT * FROM gpuledger.charges ORDER BY cluster, node, gpu_uuid, start_time, account, kind";
  const std::string energy =
      "SELECT * FROM gpuledger.energy_charges ORDER BY cluster, node, gpu_uuid, start_time, account, kind";
  const std::string accounts_before = rows_of(db, accounts), charges_before = rows_of(db, charges),
                    energy_before = rows_of(db, energy);
  // The report reads bodies (schema 7 on; an older database it refuses): what
  // it must read of the upgraded one is what it reads of one whose agent
  // shipped the same windows at this schema.
  pg_->psql("CREATE DATABASE shipped_now");
  fleet::PgConnection now(pg_->conninfo("gpuledger_admin", "shipped_now"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(now, kFleetT0), fleet::kFleetSchemaVersion);
  fleet::FleetSinkPostgres sink_now(now, {"prod", "node-1"});
  ASSERT_EQ(sink_now.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  const auto windows_before = read_all(now);
  const int64_t from = kFleetDay0 + 22 * 3600, to = kFleetDay0 + 3 * 86400;  // two_gpus(): one currency
  const Read bill_before = read(now, from, to, std::nullopt);
  ASSERT_EQ(windows_before.size(), ws.size());

  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  EXPECT_EQ(rows_of(db, "SELECT relkind FROM pg_class WHERE oid = 'gpuledger.charges'::regclass"), "v\n");
  EXPECT_EQ(rows_of(db, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = 'gpuledger' AND c.relname ~ '^(accounts|charges|energy_charges)_'"),
            "0\n");
  EXPECT_EQ(rows_of(db, accounts), accounts_before);
  EXPECT_EQ(rows_of(db, charges), charges_before);
  EXPECT_EQ(rows_of(db, energy), energy_before);
  EXPECT_EQ(read_all(db), windows_before);
  expect_same_bill(read(db, from, to, std::nullopt), bill_before);
  // Each body is the one a schema-7 agent ships for that window (as JSON
  // values: the server writes a double 27.0 as 27).
  for (const auto& w : ws)
    EXPECT_EQ(rows_of(db, "SELECT body::jsonb = " + db.literal(fleet::window_children_to_json(w)) +
                              "::jsonb FROM gpuledger.windows WHERE gpu_uuid = '" + w.slot.uuid +
                              "' AND start_time = " + std::to_string(w.start)),
              "t\n")
        << w.slot.uuid << " " << w.start;
  // And an agent of schema 7 ships on, in rows of the new shape; a resend of a window from before is still one.
  fleet::FleetSinkPostgres upgraded(db, {"prod", "node-1"});
  auto more = fleet_window(kFleetDay0 + 2 * 86400 + 7200, "GPU-a");
  EXPECT_EQ(upgraded.ship({&more}), std::vector<Delivery>{Delivery::kStored});
  EXPECT_EQ(upgraded.ship({&ws[0]}), std::vector<Delivery>{Delivery::kDuplicate});
  EXPECT_EQ(read_all(db).size(), ws.size() + 1);
}

// A window's body is the accounts, charges and energy parts of its roll-up
// JSON (window_to_json), value for value (every double the same double), but
// for a NUL (made '?', as in every fleet row); hostile names included.
TEST(WindowBody, IsTheRollUpJsonsChildrenValueForValue) {
  std::vector<ledger::WindowRecord> ws = {full_window(kFleetT0, 0), full_window(kFleetT0, 1),
                                          unknown_window(kFleetT0), fleet_window(kFleetT0, "GPU-a", 5)};
  ws.push_back(ws.back());
  ws.back().energy.reset();
  for (const std::string& name : {std::string("say \"hi\" \\ back\\slash"), std::string("tab\there\nline"),
                                  std::string("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"), std::string("\x01\x1f\x7f"),
                                  std::string("bad \xff utf-8"), std::string(""), std::string("{\"json\": [1]}")}) {
    auto w = fleet_window(kFleetT0, "GPU-a", 7);
    w.accounts[0].account = w.charges[0].account = w.energy->charges[0].account = name;
    w.accounts[1].labels.slurm_user = name;
    ws.push_back(w);
  }
  for (const auto& w : ws) {
    const json whole = json::parse(fleet::window_to_json(w));
    json children = {{"accounts", whole["accounts"]}, {"charges", whole["charges"]}};
    if (w.energy) children["energy"] = whole["energy"]["parts"];
    EXPECT_EQ(json::parse(fleet::window_children_to_json(w)), children);
  }
  auto nul = fleet_window(kFleetT0, "GPU-a");
  nul.accounts[0].labels.team = std::string("a\0b", 3);
  EXPECT_EQ(json::parse(fleet::window_children_to_json(nul))["accounts"][0][4], "a?b");
}

// A valid body of one window, as JSON to mutate.
json valid_body(bool energy = true) {
  auto w = fleet_window(kFleetT0, "GPU-a");
  if (!energy) w.energy.reset();
  return json::parse(fleet::window_children_to_json(w));
}

// Attack: an agent's own windows with bodies no report could read, or that
// the tables of schema 6 refused. Each insert is refused whole and nothing
// stays; the month's reports still run.
TEST_F(FleetDb, AttackABodyNoReportCouldReadIsRefusedWhole) {
  const std::string role = fleet::add_node_role(*admin_, "node-a", std::string("prod"));
  fleet::PgConnection agent(pg_->conninfo(role), pg_->set_password(role));
  const std::string insert = kAgentWindowInsert;
  int64_t start = kFleetT0;  // a new key each time: only the body can be refused
  auto try_body = [&](const std::string& body, bool energy) {
    start += 60;
    try {
      agent.query(insert, {std::to_string(start), energy ? fleet::PgParam("18000000") : std::nullopt, body});
      return std::string();
    } catch (const Error& e) {
      return fleet::sqlstate_of(e.what());
    }
  };
  auto with = [](json b, const std::function<void(json&)>& change) {
    change(b);
    return b.dump();
  };
  // A number JSON allows but a double cannot hold, where the text has "@".
  auto literal = [](std::string text, const std::string& number) {
    return text.replace(text.find("\"@\""), 3, number);
  };
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"an array", "[]"},
      {"a string", "\"accounts\""},
      {"no charges", with(valid_body(), [](json& b) { b.erase("charges"); })},
      {"accounts an object", with(valid_body(), [](json& b) { b["accounts"] = json::object(); })},
      {"no energy parts", with(valid_body(), [](json& b) { b.erase("energy"); })},
      {"an account an object", with(valid_body(), [](json& b) { b["accounts"][0] = json::object(); })},
      {"an account without a share", with(valid_body(), [](json& b) { b["accounts"][0][5] = nullptr; })},
      {"a share in words", with(valid_body(), [](json& b) { b["accounts"][0][5] = "half"; })},
      {"launches past bigint", with(valid_body(), [](json& b) { b["accounts"][0][12] = 1e30; })},
      {"launches a fraction", with(valid_body(), [](json& b) { b["accounts"][0][12] = 1.5; })},
      {"a share past a double", literal(with(valid_body(), [](json& b) { b["accounts"][0][5] = "@"; }), "1e400")},
      {"a share under a double", literal(with(valid_body(), [](json& b) { b["accounts"][0][5] = "@"; }), "1e-400")},
      {"half an idle run", with(valid_body(), [](json& b) { b["accounts"][0][22] = {1.0, nullptr, 2.0}; })},
      {"a team of null", with(valid_body(), [](json& b) { b["accounts"][1][4] = nullptr; })},
      {"a charge of a made-up kind", with(valid_body(), [](json& b) { b["charges"][0][1] = "bonus"; })},
      {"a negative charge", with(valid_body(), [](json& b) { b["charges"][0][2] = -5; })},
      {"a charge past the bound", with(valid_body(), [](json& b) { b["charges"][0][2] = 10000000001LL; })},
      {"a charge of no account", with(valid_body(), [](json& b) { b["charges"][0][0] = nullptr; })},
      {"a charge as an object", with(valid_body(), [](json& b) { b["charges"][0] = {{"a", 1}}; })},
      {"a charge in words", with(valid_body(), [](json& b) { b["charges"][0][2] = "lots"; })},
      {"a charge a fraction", with(valid_body(), [](json& b) { b["charges"][0][2] = 27000.5; })},
      {"a charge written as a double", with(valid_body(), [](json& b) { b["charges"][0][2] = 27000.0; })},
      {"memory energy", with(valid_body(), [](json& b) { b["energy"][0][1] = "memory"; })},
      {"energy past the bound", with(valid_body(), [](json& b) { b["energy"][0][2] = 10000000000001LL; })},
  };
  for (const auto& [what, body] : hostile) {
    const std::string state = try_body(body, true);
    EXPECT_FALSE(state.empty()) << what << ": stored";
    EXPECT_TRUE(state == "23514" || state.substr(0, 2) == "22") << what << ": " << state;
  }
  // Energy parts on a window that knows no energy.
  EXPECT_EQ(try_body(valid_body(true).dump(), false), "23514");
  EXPECT_EQ(count("windows"), 0);
  // What a schema-7 agent ships is taken, with its energy and without.
  EXPECT_EQ(try_body(valid_body().dump(), true), "");
  EXPECT_EQ(try_body(valid_body(false).dump(), false), "");
  EXPECT_EQ(rows_of(*admin_, "SELECT sum(micros) FROM gpuledger.charges WHERE account = 'k8s/pod-a' AND kind = 'busy'"),
            "54000\n");
  const Proc report = run(gpuledger() + " report --fleet-db '" + pg_->conninfo() + "' --fleet-db-password-file " +
                          pg_->admin_password_file() + " --month 2027-01 --format json");
  EXPECT_EQ(report.status, 0) << report.out;
}

// The windows' parts as the views read them, in their order: what a window
// read by the report must carry whatever form its body was written in.
ledger::WindowRecord parts_from_views(fleet::PgConnection& db, ledger::WindowRecord w) {
  w.accounts.clear();
  w.charges.clear();
  if (w.energy) w.energy->charges.clear();
  std::string columns = "cluster, node, gpu_uuid, start_time";
  for (const auto& c : fleet::kAccountColumns) columns += ", " + c;
  const std::vector<fleet::PgParam> at = {std::to_string(w.start)};
  fleet::PgResult a =
      db.query("SELECT " + columns + " FROM gpuledger.accounts WHERE start_time = $1 ORDER BY account", at);
  for (int i = 0; i < a.rows(); ++i) w.accounts.push_back(fleet::read_account_columns(a, i));
  fleet::PgResult c =
      db.query("SELECT account, kind, micros FROM gpuledger.charges WHERE start_time = $1 ORDER BY 1, 2", at);
  for (int i = 0; i < c.rows(); ++i)
    w.charges.push_back({c.text(i, 0), ledger::parse_charge_kind(c.text(i, 1)), c.i64(i, 2)});
  fleet::PgResult e = db.query(
      "SELECT account, kind, millijoules FROM gpuledger.energy_charges WHERE start_time = $1 ORDER BY 1, 2", at);
  for (int i = 0; i < e.rows() && w.energy; ++i)
    w.energy->charges.push_back({e.text(i, 0), ledger::parse_charge_kind(e.text(i, 1)), e.i64(i, 2)});
  return w;
}

// The report reads a window's body itself (canonical_window_json.h) and asks
// the views for those it leaves: whatever form an agent wrote a body in that
// the database took - spaced, keys reordered or repeated or unknown, numbers
// and booleans as strings, an integer as 1e3, a negative zero, an escape, an
// account of 24 cells, parts out of order - the window the report reads holds
// the parts the views read, in their order, to the bit.
TEST_F(FleetDb, AWindowsPartsReadAsTheViewsReadThemWhateverFormItsBodyTook) {
  const std::string role = fleet::add_node_role(*admin_, "node-a", std::string("prod"));
  fleet::PgConnection agent(pg_->conninfo(role), pg_->set_password(role));
  const std::string insert = kAgentWindowInsert;
  auto with = [](json b, const std::function<void(json&)>& change) {
    change(b);
    return b.dump();
  };
  auto literal = [](std::string text, const std::string& value) {  // "@" in the text replaced
    return text.replace(text.find("\"@\""), 3, value);
  };
  const json b = valid_body();
  const std::string accounts = b["accounts"].dump(), charges = b["charges"].dump(), energy = b["energy"].dump();
  const std::vector<std::pair<std::string, bool>> bodies = {
      {b.dump(), true},
      {valid_body(false).dump(), false},
      {b.dump(2), true},
      {"{\"energy\":" + energy + ",\"charges\":" + charges + ",\"accounts\":" + accounts + "}", true},
      {"{\"accounts\":" + accounts + ",\"charges\":[],\"charges\":" + charges + ",\"energy\":" + energy + "}", true},
      {with(b, [](json& x) { x["zzz"] = 1; }), true},
      {with(b, [](json& x) { x["accounts"][0][5] = "0.25"; }), true},
      {with(b, [](json& x) { x["accounts"][0][7] = "no"; }), true},
      {literal(with(b, [](json& x) { x["accounts"][0][12] = "@"; }), "1e3"), true},
      {literal(with(b, [](json& x) { x["accounts"][1][8] = "@"; }), "-0.0"), true},
      {literal(with(b, [](json& x) { x["accounts"][0][2] = "@"; }), "\"pod-\\u0041\""), true},
      {with(b, [](json& x) { x["accounts"][0].push_back("alice"); }), true},
      {with(b,
            [](json& x) {
              std::reverse(x["accounts"].begin(), x["accounts"].end());
              std::reverse(x["charges"].begin(), x["charges"].end());
              std::reverse(x["energy"].begin(), x["energy"].end());
            }),
       true},
  };
  int64_t start = kFleetT0;
  for (const auto& [body, has_energy] : bodies) {
    start += 60;
    agent.query(insert, {std::to_string(start), has_energy ? fleet::PgParam("18000000") : std::nullopt, body});
  }
  std::vector<ledger::WindowRecord> read;
  fleet::for_each_fleet_window(*admin_, kFleetT0, start + 60, {},
                               [&](ledger::WindowRecord&& w) { read.push_back(std::move(w)); });
  ASSERT_EQ(read.size(), bodies.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].start, kFleetT0 + 60 * static_cast<int64_t>(i + 1));
    EXPECT_FALSE(read[i].accounts.empty()) << bodies[i].first;
    // window_to_json writes -0.0 and 0.0 apart.
    EXPECT_EQ(fleet::window_to_json(read[i]), fleet::window_to_json(parts_from_views(*admin_, read[i])))
        << bodies[i].first;
  }
  // The bodies whose values only the views read as they did: a share "no" is false, 1e3 launches 1000.
  auto account = [&](size_t i) {
    return *std::find_if(read[i].accounts.begin(), read[i].accounts.end(), [&](const ledger::AccountRecord& a) {
      return a.account == b["accounts"][0][0].get<std::string>();
    });
  };
  EXPECT_FALSE(account(7).allocated_share_known);
  EXPECT_EQ(account(8).launches, 1000u);
}

// Across pages: 5,500 windows read in pages of 5,000 (the next asked for
// ahead while one is read), every seventh body rewritten by the database in
// its own form (spaced, keys reordered: the views read those). Each page's
// are asked of the views while the next page is on its way, and every window
// reads as it did when all were an agent's.
TEST_F(FleetDb, BodiesInAnotherFormOnEveryPageReadAsTheirWindowsDid) {
  fleet::FleetSinkPostgres sink(*admin_, {"prod", "node-1"});
  std::vector<ledger::WindowRecord> ws;
  for (int i = 0; i < 5500; ++i) ws.push_back(fleet_window(kFleetT0 + 60 * i, "GPU-a", i % 13));
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  const int64_t to = kFleetT0 + 60 * 5500;
  auto read_range = [&] {
    std::vector<ledger::WindowRecord> out;
    fleet::for_each_fleet_window(*admin_, kFleetT0, to, {},
                                 [&](ledger::WindowRecord&& w) { out.push_back(std::move(w)); });
    return out;
  };
  const auto before = read_range();
  ASSERT_EQ(before.size(), ws.size());
  pg_->psql("UPDATE gpuledger.windows SET body = body::jsonb::text::json WHERE (start_time / 60) % 7 = 0");
  int rewritten = 0;
  for (const auto& w : ws) rewritten += (w.start / 60) % 7 == 0;
  EXPECT_EQ(rows_of(*admin_, "SELECT count(*) FROM gpuledger.windows WHERE body::text LIKE '{\"energy\": %'"),
            std::to_string(rewritten) + "\n");
  const auto after = read_range();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(fleet::window_to_json(after[i]), fleet::window_to_json(before[i])) << i;
}

// A day roll-up is checked against its hours' verified roll-ups where they
// are current and its windows elsewhere: a forged hour is not believed (its
// windows are read instead), and the day's verdict is the windows'.
TEST_F(FleetDb, ADayIsCheckedAgainstItsVerifiedHoursAndItsWindowsElsewhere) {
  const fleet::Origin origin{"prod", "node-1"};
  fleet::FleetSinkPostgres sink(*admin_, origin);
  ledger::Store store((scratch_ / "ledger.db").string());
  const int64_t day = kFleetDay0 + 86400;
  std::vector<ledger::WindowRecord> ws;
  for (int64_t t = day; t < day + 86400; t += 60) ws.push_back(fleet_window(t, "GPU-a", t % 89));
  store.insert_windows(ws);
  ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(ws.size(), Delivery::kStored));
  // Hours 0 to 21 with their true roll-ups; hour 22 forged (money moved between pods): refused; hour 23 none.
  for (int h = 0; h < 22; ++h)
    EXPECT_EQ(sink.ship_rollups(fleet::build_rollups(store, origin, Period::kHour, day + h * 3600)),
              std::vector<Delivery>{Delivery::kStored});
  auto forged = fleet::build_rollups(store, origin, Period::kHour, day + 22 * 3600);
  ASSERT_EQ(forged.size(), 1u);
  forged[0].window.charges[0].micros += 1000;
  forged[0].window.charges[2].micros -= 1000;
  EXPECT_EQ(sink.ship_rollups(forged), std::vector<Delivery>{Delivery::kUnverified});
  // The true day: verified (22 hours read from their roll-ups, 120 windows).
  auto days = fleet::build_rollups(store, origin, Period::kDay, day);
  ASSERT_EQ(days.size(), 1u);
  const auto true_day = days;
  // A day forged as the hour was: refused, as its windows say.
  days[0].window.charges[0].micros += 1000;
  days[0].window.charges[2].micros -= 1000;
  EXPECT_EQ(sink.ship_rollups(days), std::vector<Delivery>{Delivery::kUnverified});
  EXPECT_EQ(pg_->psql("SELECT refusal FROM gpuledger.rollups WHERE period = 'day'"),
            "its charges or energy are not its windows'\n");
  pg_->psql("DELETE FROM gpuledger.rollups WHERE period = 'day'");
  EXPECT_EQ(sink.ship_rollups(true_day), std::vector<Delivery>{Delivery::kStored});
  // Every verdict is the one of the check that reads windows only (schema 5's rules).
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups"), "24\n");
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups r "
                      "WHERE gpuledger.check_rollup(r) IS DISTINCT FROM gpuledger.check_rollup_5(r)"),
            "0\n");
  // The day's bill read at days is its windows', to the micro-unit.
  expect_same_bill(read(*admin_, day, day + 86400, Period::kDay), read(*admin_, day, day + 86400, std::nullopt));
}

}  // namespace
}  // namespace gpuledger::testing
