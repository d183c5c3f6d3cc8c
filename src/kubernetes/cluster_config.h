#pragma once
// Where the Kubernetes API is and how to authenticate to it, found the way
// cluster tools do: --kubeconfig PATH (its current context), else the pod's
// service account when running in a cluster.
#include <optional>
#include <string>

namespace gpuledger::kubernetes {

struct ClusterConfig {
  std::string server;            // "https://host:port" or "http://host:port" (tests)
  std::string token;             // bearer token
  std::string token_file;        // re-read on every connection (projected tokens rotate)
  std::string ca_pem;            // trust these CAs instead of the system's
  std::string client_cert_pem;   // client-certificate users
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;
  std::string source;            // what it came from, for the log
};

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// KUBERNETES_SERVICE_HOST/PORT and the service account's token and CA.
// Throws Error when not in a cluster or the files are missing.
ClusterConfig in_cluster_config(const std::string& service_account_dir = kServiceAccountDir);

// The current context of a kubeconfig file (certificate-authority[-data],
// client-certificate[-data], client-key[-data], token, tokenFile,
// insecure-skip-tls-verify). Relative file paths are relative to the file.
// Throws Error naming the file and the problem.
ClusterConfig load_kubeconfig(const std::string& path);

// --kubeconfig when given, else in-cluster when KUBERNETES_SERVICE_HOST is set,
// else nullopt (not on Kubernetes: names stay empty, teams come from the config).
std::optional<ClusterConfig> discover_cluster_config(const std::string& kubeconfig_path);

// --node-name, else $NODE_NAME, else the hostname.
std::string resolve_node_name(const std::string& flag);

std::string base64_decode(const std::string& in);  // throws Error on malformed input

}  // namespace gpuledger::kubernetes
