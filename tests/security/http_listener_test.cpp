// The agent's HTTP listener under hostile clients: bodies, oversized and slow
// heads, floods of idle connections, a port already taken. No BPF needed.
#include "export/http_listener.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "common/error.h"
#include "raw_client.h"

namespace gpuledger::exporter {
namespace {

using gpuledger::testing::RawClient;
using gpuledger::testing::timed_get;
using Clock = std::chrono::steady_clock;

class Listener : public ::testing::Test {
 protected:
  void serve(HttpLimits limits = {}) {
    listener_ = std::make_unique<HttpListener>(limits);
    port_ = listener_->bind("127.0.0.1", 0);
    listener_->serve([this](const HttpRequest& r) {
      ++calls_;
      HttpResponse res;
      res.body = r.method + " " + r.target + "\n";
      return res;
    });
  }
  std::unique_ptr<HttpListener> listener_;
  int port_ = 0;
  std::atomic<int> calls_{0};
};

TEST(HttpRequestHead, ParsesStrictly) {
  HttpRequest r;
  ASSERT_EQ(parse_request_head("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2", r), 0);
  EXPECT_EQ(r.path, "/metrics");
  EXPECT_EQ(r.target, "/metrics?x=1");
  EXPECT_EQ(r.header("x-a"), "1, 2");
  EXPECT_TRUE(r.keep_alive());
  EXPECT_FALSE(r.has_body());
  EXPECT_EQ(parse_request_head("GET /metrics HTTP/2.0", r), 505);
  for (const char* bad : {"GET", "GET /x", "GET x HTTP/1.1", "GET /x HTTP/1.1 extra", "G@T /x HTTP/1.1",
                          "GET /x HTTP/1.1\r\n folded: x", "GET /x HTTP/1.1\r\nName : x", "GET /x HTTP/1.1\r\nnocolon",
                          "GET /a b HTTP/1.1"})
    EXPECT_EQ(parse_request_head(bad, r), 400) << bad;
  ASSERT_EQ(parse_request_head("GET / HTTP/1.0", r), 0);
  EXPECT_FALSE(r.keep_alive());
  for (const char* body : {"Content-Length: 1", "Content-Length: 00010", "Transfer-Encoding: chunked",
                           "Content-Length: "}) {
    ASSERT_EQ(parse_request_head(std::string("POST / HTTP/1.1\r\n") + body, r), 0);
    EXPECT_TRUE(r.has_body()) << body;
  }
  ASSERT_EQ(parse_request_head("GET / HTTP/1.1\r\nContent-Length: 0", r), 0);
  EXPECT_FALSE(r.has_body());
}

// The OOM of issue 8: one POST whose body was buffered whole. Now it is
// refused from its head alone, the handler never runs, and the listener
// never reads past the head.
TEST_F(Listener, ABodyIsRefusedFromItsHeadWithoutBeingRead) {
  serve();
  for (const char* head : {"POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 1073741824\r\n\r\n",
                           "PUT /metrics HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
                           "GET /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"}) {
    RawClient client(port_);
    ASSERT_TRUE(client.send(head));
    client.send(std::string(16 * 1024, 'x'));
    std::string response = client.read_until_closed(3000);
    EXPECT_EQ(response.rfind("HTTP/1.1 413 Content Too Large\r\n", 0), 0u) << head << response;
    EXPECT_NE(response.find("Connection: close\r\n"), std::string::npos);
  }
  EXPECT_EQ(calls_, 0);
}

TEST_F(Listener, MethodsOtherThanGetAndHeadAre405) {
  serve();
  RawClient client(port_);
  client.send("DELETE /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  std::string response = client.read_until_closed(3000);
  EXPECT_EQ(response.rfind("HTTP/1.1 405 ", 0), 0u) << response;
  EXPECT_NE(response.find("Allow: GET, HEAD\r\n"), std::string::npos);
  EXPECT_EQ(calls_, 0);
}

TEST_F(Listener, AHeadPastTheCapIs431AndClosed) {
  HttpLimits limits;
  limits.max_header_bytes = 1024;
  serve(limits);
  RawClient client(port_);
  client.send("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(4096, 'a'));
  std::string response = client.read_until_closed(3000);
  EXPECT_EQ(response.rfind("HTTP/1.1 431 ", 0), 0u) << response;
  EXPECT_EQ(calls_, 0);
}

TEST_F(Listener, KeepAlivePipeliningAndHead) {
  serve();
  RawClient client(port_);
  client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string first = client.read_response(3000);
  EXPECT_EQ(first, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 7\r\n"
                   "Connection: keep-alive\r\n\r\nGET /a\n");
  std::string second = client.read_response(3000, true);
  EXPECT_EQ(second.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << second;
  EXPECT_NE(second.find("Content-Length: 8\r\n"), std::string::npos) << "HEAD: the GET's length, no body";
  EXPECT_EQ(second.substr(second.size() - 4), "\r\n\r\n");
  client.send("GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  std::string third = client.read_until_closed(3000);
  EXPECT_NE(third.find("Connection: close\r\n\r\nGET /c\n"), std::string::npos) << third;
  EXPECT_EQ(calls_, 3);
}

// A client may send its request and shut its side at once: it is answered.
TEST_F(Listener, ARequestFollowedByAHalfCloseIsAnswered) {
  serve();
  RawClient client(port_);
  client.send("GET /half HTTP/1.1\r\nHost: x\r\n\r\n");
  client.finish_sending();
  std::string response = client.read_until_closed(3000);
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("\r\n\r\nGET /half\n"), std::string::npos) << response;
}

// A head must arrive whole within header_timeout of its first byte: a client
// trickling one byte at a time is answered 408 and cut off.
TEST_F(Listener, ATrickledHeadIsCutAtTheHeaderDeadline) {
  HttpLimits limits;
  limits.header_timeout = std::chrono::milliseconds(1000);
  serve(limits);
  RawClient client(port_);
  auto started = Clock::now();
  std::string head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slowloris\r\n\r\n";
  std::string response;
  for (char c : head) {
    if (!client.send(std::string(1, c))) break;
    if (client.readable(200)) break;  // the attacker's pace: a byte every 200 ms until answered
  }
  response = client.read_until_closed(2000);
  double waited = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_EQ(response.rfind("HTTP/1.1 408 ", 0), 0u) << response;
  EXPECT_GE(waited, 0.9);
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(calls_, 0);
}

TEST_F(Listener, AnIdleConnectionIsClosedAtTheDeadline) {
  HttpLimits limits;
  limits.header_timeout = std::chrono::milliseconds(500);
  serve(limits);
  RawClient client(port_);
  auto started = Clock::now();
  EXPECT_TRUE(client.closed_within(3000));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - started).count(), 1.5);
}

// Connections are bounded; a full listener frees the slot of the client that
// has waited longest for a request, so a scrape still gets in.
TEST_F(Listener, AFullListenerStillServesAScrape) {
  HttpLimits limits;
  limits.max_connections = 8;
  serve(limits);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 32; ++i) {
    idle.push_back(std::make_unique<RawClient>(port_));
    idle.back()->send("GET /slow HTTP/1.1\r\n");
  }
  for (int i = 0; i < 5; ++i) {
    double seconds = 0;
    EXPECT_EQ(timed_get(port_, "/metrics", &seconds), 200);
    EXPECT_LT(seconds, 1.0);
  }
  EXPECT_TRUE(idle.front()->closed_within(1000)) << "the longest waiting was evicted";
}

// Slow clients hold only connection slots, never a worker: with 64 of them
// mid-head, requests are answered at once.
TEST_F(Listener, SixtyFourSlowClientsDoNotDelayOthers) {
  serve();
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 64; ++i) {
    slow.push_back(std::make_unique<RawClient>(port_));
    slow.back()->send("GET /metrics HTTP/1.1\r\nHo");
  }
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    double seconds = 0;
    ASSERT_EQ(timed_get(port_, "/metrics", &seconds), 200);
    worst = std::max(worst, seconds);
    for (auto& c : slow) c->send("s");
  }
  EXPECT_LT(worst, 1.0);
  EXPECT_EQ(calls_, 20);
}

// Requests the slow predicate picks (a password to bcrypt) queue in their own
// lane: a flood of them never delays the rest.
TEST(ListenerLanes, AFloodOfSlowRequestsDoesNotDelayTheRest) {
  HttpListener listener;
  int port = listener.bind("127.0.0.1", 0);
  listener.serve(
      [](const HttpRequest& r) {
        if (r.path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(150));
        return HttpResponse{};
      },
      [](const HttpRequest& r) { return r.path == "/slow"; });
  std::atomic<bool> done{false};
  std::vector<std::thread> flood;
  for (int i = 0; i < 8; ++i)  // with one shared lane, a request would wait ~600 ms behind them
    flood.emplace_back([&] {
      while (!done) timed_get(port, "/slow");
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double worst = 0;
  for (int i = 0; i < 10; ++i) {
    double seconds = 0;
    EXPECT_EQ(timed_get(port, "/metrics", &seconds), 200);
    worst = std::max(worst, seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  done = true;
  for (auto& t : flood) t.join();
  EXPECT_LT(worst, 0.3);
}

// No SO_REUSEPORT: a second listener on a taken port fails, naming it.
TEST_F(Listener, APortInUseIsAnErrorNamingTheAddress) {
  serve();
  HttpListener second;
  try {
    second.bind("127.0.0.1", port_);
    FAIL() << "bound a port that is in use";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot listen on 127.0.0.1:" + std::to_string(port_) +
                                         ": address already in use (is another gpuledger agent running?)");
  }
  // Also against a socket that set SO_REUSEPORT itself (as the old agent did).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  HttpListener third;
  EXPECT_THROW(third.bind("127.0.0.1", ntohs(addr.sin_port)), Error);
  ::close(fd);
}

}  // namespace
}  // namespace gpuledger::exporter
