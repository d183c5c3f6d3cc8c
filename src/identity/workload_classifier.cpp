#include "identity/workload_classifier.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace gpuledger::identity {
namespace {

using Components = std::vector<std::string_view>;

// ---- small string helpers (ASCII only; other bytes just never match) -------

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

bool is_hex(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_hex_digit(c)) return false;
  return true;
}

bool is_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Kubelet and the runtimes write lowercase hex; we accept uppercase too but
// store lowercase so ids match what the Kubernetes/runtime APIs report.
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool strip_suffix(std::string_view& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.remove_suffix(suffix.size());
  return true;
}

// Non-empty components of the path; the views point into `path`.
Components split(std::string_view path) {
  Components out;
  while (!path.empty()) {
    const auto slash = path.find('/');
    const auto part = path.substr(0, slash);
    if (!part.empty()) out.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return out;
}

std::string join(const Components& parts) {
  if (parts.empty()) return "/";
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out;
}

// containerd's systemd cgroup notation "slice:prefix:name" (seen when the
// kubelet/containerd config says systemd but the path is used verbatim, e.g.
// kind/k3s nodes). Returns {slice, prefix, name} or nothing.
struct ColonParts {
  std::string_view slice, prefix, name;
};
std::optional<ColonParts> split_colons(std::string_view comp) {
  const auto a = comp.find(':');
  if (a == std::string_view::npos) return std::nullopt;
  const auto b = comp.find(':', a + 1);
  if (b == std::string_view::npos || comp.find(':', b + 1) != std::string_view::npos)
    return std::nullopt;
  return ColonParts{comp.substr(0, a), comp.substr(a + 1, b - a - 1), comp.substr(b + 1)};
}

// ---- Kubernetes pods ---------------------------------------------------------

// A pod UID as kubelet puts it in cgroup names: 8-4-4-4-12 hex with dashes
// (cgroupfs driver) or underscores (systemd driver, because '-' means nesting
// in slice names), or 32 hex for static/mirror pods (a hash, not a UUID).
// Returns the canonical lowercase form with dashes (32-hex kept as is).
std::optional<std::string> parse_pod_uid(std::string_view s) {
  if (s.size() == 32 && is_hex(s)) return lower(s);
  if (s.size() != 36) return std::nullopt;
  const char sep = s[8];
  if (sep != '-' && sep != '_') return std::nullopt;
  std::string out = lower(s);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const bool is_sep_pos = (i == 8 || i == 13 || i == 18 || i == 23);
    if (is_sep_pos) {
      if (s[i] != sep) return std::nullopt;
      out[i] = '-';
    } else if (!is_hex_digit(s[i])) {
      return std::nullopt;
    }
  }
  return out;
}

// "burstable"/"besteffort" pods get their own parent cgroup (kubepods/burstable
// or kubepods-burstable.slice); guaranteed pods sit directly under kubepods.
std::string qos_from(std::string_view parent_name) {
  if (parent_name.ends_with("burstable")) return "burstable";
  if (parent_name.ends_with("besteffort")) return "besteffort";
  return "guaranteed";
}

struct Pod {
  std::string uid, qos;
};

// One path component as a pod cgroup, or nothing.
//  - systemd driver: "<...kubepods...>-pod<uid_with_underscores>.slice"; the
//    QoS is in the slice prefix ("kubepods-burstable-pod..." -> burstable).
//  - cgroupfs driver: "pod<uid>" below a kubepods directory; the QoS is the
//    parent directory name. Requiring a kubepods ancestor keeps random
//    "pod..." directories from being taken for pods.
std::optional<Pod> match_pod(std::string_view comp, std::string_view parent, bool kubepods_above) {
  if (strip_suffix(comp, ".slice")) {
    const auto at = comp.rfind("-pod");  // 'p','o' are not hex: the last "-pod" starts the uid
    if (at == std::string_view::npos) return std::nullopt;
    const auto prefix = comp.substr(0, at);
    if (prefix.find("kubepods") == std::string_view::npos) return std::nullopt;
    auto uid = parse_pod_uid(comp.substr(at + 4));
    if (!uid) return std::nullopt;
    return Pod{std::move(*uid), qos_from(prefix)};
  }
  if (!kubepods_above || !comp.starts_with("pod")) return std::nullopt;
  auto uid = parse_pod_uid(comp.substr(3));
  if (!uid) return std::nullopt;
  return Pod{std::move(*uid), qos_from(parent)};
}

// ---- containers ----------------------------------------------------------------

struct Container {
  std::string id;
  std::string runtime;  // "" for a bare id: the path doesn't say which runtime made it
  bool conmon = false;  // a runtime monitor (conmon), not a workload
};

// Runtime from the cgroup-name prefix in front of the container id.
std::optional<Container> container_from(std::string_view prefix, std::string_view id) {
  // Prefixed ids are full 64-hex ids in practice; allow down to docker's
  // 12-char short form, but not shorter, so "docker-1.scope" isn't a container.
  if (id.size() < 12 || id.size() > 64 || !is_hex(id)) return std::nullopt;
  // conmon (CRI-O's / podman's container monitor) gets its own scope next to
  // the container. Its GPU use, if any, is not the container's workload, so
  // we report it as the pod itself rather than inventing a container id.
  if (prefix == "crio-conmon" || prefix == "libpod-conmon") return Container{"", "", true};
  std::string runtime;
  if (prefix == "cri-containerd") runtime = "containerd";
  else if (prefix == "crio") runtime = "cri-o";
  else if (prefix == "docker") runtime = "docker";
  else if (prefix == "libpod") runtime = "podman";
  else return std::nullopt;
  return Container{lower(id), std::move(runtime)};
}

// One path component as a container cgroup, or nothing. Shapes:
//   cri-containerd-<id>.scope, crio-<id>.scope, crio-<id>, docker-<id>.scope,
//   libpod-<id>.scope, libpod-<id>, crio-conmon-<id>.scope, libpod-conmon-<id>.scope,
//   "<slice>:cri-containerd:<id>" (containerd notation), and a bare 64-hex id
//   (cgroupfs driver, runtime unknown).
std::optional<Container> match_container(std::string_view comp) {
  if (auto colon = split_colons(comp)) return container_from(colon->prefix, colon->name);
  if (comp.size() == 64 && is_hex(comp)) return Container{lower(comp), ""};
  strip_suffix(comp, ".scope");
  const auto dash = comp.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  return container_from(comp.substr(0, dash), comp.substr(dash + 1));
}

// ---- one classifier per kind; each returns false if the shape is absent -------
// Each is tried at a trusted start: the top of the hierarchy, or just below a
// configured cgroup root. Nothing is looked for further down, where a tenant
// could have made the cgroup.

bool is_qos_class(std::string_view comp) {
  return comp == "burstable" || comp == "besteffort" || comp.ends_with("-burstable.slice") ||
         comp.ends_with("-besteffort.slice");
}

// The pod at parts[i] (and, in containerd's colon notation, its container in
// the same component); fills `w` and returns true.
bool take_pod(const Components& parts, std::size_t i, Workload& w) {
  const auto colon = split_colons(parts[i]);
  auto pod = match_pod(colon ? colon->slice : parts[i], i > 0 ? parts[i - 1] : std::string_view{}, true);
  if (!pod) return false;
  w.kind = WorkloadKind::kKubernetes;
  w.pod_uid = std::move(pod->uid);
  w.qos_class = std::move(pod->qos);
  w.id = "k8s/" + w.pod_uid;
  // The container is the first container cgroup at or below the pod;
  // anything nested deeper (init, systemd scopes, inner containers, a pod
  // path a tenant made inside its container) belongs to that container.
  for (std::size_t j = colon ? i : i + 1; j < parts.size(); ++j) {
    auto c = match_container(parts[j]);
    if (!c) continue;
    if (c->conmon) break;  // pod-level, see container_from()
    w.container_id = std::move(c->id);
    w.container_runtime = std::move(c->runtime);
    w.id += "/" + w.container_id;
    break;
  }
  return true;
}

// Pods as the kubelet lays them out from `r`: kubepods[/qos]/pod (cgroupfs
// and systemd drivers), kubelet.slice/kubelet-kubepods.slice/..., or
// containerd's system.slice/containerd.service/<pod slice>:<runtime>:<id>.
bool classify_kubernetes(const Components& parts, std::size_t r, Workload& w) {
  const std::size_t n = parts.size();
  if (r >= n) return false;
  std::size_t k;  // the kubepods component
  if (parts[r] == "kubelet.slice" && r + 1 < n && parts[r + 1].starts_with("kubelet-kubepods")) {
    k = r + 1;
  } else if (parts[r] == "system.slice" && r + 2 < n && parts[r + 1] == "containerd.service") {
    return split_colons(parts[r + 2]) && take_pod(parts, r + 2, w);
  } else if (parts[r].starts_with("kubepods")) {
    k = r;
  } else {
    return false;
  }
  if (k + 1 < n && take_pod(parts, k + 1, w)) return true;
  return k + 2 < n && is_qos_class(parts[k + 1]) && take_pod(parts, k + 2, w);
}

// Slurm: cgroup v2 "/system.slice/<...>slurmstepd.scope/job_<n>/step_<s>/...",
// cgroup v1 "/slurm/uid_<u>/job_<n>/step_<s>/..." and "/slurm_<node>/..."
// (several slurmd per host).
bool classify_slurm(const Components& parts, std::size_t r, Workload& w) {
  std::size_t job;
  if (r + 2 < parts.size() && parts[r] == "system.slice" && parts[r + 1].ends_with("slurmstepd.scope")) {
    job = r + 2;
  } else if (r + 2 < parts.size() && parts[r].starts_with("slurm") && parts[r + 1].starts_with("uid_")) {
    job = r + 2;
  } else {
    return false;
  }
  const auto comp = parts[job];
  if (!comp.starts_with("job_") || !is_digits(comp.substr(4))) return false;
  w.kind = WorkloadKind::kSlurm;
  w.slurm_job = std::string(comp.substr(4));
  if (job + 1 < parts.size() && parts[job + 1].starts_with("step_") && parts[job + 1].size() > 5)
    w.slurm_step = std::string(parts[job + 1].substr(5));
  w.id = "slurm/" + w.slurm_job;
  return true;
}

// Containers outside Kubernetes, where their runtimes put them:
// system.slice/docker-<id>.scope, machine.slice/libpod-<id>.scope (systemd
// drivers), docker/<64hex> and libpod_parent/libpod-<id> (cgroupfs). Deeper
// cgroups (docker-in-docker, services inside) belong to it.
bool classify_container(const Components& parts, std::size_t r, Workload& w) {
  if (r + 1 >= parts.size()) return false;
  const auto parent = parts[r];
  if (parent != "system.slice" && parent != "machine.slice" && parent != "docker" && parent != "libpod_parent")
    return false;
  auto c = match_container(parts[r + 1]);
  if (!c || c->conmon) return false;
  if (c->runtime.empty()) {
    if (parent != "docker") return false;  // a bare 64-hex id only counts under docker
    c->runtime = "docker";
  }
  w.kind = WorkloadKind::kContainer;
  w.container_id = std::move(c->id);
  w.container_runtime = std::move(c->runtime);
  w.id = "container/" + w.container_id;
  return true;
}

bool is_unit(std::string_view name) {
  return (strip_suffix(name, ".service") || strip_suffix(name, ".scope")) && !name.empty();
}

// A user's systemd manager (user@<uid>.service) and everything below it is
// that user's to name: a container, pod or unit there is the user's.
bool is_user_manager(std::string_view comp) { return comp.starts_with("user@") && comp.ends_with(".service"); }

// Inside a user's manager: its units, and rootless containers, named with
// the manager in front ("user@1000.service/foo.service").
bool classify_user(const Components& parts, Workload& w) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!is_user_manager(parts[i])) continue;
    const std::string manager(parts[i]);
    for (std::size_t j = i + 1; j < parts.size(); ++j) {
      auto c = match_container(parts[j]);
      if (c && !c->conmon && !c->runtime.empty()) {
        w.kind = WorkloadKind::kContainer;
        w.container_id = std::move(c->id);
        w.container_runtime = std::move(c->runtime);
        w.id = "container/" + manager + "/" + w.container_id;
        return true;
      }
      if (is_unit(parts[j])) {
        w.kind = WorkloadKind::kSystemd;
        w.systemd_unit = manager + "/" + std::string(parts[j]);
        w.id = "systemd/" + w.systemd_unit;
        return true;
      }
    }
    w.kind = WorkloadKind::kSystemd;
    w.systemd_unit = manager;
    w.id = "systemd/" + manager;
    return true;
  }
  return false;
}

// The outermost .service or .scope: "/system.slice/foo.service/worker" is
// foo.service, and so is "/system.slice/foo.service/bar.service" (a delegated
// service names its sub-cgroups as it likes; they stay its own).
bool classify_systemd(const Components& parts, Workload& w) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!is_unit(parts[i])) continue;
    w.kind = WorkloadKind::kSystemd;
    w.systemd_unit = std::string(parts[i]);
    w.id = "systemd/" + w.systemd_unit;
    return true;
  }
  return false;
}

// Where the hierarchy starts: the top, and below each configured root that
// the path is under (longest first, so a nested root wins).
std::vector<std::size_t> trusted_starts(const Components& parts, const ClassifierOptions& options) {
  std::vector<std::size_t> starts;
  for (const auto& root : options.cgroup_roots) {
    const Components rc = split(root);
    if (rc.empty() || rc.size() > parts.size()) continue;
    if (std::equal(rc.begin(), rc.end(), parts.begin())) starts.push_back(rc.size());
  }
  std::sort(starts.rbegin(), starts.rend());
  starts.push_back(0);
  return starts;
}

}  // namespace

Workload classify_cgroup_path(std::string_view cgroup_path, const ClassifierOptions& options) {
  Workload w;
  w.cgroup_path = join(split(cgroup_path));
  const Components parts = split(w.cgroup_path);  // views into w.cgroup_path
  for (std::size_t r : trusted_starts(parts, options))
    if (classify_kubernetes(parts, r, w) || classify_slurm(parts, r, w) || classify_container(parts, r, w)) return w;
  if (classify_user(parts, w) || classify_systemd(parts, w)) return w;
  w.kind = WorkloadKind::kCgroup;
  w.id = w.cgroup_path == "/" ? "cgroup/" : "cgroup" + w.cgroup_path;
  return w;
}

}  // namespace gpuledger::identity
