#include "raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/poll.h>  // not <poll.h>: tests/kubernetes/poll.h may be on the include path
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>

namespace gpuledger::testing {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point until) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

}  // namespace

RawClient::RawClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("connect 127.0.0.1:" + std::to_string(port) + " failed");
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // the server is not reading: fine
    return false;
  }
  return true;
}

void RawClient::finish_sending() { ::shutdown(fd_, SHUT_WR); }

bool RawClient::receive_more(std::string& out, std::chrono::steady_clock::time_point until) {
  char buf[65536];
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, remaining_ms(until)) <= 0) return false;
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n <= 0) return false;
  out.append(buf, static_cast<size_t>(n));
  return true;
}

std::string RawClient::read_until_closed(int timeout_ms) {
  auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out = std::move(pending_);
  pending_.clear();
  while (receive_more(out, until)) {
  }
  return out;
}

std::string RawClient::read_response(int timeout_ms, bool head_only) {
  auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string out = std::move(pending_);
  pending_.clear();
  while (true) {
    size_t end = out.find("\r\n\r\n");
    if (end != std::string::npos) {
      size_t length = 0;
      auto at = out.find("Content-Length: ");
      if (at != std::string::npos && at < end && !head_only) length = std::stoul(out.substr(at + 16));
      if (out.size() >= end + 4 + length) {
        pending_ = out.substr(end + 4 + length);
        return out.substr(0, end + 4 + length);
      }
    }
    if (!receive_more(out, until)) return out;
  }
}

bool RawClient::readable(int timeout_ms) {
  if (!pending_.empty()) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

bool RawClient::closed_within(int timeout_ms) {
  auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  while (true) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(until)) <= 0) return false;
    if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;  // read and dropped until the close
  }
}

int timed_get(int port, const std::string& path, double* seconds, std::string* body) {
  auto started = Clock::now();
  try {
    RawClient client(port);
    client.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    std::string response = client.read_response(10000);
    if (seconds) *seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (response.rfind("HTTP/1.1 ", 0) != 0) return 0;
    if (body) *body = response.substr(response.find("\r\n\r\n") + 4);
    return std::stoi(response.substr(9, 3));
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace gpuledger::testing
