#pragma once
// What the Kubernetes API says about the pods of this node and the labels of
// their namespaces, indexed the way workloads are joined: by pod UID (as the
// cgroup path writes it) and container id (bare hex).
//
// Life cycle: a deleted pod (or one gone from a re-list) keeps its names for a
// grace period, and for as long after that as it is still being looked up, so
// counters still being read never lose their names; a restarted container's
// new id joins the old ones, all naming the same pod.
#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "config/agent_config.h"
#include "kubernetes/field_owners.h"
#include "kubernetes/reflector.h"

namespace gpuledger::kubernetes {

using LabelMap = std::map<std::string, std::string>;

struct PodInfo {
  std::string uid;              // lowercase, dashes
  std::string mirror_uid;       // static pods: the config hash the cgroup path uses
  std::string namespace_name, name;
  LabelMap labels;
  std::map<std::string, std::string> containers;  // container id (bare lowercase hex) -> container name
  // For GPU sharing (sharing_facts.h): the node it is bound to, its
  // spec.containers names in order, and the annotations sharing reads.
  std::string node_name;
  std::vector<std::string> spec_containers;
  LabelMap sharing_annotations;
  FieldOwnership sharing_owners;           // who wrote them (metadata.managedFields)
  std::optional<int64_t> scheduled_at;     // PodScheduled's lastTransitionTime, Unix seconds
  std::vector<LabelMap> container_resources;  // per spec container: the sharing resources it asks for
  LabelMap sharing_labels() const;  // the labels sharing reads
};

// nullopt, with *error, for an object that is not a pod with a uid, name and namespace.
std::optional<PodInfo> parse_pod(const nlohmann::json& object, std::string* error);
// "containerd://ABC" -> "abc"; "" when there is no id.
std::string bare_container_id(std::string_view runtime_id);

// The team rule: the namespace's team label, else the pod's, else the
// namespace name (rule.pod_label_overrides: the pod's label first). A pod's
// labels are its author's and a namespace's its owner's, so by default the
// owner decides (docs/security.md).
struct TeamChoice {
  std::string team;
  std::string pod_team, namespace_team;  // the labels' values, "" when absent or not read
  bool conflict = false;                 // both name a team, and not the same one
};
TeamChoice choose_team(const config::TeamRule& rule, const LabelMap& pod_labels, const std::string& namespace_name,
                       const LabelMap* namespace_labels);
std::string team_for(const config::TeamRule& rule, const LabelMap& pod_labels, const std::string& namespace_name,
                     const LabelMap* namespace_labels);

struct PodLookup {
  std::string uid;
  std::string namespace_name, pod, container;  // container empty when the id is unknown
  LabelMap labels;
  bool deleted = false;
};

class PodDirectory {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit PodDirectory(std::chrono::milliseconds grace_period, Clock clock = nullptr);

  void replace_pods(std::vector<PodInfo> pods);
  void upsert_pod(PodInfo pod);
  void delete_pod(const PodInfo& pod);
  void replace_namespaces(std::map<std::string, LabelMap> namespaces);
  void upsert_namespace(const std::string& name, LabelMap labels);
  void delete_namespace(const std::string& name);

  // Thread-safe and cheap; counts as a use of the pod for its grace period.
  std::optional<PodLookup> find(const std::string& pod_uid, const std::string& container_id) const;
  std::optional<PodLookup> find_by_name(const std::string& namespace_name, const std::string& pod) const;
  std::optional<LabelMap> namespace_labels(const std::string& name) const;
  std::vector<PodInfo> live_pods() const;  // not deleted
  // The pod's team by the rule; a pod whose team label disagrees with its
  // namespace's is logged and counted once (team_label_conflicts_seen).
  std::string team(const config::TeamRule& rule, const PodLookup& pod) const;
  // Live pods whose team label disagrees with their namespace's now (each
  // newly seen one logged and counted as team() does).
  size_t team_label_conflicts(const config::TeamRule& rule) const;
  // Pods seen with such a disagreement since the agent started, once each.
  uint64_t team_label_conflicts_seen() const { return conflicts_seen_.load(); }

  // Forgets deleted pods past their grace period and not looked up within it.
  void expire();
  size_t pods() const;          // known, deleted ones included
  size_t deleted_pods() const;
  size_t namespaces() const;

 private:
  struct Entry {
    PodInfo info;
    std::optional<std::chrono::steady_clock::time_point> deleted_at;
    mutable std::atomic<int64_t> last_used{0};  // steady ticks
    mutable std::atomic<bool> team_conflict_noted{false};  // logged and counted once per pod
    Entry() = default;
    Entry(const Entry& o)
        : info(o.info), deleted_at(o.deleted_at), last_used(o.last_used.load()),
          team_conflict_noted(o.team_conflict_noted.load()) {}
  };
  std::chrono::steady_clock::time_point now() const;
  void index_locked(const std::string& key_uid, const Entry* e);
  void mark_deleted_locked(const std::string& uid);
  void expire_locked();
  PodLookup lookup(const Entry& e, const std::string& container_id) const;
  void note_team_conflict(const Entry& e, const TeamChoice& choice) const;

  std::chrono::milliseconds grace_;
  Clock clock_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry> pods_;              // by uid
  std::unordered_map<std::string, std::string> by_mirror_;   // mirror uid -> uid
  std::map<std::string, LabelMap> namespaces_;
  mutable std::atomic<uint64_t> conflicts_seen_{0};
};

// Adapters that feed reflectors into a directory.
class PodSink : public ResourceSink {
 public:
  explicit PodSink(PodDirectory& dir) : dir_(dir) {}
  void replace(const std::vector<nlohmann::json>& items) override;
  void apply(EventType type, const nlohmann::json& object) override;
  uint64_t malformed() const { return malformed_.load(); }

 private:
  PodDirectory& dir_;
  std::atomic<uint64_t> malformed_{0};
};

class NamespaceSink : public ResourceSink {
 public:
  explicit NamespaceSink(PodDirectory& dir) : dir_(dir) {}
  void replace(const std::vector<nlohmann::json>& items) override;
  void apply(EventType type, const nlohmann::json& object) override;

 private:
  PodDirectory& dir_;
};

}  // namespace gpuledger::kubernetes
