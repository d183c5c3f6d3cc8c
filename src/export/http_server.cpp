#include "export/http_server.h"

#include <httplib.h>

#include <chrono>

#include "agent/agent.h"
#include "common/error.h"
#include "export/metrics_page.h"
#include "export/prometheus_text.h"
#include "export/workloads_json.h"

namespace gpuledger::exporter {

HttpServer::HttpServer(agent::Agent& agent) : agent_(agent), server_(std::make_unique<httplib::Server>()) {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    auto started = std::chrono::steady_clock::now();
    std::string body = render_metrics(agent_.snapshot(), last_scrape_seconds_.load());
    for (const auto* contributor : contributors_) {
      ExpositionWriter extra;
      contributor->write_metrics(extra);
      body += extra.text();
    }
    res.set_content(body, std::string(kPrometheusContentType).c_str());
    last_scrape_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  });
  server_->Get("/api/v1/workloads", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(workloads_json(agent_.snapshot()).dump(2), "application/json");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add_contributor(const MetricsContributor* contributor) { contributors_.push_back(contributor); }

int HttpServer::start(const std::string& host, int port) {
  int bound = port;
  if (port == 0) {
    bound = server_->bind_to_any_port(host.c_str());
  } else if (!server_->bind_to_port(host.c_str(), port)) {
    bound = -1;
  }
  if (bound < 0) throw Error("cannot listen on " + host + ":" + std::to_string(port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return bound;
}

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::pair<std::string, int> parse_listen_address(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    throw Error("--listen wants HOST:PORT, got '" + address + "'");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) throw Error("--listen: bad port in '" + address + "'");
  if (host.empty()) host = "0.0.0.0";
  return {host, port};
}

}  // namespace gpuledger::exporter
