// The fleet report against a real Prometheus server (Debian's package),
// started on loopback, scraping two agents' ledger metrics served here.
#include "report/fleet.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf_requirement.h"  // running_in_ci()

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "metrics/prometheus_text.h"
#include "prometheus_server.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;

// One node: its own ledger store, accountant and /metrics endpoint.
struct Node {
  Node(const fs::path& dir, const std::string& prices, int until,
       ledger::Observation (*observation)(double) = testing::fixture_observation)
      : store((dir / "ledger.db").string()) {
    acc = std::make_unique<ledger::Accountant>(store, ledger::parse_prices(prices));
    for (int t = 0; t <= until; t += 10) acc->observe(observation(t));
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      metrics::ExpositionWriter out;
      acc->write_metrics(out);
      res.set_content(out.text(), std::string(metrics::kPrometheusContentType));
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
  }
  ~Node() {
    server.stop();
    thread.join();
  }
  ledger::Store store;
  std::unique_ptr<ledger::Accountant> acc;
  httplib::Server server;
  int port = 0;
  std::thread thread;
};

const Row& row_of(const Report& r, const std::string& key) {
  for (const auto& row : r.rows)
    if (row.key == key) return row;
  throw std::runtime_error("no row " + key);
}

// Energy, carbon and allocated against used, as the local report has them
// (the fixture has one account per group and GPU window, where the two agree).
void expect_same_energy_and_shares(const Row& fleet, const Row& local) {
  EXPECT_EQ(fleet.energy_millijoules, local.energy_millijoules) << local.key;
  ASSERT_EQ(fleet.carbon_grams.has_value(), local.carbon_grams.has_value()) << local.key;
  if (local.carbon_grams) EXPECT_NEAR(*fleet.carbon_grams, *local.carbon_grams, 1e-9) << local.key;
  auto same = [&](std::optional<double> f, std::optional<double> l, const char* what) {
    ASSERT_EQ(f.has_value(), l.has_value()) << local.key << " " << what;
    if (l) EXPECT_NEAR(*f, *l, 1e-12) << local.key << " " << what;
  };
  same(fleet.allocated_share(), local.allocated_share(), "allocated_share");
  same(fleet.used_share(), local.used_share(), "used_share");
  same(fleet.used_vram_share(), local.used_vram_share(), "used_vram_share");
  same(fleet.used_energy_share(), local.used_energy_share(), "used_energy_share");
  EXPECT_EQ(fleet.share_flag(), local.share_flag()) << local.key;
}

TEST(FleetE2E, FleetReportEqualsTheSumOfTheNodes) {
  if (!fs::exists(testing::PrometheusServer::kBinary)) {
    if (gpuledger::testing::running_in_ci()) FAIL() << "prometheus is required under CI=true (apt-get install prometheus)";
    GTEST_SKIP() << "prometheus not installed";
  }
  fs::path dir = fs::temp_directory_path() / ("gl_fleet_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  {
    Node a(dir / "a", std::string(testing::kFixturePrices) + "carbon_g_per_kwh: 400\n", 120,
           testing::fixture_observation_with_energy);
    Node b(dir / "b", "currency: USD\ndefault_per_hour: 0.90\nper_model: {H100: 2.40}\n", 180);
    testing::PrometheusServer prom(dir, {a.port, b.port});
    ASSERT_TRUE(prom.started());
    // Wait until both targets have been scraped.
    ASSERT_TRUE(prom.wait_for_value("count(gpuledger_ledger_info)", 2))
        << "prometheus did not scrape both agents; see " << prom.log_path();
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));

    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string url = prom.url();
    for (auto by : {GroupBy::kTeam, GroupBy::kNamespace, GroupBy::kPod, GroupBy::kGpu}) {
      Report fleet = fleet_report(url, now - 3600, now, by);
      auto windows = a.store.windows(testing::kT0, testing::kT0 + 1000);
      for (auto& w : b.store.windows(testing::kT0, testing::kT0 + 1000)) windows.push_back(std::move(w));
      Report local = build_report(windows, testing::kT0, testing::kT0 + 1000, by);
      EXPECT_EQ(fleet.source, "fleet");
      EXPECT_EQ(fleet.currency, "USD");
      ASSERT_EQ(fleet.rows.size(), local.rows.size()) << to_string(by);
      for (size_t i = 0; i < local.rows.size(); ++i) {
        EXPECT_EQ(fleet.rows[i].key, local.rows[i].key);
        EXPECT_EQ(fleet.rows[i].cost_busy_micros, local.rows[i].cost_busy_micros) << local.rows[i].key;
        EXPECT_EQ(fleet.rows[i].cost_idle_micros, local.rows[i].cost_idle_micros) << local.rows[i].key;
        EXPECT_NEAR(fleet.rows[i].gpu_hours_held, local.rows[i].gpu_hours_held, 1e-9) << local.rows[i].key;
        EXPECT_NEAR(fleet.rows[i].gpu_hours_busy, local.rows[i].gpu_hours_busy, 1e-9) << local.rows[i].key;
        // As rich as the local rows: VRAM, launches and (one account per group) efficiency.
        EXPECT_NEAR(fleet.rows[i].vram_gib_hours, local.rows[i].vram_gib_hours, 1e-9) << local.rows[i].key;
        EXPECT_EQ(fleet.rows[i].launches, local.rows[i].launches) << local.rows[i].key;
        if (by == GroupBy::kPod) {
          const auto& f = fleet.rows[i].efficiency;
          const auto& l = local.rows[i].efficiency;
          ASSERT_EQ(f.sm_active.has_value(), l.sm_active.has_value()) << local.rows[i].key;
          if (l.sm_active) {
            EXPECT_NEAR(*f.sm_active, *l.sm_active, 1e-9) << local.rows[i].key;
          }
          EXPECT_EQ(f.tensor_active.has_value(), l.tensor_active.has_value()) << local.rows[i].key;
        }
        expect_same_energy_and_shares(fleet.rows[i], local.rows[i]);
      }
      EXPECT_EQ(fleet.total.cost_total_micros(), local.total.cost_total_micros());
      EXPECT_EQ(fleet.total.energy_millijoules, local.total.energy_millijoules);
      // pod-a held half of the shared H100 (two holders) and did 3/4 of its work, on both nodes.
      if (by != GroupBy::kGpu) {
        ASSERT_FALSE(local.over_users.empty()) << to_string(by);
        ASSERT_EQ(fleet.over_users.size(), local.over_users.size()) << to_string(by);
        for (size_t i = 0; i < local.over_users.size(); ++i)
          EXPECT_EQ(fleet.over_users[i].key, local.over_users[i].key);
        ASSERT_EQ(fleet.under_users.size(), local.under_users.size()) << to_string(by);
        for (size_t i = 0; i < local.under_users.size(); ++i)
          EXPECT_EQ(fleet.under_users[i].key, local.under_users[i].key);
      }
      if (by == GroupBy::kPod) {
        EXPECT_EQ(local.over_users.at(0).key, "ml/pod-a");
        const Row& pod_a = row_of(fleet, "ml/pod-a");
        EXPECT_DOUBLE_EQ(pod_a.allocated_share().value_or(-1), 0.5);
        EXPECT_DOUBLE_EQ(pod_a.used_share().value_or(-1), 0.75);
        EXPECT_DOUBLE_EQ(pod_a.used_energy_share().value_or(-1), 0.75);  // node a's windows only: b has no energy
        // Node a, two windows: pod-a 2 x 11'700'000 mJ at 400 g/kWh.
        EXPECT_EQ(pod_a.energy_millijoules, 23'400'000);
        EXPECT_NEAR(pod_a.carbon_grams.value_or(-1), 2.6, 1e-9);
        EXPECT_EQ(row_of(fleet, "nlp/pod-d").energy_millijoules, std::nullopt);  // no energy source: unknown
        EXPECT_EQ(row_of(fleet, "nlp/pod-d").carbon_grams, std::nullopt);
        EXPECT_FALSE(row_of(fleet, "__unallocated__").allocated_share());  // special rows have no shares
      }
    }
    // Node a: 351'429 (ledger_fixture.h); node b: 3 windows at 2.40/h (40'000),
    // 0.90/h (15'000) and 3/7 of 2.40/h (17'143) -> 3 x 112'143.
    Report team = fleet_report(url, now - 3600, now, GroupBy::kTeam);
    EXPECT_EQ(team.total.cost_total_micros(), 351'429 + 3 * 112'143);

    // The CLI's --prometheus gives the same.
    std::string cmd = std::string(GPULEDGER_BINARY) + " report --prometheus " + url + " --from " +
                      std::to_string(now - 3600) + " --to " + std::to_string(now) + " --format json";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    EXPECT_EQ(pclose(p), 0);
    auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["total"]["cost_total_micros"], 351'429 + 3 * 112'143);
    EXPECT_EQ(j["source"], "fleet");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::report
