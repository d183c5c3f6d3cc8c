#include "config/agent_config.h"

#include <fnmatch.h>
#include <pwd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "common/error.h"
#include "common/yaml_errors.h"

namespace gpuledger::config {
namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Node& node, const std::string& what) {
  yaml_fail("config", source, node, what);
}

std::string scalar(const std::string& source, const YAML::Node& node, const std::string& key) {
  return yaml_scalar("config", source, node, key);
}

long long integer(const std::string& source, const YAML::Node& node, const std::string& key, long long min) {
  if (!node.IsScalar()) fail(source, node, key + " must be a number");
  try {
    size_t used = 0;
    long long v = std::stoll(node.Scalar(), &used);
    if (used != node.Scalar().size() || v < min) throw std::invalid_argument("range");
    return v;
  } catch (const std::exception&) {
    fail(source, node, key + " must be an integer >= " + std::to_string(min) + ", not '" + node.Scalar() + "'");
  }
}

bool boolean(const std::string& source, const YAML::Node& node, const std::string& key) {
  if (node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "false")) return node.Scalar() == "true";
  fail(source, node, key + " must be true or false");
}

std::vector<std::string> string_list(const std::string& source, const YAML::Node& node, const std::string& key) {
  if (!node.IsSequence()) fail(source, node, key + " must be a list of strings");
  std::vector<std::string> out;
  for (const auto& item : node) out.push_back(scalar(source, item, key + " entry"));
  return out;
}

// A Kubernetes namespace name: an RFC 1123 label (lower-case alphanumerics
// and '-', at most 63, starting and ending alphanumeric).
bool namespace_name(const std::string& s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

void check_keys(const std::string& source, const YAML::Node& map, const std::string& where,
                std::initializer_list<const char*> allowed) {
  for (const auto& kv : map) {
    std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      fail(source, kv.first, "unknown key '" + key + "' in " + where + " (expected: " + list + ")");
    }
  }
}

MatchKind match_kind(const std::string& source, const YAML::Node& node) {
  std::string v = scalar(source, node, "match");
  if (v == "systemd_unit") return MatchKind::kSystemdUnit;
  if (v == "slurm_job") return MatchKind::kSlurmJob;
  if (v == "slurm_user") return MatchKind::kSlurmUser;
  if (v == "slurm_account") return MatchKind::kSlurmAccount;
  if (v == "cgroup_prefix") return MatchKind::kCgroupPrefix;
  fail(source, node, "match must be one of systemd_unit, slurm_job, slurm_user, slurm_account, cgroup_prefix; not '" + v + "'");
}

bool glob(const std::string& pattern, const std::string& value) {
  return !value.empty() && ::fnmatch(pattern.c_str(), value.c_str(), 0) == 0;
}

bool path_prefix(std::string prefix, const std::string& path) {
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix.empty() || prefix == "/") return true;
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::string user_name(unsigned uid) {
  static std::mutex mu;
  static std::unordered_map<unsigned, std::string> cache;
  std::lock_guard lock(mu);
  if (auto it = cache.find(uid); it != cache.end()) return it->second;
  struct passwd pw {};
  struct passwd* result = nullptr;
  char buf[4096];
  std::string name;
  if (::getpwuid_r(uid, &pw, buf, sizeof buf, &result) == 0 && result) name = result->pw_name;
  cache.emplace(uid, name);
  return name;
}

}  // namespace

AgentConfig parse_agent_config(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = yaml_load("config", yaml_text, source);
  AgentConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) fail(source, root, "the top level must be a mapping");
  // `cost` (prices) is read by ledger/prices.h from the same file, `rightsizing`
  // by report/rightsizing_config.h, `device_checks` by ledger/device_checks_config.h.
  check_keys(source, root, "the top level", {"team", "kubernetes", "probes", "allocation", "teams", "cost", "rightsizing", "device_checks"});

  if (auto team = root["team"]; team && !team.IsNull()) {
    if (!team.IsMap()) fail(source, team, "team must be a mapping");
    check_keys(source, team, "team", {"pod_label_key", "namespace_label_key", "pod_label_overrides"});
    if (auto n = team["pod_label_key"]; n && !n.IsNull())
      config.team_rule.pod_label_key = scalar(source, n, "team.pod_label_key");
    else if (n)
      config.team_rule.pod_label_key.clear();
    if (auto n = team["namespace_label_key"]; n && !n.IsNull())
      config.team_rule.namespace_label_key = scalar(source, n, "team.namespace_label_key");
    else if (n)
      config.team_rule.namespace_label_key.clear();
    if (auto n = team["pod_label_overrides"]; n && !n.IsNull())
      config.team_rule.pod_label_overrides = boolean(source, n, "team.pod_label_overrides");
  }
  if (auto k8s = root["kubernetes"]; k8s && !k8s.IsNull()) {
    if (!k8s.IsMap()) fail(source, k8s, "kubernetes must be a mapping");
    check_keys(source, k8s, "kubernetes",
               {"pod_grace_period_seconds", "extra_gpu_resources", "dra_drivers", "pod_resources_interval_seconds",
                "kai_reservation_namespace", "hami_scheduler_managers", "kai_scheduler_managers",
                "allocation_keep_seconds"});
    if (auto n = k8s["pod_grace_period_seconds"])
      config.pod_grace_period = std::chrono::seconds(integer(source, n, "kubernetes.pod_grace_period_seconds", 0));
    if (auto n = k8s["pod_resources_interval_seconds"])
      config.pod_resources_interval =
          std::chrono::seconds(integer(source, n, "kubernetes.pod_resources_interval_seconds", 1));
    if (auto n = k8s["allocation_keep_seconds"])
      config.allocation_keep = std::chrono::seconds(integer(source, n, "kubernetes.allocation_keep_seconds", 0));
    if (auto n = k8s["extra_gpu_resources"])
      config.extra_gpu_resources = string_list(source, n, "kubernetes.extra_gpu_resources");
    if (auto n = k8s["dra_drivers"]) config.dra_drivers = string_list(source, n, "kubernetes.dra_drivers");
    for (auto [key, out] : {std::pair{"hami_scheduler_managers", &config.hami_scheduler_managers},
                            std::pair{"kai_scheduler_managers", &config.kai_scheduler_managers}})
      if (auto n = k8s[key]) {
        *out = string_list(source, n, std::string("kubernetes.") + key);
        if ((*out)->empty() || std::any_of((*out)->begin(), (*out)->end(), [](const auto& m) { return m.empty(); }))
          fail(source, n, std::string("kubernetes.") + key + " must list at least one manager name, none empty");
      }
    if (auto n = k8s["kai_reservation_namespace"]) {
      config.kai_reservation_namespace = scalar(source, n, "kubernetes.kai_reservation_namespace");
      if (!namespace_name(config.kai_reservation_namespace))
        fail(source, n, "kubernetes.kai_reservation_namespace must be a namespace name (RFC 1123 label), not '" +
                            config.kai_reservation_namespace + "'");
    }
  }
  if (auto probes = root["probes"]; probes && !probes.IsNull()) {
    if (!probes.IsMap()) fail(source, probes, "probes must be a mapping");
    check_keys(source, probes, "probes", {"set"});
    if (auto n = probes["set"]) {
      const std::string v = scalar(source, n, "probes.set");
      config.probe_set = probes::parse_probe_set(v);
      if (!config.probe_set) fail(source, n, "probes.set must be one of auto, billing, full; not '" + v + "'");
    }
  }
  if (auto allocation = root["allocation"]; allocation && !allocation.IsNull()) {
    if (!allocation.IsMap()) fail(source, allocation, "allocation must be a mapping");
    check_keys(source, allocation, "allocation", {"source", "hpc_job_mapping_dir"});
    if (auto n = allocation["source"]) {
      config.allocation_source = scalar(source, n, "allocation.source");
      const auto& v = config.allocation_source;
      if (v != "auto" && v != "kubernetes" && v != "slurm" && v != "hpc-job-mapping" && v != "none")
        fail(source, n, "allocation.source must be one of auto, kubernetes, slurm, hpc-job-mapping, none; not '" + v + "'");
    }
    if (auto n = allocation["hpc_job_mapping_dir"])
      config.hpc_job_mapping_dir = scalar(source, n, "allocation.hpc_job_mapping_dir");
  }
  if (auto teams = root["teams"]; teams && !teams.IsNull()) {
    if (!teams.IsSequence()) fail(source, teams, "teams must be a list of {match, pattern, team}");
    for (const auto& entry : teams) {
      if (!entry.IsMap()) fail(source, entry, "each teams entry must be a mapping {match, pattern, team}");
      check_keys(source, entry, "a teams entry", {"match", "pattern", "team"});
      for (const char* key : {"match", "pattern", "team"})
        if (!entry[key]) fail(source, entry, std::string("teams entry is missing '") + key + "'");
      TeamMapping m;
      m.match = match_kind(source, entry["match"]);
      m.pattern = scalar(source, entry["pattern"], "pattern");
      m.team = scalar(source, entry["team"], "team");
      if (m.pattern.empty()) fail(source, entry["pattern"], "pattern must not be empty");
      if (m.team.empty()) fail(source, entry["team"], "team must not be empty");
      config.teams.push_back(std::move(m));
    }
  }
  return config;
}

AgentConfig load_agent_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("config " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_agent_config(text.str(), path);
}

std::optional<unsigned> slurm_uid_from_path(const std::string& cgroup_path) {
  size_t pos = 0;
  while ((pos = cgroup_path.find("/uid_", pos)) != std::string::npos) {
    pos += 5;
    size_t end = pos;
    while (end < cgroup_path.size() && std::isdigit(static_cast<unsigned char>(cgroup_path[end]))) ++end;
    if (end > pos && end - pos < 10 && (end == cgroup_path.size() || cgroup_path[end] == '/'))
      return static_cast<unsigned>(std::stoul(cgroup_path.substr(pos, end - pos)));
  }
  return std::nullopt;
}

std::optional<std::string> team_from_mappings(const identity::Workload& w, const std::vector<TeamMapping>& mappings,
                                              const std::string& slurm_account) {
  for (const auto& m : mappings) {
    bool hit = false;
    switch (m.match) {
      case MatchKind::kSystemdUnit: hit = glob(m.pattern, w.systemd_unit); break;
      case MatchKind::kSlurmJob: hit = glob(m.pattern, w.slurm_job); break;
      case MatchKind::kSlurmUser:
        if (w.kind == identity::WorkloadKind::kSlurm) {
          if (auto uid = slurm_uid_from_path(w.cgroup_path))
            hit = glob(m.pattern, std::to_string(*uid)) || glob(m.pattern, user_name(*uid));
        }
        break;
      case MatchKind::kSlurmAccount:
        hit = w.kind == identity::WorkloadKind::kSlurm && glob(m.pattern, slurm_account);
        break;
      case MatchKind::kCgroupPrefix: hit = path_prefix(m.pattern, w.cgroup_path); break;
    }
    if (hit) return m.team;
  }
  return std::nullopt;
}

}  // namespace gpuledger::config
