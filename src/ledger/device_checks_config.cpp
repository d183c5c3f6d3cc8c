#include "ledger/device_checks_config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/duration_text.h"
#include "common/error.h"
#include "common/yaml_errors.h"

namespace gpuledger::ledger {

namespace {

[[noreturn]] void fail(const std::string& source, const YAML::Node& node, const std::string& what) {
  yaml_fail("config", source, node, what);
}

double ratio(const std::string& source, const YAML::Node& n, const std::string& key) {
  const std::string text = yaml_scalar("config", source, n, "device_checks." + key);
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v >= 0 && v <= 1) return v;
  } catch (const std::exception&) {
  }
  fail(source, n, "device_checks." + key + " '" + text + "': expected a ratio from 0 to 1 (e.g. 0.5)");
}

double seconds(const std::string& source, const YAML::Node& n, const std::string& key) {
  const std::string text = yaml_scalar("config", source, n, "device_checks." + key);
  try {
    const auto ms = parse_duration(text).count();
    if (ms > 0) return static_cast<double>(ms) / 1000.0;
  } catch (const Error&) {
  }
  fail(source, n, "device_checks." + key + " '" + text + "': expected a positive duration such as 15m or 600s");
}

}  // namespace

DeviceCheckConfig parse_device_checks_section(const std::string& yaml_text, const std::string& source) {
  const YAML::Node root = yaml_load("config", yaml_text, source);
  DeviceCheckConfig c;
  if (!root.IsMap()) return c;
  const YAML::Node d = root["device_checks"];
  if (!d || d.IsNull()) return c;
  if (!d.IsMap()) fail(source, d, "device_checks must be a mapping");
  const std::set<std::string> keys = {"busy_utilization", "busy_spans", "zero_epsilon",
                                      "frozen_after",     "stopped_after", "moving_range"};
  for (const auto& kv : d) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
    if (!keys.contains(key))
      fail(source, kv.first,
           "unknown key '" + key +
               "' in device_checks (expected: busy_utilization, busy_spans, zero_epsilon, frozen_after, "
               "stopped_after, moving_range)");
  }
  if (auto n = d["busy_utilization"]) c.busy_utilization = ratio(source, n, "busy_utilization");
  if (auto n = d["busy_spans"]) c.busy_spans = ratio(source, n, "busy_spans");
  if (auto n = d["zero_epsilon"]) c.zero_epsilon = ratio(source, n, "zero_epsilon");
  if (auto n = d["moving_range"]) c.moving_range = ratio(source, n, "moving_range");
  if (auto n = d["frozen_after"]) c.frozen_seconds = seconds(source, n, "frozen_after");
  if (auto n = d["stopped_after"]) c.stopped_seconds = seconds(source, n, "stopped_after");
  return c;
}

DeviceCheckConfig load_device_checks_section(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("config " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_device_checks_section(text.str(), path);
}

}  // namespace gpuledger::ledger
