// Issue 20, done when: two nodes shipping through a database outage, a node
// killed mid-shipment and a node deleted give a fleet bill from PostgreSQL
// equal, to the micro-unit, to the sum of their local bills. Real parts: the
// agent binary with real BPF on the simulated driver and NVML, and a real
// PostgreSQL server stopped and started mid-run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <map>

#include "bpf_requirement.h"
#include "fleet/fleet_schema.h"
#include "csv_records.h"
#include "pg_server.h"
#include "reliability_support.h"

namespace gpuledger::testing {
namespace {

int64_t micros_of(const std::string& money) {  // "12.345678" -> 12345678, "0.5" -> 500000
  const size_t dot = money.find('.');
  std::string fraction = dot == std::string::npos ? "" : money.substr(dot + 1);
  fraction.resize(6, '0');
  return std::stoll(money.substr(0, dot)) * 1000000 + std::stoll(fraction);
}

// A CSV bill without its bill_id values ("sha256:" and 64 hex digits).
std::string without_bill_id(std::string csv) {
  for (size_t at = csv.find("sha256:"); at != std::string::npos; at = csv.find("sha256:", at))
    csv.erase(at, 7 + 64);
  return csv;
}

int64_t sql_count(const std::string& store, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) return -1;
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* s = nullptr;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

class FleetNode {
 public:
  FleetNode(const Scratch& scratch, PgServer& pg, const std::string& node, const std::string& role,
            const std::string& password_file)
      : store_(scratch.path(node + ".db")) {
    args_ = simulated_node_agent_args(scratch, store_);
    for (const std::string& a :
         {std::string("--no-bpf-pins"), std::string("--no-xid"), std::string("--node-name"), node,
          std::string("--cluster-name"), std::string("prod"), std::string("--fleet-db"), pg.conninfo(role),
          std::string("--fleet-db-password-file"), password_file, std::string("--fleet-db-interval-ms"),
          std::string("200")})
      args_.push_back(a);
    start();
  }
  void start() { agent_ = std::make_unique<Agent>(args_); }
  void stop(int signal) { stop_agent(agent_, signal); }
  std::string metrics() const { return get_body(agent_->port(), "/metrics"); }
  uint64_t metric(const std::string& series) const { return metric_value(metrics(), series); }
  Agent& agent() { return *agent_; }
  const std::string& store() const { return store_; }

 private:
  std::string store_;
  std::vector<std::string> args_;
  std::unique_ptr<Agent> agent_;
};

// A fleet report's stderr is kept apart (`err`): both agents here observe the
// one simulated GPU at the same time, and a fleet report says on stderr that
// this GPU time is billed twice (issue 30).
nlohmann::json report(const std::vector<std::string>& args, std::string* err = nullptr) {
  std::string out;
  std::vector<std::string> all = {"report", "--format", "json"};
  all.insert(all.end(), args.begin(), args.end());
  if (std::find(args.begin(), args.end(), "--by") == args.end()) all.insert(all.end(), {"--by", "team"});
  std::string errors;
  const int rc = run_cli(all, &out, err ? err : &errors);
  EXPECT_EQ(rc, 0) << out;
  return nlohmann::json::parse(out);
}

TEST(FleetAgents, ThroughAnOutageAKillAndADeletedNodeTheFleetBillIsTheSumOfTheLocalBills) {
  GL_REQUIRE_BPF();
  Scratch scratch("fleet");
  write_simulated_node(scratch, 2);  // 2 s windows
  PgServer pg;
  std::string out;
  ASSERT_EQ(run_cli({"fleet-db", "migrate", "--fleet-db", pg.conninfo(), "--fleet-db-password-file",
                     pg.admin_password_file()},
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("schema version " + std::to_string(fleet::kFleetSchemaVersion) + " (was 0)"), std::string::npos) << out;
  // A password on the command line is refused before anything starts.
  EXPECT_NE(run_cli({"fleet-db", "migrate", "--fleet-db", pg.conninfo() + " password=admin-secret"}, &out), 0);
  EXPECT_NE(out.find("--fleet-db carries a password"), std::string::npos) << out;
  EXPECT_EQ(out.find("admin-secret"), std::string::npos) << out;
  // Each node its own role (issue 30): the owner's `fleet-db add-node`, its name the only line.
  std::map<std::string, std::pair<std::string, std::string>> roles;  // node -> role, password file
  for (const char* node : {"node-a", "node-b"}) {
    ASSERT_EQ(run_cli({"fleet-db", "add-node", node, "--cluster", "prod", "--fleet-db", pg.conninfo(),
                       "--fleet-db-password-file", pg.admin_password_file()},
                      &out),
              0)
        << out;
    EXPECT_EQ(out, "gpuledger_node_prod/" + std::string(node) + "\n");
    const std::string role = out.substr(0, out.size() - 1);
    roles[node] = {role, pg.set_password(role)};
  }
  const double started = unix_now();

  FleetNode a(scratch, pg, "node-a", roles["node-a"].first, roles["node-a"].second),
      b(scratch, pg, "node-b", roles["node-b"].first, roles["node-b"].second);
  const std::string shipped = "gpuledger_fleet_db_shipped_windows_total";
  ASSERT_TRUE(eventually([&] { return a.metric(shipped) >= 2 && b.metric(shipped) >= 2; }, std::chrono::seconds(40)))
      << a.agent().log();
  EXPECT_EQ(a.metric("gpuledger_fleet_db_up"), 1u);

  // The database goes away: the windows wait in the stores.
  pg.stop();
  ASSERT_TRUE(eventually(
      [&] {
        return a.metrics().find("\ngpuledger_fleet_db_up 0\n") != std::string::npos &&
               a.metric("gpuledger_fleet_db_pending_windows") >= 2 && b.metric("gpuledger_fleet_db_pending_windows") >= 2;
      },
      std::chrono::seconds(40)))
      << a.metrics();
  const std::string health = get_body(a.agent().port(), "/healthz");
  EXPECT_NE(health.find("- fleet db failing: "), std::string::npos) << health;
  EXPECT_NE(health.find("(connect)"), std::string::npos) << health;
  EXPECT_EQ(health.find(".pw"), std::string::npos);
  EXPECT_GE(a.metric("gpuledger_fleet_db_errors_total{reason=\"connect\"}"), 1u);
  EXPECT_GE(a.metric("gpuledger_fleet_db_oldest_pending_window_age_seconds"), 1u);
  std::string doctor;
  run_cli({"doctor", "--fleet-db", pg.conninfo(roles["node-b"].first), "--fleet-db-password-file", roles["node-b"].second, "--store",
           b.store()},
          &doctor);
  EXPECT_NE(doctor.find("fleet-db"), std::string::npos) << doctor;
  EXPECT_NE(doctor.find("cannot connect"), std::string::npos) << doctor;
  EXPECT_NE(doctor.find(" windows pending, 0 refused (conflicting, or too large to store)"), std::string::npos)
      << doctor;
  pg.start();
  ASSERT_TRUE(eventually(
      [&] {
        return a.metrics().find("\ngpuledger_fleet_db_up 1\n") != std::string::npos &&
               a.metric("gpuledger_fleet_db_pending_windows") == 0 && b.metric("gpuledger_fleet_db_pending_windows") == 0;
      },
      std::chrono::seconds(40)))
      << a.agent().log();

  // Node b is killed mid-shipment. The worst moment: its last windows were
  // committed by the database but not yet marked in its store; the restarted
  // agent sends them again, and they are stored once.
  b.stop(SIGKILL);
  ASSERT_EQ(sql_count(b.store(), "SELECT count(*) FROM windows WHERE shipped = 1") >= 2, true);
  ASSERT_EQ(sql_count(b.store(),
                      "UPDATE windows SET shipped = 0 WHERE id IN (SELECT id FROM windows WHERE shipped = 1 ORDER BY "
                      "start DESC LIMIT 2) RETURNING 0"),
            0);
  b.start();
  ASSERT_TRUE(eventually([&] { return b.metric(shipped) >= 3 && b.metric("gpuledger_fleet_db_pending_windows") == 0; },
                         std::chrono::seconds(40)))
      << b.agent().log();
  EXPECT_EQ(b.metric("gpuledger_fleet_db_errors_total{reason=\"conflict\"}"), 0u) << b.agent().log();

  // Both stop (their last window is stored and shipped on the way out).
  a.stop(SIGTERM);
  b.stop(SIGTERM);
  for (const auto* n : {&a, &b}) {
    EXPECT_EQ(sql_count(n->store(), "SELECT count(*) FROM windows WHERE shipped != 1"), 0) << n->store();
  }
  const int64_t windows = sql_count(a.store(), "SELECT count(*) FROM windows") +
                          sql_count(b.store(), "SELECT count(*) FROM windows");
  EXPECT_EQ(std::stoll(pg.psql("SELECT count(*) FROM gpuledger.windows")), windows);

  const std::string from = std::to_string(static_cast<int64_t>(started) - 3600);
  const std::string to = std::to_string(static_cast<int64_t>(unix_now()) + 3600);
  const std::string reader_pw = pg.add_login("finance", "gpuledger_reader");
  const std::vector<std::string> fleet = {"--fleet-db", pg.conninfo("finance"), "--fleet-db-password-file", reader_pw,
                                          "--from", from, "--to", to};
  auto with = [](std::vector<std::string> v, const std::vector<std::string>& more) {
    v.insert(v.end(), more.begin(), more.end());
    return v;
  };
  const auto local_a = report({"--store", a.store(), "--from", from, "--to", to});
  const auto local_b = report({"--store", b.store(), "--from", from, "--to", to});
  const int64_t cost_a = micros_of(local_a["total"]["cost_total"]), cost_b = micros_of(local_b["total"]["cost_total"]);
  EXPECT_GT(cost_a, 0);
  EXPECT_GT(cost_b, 0);
  std::string warned;
  const auto all = report(fleet, &warned);
  EXPECT_NE(warned.find("windows overlap another window of the same GPU, so that GPU time is billed twice"),
            std::string::npos)
      << warned;
  EXPECT_EQ(all["source"], "fleet-db");
  EXPECT_EQ(micros_of(all["total"]["cost_total"]), cost_a + cost_b);
  const auto only_a = report(with(fleet, {"--node", "node-a"}));
  EXPECT_EQ(only_a["total"], local_a["total"]) << "one node's fleet bill is its local bill";
  EXPECT_EQ(only_a["rows"], local_a["rows"]);
  EXPECT_EQ(micros_of(report(with(fleet, {"--cluster", "prod", "--node", "node-b"}))["total"]["cost_total"]), cost_b);
  EXPECT_EQ(micros_of(report(with(fleet, {"--cluster", "staging"}))["total"]["cost_total"]), 0);
  const auto by_node = report(with(fleet, {"--by", "node"}));
  ASSERT_EQ(by_node["rows"].size(), 2u) << by_node.dump();
  for (const auto& row : by_node["rows"])
    EXPECT_EQ(micros_of(row["cost_total"]), row["key"] == "prod/node-a" ? cost_a : cost_b) << row.dump();
  // One bill, whatever the view: the grouping and the format do not change its id.
  const std::string bill_id = all["audit"]["bill_id"];
  EXPECT_EQ(bill_id.rfind("sha256:", 0), 0u) << bill_id;
  EXPECT_EQ(by_node["audit"]["bill_id"], bill_id);

  // The FOCUS export of the fleet: every node's rows, Σ BilledCost the fleet's total.
  std::string focus;
  std::string apart;
  EXPECT_EQ(run_cli(with({"report", "--format", "focus"}, fleet), &focus, &apart), 0) << focus;
  const auto focus_rows = parse_csv(focus);
  ASSERT_GT(focus_rows.size(), 1u) << focus;
  const auto billed = std::find(focus_rows[0].begin(), focus_rows[0].end(), "BilledCost") - focus_rows[0].begin();
  ASSERT_LT(static_cast<size_t>(billed), focus_rows[0].size()) << focus;
  int64_t billed_micros = 0;
  for (size_t i = 1; i < focus_rows.size(); ++i) billed_micros += micros_of(focus_rows[i].at(billed));
  EXPECT_EQ(billed_micros, cost_a + cost_b);
  // Each row names the node and cluster its GPU's windows came from (the two
  // nodes' simulated GPUs share UUIDs: still each node's own rows), in
  // x_Node, x_Cluster and the Tags: each node's rows are its bill.
  auto column = [&](const char* name) {
    return static_cast<size_t>(std::find(focus_rows[0].begin(), focus_rows[0].end(), name) - focus_rows[0].begin());
  };
  std::map<std::string, int64_t> billed_by_node;
  for (size_t i = 1; i < focus_rows.size(); ++i) {
    const auto& row = focus_rows[i];
    EXPECT_EQ(row.at(column("x_Cluster")), "prod");
    const auto tags = nlohmann::json::parse(row.at(column("Tags")));
    EXPECT_EQ(tags["node"], row.at(column("x_Node")));
    EXPECT_EQ(tags["cluster"], "prod");
    billed_by_node[row.at(column("x_Node"))] += micros_of(row.at(billed));
  }
  EXPECT_EQ(billed_by_node, (std::map<std::string, int64_t>{{"node-a", cost_a}, {"node-b", cost_b}}));
  EXPECT_NE(focus.find(bill_id), std::string::npos) << "the FOCUS rows name the same bill";

  std::string html;
  EXPECT_EQ(run_cli(with(with({"report", "--format", "html"}, fleet), {"--by", "node"}), &html, &apart), 0);
  EXPECT_NE(html.find("every node (from the fleet database)"), std::string::npos);
  EXPECT_NE(html.find("prod/node-a"), std::string::npos);

  // Node a is deleted, its store with it: the fleet bill stays.
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) fs::remove(a.store() + suffix);
  EXPECT_EQ(micros_of(report(fleet)["total"]["cost_total"]), cost_a + cost_b);
  std::string csv;
  EXPECT_EQ(run_cli(with(with({"report", "--format", "csv", "--csv-totals"}, fleet), {"--node", "node-b"}), &csv, &apart), 0)
      << csv;
  std::string local_csv;
  EXPECT_EQ(run_cli({"report", "--format", "csv", "--csv-totals", "--store", b.store(), "--from", from, "--to", to},
                    &local_csv),
            0);
  // The same rows, node and cluster; the bill id differs, as it names what
  // the bill was made from (a node's store and price lists, or the fleet's).
  EXPECT_EQ(without_bill_id(csv), without_bill_id(local_csv));
  EXPECT_NE(csv.find(",node-b,prod,sha256:"), std::string::npos) << csv;
  // Without a totals row the fleet reads the rows at their charge period and
  // the whole bill (its audit) apart: the same rows again, and the same bill.
  for (const char* g : {"hour", "day"}) {
    std::string rows, local_rows;
    EXPECT_EQ(run_cli(with(with({"report", "--format", "csv", "--granularity", g}, fleet), {"--node", "node-b"}), &rows,
                      &apart),
              0)
        << rows;
    EXPECT_EQ(run_cli({"report", "--format", "csv", "--granularity", g, "--store", b.store(), "--from", from, "--to", to},
                      &local_rows),
              0);
    EXPECT_EQ(without_bill_id(rows), without_bill_id(local_rows)) << g;
    EXPECT_NE(rows.find(csv.substr(csv.find(",node-b,prod,sha256:"), 90)), std::string::npos) << g << ": " << rows;
  }
}

}  // namespace
}  // namespace gpuledger::testing
