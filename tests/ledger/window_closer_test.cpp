// The window closer alone (window_closer.h): a window written once with
// charges that add up to its cost, and a suspect device reading stored as
// unknown.
#include "ledger/window_closer.h"

#include <gtest/gtest.h>

#include "ledger_dir_test.h"

namespace gpuledger::ledger {
namespace {

constexpr int64_t kStart = 1'800'000'000;  // aligned to 60 s
const GpuSlot kGpu{"GPU-0", "NVIDIA H100 80GB HBM3", std::nullopt, ""};

class WindowCloserTest : public testing::LedgerDirTest {
 protected:
  WindowCloserTest() : LedgerDirTest("gl_closer_") {}
  void SetUp() override {
    LedgerDirTest::SetUp();
    store_ = std::make_unique<Store>(db());
    closer_ = std::make_unique<WindowCloser>(*store_, prices_, metrics_);
  }
  // `busy` for the whole window, `sm_active` beside it; `a` holds the GPU, with `spans` busy seconds.
  void integrate(double busy, double sm_active, double spans) {
    Observation o;
    o.slots = inventory_;
    DeviceSample d;
    d.busy_fraction = busy;
    d.efficiency.sm_active = sm_active;
    o.device["GPU-0"] = d;
    slots_.integrate(o, kStart, kStart + 60, {});
    slots_.activity("GPU-0", "a").busy_seconds = spans;
  }
  void close(const std::string& source = "live") {
    closer_->close({kStart, kStart + 60, 60, source}, {inventory_, holders_, true, labels_, {}}, slots_);
  }

  PriceBook prices_ = parse_prices("currency: USD\nper_model:\n  \"H100\": 3.60\nwindow_seconds: 60\n");
  LedgerMetrics metrics_{"USD"};
  SlotIntegrator slots_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<WindowCloser> closer_;
  std::vector<GpuSlot> inventory_{kGpu};
  std::vector<HolderEntry> holders_{{"GPU-0", "a", {"ml", "pod-a", "main", "vision"}, 1}};
  std::map<std::string, AccountLabels> labels_{{"a", {"ml", "pod-a", "main", "vision"}}};
};

// 3.60/h for 60 s: 60'000 micro-units; busy 0.5 of it to the holder's busy, the rest its idle.
TEST_F(WindowCloserTest, AWindowIsWrittenOnceAndItsChargesAddUp) {
  integrate(0.5, 0.4, 30);
  close();
  close();  // the store has it: not written or counted again
  const std::vector<WindowRecord> ws = store_->windows(kStart, kStart + 60);
  ASSERT_EQ(ws.size(), 1u);
  const WindowRecord& w = ws[0];
  EXPECT_EQ(w.source, "live");
  EXPECT_EQ(w.cost_micros, 60'000);
  EXPECT_EQ(w.busy_micros, 30'000);
  EXPECT_EQ(w.idle_micros, 30'000);
  int64_t sum = 0;
  for (const auto& c : w.charges) {
    EXPECT_EQ(c.account, "a");
    sum += c.micros;
  }
  EXPECT_EQ(sum, 60'000);
  ASSERT_EQ(w.accounts.size(), 1u);
  EXPECT_EQ(w.accounts[0].labels.team, "vision");
  EXPECT_EQ(w.device.sm_active, 0.4);
  EXPECT_EQ(w.device_quality.ok, 1);
  EXPECT_EQ(metrics_.windows_written(), 1u);
}

// SM active reads 0 while the GPU is 90 % busy and the spans cover 40 s of
// 60: the reading is suspect, stored as unknown (never 0 %); the busy fraction stays.
TEST_F(WindowCloserTest, ASuspectDeviceReadingIsStoredAsUnknown) {
  integrate(0.9, 0.0, 40);
  close();
  const std::vector<WindowRecord> ws = store_->windows(kStart, kStart + 60);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].device.sm_active, std::nullopt);
  EXPECT_EQ(ws[0].device_quality.suspect, 1);
  EXPECT_EQ(ws[0].device_findings, (std::map<std::string, int64_t>{{"sm_active:zero_while_busy", 1}}));
  EXPECT_DOUBLE_EQ(ws[0].busy_fraction, 0.9);
  EXPECT_EQ(ws[0].busy_micros, 54'000);
}

// Without an allocation source the users hold the slot, in equal parts.
TEST_F(WindowCloserTest, WithoutAllocationTheUsersHoldTheSlot) {
  integrate(0.5, 0.4, 30);
  slots_.activity("GPU-0", "b").launches = 3;
  closer_->close({kStart, kStart + 60, 60, "live"}, {inventory_, holders_, false, labels_, {}}, slots_);
  const std::vector<WindowRecord> ws = store_->windows(kStart, kStart + 60);
  ASSERT_EQ(ws.size(), 1u);
  ASSERT_EQ(ws[0].accounts.size(), 2u);
  EXPECT_EQ(ws[0].accounts[0].account, "a");
  EXPECT_EQ(ws[0].accounts[0].held_share, 0.5);
  EXPECT_EQ(ws[0].accounts[1].account, "b");
  EXPECT_EQ(ws[0].accounts[1].held_share, 0.5);
  EXPECT_EQ(labels_.at("b"), AccountLabels{});  // named as seen: none
}

}  // namespace
}  // namespace gpuledger::ledger
