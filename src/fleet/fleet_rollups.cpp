#include "fleet/fleet_rollups.h"

#include <map>

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

struct Merged {
  Rollup rollup;
  bool mergeable = true;
};

// Per slot uuid: the period's windows (an hour) merged, or its finer periods' merges.
std::map<std::string, Merged> merged(const ledger::Store& store, const Origin& origin, Period period, int64_t start) {
  std::map<std::string, Piece> pieces;
  const int64_t end = report::period_end(start, period);
  if (const auto sub = finer(period)) {
    for (int64_t t = start; t < end; t = report::period_end(t, *sub))
      for (auto& [uuid, m] : merged(store, origin, *sub, t))
        add_part(pieces[uuid], std::move(m.rollup.window), m.rollup.windows, m.rollup.digests, m.mergeable);
  } else {
    for (auto& w : store.windows(start, end)) {  // by (start, uuid): each slot's in start order
      const std::string uuid = w.slot.uuid;
      const uint64_t digest = digest_part(to_window_row(origin, w).digest);
      add_part(pieces[uuid], std::move(w), 1, digest, true);
    }
  }
  std::map<std::string, Merged> out;
  for (auto& [uuid, p] : pieces) {
    Merged& m = out[uuid];
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

std::vector<Rollup> build_rollups(const ledger::Store& store, const Origin& origin, Period period,
                                  int64_t period_start) {
  std::vector<Rollup> out;
  for (auto& [uuid, m] : merged(store, origin, period, period_start))
    if (m.mergeable) out.push_back(std::move(m.rollup));
  return out;
}

}  // namespace gpuledger::fleet
