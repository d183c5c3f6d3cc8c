#include "ledger/prices.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/micros_text.h"

namespace gpuledger::ledger {

namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Node& node, const std::string& what) {
  auto mark = node.Mark();
  if (mark.is_null()) throw Error("prices " + source + ": " + what);
  throw Error("prices " + source + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " +
              what);
}

int64_t amount(const std::string& source, const YAML::Node& node, const std::string& key,
               const std::string& unit = "GPU-hour") {
  if (!node.IsScalar()) fail(source, node, key + ": expected a price per " + unit);
  try {
    return parse_micros(node.Scalar());
  } catch (const Error& e) {
    fail(source, node, key + ": " + e.what());
  }
}

int slices(const std::string& source, const YAML::Node& node, const std::string& key) {
  int n = 0;
  if (!node.IsScalar() || !YAML::convert<int>::decode(node, n) || n < 1 || n > 64)
    fail(source, node, key + ": expected a slice count between 1 and 64");
  return n;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

__int128 round_div(__int128 num, __int128 den) { return (num + den / 2) / den; }

}  // namespace

std::optional<int> mig_profile_slices(const std::string& profile) {
  for (size_t i = 0; i < profile.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(profile[i]))) continue;
    if (i > 0 && std::isdigit(static_cast<unsigned char>(profile[i - 1]))) continue;
    size_t j = i;
    int n = 0;
    while (j < profile.size() && std::isdigit(static_cast<unsigned char>(profile[j])) && n < 1000)
      n = n * 10 + (profile[j++] - '0');
    if (j + 1 < profile.size() && profile[j] == 'g' && profile[j + 1] == '.') return n;
  }
  return std::nullopt;
}

PriceBook parse_prices(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error("prices " + source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                ": " + e.msg);
  }
  PriceBook book;
  YAML::Node vram_price;  // where vram_per_gib_hour was given, for the error naming it
  if (root.IsNull()) return book;
  if (!root.IsMap()) fail(source, root, "expected a mapping");
  if (root["cost"]) root = root["cost"];  // prices inside the agent configuration file
  if (!root.IsMap()) fail(source, root, "cost: expected a mapping");
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    if (key == "currency") {
      if (!v.IsScalar() || v.Scalar().empty()) fail(source, v, "currency: expected a name such as USD");
      book.currency = v.Scalar();
    } else if (key == "default_per_hour") {
      book.default_micros_per_hour = amount(source, v, key);
    } else if (key == "per_model" || key == "per_uuid") {
      if (!v.IsMap()) fail(source, v, key + ": expected a mapping of name to price per GPU-hour");
      auto& list = key == "per_model" ? book.per_model : book.per_uuid;
      for (const auto& e : v) {
        std::string name = e.first.as<std::string>();
        if (name.empty()) fail(source, e.first, key + ": empty name");
        list.emplace_back(name, amount(source, e.second, key + "." + name));
      }
    } else if (key == "mig_slices") {
      if (v.IsScalar()) {
        book.mig_slices_default = slices(source, v, key);
      } else if (v.IsMap()) {
        for (const auto& e : v) {
          std::string name = e.first.as<std::string>();
          int n = slices(source, e.second, key + "." + name);
          if (name == "default")
            book.mig_slices_default = n;
          else
            book.mig_slices_per_model.emplace_back(name, n);
        }
      } else {
        fail(source, v, "mig_slices: expected a number or a mapping of model to number");
      }
    } else if (key == "window_seconds") {
      int s = 0;
      if (!v.IsScalar() || !YAML::convert<int>::decode(v, s) || s < 1 || s > 86400 || 86400 % s != 0)
        fail(source, v, "window_seconds: expected a divisor of 86400 (e.g. 60, 300, 3600)");
      book.window_seconds = s;
    } else if (key == "retention_days") {
      int d = -1;
      if (!v.IsScalar() || !YAML::convert<int>::decode(v, d) || d < 0)
        fail(source, v, "retention_days: expected a number of days (0: keep everything)");
      book.retention_days = d;
    } else if (key == "rollup_after_hours") {
      int h = -1;
      if (!v.IsScalar() || !YAML::convert<int>::decode(v, h) || h < 0)
        fail(source, v, "rollup_after_hours: expected a number of hours (0: never merge windows into hours)");
      book.rollup_after_hours = h;
    } else if (key == "carbon_g_per_kwh") {
      double g = -1;
      if (!v.IsScalar() || !YAML::convert<double>::decode(v, g) || !std::isfinite(g) || g < 0)
        fail(source, v, "carbon_g_per_kwh: expected grams of CO2e per kWh (a non-negative number)");
      book.carbon_g_per_kwh = g;
    } else if (key == "cost_policy") {
      if (!v.IsScalar()) fail(source, v, "cost_policy: expected usage, allocated or blend");
      try {
        book.cost_policy = parse_cost_policy(v.Scalar());
      } catch (const Error& e) {
        fail(source, v, e.what());
      }
    } else if (key == "blend_allocated_weight" || key == "memory_price_share") {
      double f = -1;
      if (!v.IsScalar() || !YAML::convert<double>::decode(v, f) || !(f >= 0 && f <= 1))
        fail(source, v, key + ": expected a fraction from 0 to 1");
      (key == "memory_price_share" ? book.memory_price_share : book.blend_allocated_weight) = f;
    } else if (key == "vram_per_gib_hour") {
      book.vram_micros_per_gib_hour = amount(source, v, key, "GiB-hour of VRAM");
      vram_price.reset(v);  // rebinds (operator= would write into a node already bound)
    } else if (key == "idle_policy") {
      if (!v.IsScalar()) fail(source, v, "idle_policy: expected holders, usage or idle");
      try {
        book.idle_policy = parse_idle_policy(v.Scalar());
      } catch (const Error& e) {
        fail(source, v, e.what());
      }
    } else {
      fail(source, kv.first, "unknown key '" + key + "'");
    }
  }
  if (book.vram_micros_per_gib_hour && book.memory_price_share > 0)
    fail(source, vram_price,
         "vram_per_gib_hour and memory_price_share are two ways of pricing the same memory part: set one of them "
         "(vram_per_gib_hour derives each GPU's memory share from its price and memory size)");
  return book;
}

namespace {
std::string read_prices_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("prices " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

PriceBook load_prices(const std::string& path) { return parse_prices(read_prices_file(path), path); }

std::optional<PriceBook> parse_cost_section(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception&) {
    return parse_prices(yaml_text, source);  // the same error, with its position
  }
  if (!root.IsMap() || !root["cost"]) return std::nullopt;
  return parse_prices(yaml_text, source);
}

std::optional<PriceBook> load_cost_section(const std::string& path) {
  return parse_cost_section(read_prices_file(path), path);
}

int mig_slices_for(const PriceBook& book, const std::string& model) {
  const std::string m = lower(model);
  size_t best_len = 0;
  std::optional<int> best;
  for (const auto& [key, n] : book.mig_slices_per_model) {
    if (lower(key).size() > best_len && m.find(lower(key)) != std::string::npos) {
      best_len = key.size();
      best = n;
    }
  }
  if (best) return *best;
  if (book.mig_slices_default) return *book.mig_slices_default;
  return m.find("a30") != std::string::npos ? 4 : 7;
}

namespace {
std::optional<SlotPrice> whole_gpu_price(const PriceBook& book, const std::string& uuid, const std::string& model) {
  for (const auto& [id, p] : book.per_uuid)
    if (!uuid.empty() && id == uuid) return SlotPrice{p, 1, 1, "uuid:" + id};
  for (const auto& [key, p] : book.per_model)
    if (key == model) return SlotPrice{p, 1, 1, "model:" + key};
  const std::string m = lower(model);
  const std::pair<std::string, int64_t>* best = nullptr;
  for (const auto& e : book.per_model)
    if (m.find(lower(e.first)) != std::string::npos && (!best || e.first.size() > best->first.size())) best = &e;
  if (best) return SlotPrice{best->second, 1, 1, "model:" + best->first};
  return std::nullopt;
}
}  // namespace

SlotPrice price_for(const PriceBook& book, const GpuSlot& slot) {
  if (!slot.mig_profile) {
    if (auto p = whole_gpu_price(book, slot.uuid, slot.model)) return *p;
    return SlotPrice{book.default_micros_per_hour, 1, 1, "default"};
  }
  for (const auto& [id, p] : book.per_uuid)
    if (id == slot.uuid) return SlotPrice{p, 1, 1, "uuid:" + id};
  int total = mig_slices_for(book, slot.model);
  auto n = mig_profile_slices(*slot.mig_profile);
  if (!n || *n < 1 || *n > total)
    throw Error("MIG instance " + slot.uuid + ": profile '" + *slot.mig_profile + "' is not <n>g.<mem> with n in 1.." +
                std::to_string(total));
  SlotPrice p = whole_gpu_price(book, slot.parent_uuid, slot.model)
                    .value_or(SlotPrice{book.default_micros_per_hour, 1, 1, "default"});
  p.numerator = *n;
  p.denominator = total;
  return p;
}

int64_t window_cost_micros(const SlotPrice& price, int64_t window_seconds) {
  if (window_seconds <= 0) return 0;
  __int128 num = static_cast<__int128>(price.micros_per_hour) * price.numerator * window_seconds;
  __int128 den = static_cast<__int128>(price.denominator) * 3600;
  return static_cast<int64_t>(round_div(num, den));
}

}  // namespace gpuledger::ledger
