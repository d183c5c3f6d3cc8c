#pragma once
// A local dcgm-exporter stand-in: cpp-httplib on 127.0.0.1, port 0, serving
// whatever body the test sets (or an HTTP error, or a slow answer).
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

namespace gpuledger::device::test {

class FixtureServer {
 public:
  FixtureServer() {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      std::string body;
      int status;
      std::chrono::milliseconds delay;
      {
        std::lock_guard lock(mu_);
        body = body_;
        status = status_;
        delay = delay_;
      }
      ++hits;
      if (delay.count()) std::this_thread::sleep_for(delay);
      res.status = status;
      res.set_content(body, "text/plain; version=0.0.4; charset=utf-8");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FixtureServer() {
    server_.stop();
    thread_.join();
  }
  void set(std::string body, int status = 200, std::chrono::milliseconds delay = {}) {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    status_ = status;
    delay_ = delay;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/metrics"; }
  int port() const { return port_; }
  std::atomic<int> hits{0};

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::string body_;
  int status_ = 200;
  std::chrono::milliseconds delay_{0};
};

// A port on 127.0.0.1 with nobody listening (bound, never listened, closed).
inline int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace gpuledger::device::test
