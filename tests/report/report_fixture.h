#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../ledger/ledger_fixture.h"
#include "ledger/store.h"

namespace gpuledger::testing {

// A temporary directory with a ledger store holding the fixture's two windows.
class FixtureStore {
 public:
  explicit FixtureStore(const std::string& tag, int until = 120) {
    dir_ = std::filesystem::temp_directory_path() / ("gl_report_" + tag + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ledger::Store store(path());
    ledger::Accountant acc(store, ledger::parse_prices(kFixturePrices));
    run_fixture(acc, 0, until);
  }
  ~FixtureStore() { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "ledger.db").string(); }
  std::filesystem::path dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

// A window of one H100 ("GPU-<gpu>") held whole by one pod (namespace "ml",
// container "main") that it bills `micros` in EUR, all busy: the streamed
// exports' tests make thousands of them.
inline ledger::WindowRecord one_pod_window(int gpu, int64_t start, int64_t seconds, const std::string& pod,
                                           const std::string& team, int64_t micros) {
  ledger::WindowRecord w;
  w.start = start;
  w.end = start + seconds;
  w.slot = {"GPU-" + std::to_string(gpu), "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.currency = "EUR";
  w.observed_seconds = static_cast<double>(seconds);
  ledger::AccountRecord a;
  a.account = "k8s/" + pod;
  a.labels = {"ml", pod, "main", team};
  a.held_share = a.allocated_share = 1;
  w.accounts = {a};
  w.charges = {{a.account, ledger::ChargeKind::kBusy, micros}};
  w.cost_micros = w.busy_micros = micros;
  return w;
}

}  // namespace gpuledger::testing
