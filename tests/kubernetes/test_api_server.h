#pragma once
// A Kubernetes API server for tests: HTTPS with its own CA (made with the
// openssl CLI at test time), bearer-token or client-certificate auth, serving
// list and watch of pods (with fieldSelector=spec.nodeName) and namespaces, a
// pod, a node and an apps/v1 DaemonSet by name (404 when there is none):
// ADDED / MODIFIED / DELETED, bookmarks, and 410 Gone once history is
// compacted. It can be stopped and started again on the same port, keeping
// its objects, to play an API server that goes away and comes back.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gpuledger::testing {

// A CA, a server certificate for 127.0.0.1/localhost and a client certificate,
// generated once per test process in a temporary directory.
struct TestPki {
  std::string dir, ca_crt, ca_key, server_crt, server_key, client_crt, client_key;
};
const TestPki& test_pki();
std::string read_text(const std::string& path);
std::string base64(const std::string& data);

class TestApiServer {
 public:
  struct Options {
    bool tls = true;
    bool client_certs = false;  // require a client certificate signed by the CA instead of a token
    std::string token = "test-token";
    std::string node_name = "node-1";
  };
  explicit TestApiServer(Options options);
  ~TestApiServer();

  int start(int port = 0);  // returns the bound port
  void stop();              // drops every connection; objects and history stay
  int port() const { return port_; }
  std::string url() const;
  // A kubeconfig for this server (token user, or client-certificate user).
  std::string write_kubeconfig(const std::string& dir, bool ca_inline = true) const;

  // Objects. Each change is one event with the next resourceVersion.
  void upsert_pod(const nlohmann::json& pod);  // ADDED when new, else MODIFIED
  void delete_pod(const std::string& uid);
  void upsert_namespace(const std::string& name, const std::map<std::string, std::string>& labels);
  // Nodes (fieldSelector metadata.name) and resource.k8s.io/v1 ResourceSlices
  // (fieldSelector spec.nodeName), by name.
  void upsert_node(const nlohmann::json& node);
  void upsert_resource_slice(const nlohmann::json& slice);
  // apps/v1 DaemonSets, by namespace and name (GET only).
  void upsert_daemonset(const nlohmann::json& daemonset);
  void delete_daemonset(const std::string& ns, const std::string& name);
  // Every request is refused from now on (401), as when the agent's
  // ServiceAccount is deleted; `forbidden`: 403, as when its RBAC is.
  void revoke_access(bool forbidden = false);
  void send_bookmark();     // open watches get a BOOKMARK at the current resourceVersion
  void compact_history();   // older resourceVersions are gone: watches from them get 410; open ones too
  void send_garbage(const std::string& line);  // a raw line on open pod watches

  int pod_lists() const { return pod_lists_.load(); }
  int pod_watches() const { return pod_watches_.load(); }
  int open_watches() const { return open_watches_.load(); }
  int unauthorized() const { return unauthorized_.load(); }
  std::string last_field_selector() const;

  static nlohmann::json make_pod(const std::string& uid, const std::string& ns, const std::string& name,
                                 const std::string& node, const std::map<std::string, std::string>& labels,
                                 const std::vector<std::pair<std::string, std::string>>& containers);

 private:
  struct Event {
    uint64_t rv;
    std::string resource;  // "pods", "namespaces", "*" (garbage)
    std::string type;
    nlohmann::json object;
    std::string raw;
  };
  void serve_list(const std::string& resource, const httplib::Request& req, httplib::Response& res);
  void serve_watch(const std::string& resource, const httplib::Request& req, httplib::Response& res);
  bool authorized(const httplib::Request& req, httplib::Response& res);
  void serve_object(const std::optional<nlohmann::json>& object, const std::string& what, httplib::Response& res);
  bool matches(const std::string& resource, const nlohmann::json& object, const std::string& selector) const;
  void record(const std::string& resource, const std::string& type, nlohmann::json object);

  Options options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t rv_ = 100;
  uint64_t compacted_rv_ = 0;
  uint64_t gone_generation_ = 0;
  uint64_t bookmark_generation_ = 0;
  std::map<std::string, nlohmann::json> pods_;        // by uid
  std::map<std::string, nlohmann::json> namespaces_;  // by name
  std::map<std::string, nlohmann::json> daemonsets_;  // by "namespace/name"
  mutable std::map<std::string, std::map<std::string, nlohmann::json>> by_name_;  // nodes, resourceslices: by name
  const std::map<std::string, nlohmann::json>& objects(const std::string& resource) const;
  std::vector<Event> history_;
  std::string last_selector_;
  std::atomic<int> revoked_status_{0};  // 0: not revoked
  std::atomic<int> pod_lists_{0}, pod_watches_{0}, open_watches_{0}, unauthorized_{0};
};

}  // namespace gpuledger::testing
