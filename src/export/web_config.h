#pragma once
// --web-config-file: TLS and basic authentication for the agent's HTTP
// endpoint, in the Prometheus exporter-toolkit format that node_exporter and
// dcgm-exporter read, so one file serves all of a node's exporters:
//
//   tls_server_config:
//     cert_file: /etc/gpuledger/tls.crt
//     key_file: /etc/gpuledger/tls.key
//     client_ca_file: /etc/gpuledger/ca.crt      # optional: client certificates
//     client_auth_type: RequireAndVerifyClientCert
//     min_version: TLS12                         # TLS10..TLS13; default TLS12
//     max_version: TLS13
//   http_server_config:
//     headers: {X-Frame-Options: deny}           # added to every response
//   basic_auth_users:
//     prometheus: $2y$10$...                     # bcrypt (htpasswd -nBC 10)
//
// Unknown keys are errors, as in exporter-toolkit (a typo must not silently
// leave the endpoint open). cipher_suites and curve_preferences name Go's
// identifiers and are refused with a reason rather than ignored.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::exporter {

struct TlsServerConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  std::string client_auth_type = "NoClientCert";  // as in Go's crypto/tls
  std::string min_version = "TLS12";
  std::string max_version;  // empty: the newest
};

struct WebConfig {
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;
};

// Reads and checks the file (paths relative to it, as exporter-toolkit
// resolves them). Throws Error naming the file and the key.
WebConfig load_web_config(const std::string& path);

}  // namespace gpuledger::exporter
