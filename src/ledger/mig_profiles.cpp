#include "ledger/mig_profiles.h"

#include <algorithm>
#include <cctype>

namespace gpuledger::ledger {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// `token` in `name` (both lower case), not as the tail of a longer word.
bool has_token(const std::string& name, const std::string& token) {
  for (size_t pos = name.find(token); pos != std::string::npos; pos = name.find(token, pos + 1))
    if (pos == 0 || !alnum(name[pos - 1])) return true;
  return false;
}

MigTable table(const char* model, std::initializer_list<const char*> names) {
  MigTable t;
  t.model = model;
  for (const char* n : names) t.profiles.push_back(*parse_mig_profile(n));
  return t;
}

struct Family {
  std::vector<std::string> all_of;  // lower-case tokens the name must hold
  std::vector<std::string> any_of;  // and one of these, when given
  MigTable table;
};

const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {{"a100"}, {"80gb"}, table("A100 80GB", {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})},
      {{"a100"}, {}, table("A100 40GB", {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"})},
      {{"h100"}, {"nvl", "94gb"}, table("H100 94GB", {"1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"})},
      {{"h100"}, {}, table("H100 80GB", {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"})},
      {{"h200"}, {}, table("H200 141GB", {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"})},
      {{"b200"}, {}, table("B200", {"1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"})},
  };
  return f;
}

}  // namespace

std::optional<MigProfile> parse_mig_profile(const std::string& name) {
  // <n>g.<m>gb, n and m plain decimal numbers without leading zeros.
  auto number = [&](size_t& pos, uint64_t& out) {
    const size_t begin = pos;
    out = 0;
    while (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])) && pos - begin < 6)
      out = out * 10 + static_cast<uint64_t>(name[pos++] - '0');
    return pos > begin && !(name[begin] == '0' && pos - begin > 1) && out > 0;
  };
  size_t pos = 0;
  uint64_t n = 0, m = 0;
  if (!number(pos, n) || name.compare(pos, 2, "g.") != 0) return std::nullopt;
  pos += 2;
  if (!number(pos, m) || name.compare(pos, std::string::npos, "gb") != 0) return std::nullopt;
  return MigProfile{name, static_cast<int>(n), m * 1'000'000'000ULL};
}

const std::vector<MigTable>& builtin_mig_tables() {
  static const std::vector<MigTable> tables = [] {
    std::vector<MigTable> out;
    for (const auto& f : families()) out.push_back(f.table);
    return out;
  }();
  return tables;
}

std::optional<MigTable> MigTables::for_model(const std::string& model) const {
  const std::string name = lower(model);
  for (const auto& t : custom)
    if (t.model == model) return t;
  const MigTable* best = nullptr;
  for (const auto& t : custom) {
    const std::string key = lower(t.model);
    if (!key.empty() && name.find(key) != std::string::npos && (!best || key.size() > best->model.size())) best = &t;
  }
  if (best) return *best;
  for (const auto& f : families()) {
    const bool all = std::all_of(f.all_of.begin(), f.all_of.end(), [&](const auto& t) { return has_token(name, t); });
    const bool any = f.any_of.empty() ||
                     std::any_of(f.any_of.begin(), f.any_of.end(), [&](const auto& t) { return has_token(name, t); });
    if (all && any) return f.table;
  }
  return std::nullopt;
}

}  // namespace gpuledger::ledger
