#pragma once
// Test support: a real Prometheus server (Debian's package) on a free
// loopback port, scraping the given targets every second, its data under dir.
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace gpuledger::testing {

inline int free_port() {
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

class PrometheusServer {
 public:
  static constexpr const char* kBinary = "/usr/bin/prometheus";

  PrometheusServer(const std::filesystem::path& dir, const std::vector<int>& target_ports)
      : dir_(dir), port_(free_port()) {
    std::ofstream cfg(dir / "prometheus.yml");
    cfg << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        << "scrape_configs:\n  - job_name: gpuledger\n    static_configs:\n      - targets: [";
    for (size_t i = 0; i < target_ports.size(); ++i)
      cfg << (i ? ", " : "") << "'127.0.0.1:" << target_ports[i] << "'";
    cfg << "]\n";
    cfg.close();
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = (dir / "prometheus.log").string();
      freopen(log.c_str(), "w", stdout);
      freopen(log.c_str(), "a", stderr);
      std::string config = "--config.file=" + (dir / "prometheus.yml").string();
      std::string tsdb = "--storage.tsdb.path=" + (dir / "tsdb").string();
      std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port_);
      execl(kBinary, "prometheus", config.c_str(), tsdb.c_str(), listen.c_str(), "--log.level=warn",
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~PrometheusServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int st;
      waitpid(pid_, &st, 0);
    }
  }
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  bool started() const { return pid_ > 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log_path() const { return (dir_ / "prometheus.log").string(); }

  // The query's result vector now (empty when Prometheus is not answering yet).
  nlohmann::json query(const std::string& q) const {
    httplib::Client cli("127.0.0.1", port_);
    auto res = cli.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
    if (!res || res->status != 200) return nlohmann::json::array();
    auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded()) return nlohmann::json::array();
    return j["data"]["result"];
  }

  // Polls until the query's single value equals `value` (deadline: 60 s).
  bool wait_for_value(const std::string& q, double value) const {
    return wait_until([&] {
      auto r = query(q);
      return r.size() == 1 && std::stod(r[0]["value"][1].get<std::string>()) == value;
    });
  }

  static bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

 private:
  std::filesystem::path dir_;
  int port_;
  pid_t pid_ = -1;
};

}  // namespace gpuledger::testing
