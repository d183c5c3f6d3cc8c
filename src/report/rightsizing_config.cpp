#include "report/rightsizing_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "common/duration_text.h"
#include "common/error.h"
#include "common/yaml_errors.h"
#include "ledger/prices.h"
#include "common/micros_text.h"

namespace gpuledger::report {

int64_t parse_idle_after(const std::string& text, const std::string& what) {
  const Error bad(what + " '" + text + "': expected a duration such as 24h, 90m or 2d");
  if (text.size() >= 2 && text.back() == 'd') {
    const std::string digits = text.substr(0, text.size() - 1);
    if (digits.size() > 6 || !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw bad;
    return std::stoll(digits) * 86400;
  }
  try {
    const auto ms = parse_duration(text).count();
    if (ms % 1000 != 0) throw bad;
    return ms / 1000;
  } catch (const Error&) {
    throw bad;
  }
}

int64_t parse_vram_headroom(const std::string& text, const std::string& what) {
  int64_t micros = -1;
  try {
    micros = parse_micros(text);
  } catch (const Error&) {
  }
  if (micros < 0 || micros > 1'000'000)
    throw Error(what + " '" + text + "': expected a fraction from 0 to 1 with at most 6 decimals (e.g. 0.2)");
  return micros;
}

namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Node& node, const std::string& what) {
  yaml_fail("config", source, node, what);
}

std::string scalar(const std::string& source, const YAML::Node& node, const std::string& key) {
  return yaml_scalar("config", source, node, key);
}

ledger::MigTable mig_table(const std::string& source, const std::string& model, const YAML::Node& node) {
  ledger::MigTable t;
  t.model = model;
  YAML::Node list = node;
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      if (key != "slices" && key != "profiles")
        fail(source, kv.first, "unknown key '" + key + "' in the MIG table of '" + model + "' (expected: slices, profiles)");
    }
    if (auto n = node["slices"]) {
      const std::string v = scalar(source, n, "slices");
      if (v.empty() || v.size() > 2 || !std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); }) ||
          std::stoi(v) < 1)
        fail(source, n, "slices must be a whole number from 1 to 99, not '" + v + "'");
      t.slices = std::stoi(v);
    }
    list = node["profiles"];
    if (!list) fail(source, node, "the MIG table of '" + model + "' has no profiles");
  }
  if (!list.IsSequence()) fail(source, list, "the MIG table of '" + model + "' must be a list of profiles such as 1g.10gb");
  for (const auto& item : list) {
    const std::string name = scalar(source, item, "a MIG profile");
    auto p = ledger::parse_mig_profile(name);
    if (!p) fail(source, item, "'" + name + "' is not a MIG GPU-instance profile such as 1g.10gb");
    if (p->compute_slices > t.slices)
      fail(source, item, "'" + name + "' has more compute slices than the GPU's " + std::to_string(t.slices));
    t.profiles.push_back(*p);
  }
  if (t.profiles.empty()) fail(source, list, "the MIG table of '" + model + "' has no profiles");
  std::sort(t.profiles.begin(), t.profiles.end(), [](const auto& a, const auto& b) {
    return a.compute_slices != b.compute_slices ? a.compute_slices < b.compute_slices : a.memory_bytes < b.memory_bytes;
  });
  return t;
}

}  // namespace

RightsizingOptions parse_rightsizing_section(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = yaml_load("config", yaml_text, source);
  RightsizingOptions o;
  if (!root.IsMap()) return o;
  const YAML::Node r = root["rightsizing"];
  if (!r || r.IsNull()) return o;
  if (!r.IsMap()) fail(source, r, "rightsizing must be a mapping");
  for (const auto& kv : r) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (key != "idle_after" && key != "vram_headroom" && key != "min_evidence" && key != "mig_profiles")
      fail(source, kv.first,
           "unknown key '" + key + "' in rightsizing (expected: idle_after, vram_headroom, min_evidence, mig_profiles)");
  }
  auto checked = [&](const YAML::Node& n, auto parse, const char* key) {
    try {
      return parse(scalar(source, n, std::string("rightsizing.") + key), std::string("rightsizing.") + key);
    } catch (const Error& e) {
      fail(source, n, e.what());
    }
  };
  if (auto n = r["idle_after"]) o.idle_after_seconds = checked(n, parse_idle_after, "idle_after");
  if (auto n = r["vram_headroom"]) o.vram_headroom_micros = checked(n, parse_vram_headroom, "vram_headroom");
  if (auto n = r["min_evidence"]) o.min_evidence_seconds = checked(n, parse_idle_after, "min_evidence");
  if (auto m = r["mig_profiles"]; m && !m.IsNull()) {
    if (!m.IsMap()) fail(source, m, "rightsizing.mig_profiles must map GPU models to MIG tables");
    for (const auto& kv : m) o.mig.custom.push_back(mig_table(source, scalar(source, kv.first, "a GPU model"), kv.second));
  }
  return o;
}

RightsizingOptions load_rightsizing_section(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("config " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_rightsizing_section(text.str(), path);
}

}  // namespace gpuledger::report
