#include "export/web_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>

#include "common/error.h"

namespace gpuledger::exporter {
namespace {

const std::set<std::string> kClientAuthTypes = {"NoClientCert", "RequestClientCert", "RequireAnyClientCert",
                                                "VerifyClientCertIfGiven", "RequireAndVerifyClientCert"};
const std::set<std::string> kTlsVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};

struct Reader {
  std::string file;
  Error error(const std::string& key, const std::string& why) const {
    return Error("--web-config-file " + file + ": " + key + ": " + why);
  }
  void only_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed,
                 const std::set<std::string>& refused = {}) const {
    if (!map.IsMap()) throw error(where, "must be a mapping");
    for (const auto& kv : map) {
      auto key = kv.first.as<std::string>();
      if (refused.count(key)) throw error(where + "." + key, "not supported by gpuledger (OpenSSL picks them)");
      if (!allowed.count(key)) throw error(where.empty() ? key : where + "." + key, "unknown key");
    }
  }
  std::string text(const YAML::Node& map, const std::string& where, const std::string& key) const {
    const YAML::Node& v = map[key];
    if (!v) return "";
    if (!v.IsScalar()) throw error(where + "." + key, "must be a string");
    return v.as<std::string>();
  }
  std::string path(const YAML::Node& map, const std::string& where, const std::string& key) const {
    std::string p = text(map, where, key);
    if (p.empty() || std::filesystem::path(p).is_absolute()) return p;
    return (std::filesystem::path(file).parent_path() / p).string();
  }
};

TlsServerConfig read_tls(const Reader& r, const YAML::Node& node) {
  const std::string where = "tls_server_config";
  r.only_keys(node, where,
              {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version",
               "prefer_server_cipher_suites"},
              {"cipher_suites", "curve_preferences", "cert", "key", "client_allowed_sans"});
  TlsServerConfig tls;
  tls.cert_file = r.path(node, where, "cert_file");
  tls.key_file = r.path(node, where, "key_file");
  tls.client_ca_file = r.path(node, where, "client_ca_file");
  if (auto v = r.text(node, where, "client_auth_type"); !v.empty()) tls.client_auth_type = v;
  if (auto v = r.text(node, where, "min_version"); !v.empty()) tls.min_version = v;
  tls.max_version = r.text(node, where, "max_version");
  if (tls.cert_file.empty()) throw r.error(where + ".cert_file", "missing");
  if (tls.key_file.empty()) throw r.error(where + ".key_file", "missing");
  if (!kClientAuthTypes.count(tls.client_auth_type))
    throw r.error(where + ".client_auth_type", "'" + tls.client_auth_type + "' is not one of NoClientCert, "
                  "RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert");
  if ((tls.client_auth_type == "VerifyClientCertIfGiven" || tls.client_auth_type == "RequireAndVerifyClientCert") &&
      tls.client_ca_file.empty())
    throw r.error(where + ".client_ca_file", "required to verify client certificates");
  for (const auto* v : {&tls.min_version, &tls.max_version})
    if (!v->empty() && !kTlsVersions.count(*v))
      throw r.error(where + (v == &tls.min_version ? ".min_version" : ".max_version"),
                    "'" + *v + "' is not one of TLS10, TLS11, TLS12, TLS13");
  return tls;
}

}  // namespace

WebConfig load_web_config(const std::string& file) {
  Reader r{file};
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw Error("--web-config-file " + file + ": cannot read");
  } catch (const YAML::Exception& e) {
    throw Error("--web-config-file " + file + ": " + e.what());
  }
  WebConfig config;
  if (root.IsNull()) return config;  // an empty file: plain HTTP, as exporter-toolkit
  r.only_keys(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
  if (root["tls_server_config"] && !root["tls_server_config"].IsNull())
    config.tls = read_tls(r, root["tls_server_config"]);
  if (const auto& http = root["http_server_config"]; http && !http.IsNull()) {
    r.only_keys(http, "http_server_config", {"headers", "http2"});
    // The security headers exporter-toolkit allows, and only those.
    if (const auto& headers = http["headers"]; headers && !headers.IsNull()) {
      r.only_keys(headers, "http_server_config.headers",
                  {"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options", "X-XSS-Protection",
                   "Content-Security-Policy"});
      for (const auto& kv : headers) {
        auto name = kv.first.as<std::string>();
        auto value = r.text(headers, "http_server_config.headers", name);
        if (value.find_first_of("\r\n") != std::string::npos)
          throw r.error("http_server_config.headers." + name, "must be one line");
        config.headers.push_back({name, value});
      }
    }
  }
  if (const auto& users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap()) throw r.error("basic_auth_users", "must be a mapping of user to bcrypt hash");
    for (const auto& kv : users) {
      auto user = kv.first.as<std::string>();
      if (!kv.second.IsScalar()) throw r.error("basic_auth_users." + user, "must be a bcrypt hash");
      auto hash = kv.second.as<std::string>();
      if (hash.rfind("$2a$", 0) != 0 && hash.rfind("$2b$", 0) != 0 && hash.rfind("$2y$", 0) != 0)
        throw r.error("basic_auth_users." + user, "not a bcrypt hash ($2y$..., as htpasswd -B writes)");
      config.basic_auth_users[user] = hash;
    }
  }
  return config;
}

}  // namespace gpuledger::exporter
