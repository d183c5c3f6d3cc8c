#include "export/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
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
    // Tenant-named strings may hold any bytes: replaced, never a failed page.
    res.set_content(workloads_json(agent_.snapshot()).dump(2, ' ', false, nlohmann::json::error_handler_t::replace),
                    "application/json");
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
  auto bad = [&](const std::string& why) { return Error("--listen wants HOST:PORT (" + why + "), got '" + address + "'"); };
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw bad("no port");
  std::string host = address.substr(0, colon);
  std::string port_text = address.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      !std::all_of(port_text.begin(), port_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw bad("the port must be 0-65535");
  int port = 0;
  std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port > 65535) throw bad("the port must be 0-65535");
  if (!host.empty() && host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') throw bad("unclosed IPv6 bracket");
    host = host.substr(1, host.size() - 2);
  } else if (host.find_first_of(":[]") != std::string::npos) {
    throw bad("write an IPv6 host in brackets, e.g. [::1]:9400");
  }
  if (host.empty()) host = "0.0.0.0";
  return {host, port};
}

}  // namespace gpuledger::exporter
