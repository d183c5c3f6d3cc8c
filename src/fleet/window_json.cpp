#include "fleet/window_json.h"

#include <nlohmann/json.hpp>

#include "common/error.h"

namespace gpuledger::fleet {

namespace {

using nlohmann::json;

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
template <typename T>
std::optional<T> get_opt(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<T>();
}

json efficiency(const ledger::Efficiency& e) {
  return json::array({opt(e.sm_active), opt(e.sm_occupancy), opt(e.tensor_active), opt(e.dram_active)});
}
ledger::Efficiency efficiency(const json& j) {
  auto at = [&](size_t i) { return j.at(i).is_null() ? std::nullopt : std::optional<double>(j.at(i).get<double>()); };
  return {at(0), at(1), at(2), at(3)};
}

json account(const ledger::AccountRecord& a) {
  const auto& ev = a.evidence;
  json j = {{"account", a.account},
            {"labels", {a.labels.namespace_name, a.labels.pod, a.labels.container, a.labels.team}},
            {"held", a.held_share},
            {"allocated", a.allocated_share},
            {"allocated_known", a.allocated_share_known},
            {"busy_s", a.busy_seconds},
            {"activity", a.activity_share},
            {"gpu_busy_s", a.gpu_busy_seconds},
            {"vram_bs", a.vram_byte_seconds},
            {"launches", a.launches},
            {"eff", efficiency(a.efficiency)},
            {"vram_peak", opt(ev.vram_peak_bytes)},
            {"vram_p95", opt(ev.vram_p95_bytes)},
            {"nvml_vram_peak", opt(ev.nvml_vram_peak_bytes)},
            {"nvml_vram_p95", opt(ev.nvml_vram_p95_bytes)},
            {"sm_active_p95", opt(ev.sm_active_p95)},
            {"sm_occupancy_p95", opt(ev.sm_occupancy_p95)},
            {"busy_p95", opt(ev.busy_p95)},
            {"windows", opt(ev.windows)}};
  if (ev.idle) j["idle"] = {ev.idle->lead, ev.idle->trail, ev.idle->longest};
  return j;
}

ledger::AccountRecord account(const json& j) {
  ledger::AccountRecord a;
  a.account = j.at("account").get<std::string>();
  const json& l = j.at("labels");
  a.labels = {l.at(0).get<std::string>(), l.at(1).get<std::string>(), l.at(2).get<std::string>(),
              l.at(3).get<std::string>()};
  a.held_share = j.at("held").get<double>();
  a.allocated_share = j.at("allocated").get<double>();
  a.allocated_share_known = j.at("allocated_known").get<bool>();
  a.busy_seconds = j.at("busy_s").get<double>();
  a.activity_share = j.at("activity").get<double>();
  a.gpu_busy_seconds = j.at("gpu_busy_s").get<double>();
  a.vram_byte_seconds = j.at("vram_bs").get<double>();
  a.launches = j.at("launches").get<uint64_t>();
  a.efficiency = efficiency(j.at("eff"));
  auto& ev = a.evidence;
  ev.vram_peak_bytes = get_opt<uint64_t>(j, "vram_peak");
  ev.vram_p95_bytes = get_opt<uint64_t>(j, "vram_p95");
  ev.nvml_vram_peak_bytes = get_opt<uint64_t>(j, "nvml_vram_peak");
  ev.nvml_vram_p95_bytes = get_opt<uint64_t>(j, "nvml_vram_p95");
  ev.sm_active_p95 = get_opt<double>(j, "sm_active_p95");
  ev.sm_occupancy_p95 = get_opt<double>(j, "sm_occupancy_p95");
  ev.busy_p95 = get_opt<double>(j, "busy_p95");
  ev.windows = get_opt<int64_t>(j, "windows");
  if (const auto it = j.find("idle"); it != j.end())
    ev.idle = ledger::IdleRun{it->at(0).get<double>(), it->at(1).get<double>(), it->at(2).get<double>()};
  return a;
}

}  // namespace

std::string window_to_json(const ledger::WindowRecord& w) {
  json j = {{"start", w.start},
            {"end", w.end},
            {"slot", {w.slot.uuid, w.slot.model, opt(w.slot.mig_profile), w.slot.parent_uuid}},
            {"gpu_fraction", w.gpu_fraction},
            {"currency", w.currency},
            {"micros", {w.cost_micros, w.busy_micros, w.idle_micros, w.memory_micros}},
            {"cost_policy", w.cost_policy},
            {"allocated_total", w.allocated_total},
            {"busy_fraction", w.busy_fraction},
            {"busy_source", w.busy_source},
            {"split_source", w.split_source},
            {"exclusive", w.exclusive},
            {"observed_s", w.observed_seconds},
            {"source", w.source},
            {"device", efficiency(w.device)}};
  json& accounts = j["accounts"] = json::array();
  for (const auto& a : w.accounts) accounts.push_back(account(a));
  json& charges = j["charges"] = json::array();
  for (const auto& c : w.charges) charges.push_back({c.account, std::string(ledger::to_string(c.kind)), c.micros});
  if (w.energy) {
    json parts = json::array();
    for (const auto& c : w.energy->charges)
      parts.push_back({c.account, std::string(ledger::to_string(c.kind)), c.millijoules});
    j["energy"] = {{"mj", w.energy->millijoules},
                   {"source", w.energy->source},
                   {"carbon", opt(w.energy->carbon_g_per_kwh)},
                   {"parts", parts}};
  }
  // Strings are the store's (valid UTF-8); replace rather than throw on any other byte.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ledger::WindowRecord window_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    ledger::WindowRecord w;
    w.start = j.at("start").get<int64_t>();
    w.end = j.at("end").get<int64_t>();
    const json& slot = j.at("slot");
    w.slot.uuid = slot.at(0).get<std::string>();
    w.slot.model = slot.at(1).get<std::string>();
    if (!slot.at(2).is_null()) w.slot.mig_profile = slot.at(2).get<std::string>();
    w.slot.parent_uuid = slot.at(3).get<std::string>();
    w.gpu_fraction = j.at("gpu_fraction").get<double>();
    w.currency = j.at("currency").get<std::string>();
    const json& m = j.at("micros");
    w.cost_micros = m.at(0).get<int64_t>();
    w.busy_micros = m.at(1).get<int64_t>();
    w.idle_micros = m.at(2).get<int64_t>();
    w.memory_micros = m.at(3).get<int64_t>();
    w.cost_policy = j.at("cost_policy").get<std::string>();
    w.allocated_total = j.at("allocated_total").get<double>();
    w.busy_fraction = j.at("busy_fraction").get<double>();
    w.busy_source = j.at("busy_source").get<std::string>();
    w.split_source = j.at("split_source").get<std::string>();
    w.exclusive = j.at("exclusive").get<bool>();
    w.observed_seconds = j.at("observed_s").get<double>();
    w.source = j.at("source").get<std::string>();
    w.device = efficiency(j.at("device"));
    for (const auto& a : j.at("accounts")) w.accounts.push_back(account(a));
    for (const auto& c : j.at("charges"))
      w.charges.push_back({c.at(0).get<std::string>(), ledger::parse_charge_kind(c.at(1).get<std::string>()),
                           c.at(2).get<int64_t>()});
    if (const auto it = j.find("energy"); it != j.end()) {
      ledger::WindowEnergyRecord e;
      e.millijoules = it->at("mj").get<int64_t>();
      e.source = it->at("source").get<std::string>();
      e.carbon_g_per_kwh = get_opt<double>(*it, "carbon");
      for (const auto& c : it->at("parts"))
        e.charges.push_back({c.at(0).get<std::string>(), ledger::parse_charge_kind(c.at(1).get<std::string>()),
                             c.at(2).get<int64_t>()});
      w.energy = std::move(e);
    }
    return w;
  } catch (const json::exception& e) {
    throw Error(std::string("fleet database: a roll-up's body is not a window (") + e.what() + ")");
  }
}

}  // namespace gpuledger::fleet
