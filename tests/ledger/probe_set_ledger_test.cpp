// Issue 28: the ledger and the reports under the billing probe set. Windows
// observed under billing are noted in the store; their holders' idleness comes
// from NVML's per-process samples, not from the launches nobody probed; a
// report over them shows launches as "not probed (probe set billing)" (or says
// when, for a range that ran under it in part) and rightsize names where its
// idle runs came from.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ledger/accountant.h"
#include "ledger/window_evidence.h"
#include "ledger_dir_test.h"
#include "ledger_fixture.h"
#include "report/bill.h"
#include "report/report.h"
#include "report/rightsizing.h"
#include "report/rightsizing_render.h"

namespace gpuledger::ledger {
namespace {

using testing::kT0;
const GpuSlot kGpu{"GPU-1", "NVIDIA H100 80GB HBM3", std::nullopt, ""};

// Two pods holding one H100 time-sliced: `busy` samples SM time (NVML), `idle`
// none; under billing neither has a launch counted.
Observation at(double t, bool probed) {
  Observation o;
  o.time = static_cast<double>(kT0) + t;
  o.slots = {kGpu};
  o.holders = {{"GPU-1", "k8s/busy", {"ml", "busy", "main", "vision"}, 1},
               {"GPU-1", "k8s/idle", {"ml", "idle", "main", "vision"}, 1}};
  WorkloadUsage busy, idle;
  busy.account = "k8s/busy";
  busy.labels = {"ml", "busy", "main", "vision"};
  idle.account = "k8s/idle";
  idle.labels = {"ml", "idle", "main", "vision"};
  if (probed) busy.launches = static_cast<uint64_t>(10 * t);
  o.workloads = {busy, idle};
  o.process_sm = {{"GPU-1", 4242, "k8s/busy", 0.5 * t, "0"}};
  DeviceSample d;
  d.busy_fraction = 0.5;
  o.device["GPU-1"] = d;
  o.hot_path_probed = probed;
  return o;
}

class ProbeSetLedger : public testing::LedgerDirTest {
 protected:
  ProbeSetLedger() : LedgerDirTest("gl_probe_set_ledger_") {}
  // Windows [kT0, kT0 + 60) and [kT0 + 60, kT0 + 120), each observed as `probed` says.
  void run(bool first_probed, bool second_probed) {
    Store store(db());
    Accountant acc(store, parse_prices(testing::kFixturePrices));
    for (int t = 0; t <= 120; t += 10) acc.observe(at(t, t <= 60 ? first_probed : second_probed));
  }
};

const AccountRecord& account(const WindowRecord& w, const std::string& id) {
  for (const auto& a : w.accounts)
    if (a.account == id) return a;
  throw std::runtime_error("no " + id);
}

TEST_F(ProbeSetLedger, UnderBillingIdlenessIsNvmlsAndTheWindowsAreNoted) {
  run(false, false);
  Store store(db(), Store::Mode::kReadOnly);
  const auto ws = store.windows(kT0, kT0 + 120);
  ASSERT_EQ(ws.size(), 2u);
  for (const auto& w : ws) {
    EXPECT_EQ(w.split_source, "nvml");
    // No launch was probed: the pod NVML sampled is not idle, the other is.
    EXPECT_EQ(idle_run(account(w, "k8s/busy"), 60), (IdleRun{0, 0, 0}));
    EXPECT_EQ(idle_run(account(w, "k8s/idle"), 60), (IdleRun{60, 60, 60}));
  }
  EXPECT_EQ(store.hot_path_not_probed(kT0, kT0 + 120), (std::vector<std::pair<int64_t, int64_t>>{{kT0, kT0 + 120}}));

  // The report: launches not probed, said so in every format.
  const report::Report r = report::build_report(store, kT0, kT0 + 120, report::GroupBy::kPod);
  EXPECT_TRUE(r.launches_not_probed);
  const auto j = nlohmann::json::parse(report::render_json(r));
  EXPECT_EQ(j["launches_not_probed"], "not probed (probe set billing)");
  EXPECT_TRUE(j["total"]["launches"].is_null());
  for (const auto& row : j["rows"]) EXPECT_TRUE(row["launches"].is_null()) << row.dump();
  EXPECT_NE(report::render_table(r, true).find("not probed (probe set billing)"), std::string::npos);
  EXPECT_NE(report::render_html(r).find("<td>not probed (probe set billing)</td>"), std::string::npos);
  EXPECT_NE(report::render_csv(r, false).find(",,"), std::string::npos);  // the launches cell: empty, as unknowns are

  // Rightsizing: idle runs from NVML's samples, labelled.
  const report::Rightsizing rs = report::rightsize(store, kT0, kT0 + 120, report::GroupBy::kPod, {});
  EXPECT_EQ(rs.idle_source, "nvml");
  const auto rj = report::rightsizing_json(rs);
  EXPECT_EQ(rj["idle_source"], "nvml");
  EXPECT_EQ(rj["launches_not_probed"], "not probed (probe set billing)");
  for (const auto& row : rj["rows"]) EXPECT_TRUE(row["evidence"]["launches"].is_null());
  EXPECT_NE(report::render_rightsizing_table(rs).find("idle runs from NVML's per-process samples"), std::string::npos);
}

TEST_F(ProbeSetLedger, AFullRangeSaysNothingNewAndAMixedOneSaysWhen) {
  run(true, true);
  {
    Store store(db(), Store::Mode::kReadOnly);
    EXPECT_TRUE(store.hot_path_not_probed(kT0, kT0 + 120).empty());
    const auto ws = store.windows(kT0, kT0 + 60);
    EXPECT_FALSE(account(ws[0], "k8s/busy").evidence.idle) << "derived from launches, as before";
    const report::Report r = report::build_report(store, kT0, kT0 + 120, report::GroupBy::kPod);
    EXPECT_FALSE(r.launches_not_probed);
    for (const auto& note : r.notes) EXPECT_EQ(note.find("not probed"), std::string::npos) << note;
    const auto rj = report::rightsizing_json(report::rightsize(store, kT0, kT0 + 120, report::GroupBy::kPod, {}));
    EXPECT_FALSE(rj.contains("idle_source")) << "launches, as before";
  }
  std::filesystem::remove(db());
  run(true, false);  // the second window under billing
  Store store(db(), Store::Mode::kReadOnly);
  const report::Report r = report::build_report(store, kT0, kT0 + 120, report::GroupBy::kPod);
  EXPECT_FALSE(r.launches_not_probed);
  bool said = false;
  for (const auto& note : r.notes)
    said = said || note == "Launches were not probed (probe set billing) from 2027-01-15 08:01 UTC to 2027-01-15 "
                           "08:02 UTC: the launch counts shown cover the rest of the range only.";
  EXPECT_TRUE(said) << nlohmann::json(r.notes).dump();
  EXPECT_EQ(report::rightsize(store, kT0, kT0 + 120, report::GroupBy::kPod, {}).idle_source, "mixed");
}

}  // namespace
}  // namespace gpuledger::ledger
