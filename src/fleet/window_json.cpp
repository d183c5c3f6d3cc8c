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

// An account as an array (positions kAccount*): a month of a fleet's day
// roll-ups is 720,000 accounts, and arrays parse about twice as fast as objects.
// The Slurm user and account (fleet schema 5) follow only when one is not "":
// an account without them is the array it was before they existed.
enum AccountField {
  kAccount, kNamespace, kPod, kContainer, kTeam, kHeld, kAllocated, kAllocatedKnown, kBusySeconds, kActivity,
  kGpuBusySeconds, kVramByteSeconds, kLaunches, kEfficiency, kVramPeak, kVramP95, kNvmlVramPeak, kNvmlVramP95,
  kSmActiveP95, kSmOccupancyP95, kBusyP95, kWindows, kIdle, kAccountFields, kSlurmUser = kAccountFields,
  kSlurmAccount, kAccountFieldsWithSlurm
};

json account(const ledger::AccountRecord& a) {
  const auto& ev = a.evidence;
  json idle = ev.idle ? json::array({ev.idle->lead, ev.idle->trail, ev.idle->longest}) : json(nullptr);
  json out = json::array({a.account, a.labels.namespace_name, a.labels.pod, a.labels.container, a.labels.team,
                      a.held_share, a.allocated_share, a.allocated_share_known, a.busy_seconds, a.activity_share,
                      a.gpu_busy_seconds, a.vram_byte_seconds, a.launches, efficiency(a.efficiency),
                      opt(ev.vram_peak_bytes), opt(ev.vram_p95_bytes), opt(ev.nvml_vram_peak_bytes),
                      opt(ev.nvml_vram_p95_bytes), opt(ev.sm_active_p95), opt(ev.sm_occupancy_p95), opt(ev.busy_p95),
                      opt(ev.windows), idle});
  if (!a.labels.slurm_user.empty() || !a.labels.slurm_account.empty()) {
    out.push_back(a.labels.slurm_user);
    out.push_back(a.labels.slurm_account);
  }
  return out;
}

template <typename T>
std::optional<T> at_opt(const json& j, size_t i) {
  const json& v = j.at(i);
  return v.is_null() ? std::nullopt : std::optional<T>(v.get<T>());
}

ledger::AccountRecord account(const json& j) {
  if (!j.is_array() || (j.size() != kAccountFields && j.size() != kAccountFieldsWithSlurm))
    throw Error("fleet database: a roll-up's account is malformed");
  ledger::AccountRecord a;
  a.account = j.at(kAccount).get<std::string>();
  a.labels = {j.at(kNamespace).get<std::string>(), j.at(kPod).get<std::string>(), j.at(kContainer).get<std::string>(),
              j.at(kTeam).get<std::string>(), "", ""};
  a.held_share = j.at(kHeld).get<double>();
  a.allocated_share = j.at(kAllocated).get<double>();
  a.allocated_share_known = j.at(kAllocatedKnown).get<bool>();
  a.busy_seconds = j.at(kBusySeconds).get<double>();
  a.activity_share = j.at(kActivity).get<double>();
  a.gpu_busy_seconds = j.at(kGpuBusySeconds).get<double>();
  a.vram_byte_seconds = j.at(kVramByteSeconds).get<double>();
  a.launches = j.at(kLaunches).get<uint64_t>();
  a.efficiency = efficiency(j.at(kEfficiency));
  auto& ev = a.evidence;
  ev.vram_peak_bytes = at_opt<uint64_t>(j, kVramPeak);
  ev.vram_p95_bytes = at_opt<uint64_t>(j, kVramP95);
  ev.nvml_vram_peak_bytes = at_opt<uint64_t>(j, kNvmlVramPeak);
  ev.nvml_vram_p95_bytes = at_opt<uint64_t>(j, kNvmlVramP95);
  ev.sm_active_p95 = at_opt<double>(j, kSmActiveP95);
  ev.sm_occupancy_p95 = at_opt<double>(j, kSmOccupancyP95);
  ev.busy_p95 = at_opt<double>(j, kBusyP95);
  ev.windows = at_opt<int64_t>(j, kWindows);
  if (const json& idle = j.at(kIdle); !idle.is_null())
    ev.idle = ledger::IdleRun{idle.at(0).get<double>(), idle.at(1).get<double>(), idle.at(2).get<double>()};
  if (j.size() == kAccountFieldsWithSlurm) {
    a.labels.slurm_user = j.at(kSlurmUser).get<std::string>();
    a.labels.slurm_account = j.at(kSlurmAccount).get<std::string>();
  }
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
