#include "kubernetes/field_owners.h"

#include <ctime>

#include "kubernetes/json_fields.h"

namespace gpuledger::kubernetes {
namespace {

std::optional<int> digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return std::nullopt;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

void record_owned(const nlohmann::json* map, const FieldOwner& owner, const std::function<bool(std::string_view)>& keep,
                  std::map<std::string, std::vector<FieldOwner>>& out) {
  if (!map || !map->is_object()) return;
  for (auto it = map->begin(); it != map->end(); ++it) {
    std::string_view key = it.key();
    if (!key.starts_with("f:")) continue;
    key.remove_prefix(2);
    if (keep(key)) out[std::string(key)].push_back(owner);
  }
}

}  // namespace

std::optional<int64_t> parse_rfc3339_seconds(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm|-hh:mm)
  auto year = digits(s, 0, 4), mon = digits(s, 5, 2), day = digits(s, 8, 2);
  auto hour = digits(s, 11, 2), min = digits(s, 14, 2), sec = digits(s, 17, 2);
  if (!year || !mon || !day || !hour || !min || !sec || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
      s[13] != ':' || s[16] != ':')
    return std::nullopt;
  if (*mon < 1 || *mon > 12 || *day < 1 || *day > 31 || *hour > 23 || *min > 59 || *sec > 60) return std::nullopt;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    size_t start = ++pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 9) ++pos;
    if (pos == start) return std::nullopt;
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z') && pos + 1 == s.size()) {
    // UTC
  } else if (pos + 6 == s.size() && (s[pos] == '+' || s[pos] == '-') && s[pos + 3] == ':') {
    auto oh = digits(s, pos + 1, 2), om = digits(s, pos + 4, 2);
    if (!oh || !om || *oh > 23 || *om > 59) return std::nullopt;
    offset = (s[pos] == '-' ? -1 : 1) * (int64_t{*oh} * 3600 + *om * 60);
  } else {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *mon - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *min;
  tm.tm_sec = *sec;
  return static_cast<int64_t>(::timegm(&tm)) - offset;
}

FieldOwnership parse_field_owners(const nlohmann::json& metadata, const std::function<bool(std::string_view)>& keep) {
  FieldOwnership out;
  auto entries = member(metadata, "managedFields");
  if (!entries || !entries->is_array()) return out;
  out.present = !entries->empty();
  size_t seen = 0;
  for (const auto& e : *entries) {
    if (++seen > kMaxManagedFieldEntries) break;
    FieldOwner owner{string_member(e, "manager"), parse_rfc3339_seconds(string_member(e, "time"))};
    if (owner.manager.empty() || owner.manager.size() > kMaxManagerName) continue;
    if (auto type = string_member(e, "fieldsType"); !type.empty() && type != "FieldsV1") continue;
    auto fields = member(e, "fieldsV1");
    auto md = fields ? member(*fields, "f:metadata") : nullptr;
    if (!md) continue;
    record_owned(member(*md, "f:annotations"), owner, keep, out.annotations);
    record_owned(member(*md, "f:labels"), owner, keep, out.labels);
  }
  return out;
}

}  // namespace gpuledger::kubernetes
