#include "export/http_listener.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "common/error.h"
#include "common/log.h"
#include "export/http_workers.h"
#include "export/listen_socket.h"

namespace gpuledger::exporter {
namespace {

using Clock = std::chrono::steady_clock;

// epoll data for the two descriptors that are not connections.
constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;
// After answering a request it will not read (413, 431, ...) the listener
// shuts its side and discards what the client still sends, for a moment, so
// the client reads the answer instead of a reset; never buffered.
constexpr std::chrono::milliseconds kLingerTime{2000};
constexpr size_t kLingerBytes = 64 * 1024;

enum class Phase { kHandshake, kReading, kWorking, kWriting, kLingering };

struct Connection {
  uint64_t id = 0;
  int fd = -1;
  SSL* ssl = nullptr;
  Phase phase = Phase::kReading;
  std::string in;                 // bytes of the request head being read
  std::string out;                // the response being written
  size_t out_sent = 0;
  bool close_after_write = false;
  bool want_write = false;        // TLS needs the socket writable to go on
  uint32_t watched = 0;           // epoll events registered; 0: not registered
  Clock::time_point waiting_since;  // when it began waiting for a request (eviction order)
  Clock::time_point deadline;
  size_t lingered = 0;
  bool peer_done = false;         // the client shut its side: answer what was read, then close
};

}  // namespace

struct HttpListener::Impl {
  HttpLimits limits;
  std::shared_ptr<SSL_CTX> tls;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::atomic<bool> running{false};
  std::thread loop_thread;
  std::unique_ptr<HttpWorkers> workers;
  std::unordered_map<uint64_t, Connection> connections;  // event-loop thread only
  uint64_t next_id = 2;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd})
      if (fd >= 0) ::close(fd);
  }

  void wake() {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd, &one, sizeof one);
  }

  // --- epoll registration -------------------------------------------------
  void watch(Connection& c, uint32_t events) {
    if (events == c.watched) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    int op = c.watched == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    ::epoll_ctl(epoll_fd, op, c.fd, &ev);
    c.watched = events;
  }

  void close_connection(uint64_t id) {
    auto it = connections.find(id);
    if (it == connections.end()) return;
    Connection& c = it->second;
    watch(c, 0);
    if (c.ssl) SSL_free(c.ssl);
    ::close(c.fd);
    connections.erase(it);
  }

  // --- I/O that hides the difference between TCP and TLS ------------------
  // > 0 bytes; 0 would block; -1 closed or failed.
  ssize_t receive(Connection& c, char* buf, size_t size) {
    c.want_write = false;
    if (!c.ssl) {
      ssize_t n = ::recv(c.fd, buf, size, 0);
      if (n > 0) return n;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
      return -1;
    }
    int n = SSL_read(c.ssl, buf, static_cast<int>(size));
    if (n > 0) return n;
    int err = SSL_get_error(c.ssl, n);
    if (err == SSL_ERROR_WANT_READ) return 0;
    if (err == SSL_ERROR_WANT_WRITE) {
      c.want_write = true;
      return 0;
    }
    ERR_clear_error();
    return -1;
  }

  ssize_t send_some(Connection& c, const char* buf, size_t size) {
    c.want_write = false;
    if (!c.ssl) {
      ssize_t n = ::send(c.fd, buf, size, MSG_NOSIGNAL);
      if (n >= 0) return n;
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
      return -1;
    }
    int n = SSL_write(c.ssl, buf, static_cast<int>(std::min<size_t>(size, 1 << 20)));
    if (n > 0) return n;
    int err = SSL_get_error(c.ssl, n);
    if (err == SSL_ERROR_WANT_WRITE) return 0;
    if (err == SSL_ERROR_WANT_READ) return 0;  // renegotiation-like: readable first, rare
    ERR_clear_error();
    return -1;
  }

  // --- phases ---------------------------------------------------------------
  void await_request(Connection& c, Clock::time_point now, bool fresh) {
    c.phase = Phase::kReading;
    c.waiting_since = now;
    c.deadline = now + (fresh ? limits.header_timeout : limits.idle_timeout);
    watch(c, EPOLLIN | EPOLLRDHUP);
    if (!c.in.empty()) consume_input(c, now);  // a pipelined request already read
  }

  void respond_and_close(Connection& c, int status, Clock::time_point now) {
    begin_write(c, serialize_response(status_response(status), false, false), true, now);
  }

  void begin_write(Connection& c, std::string bytes, bool close_after, Clock::time_point now) {
    c.phase = Phase::kWriting;
    c.out = std::move(bytes);
    c.out_sent = 0;
    c.close_after_write = close_after;
    c.deadline = now + limits.write_timeout;
    if (close_after) c.in.clear();
    write_more(c, now);
  }

  void write_more(Connection& c, Clock::time_point now) {
    const uint64_t id = c.id;
    while (c.out_sent < c.out.size()) {
      ssize_t n = send_some(c, c.out.data() + c.out_sent, c.out.size() - c.out_sent);
      if (n < 0) return close_connection(id);
      if (n == 0) {
        watch(c, c.ssl ? uint32_t{EPOLLOUT | EPOLLIN} : uint32_t{EPOLLOUT});
        return;
      }
      c.out_sent += static_cast<size_t>(n);
    }
    c.out.clear();
    c.out.shrink_to_fit();
    if (!c.close_after_write) return await_request(c, now, false);
    // Lingering close: our side is done; discard what the client still sends.
    if (c.ssl) SSL_shutdown(c.ssl);
    ::shutdown(c.fd, SHUT_WR);
    c.phase = Phase::kLingering;
    c.deadline = now + kLingerTime;
    watch(c, EPOLLIN | EPOLLRDHUP);
  }

  void handshake(Connection& c, Clock::time_point now) {
    int rc = SSL_accept(c.ssl);
    if (rc == 1) return await_request(c, now, true);
    int err = SSL_get_error(c.ssl, rc);
    if (err == SSL_ERROR_WANT_READ) return watch(c, EPOLLIN | EPOLLRDHUP);
    if (err == SSL_ERROR_WANT_WRITE) return watch(c, EPOLLOUT);
    spdlog::debug("http: TLS handshake failed: {}", ERR_reason_error_string(ERR_peek_last_error())
                                                         ? ERR_reason_error_string(ERR_peek_last_error())
                                                         : "closed");
    ERR_clear_error();
    close_connection(c.id);
  }

  void read_more(Connection& c, Clock::time_point now) {
    char buf[4096];
    while (true) {
      ssize_t n = receive(c, buf, sizeof buf);
      if (n < 0) {
        // A client may send its request and shut its side at once.
        if (c.in.find("\r\n\r\n") == std::string::npos) return close_connection(c.id);
        c.peer_done = true;
        break;
      }
      if (n == 0) break;
      if (c.in.empty() && c.deadline - now > limits.header_timeout)
        c.deadline = now + limits.header_timeout;  // the keep-alive wait ends with a request's first byte
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > limits.max_header_bytes + 4) break;  // judged below; never buffer more
    }
    watch(c, c.want_write ? EPOLLIN | EPOLLOUT : EPOLLIN | EPOLLRDHUP);
    consume_input(c, now);
  }

  void linger(Connection& c) {
    char buf[4096];
    while (true) {
      ssize_t n = receive(c, buf, sizeof buf);
      if (n < 0) return close_connection(c.id);
      if (n == 0) return;
      c.lingered += static_cast<size_t>(n);
      if (c.lingered > kLingerBytes) return close_connection(c.id);
    }
  }

  // Hands a complete head to the workers, answers a bad one, or waits for more.
  void consume_input(Connection& c, Clock::time_point now) {
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (c.in.size() > limits.max_header_bytes) respond_and_close(c, 431, now);
      return;
    }
    if (end + 4 > limits.max_header_bytes) return respond_and_close(c, 431, now);
    HttpRequest request;
    int status = parse_request_head(std::string_view(c.in).substr(0, end), request);
    c.in.erase(0, end + 4);
    if (status != 0) return respond_and_close(c, status, now);
    // No endpoint takes a body: refuse one before reading a byte of it.
    if (request.has_body()) return respond_and_close(c, 413, now);
    if (request.method != "GET" && request.method != "HEAD") {
      HttpResponse r = status_response(405);
      r.headers.push_back({"Allow", "GET, HEAD"});
      return begin_write(c, serialize_response(r, false, false), true, now);
    }
    c.phase = Phase::kWorking;
    watch(c, 0);  // not read while a worker builds its answer
    workers->submit(c.id, std::move(request));
  }

  // --- accepting --------------------------------------------------------------
  void accept_all(Clock::time_point now) {
    while (true) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of fds: the backlog waits
      }
      if (connections.size() >= limits.max_connections && !evict_longest_waiting()) {
        ::close(fd);  // every slot is busy answering: the client retries
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Connection& c = connections[next_id];
      c.id = next_id++;
      c.fd = fd;
      if (tls) {
        c.ssl = SSL_new(tls.get());
        SSL_set_fd(c.ssl, fd);
        c.phase = Phase::kHandshake;
        c.waiting_since = now;
        c.deadline = now + limits.header_timeout;
        handshake(c, now);
      } else {
        await_request(c, now, true);
      }
    }
  }

  // Frees a slot from the connection that has waited longest for a request
  // (a slow or idle client), never one being answered.
  bool evict_longest_waiting() {
    Connection* oldest = nullptr;
    for (auto& [id, c] : connections)
      if ((c.phase == Phase::kReading || c.phase == Phase::kHandshake || c.phase == Phase::kLingering) &&
          (!oldest || std::tie(c.waiting_since, c.id) < std::tie(oldest->waiting_since, oldest->id)))
        oldest = &c;
    if (!oldest) return false;
    close_connection(oldest->id);
    return true;
  }

  void expire(Clock::time_point now) {
    std::vector<uint64_t> late;
    for (auto& [id, c] : connections)
      if (c.phase != Phase::kWorking && now >= c.deadline) late.push_back(id);
    for (uint64_t id : late) {
      Connection& c = connections[id];
      // A request head that never finished gets its 408 (best effort, never waited on).
      if (c.phase == Phase::kReading && !c.in.empty() && !c.ssl) {
        std::string bytes = serialize_response(status_response(408), false, false);
        [[maybe_unused]] auto n = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      close_connection(id);
    }
  }

  void deliver_done(Clock::time_point now) {
    for (auto& d : workers->take_done()) {
      auto it = connections.find(d.id);
      if (it == connections.end()) continue;
      begin_write(it->second, std::move(d.bytes), !d.keep_alive || it->second.peer_done, now);
    }
  }

  void on_event(uint64_t id, uint32_t events, Clock::time_point now) {
    auto it = connections.find(id);
    if (it == connections.end()) return;
    Connection& c = it->second;
    switch (c.phase) {
      case Phase::kHandshake: return handshake(c, now);
      case Phase::kReading:
        if (events & (EPOLLIN | EPOLLOUT | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) read_more(c, now);
        return;
      case Phase::kWriting: return write_more(c, now);
      case Phase::kLingering: return linger(c);
      case Phase::kWorking: return;
    }
  }

  void loop() {
    epoll_event events[64];
    while (running) {
      int n = ::epoll_wait(epoll_fd, events, 64, 250);
      auto now = Clock::now();
      for (int i = 0; i < n; ++i) {
        uint64_t id = events[i].data.u64;
        if (id == kListenerId) {
          accept_all(now);
        } else if (id == kWakeId) {
          uint64_t count;
          [[maybe_unused]] auto r = ::read(wake_fd, &count, sizeof count);
          deliver_done(now);
        } else {
          on_event(id, events[i].events, now);
        }
      }
      expire(now);
    }
    std::vector<uint64_t> all;
    for (auto& [id, c] : connections) all.push_back(id);
    for (uint64_t id : all) close_connection(id);
  }
};

HttpListener::HttpListener(HttpLimits limits, std::shared_ptr<SSL_CTX> tls) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->tls = std::move(tls);
}

HttpListener::~HttpListener() { stop(); }

int HttpListener::bind(const std::string& host, int port) {
  impl_->listen_fd = listen_on(host, port);
  return bound_port(impl_->listen_fd);
}

void HttpListener::serve(HttpHandler handler, std::function<bool(const HttpRequest&)> slow) {
  Impl& m = *impl_;
  if (m.listen_fd < 0) throw Error("http: serve() before bind()");
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) throw Error(std::string("http: epoll: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.u64 = kWakeId;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  m.running = true;
  m.workers = std::make_unique<HttpWorkers>(std::move(handler), std::move(slow), m.limits.workers, [&m] { m.wake(); });
  m.loop_thread = std::thread([&m] { m.loop(); });
}

void HttpListener::stop() {
  Impl& m = *impl_;
  if (!m.running.exchange(false)) return;
  m.wake();
  if (m.loop_thread.joinable()) m.loop_thread.join();
  m.workers.reset();
}

}  // namespace gpuledger::exporter
