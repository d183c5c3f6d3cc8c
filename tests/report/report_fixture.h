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

}  // namespace gpuledger::testing
