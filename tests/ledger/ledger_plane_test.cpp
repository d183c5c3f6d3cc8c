#include "ledger/ledger_plane.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ledger_dir_test.h"
#include "ledger_fixture.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class LedgerPlaneTest : public testing::LedgerDirTest {
 protected:
  LedgerPlaneTest() : LedgerDirTest("gl_plane_") {}
  LedgerPlaneOptions options() const {
    return {(dir_ / "ledger.db").string(), parse_prices(testing::kFixturePrices), 1000ms, 4000ms};
  }
  std::string metrics(const LedgerPlane& plane) const {
    metrics::ExpositionWriter out;
    plane.write_metrics(out);
    return out.text();
  }
};

TEST(LedgerErrorReason, ClassesOfStoreFailures) {
  EXPECT_EQ(ledger_error_reason("ledger store x: database or disk is full"), "full");
  EXPECT_EQ(ledger_error_reason("filesystem error: cannot create directories: No space left on device"), "full");
  EXPECT_EQ(ledger_error_reason("ledger store x: attempt to write a readonly database"), "read_only");
  EXPECT_EQ(ledger_error_reason("cannot open lock file x.lock: Read-only file system"), "read_only");
  EXPECT_EQ(ledger_error_reason("ledger store x: corrupt (quick_check: ...); move it aside"), "corrupt");
  EXPECT_EQ(ledger_error_reason("ledger store x: file is not a database"), "corrupt");
  EXPECT_EQ(ledger_error_reason("ledger store x: database is locked"), "busy");
  EXPECT_EQ(ledger_error_reason("ledger store x: disk I/O error"), "other");
}

// Issue 10: a corrupt store exited the agent. Now the ledger is degraded, says
// why, retries with backoff and comes back once the store is usable.
TEST_F(LedgerPlaneTest, ACorruptStoreDegradesAndRecovers) {
  std::ofstream(dir_ / "ledger.db") << std::string(8192, 'x');
  const auto t0 = LedgerPlane::Clock::time_point{} + 1000s;
  LedgerPlane plane(options(), t0);
  auto s = plane.status(t0);
  EXPECT_FALSE(s.up);
  EXPECT_NE(s.reason.find("not a usable SQLite database"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("(corrupt; retrying in 1.0 s)"), std::string::npos) << s.reason;
  std::string page = metrics(plane);
  EXPECT_NE(page.find("\ngpuledger_ledger_up 0\n"), std::string::npos) << page;
  EXPECT_NE(page.find("\ngpuledger_ledger_errors_total{reason=\"corrupt\"} 1\n"), std::string::npos) << page;

  plane.observe(testing::fixture_observation(0), t0 + 500ms);  // backoff not over: not retried
  EXPECT_NE(metrics(plane).find("{reason=\"corrupt\"} 1\n"), std::string::npos);
  plane.observe(testing::fixture_observation(0), t0 + 1s);  // retried, still corrupt: backoff doubles
  EXPECT_NE(metrics(plane).find("{reason=\"corrupt\"} 2\n"), std::string::npos);
  EXPECT_NE(plane.status(t0 + 1s).reason.find("retrying in 2.0 s"), std::string::npos);

  fs::remove(dir_ / "ledger.db");  // an operator moved it aside
  plane.observe(testing::fixture_observation(10), t0 + 3s);
  EXPECT_TRUE(plane.status(t0 + 3s).up);
  page = metrics(plane);
  EXPECT_NE(page.find("\ngpuledger_ledger_up 1\n"), std::string::npos) << page;
  EXPECT_NE(page.find("gpuledger_ledger_info{currency=\"USD\"} 1"), std::string::npos) << page;
  for (int t = 20; t <= 60; t += 10) plane.observe(testing::fixture_observation(t), t0 + 3s);
  EXPECT_NE(metrics(plane).find("\ngpuledger_ledger_windows_total 4\n"), std::string::npos) << metrics(plane);
}

// Another agent on the same store is refused, not waited for.
TEST_F(LedgerPlaneTest, AStoreLockedByAnotherAgentIsRefused) {
  FileLock other((dir_ / "ledger.db.lock").string(), "the ledger store");
  EXPECT_THROW(LedgerPlane plane(options()), LockHeld);
}

}  // namespace
}  // namespace gpuledger::ledger
