#include "kubernetes/cluster_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(what + ": cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

YAML::Node named(const YAML::Node& list, const std::string& name, const char* what, const std::string& path) {
  if (list && list.IsSequence())
    for (const auto& item : list)
      if (item.IsMap() && item["name"] && item["name"].IsScalar() && item["name"].Scalar() == name) return item;
  throw Error("kubeconfig " + path + ": no " + what + " named '" + name + "'");
}

std::string str(const YAML::Node& map, const char* key) {
  auto n = map[key];
  if (!n || n.IsNull()) return "";
  if (!n.IsScalar()) throw Error(std::string("'") + key + "' must be a string");
  return n.Scalar();
}

}  // namespace

std::string base64_decode(const std::string& in) {
  static const std::string chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : in) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad) throw Error("base64: data after padding");
    auto pos = chars.find(c);
    if (pos == std::string::npos) throw Error("base64: invalid character");
    buf = (buf << 6) | static_cast<unsigned>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

ClusterConfig in_cluster_config(const std::string& dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host) throw Error("in-cluster configuration: KUBERNETES_SERVICE_HOST is not set");
  ClusterConfig c;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  c.server = "https://" + h + ":" + (port && *port ? port : "443");
  c.token_file = dir + "/token";
  c.token = trim(read_file(c.token_file, "in-cluster configuration"));
  c.ca_pem = read_file(dir + "/ca.crt", "in-cluster configuration");
  c.source = "in-cluster service account";
  return c;
}

ClusterConfig load_kubeconfig(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw Error("kubeconfig " + path + ": cannot be read");
  } catch (const YAML::Exception& e) {
    throw Error("kubeconfig " + path + ": not valid YAML: " + e.what());
  }
  try {
    if (!root.IsMap()) throw Error("not a kubeconfig (top level is not a mapping)");
    std::string context_name = str(root, "current-context");
    YAML::Node context;
    if (!context_name.empty()) {
      context = named(root["contexts"], context_name, "context", path)["context"];
    } else if (root["contexts"] && root["contexts"].IsSequence() && root["contexts"].size() == 1) {
      context = root["contexts"][0]["context"];
    } else {
      throw Error("no current-context");
    }
    if (!context || !context.IsMap()) throw Error("context '" + context_name + "' has no body");
    auto cluster = named(root["clusters"], str(context, "cluster"), "cluster", path)["cluster"];
    if (!cluster || !cluster.IsMap()) throw Error("cluster has no body");
    YAML::Node user;
    if (!str(context, "user").empty()) user = named(root["users"], str(context, "user"), "user", path)["user"];

    fs::path base = fs::path(path).parent_path();
    auto resolve = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (base / p).string(); };

    ClusterConfig c;
    c.source = "kubeconfig " + path + " (context " + context_name + ")";
    c.server = str(cluster, "server");
    if (c.server.empty()) throw Error("cluster has no server");
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    if (auto d = str(cluster, "certificate-authority-data"); !d.empty())
      c.ca_pem = base64_decode(d);
    else if (auto f = str(cluster, "certificate-authority"); !f.empty())
      c.ca_pem = read_file(resolve(f), "kubeconfig " + path);
    if (auto n = cluster["insecure-skip-tls-verify"]; n && n.IsScalar()) c.insecure_skip_tls_verify = n.as<bool>();
    if (user && user.IsMap()) {
      c.token = str(user, "token");
      if (auto f = str(user, "tokenFile"); !f.empty()) {
        c.token_file = resolve(f);
        c.token = trim(read_file(c.token_file, "kubeconfig " + path));
      }
      if (auto d = str(user, "client-certificate-data"); !d.empty())
        c.client_cert_pem = base64_decode(d);
      else if (auto f = str(user, "client-certificate"); !f.empty())
        c.client_cert_pem = read_file(resolve(f), "kubeconfig " + path);
      if (auto d = str(user, "client-key-data"); !d.empty())
        c.client_key_pem = base64_decode(d);
      else if (auto f = str(user, "client-key"); !f.empty())
        c.client_key_pem = read_file(resolve(f), "kubeconfig " + path);
      if (user["exec"] || user["auth-provider"])
        if (c.token.empty() && c.client_cert_pem.empty())
          throw Error("user uses exec/auth-provider credentials, which gpuledger does not run; use a token or a "
                      "client certificate");
      if (c.client_cert_pem.empty() != c.client_key_pem.empty())
        throw Error("user has a client certificate without its key (or a key without its certificate)");
    }
    return c;
  } catch (const Error& e) {
    std::string what = e.what();
    if (what.rfind("kubeconfig ", 0) == 0) throw;
    throw Error("kubeconfig " + path + ": " + what);
  } catch (const YAML::Exception& e) {
    throw Error("kubeconfig " + path + ": " + e.what());
  }
}

std::optional<ClusterConfig> discover_cluster_config(const std::string& kubeconfig_path) {
  if (!kubeconfig_path.empty()) return load_kubeconfig(kubeconfig_path);
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (host && *host) return in_cluster_config();
  return std::nullopt;
}

std::string resolve_node_name(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* n = std::getenv("NODE_NAME"); n && *n) return n;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) return buf;
  return "";
}

}  // namespace gpuledger::kubernetes
