// Issue 30: nothing an agent sends is believed beyond what it proves, and each
// node ships as its own role. Every attack of the issue is replayed here with
// an agent's credentials against a real PostgreSQL server (pg_server.h): it
// fails, and what it left is counted (the shipper's metrics, the report's
// warnings, gpuledger.rollups.refusal, gpuledger.overlaps, the server's log).
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "cli_process.h"
#include "common/error.h"
#include "common/log.h"
#include "fleet/fleet_reader.h"
#include "fleet/fleet_roles.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_rows.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_shipper.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/window_json.h"
#include "fleet_db_fixture.h"
#include "ledger/outbox.h"
#include "metrics/prometheus_text.h"
#include "report/report.h"

namespace gpuledger::testing {
namespace {

namespace fs = std::filesystem;
using fleet::Delivery;
using fleet::Period;

const int64_t kHour0 = kFleetT0 / 3600 * 3600;  // 2027-01-15T08:00:00Z

// A node's own role (`fleet-db add-node`), with a password.
struct NodeRole {
  std::string role, password_file;
};
NodeRole add_node(PgServer& pg, fleet::PgConnection& admin, const std::string& node,
                  const std::optional<std::string>& cluster = std::string("prod")) {
  const std::string role = fleet::add_node_role(admin, node, cluster);
  return {role, pg.set_password(role)};
}
std::unique_ptr<fleet::PgConnection> login(PgServer& pg, const NodeRole& r) {
  return std::make_unique<fleet::PgConnection>(pg.conninfo(r.role), r.password_file);
}

// An hour of one GPU's windows, a minute each.
std::vector<ledger::WindowRecord> hour_of(const std::string& gpu, int64_t hour = kHour0) {
  std::vector<ledger::WindowRecord> ws;
  for (int i = 0; i < 60; ++i) ws.push_back(fleet_window(hour + 60 * i, gpu, i));
  return ws;
}

// A fleet report by the CLI as finance runs it: its stdout, and its stderr in `err`.
Proc fleet_report(PgServer& pg, const std::string& reader_pw, const std::string& args, const fs::path& err) {
  const std::string to_err = " 2>" + err.string();
  return run(gpuledger() + " report --fleet-db '" + pg.conninfo("finance") + "' --fleet-db-password-file " + reader_pw +
                 " --month 2027-01 " + args,
             to_err.c_str());
}

TEST(FleetRoles, ANodesRoleNameIsItsNameOrAHashedOneWithinPostgresLimit) {
  EXPECT_EQ(fleet::node_role_name("node-a", std::nullopt), "gpuledger_node_node-a");
  EXPECT_EQ(fleet::node_role_name("gpu-17.dc1", std::string("prod")), "gpuledger_node_prod/gpu-17.dc1");
  const std::string odd = fleet::node_role_name("node a\"; DROP ROLE x; --", std::string("prod"));
  EXPECT_EQ(odd, fleet::node_role_name("node a\"; DROP ROLE x; --", std::string("prod"))) << "the same, always";
  EXPECT_EQ(odd.find_first_of(" \";"), std::string::npos) << odd;
  EXPECT_LE(odd.size(), 63u);
  const std::string long_name(200, 'n');
  EXPECT_EQ(fleet::node_role_name(long_name, std::nullopt).size(), 63u);
  EXPECT_NE(fleet::node_role_name(long_name, std::nullopt), fleet::node_role_name(long_name + "x", std::nullopt));
  EXPECT_THROW(fleet::node_role_name("", std::nullopt), Error);
  // "prod/a/b" would name both (prod, a/b) and (prod/a, b): a node's name holds no '/', a cluster's may.
  EXPECT_THROW(fleet::node_role_name("a/b", std::string("prod")), Error);
  EXPECT_THROW(fleet::node_role_name("a/b", std::nullopt), Error);
  EXPECT_NO_THROW(fleet::node_role_name("b", std::string("prod/a")));
}

// `gpuledger fleet-db add-node`: the role's name its only line, the same again changes nothing.
TEST_F(FleetDb, AddNodePrintsTheRoleAndIsIdempotent) {
  const std::string db = " --fleet-db '" + pg_->conninfo() + "' --fleet-db-password-file " + pg_->admin_password_file();
  const std::string err = (scratch_ / "stderr").string();
  const std::string quiet = " 2>" + err;
  for (int i = 0; i < 2; ++i) {
    const Proc p = run(gpuledger() + " fleet-db add-node node-a --cluster prod" + db, quiet.c_str());
    EXPECT_EQ(p.status, 0) << p.out << slurp(err);
    EXPECT_EQ(p.out, "gpuledger_node_prod/node-a\n");
  }
  EXPECT_EQ(run(gpuledger() + " fleet-db add-node node-b" + db, quiet.c_str()).out, "gpuledger_node_node-b\n");
  EXPECT_EQ(pg_->psql("SELECT role || ' ' || coalesce(cluster, '*') || ' ' || node FROM gpuledger.node_roles ORDER BY 1"),
            "gpuledger_node_node-b * node-b\ngpuledger_node_prod/node-a prod node-a\n");
  EXPECT_EQ(pg_->psql("SELECT rolcanlogin, rolsuper, rolcreaterole, pg_has_role(oid, 'gpuledger_agent', 'MEMBER'), "
                      "pg_has_role(oid, 'gpuledger_reader', 'MEMBER'), rolconnlimit FROM pg_roles WHERE rolname = "
                      "'gpuledger_node_node-b'"),
            "t|f|f|t|f|4\n");
  // A role of that name that is not the node's is never taken over.
  pg_->psql("CREATE ROLE \"gpuledger_node_node-c\" LOGIN");
  const Proc taken = run(gpuledger() + " fleet-db add-node node-c" + db);
  EXPECT_EQ(taken.status, 1);
  EXPECT_NE(taken.out.find("role gpuledger_node_node-c exists"), std::string::npos) << taken.out;
  // Only the owner may: an agent's role may not create roles.
  const NodeRole b{"gpuledger_node_node-b", pg_->set_password("gpuledger_node_node-b")};
  EXPECT_NE(run(gpuledger() + " fleet-db add-node node-x --fleet-db '" + pg_->conninfo(b.role) +
                "' --fleet-db-password-file " + b.password_file)
                .status,
            0);
  EXPECT_EQ(count("node_roles"), 2);
}

// Item 2: node-b's role claiming node-a's windows is refused; node-b's own ship.
TEST_F(FleetDb, ANodesRoleShipsItsOwnWindowsAndNoOtherNodes) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a"), b = add_node(*pg_, *admin_, "node-b");
  auto as_b = login(*pg_, b);
  fleet::check_schema(*as_b);
  const auto ws = hour_of("GPU-b");
  fleet::FleetSinkPostgres own(*as_b, {"prod", "node-b"});
  EXPECT_EQ(own.ship(pointers(ws)), std::vector<Delivery>(60, Delivery::kStored));
  EXPECT_EQ(own.ship(pointers(ws)), std::vector<Delivery>(60, Delivery::kDuplicate)) << "its own keys it may read";
  for (const fleet::Origin& other : {fleet::Origin{"prod", "node-a"}, fleet::Origin{"staging", "node-b"}}) {
    fleet::FleetSinkPostgres claim(*as_b, other);
    try {
      claim.ship(pointers(hour_of("GPU-a")));
      FAIL() << "node-b's role shipped " << other.cluster << "/" << other.node;
    } catch (const Error& e) {
      EXPECT_EQ(fleet::fleet_error_reason(e.what()), "not_this_node") << e.what();
      EXPECT_NE(std::string(e.what()).find("gpuledger fleet-db add-node " + other.node), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(pg_->psql("SELECT string_agg(DISTINCT cluster || '/' || node, ',') FROM gpuledger.windows"), "prod/node-b\n");
  // What it may see of the keys is its own.
  auto as_a = login(*pg_, a);
  EXPECT_EQ(as_a->query("SELECT count(*) FROM gpuledger.windows").text(0, 0), "0");
  EXPECT_EQ(as_b->query("SELECT count(*) FROM gpuledger.windows").text(0, 0), "60");
  EXPECT_EQ(as_b->query("SELECT string_agg(role, ',') FROM gpuledger.node_roles").text(0, 0), b.role);
  // `doctor` says which node a role ships, and that a role of no node ships nothing.
  const std::string shared_pw = pg_->add_login("shared_agent", "gpuledger_agent");
  for (const auto& [role, pw, said] :
       {std::tuple{b.role, b.password_file,
                   "schema " + std::to_string(fleet::kFleetSchemaVersion) +
                       ", windows of prod/node-b may be shipped, at most 4 connections at once"},
        std::tuple{std::string("shared_agent"), shared_pw,
                   std::string("this role is no node's: run `gpuledger fleet-db add-node NODE` as the owner")}}) {
    const Proc doctor =
        run(gpuledger() + " doctor --fleet-db '" + pg_->conninfo(role) + "' --fleet-db-password-file " + pw);
    EXPECT_NE(doctor.out.find(said), std::string::npos) << doctor.out;
  }
  // Nor a roll-up under another node's name.
  EXPECT_NE(refusal(*as_b, "INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, "
                           "cost_micros, digests, digest, body) VALUES ('hour', $1, 'prod', 'node-a', 'GPU-a', 1, 0, 0, "
                           "'x', '{}')",
                    {std::to_string(kHour0)})
                .find("row-level security"),
            std::string::npos);
}

// Item 2: the same through TLS with client certificates made here by openssl:
// the certificate's CN is the node, pg_ident maps it to the node's role.
TEST_F(FleetDb, ACertificateLogsANodeInAsItsOwnRoleOnly) {
  const fs::path d = scratch_;
  auto sh = [&](const std::string& cmd) {
    ASSERT_EQ(std::system(("cd " + d.string() + " && " + cmd + " >>openssl.log 2>&1").c_str()), 0)
        << cmd << "\n" << slurp(d / "openssl.log");
  };
  sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=gpuledger-test-ca -keyout ca.key -out ca.crt");
  auto issue = [&](const std::string& name, const std::string& cn, const std::string& ext) {
    sh("openssl req -newkey rsa:2048 -nodes -subj /CN=" + cn + " -keyout " + name + ".key -out " + name + ".csr");
    std::ofstream(d / (name + ".ext")) << ext << "\n";
    sh("openssl x509 -req -in " + name + ".csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile " + name +
       ".ext -out " + name + ".crt");
    fs::permissions(d / (name + ".key"), fs::perms::owner_read | fs::perms::owner_write);
  };
  issue("server", "localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost");
  issue("node-a", "node-a", "extendedKeyUsage=clientAuth");
  issue("node-b", "node-b", "extendedKeyUsage=clientAuth");
  const NodeRole a = add_node(*pg_, *admin_, "node-a", std::nullopt);
  const NodeRole b = add_node(*pg_, *admin_, "node-b", std::nullopt);
  admin_.reset();
  pg_->enable_tls((d / "server.crt").string(), (d / "server.key").string(), (d / "ca.crt").string(),
                  "gpuledger /^(.*)$ gpuledger_node_\\1\n");
  admin_ = std::make_unique<fleet::PgConnection>(pg_->conninfo(), pg_->admin_password_file());
  auto tls = [&](const std::string& role, const std::string& cert) {
    std::string c = "host=127.0.0.1 port=" + std::to_string(pg_->port()) + " dbname=postgres user=" + role +
                    " sslmode=verify-full sslrootcert=" + (d / "ca.crt").string();
    if (!cert.empty()) c += " sslcert=" + (d / (cert + ".crt")).string() + " sslkey=" + (d / (cert + ".key")).string();
    return c;
  };
  fleet::PgConnection as_b(tls(b.role, "node-b"), "");
  EXPECT_EQ(as_b.query("SELECT current_user || ' ' || ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()").text(0, 0),
            b.role + " true");
  fleet::FleetSinkPostgres own(as_b, {"prod", "node-b"});
  const auto ws = hour_of("GPU-b");
  EXPECT_EQ(own.ship(pointers(ws)), std::vector<Delivery>(60, Delivery::kStored));
  fleet::FleetSinkPostgres claim(as_b, {"prod", "node-a"});
  EXPECT_THROW(claim.ship(pointers(hour_of("GPU-a"))), Error);
  // node-b's certificate is not node-a's role; no certificate, no login.
  EXPECT_THROW(fleet::PgConnection(tls(a.role, "node-b"), ""), Error);
  EXPECT_THROW(fleet::PgConnection(tls(b.role, ""), b.password_file), Error);
  fleet::PgConnection as_a(tls(a.role, "node-a"), "");
  EXPECT_EQ(as_a.query("SELECT current_user").text(0, 0), a.role);
  EXPECT_EQ(count("windows"), 60);
}

// Item 2: a window refused because it names another node stays pending in
// the store (never shipped, never dropped), is counted as not_this_node and
// logged once; with the node's own role it ships.
TEST_F(FleetDb, WindowsRefusedAsAnotherNodesStayPendingAreCountedAndLoggedOnce) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a"), b = add_node(*pg_, *admin_, "node-b");
  const std::string path = (scratch_ / "ledger.db").string();
  {
    ledger::Store store(path);
    for (int i = 0; i < 3; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
  }
  auto log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
  spdlog::default_logger()->sinks().push_back(log);
  {
    fleet::FleetShipper wrong(shipper_options(pg_->conninfo(b.role), b.password_file, path, {"prod", "node-a"}));
    wrong.start();
    ASSERT_TRUE(eventually(
        [&] { return sample(metrics(wrong), "gpuledger_fleet_db_errors_total{reason=\"not_this_node\"}") >= 4; },
        std::chrono::seconds(20)))
        << metrics(wrong);
    wrong.stop();
    EXPECT_FALSE(wrong.status().up);
    EXPECT_EQ(wrong.status().pending, 3);
    EXPECT_NE(wrong.status().reason.find(fleet::kNotThisNode), std::string::npos) << wrong.status().reason;
    EXPECT_TRUE(has_line(metrics(wrong), "gpuledger_fleet_db_up 0"));
    EXPECT_TRUE(has_line(metrics(wrong), "gpuledger_fleet_db_pending_windows 3"));
  }
  spdlog::default_logger()->sinks().pop_back();
  int said = 0;
  for (const auto& line : log->last_formatted())
    if (line.find(fleet::kNotThisNode) != std::string::npos) ++said;
  EXPECT_EQ(said, 1) << "logged once, counted every time";
  {
    ledger::Store store(path);
    ledger::Outbox outbox(store);
    EXPECT_EQ(outbox.pending_count(), 3);
    EXPECT_EQ(outbox.refused_count(), 0);
  }
  EXPECT_EQ(count("windows"), 0);
  fleet::FleetShipper right(shipper_options(pg_->conninfo(a.role), a.password_file, path, {"prod", "node-a"}));
  right.start();
  ASSERT_TRUE(eventually([&] { return right.status().shipped == 3; }, std::chrono::seconds(20))) << right.status().reason;
  right.stop();
  EXPECT_EQ(count("windows"), 3);
}

// Attack: a roll-up whose three check numbers match the stored totals but
// whose body charges another pod 1,000,000,000 µ. The database finds it is
// not its windows' merge, the report reads the hours' windows, the bill and
// its id stay the windows', and it is counted (the shipper, the report).
TEST_F(FleetDb, AttackAForgedRollUpBodyWithMatchingNumbersChangesNoBill) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a");
  auto as_a = login(*pg_, a);
  const fleet::Origin origin{"prod", "node-a"};
  fleet::FleetSinkPostgres sink(*as_a, origin);
  const std::string path = (scratch_ / "ledger.db").string();
  ledger::Store store(path);
  for (const char* gpu : {"GPU-a", "GPU-b"}) {
    const auto ws = hour_of(gpu);
    store.insert_windows(ws);
    ASSERT_EQ(sink.ship(pointers(ws)), std::vector<Delivery>(60, Delivery::kStored));
  }
  const Read windows = read(*admin_, kHour0, kHour0 + 3600, std::nullopt);
  EXPECT_EQ(windows.records, 120);
  auto rollups = fleet::build_rollups(store, origin, Period::kHour, kHour0);
  ASSERT_EQ(rollups.size(), 2u);
  auto& forged = rollups[0];  // GPU-a: its numbers stay, its body bills pod-x
  forged.window.charges.push_back({"k8s/pod-x", ledger::ChargeKind::kBusy, 1'000'000'000});
  auto x = forged.window.accounts[0];
  x.account = "k8s/pod-x";
  x.labels = {"ml", "pod-x", "main", "vision"};
  forged.window.accounts.push_back(x);
  EXPECT_EQ(sink.ship_rollups(rollups), (std::vector<Delivery>{Delivery::kUnverified, Delivery::kStored}));
  EXPECT_EQ(pg_->psql("SELECT gpu_uuid || ' ' || verified || ' ' || coalesce(refusal, '-') FROM gpuledger.rollups "
                      "ORDER BY gpu_uuid"),
            "GPU-a false its charges or energy are not its windows'\nGPU-b true -\n");
  const Read month = read(*admin_, kHour0, kHour0 + 3600, Period::kMonth);
  EXPECT_EQ(month.records, 60 + 1) << "GPU-a's windows, GPU-b's roll-up";
  EXPECT_EQ(month.total, windows.total);
  EXPECT_EQ(month.cost_by_team, windows.cost_by_team);
  EXPECT_EQ(month.energy, windows.energy);
  EXPECT_EQ(month.windows_digest, windows.windows_digest) << "the same windows, the same bill, the same id";
  EXPECT_EQ(month.notes.refused_rollups, 1);
  const Read ragged = read(*admin_, kHour0 + 60, kHour0 + 3600, Period::kMonth);
  EXPECT_EQ(ragged.total, windows.total - hour_of("GPU-a")[0].cost_micros - hour_of("GPU-b")[0].cost_micros);
  // Every other part of a body is checked too: energy, period, cost, labels, currency.
  std::vector<std::function<void(fleet::Rollup&)>> forgeries = {
      [](fleet::Rollup& r) { r.window.energy->charges[0].millijoules += 1; r.window.energy->charges[1].millijoules -= 1; },
      [](fleet::Rollup& r) { r.window.end += 3600; },
      [](fleet::Rollup& r) { r.window.busy_micros += 1; r.window.idle_micros -= 1; },
      [](fleet::Rollup& r) { r.window.accounts[0].labels.team = "finance"; },
      [](fleet::Rollup& r) { r.window.currency = "EUR"; },
  };
  // With the right numbers under the day's key, each is caught by its body alone.
  for (size_t i = 0; i < forgeries.size(); ++i) {
    auto more = fleet::build_rollups(store, origin, Period::kDay, kHour0 / 86400 * 86400);
    ASSERT_EQ(more.size(), 2u);
    more.resize(1);
    forgeries[i](more[0]);
    pg_->psql("DELETE FROM gpuledger.rollups WHERE period = 'day'");
    EXPECT_EQ(sink.ship_rollups(more), std::vector<Delivery>{Delivery::kUnverified}) << i;
    EXPECT_NE(pg_->psql("SELECT refusal FROM gpuledger.rollups WHERE period = 'day'").find("not its windows"),
              std::string::npos)
        << i;
  }
}

// Attack: a rolled-back insert with a huge cost_micros overflowed the totals'
// bigint exactly when another node's stored sum passed a guess. Every amount
// is bounded and the totals are numeric: the answer is the same whatever the
// guess, and nothing is stored.
TEST_F(FleetDb, AttackARefusedInsertTellsNothingOfAnotherNodesSum) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a");
  fleet::FleetSinkPostgres victim(*admin_, {"prod", "node-b"});
  ASSERT_EQ(victim.ship(pointers(hour_of("GPU-b"))), std::vector<Delivery>(60, Delivery::kStored));
  auto as_a = login(*pg_, a);
  // Its own windows, over the bound: refused the same way whatever is stored.
  const std::string insert =
      "INSERT INTO gpuledger.windows(cluster, node, gpu_uuid, start_time, end_time, parent_uuid, model, gpu_fraction, "
      "currency, cost_micros, busy_micros, idle_micros, memory_micros, cost_policy, allocated_total, busy_fraction, "
      "busy_source, exclusive, observed_seconds, source, split_source, digest, body) VALUES ('prod', $1, 'GPU-b', "
      "$2::bigint, $2::bigint + 60, '', 'm', 1, 'USD', $3::bigint, $3::bigint, 0, 0, 'usage', 1, 1, 'device', true, 60, "
      "'sim', 'x', 'd', '{\"accounts\": [], \"charges\": []}')";
  std::set<std::string> answers;
  for (const char* guess : {"9223372036854775807", "9223372036850000000", "9000000000000000000", "10000000001"}) {
    const std::string said = refusal(*as_a, insert, {std::string("node-a"), std::to_string(kHour0), std::string(guess)});
    EXPECT_EQ(fleet::sqlstate_of(said), "23514") << said;  // a check constraint: the bound
    answers.insert(said);
    // Under the victim's name: row-level security first.
    const std::string other = refusal(*as_a, insert, {std::string("node-b"), std::to_string(kHour0), std::string(guess)});
    EXPECT_NE(other.find("row-level security"), std::string::npos) << other;
    answers.insert(other);
  }
  EXPECT_EQ(answers.size(), 2u) << "the same two answers whatever the guess";
  EXPECT_EQ(pg_->psql("SELECT pg_typeof(cost_micros) FROM gpuledger.window_totals LIMIT 1"), "numeric\n");
  EXPECT_EQ(pg_->psql("SELECT sum(cost_micros) FROM gpuledger.window_totals WHERE period = 'month'"),
            pg_->psql("SELECT sum(cost_micros) FROM gpuledger.windows"));
  EXPECT_EQ(count("windows"), 60);
  // At the bound, stored; the sums cannot overflow (numeric), even the owner's.
  EXPECT_EQ(refusal(*as_a, insert, {std::string("node-a"), std::to_string(kHour0), std::string("10000000000")}), "");
  EXPECT_EQ(pg_->psql("SELECT cost_micros FROM gpuledger.window_totals WHERE period = 'month' AND node = 'node-a'"),
            "10000000000\n");
  // Each refused statement is in the server's log.
  const std::string log = pg_->log();
  size_t refused = 0;
  for (size_t at = log.find("violates"); at != std::string::npos; at = log.find("violates", at + 1)) ++refused;
  EXPECT_GE(refused, 8u);
}

// Attack: one roll-up with matching numbers and a malformed body made every
// fleet report fail. It is stored unverified, counted, and every format reads
// the windows; a body the reader cannot parse (the owner's edit) is skipped too.
TEST_F(FleetDb, AttackAMalformedRollUpBodyFailsNoReport) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a");
  auto as_a = login(*pg_, a);
  fleet::FleetSinkPostgres sink(*as_a, {"prod", "node-a"});
  ASSERT_EQ(sink.ship(pointers(hour_of("GPU-a"))), std::vector<Delivery>(60, Delivery::kStored));
  const fleet::PgResult t = admin_->query(
      "SELECT windows, cost_micros, digests FROM gpuledger.window_totals WHERE period = 'month' AND gpu_uuid = 'GPU-a'");
  const std::string month = std::to_string(report::period_start(kHour0, Period::kMonth));
  // The first with the stored numbers (the attack), two more under keys of their own.
  int64_t n = t.i64(0, 0);
  for (const std::string body : {"{\"start\": 1}", "[1, 2]", "{\"slot\": [\"GPU-a\"], \"micros\": [\"x\"]}"}) {
    as_a->query("INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, "
                "digests, digest, body) VALUES ('month', $1, 'prod', 'node-a', 'GPU-a', $2, $3, $4, 'x', $5::json)",
                {month, std::to_string(n++), t.text(0, 1), t.text(0, 2), body});
  }
  EXPECT_EQ(pg_->psql("SELECT count(*) FROM gpuledger.rollups WHERE verified"), "0\n");
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const fs::path err = scratch_ / "stderr";
  for (const std::string format : {"table", "csv", "json", "html", "focus"}) {
    const Proc p = fleet_report(*pg_, reader_pw, "--format " + format, err);
    EXPECT_EQ(p.status, 0) << format << ": " << slurp(err);
    EXPECT_EQ(slurp(err),
              "gpuledger report: 3 roll-ups in the fleet database did not check out against their windows and were "
              "not read (the bill is the windows'; see gpuledger.rollups.refusal)\n")
        << format;
  }
  EXPECT_EQ(read(*admin_, kHour0, kHour0 + 3600, Period::kMonth).records, 60) << "the windows";
  // A verified roll-up whose body the owner broke afterwards: skipped, counted, never fatal.
  pg_->psql("DELETE FROM gpuledger.rollups");
  const auto rollups = [&] {
    ledger::Store store((scratch_ / "l.db").string());
    store.insert_windows(hour_of("GPU-a"));
    return fleet::build_rollups(store, {"prod", "node-a"}, Period::kMonth, std::stoll(month));
  }();
  EXPECT_EQ(sink.ship_rollups(rollups), std::vector<Delivery>{Delivery::kStored});
  pg_->psql("UPDATE gpuledger.rollups SET body = '{\"start\": 1}'");
  const Read after = read(*admin_, std::stoll(month), std::stoll(month) + 31 * 86400, Period::kMonth);
  EXPECT_EQ(after.records, 60);
  EXPECT_EQ(after.notes.refused_rollups, 1);
  // An hour's, read by a CSV or FOCUS export by hour twice (the whole bill,
  // then its rows' periods): said once.
  pg_->psql("DELETE FROM gpuledger.rollups");
  const auto hours = [&] {
    ledger::Store store((scratch_ / "l.db").string());
    return fleet::build_rollups(store, {"prod", "node-a"}, Period::kHour, kHour0);
  }();
  EXPECT_EQ(sink.ship_rollups(hours), std::vector<Delivery>{Delivery::kStored});
  pg_->psql("UPDATE gpuledger.rollups SET body = '{\"start\": 1}'");
  for (const std::string format : {"csv --granularity hour", "focus --granularity hour", "table"}) {
    const Proc p = fleet_report(*pg_, reader_pw, "--format " + format, err);
    EXPECT_EQ(p.status, 0) << format << ": " << slurp(err);
    EXPECT_EQ(slurp(err),
              "gpuledger report: 1 roll-ups in the fleet database did not check out against their windows and were "
              "not read (the bill is the windows'; see gpuledger.rollups.refusal)\n")
        << format;
  }
}

// Attack: one window of 31 days laid over another node's GPU made schema
// 10's first form read every window under it (a statement of one window,
// the server reading a GPU-month of another node's). A run of a statement's
// windows holding more than twice its own is probed as before, two a
// window: flagged the same, and a few index entries read, not thousands.
TEST_F(FleetDb, AttackALongWindowOverAnotherNodesMinutesIsProbedNotRead) {
  fleet::FleetSinkPostgres a(*admin_, {"prod", "node-a"});
  std::vector<ledger::WindowRecord> minutes;
  for (int i = 0; i < 3000; ++i) minutes.push_back(fleet_window(kFleetDay0 + 60 * i, "GPU-a", i));
  ASSERT_EQ(a.ship(pointers(minutes)), std::vector<Delivery>(minutes.size(), Delivery::kStored));
  // Index entries the windows' indexes gave up so far (this session's counts flushed first).
  auto index_reads = [&] {
    admin_->query("SELECT pg_stat_force_next_flush()");
    return std::stoll(pg_->psql("SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes "
                                "WHERE relname LIKE 'windows\\_%'"));
  };
  const int64_t before = index_reads();
  auto month = fleet_window(kFleetDay0 - 30, "GPU-a");
  month.end = month.start + 2678400;  // the longest window the database takes
  fleet::FleetSinkPostgres b(*admin_, {"prod", "node-b"});
  ASSERT_EQ(b.ship(pointers({month})), std::vector<Delivery>{Delivery::kStored});
  EXPECT_LT(index_reads() - before, 20) << "the server read the windows under it";
  EXPECT_EQ(pg_->psql("SELECT node, other_node, other_start - " + std::to_string(kFleetDay0) +
                      " FROM gpuledger.overlaps"),
            "node-b|node-a|0\n");
}

// Attack: windows under another node's name at starts that never collide with
// its keys added 40 USD to one pod, and nothing flagged the overlapping GPU time.
// Under another node's name: refused. Under its own name over another node's
// GPU time: stored, and flagged in every report.
TEST_F(FleetDb, AttackWindowsOverAnotherNodesGpuTimeAreRefusedOrFlagged) {
  const NodeRole b = add_node(*pg_, *admin_, "node-b");
  fleet::FleetSinkPostgres a(*admin_, {"prod", "node-a"});
  ASSERT_EQ(a.ship(pointers(hour_of("GPU-a"))), std::vector<Delivery>(60, Delivery::kStored));
  auto as_b = login(*pg_, b);
  std::vector<ledger::WindowRecord> forged;
  for (int i = 0; i < 4; ++i) {  // 10 USD each to pod-a, at starts that are never node-a's keys
    auto w = fleet_window(kHour0 + 60 * i + 30, "GPU-a");
    w.charges = {{"k8s/pod-a", ledger::ChargeKind::kBusy, 10'000'000}};
    w.busy_micros = w.cost_micros = 10'000'000;
    w.idle_micros = 0;
    w.energy.reset();
    forged.push_back(w);
  }
  fleet::FleetSinkPostgres as_node_a(*as_b, {"prod", "node-a"});
  EXPECT_THROW(as_node_a.ship(pointers(forged)), Error);
  EXPECT_EQ(count("windows"), 60);
  fleet::FleetSinkPostgres own(*as_b, {"prod", "node-b"});
  EXPECT_EQ(own.ship(pointers(forged)), std::vector<Delivery>(4, Delivery::kStored));
  EXPECT_EQ(count("overlaps"), 4);
  const Read read_back = read(*admin_, kHour0, kHour0 + 3600, Period::kMonth);
  EXPECT_EQ(read_back.notes.overlaps, 4);
  EXPECT_EQ(read_back.notes.first_overlap,
            "GPU-a of prod/node-b at 2027-01-15T08:00:30Z over prod/node-a's window from 2027-01-15T08:00:00Z");
  const std::string reader_pw = pg_->add_login("finance", "gpuledger_reader");
  const fs::path err = scratch_ / "stderr";
  for (const std::string format : {"table", "csv", "json", "html", "focus"}) {
    const Proc p = fleet_report(*pg_, reader_pw, "--format " + format, err);
    EXPECT_EQ(p.status, 0) << format;
    EXPECT_EQ(slurp(err),
              "gpuledger report: 4 windows overlap another window of the same GPU, so that GPU time is billed twice "
              "(the first: GPU-a of prod/node-b at 2027-01-15T08:00:30Z over prod/node-a's window from "
              "2027-01-15T08:00:00Z; see gpuledger.overlaps)\n")
        << format;
  }
  // A report of node-a alone: its windows were not the ones laid over; node-b's are.
  const Proc only_b = fleet_report(*pg_, reader_pw, "--node node-b", err);
  EXPECT_EQ(only_b.status, 0);
  EXPECT_NE(slurp(err).find("4 windows overlap"), std::string::npos);
}

// Attack: zero-cost windows pre-claiming a node's predictable future keys took
// its bill to 0 and got its real windows refused for good, with /healthz
// healthy. Another node's role may not write them; windows refused anyway (a
// different window under their key) are said in the shipper's status, which
// /healthz shows.
TEST_F(FleetDb, AttackPreClaimedKeysAreRefusedAndARefusedWindowIsSaid) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a"), b = add_node(*pg_, *admin_, "node-b");
  auto as_b = login(*pg_, b);
  std::vector<ledger::WindowRecord> claims;
  for (int i = 0; i < 5; ++i) {
    auto w = fleet_window(kFleetT0 + 60 * i, "GPU-a");
    w.charges = {};
    w.accounts = {};
    w.busy_micros = w.idle_micros = w.cost_micros = 0;
    w.energy.reset();
    claims.push_back(w);
  }
  fleet::FleetSinkPostgres claim(*as_b, {"prod", "node-a"});
  EXPECT_THROW(claim.ship(pointers(claims)), Error);
  EXPECT_EQ(count("windows"), 0);
  const std::string path = (scratch_ / "ledger.db").string();
  {
    ledger::Store store(path);
    for (int i = 0; i < 5; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
    store.insert_window(fleet_window(kFleetT0 + 3600, "GPU-a", 9));  // the hour before it is complete
  }
  // Only the owner (or a shared role from before schema 3) can still put a different window under a key.
  fleet::FleetSinkPostgres owner(*admin_, {"prod", "node-a"});
  ASSERT_EQ(owner.ship({&claims[4]}), std::vector<Delivery>{Delivery::kStored});
  fleet::FleetShipper shipper(shipper_options(pg_->conninfo(a.role), a.password_file, path, {"prod", "node-a"}));
  shipper.start();
  // Its roll-up of that hour merges its own five windows, not the database's: not verified, counted.
  ASSERT_TRUE(eventually(
      [&] {
        return shipper.status().shipped == 5 && shipper.status().refused == 1 &&
               sample(metrics(shipper), "gpuledger_fleet_db_errors_total{reason=\"rollup\"}") == 1;
      },
      std::chrono::seconds(20)))
      << shipper.status().reason << metrics(shipper);
  shipper.stop();
  EXPECT_EQ(pg_->psql("SELECT period || ' ' || refusal FROM gpuledger.rollups"),
            "hour not the windows the database holds\n");
  EXPECT_NE(shipper.status().reason.find("; 1 windows refused: the database holds others under their keys"),
            std::string::npos)
      << shipper.status().reason;
  EXPECT_TRUE(has_line(metrics(shipper), "gpuledger_fleet_db_refused_windows 1"));
  EXPECT_TRUE(has_line(metrics(shipper), "gpuledger_fleet_db_errors_total{reason=\"conflict\"} 1"));
}

// Attack: the agent role created month partitions without limit (1,200 tables
// in 7 s). An agent's ensure_month makes a year back to a month ahead of the
// server's clock; any other month is the owner's.
TEST_F(FleetDb, AttackAnAgentCannotCreatePartitionsForAnyMonth) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a");
  auto as_a = login(*pg_, a);
  const std::string tables =
      "SELECT count(*) FROM pg_class WHERE relnamespace = 'gpuledger'::regnamespace AND relkind IN ('r', 'p')";
  const int64_t before = std::stoll(pg_->psql(tables));
  for (const int64_t t : {int64_t{4'102'444'800}, int64_t{946'684'800}}) {  // 2100-01, 2000-01
    const std::string said = refusal(*as_a, "SELECT gpuledger.ensure_month($1)", {std::to_string(t)});
    EXPECT_EQ(fleet::sqlstate_of(said), "42501") << said;
    EXPECT_NE(said.find("an agent may create the partitions of a year back to a month ahead"), std::string::npos) << said;
  }
  EXPECT_EQ(fleet::sqlstate_of(refusal(*as_a, "SELECT gpuledger.create_month(4102444800)")), "42501");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(refusal(*as_a, "SELECT gpuledger.ensure_month($1)", {std::to_string(now)}), "");
  EXPECT_EQ(refusal(*as_a, "SELECT gpuledger.ensure_month($1)", {std::to_string(kFleetT0)}), "") << "there already";
  EXPECT_LE(std::stoll(pg_->psql(tables)) - before, 12)
      << "this month's twelve (schema 12: the roll-ups' in three; 13: the days' charts), at most";
  // The owner may.
  EXPECT_EQ(refusal(*admin_, "SELECT gpuledger.create_month(4102444800)"), "");
}

// Attack: one node's credentials held every connection the server has
// (max_connections): no other node shipped, no report ran. A node's role
// holds at most kNodeRoleConnections; the next is refused (said as a failure
// to connect), and the other nodes and the readers still connect.
TEST_F(FleetDb, AttackANodeCannotTakeEveryConnectionOfTheServer) {
  const NodeRole a = add_node(*pg_, *admin_, "node-a"), b = add_node(*pg_, *admin_, "node-b");
  std::vector<std::unique_ptr<fleet::PgConnection>> held;
  for (int i = 0; i < fleet::kNodeRoleConnections; ++i) held.push_back(login(*pg_, a));
  try {
    login(*pg_, a);
    ADD_FAILURE() << "a connection past the role's limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too many connections for role"), std::string::npos) << e.what();
    EXPECT_EQ(fleet::fleet_error_reason(e.what()), "connect") << e.what();
  }
  auto as_b = login(*pg_, b);
  fleet::FleetSinkPostgres sink(*as_b, {"prod", "node-b"});
  const auto w = fleet_window(kFleetT0, "GPU-b");
  EXPECT_EQ(sink.ship({&w}), std::vector<Delivery>{Delivery::kStored});
  fleet::PgConnection finance(pg_->conninfo("finance"), pg_->add_login("finance", "gpuledger_reader"));
  EXPECT_EQ(finance.query("SELECT count(*) FROM gpuledger.windows").text(0, 0), "1");
  // A node's role made before the limit had none: doctor says so, add-node again gives it.
  held.clear();
  pg_->psql("ALTER ROLE \"gpuledger_node_prod/node-a\" CONNECTION LIMIT -1");
  const Proc doctor = run(gpuledger() + " doctor --fleet-db '" + pg_->conninfo(a.role) + "' --fleet-db-password-file " +
                          a.password_file);
  EXPECT_NE(doctor.out.find("may be shipped; the role has no connection limit: run `gpuledger fleet-db add-node` for "
                            "this node again as the owner"),
            std::string::npos)
      << doctor.out;
  add_node(*pg_, *admin_, "node-a");
  EXPECT_EQ(pg_->psql("SELECT rolconnlimit FROM pg_roles WHERE rolname = 'gpuledger_node_prod/node-a'"), "4\n");
}

// Migration 3 on a database of schema 2: its shared role keeps shipping (for
// any node, listed), its roll-ups are checked, its overlaps found.
TEST_F(FleetDb, AnUpgradeFromSchemaTwoKeepsTheSharedRoleAndChecksItsRollUps) {
  pg_->psql("CREATE DATABASE upgrade");
  fleet::PgConnection db(pg_->conninfo("gpuledger_admin", "upgrade"), pg_->admin_password_file());
  ASSERT_EQ(fleet::migrate(db, kFleetT0, 2), 2);
  pg_->psql("CREATE ROLE shared_agent LOGIN PASSWORD 'shared_agent' IN ROLE gpuledger_agent");
  const fleet::Origin origin{"prod", "node-a"};
  fleet::FleetSinkPostgres sink(db, origin);
  ledger::Store store((scratch_ / "ledger.db").string());
  for (const char* gpu : {"GPU-a", "GPU-b"}) {
    store.insert_windows(hour_of(gpu));
    ASSERT_EQ(sink.ship(pointers(hour_of(gpu))), std::vector<Delivery>(60, Delivery::kStored));
  }
  auto rollups = fleet::build_rollups(store, origin, Period::kHour, kHour0);
  ASSERT_EQ(rollups.size(), 2u);
  rollups[1].window.charges[0].micros += 1'000'000'000;  // the attack, shipped before the upgrade
  for (const auto& r : rollups)  // as an agent of schema 2 sent them
    db.query("INSERT INTO gpuledger.rollups(period, period_start, cluster, node, gpu_uuid, windows, cost_micros, "
             "digests, digest, body) VALUES ('hour', $1, 'prod', 'node-a', $2, $3, $4, $5, 'x', $6::json)",
             {std::to_string(r.period_start), r.window.slot.uuid, std::to_string(r.windows),
              std::to_string(r.window.cost_micros), fleet::decimal(r.digests), fleet::window_to_json(r.window)});
  auto stray = fleet_window(kHour0 + 30, "GPU-a");
  fleet::FleetSinkPostgres other(db, {"prod", "node-b"});
  ASSERT_EQ(other.ship({&stray}), std::vector<Delivery>{Delivery::kStored});

  ASSERT_EQ(fleet::migrate(db, kFleetT0), fleet::kFleetSchemaVersion);
  EXPECT_NO_THROW(fleet::check_schema(db));
  EXPECT_EQ(db.query("SELECT string_agg(gpu_uuid || ' ' || verified, ',' ORDER BY gpu_uuid) FROM gpuledger.rollups")
                .text(0, 0),
            "GPU-a true,GPU-b false");
  EXPECT_EQ(db.query("SELECT string_agg(node || ' ' || start_time - " + std::to_string(kHour0) + " || ' over ' || "
                     "other_node || ' ' || other_start - " + std::to_string(kHour0) + ", ', ' ORDER BY start_time) "
                     "FROM gpuledger.overlaps").text(0, 0),
            "node-b 30 over node-a 0, node-a 60 over node-b 30")
      << "each window over the one before it";
  EXPECT_EQ(db.query("SELECT role || ' ' || (node IS NULL) FROM gpuledger.node_roles").text(0, 0), "shared_agent true");
  EXPECT_EQ(db.query("SELECT pg_typeof(cost_micros)::text FROM gpuledger.window_totals LIMIT 1").text(0, 0), "numeric");
  const std::string pw = (scratch_ / "shared.pw").string();
  std::ofstream(pw) << "shared_agent\n";
  fleet::PgConnection shared(pg_->conninfo("shared_agent", "upgrade"), pw);
  fleet::FleetSinkPostgres still(shared, {"prod", "node-c"});
  const auto w = fleet_window(kHour0 + 3600, "GPU-c");
  EXPECT_EQ(still.ship({&w}), std::vector<Delivery>{Delivery::kStored});
  const Read b = read(db, kHour0, kHour0 + 3600, Period::kMonth);
  EXPECT_EQ(b.records, 1 + 60 + 1);  // GPU-a's roll-up, GPU-b's windows, node-b's window
  EXPECT_EQ(b.notes.refused_rollups, 1);
}

// Item 6: an unmigrated or older database: the shipper says which command to
// run (its status is /healthz's line) and keeps the backlog; the report says
// it in one sentence on stderr.
TEST_F(FleetDb, AnUnmigratedOrOlderDatabaseSaysWhatToRunAndKeepsTheBacklog) {
  for (const int version : {0, 2, 3, 4, 5, 6, 7, 8}) {
    const std::string name = "v" + std::to_string(version);
    const std::string path = (scratch_ / (name + ".db")).string();
    {
      ledger::Store store(path);
      for (int i = 0; i < 3; ++i) store.insert_window(fleet_window(kFleetT0 + 60 * i, "GPU-a", i));
    }
    pg_->psql("CREATE DATABASE " + name);
    fleet::PgConnection db(pg_->conninfo("gpuledger_admin", name), pg_->admin_password_file());
    if (version > 0) fleet::migrate(db, kFleetT0, version);
    const std::string conninfo = pg_->conninfo("gpuledger_admin", name);
    const std::string said = "fleet database postgresql://gpuledger_admin@" + pg_->dir() + ":" +
                             std::to_string(pg_->port()) + "/" + name + ": schema version " + std::to_string(version) +
                             ", this gpuledger needs " + std::to_string(fleet::kFleetSchemaVersion) + "; run `gpuledger fleet-db migrate` as its owner";
    {
      fleet::FleetShipper shipper(shipper_options(conninfo, pg_->admin_password_file(), path, {"prod", "node-a"}));
      shipper.start();
      ASSERT_TRUE(eventually(
          [&] { return sample(metrics(shipper), "gpuledger_fleet_db_errors_total{reason=\"schema\"}") >= 2; },
          std::chrono::seconds(20)))
          << metrics(shipper);
      shipper.stop();
      EXPECT_EQ(shipper.status().reason, said + " (schema)");
      EXPECT_EQ(shipper.status().pending, 3);
    }
    const Proc report = run(gpuledger() + " report --fleet-db '" + conninfo + "' --fleet-db-password-file " +
                            pg_->admin_password_file() + " --month 2027-01");
    EXPECT_EQ(report.status, 1);
    EXPECT_NE(report.out.find(said + "\n"), std::string::npos) << report.out;
    EXPECT_EQ(std::count(report.out.begin(), report.out.end(), '\n'), 1) << report.out;
    fleet::migrate(db, kFleetT0);
    fleet::FleetShipper shipper(shipper_options(conninfo, pg_->admin_password_file(), path, {"prod", "node-a"}));
    shipper.start();
    ASSERT_TRUE(eventually([&] { return shipper.status().shipped == 3; }, std::chrono::seconds(20)))
        << shipper.status().reason;
    shipper.stop();
    ledger::Store store(path);
    EXPECT_EQ(ledger::Outbox(store).pending_count(), 0);
  }
}

}  // namespace
}  // namespace gpuledger::testing
