#include "ledger/ledger_plane.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "common/error.h"
#include "common/log.h"
#include "ledger/bill_inputs.h"
#include "ledger/store.h"

namespace gpuledger::ledger {

std::string ledger_error_reason(const std::string& message) {
  auto has = [&](const char* text) { return message.find(text) != std::string::npos; };
  if (has("is full") || has("No space left on device") || has("Disk quota exceeded")) return "full";
  if (has("readonly") || has("read-only") || has("Read-only") || has("Permission denied") ||
      has("Operation not permitted"))
    return "read_only";
  if (has("corrupt") || has("not a database") || has("not a usable SQLite") || has("not a gpuledger") ||
      has("is newer than"))
    return "corrupt";
  if (has("database is locked") || has("busy") || has("in use by another process")) return "busy";
  return "other";
}

struct LedgerPlane::Open {
  Open(const LedgerPlaneOptions& options) : store(options.store_path), accountant(store, options.prices) {
    accountant.retire_series_after(std::chrono::duration<double>(options.retire_series_after).count());
    accountant.set_device_checks(options.device_checks);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    record_bill_inputs(store, options.node, options.cluster, options.prices,
                       std::chrono::duration_cast<std::chrono::seconds>(now).count());
  }
  Store store;
  Accountant accountant;
};

LedgerPlane::LedgerPlane(LedgerPlaneOptions options, Clock::time_point now)
    : options_(std::move(options)), backoff_(options_.first_retry) {
  for (const char* reason : kLedgerErrorReasons) errors_[reason] = 0;
  try_open(now);  // LockHeld goes to the caller: a second agent on this store must not start
}

LedgerPlane::~LedgerPlane() = default;

void LedgerPlane::try_open(Clock::time_point now) {
  try {
    if (!lock_) {
      auto dir = std::filesystem::path(options_.store_path).parent_path();
      if (!dir.empty()) std::filesystem::create_directories(dir);
      lock_ = std::make_unique<FileLock>(options_.store_path + ".lock", "the ledger store " + options_.store_path);
    }
    auto open = std::make_shared<Open>(options_);
    open->accountant.set_counter_set(counter_set_);
    std::lock_guard lock(mu_);
    open_ = std::move(open);
    if (!failed_writing_) recovered_locked();
  } catch (const LockHeld& e) {
    if (!lock_ && next_attempt_ == Clock::time_point{}) throw;  // at start: refuse, as before
    degrade(e.what(), now);
  } catch (const std::exception& e) {  // Error, std::filesystem::filesystem_error
    degrade(e.what(), now);
  }
}

void LedgerPlane::recovered_locked() {
  if (!last_error_.empty()) spdlog::info("ledger: the store {} works again", options_.store_path);
  last_error_.clear();
  failed_writing_ = false;
  backoff_ = options_.first_retry;
}

void LedgerPlane::degrade(const std::string& message, Clock::time_point now, bool writing) {
  const std::string reason = ledger_error_reason(message);
  std::shared_ptr<Open> dropped;
  {
    std::lock_guard lock(mu_);
    dropped = std::move(open_);
    ++errors_[reason];
    last_error_ = message;
    failed_writing_ = failed_writing_ || writing;
    next_attempt_ = now + backoff_;
  }
  spdlog::error("ledger degraded ({}): {}; attribution and /metrics go on; retrying in {} ms", reason, message,
                backoff_.count());
  backoff_ = std::min(backoff_ * 2, options_.max_retry);
}

void LedgerPlane::observe(const Observation& obs, Clock::time_point now) {
  std::shared_ptr<Open> open;
  {
    std::lock_guard lock(mu_);
    open = open_;
  }
  if (!open) {
    if (now < next_attempt_) return;
    try_open(now);
    std::lock_guard lock(mu_);
    open = open_;
    if (!open) return;
  }
  try {
    open->accountant.observe(obs);
  } catch (const std::exception& e) {
    degrade(e.what(), now, true);  // the accountant restarts from the store when it opens again
    return;
  }
  std::lock_guard lock(mu_);
  if (failed_writing_ && open->accountant.windows_written() > 0) recovered_locked();
}

void LedgerPlane::set_counter_set(const std::string& id) {
  std::lock_guard lock(mu_);
  counter_set_ = id;
  if (open_) open_->accountant.set_counter_set(id);
}

void LedgerPlane::store_window_in_progress() {
  std::shared_ptr<Open> open;
  {
    std::lock_guard lock(mu_);
    open = open_;
  }
  if (!open) return;
  try {
    open->accountant.store_window_in_progress();
    spdlog::info("ledger: stored the window in progress");
  } catch (const std::exception& e) {
    spdlog::error("ledger: the window in progress could not be stored: {}", e.what());
  }
}

bool LedgerPlane::up_locked() const { return open_ && !failed_writing_; }

LedgerPlane::Status LedgerPlane::status(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  if (up_locked()) return {true, ""};
  if (open_)
    return {false, fmt::format("{} ({}; the store opened again, up once a window is written to it)", last_error_,
                               ledger_error_reason(last_error_))};
  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_attempt_ - now).count();
  return {false, fmt::format("{} ({}; retrying in {:.1f} s)", last_error_, ledger_error_reason(last_error_),
                             static_cast<double>(std::max<int64_t>(0, wait)) / 1000.0)};
}

void LedgerPlane::write_metrics(metrics::ExpositionWriter& out) const {
  std::shared_ptr<Open> open;
  std::map<std::string, uint64_t> errors;
  bool up = false;
  {
    std::lock_guard lock(mu_);
    open = open_;
    errors = errors_;
    up = up_locked();
  }
  if (open) open->accountant.write_metrics(out);
  out.family("gpuledger_ledger_up", metrics::MetricType::kGauge,
             "1 while the ledger store can be written, 0 while the ledger is degraded (the reason is in /healthz and "
             "the log; attribution goes on)");
  out.sample({}, uint64_t{up ? 1u : 0u});
  out.family("gpuledger_ledger_errors_total", metrics::MetricType::kCounter,
             "Failures of the ledger store (opening or writing) by class: full, read_only, corrupt, busy, other");
  for (const auto& [reason, n] : errors) out.sample({{"reason", reason}}, n);
}

}  // namespace gpuledger::ledger
