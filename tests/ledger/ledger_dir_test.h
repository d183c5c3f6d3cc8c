#pragma once
// A fresh directory per test for the ledger's store files (named after the
// suite's prefix, the pid and the test), removed afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>

namespace gpuledger::testing {

class LedgerDirTest : public ::testing::Test {
 protected:
  explicit LedgerDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string db() const { return (dir_ / "ledger.db").string(); }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace gpuledger::testing
