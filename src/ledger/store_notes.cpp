// The store's notes beside the windows: slots whose memory size was unknown
// (Store::MemorySizeUnknown), and when the hot path was not probed.
#include "ledger/store.h"

#include <sqlite3.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "common/error.h"
#include "common/utf8.h"
#include "ledger/hourly_rollup.h"
#include "ledger/store_sqlite.h"

namespace gpuledger::ledger {

using detail::Stmt;

namespace {
constexpr std::string_view kMemorySizeUnknownKey = "memory_size_unknown/";
constexpr std::string_view kHotPathNotProbedKey = "hot_path_not_probed";

// "start-end,start-end" -> spans; malformed parts are skipped (the note is advisory).
std::vector<std::pair<int64_t, int64_t>> parse_spans(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> spans;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    long long a = 0, b = 0;
    char dash = 0;
    std::istringstream p(part);
    if (p >> a >> dash >> b && dash == '-' && a < b) spans.emplace_back(a, b);
  }
  return spans;
}
}  // namespace

void Store::note_spans(const std::vector<std::string>& keys, int64_t start, int64_t end) {
  if (keys.empty() || start >= end) return;
  exec("BEGIN IMMEDIATE");
  try {
    Stmt get(db_, "SELECT value FROM meta WHERE key = ?", *this);
    Stmt set(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", *this);
    for (const auto& key : keys) {
      get.bind(1, key);
      auto spans = get.step() ? parse_spans(get.text(0)) : std::vector<std::pair<int64_t, int64_t>>{};
      get.reset();
      if (!spans.empty() && start >= spans.back().first && start <= spans.back().second)
        spans.back().second = std::max(spans.back().second, end);
      else
        spans.emplace_back(start, end);
      if (spans.size() > kNotedSpans)
        spans.erase(spans.begin(), spans.end() - static_cast<std::ptrdiff_t>(kNotedSpans));
      std::string value;
      for (const auto& [a, b] : spans) value += (value.empty() ? "" : ",") + std::to_string(a) + "-" + std::to_string(b);
      set.bind(1, key).bind(2, value);
      set.step();
      set.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void Store::note_memory_size_unknown(const std::vector<std::string>& uuids, int64_t start, int64_t end) {
  std::vector<std::string> keys;
  for (const auto& uuid : uuids) keys.push_back(std::string(kMemorySizeUnknownKey) + uuid);
  note_spans(keys, start, end);
}

void Store::note_hot_path_not_probed(int64_t start, int64_t end) { note_spans({std::string(kHotPathNotProbedKey)}, start, end); }

std::vector<std::pair<int64_t, int64_t>> Store::hot_path_not_probed(int64_t from, int64_t to) const {
  std::vector<std::pair<int64_t, int64_t>> out;
  Stmt q(db_, "SELECT value FROM meta WHERE key = ?", *this);
  q.bind(1, std::string(kHotPathNotProbedKey));
  if (q.step())
    for (const auto& [a, b] : parse_spans(q.text(0)))
      if (a < to && b > from) out.emplace_back(a, b);
  return out;
}

std::vector<Store::MemorySizeUnknown> Store::memory_size_unknown(int64_t from, int64_t to) const {
  std::vector<MemorySizeUnknown> out;
  Stmt q(db_, "SELECT key, value FROM meta WHERE substr(key, 1, 20) = 'memory_size_unknown/' ORDER BY key", *this);
  while (q.step()) {
    const std::string uuid = q.text(0).substr(kMemorySizeUnknownKey.size());
    for (const auto& [a, b] : parse_spans(q.text(1)))
      if (a < to && b > from) out.push_back({uuid, a, b});
  }
  return out;
}

void Store::set_meta(const std::string& key, const std::string& value) {
  Stmt set(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", *this);
  set.bind(1, key).bind(2, value);
  set.step();
}

std::optional<std::string> Store::meta(const std::string& key) const {
  Stmt q(db_, "SELECT value FROM meta WHERE key = ?", *this);
  q.bind(1, key);
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

int64_t Store::erase_meta_with_prefix(const std::string& prefix) {
  Stmt q(db_, "DELETE FROM meta WHERE substr(key, 1, length(?1)) = ?1", *this);
  q.bind(1, prefix);
  q.step();
  return sqlite3_changes(db_);
}

std::vector<std::pair<std::string, std::string>> Store::meta_with_prefix(const std::string& prefix) const {
  std::vector<std::pair<std::string, std::string>> out;
  Stmt q(db_, "SELECT key, value FROM meta WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key", *this);
  q.bind(1, prefix);
  while (q.step()) out.emplace_back(q.text(0), q.text(1));
  return out;
}

}  // namespace gpuledger::ledger
