#include "kubernetes/node_facts.h"

#include "kubernetes/hami_annotations.h"
#include "kubernetes/json_fields.h"

namespace gpuledger::kubernetes {
namespace {

std::map<std::string, std::string> sharing_keys(const nlohmann::json* map) {
  std::map<std::string, std::string> out;
  if (!map || !map->is_object()) return out;
  for (auto it = map->begin(); it != map->end(); ++it)
    if (it->is_string() && is_sharing_node_key(it.key()) && it->get_ref<const std::string&>().size() <= kMaxSharingValue)
      out[it.key()] = it->get<std::string>();
  return out;
}

// A device attribute's string value: {"string": "..."}; the key bare or
// qualified by the driver's domain.
std::string attribute(const nlohmann::json* attrs, const std::string& driver, const std::string& name) {
  if (!attrs || !attrs->is_object()) return "";
  for (const auto& key : {name, driver + "/" + name})
    if (auto a = member(*attrs, key.c_str()))
      if (auto s = string_member(*a, "string"); !s.empty()) return s;
  return "";
}

std::string slice_name(const nlohmann::json& object) {
  auto md = member(object, "metadata");
  return md ? string_member(*md, "name") : "";
}

}  // namespace

std::vector<SliceDevice> parse_resource_slice(const nlohmann::json& object) {
  std::vector<SliceDevice> out;
  auto spec = member(object, "spec");
  if (!spec) return out;
  std::string driver = string_member(*spec, "driver");
  auto pool = member(*spec, "pool");
  std::string pool_name = pool ? string_member(*pool, "name") : "";
  auto devices = member(*spec, "devices");
  if (driver.empty() || pool_name.empty() || !devices || !devices->is_array()) return out;
  for (const auto& d : *devices) {
    SliceDevice s{driver, pool_name, string_member(d, "name"), "", false};
    const nlohmann::json* attrs = member(d, "attributes");
    if (!attrs)
      if (auto basic = member(d, "basic")) attrs = member(*basic, "attributes");
    s.uuid = attribute(attrs, driver, "uuid");
    if (!s.uuid.empty() && !is_gpu_uuid(s.uuid)) s.uuid.clear();
    s.mig = attribute(attrs, driver, "type") == "mig" || s.uuid.rfind("MIG-", 0) == 0;
    if (!s.device.empty()) out.push_back(std::move(s));
  }
  return out;
}

void NodeFacts::set_node(const nlohmann::json& node) {
  auto md = member(node, "metadata");
  auto labels = sharing_keys(md ? member(*md, "labels") : nullptr);
  auto annotations = sharing_keys(md ? member(*md, "annotations") : nullptr);
  std::lock_guard lock(mu_);
  labels_ = std::move(labels);
  annotations_ = std::move(annotations);
}

void NodeFacts::replace_slices(std::map<std::string, std::vector<SliceDevice>> slices) {
  std::lock_guard lock(mu_);
  slices_ = std::move(slices);
}

void NodeFacts::upsert_slice(const std::string& name, std::vector<SliceDevice> devices) {
  std::lock_guard lock(mu_);
  slices_[name] = std::move(devices);
}

void NodeFacts::delete_slice(const std::string& name) {
  std::lock_guard lock(mu_);
  slices_.erase(name);
}

SharingFacts NodeFacts::facts(const PodDirectory* pods) const {
  SharingFacts f;
  {
    std::lock_guard lock(mu_);
    f.node_labels = labels_;
    f.node_annotations = annotations_;
    for (const auto& [name, devices] : slices_) f.slice_devices.insert(f.slice_devices.end(), devices.begin(), devices.end());
  }
  if (pods)
    for (auto& p : pods->live_pods())
      f.pods[{p.namespace_name, p.name}] = {p.namespace_name, p.name,         p.node_name,
                                              p.sharing_labels(), p.sharing_annotations, p.spec_containers,
                                              p.sharing_owners,   p.scheduled_at,        p.container_resources};
  return f;
}

void NodeSink::replace(const std::vector<nlohmann::json>& items) {
  facts_.set_node(items.empty() ? nlohmann::json::object() : items.front());
}

void NodeSink::apply(EventType type, const nlohmann::json& object) {
  facts_.set_node(type == EventType::kDeleted ? nlohmann::json::object() : object);
}

void ResourceSliceSink::replace(const std::vector<nlohmann::json>& items) {
  std::map<std::string, std::vector<SliceDevice>> slices;
  for (const auto& item : items)
    if (auto name = slice_name(item); !name.empty()) slices[name] = parse_resource_slice(item);
  facts_.replace_slices(std::move(slices));
}

void ResourceSliceSink::apply(EventType type, const nlohmann::json& object) {
  auto name = slice_name(object);
  if (name.empty()) return;
  if (type == EventType::kDeleted) facts_.delete_slice(name);
  else facts_.upsert_slice(name, parse_resource_slice(object));
}

}  // namespace gpuledger::kubernetes
