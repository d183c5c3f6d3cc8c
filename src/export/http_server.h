#pragma once
// Serves /metrics, /api/v1/workloads, /healthz and /readyz over the hardened
// listener (http_listener.h), with the TLS and basic authentication of
// --web-config-file (web_config.h). It knows no plane: what it serves comes
// in as ServedContent and contributors (node/served_content.h wires them).
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "export/basic_auth.h"
#include "export/health.h"
#include "export/http_listener.h"
#include "export/web_config.h"
#include "metrics/metrics_contributor.h"

namespace gpuledger::attribution {
class Agent;
}

namespace gpuledger::exporter {

struct HttpServerOptions {
  WebConfig web;      // TLS, basic auth, extra headers; default: plain HTTP, open
  HttpLimits limits;
};

// The node's own answers: the head of /metrics (given how long the last
// scrape took), the /api/v1/workloads document (JSON text), the check every
// /healthz runs first and the one /readyz runs.
struct ServedContent {
  std::function<std::string(double last_scrape_seconds)> metrics_page;
  std::function<std::string()> workloads_json;
  HealthCheck liveness;
  HealthCheck readiness;
};

// A listener with the options' TLS, not yet bound; throws Error on bad TLS files.
std::unique_ptr<HttpListener> make_listener(const HttpServerOptions& options);

class HttpServer {
 public:
  explicit HttpServer(ServedContent content, HttpServerOptions options = {});  // throws Error on bad TLS files
  // Serves on a listener already bound (make_listener, then bind): start() then only serves.
  HttpServer(ServedContent content, const WebConfig& web, std::unique_ptr<HttpListener> bound);
  // Adds series to /metrics; the contributor must outlive the server.
  void add_contributor(const metrics::MetricsContributor* contributor);
  // Adds a check to /healthz after the content's own.
  void add_liveness_check(HealthCheck check);
  ~HttpServer();
  // Binds host:port (port 0 picks one) and serves in the background;
  // returns the bound port. Throws Error naming the address when it cannot.
  int start(const std::string& host, int port);
  void serve();  // on the listener given bound
  void stop();

 private:
  HttpResponse handle(const HttpRequest& request);
  HttpResponse metrics_response();

  ServedContent content_;
  BasicAuth auth_;
  std::vector<std::pair<std::string, std::string>> extra_headers_;
  std::unique_ptr<HttpListener> listener_;
  std::atomic<double> last_scrape_seconds_{0.0};
  std::vector<const metrics::MetricsContributor*> contributors_;
  std::vector<HealthCheck> liveness_;
};

// Splits "HOST:PORT" (IPv6 as "[::1]:9400"); throws Error on a malformed value.
std::pair<std::string, int> parse_listen_address(const std::string& address);

}  // namespace gpuledger::exporter
