#include "kubernetes/pod_directory.h"

#include <algorithm>
#include <mutex>

#include "common/log.h"
#include "kubernetes/json_fields.h"
#include "kubernetes/sharing_facts.h"

namespace gpuledger::kubernetes {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

LabelMap labels_of(const nlohmann::json& metadata) {
  LabelMap out;
  if (auto l = member(metadata, "labels"); l && l->is_object())
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it->is_string()) out[it.key()] = it->get<std::string>();
  return out;
}

// The sharing resources a container asks for: its limits (what HAMi reads),
// else its requests.
LabelMap sharing_resources(const nlohmann::json& container) {
  LabelMap out;
  auto res = member(container, "resources");
  if (!res) return out;
  for (const char* part : {"requests", "limits"})  // limits last: they win
    if (auto m = member(*res, part); m && m->is_object())
      for (auto it = m->begin(); it != m->end(); ++it)
        if (it->is_string() && is_sharing_resource(it.key()) && it->get_ref<const std::string&>().size() <= 64)
          out[it.key()] = it->get<std::string>();
  return out;
}

}  // namespace

std::string bare_container_id(std::string_view id) {
  if (auto pos = id.find("://"); pos != std::string_view::npos) id = id.substr(pos + 3);
  return lower(std::string(id));
}

std::optional<PodInfo> parse_pod(const nlohmann::json& object, std::string* error) {
  auto bad = [&](const char* why) -> std::optional<PodInfo> {
    if (error) *error = why;
    return std::nullopt;
  };
  auto md = member(object, "metadata");
  if (!md || !md->is_object()) return bad("no metadata");
  PodInfo pod;
  pod.uid = lower(string_member(*md, "uid"));
  pod.name = string_member(*md, "name");
  pod.namespace_name = string_member(*md, "namespace");
  if (pod.uid.empty() || pod.name.empty() || pod.namespace_name.empty())
    return bad("metadata lacks uid, name or namespace");
  pod.labels = labels_of(*md);
  if (auto ann = member(*md, "annotations"); ann && ann->is_object()) {
    pod.mirror_uid = lower(string_member(*ann, "kubernetes.io/config.mirror"));
    for (auto it = ann->begin(); it != ann->end(); ++it)
      if (it->is_string() && is_sharing_pod_key(it.key()) && it->get_ref<const std::string&>().size() <= kMaxSharingValue)
        pod.sharing_annotations[it.key()] = it->get<std::string>();
  }
  pod.sharing_owners = parse_field_owners(*md, is_sharing_pod_key);
  if (auto spec = member(object, "spec"); spec && spec->is_object()) {
    pod.node_name = string_member(*spec, "nodeName");
    if (auto cs = member(*spec, "containers"); cs && cs->is_array())
      for (const auto& c : *cs) {
        pod.spec_containers.push_back(string_member(c, "name"));
        pod.container_resources.push_back(sharing_resources(c));
      }
  }
  if (auto status = member(object, "status"); status && status->is_object()) {
    if (auto conditions = member(*status, "conditions"); conditions && conditions->is_array())
      for (const auto& c : *conditions)
        if (string_member(c, "type") == "PodScheduled" && string_member(c, "status") == "True")
          pod.scheduled_at = parse_rfc3339_seconds(string_member(c, "lastTransitionTime"));
    for (const char* list : {"containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"}) {
      auto statuses = member(*status, list);
      if (!statuses || !statuses->is_array()) continue;
      for (const auto& s : *statuses) {
        std::string name = string_member(s, "name");
        if (name.empty()) continue;
        if (auto id = bare_container_id(string_member(s, "containerID")); !id.empty()) pod.containers[id] = name;
        // The previous instance of a restarted container.
        if (auto last = member(s, "lastState"))
          if (auto term = member(*last, "terminated"))
            if (auto id = bare_container_id(string_member(*term, "containerID")); !id.empty())
              pod.containers[id] = name;
      }
    }
  }
  return pod;
}

TeamChoice choose_team(const config::TeamRule& rule, const LabelMap& pod_labels, const std::string& namespace_name,
                       const LabelMap* namespace_labels) {
  TeamChoice c;
  if (!rule.pod_label_key.empty())
    if (auto it = pod_labels.find(rule.pod_label_key); it != pod_labels.end()) c.pod_team = it->second;
  if (!rule.namespace_label_key.empty() && namespace_labels)
    if (auto it = namespace_labels->find(rule.namespace_label_key); it != namespace_labels->end())
      c.namespace_team = it->second;
  c.conflict = !c.pod_team.empty() && !c.namespace_team.empty() && c.pod_team != c.namespace_team;
  const std::string& first = rule.pod_label_overrides ? c.pod_team : c.namespace_team;
  const std::string& second = rule.pod_label_overrides ? c.namespace_team : c.pod_team;
  c.team = !first.empty() ? first : !second.empty() ? second : namespace_name;
  return c;
}

std::string team_for(const config::TeamRule& rule, const LabelMap& pod_labels, const std::string& namespace_name,
                     const LabelMap* namespace_labels) {
  return choose_team(rule, pod_labels, namespace_name, namespace_labels).team;
}

PodDirectory::PodDirectory(std::chrono::milliseconds grace, Clock clock) : grace_(grace), clock_(std::move(clock)) {}

std::chrono::steady_clock::time_point PodDirectory::now() const {
  return clock_ ? clock_() : std::chrono::steady_clock::now();
}

void PodDirectory::upsert_pod(PodInfo pod) {
  std::unique_lock lock(mu_);
  auto& e = pods_[pod.uid];
  // Container ids are only ever added: a restarted container's old id keeps
  // naming this pod for the counters it left behind.
  auto old_containers = std::move(e.info.containers);
  e.info = std::move(pod);
  for (auto& [id, name] : old_containers) e.info.containers.emplace(id, name);
  e.deleted_at.reset();
  if (!e.info.mirror_uid.empty()) by_mirror_[e.info.mirror_uid] = e.info.uid;
  expire_locked();
}

void PodDirectory::mark_deleted_locked(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it != pods_.end() && !it->second.deleted_at) it->second.deleted_at = now();
}

void PodDirectory::delete_pod(const PodInfo& pod) {
  std::unique_lock lock(mu_);
  // The final state may name containers not seen before.
  auto it = pods_.find(pod.uid);
  if (it == pods_.end()) {
    lock.unlock();
    upsert_pod(pod);
    lock.lock();
    it = pods_.find(pod.uid);
    if (it == pods_.end()) return;
  } else {
    for (auto& [id, name] : pod.containers) it->second.info.containers.emplace(id, name);
  }
  mark_deleted_locked(pod.uid);
  expire_locked();
}

void PodDirectory::replace_pods(std::vector<PodInfo> pods) {
  std::unordered_map<std::string, bool> present;
  for (const auto& p : pods) present[p.uid] = true;
  for (auto& p : pods) upsert_pod(std::move(p));
  std::unique_lock lock(mu_);
  for (auto& [uid, e] : pods_)
    if (!present.count(uid)) mark_deleted_locked(uid);  // gone while we were not watching
  expire_locked();
}

void PodDirectory::replace_namespaces(std::map<std::string, LabelMap> namespaces) {
  std::unique_lock lock(mu_);
  namespaces_ = std::move(namespaces);
}
void PodDirectory::upsert_namespace(const std::string& name, LabelMap labels) {
  std::unique_lock lock(mu_);
  namespaces_[name] = std::move(labels);
}
void PodDirectory::delete_namespace(const std::string& name) {
  // Kept: pods of a deleted namespace may still be within their grace period,
  // and their team must not change. A re-list drops it.
  (void)name;
}

void PodDirectory::expire_locked() {
  auto t = now();
  auto t_ticks = t.time_since_epoch().count();
  auto grace_ticks = std::chrono::duration_cast<std::chrono::steady_clock::duration>(grace_).count();
  for (auto it = pods_.begin(); it != pods_.end();) {
    const auto& e = it->second;
    bool expired = e.deleted_at && t - *e.deleted_at > grace_ && t_ticks - e.last_used.load() > grace_ticks;
    if (expired) {
      if (!e.info.mirror_uid.empty()) by_mirror_.erase(e.info.mirror_uid);
      it = pods_.erase(it);
    } else {
      ++it;
    }
  }
}

void PodDirectory::expire() {
  std::unique_lock lock(mu_);
  expire_locked();
}

PodLookup PodDirectory::lookup(const Entry& e, const std::string& container_id) const {
  e.last_used.store(now().time_since_epoch().count());
  PodLookup out;
  out.uid = e.info.uid;
  out.namespace_name = e.info.namespace_name;
  out.pod = e.info.name;
  out.labels = e.info.labels;
  out.deleted = e.deleted_at.has_value();
  if (!container_id.empty())
    if (auto it = e.info.containers.find(container_id); it != e.info.containers.end()) out.container = it->second;
  return out;
}

std::optional<PodLookup> PodDirectory::find(const std::string& pod_uid, const std::string& container_id) const {
  std::shared_lock lock(mu_);
  auto it = pods_.find(pod_uid);
  if (it == pods_.end()) {
    auto m = by_mirror_.find(pod_uid);
    if (m == by_mirror_.end()) return std::nullopt;
    it = pods_.find(m->second);
    if (it == pods_.end()) return std::nullopt;
  }
  return lookup(it->second, container_id);
}

std::optional<PodLookup> PodDirectory::find_by_name(const std::string& ns, const std::string& name) const {
  std::shared_lock lock(mu_);
  const Entry* best = nullptr;
  for (const auto& [uid, e] : pods_) {
    if (e.info.namespace_name != ns || e.info.name != name) continue;
    // A live pod wins over a deleted one of the same name (a StatefulSet's next incarnation).
    if (!best || (best->deleted_at && !e.deleted_at)) best = &e;
  }
  if (!best) return std::nullopt;
  return lookup(*best, "");
}

std::optional<LabelMap> PodDirectory::namespace_labels(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = namespaces_.find(name);
  if (it == namespaces_.end()) return std::nullopt;
  return it->second;
}

LabelMap PodInfo::sharing_labels() const {
  LabelMap out;
  for (const auto& [k, v] : labels)
    if (is_sharing_pod_key(k)) out[k] = v;
  return out;
}

std::vector<PodInfo> PodDirectory::live_pods() const {
  std::shared_lock lock(mu_);
  std::vector<PodInfo> out;
  for (const auto& [uid, e] : pods_)
    if (!e.deleted_at) out.push_back(e.info);
  return out;
}

std::string PodDirectory::team(const config::TeamRule& rule, const PodLookup& pod) const {
  auto ns = namespace_labels(pod.namespace_name);
  auto choice = choose_team(rule, pod.labels, pod.namespace_name, ns ? &*ns : nullptr);
  if (choice.conflict) {
    std::shared_lock lock(mu_);
    if (auto it = pods_.find(pod.uid); it != pods_.end()) note_team_conflict(it->second, choice);
  }
  return choice.team;
}

size_t PodDirectory::team_label_conflicts(const config::TeamRule& rule) const {
  std::shared_lock lock(mu_);
  size_t n = 0;
  for (const auto& [uid, e] : pods_) {
    if (e.deleted_at) continue;
    auto ns = namespaces_.find(e.info.namespace_name);
    auto choice = choose_team(rule, e.info.labels, e.info.namespace_name, ns == namespaces_.end() ? nullptr : &ns->second);
    if (!choice.conflict) continue;
    ++n;
    note_team_conflict(e, choice);
  }
  return n;
}

// Once per pod: the log says which label won, so an admin can tell a pod
// author billing another team from a namespace labelled wrong. The label
// values are the pod author's: logged escaped, and bounded.
void PodDirectory::note_team_conflict(const Entry& e, const TeamChoice& choice) const {
  if (e.team_conflict_noted.exchange(true)) return;
  conflicts_seen_.fetch_add(1);
  auto shown = [](const std::string& v) { return nlohmann::json(v.substr(0, 63)).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace); };
  spdlog::warn("kubernetes: pod {}/{} has team label {} but its namespace says {}; billing team {} ({})",
               e.info.namespace_name, e.info.name, shown(choice.pod_team), shown(choice.namespace_team),
               shown(choice.team), choice.team == choice.namespace_team ? "the namespace's label wins"
                                                                          : "team.pod_label_overrides is set");
}

size_t PodDirectory::pods() const {
  std::shared_lock lock(mu_);
  return pods_.size();
}
size_t PodDirectory::deleted_pods() const {
  std::shared_lock lock(mu_);
  return std::count_if(pods_.begin(), pods_.end(), [](const auto& kv) { return kv.second.deleted_at.has_value(); });
}
size_t PodDirectory::namespaces() const {
  std::shared_lock lock(mu_);
  return namespaces_.size();
}

void PodSink::replace(const std::vector<nlohmann::json>& items) {
  std::vector<PodInfo> pods;
  for (const auto& item : items) {
    std::string why;
    if (auto p = parse_pod(item, &why)) {
      pods.push_back(std::move(*p));
    } else {
      ++malformed_;
      spdlog::warn("kubernetes pods: skipping a malformed pod in the list: {}", why);
    }
  }
  dir_.replace_pods(std::move(pods));
}

void PodSink::apply(EventType type, const nlohmann::json& object) {
  std::string why;
  auto p = parse_pod(object, &why);
  if (!p) {
    ++malformed_;
    spdlog::warn("kubernetes pods: skipping a malformed pod event: {}", why);
    return;
  }
  if (type == EventType::kDeleted) dir_.delete_pod(*p);
  else dir_.upsert_pod(std::move(*p));
}

void NamespaceSink::replace(const std::vector<nlohmann::json>& items) {
  std::map<std::string, LabelMap> out;
  for (const auto& item : items) {
    auto md = member(item, "metadata");
    if (!md) continue;
    auto name = string_member(*md, "name");
    if (!name.empty()) out[name] = labels_of(*md);
  }
  dir_.replace_namespaces(std::move(out));
}

void NamespaceSink::apply(EventType type, const nlohmann::json& object) {
  auto md = member(object, "metadata");
  if (!md) return;
  auto name = string_member(*md, "name");
  if (name.empty()) return;
  if (type == EventType::kDeleted) dir_.delete_namespace(name);
  else dir_.upsert_namespace(name, labels_of(*md));
}

}  // namespace gpuledger::kubernetes
