#include "slurm/scontrol_gres.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace gpuledger::slurm {
namespace {

std::optional<long> number(std::string_view s) {
  long v = 0;
  if (s.empty() || s.size() > 9) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Splits at commas outside brackets or parentheses.
std::vector<std::string_view> top_level_items(std::string_view s) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    const char c = i < s.size() ? s[i] : ',';
    if (c == '[' || c == '(') ++depth;
    if (c == ']' || c == ')') --depth;
    if (c == ',' && depth <= 0) {
      items.push_back(s.substr(from, i - from));
      from = i + 1;
    }
  }
  return items;
}

// "0-1,3" into `into`; false on any other shape or an index past kMaxGpuIndex.
bool add_ranges(std::string_view list, std::set<int>& into) {
  for (std::string_view item : top_level_items(list)) {
    const size_t dash = item.find('-');
    const auto lo = number(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi > static_cast<long>(kMaxGpuIndex)) return false;
    for (long i = *lo; i <= *hi; ++i) into.insert(static_cast<int>(i));
  }
  return true;
}

// One hostlist item: "name", or "prefix[ranges]suffix" with zero-padded ranges.
bool item_names(std::string_view item, std::string_view node) {
  const size_t open = item.find('[');
  if (open == std::string_view::npos) return item == node;
  const size_t close = item.find(']', open);
  if (close == std::string_view::npos || item.find('[', close) != std::string_view::npos) return false;
  const std::string_view prefix = item.substr(0, open), suffix = item.substr(close + 1);
  if (node.size() <= prefix.size() + suffix.size() || !node.starts_with(prefix) || !node.ends_with(suffix))
    return false;
  const std::string_view digits = node.substr(prefix.size(), node.size() - prefix.size() - suffix.size());
  const auto value = number(digits);
  if (!value) return false;
  for (std::string_view range : top_level_items(item.substr(open + 1, close - open - 1))) {
    const size_t dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const auto lo = number(lo_text);
    const auto hi = dash == std::string_view::npos ? lo : number(range.substr(dash + 1));
    if (!lo || !hi) return false;
    // "01-10" names "01" .. "10" (as wide as the bound); "1-10" names "1" .. "10", never "01".
    const bool padded = lo_text.size() > 1 && lo_text[0] == '0';
    const bool width_ok = padded ? digits.size() == lo_text.size() : (digits.size() == 1 || digits[0] != '0');
    if (width_ok && *lo <= *value && *value <= *hi) return true;
  }
  return false;
}

// The value of `key=` in a line of space-separated fields, from the field's start.
std::optional<std::string_view> field(std::string_view line, std::string_view key) {
  for (size_t at = 0; at < line.size();) {
    const size_t end = std::min(line.find(' ', at), line.size());
    const std::string_view f = line.substr(at, end - at);
    if (f.size() > key.size() && f.starts_with(key) && f[key.size()] == '=') return f.substr(key.size() + 1);
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

bool hostlist_names(std::string_view hostlist, std::string_view node) {
  if (node.empty() || hostlist.size() > 4096) return false;
  for (std::string_view item : top_level_items(hostlist))
    if (item_names(item, node)) return true;
  return false;
}

std::optional<std::vector<int>> gres_gpu_indexes(std::string_view gres) {
  std::set<int> indexes;
  for (std::string_view item : top_level_items(gres)) {
    const std::string_view name = item.substr(0, item.find_first_of(":("));
    if (name != "gpu" && name != "shard" && name != "mps") continue;
    const size_t idx = item.find("(IDX:");
    if (idx == std::string_view::npos || !item.ends_with(")")) return std::nullopt;
    const std::string_view list = item.substr(idx + 5, item.size() - idx - 6);
    if (list == "N/A") continue;  // none on this node
    if (!add_ranges(list, indexes)) return std::nullopt;
  }
  return std::vector<int>(indexes.begin(), indexes.end());
}

std::vector<int> job_gpus_on_node(std::string_view text, std::string_view node, size_t* dropped) {
  std::set<int> all;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    line.remove_prefix(std::min(line.find_first_not_of(' '), line.size()));
    if (!line.starts_with("Nodes=")) continue;
    const auto nodes = field(line, "Nodes");
    const auto gres = field(line, "GRES");
    if (!nodes || !gres || !hostlist_names(*nodes, node)) continue;
    const auto indexes = gres_gpu_indexes(*gres);
    if (!indexes) {
      if (dropped) ++*dropped;
      continue;
    }
    all.insert(indexes->begin(), indexes->end());
  }
  return std::vector<int>(all.begin(), all.end());
}

std::string slurm_node_for_host(std::string_view text, std::string_view host) {
  std::string found;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    const auto name = field(line, "NodeName");
    if (!name || !line.starts_with("NodeName=")) continue;
    const auto hostname = field(line, "NodeHostName");
    if (*name != host && (!hostname || *hostname != host)) continue;
    if (!found.empty() && found != *name) return "";  // several: say none rather than guess
    found = std::string(*name);
  }
  return found;
}

}  // namespace gpuledger::slurm
