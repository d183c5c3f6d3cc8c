#include "export/http_server.h"

#include <algorithm>
#include <charconv>
#include <chrono>

#include "common/error.h"
#include "export/tls_context.h"
#include "metrics/prometheus_text.h"

namespace gpuledger::exporter {
namespace {

// Kubelet probes: answered without credentials, never queued behind a bcrypt.
bool is_probe(const HttpRequest& r) { return r.path == "/healthz" || r.path == "/readyz"; }

}  // namespace

std::unique_ptr<HttpListener> make_listener(const HttpServerOptions& options) {
  std::shared_ptr<SSL_CTX> tls = options.web.tls ? make_tls_context(*options.web.tls) : nullptr;
  return std::make_unique<HttpListener>(options.limits, std::move(tls));
}

HttpServer::HttpServer(ServedContent content, HttpServerOptions options)
    : HttpServer(std::move(content), options.web, make_listener(options)) {}

HttpServer::HttpServer(ServedContent content, const WebConfig& web, std::unique_ptr<HttpListener> listener)
    : content_(std::move(content)), auth_(web.basic_auth_users), extra_headers_(web.headers),
      listener_(std::move(listener)) {
  if (content_.liveness) liveness_.push_back(content_.liveness);
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::add_contributor(const metrics::MetricsContributor* contributor) { contributors_.push_back(contributor); }
void HttpServer::add_liveness_check(HealthCheck check) { liveness_.push_back(std::move(check)); }

HttpResponse HttpServer::metrics_response() {
  auto started = std::chrono::steady_clock::now();
  HttpResponse res;
  res.content_type = std::string(metrics::kPrometheusContentType);
  if (content_.metrics_page) res.body = content_.metrics_page(last_scrape_seconds_.load());
  for (const auto* contributor : contributors_) {
    metrics::ExpositionWriter extra;
    contributor->write_metrics(extra);
    res.body += extra.text();
  }
  last_scrape_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return res;
}

HttpResponse HttpServer::handle(const HttpRequest& request) {
  HttpResponse res;
  // Probes (kubelet) reach health without credentials; they tell only whether
  // and why the agent is (not) working. Everything else needs them when set.
  if (auth_.enabled() && !is_probe(request) && !auth_.allows(request.header("authorization"))) {
    res = status_response(401);
    res.headers.push_back({"WWW-Authenticate", "Basic realm=\"gpuledger\", charset=\"UTF-8\""});
  } else if (request.path == "/metrics") {
    res = metrics_response();
  } else if (request.path == "/api/v1/workloads") {
    res.content_type = "application/json";
    res.body = content_.workloads_json ? content_.workloads_json() : "[]";
  } else if (is_probe(request)) {
    std::vector<HealthCheck> checks = liveness_;
    if (request.path == "/readyz") {
      checks.clear();
      if (content_.readiness) checks.push_back(content_.readiness);
    }
    HealthAnswer answer = run_health_checks(checks);
    res.status = answer.status;
    res.body = answer.body;
  } else {
    res = status_response(404);
  }
  res.headers.insert(res.headers.end(), extra_headers_.begin(), extra_headers_.end());
  return res;
}

int HttpServer::start(const std::string& host, int port) {
  int bound = listener_->bind(host, port);
  serve();
  return bound;
}

void HttpServer::serve() {
  // Credentials not seen before cost a bcrypt (tens of ms by design): those
  // wait in their own lane, so a flood of wrong passwords never delays a
  // scraper whose credentials were verified already, or a health probe.
  std::function<bool(const HttpRequest&)> slow;
  if (auth_.enabled())
    slow = [this](const HttpRequest& r) {
      return !is_probe(r) && !auth_.verified_before(r.header("authorization"));
    };
  listener_->serve([this](const HttpRequest& r) { return handle(r); }, std::move(slow));
}

void HttpServer::stop() {
  if (listener_) listener_->stop();
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
