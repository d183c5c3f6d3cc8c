#include "test_api_server.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gpuledger::testing {
namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string base64(const std::string& in) {
  static const char* chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned val = 0;
  int bits = -6;
  for (unsigned char c : in) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(chars[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(chars[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

const TestPki& test_pki() {
  static const TestPki pki = [] {
    TestPki p;
    char tmpl[] = "/tmp/gpuledger-pki-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    p.dir = tmpl;
    p.ca_crt = p.dir + "/ca.crt";
    p.ca_key = p.dir + "/ca.key";
    p.server_crt = p.dir + "/server.crt";
    p.server_key = p.dir + "/server.key";
    p.client_crt = p.dir + "/client.crt";
    p.client_key = p.dir + "/client.key";
    std::ofstream(p.dir + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                                         << "extendedKeyUsage=serverAuth\n";
    std::ofstream(p.dir + "/client.ext") << "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n";
    std::string d = p.dir;
    std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes ";
    std::string script =
        "set -e; cd " + d + "; " +
        "openssl req -x509" + ec + "-keyout ca.key -out ca.crt -days 2 -subj /CN=gpuledger-test-ca 2>/dev/null; " +
        "openssl req" + ec + "-keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null; " +
        "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 "
        "-extfile server.ext 2>/dev/null; " +
        "openssl req" + ec + "-keyout client.key -out client.csr -subj /CN=gpuledger/O=system:nodes 2>/dev/null; " +
        "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 "
        "-extfile client.ext 2>/dev/null";
    if (std::system(("sh -c '" + script + "'").c_str()) != 0)
      throw std::runtime_error("openssl could not make the test certificates");
    static std::string to_remove;
    to_remove = p.dir;
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(to_remove, ec);
    });
    return p;
  }();
  return pki;
}

nlohmann::json TestApiServer::make_pod(const std::string& uid, const std::string& ns, const std::string& name,
                                       const std::string& node, const std::map<std::string, std::string>& labels,
                                       const std::vector<std::pair<std::string, std::string>>& containers) {
  nlohmann::json pod = {{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"metadata", {{"uid", uid}, {"namespace", ns}, {"name", name}}},
                        {"spec", {{"nodeName", node}}},
                        {"status", {{"phase", "Running"}, {"containerStatuses", nlohmann::json::array()}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  for (const auto& [cname, cid] : containers)
    pod["status"]["containerStatuses"].push_back({{"name", cname}, {"containerID", cid}, {"ready", true}});
  return pod;
}

TestApiServer::TestApiServer(Options options) : options_(std::move(options)) {}

TestApiServer::~TestApiServer() { stop(); }

std::string TestApiServer::url() const {
  return std::string(options_.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

std::string TestApiServer::write_kubeconfig(const std::string& dir, bool ca_inline) const {
  const auto& pki = test_pki();
  std::string path = dir + "/kubeconfig";
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
      << "contexts:\n- name: other\n  context: {cluster: nowhere, user: nobody}\n"
      << "- name: test\n  context:\n    cluster: test-cluster\n    user: test-user\n"
      << "clusters:\n- name: test-cluster\n  cluster:\n    server: " << url() << "\n";
  if (options_.tls) {
    if (ca_inline)
      out << "    certificate-authority-data: " << base64(read_text(pki.ca_crt)) << "\n";
    else
      out << "    certificate-authority: " << pki.ca_crt << "\n";
  }
  out << "users:\n- name: test-user\n  user:\n";
  if (options_.client_certs) {
    out << "    client-certificate-data: " << base64(read_text(pki.client_crt)) << "\n"
        << "    client-key: " << pki.client_key << "\n";
  } else {
    out << "    token: " << options_.token << "\n";
  }
  return path;
}

int TestApiServer::start(int port) {
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  const auto& pki = test_pki();
  if (options_.tls) {
    auto s = std::make_unique<httplib::SSLServer>(pki.server_crt.c_str(), pki.server_key.c_str(),
                                                  options_.client_certs ? pki.ca_crt.c_str() : nullptr);
    if (!s->is_valid()) throw std::runtime_error("test API server: TLS setup failed");
    server_ = std::move(s);
  } else {
    server_ = std::make_unique<httplib::Server>();
  }
  for (std::string resource : {"pods", "namespaces", "nodes", "resourceslices"}) {
    std::string path = resource == "resourceslices" ? "/apis/resource.k8s.io/v1/" + resource : "/api/v1/" + resource;
    server_->Get(path, [this, resource](const httplib::Request& req, httplib::Response& res) {
      if (!authorized(req, res)) return;
      if (req.get_param_value("watch") == "true" || req.get_param_value("watch") == "1")
        serve_watch(resource, req, res);
      else
        serve_list(resource, req, res);
    });
  }
  // Single objects by name: a pod, a node, a DaemonSet.
  server_->Get(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mu_);
    std::optional<nlohmann::json> found;
    for (const auto& [uid, pod] : pods_)
      if (pod["metadata"].value("namespace", "") == req.matches[1] && pod["metadata"].value("name", "") == req.matches[2])
        found = pod;
    serve_object(found, "pods", res);
  });
  server_->Get(R"(/api/v1/nodes/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mu_);
    auto& nodes = by_name_["nodes"];
    auto it = nodes.find(req.matches[1]);
    serve_object(it == nodes.end() ? std::nullopt : std::optional(it->second), "nodes", res);
  });
  server_->Get(R"(/apis/apps/v1/namespaces/([^/]+)/daemonsets/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!authorized(req, res)) return;
                 std::lock_guard lock(mu_);
                 auto it = daemonsets_.find(std::string(req.matches[1]) + "/" + std::string(req.matches[2]));
                 serve_object(it == daemonsets_.end() ? std::nullopt : std::optional(it->second), "daemonsets", res);
               });
  port_ = port == 0 ? server_->bind_to_any_port("127.0.0.1") : (server_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (port_ <= 0) throw std::runtime_error("test API server: cannot bind");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // stop() before the accept loop runs would be lost: wait for it.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port_;
}

void TestApiServer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();  // waits for the handlers (open watches end on stopping_)
}

void TestApiServer::revoke_access(bool forbidden) { revoked_status_ = forbidden ? 403 : 401; }

bool TestApiServer::authorized(const httplib::Request& req, httplib::Response& res) {
  if (int status = revoked_status_.load()) {
    res.status = status;
    res.set_content(nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                                   {"reason", status == 401 ? "Unauthorized" : "Forbidden"}, {"code", status}}
                        .dump(),
                    "application/json");
    return false;
  }
  if (options_.client_certs) return true;  // the TLS layer checked the certificate
  if (req.get_header_value("Authorization") == "Bearer " + options_.token) return true;
  ++unauthorized_;
  res.status = 401;
  res.set_content(R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401})",
                  "application/json");
  return false;
}

void TestApiServer::serve_object(const std::optional<nlohmann::json>& object, const std::string& what,
                                 httplib::Response& res) {
  if (object) {
    res.set_content(object->dump(), "application/json");
    return;
  }
  res.status = 404;
  res.set_content(nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                                 {"reason", "NotFound"}, {"message", what + " not found"}, {"code", 404}}
                      .dump(),
                  "application/json");
}

void TestApiServer::upsert_daemonset(const nlohmann::json& daemonset) {
  std::lock_guard lock(mu_);
  auto copy = daemonset;
  copy["metadata"]["resourceVersion"] = std::to_string(++rv_);
  daemonsets_[copy["metadata"]["namespace"].get<std::string>() + "/" + copy["metadata"]["name"].get<std::string>()] =
      copy;
}

void TestApiServer::delete_daemonset(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  daemonsets_.erase(ns + "/" + name);
}

bool TestApiServer::matches(const std::string& resource, const nlohmann::json& object,
                            const std::string& selector) const {
  if (resource == "namespaces" || selector.empty()) return true;
  auto eq = selector.find('=');
  auto field = selector.substr(0, eq);
  if (field == "metadata.name") return object.value("/metadata/name"_json_pointer, std::string()) == selector.substr(eq + 1);
  if (field != "spec.nodeName") return true;
  return object.value("/spec/nodeName"_json_pointer, std::string()) == selector.substr(eq + 1);
}

void TestApiServer::record(const std::string& resource, const std::string& type, nlohmann::json object) {
  ++rv_;
  object["metadata"]["resourceVersion"] = std::to_string(rv_);
  history_.push_back({rv_, resource, type, object, ""});
  if (resource == "pods") {
    auto uid = object["metadata"]["uid"].get<std::string>();
    if (type == "DELETED") pods_.erase(uid);
    else pods_[uid] = object;
  } else if (resource == "namespaces") {
    auto name = object["metadata"]["name"].get<std::string>();
    namespaces_[name] = object;
  } else {
    by_name_[resource][object["metadata"]["name"].get<std::string>()] = object;
  }
}

const std::map<std::string, nlohmann::json>& TestApiServer::objects(const std::string& resource) const {
  if (resource == "pods") return pods_;
  if (resource == "namespaces") return namespaces_;
  return by_name_[resource];
}

void TestApiServer::upsert_node(const nlohmann::json& node) {
  std::lock_guard lock(mu_);
  auto name = node["metadata"]["name"].get<std::string>();
  record("nodes", by_name_["nodes"].count(name) ? "MODIFIED" : "ADDED", node);
  cv_.notify_all();
}

void TestApiServer::upsert_resource_slice(const nlohmann::json& slice) {
  std::lock_guard lock(mu_);
  auto name = slice["metadata"]["name"].get<std::string>();
  record("resourceslices", by_name_["resourceslices"].count(name) ? "MODIFIED" : "ADDED", slice);
  cv_.notify_all();
}

void TestApiServer::upsert_pod(const nlohmann::json& pod) {
  std::lock_guard lock(mu_);
  auto uid = pod["metadata"]["uid"].get<std::string>();
  record("pods", pods_.count(uid) ? "MODIFIED" : "ADDED", pod);
  cv_.notify_all();
}

void TestApiServer::delete_pod(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = pods_.find(uid);
  if (it == pods_.end()) return;
  record("pods", "DELETED", it->second);
  cv_.notify_all();
}

void TestApiServer::upsert_namespace(const std::string& name, const std::map<std::string, std::string>& labels) {
  std::lock_guard lock(mu_);
  nlohmann::json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}, {"uid", "ns-" + name}}}};
  if (!labels.empty()) ns["metadata"]["labels"] = labels;
  record("namespaces", namespaces_.count(name) ? "MODIFIED" : "ADDED", ns);
  cv_.notify_all();
}

void TestApiServer::send_bookmark() {
  std::lock_guard lock(mu_);
  ++rv_;  // as if something else in the cluster changed
  ++bookmark_generation_;
  cv_.notify_all();
}

void TestApiServer::compact_history() {
  std::lock_guard lock(mu_);
  compacted_rv_ = rv_;
  history_.clear();
  ++gone_generation_;
  cv_.notify_all();
}

void TestApiServer::send_garbage(const std::string& line) {
  std::lock_guard lock(mu_);
  history_.push_back({rv_, "*", "", nullptr, line});
  cv_.notify_all();
}

std::string TestApiServer::last_field_selector() const {
  std::lock_guard lock(mu_);
  return last_selector_;
}

void TestApiServer::serve_list(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  std::lock_guard lock(mu_);
  auto selector = req.get_param_value("fieldSelector");
  if (resource == "pods") {
    ++pod_lists_;
    last_selector_ = selector;
  }
  nlohmann::json list = {{"apiVersion", "v1"},
                         {"kind", resource == "pods"         ? "PodList"
                                  : resource == "namespaces" ? "NamespaceList"
                                  : resource == "nodes"      ? "NodeList"
                                                             : "ResourceSliceList"},
                         {"metadata", {{"resourceVersion", std::to_string(rv_)}}},
                         {"items", nlohmann::json::array()}};
  for (const auto& [k, obj] : objects(resource))
    if (matches(resource, obj, selector)) list["items"].push_back(obj);
  res.set_content(list.dump(), "application/json");
}

void TestApiServer::serve_watch(const std::string& resource, const httplib::Request& req, httplib::Response& res) {
  uint64_t from = 0;
  try {
    from = std::stoull(req.get_param_value("resourceVersion"));
  } catch (...) {
  }
  int timeout = 300;
  try {
    timeout = std::stoi(req.get_param_value("timeoutSeconds"));
  } catch (...) {
  }
  auto selector = req.get_param_value("fieldSelector");
  if (resource == "pods") ++pod_watches_;
  struct State {
    uint64_t sent_rv;
    uint64_t gone_generation, bookmark_generation;
    size_t history_pos = 0;
    bool gone_at_start;
    std::chrono::steady_clock::time_point deadline;
  };
  auto st = std::make_shared<State>();
  {
    std::lock_guard lock(mu_);
    st->sent_rv = from;
    st->gone_generation = gone_generation_;
    st->bookmark_generation = bookmark_generation_;
    st->gone_at_start = from < compacted_rv_;
    st->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  }
  ++open_watches_;
  res.set_chunked_content_provider(
      "application/json",
      [this, resource, selector, st](size_t, httplib::DataSink& sink) {
        auto gone_line = [] {
          return nlohmann::json{{"type", "ERROR"},
                                {"object",
                                 {{"kind", "Status"},
                                  {"apiVersion", "v1"},
                                  {"status", "Failure"},
                                  {"message", "too old resource version"},
                                  {"reason", "Expired"},
                                  {"code", 410}}}}
                     .dump() +
                 "\n";
        };
        std::string out;
        bool done = false;
        {
          std::unique_lock lock(mu_);
          if (st->gone_at_start) {
            out = gone_line();
            done = true;
          } else {
            cv_.wait_for(lock, std::chrono::milliseconds(50));
            if (stopping_) {
              done = true;
            } else if (gone_generation_ != st->gone_generation) {
              out = gone_line();
              done = true;
            } else {
              for (; st->history_pos < history_.size(); ++st->history_pos) {
                const auto& ev = history_[st->history_pos];
                if (ev.resource == "*") {
                  if (resource == "pods" && ev.rv >= st->sent_rv) out += ev.raw + "\n";
                  continue;
                }
                if (ev.rv <= st->sent_rv || ev.resource != resource || !matches(resource, ev.object, selector))
                  continue;
                out += nlohmann::json{{"type", ev.type}, {"object", ev.object}}.dump() + "\n";
                st->sent_rv = ev.rv;
              }
              if (bookmark_generation_ != st->bookmark_generation) {
                st->bookmark_generation = bookmark_generation_;
                out += nlohmann::json{{"type", "BOOKMARK"},
                                      {"object",
                                       {{"kind", resource == "pods" ? "Pod" : "Namespace"},
                                        {"apiVersion", "v1"},
                                        {"metadata", {{"resourceVersion", std::to_string(rv_)}}}}}}
                           .dump() +
                       "\n";
                st->sent_rv = rv_;
              }
              if (std::chrono::steady_clock::now() > st->deadline) done = true;
            }
          }
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) done = true;
        if (!sink.is_writable()) done = true;
        if (done) {
          sink.done();
        }
        return true;
      },
      [this](bool) { --open_watches_; });
}

}  // namespace gpuledger::testing
