#include "ledger/accountant.h"

#include <algorithm>

namespace gpuledger::ledger {

namespace {

// An observation's names: a workload's when it has some, a holder's where none was known.
void learn_labels(std::map<std::string, AccountLabels>& labels, const Observation& obs) {
  for (const auto& h : obs.holders)
    if (!labels.count(h.account) || labels[h.account] == AccountLabels{}) labels[h.account] = h.labels;
  for (const auto& w : obs.workloads)
    if (!(w.labels == AccountLabels{})) labels[w.account] = w.labels;
}

}  // namespace

Accountant::Accountant(Store& store, PriceBook prices, int64_t max_backfill_seconds)
    : store_(store),
      prices_(std::move(prices)),
      metrics_(prices_.currency),
      clock_(prices_.window_seconds, max_backfill_seconds, store_.last_window_end()),
      closer_(store_, prices_, metrics_) {
  // The counters on /metrics continue from the ledger, across restarts.
  metrics_.load(store_.totals(), store_.first_window_start());
  store_.for_each_window(INT64_MIN, INT64_MAX, [&](WindowRecord&& w) { metrics_.add_stored(w); });
}

// The first observation opens its window: the counters' baseline (this
// observation's, or the stored one of the same counter set), backfill.
void Accountant::first_observation(const Observation& obs, const HeldSlots& held) {
  add_process_sm(obs);  // the baseline
  const bool restored = deltas_.take_baseline(obs, store_.counter_baseline());
  holders_ = obs.holders;
  inventory_ = obs.slots;
  allocation_known_ = obs.allocation_known;
  for (const auto& h : obs.holders) labels_[h.account] = h.labels;
  for (int64_t start : clock_.backfill_before(obs.time)) close_window(start, 0, "backfill");
  clock_.open(obs.time);
  if (restored) add_deltas(obs, held);  // since the last stored window, into this one
  deltas_.remember(obs, held);
  slots_.remember_nvml_used(obs);
  for (const auto& w : obs.workloads)
    if (!w.labels.namespace_name.empty() || !w.labels.team.empty() || !w.labels.slurm_account.empty() ||
        !labels_.count(w.account))
      labels_[w.account] = w.labels;
}

void Accountant::add_deltas(const Observation& obs, const HeldSlots& held) {
  add_process_sm(obs);
  deltas_.add(obs, held, [this](const std::string& slot, const std::string& account) -> Activity& {
    return slots_.activity(slot, account);
  });
}

// What the next observation's deltas and windows start from: this one's
// holders, inventory, names and counters.
void Accountant::remember(const Observation& obs, const HeldSlots& held) {
  clock_.seen(obs.time);
  holders_ = obs.holders;
  inventory_ = obs.slots;
  allocation_known_ = obs.allocation_known;
  learn_labels(labels_, obs);
  deltas_.remember(obs, held);
  slots_.remember_nvml_used(obs);
}

void Accountant::observe(const Observation& obs) {
  const double t = obs.time;
  slots_.observe_energy(obs);
  const HeldSlots held = held_slots(obs);
  if (!clock_.started()) {
    first_observation(obs, held);
    return;
  }
  if (clock_.went_back(t)) return;  // the clock went back: wait for it
  // The deltas since the last observation go to the window open then, and so
  // does the probe set they were counted under (and to the next, if it holds).
  slots_.note_probe_set(obs);

  // The deltas since the last observation go to the window open then, once.
  bool deltas_added = false;
  auto add_deltas_once = [&] {
    if (deltas_added) return;
    deltas_added = true;
    add_deltas(obs, held);
  };
  // Names that came with this observation name the accounts of the window it
  // closes: a Slurm job's user and account come from its controller a moment
  // after the job starts, and its first window is its own as much as the rest.
  learn_labels(labels_, obs);
  bool watched = true;  // windows after the first closed here had no observation inside: "gap"
  while (const auto w = clock_.next_closed_by(t, watched)) {
    slots_.integrate(obs, w->from, static_cast<double>(w->end), deltas_.streams());
    add_deltas_once();
    if (w->store) close_window(w->start, w->observed_seconds, w->source);
    clock_.closed(*w);
    watched = false;
    holders_ = obs.holders;
  }
  slots_.integrate(obs, clock_.last_time(), t, deltas_.streams());
  add_deltas_once();
  slots_.note_probe_set(obs);
  deltas_.forget_unseen_baseline(obs, clock_.first_time(), static_cast<double>(prices_.window_seconds));
  remember(obs, held);
  // The accounts live or holding a GPU now are seen (series_retirement.h).
  std::vector<AccountLabels> seen;
  for (const auto& w : obs.workloads) seen.push_back(export_labels(w.account, labels_[w.account]));
  for (const auto& h : obs.holders) seen.push_back(export_labels(h.account, labels_[h.account]));
  metrics_.seen(seen, t);
}

void Accountant::retire_series_after(double seconds) { metrics_.retire_after(seconds); }

void Accountant::store_window_in_progress() {
  const auto w = clock_.in_progress();
  if (!w) return;
  close_window(w->start, w->observed_seconds, w->source);
  clock_.stored(*w);
}

void Accountant::close_window(int64_t start, double observed_seconds, const std::string& source) {
  const ClosingWindow w{start, start + prices_.window_seconds, observed_seconds, source};
  closer_.close(w, {inventory_, holders_, allocation_known_, labels_, deltas_.baseline()}, slots_);
  slots_.next_window();
  // Names of accounts neither live nor holding a GPU now: the windows that
  // needed them are written, and a retired workload's never come back.
  std::erase_if(labels_, [&](const auto& kv) {
    return !deltas_.live(kv.first) &&
           std::none_of(holders_.begin(), holders_.end(), [&](const HolderEntry& h) { return h.account == kv.first; });
  });
}

void Accountant::add_process_sm(const Observation& obs) {
  slots_.add_process_sm(obs);
  metrics_.set_unattributed_sm(slots_.unattributed_sm());
}

uint64_t Accountant::windows_written() const { return metrics_.windows_written(); }
void Accountant::write_metrics(metrics::ExpositionWriter& out) const { metrics_.write(out); }

}  // namespace gpuledger::ledger
