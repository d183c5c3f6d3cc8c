#pragma once
// A small HTTP/1.1 server for a root process on a network tenants can reach.
//
// One event-loop thread owns every socket: it accepts, runs TLS handshakes,
// reads request heads and writes responses, all non-blocking and each under a
// deadline. A few workers only turn complete requests into responses. So a
// slow or idle client costs a connection slot and a few KiB, never a worker:
// scrapes are answered however many clients dawdle (cpp-httplib's fixed pool
// gives each connection a thread, so eight slow clients starved /metrics).
//
// Requests carry no body: one with a body (Content-Length > 0 or any
// Transfer-Encoding) is answered 413 and closed without reading it. Heads are
// capped (431), must arrive whole within header_timeout of their first byte
// (408), and a full server evicts the connection that has waited longest for
// a request rather than refusing a scrape.
#include <openssl/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "export/http_message.h"
#include "export/http_workers.h"

namespace gpuledger::exporter {

struct HttpLimits {
  size_t max_connections = 256;
  size_t max_header_bytes = 8192;
  // From a request's first byte (or a new connection's accept, TLS handshake
  // included) to the end of its head.
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};   // keep-alive wait for the next request
  std::chrono::milliseconds write_timeout{30000};  // a whole response
  unsigned workers = 2;
};

class HttpListener {
 public:
  // `tls`: serve HTTPS with this context (see tls_context.h); null: plain HTTP.
  explicit HttpListener(HttpLimits limits = {}, std::shared_ptr<SSL_CTX> tls = nullptr);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds host:port (port 0 picks one) and returns the bound port. No
  // SO_REUSEPORT: a port another process holds is an Error naming the address.
  // An agent binds first, before loading probes, so a second one fails fast.
  int bind(const std::string& host, int port);
  // Serves in the background until stop(); after bind(). Requests `slow`
  // picks are answered by one worker of their own, behind one another, never
  // ahead of or instead of the rest.
  void serve(HttpHandler handler, std::function<bool(const HttpRequest&)> slow = nullptr);
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuledger::exporter
