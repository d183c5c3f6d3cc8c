#include "ledger/hourly_rollup.h"

#include <algorithm>
#include <map>
#include <type_traits>

#include "ledger/efficiency_mean.h"
#include "ledger/window_evidence.h"
#include "ledger/window_fields.h"

namespace gpuledger::ledger {

namespace {

// A window field's merge (window_fields.h), in three steps: from the first
// window, with each window (its length `len`), and over the merged span.
struct FieldSums {
  double weighted = 0;  // kTimeMean: sum of value x length
  KnownMean known;      // kKnownMean
};
template <class T>
void merge_first(Merge rule, T& m, const T& w) {
  if (rule == Merge::kAll) {
    if constexpr (std::is_same_v<T, bool>) m = true;
  } else if (rule != Merge::kSum && rule != Merge::kTimeMean && rule != Merge::kKnownMean) {
    m = w;
  }
}
template <class W, class T>
void merge_first(Merge, Part<W, T>, Part<const W, T>) {}  // kEnergy, kEvidence: merge_energy(), merge_evidence()

template <class T>
void merge_add(Merge rule, T& m, const T& w, double len, FieldSums& s) {
  if constexpr (std::is_same_v<T, bool>) {
    if (rule == Merge::kAll) m = m && w;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (rule == Merge::kAgreed && m != w) m = "mixed";  // m is the first's until one differs
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (rule == Merge::kKnownMean) s.known.add(w, len);
    if (rule == Merge::kSum && w) m = m.value_or(0) + *w;  // unknown where no window knew it
  } else if constexpr (std::is_same_v<T, std::map<std::string, int64_t>>) {
    if (rule == Merge::kSum)
      for (const auto& [key, n] : w) m[key] += n;
  } else if constexpr (std::is_arithmetic_v<T>) {
    if (rule == Merge::kSum) m += w;
    if (rule == Merge::kMin) m = std::min(m, w);
    if (rule == Merge::kMax) m = std::max(m, w);
    if (rule == Merge::kTimeMean) s.weighted += w * len;
  }
}
template <class W, class T>
void merge_add(Merge, Part<W, T>, Part<const W, T>, double, FieldSums&) {}

template <class T>
void merge_last(Merge rule, T& m, const FieldSums& s, double total) {
  if constexpr (std::is_same_v<T, double>) {
    if (rule == Merge::kTimeMean) m = total > 0 ? s.weighted / total : 0;
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (rule == Merge::kKnownMean) m = s.known.mean();
  }
}
template <class W, class T>
void merge_last(Merge, Part<W, T>, const FieldSums&, double) {}

// The window fields of ws merged into m (window_fields.h).
void merge_fields(const std::vector<WindowRecord>& ws, WindowRecord& m) {
  std::vector<FieldSums> sums;
  for_each_window_field([&](const WindowField& f, auto&& into, auto&& first) { merge_first(f.merge, into, first); },
                        m, ws.front());
  for (const auto& w : ws) {
    const double len = static_cast<double>(w.end - w.start);
    size_t i = 0;
    for_each_window_field(
        [&](const WindowField& f, auto&& into, auto&& one) {
          if (sums.size() <= i) sums.emplace_back();
          merge_add(f.merge, into, one, len, sums[i++]);
        },
        m, w);
  }
  const double total = static_cast<double>(m.end - m.start);
  size_t i = 0;
  for_each_window_field([&](const WindowField& f, auto&& into) { merge_last(f.merge, into, sums[i++], total); }, m);
}

struct AccountSum {
  AccountRecord record;
  std::vector<FieldSums> sums;  // per account field
};

// One window's account a (the window `len` long) into its sum (window_fields.h).
void add_account(AccountSum& s, const AccountRecord& a, double len) {
  s.record.account = a.account;
  if (!(a.labels == AccountLabels{})) s.record.labels = a.labels;  // kLabels, in start order: the latest wins
  size_t i = 0;
  for_each_account_field(
      [&](const AccountField& f, auto&& into, auto&& one) {
        if (s.sums.size() <= i) s.sums.emplace_back();
        merge_add(f.merge, into, one, len, s.sums[i++]);
      },
      s.record, a);
}

}  // namespace

WindowRecord merge_windows(const std::vector<WindowRecord>& ws) {
  WindowRecord m;
  if (ws.empty()) return m;
  merge_fields(ws, m);
  std::map<std::string, AccountSum> accounts;
  std::map<std::pair<std::string, ChargeKind>, int64_t> charges;
  for (const auto& w : ws) {
    const double len = static_cast<double>(w.end - w.start);
    for (const auto& a : w.accounts) add_account(accounts[a.account], a, len);
    for (const auto& c : w.charges) charges[{c.account, c.kind}] += c.micros;
  }
  const double total = static_cast<double>(m.end - m.start);
  // Rightsizing evidence: peaks, p95s and idle runs over the windows in order
  // (window_evidence.h); a window without the account breaks its idle run.
  for (auto& [name, s] : accounts) {
    std::vector<EvidenceSpan> spans;
    for (const auto& w : ws) {
      const AccountRecord* rec = nullptr;
      for (const auto& a : w.accounts)
        if (a.account == name) rec = &a;
      spans.push_back({rec, w.start, w.end});
    }
    s.record.evidence = merge_evidence(spans);
  }
  for (auto& [name, s] : accounts) {
    size_t i = 0;
    for_each_account_field([&](const AccountField& f, auto&& into) { merge_last(f.merge, into, s.sums[i++], total); },
                           s.record);
    m.accounts.push_back(std::move(s.record));
  }
  for (const auto& [key, micros] : charges) m.charges.push_back({key.first, key.second, micros});
  m.energy = merge_energy(ws);
  return m;
}

std::optional<WindowEnergyRecord> merge_energy(const std::vector<WindowRecord>& ws) {
  std::optional<WindowEnergyRecord> m;
  std::map<std::pair<std::string, ChargeKind>, int64_t> parts;
  bool all_carbon = true;
  long double grams_per_kwh_mj = 0;  // sum of intensity x mJ: the merged intensity is energy-weighted
  for (const auto& w : ws) {
    if (!w.energy) continue;  // unknown: adds nothing
    if (!m) m = WindowEnergyRecord{0, w.energy->source, {}, w.energy->carbon_g_per_kwh};
    else if (m->source != w.energy->source) m->source = "mixed";
    m->millijoules += w.energy->millijoules;
    if (w.energy->carbon_g_per_kwh)
      grams_per_kwh_mj += static_cast<long double>(*w.energy->carbon_g_per_kwh) * w.energy->millijoules;
    else
      all_carbon = false;
    for (const auto& c : w.energy->charges) parts[{c.account, c.kind}] += c.millijoules;
  }
  if (!m) return std::nullopt;
  if (!all_carbon)
    m->carbon_g_per_kwh.reset();
  else if (m->millijoules > 0)
    m->carbon_g_per_kwh = static_cast<double>(grams_per_kwh_mj / m->millijoules);
  for (const auto& [key, mj] : parts) m->charges.push_back({key.first, key.second, mj});
  return m;
}

}  // namespace gpuledger::ledger
