#pragma once
// Test support: a raw TCP client that sends exactly the bytes a test writes
// (slow, malformed or oversized requests) and reads what comes back.
#include <chrono>
#include <string>

namespace gpuledger::testing {

class RawClient {
 public:
  explicit RawClient(int port);  // connects to 127.0.0.1:port; throws std::runtime_error
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  // Sends what the socket takes without blocking; false once the peer is gone.
  bool send(const std::string& bytes);
  // Shuts the sending side (a client that sends its request and half-closes).
  void finish_sending();
  // Reads until the peer closes or `timeout_ms` passes.
  std::string read_until_closed(int timeout_ms);
  // Reads one whole response (head and Content-Length body; the head alone
  // for an answer to HEAD), or what came by the timeout.
  std::string read_response(int timeout_ms, bool head_only = false);
  // True when something (data or a close) can be read within `timeout_ms`; reads nothing.
  bool readable(int timeout_ms);
  // True when the peer closed (EOF or reset) within `timeout_ms`.
  bool closed_within(int timeout_ms);

 private:
  // Appends what arrives before `until`; false on timeout, close or error.
  bool receive_more(std::string& out, std::chrono::steady_clock::time_point until);
  int fd_ = -1;
  std::string pending_;
};

// One GET over a fresh connection; returns the status (0 on failure) and sets
// `seconds` to the time it took and `body` to the body.
int timed_get(int port, const std::string& path, double* seconds = nullptr, std::string* body = nullptr);

}  // namespace gpuledger::testing
