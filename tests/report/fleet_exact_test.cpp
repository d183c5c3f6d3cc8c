// The fleet bill is exact against a real Prometheus, in the cases that made
// it wrong: a node whose history Prometheus never saw (Prometheus started
// after the agent), a node stopped before --to, an agent restarted
// mid-range, a ledger started anew, and two currencies.
//
// The nodes are stand-in agents serving ledger counters the test sets, so the
// expected bill is known to the micro-unit; each change is waited for until
// Prometheus has scraped it (polls with deadlines).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include "bpf_requirement.h"  // running_in_ci()
#include "common/error.h"
#include "prometheus_server.h"
#include "report/fleet.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;
using testing::PrometheusServer;

// /metrics of one node's ledger: one account (its team named after the node)
// on one GPU, with the cost and held seconds the test sets.
class StandInAgent {
 public:
  explicit StandInAgent(std::string team) : team_(std::move(team)) {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      if (!up_) {
        res.status = 503;
        return;
      }
      const std::string l = "{namespace=\"ml\",pod=\"" + team_ + "-pod\",container=\"main\",team=\"" + team_ +
                            "\",UUID=\"GPU-" + team_ + "\"";
      std::string text = "# TYPE gpuledger_cost_total counter\ngpuledger_cost_total" + l + ",kind=\"busy\"} " +
                         std::to_string(cost_) + "\n# TYPE gpuledger_held_gpu_seconds_total counter\n" +
                         "gpuledger_held_gpu_seconds_total" + l + "} " + std::to_string(cost_ * 1000) + "\n" +
                         "# TYPE gpuledger_ledger_info gauge\ngpuledger_ledger_info{currency=\"" + currency_ +
                         "\"} 1\n# TYPE gpuledger_ledger_first_window_timestamp_seconds gauge\n"
                         "gpuledger_ledger_first_window_timestamp_seconds " +
                         std::to_string(since_) + "\n";
      res.set_content(text, "text/plain; version=0.0.4");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StandInAgent() {
    server_.stop();
    thread_.join();
  }
  void set(double cost, int64_t since, bool up = true, const std::string& currency = "USD") {
    std::lock_guard lock(mu_);
    cost_ = cost, since_ = since, up_ = up, currency_ = currency;
  }
  int port() const { return port_; }
  std::string instance() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string series() const { return "gpuledger_cost_total{instance=\"" + instance() + "\"}"; }

 private:
  std::string team_;
  std::mutex mu_;
  double cost_ = 0;
  int64_t since_ = 0;
  bool up_ = false;
  std::string currency_ = "USD";
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t cost_of(const Report& r, const std::string& key) {
  for (const auto& row : r.rows)
    if (row.key == key) return row.cost_total_micros();
  return -1;
}

bool has_note(const Report& r, const std::string& part) {
  for (const auto& n : r.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(FleetE2E, ExactAcrossGapsRestartsAndLateStarts) {
  if (!fs::exists(PrometheusServer::kBinary)) {
    if (gpuledger::testing::running_in_ci()) FAIL() << "prometheus is required under CI=true (apt-get install prometheus)";
    GTEST_SKIP() << "prometheus not installed";
  }
  fs::path dir = fs::temp_directory_path() / ("gl_fleet_exact_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    const int64_t from = unix_now() - 60;  // before Prometheus starts
    const int64_t long_ago = from - 10 * 86400;
    StandInAgent old("old"), gone("gone"), restarted("restarted"), anew("anew"), euro("euro");
    old.set(100.0, long_ago);          // a ledger 10 days old: 100.00 of history Prometheus never saw
    gone.set(0.25, from + 1);          // a ledger that began after --from: all of it is in range
    restarted.set(3.0, long_ago);
    anew.set(1.0, from + 1);
    PrometheusServer prom(dir, {old.port(), gone.port(), restarted.port(), anew.port(), euro.port()});
    ASSERT_TRUE(prom.started());
    for (auto* a : {&old, &gone, &restarted, &anew})
      ASSERT_TRUE(prom.wait_for_value(a->series(), a == &old ? 100.0 : a == &gone ? 0.25 : a == &restarted ? 3.0 : 1.0))
          << a->instance() << "; see " << prom.log_path();

    old.set(100.5, long_ago);
    gone.set(0.75, from + 1);
    restarted.set(3.0, long_ago, false);  // the agent goes down...
    anew.set(0.25, unix_now());           // the store was replaced: a new ledger, counters from 0
    ASSERT_TRUE(prom.wait_for_value(old.series(), 100.5));
    ASSERT_TRUE(prom.wait_for_value(gone.series(), 0.75));
    ASSERT_TRUE(prom.wait_for_value(anew.series(), 0.25));
    ASSERT_TRUE(prom.wait_for_value("up{instance=\"" + restarted.instance() + "\"}", 0));
    restarted.set(3.4, long_ago);  // ...and comes back with its counters continued from the store
    gone.set(0.75, from + 1, false);  // drained: never scraped again
    ASSERT_TRUE(prom.wait_for_value(restarted.series(), 3.4));
    ASSERT_TRUE(prom.wait_for_value("up{instance=\"" + gone.instance() + "\"}", 0));

    const int64_t to = unix_now() + 1;
    Report r = fleet_report(prom.url(), from, to, GroupBy::kTeam);
    EXPECT_EQ(cost_of(r, "old"), 500'000);        // not 100.5: no history from before --from
    EXPECT_EQ(cost_of(r, "gone"), 750'000);       // its last sample, although it ended before --to
    EXPECT_EQ(cost_of(r, "restarted"), 400'000);  // across the restart, from its first sample
    EXPECT_EQ(cost_of(r, "anew"), 1'250'000);     // 1.00 before the new ledger, 0.25 after
    EXPECT_EQ(r.total.cost_total_micros(), 2'900'000);
    EXPECT_NEAR(r.total.gpu_hours_held, 2'900.0 / 3600.0, 1e-9);
    EXPECT_TRUE(has_note(r, "Node " + old.instance() + ": Prometheus has no data for it from")) << r.notes.size();
    EXPECT_TRUE(has_note(r, "Node " + restarted.instance() + ": Prometheus has no data for it from"));
    EXPECT_FALSE(has_note(r, "Node " + gone.instance() + ": Prometheus has no data"));
    EXPECT_FALSE(has_note(r, "Node " + anew.instance() + ": Prometheus has no data"));
    EXPECT_TRUE(has_note(r, "within one scrape interval"));
    // Who pays what, for the HTML summary: teams by cost, with their pods.
    ASSERT_EQ(r.teams.size(), 4u);
    EXPECT_EQ(r.teams[0].team, "anew");
    EXPECT_EQ(r.teams[0].top_pods.at(0).key, "ml/anew-pod");
    EXPECT_EQ(r.teams[0].total.cost_total_micros(), 1'250'000);

    // --by workload keeps nodes apart.
    Report w = fleet_report(prom.url(), from, to, GroupBy::kWorkload);
    EXPECT_EQ(cost_of(w, old.instance() + " ml/old-pod/main"), 500'000);

    // A node pricing in another currency: refused, naming who prices in what.
    euro.set(1.0, from + 1, true, "EUR");
    ASSERT_TRUE(prom.wait_for_value(euro.series(), 1.0));
    try {
      fleet_report(prom.url(), from, unix_now() + 1, GroupBy::kTeam);
      ADD_FAILURE() << "two currencies were added up";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("different currencies (EUR: " + euro.instance()), std::string::npos)
          << e.what();
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::report
