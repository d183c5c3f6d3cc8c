#include "fleet/fleet_shipper.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/log.h"
#include "fleet/body_bounds.h"
#include "fleet/fleet_periods.h"
#include "fleet/fleet_rollups.h"
#include "fleet/fleet_schema.h"
#include "fleet/fleet_sink_postgres.h"
#include "fleet/pg_connection.h"
#include "ledger/outbox.h"
#include "ledger/store.h"
#include "metrics/prometheus_text.h"

namespace gpuledger::fleet {

std::string fleet_error_reason(const std::string& message) {
  if (message.rfind("ledger store", 0) == 0 || message.rfind("sqlite", 0) == 0) return "store";
  if (message.find(kNotThisNode) != std::string::npos) return "not_this_node";
  if (message.find("cannot connect") != std::string::npos) return "connect";
  if (message.find("schema version") != std::string::npos || message.find("fleet-db migrate") != std::string::npos)
    return "schema";
  const std::string state = sqlstate_of(message);
  if (state == "42501") return "privilege";
  if (state.rfind("08", 0) == 0 || state == "57P01" || state == "57P02" || state == "57P03") return "connect";
  if (state == "42P01" || state == "42703" || state == "3F000") return "schema";  // a table, column or schema missing
  return "query";
}

namespace {

constexpr int kRollupPeriodsPerRound = 48;
const std::string kRolledKey = "fleet/rolled/";

}  // namespace

struct FleetShipper::Session {
  std::unique_ptr<ledger::Store> store;
  std::unique_ptr<ledger::Outbox> outbox;
  std::unique_ptr<PgConnection> db;
  std::unique_ptr<FleetSinkPostgres> sink;
  std::optional<int64_t> late;  // the earliest start shipped since the roll-ups last looked
  std::unique_ptr<RollupMemo> memo;  // hours' and days' merges, for the day and month that take them
  ShippedDigests digests;            // the windows' digest parts as shipped, for their hours' roll-ups
  ShippedBatch batch;                // this round's windows (and the last's left), for the hours they complete
};

void FleetShipper::ship_rollups(Session& s) {
  const auto complete = s.outbox->complete_before();
  const auto first = s.store->first_window_start();
  if (!complete || !first) return;
  std::map<std::string, std::string> rolled;
  for (auto& [key, value] : s.store->meta_with_prefix(kRolledKey)) rolled[key] = value;
  int budget = kRollupPeriodsPerRound;
  for (Period p : kPeriods) {
    const std::string key = kRolledKey + to_string(p);
    int64_t next = report::period_start(*first, p);
    if (auto it = rolled.find(key); it != rolled.end()) next = std::max<int64_t>(next, std::stoll(it->second));
    // A window shipped into a period already rolled up: that period again (a new count, a new roll-up).
    if (s.late && *s.late < next) {
      s.memo->forget_from(*s.late);  // the merges it has new windows in
      next = report::period_start(*s.late, p);
      s.store->set_meta(key, std::to_string(next));  // kept even when this round's budget is spent
    }
    for (; budget > 0 && report::period_end(next, p) <= *complete; --budget) {
      const auto rollups = build_rollups(*s.store, options_.origin, p, next, s.memo.get(), &s.digests, &s.batch);
      const auto done = s.sink->ship_rollups(rollups);
      s.memo->release(p, next);  // committed: its hours' or days' merges are done with
      for (size_t i = 0; i < done.size(); ++i) {
        if (done[i] == Delivery::kUnverified) {
          spdlog::error("fleet db: the database found the {} roll-up of {} from {} on {} not to be its windows' merge; "
                        "reports read its finer periods instead",
                        to_string(p), next, rollups[i].window.slot.uuid, options_.origin.node);
          std::lock_guard lock(mu_);
          ++errors_["rollup"];
          continue;
        }
        if (done[i] == Delivery::kTooLarge) {
          spdlog::error(
              "fleet db: did not ship the {} roll-up of {} from {} on {}: its body is over the {} bytes the "
              "database stores; reports read its finer periods instead",
              to_string(p), next, rollups[i].window.slot.uuid, options_.origin.node, kMaxRollupBodyBytes);
          std::lock_guard lock(mu_);
          ++errors_["too_large"];
          continue;
        }
        if (done[i] != Delivery::kConflict) {
          std::lock_guard lock(mu_);
          ++rollups_[to_string(p)];
          continue;
        }
        spdlog::error("fleet db: refused the {} roll-up of {} from {} on {}: the database holds a different one "
                      "with the same windows (another node with this --node-name?)",
                      to_string(p), next, rollups[i].window.slot.uuid, options_.origin.node);
        std::lock_guard lock(mu_);
        ++errors_["conflict"];
      }
      next = report::period_end(next, p);
      s.store->set_meta(key, std::to_string(next));
    }
  }
  s.late.reset();
}

FleetShipper::FleetShipper(FleetShipperOptions options)
    : options_(std::move(options)), name_(redacted(options_.conninfo)) {
  for (const char* reason : kFleetErrorReasons) errors_[reason] = 0;
  for (Period p : kPeriods) rollups_[to_string(p)] = 0;
  status_.reason = "not connected yet to " + name_;
}

FleetShipper::~FleetShipper() { stop(); }

void FleetShipper::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void FleetShipper::stop() {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) stop_deadline_ = std::chrono::steady_clock::now() + options_.stop_budget;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

FleetShipper::Status FleetShipper::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

void FleetShipper::failed(const std::string& message) {
  const std::string reason = fleet_error_reason(message);
  std::lock_guard lock(mu_);
  ++errors_[reason];
  status_.up = false;
  status_.reason = fmt::format("{} ({})", message, reason);
}

bool FleetShipper::round(Session& s) {
  // The refused windows are counted in the store once a session (a scan of
  // the whole store: every round's count was 9 % of the shipper's CPU with a
  // backlog), then as this shipper refuses them: nothing else marks any.
  std::optional<int64_t> refused_in_store;
  if (!s.store) {
    // The agent that runs this shipper opened (and checked) the same file.
    s.store = std::make_unique<ledger::Store>(options_.store_path, ledger::Store::Mode::kReadWriteOneThread,
                                              ledger::Store::Check::kCheckedByOwner);
    s.outbox = std::make_unique<ledger::Outbox>(*s.store);
    s.memo = std::make_unique<RollupMemo>(*s.store, options_.origin);
    refused_in_store = s.outbox->refused_count();
  }
  size_t batch_size = options_.batch_windows;
  int64_t pending = 0;
  {
    pending = s.outbox->pending_count();
    const auto oldest = s.outbox->oldest_pending_end();
    batch_size = std::clamp(static_cast<size_t>(std::max<int64_t>(0, pending) / 4), options_.batch_windows,
                            std::max(options_.batch_windows, options_.max_batch_windows));
    std::lock_guard lock(mu_);
    status_.pending = pending;
    if (refused_in_store) status_.refused = *refused_in_store;
    status_.oldest_pending_end = oldest;
  }
  if (!s.db || !s.db->ok()) {
    s.sink.reset();
    s.db.reset();
    s.db = std::make_unique<PgConnection>(options_.conninfo, options_.password_file);
    if (options_.statement_log) s.db->log_statements(options_.statement_log);
    check_schema(*s.db);
    s.sink = std::make_unique<FleetSinkPostgres>(*s.db, options_.origin);
    spdlog::info("fleet db: shipping windows to {} as {}/{}", name_, options_.origin.cluster, options_.origin.node);
  }
  auto batch = s.outbox->next_batch(batch_size);
  // Nothing to send: still ask, so gpuledger_fleet_db_up says whether the database is there.
  if (batch.empty()) s.db->query("SELECT 1");
  std::vector<const ledger::WindowRecord*> windows;
  for (const auto& p : batch) windows.push_back(&p.window);
  std::vector<uint64_t> parts;
  const std::vector<Delivery> done = s.sink->ship(windows, &parts);  // committed when it returns
  for (size_t i = 0; i < batch.size() && i < parts.size(); ++i) s.digests.keep(batch[i].id, batch[i].window, parts[i]);
  std::vector<int64_t> shipped, refused;
  size_t too_large = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (done[i] != Delivery::kConflict && done[i] != Delivery::kTooLarge) {
      shipped.push_back(batch[i].id);
      continue;
    }
    // Refused for good, kept in the store (its local bill has it): pending,
    // it would be sent and refused every round and hold the backlog's age.
    refused.push_back(batch[i].id);
    if (done[i] == Delivery::kTooLarge) {
      ++too_large;
      spdlog::error(
          "fleet db: did not ship window {} on {} of {}/{}: it is larger than the database stores (its accounts "
          "over {} bytes, or a name over {}); kept in the store, counted as refused",
          batch[i].window.start, batch[i].window.slot.uuid, options_.origin.cluster, options_.origin.node,
          kMaxWindowBodyBytes, kMaxFieldBytes);
      continue;
    }
    spdlog::error(
        "fleet db: refused window {} on {} of {}/{}: the database holds a different window under the same key "
        "(another node with this --node-name, or a store that was replaced); left as it is, not overwritten",
        batch[i].window.start, batch[i].window.slot.uuid, options_.origin.cluster, options_.origin.node);
  }
  s.outbox->mark(shipped, ledger::Outbox::Mark::kShipped);
  s.outbox->mark(refused, ledger::Outbox::Mark::kRefused);
  for (const auto& p : batch) s.late = std::min(s.late.value_or(p.window.start), p.window.start);
  const bool more = batch.size() == batch_size;
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_;
  }
  // The periods this batch completed, with a backlog too: their windows'
  // digest parts are still kept (ShippedDigests, bounded), where a month's
  // backlog shipped whole before any roll-up had most of them hashed again
  // (~10 % of the shipper's CPU), and the hours wholly in this batch (and
  // the last one's leftovers) are merged from it (ShippedBatch), not read
  // from the store again. Not on the way out: a month's roll-ups take
  // seconds to merge, and the next agent sends them.
  const auto shipped_now = static_cast<int64_t>(batch.size());
  if (!stopping) {
    s.batch.hold(std::move(batch));
    ship_rollups(s);
  }
  // Those counted at the start less those marked (windows closed since are
  // counted at the next round's start).
  pending = std::max<int64_t>(0, pending - shipped_now);
  const auto oldest = s.outbox->oldest_pending_end();
  std::lock_guard lock(mu_);
  if (!status_.up) spdlog::info("fleet db: {} works; {} windows pending", name_, pending);
  status_.up = true;
  not_this_node_logged_ = false;
  status_.refused += static_cast<int64_t>(refused.size());
  status_.reason = "shipping to " + name_;
  if (status_.refused > 0)
    status_.reason += fmt::format(
        "; {} windows refused: the database holds others under their keys, or their bodies are too large; see the log",
        status_.refused);
  status_.shipped += shipped.size();
  status_.pending = pending;
  status_.oldest_pending_end = oldest;
  errors_["conflict"] += refused.size() - too_large;
  errors_["too_large"] += too_large;
  return more;
}

void FleetShipper::run() {
  Session s;
  auto backoff = options_.first_retry;
  for (;;) {
    std::chrono::milliseconds wait = options_.interval;
    bool more = false;
    bool stop_seen = false;  // the stop was asked before this round read the outbox
    {
      std::lock_guard lock(mu_);
      stop_seen = stopping_;
    }
    try {
      more = round(s);
      if (more) wait = std::chrono::milliseconds(0);
      backoff = options_.first_retry;
    } catch (const std::exception& e) {
      failed(e.what());
      bool quiet = false;  // a role for another node: said once, counted every time
      if (fleet_error_reason(e.what()) == "not_this_node") {
        std::lock_guard lock(mu_);
        quiet = std::exchange(not_this_node_logged_, true);
      }
      if (!quiet)
        spdlog::error("fleet db: {}; the windows stay in the store and are sent when it works; retrying in {} ms",
                      e.what(), backoff.count());
      if (fleet_error_reason(e.what()) == "store") {
        s = Session{};
      } else {
        s.sink.reset();
        s.db.reset();
      }
      wait = backoff;
      backoff = std::min(backoff * 2, options_.max_retry);
    }
    std::unique_lock lock(mu_);
    if (stopping_) {
      // A round that began before the stop may have missed the window stored
      // on the way out (the window in progress at SIGTERM): one more after it.
      if (!stop_seen) continue;
      if (!more || std::chrono::steady_clock::now() >= stop_deadline_ || wait != std::chrono::milliseconds(0)) return;
      continue;  // the backlog, until the stop's budget is spent
    }
    wake_.wait_for(lock, wait, [this] { return stopping_; });
  }
}

void FleetShipper::write_metrics(metrics::ExpositionWriter& out) const {
  Status st;
  std::map<std::string, uint64_t> errors, rollups;
  {
    std::lock_guard lock(mu_);
    st = status_;
    errors = errors_;
    rollups = rollups_;
  }
  using metrics::MetricType;
  out.family("gpuledger_fleet_db_up", MetricType::kGauge,
             "1 while the fleet database takes this node's windows, 0 while shipping fails (why: /healthz, the log)");
  out.sample({}, uint64_t{st.up ? 1u : 0u});
  out.family("gpuledger_fleet_db_pending_windows", MetricType::kGauge,
             "Closed windows in the local store not yet committed by the fleet database");
  out.sample({}, static_cast<uint64_t>(std::max<int64_t>(0, st.pending)));
  out.family("gpuledger_fleet_db_oldest_pending_window_age_seconds", MetricType::kGauge,
             "Seconds since the oldest window not yet shipped closed; 0 when none is pending");
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  out.sample({}, static_cast<uint64_t>(st.oldest_pending_end ? std::max<int64_t>(0, now - *st.oldest_pending_end) : 0));
  out.family("gpuledger_fleet_db_shipped_windows_total", MetricType::kCounter,
             "Windows the fleet database committed (or already held, identical) since the agent started");
  out.sample({}, st.shipped);
  out.family("gpuledger_fleet_db_refused_windows", MetricType::kGauge,
             "Windows in the local store the fleet database refused: it holds a different window under their key, "
             "or their bodies are over what it stores");
  out.sample({}, static_cast<uint64_t>(std::max<int64_t>(0, st.refused)));
  out.family(
      "gpuledger_fleet_db_errors_total", MetricType::kCounter,
      "Failures shipping to the fleet database by class: connect, schema, privilege, not_this_node (the role "
      "is another node's: the batch stays pending), conflict (a refused window), rollup (a roll-up the database "
      "found not to be its windows' merge), too_large (a window or roll-up over the bytes the database stores: a "
      "window is refused, a roll-up's finer periods are read), store, query");
  for (const auto& [reason, n] : errors) out.sample({{"reason", reason}}, n);
  out.family("gpuledger_fleet_db_shipped_rollups_total", MetricType::kCounter,
             "Roll-ups of complete hours, days and months (one per GPU) the fleet database committed (or already "
             "held) since the agent started; a fleet report reads them instead of the windows");
  for (const auto& [period, n] : rollups) out.sample({{"period", period}}, n);
}

}  // namespace gpuledger::fleet
