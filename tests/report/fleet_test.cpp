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

#include "export/prometheus_text.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

namespace fs = std::filesystem;

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// One node: its own ledger store, accountant and /metrics endpoint.
struct Node {
  Node(const fs::path& dir, const std::string& prices, int until) : store((dir / "ledger.db").string()) {
    acc = std::make_unique<ledger::Accountant>(store, ledger::parse_prices(prices));
    testing::run_fixture(*acc, 0, until);
    server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      exporter::ExpositionWriter out;
      acc->write_metrics(out);
      res.set_content(out.text(), std::string(exporter::kPrometheusContentType));
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

TEST(FleetE2E, FleetReportEqualsTheSumOfTheNodes) {
  const std::string prometheus = "/usr/bin/prometheus";
  if (!fs::exists(prometheus)) {
    if (gpuledger::testing::running_in_ci()) FAIL() << "prometheus is required under CI=true (apt-get install prometheus)";
    GTEST_SKIP() << "prometheus not installed";
  }
  fs::path dir = fs::temp_directory_path() / ("gl_fleet_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  {
    Node a(dir / "a", testing::kFixturePrices, 120);
    Node b(dir / "b", "currency: USD\ndefault_per_hour: 0.90\nper_model: {H100: 2.40}\n", 180);
    const int port = free_port();
    std::ofstream(dir / "prometheus.yml") << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                                          << "scrape_configs:\n  - job_name: gpuledger\n    static_configs:\n"
                                          << "      - targets: ['127.0.0.1:" << a.port << "', '127.0.0.1:" << b.port
                                          << "']\n";
    pid_t pid = fork();
    if (pid == 0) {
      std::string log = (dir / "prometheus.log").string();
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      std::string cfg = "--config.file=" + (dir / "prometheus.yml").string();
      std::string tsdb = "--storage.tsdb.path=" + (dir / "tsdb").string();
      std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
      execl(prometheus.c_str(), "prometheus", cfg.c_str(), tsdb.c_str(), listen.c_str(), "--log.level=warn",
            static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    struct Reap {
      pid_t pid;
      ~Reap() {
        kill(pid, SIGTERM);
        int st;
        waitpid(pid, &st, 0);
      }
    } reap{pid};

    // Wait until both targets have been scraped.
    httplib::Client cli("127.0.0.1", port);
    bool ready = false;
    for (int i = 0; i < 600 && !ready; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      auto res = cli.Get("/api/v1/query?query=count(gpuledger_ledger_info)");
      if (!res || res->status != 200) continue;
      auto j = nlohmann::json::parse(res->body, nullptr, false);
      if (!j.is_discarded() && !j["data"]["result"].empty() && j["data"]["result"][0]["value"][1] == "2") ready = true;
    }
    ASSERT_TRUE(ready) << "prometheus did not scrape both agents; see " << (dir / "prometheus.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));

    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
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
      }
      EXPECT_EQ(fleet.total.cost_total_micros(), local.total.cost_total_micros());
    }
    // Node a: 351'428 (ledger_fixture.h); node b: 3 windows at 2.40/h (40'000),
    // 0.90/h (15'000) and 3/7 of 2.40/h (17'143) -> 3 x 112'143.
    Report team = fleet_report(url, now - 3600, now, GroupBy::kTeam);
    EXPECT_EQ(team.total.cost_total_micros(), 351'428 + 3 * 112'143);

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
    EXPECT_EQ(j["total"]["cost_total_micros"], 351'428 + 3 * 112'143);
    EXPECT_EQ(j["source"], "fleet");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::report
