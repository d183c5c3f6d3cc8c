// vram_per_gib_hour through the accountant, the store and a report, on the
// shared ledger fixture (ledger_fixture.h) with the H100s' memory known:
// 80 GiB at 3.60/h and 0.0135 per GiB-hour -> m = 0.3 on both H100s; the T4
// and the MIG instance have no memory reading -> no memory part (m = 0),
// noted in the store and the report.
//
// Per 60 s window (C = 60'000 on each H100):
//   GPU-shared: M = 18'000, compute 42'000, device busy 0.6 -> B = 25'200 split
//               3:1 (pod-a 18'900, pod-b 6'300), I = 16'800 to the holders
//               (8'400 each). Memory: pod-a held 1 GiB of 80 -> 225 (1 GiB for
//               a minute at 0.0135/GiB-h); the unheld 17'775 like idle time to
//               the holders 1:1 -> 8'888 / 8'887 (the odd unit to pod-a, by id).
//   GPU-excl:   pod-c alone: B = 42'000 x 0.75 = 31'500, I = 10'500,
//               M = 18'000 (450 for its 2 GiB, the unheld rest its too).
//   GPU-t4:     30'000 to __unallocated__, no memory part.
//   MIG-d:      25'714 then 25'715 idle to pod-d (51'428.57 rounded once), no memory part.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "ledger/accountant.h"
#include "ledger_fixture.h"
#include "report/report.h"
#include "ledger_dir_test.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using testing::kT0;
using testing::window_of;
using K = ChargeKind;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

Observation with_h100_memory(double t) {
  Observation o = testing::fixture_observation(t);
  o.device["GPU-shared"].vram_capacity_bytes = 80 * kGiB;
  o.device["GPU-excl"].vram_capacity_bytes = 80 * kGiB;
  return o;
}

class VramPriceLedger : public testing::LedgerDirTest {
 protected:
  VramPriceLedger() : LedgerDirTest("gl_vram_price_") {}
};

TEST_F(VramPriceLedger, ChargesAddUpAndUnknownMemoryIsNoted) {
  {
    Store store(db());
    Accountant acc(store, parse_prices(std::string(testing::kFixturePrices) + "vram_per_gib_hour: 0.0135\n"));
    for (int t = 0; t <= 120; t += 10) acc.observe(with_h100_memory(t));
    const auto ws = store.windows(kT0, kT0 + 120);
    ASSERT_EQ(ws.size(), 8u);
    for (const auto& w : ws) {
      int64_t sum = 0;
      for (const auto& c : w.charges) sum += c.micros;
      EXPECT_EQ(sum, w.cost_micros) << w.slot.uuid << " " << w.start;
      EXPECT_EQ(w.busy_micros + w.idle_micros + w.memory_micros, w.cost_micros) << w.slot.uuid << " " << w.start;
    }
    for (int64_t start : {kT0, kT0 + 60}) {
      const auto in = store.windows(start, start + 60);
      const WindowRecord& shared = window_of(in, "GPU-shared");
      EXPECT_EQ(shared.memory_micros, 18'000);
      EXPECT_EQ(shared.charges, (std::vector<Charge>{{"k8s/pod-a", K::kBusy, 18'900}, {"k8s/pod-a", K::kIdle, 8'400},
                                                     {"k8s/pod-a", K::kMemory, 9'113}, {"k8s/pod-b", K::kBusy, 6'300},
                                                     {"k8s/pod-b", K::kIdle, 8'400}, {"k8s/pod-b", K::kMemory, 8'887}}))
          << start;
      EXPECT_EQ(window_of(in, "GPU-excl").charges,
                (std::vector<Charge>{{"k8s/pod-c", K::kBusy, 31'500}, {"k8s/pod-c", K::kIdle, 10'500},
                                     {"k8s/pod-c", K::kMemory, 18'000}}));
      EXPECT_EQ(window_of(in, "GPU-t4").memory_micros, 0);
      EXPECT_EQ(window_of(in, "GPU-t4").charges, (std::vector<Charge>{{"__unallocated__", K::kIdle, 30'000}}));
      EXPECT_EQ(window_of(in, "MIG-d").memory_micros, 0);
      // 3/7 of 3.60/h for a minute is 25'714.29: rounded once over both windows (rate_remainder.h).
      EXPECT_EQ(window_of(in, "MIG-d").charges,
                (std::vector<Charge>{{"k8s/pod-d", K::kIdle, start == kT0 ? 25'714 : 25'715}}));
    }
    // The slots billed without a memory part, one span each over both windows.
    EXPECT_EQ(store.memory_size_unknown(kT0, kT0 + 120),
              (std::vector<Store::MemorySizeUnknown>{{"GPU-t4", kT0, kT0 + 120}, {"MIG-d", kT0, kT0 + 120}}));
    EXPECT_TRUE(store.memory_size_unknown(kT0 + 120, kT0 + 180).empty());
  }
  // A report reads them as a note (read-only, like `gpuledger report`).
  Store store(db(), Store::Mode::kReadOnly);
  const report::Report r = report::build_report(store, kT0 + 60, kT0 + 180, report::GroupBy::kTeam);
  EXPECT_EQ(r.notes, (std::vector<std::string>{
                         "No memory part (vram_per_gib_hour) was billed on 2 GPU slots while their memory size was "
                         "unknown (MIG instances, GPUs without a DCGM or NVML memory reading, time the agent was down): "
                         "the whole cost of those windows went by the cost policy. GPU-t4 from 2027-01-15 08:01 UTC to "
                         "2027-01-15 08:02 UTC; MIG-d from 2027-01-15 08:01 UTC to 2027-01-15 08:02 UTC."}));
  EXPECT_TRUE(report::build_report(store, kT0 + 120, kT0 + 180, report::GroupBy::kTeam).notes.empty());
}

// The store's spans: contiguous windows extend a span, a gap starts another,
// at most kMemorySizeUnknownSpans per slot (the oldest dropped), kept by slot.
TEST_F(VramPriceLedger, StoreKeepsSpansPerSlot) {
  Store store(db());
  store.note_memory_size_unknown({"MIG-a", "GPU-b"}, 0, 60);
  store.note_memory_size_unknown({"MIG-a"}, 60, 120);
  store.note_memory_size_unknown({"MIG-a"}, 300, 360);
  store.note_memory_size_unknown({"MIG-a"}, 300, 360);  // the same window again: no new span
  using S = Store::MemorySizeUnknown;
  EXPECT_EQ(store.memory_size_unknown(0, 1000),
            (std::vector<S>{{"GPU-b", 0, 60}, {"MIG-a", 0, 120}, {"MIG-a", 300, 360}}));
  EXPECT_EQ(store.memory_size_unknown(120, 300), std::vector<S>{});
  EXPECT_EQ(store.memory_size_unknown(100, 301), (std::vector<S>{{"MIG-a", 0, 120}, {"MIG-a", 300, 360}}));
  for (int64_t k = 0; k < 150; ++k) store.note_memory_size_unknown({"GPU-c"}, 1000 + 120 * k, 1060 + 120 * k);
  const auto c = store.memory_size_unknown(1000, 1'000'000);
  ASSERT_EQ(c.size(), Store::kMemorySizeUnknownSpans);
  EXPECT_EQ(c.front(), (S{"GPU-c", 1000 + 120 * 50, 1060 + 120 * 50}));
  EXPECT_EQ(c.back(), (S{"GPU-c", 1000 + 120 * 149, 1060 + 120 * 149}));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The agent log says each caveat once per agent start: the cap per GPU model
// (two H100s, several windows: one line), the unknown memory per slot, the
// windows of time the agent was down once for all slots.
TEST_F(VramPriceLedger, LogsEachCaveatOnce) {
  std::ostringstream log;
  // The default logger writes to `log` too, for this test only.
  struct Capture {
    std::shared_ptr<spdlog::sinks::sink> sink;
    explicit Capture(std::ostream& to) : sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(to)) {
      spdlog::default_logger()->sinks().push_back(sink);
    }
    ~Capture() {
      auto& sinks = spdlog::default_logger()->sinks();
      sinks.erase(std::find(sinks.begin(), sinks.end(), sink));
    }
  };
  {
    Capture capture(log);
    Store store(db());
    const std::string prices = std::string(testing::kFixturePrices) + "vram_per_gib_hour: 0.05\n";  // 4.00 > 3.60
    {
      Accountant acc(store, parse_prices(prices));
      for (int t = 0; t <= 120; t += 10) acc.observe(with_h100_memory(t));
      EXPECT_EQ(window_of(store.windows(kT0, kT0 + 60), "GPU-excl").memory_micros, 60'000);
    }
    Accountant restarted(store, parse_prices(prices));  // down from 120 to 300: three backfilled windows
    for (int t = 300; t <= 360; t += 10) restarted.observe(with_h100_memory(t));
    EXPECT_EQ(window_of(store.windows(kT0 + 120, kT0 + 180), "GPU-excl").memory_micros, 0);
    EXPECT_EQ(window_of(store.windows(kT0 + 300, kT0 + 360), "GPU-excl").memory_micros, 60'000);
  }
  const std::string text = log.str();
  // Once per accountant (each agent start says it again).
  EXPECT_EQ(count(text, "vram_per_gib_hour x the memory of NVIDIA H100 80GB HBM3 (80.00 GiB, GPU GPU-excl) is more "
                        "than its price per hour"),
            2u)
      << text;
  EXPECT_EQ(count(text, "the memory size of GPU GPU-t4 (Tesla T4) is unknown (no DCGM or NVML memory reading in the "
                        "window)"),
            2u)
      << text;
  EXPECT_EQ(count(text, "the memory size of MIG slot MIG-d (NVIDIA H100 80GB HBM3) is unknown (the ledger has no "
                        "memory reading per MIG instance)"),
            2u)
      << text;
  EXPECT_EQ(count(text, "the windows written for the time the agent was down have no memory reading"), 1u) << text;
  EXPECT_EQ(count(text, "memory size of GPU GPU-excl"), 0u) << text;
}

// With memory_price_share (no VRAM price) nothing is noted, as before.
TEST_F(VramPriceLedger, MemoryPriceShareNotesNothing) {
  Store store(db());
  Accountant acc(store, parse_prices(std::string(testing::kFixturePrices) + "memory_price_share: 0.3\n"));
  for (int t = 0; t <= 60; t += 10) acc.observe(with_h100_memory(t));
  EXPECT_EQ(window_of(store.windows(kT0, kT0 + 60), "GPU-t4").memory_micros, 9'000);
  EXPECT_TRUE(store.memory_size_unknown(0, kT0 + 120).empty());
}

}  // namespace
}  // namespace gpuledger::ledger
