// The accountant keeps the rightsizing evidence of each window (store.h,
// AccountEvidence): the peak of the live bytes the probes saw, and of NVML's
// per-process used memory, per account and slot.
#include <gtest/gtest.h>

#include "ledger/accountant.h"
#include "ledger_dir_test.h"
#include "ledger_fixture.h"

namespace gpuledger::ledger {
namespace {

using testing::kT0;

class RightsizingEvidenceTest : public testing::LedgerDirTest {
 protected:
  RightsizingEvidenceTest() : LedgerDirTest("gl_evidence_") {}
};

TEST_F(RightsizingEvidenceTest, WindowsKeepThePeakOfLiveBytesAndNvmlMemory) {
  Store store(db());
  Accountant acc(store, parse_prices(testing::kFixturePrices));
  const GpuSlot gpu{"GPU-1", "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  // Live bytes over the first window: 1 GB, then 5 GB for 10 s, then 2 GB; NVML 1.5 GB more (the context).
  const uint64_t live[] = {1'000'000'000, 5'000'000'000, 2'000'000'000, 2'000'000'000, 2'000'000'000,
                           2'000'000'000, 2'000'000'000, 2'000'000'000, 2'000'000'000};
  for (int i = 0; i < 9; ++i) {
    Observation o;
    o.time = static_cast<double>(kT0 + 10 * i);
    o.slots = {gpu};
    o.holders = {{"GPU-1", "k8s/p", {"ml", "p", "main", "vision"}, 1}};
    WorkloadUsage w;
    w.account = "k8s/p";
    w.labels = {"ml", "p", "main", "vision"};
    w.launches = static_cast<uint64_t>(i);
    w.live_bytes = live[i];
    w.nvml_used_bytes["GPU-1"] = live[i] + 1'500'000'000;
    o.workloads = {w};
    acc.observe(o);
  }
  const auto ws = store.windows(kT0, kT0 + 60);
  ASSERT_EQ(ws.size(), 1u);
  ASSERT_EQ(ws[0].accounts.size(), 1u);
  const AccountEvidence& ev = ws[0].accounts[0].evidence;
  EXPECT_EQ(ev.vram_peak_bytes, 5'000'000'000u);
  EXPECT_EQ(ev.nvml_vram_peak_bytes, 6'500'000'000u);
  EXPECT_FALSE(ev.idle);  // a single window: derived from its columns
}

}  // namespace
}  // namespace gpuledger::ledger
