#pragma once
// Test support: a FleetDb test starts its own PostgreSQL (pg_server.h),
// migrates it as the owner and has a scratch folder for local stores.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet/fleet_schema.h"
#include "fleet/pg_connection.h"
#include "fleet_windows.h"
#include "ledger/store.h"
#include "pg_server.h"

namespace gpuledger::testing {

inline bool eventually(const std::function<bool()>& ok, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ok();
}

class FleetDb : public ::testing::Test {
 protected:
  void SetUp() override {
    pg_ = std::make_unique<PgServer>();
    admin_ = std::make_unique<fleet::PgConnection>(pg_->conninfo(), pg_->admin_password_file());
    ASSERT_EQ(fleet::migrate(*admin_, kFleetT0), fleet::kFleetSchemaVersion);
    char tmpl[] = "/tmp/gpuledger-fleet-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    scratch_ = tmpl;
  }
  void TearDown() override {
    admin_.reset();
    pg_.reset();
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
  }
  int64_t count(const std::string& table) { return std::stoll(pg_->psql("SELECT count(*) FROM gpuledger." + table)); }
  std::unique_ptr<PgServer> pg_;
  std::unique_ptr<fleet::PgConnection> admin_;
  std::filesystem::path scratch_;
};

inline std::vector<const ledger::WindowRecord*> pointers(const std::vector<ledger::WindowRecord>& ws) {
  std::vector<const ledger::WindowRecord*> out;
  for (const auto& w : ws) out.push_back(&w);
  return out;
}

}  // namespace gpuledger::testing
