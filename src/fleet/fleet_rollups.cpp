#include "fleet/fleet_rollups.h"

#include <charconv>
#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "fleet/window_json.h"
#include "ledger/hourly_rollup.h"

namespace gpuledger::fleet {

namespace {

struct Piece {
  std::vector<ledger::WindowRecord> parts;  // in start order
  std::map<std::string, ledger::AccountLabels> labels;  // every account's, as its first part had them
  int64_t windows = 0;
  unsigned __int128 digests = 0;
  bool mergeable = true;
};

bool same_terms(const ledger::WindowRecord& a, const ledger::WindowRecord& b) {
  return a.currency == b.currency && a.gpu_fraction == b.gpu_fraction;
}

// An account whose labels change within the period cannot be one merged
// account: its labels would be the last part's, and a report by team read at
// the roll-up would bill the whole period to its last team (the database
// refuses such a roll-up, schema 6).
bool same_labels(Piece& p, const ledger::WindowRecord& w) {
  for (const auto& a : w.accounts)
    if (!(p.labels.try_emplace(a.account, a.labels).first->second == a.labels)) return false;
  return true;
}

void add_part(Piece& p, ledger::WindowRecord&& w, int64_t windows, unsigned __int128 digests, bool mergeable) {
  if (!p.parts.empty() && !same_terms(p.parts.front(), w)) p.mergeable = false;
  if (!same_labels(p, w)) p.mergeable = false;
  p.mergeable = p.mergeable && mergeable;
  p.windows += windows;
  p.digests += digests;
  p.parts.push_back(std::move(w));
}

// A memo keeps no more periods than a month of hours and days (a shipper
// with a month's backlog builds its hours before any day; ~6 MB for 8 GPUs):
// past that, periods are merged from the store again.
constexpr size_t kMemoPeriods = 31 * 24 + 31;
const std::string kMemoKey = "fleet/merge/";

// Ends in "/": erasing it as a prefix erases that key alone.
std::string memo_key(Period period, int64_t start) {
  return kMemoKey + std::string(to_string(period)) + "/" + std::to_string(start) + "/";
}

unsigned __int128 parse_decimal(const std::string& text) {
  unsigned __int128 v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw Error("a kept roll-up's digest sum is not a number: " + text);
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v;
}

// Per slot uuid: the period's windows (an hour) merged, or its finer periods'
// merges (from `memo` where it kept them).
RollupMemo::Slots merged(const ledger::Store& store, const Origin& origin, Period period, int64_t start,
                         RollupMemo* memo, ShippedDigests* shipped, ShippedBatch* batch) {
  std::map<std::string, Piece> pieces;
  const int64_t end = report::period_end(start, period);
  if (const auto sub = finer(period)) {
    for (int64_t t = start; t < end; t = report::period_end(t, *sub)) {
      auto kept = memo ? memo->find(*sub, t) : std::nullopt;
      for (auto& [uuid, m] : kept ? std::move(*kept) : merged(store, origin, *sub, t, nullptr, shipped, batch))
        add_part(pieces[uuid], std::move(m.rollup.window), m.rollup.windows, m.rollup.digests, m.mergeable);
    }
  } else {
    auto from_batch = batch ? batch->take(store.window_keys(start, end)) : std::nullopt;
    // By (start, uuid) either way: each slot's windows in start order.
    for (auto& [id, w] : from_batch ? std::move(*from_batch) : store.windows_with_ids(start, end)) {
      const std::string uuid = w.slot.uuid;
      const auto kept = shipped ? shipped->take(id, w) : std::nullopt;
      const uint64_t digest = kept ? *kept : digest_part(window_digest(origin, w));
      add_part(pieces[uuid], std::move(w), 1, digest, true);
    }
  }
  RollupMemo::Slots out;
  for (auto& [uuid, p] : pieces) {
    RollupMemo::Slot& m = out[uuid];
    m.mergeable = p.mergeable;
    m.rollup.period = period;
    m.rollup.period_start = start;
    m.rollup.windows = p.windows;
    m.rollup.digests = p.digests;
    if (p.mergeable) m.rollup.window = ledger::merge_windows(p.parts);
  }
  return out;
}

}  // namespace

RollupMemo::RollupMemo(ledger::Store& store, Origin origin) : store_(store), origin_(std::move(origin)) {
  periods_ = store_.meta_with_prefix(kMemoKey).size();
}

void RollupMemo::forget_from(int64_t t) {
  for (const auto& [key, value] : store_.meta_with_prefix(kMemoKey)) {
    const std::string rest = key.substr(kMemoKey.size());  // "<period>/<start>/"
    const auto slash = rest.find('/');
    std::optional<Period> period;
    for (Period p : kPeriods)
      if (slash != std::string::npos && rest.substr(0, slash) == to_string(p)) period = p;
    int64_t start = 0;
    const char* first = rest.data() + (slash == std::string::npos ? 0 : slash + 1);
    const bool numbered = std::from_chars(first, rest.data() + rest.size(), start).ec == std::errc();
    if (period && numbered && report::period_end(start, *period) <= t) continue;
    store_.erase_meta_with_prefix(key);
    periods_ -= periods_ > 0;
  }
}

// {"origin": [cluster, node], "slots": {"<uuid>": {"windows": n, "digests": "<decimal>",
// "window": "<its body>" (null: not mergeable)}, ...}}
std::optional<RollupMemo::Slots> RollupMemo::find(Period period, int64_t start) const {
  const auto text = store_.meta(memo_key(period, start));
  if (!text) return std::nullopt;
  Slots out;
  try {
    const nlohmann::json whole = nlohmann::json::parse(*text);
    if (whole.at("origin") != nlohmann::json::array({origin_.cluster, origin_.node})) return std::nullopt;
    const nlohmann::json& kept = whole.at("slots");
    for (auto it = kept.begin(); it != kept.end(); ++it) {
      const nlohmann::json& v = it.value();
      Slot& m = out[it.key()];
      m.rollup.period = period;
      m.rollup.period_start = start;
      m.rollup.windows = v.at("windows").get<int64_t>();
      m.rollup.digests = parse_decimal(v.at("digests").get<std::string>());
      m.mergeable = !v.at("window").is_null();
      if (m.mergeable) m.rollup.window = window_from_json(v.at("window").get<std::string>());
    }
  } catch (const std::exception&) {  // not what keep() wrote: merged from the store instead
    return std::nullopt;
  }
  return out;
}

void RollupMemo::release(Period period, int64_t start) {
  const auto sub = finer(period);
  if (!sub) return;
  const int64_t end = report::period_end(start, period);
  for (int64_t t = start; t < end; t = report::period_end(t, *sub))
    if (store_.erase_meta_with_prefix(memo_key(*sub, t)) > 0) periods_ -= periods_ > 0;
}

void RollupMemo::keep(Period period, int64_t start, const Slots& slots) {
  const std::string key = memo_key(period, start);
  const bool fresh = !store_.meta(key);
  if (fresh && periods_ >= kMemoPeriods) return;
  nlohmann::json kept = {{"origin", {origin_.cluster, origin_.node}}, {"slots", nlohmann::json::object()}};
  for (const auto& [uuid, m] : slots)
    kept["slots"][uuid] = {{"windows", m.rollup.windows},
                  {"digests", decimal(m.rollup.digests)},
                  {"window", m.mergeable ? nlohmann::json(window_to_json(m.rollup.window)) : nlohmann::json()}};
  try {
    store_.set_meta(key, kept.dump());
  } catch (const std::exception&) {  // a name that is not UTF-8: this period is merged from the store again
    return;
  }
  periods_ += fresh;
}

std::vector<Rollup> build_rollups(const ledger::Store& store, const Origin& origin, Period period, int64_t period_start,
                                  RollupMemo* memo, ShippedDigests* shipped, ShippedBatch* batch) {
  RollupMemo::Slots slots = merged(store, origin, period, period_start, memo, shipped, batch);
  if (memo && period != Period::kMonth) memo->keep(period, period_start, slots);
  std::vector<Rollup> out;
  for (auto& [uuid, m] : slots)
    if (m.mergeable) out.push_back(std::move(m.rollup));
  return out;
}

}  // namespace gpuledger::fleet
