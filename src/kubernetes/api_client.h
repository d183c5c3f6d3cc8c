#pragma once
// A minimal Kubernetes API client: GET a path, or stream a watch line by line,
// over HTTPS (CA data, client certificates, bearer tokens, or no verification
// when the kubeconfig says insecure-skip-tls-verify) or plain HTTP (tests).
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kubernetes/cluster_config.h"

namespace httplib {
class ClientImpl;
}

namespace gpuledger::kubernetes {

struct ApiResponse {
  int status = 0;      // HTTP status; 0 when no response came
  std::string body;    // the body (for a stream: only when the status is not 200)
  std::string error;   // transport failure, empty when a response came
  bool ok() const { return error.empty() && status == 200; }
  std::string describe() const;  // for the log
};

class ApiClient {
 public:
  explicit ApiClient(ClusterConfig config);  // throws Error on a bad server URL or unreadable PEM data
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  ApiResponse get(const std::string& path_and_query, std::chrono::seconds timeout);
  // Calls on_line for every newline-terminated line of a 200 response until
  // the stream ends, fails, on_line returns false or cancel() is called.
  ApiResponse stream_lines(const std::string& path_and_query, std::chrono::seconds read_timeout,
                           const std::function<bool(const std::string&)>& on_line);
  // Aborts requests in flight and makes later ones fail at once (shutdown).
  void cancel();

  const ClusterConfig& config() const { return config_; }

 private:
  std::shared_ptr<httplib::ClientImpl> make_client(std::chrono::seconds read_timeout);
  void track(const std::shared_ptr<httplib::ClientImpl>& client, bool add);

  ClusterConfig config_;
  bool tls_ = false;
  std::string host_;
  int port_ = 0;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<httplib::ClientImpl>> in_flight_;
};

}  // namespace gpuledger::kubernetes
