#pragma once
// Serves /metrics, /api/v1/workloads and /healthz from an agent.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "export/metrics_contributor.h"

namespace httplib {
class Server;
}

namespace gpuledger::agent {
class Agent;
}

namespace gpuledger::exporter {

class HttpServer {
 public:
  explicit HttpServer(agent::Agent& agent);
  // Adds series to /metrics; the contributor must outlive the server.
  void add_contributor(const MetricsContributor* contributor);
  ~HttpServer();
  // Binds host:port (port 0 picks one) and serves in a background thread;
  // returns the bound port. Throws Error when it cannot bind.
  int start(const std::string& host, int port);
  void stop();

 private:
  agent::Agent& agent_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<double> last_scrape_seconds_{0.0};
  std::vector<const MetricsContributor*> contributors_;
};

// Splits "HOST:PORT" (IPv6 as "[::1]:9400"); throws Error on a malformed value.
std::pair<std::string, int> parse_listen_address(const std::string& address);

}  // namespace gpuledger::exporter
