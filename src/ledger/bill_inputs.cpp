#include "ledger/bill_inputs.h"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "ledger/store.h"
#include "common/micros_text.h"

namespace gpuledger::ledger {

namespace {
constexpr const char* kNodeKey = "bill/node";
constexpr const char* kClusterKey = "bill/cluster";
constexpr const char* kPricesPrefix = "bill/prices/";

// Zero-padded so that the keys sort by time.
std::string prices_key(int64_t since) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(since));
  return std::string(kPricesPrefix) + buf;
}
}  // namespace

std::string price_book_json(const PriceBook& b) {
  nlohmann::ordered_json j;
  j["currency"] = b.currency;
  j["default_per_hour"] = format_micros(b.default_micros_per_hour);
  j["per_model"] = nlohmann::ordered_json::object();
  for (const auto& [model, micros] : b.per_model) j["per_model"][model] = format_micros(micros);
  j["per_uuid"] = nlohmann::ordered_json::object();
  for (const auto& [uuid, micros] : b.per_uuid) j["per_uuid"][uuid] = format_micros(micros);
  j["cost_policy"] = std::string(to_string(b.cost_policy));
  j["blend_allocated_weight"] = b.blend_allocated_weight;
  j["idle_policy"] = std::string(to_string(b.idle_policy));
  j["memory_price_share"] = b.memory_price_share;
  j["vram_per_gib_hour"] = b.vram_micros_per_gib_hour ? nlohmann::ordered_json(format_micros(*b.vram_micros_per_gib_hour))
                                                      : nlohmann::ordered_json(nullptr);
  j["window_seconds"] = b.window_seconds;
  j["mig_slices"] = b.mig_slices_default ? nlohmann::ordered_json(*b.mig_slices_default) : nlohmann::ordered_json(nullptr);
  j["mig_slices_per_model"] = nlohmann::ordered_json::object();
  for (const auto& [model, n] : b.mig_slices_per_model) j["mig_slices_per_model"][model] = n;
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::optional<PriceBook> price_book_from_json(const std::string& json) {
  const auto j = nlohmann::ordered_json::parse(json, nullptr, false);
  if (!j.is_object() || !j.contains("currency") || !j["currency"].is_string() || !j.contains("default_per_hour") ||
      !j["default_per_hour"].is_string())
    return std::nullopt;
  try {
    PriceBook b;
    b.currency = j["currency"].get<std::string>();
    b.default_micros_per_hour = parse_micros(j["default_per_hour"].get<std::string>());
    for (const char* key : {"per_model", "per_uuid"}) {
      if (!j.contains(key) || !j[key].is_object()) continue;
      for (const auto& [name, rate] : j[key].items())
        (std::string(key) == "per_model" ? b.per_model : b.per_uuid).emplace_back(name, parse_micros(rate.get<std::string>()));
    }
    if (j.contains("mig_slices") && j["mig_slices"].is_number_integer()) b.mig_slices_default = j["mig_slices"].get<int>();
    if (j.contains("mig_slices_per_model") && j["mig_slices_per_model"].is_object())
      for (const auto& [model, n] : j["mig_slices_per_model"].items()) b.mig_slices_per_model.emplace_back(model, n.get<int>());
    return b;
  } catch (const std::exception&) {  // a rate that is not a decimal, a count that is not a number
    return std::nullopt;
  }
}

void record_bill_inputs(Store& store, const std::string& node, const std::string& cluster, const PriceBook& book,
                        int64_t now) {
  if (!node.empty()) store.set_meta(kNodeKey, node);
  if (!cluster.empty()) store.set_meta(kClusterKey, cluster);
  const std::string json = price_book_json(book);
  const auto lists = store.meta_with_prefix(kPricesPrefix);
  if (lists.empty() || lists.back().second != json) store.set_meta(prices_key(now), json);
}

BillInputs read_bill_inputs(const Store& store, int64_t from, int64_t to) {
  BillInputs in;
  for (const auto& [key, value] : store.meta_with_prefix("bill/")) {
    if (key == kNodeKey) in.node = value;
    if (key == kClusterKey) in.cluster = value;
  }
  for (const auto& [key, value] : store.meta_with_prefix(kPricesPrefix)) {
    long long since = 0;
    if (std::sscanf(key.c_str() + std::char_traits<char>::length(kPricesPrefix), "%lld", &since) != 1) continue;
    if (since >= to) break;
    if (since <= from) in.price_lists.clear();  // superseded before the range began
    in.price_lists.push_back({since, value});
  }
  return in;
}

}  // namespace gpuledger::ledger
