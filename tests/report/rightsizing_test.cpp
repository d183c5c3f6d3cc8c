// Rightsizing on scenarios with known answers (report/rightsizing.h): every
// figure below is worked out by hand from the windows the test writes.
#include "report/rightsizing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/report.h"
#include "report/rightsizing_config.h"
#include "report/rightsizing_render.h"

namespace gpuledger::report {
namespace {

using ledger::AccountRecord;
using ledger::ChargeKind;
using ledger::WindowRecord;

constexpr int64_t kT0 = 1'800'000'000;  // on the hour
const char* kH100 = "NVIDIA H100 80GB HBM3";

struct Use {
  std::string pod;
  double held = 1;              // held (and allocated) share
  double activity_share = 1;
  uint64_t launches = 100;
  double busy_seconds = 6;
  std::optional<double> sm_active = 0.10;
  std::optional<uint64_t> vram_peak = 6'000'000'000;
  int64_t paid = 0;  // its charges (the test splits the window's cost)
  std::optional<double> dram_active = std::nullopt, tensor_active = std::nullopt;
};

// One window of `len` seconds on `uuid`, costing `cost`; its users pay their `paid`.
WindowRecord window(int64_t start, int64_t len, const std::string& uuid, const std::string& model, int64_t cost,
                    const std::vector<Use>& uses) {
  WindowRecord w;
  w.start = start;
  w.end = start + len;
  w.slot = {uuid, model, std::nullopt, ""};
  w.cost_micros = cost;
  w.idle_micros = cost;
  w.busy_source = "device";
  w.exclusive = uses.size() == 1;
  w.observed_seconds = static_cast<double>(len);
  w.device.sm_active = uses.front().sm_active;
  for (const auto& u : uses) {
    AccountRecord a;
    a.account = "k8s/ml/" + u.pod;
    a.labels = {"ml", u.pod, "main", "vision"};
    a.held_share = u.held;
    a.allocated_share = u.held;
    w.allocated_total += u.held;
    a.activity_share = u.activity_share;
    a.launches = u.launches;
    a.busy_seconds = u.busy_seconds;
    a.gpu_busy_seconds = u.busy_seconds;
    a.efficiency.sm_active = u.sm_active;
    a.efficiency.dram_active = u.dram_active;
    a.efficiency.tensor_active = u.tensor_active;
    a.evidence.vram_peak_bytes = u.vram_peak;
    w.accounts.push_back(a);
    w.charges.push_back({a.account, ChargeKind::kIdle, uses.size() == 1 ? cost : u.paid});
  }
  return w;
}

// An hour of minute windows on one H100, each costing 70,000 micro-units (4.20 an hour).
std::vector<WindowRecord> hour_of(const Use& use, const std::string& model = kH100) {
  std::vector<WindowRecord> ws;
  for (int i = 0; i < 60; ++i) ws.push_back(window(kT0 + 60 * i, 60, "GPU-1", model, 70'000, {use}));
  return ws;
}

// The decision alone, on however little evidence: most scenarios here are an
// hour, below the default min_evidence (24 h), which would state no saving.
RightsizingOptions any_evidence() {
  RightsizingOptions o;
  o.min_evidence_seconds = 0;
  return o;
}

Rightsizing by_pod(const std::vector<WindowRecord>& ws, const RightsizingOptions& o = any_evidence()) {
  return rightsize(ws, kT0, kT0 + 7 * 86400, GroupBy::kPod, o);
}

// A month is 730 h: an hour's saving x 730.
TEST(Rightsizing, SmallInferenceServerOnAWholeH100FitsOneSlice) {
  const Rightsizing r = by_pod(hour_of(Use{"infer"}));
  ASSERT_EQ(r.rows.size(), 1u);
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.key, "ml/infer");
  EXPECT_EQ(row.advice, Advice::kMig);
  EXPECT_EQ(row.target, "1g.10gb");
  EXPECT_FALSE(row.limited);
  EXPECT_EQ(r.period_seconds, 3600);
  // Paid 4.20; a 1g.10gb costs 1/7 of it, 0.60: saves 3.60 an hour.
  EXPECT_EQ(row.saving_per_month_micros, int64_t{3'600'000} * 730);
  EXPECT_EQ(row.evidence.vram_peak_bytes, 6'000'000'000u);
  EXPECT_EQ(row.evidence.vram_p95_bytes, 6'000'000'000u);
  EXPECT_DOUBLE_EQ(*row.evidence.sm_active_p95, 0.10);
  EXPECT_EQ(row.evidence.sm_source, "device");
  EXPECT_DOUBLE_EQ(row.evidence.busy_share, 0.1);
  EXPECT_EQ(row.evidence.windows, 60);
  EXPECT_EQ(row.evidence.idle_seconds_longest, 0);
  EXPECT_EQ(row.evidence.sources, (std::vector<std::string>{"probes", "device"}));
}

TEST(Rightsizing, VramPeaksThatJustFitAndJustMissAProfile) {
  // 8,333,333,333 x 1.2 = 9,999,999,999.6 <= 10 GB; one byte more is 10,000,000,000.8.
  Use fit{"fit"};
  fit.vram_peak = 8'333'333'333;
  Rightsizing r = by_pod(hour_of(fit));
  EXPECT_EQ(r.rows[0].target, "1g.10gb");
  Use miss{"miss"};
  miss.vram_peak = 8'333'333'334;
  r = by_pod(hour_of(miss));
  EXPECT_EQ(r.rows[0].target, "1g.20gb");  // the same compute: the same saving
  EXPECT_EQ(r.rows[0].saving_per_month_micros, int64_t{3'600'000} * 730);
  // 0.142 of the SM fits one slice (1/7 = 0.142857...); 1/7 itself is kept as
  // 0.143 (a range's p95 is kept to 0.001, rounded up), and that needs two, as
  // does 0.15 (2g.20gb: 4.20 - 1.20 an hour).
  Use compute{"compute"};
  compute.sm_active = 0.142;
  EXPECT_EQ(by_pod(hour_of(compute)).rows[0].target, "1g.10gb");
  compute.sm_active = 1.0 / 7;
  EXPECT_EQ(by_pod(hour_of(compute)).rows[0].target, "2g.20gb");
  compute.sm_active = 0.15;
  r = by_pod(hour_of(compute));
  EXPECT_EQ(r.rows[0].target, "2g.20gb");
  EXPECT_EQ(r.rows[0].saving_per_month_micros, int64_t{3'000'000} * 730);
  // No headroom: 9,999,999,999 fits 1g.10gb again.
  Use tight{"tight"};
  tight.vram_peak = 9'999'999'999;
  RightsizingOptions none = any_evidence();
  none.vram_headroom_micros = 0;
  EXPECT_EQ(by_pod(hour_of(tight), none).rows[0].target, "1g.10gb");
  EXPECT_EQ(by_pod(hour_of(tight)).rows[0].target, "1g.20gb");
}

TEST(Rightsizing, NotebookIdleForTwoDaysIsReleased) {
  Use idle{"notebook"};
  idle.launches = 0;
  idle.busy_seconds = 0;
  idle.sm_active = 0.0;
  idle.vram_peak = 2'000'000'000;
  std::vector<WindowRecord> ws;
  for (int h = 0; h < 48; ++h) ws.push_back(window(kT0 + 3600 * h, 3600, "GPU-1", kH100, 4'200'000, {idle}));
  const Rightsizing r = by_pod(ws);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].advice, Advice::kRelease);
  EXPECT_EQ(r.rows[0].target, "");
  EXPECT_FALSE(r.rows[0].limited);
  EXPECT_EQ(r.rows[0].evidence.idle_seconds_longest, 2 * 86400);
  // All of its 201.60 in 48 h was idle: 201.60 x 730 / 48 a month.
  EXPECT_EQ(r.rows[0].saving_per_month_micros, 3'066'000'000);
  // Idle for less than idle_after: not released (it would fit a slice instead).
  RightsizingOptions three_days = any_evidence();
  three_days.idle_after_seconds = 3 * 86400;
  EXPECT_EQ(by_pod(ws, three_days).rows[0].advice, Advice::kMig);
  // A launch in the middle cuts the run in two days of 24 h: not longer than 24 h.
  ws[24].accounts[0].launches = 1;
  EXPECT_EQ(by_pod(ws).rows[0].evidence.idle_seconds_longest, 24 * 3600);
  EXPECT_NE(by_pod(ws).rows[0].advice, Advice::kRelease);
}

TEST(Rightsizing, TrainerAtNinetyPercentSmKeepsItsGpu) {
  Use trainer{"trainer"};
  trainer.sm_active = 0.90;
  trainer.busy_seconds = 58;
  trainer.vram_peak = 70'000'000'000;
  const Rightsizing r = by_pod(hour_of(trainer));
  EXPECT_EQ(r.rows[0].advice, Advice::kKeep);
  EXPECT_EQ(r.rows[0].saving_per_month_micros, 0);
  EXPECT_FALSE(r.rows[0].limited);
  trainer.sm_active = 0.97;  // saturated
  EXPECT_EQ(by_pod(hour_of(trainer)).rows[0].advice, Advice::kMore);
}

TEST(Rightsizing, SharerUsingTwiceItsShareNeedsMore) {
  // A time-sliced A10 (no MIG): a holds a quarter and does half the work.
  std::vector<WindowRecord> ws;
  Use a{"a", 0.25, 0.5, 100, 20};
  a.paid = 35'000;
  Use b{"b", 0.75, 0.5, 100, 20};
  b.paid = 35'000;
  for (int i = 0; i < 60; ++i) ws.push_back(window(kT0 + 60 * i, 60, "GPU-9", "NVIDIA A10", 70'000, {a, b}));
  const Rightsizing r = by_pod(ws);
  ASSERT_EQ(r.rows.size(), 2u);
  const Recommendation& ra = r.rows[0].key == "ml/a" ? r.rows[0] : r.rows[1];
  EXPECT_EQ(ra.advice, Advice::kMore);
  EXPECT_EQ(ra.saving_per_month_micros, 0);
  EXPECT_NE(ra.why.find("used 0.50 of its GPU's activity with 0.25 allocated"), std::string::npos) << ra.why;
}

TEST(Rightsizing, TimeSliceShareOnAGpuWithoutMig) {
  Use light{"light"};
  light.busy_seconds = 12;  // busy a fifth of the time: 1/4 covers it
  const Rightsizing r = by_pod(hour_of(light, "NVIDIA L4"));
  EXPECT_EQ(r.rows[0].advice, Advice::kTimeSlice);
  EXPECT_EQ(r.rows[0].target, "1/4");
  EXPECT_EQ(r.rows[0].saving_per_month_micros, int64_t{4'200'000 - 1'050'000} * 730);
}

TEST(Rightsizing, NoDeviceCountersIsLimitedAndStatesNoSaving) {
  Use blind{"blind"};
  blind.sm_active = std::nullopt;
  auto ws = hour_of(blind);
  for (auto& w : ws) w.busy_source = "spans";
  const Rightsizing r = by_pod(ws);
  EXPECT_EQ(r.rows[0].advice, Advice::kMig);  // the eBPF estimate (6 s of 60) still fits one slice
  EXPECT_EQ(r.rows[0].target, "1g.10gb");
  EXPECT_TRUE(r.rows[0].limited);
  EXPECT_EQ(r.rows[0].saving_per_month_micros, std::nullopt);
  EXPECT_EQ(r.rows[0].evidence.sm_source, "ebpf");
  EXPECT_DOUBLE_EQ(*r.rows[0].evidence.sm_active_p95, 0.1);
  EXPECT_NE(r.rows[0].why.find("no device counters"), std::string::npos) << r.rows[0].why;
  const auto j = rightsizing_json(r);
  EXPECT_TRUE(j["rows"][0]["saving_per_month"].is_null());
  EXPECT_TRUE(j["rows"][0]["limited"].get<bool>());
  // An unknown VRAM peak: no profile can be chosen.
  Use unseen{"unseen"};
  unseen.vram_peak = std::nullopt;
  const Rightsizing u = by_pod(hour_of(unseen));
  EXPECT_EQ(u.rows[0].advice, Advice::kKeep);
  EXPECT_TRUE(u.rows[0].limited);
  EXPECT_NE(u.rows[0].why.find("VRAM peak is unknown"), std::string::npos);
}

TEST(Rightsizing, JsonShapeAndSortingBySaving) {
  std::vector<WindowRecord> ws = hour_of(Use{"infer"});
  Use trainer{"trainer"};
  trainer.sm_active = 0.9;
  trainer.vram_peak = 70'000'000'000;
  for (auto& w : hour_of(trainer)) {
    w.slot.uuid = "GPU-2";
    ws.push_back(w);
  }
  const auto j = rightsizing_json(by_pod(ws));
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["key"], "ml/infer");
  EXPECT_EQ(row["recommendation"], "mig");
  EXPECT_EQ(row["target"], "1g.10gb");
  EXPECT_EQ(row["saving_per_month"], "2628.000000");
  EXPECT_EQ(row["saving_per_month_micros"], 2'628'000'000);
  EXPECT_EQ(row["limited"], false);
  EXPECT_TRUE(row["why"].is_string());
  for (const char* k : {"vram_peak_bytes", "vram_p95_bytes", "sm_active_p95", "busy_share", "idle_seconds_longest",
                        "windows", "sources"})
    EXPECT_TRUE(row["evidence"].contains(k)) << k;
  EXPECT_EQ(j["rows"][1]["recommendation"], "keep");
  EXPECT_EQ(j["rows"][1]["target"], "");
  EXPECT_EQ(j["rows"][1]["saving_per_month"], "0.000000");
}

TEST(Rightsizing, TeamsGatherTheirPodsByAdvice) {
  std::vector<WindowRecord> ws = hour_of(Use{"infer"});
  for (auto& w : hour_of(Use{"infer2"})) {
    w.slot.uuid = "GPU-2";
    ws.push_back(w);
  }
  const Rightsizing r = rightsize(ws, kT0, kT0 + 3600, GroupBy::kTeam, any_evidence());
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].key, "vision");
  EXPECT_EQ(r.rows[0].members, (std::vector<std::string>{"ml/infer", "ml/infer2"}));
  EXPECT_EQ(r.rows[0].saving_per_month_micros, 2 * int64_t{3'600'000} * 730);
}

TEST(Rightsizing, ProfileTablesAndConfiguration) {
  ledger::MigTables t;
  EXPECT_EQ(t.for_model("NVIDIA H100 80GB HBM3")->model, "H100 80GB");
  EXPECT_EQ(t.for_model("NVIDIA H100 NVL")->model, "H100 94GB");
  EXPECT_EQ(t.for_model("NVIDIA A100-SXM4-40GB")->model, "A100 40GB");
  EXPECT_EQ(t.for_model("NVIDIA A100 80GB PCIe")->model, "A100 80GB");
  EXPECT_EQ(t.for_model("NVIDIA H200")->profiles.front().name, "1g.18gb");
  EXPECT_EQ(t.for_model("NVIDIA B200")->profiles.back().name, "7g.180gb");
  EXPECT_FALSE(t.for_model("NVIDIA GH200 480GB"));  // not an H200
  EXPECT_FALSE(t.for_model("NVIDIA L4"));
  const RightsizingOptions o = parse_rightsizing_section(R"(
rightsizing:
  idle_after: 2d
  vram_headroom: 0.1
  mig_profiles:
    "A30": {slices: 4, profiles: [2g.12gb, 1g.6gb, 4g.24gb]}
)");
  EXPECT_EQ(o.idle_after_seconds, 2 * 86400);
  EXPECT_EQ(o.vram_headroom_micros, 100'000);
  const auto a30 = o.mig.for_model("NVIDIA A30");
  ASSERT_TRUE(a30);
  EXPECT_EQ(a30->slices, 4);
  EXPECT_EQ(a30->profiles.front().name, "1g.6gb");
  auto error = [](const std::string& yaml) {
    try {
      parse_rightsizing_section(yaml, "c.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("rightsizing:\n  idle_after: soon\n"),
            "config c.yaml:2:15: rightsizing.idle_after 'soon': expected a duration such as 24h, 90m or 2d");
  EXPECT_EQ(error("rightsizing:\n  vram_headroom: 1.5\n"),
            "config c.yaml:2:18: rightsizing.vram_headroom '1.5': expected a fraction from 0 to 1 with at most 6 "
            "decimals (e.g. 0.2)");
  EXPECT_EQ(error("rightsizing:\n  idle: 1h\n"),
            "config c.yaml:2:3: unknown key 'idle' in rightsizing (expected: idle_after, vram_headroom, min_evidence, "
            "mig_profiles)");
  EXPECT_EQ(error("rightsizing:\n  mig_profiles:\n    X: [3c.20gb]\n"),
            "config c.yaml:3:9: '3c.20gb' is not a MIG GPU-instance profile such as 1g.10gb");
}

}  // namespace
}  // namespace gpuledger::report

namespace gpuledger::report {
namespace {

// A pod of two containers on one GPU: idle only while both are; a window the
// agent did not watch (backfill) is no evidence of idleness.
TEST(Rightsizing, APodIsIdleOnlyWhenAllItsContainersAre) {
  Use idle{"nb", 0.5, 1, 0, 0, 0.0};  // two holders of one GPU: half each
  std::vector<WindowRecord> ws;
  for (int h = 0; h < 48; ++h) {
    WindowRecord w = window(kT0 + 3600 * h, 3600, "GPU-1", kH100, 4'200'000, {idle});
    AccountRecord side = w.accounts[0];
    side.account = "k8s/ml/nb/sidecar";
    side.launches = h == 30 ? 1 : 0;  // one launch in hour 30
    side.activity_share = 0;
    w.accounts.push_back(side);
    ws.push_back(w);
  }
  Rightsizing r = by_pod(ws);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].evidence.idle_seconds_longest, 30 * 3600);
  EXPECT_EQ(r.rows[0].advice, Advice::kRelease);
  ws[20].source = "backfill";  // the longest run is now hours 21..29 or 31..47
  r = by_pod(ws);
  EXPECT_EQ(r.rows[0].evidence.idle_seconds_longest, 20 * 3600);
  EXPECT_EQ(r.rows[0].advice, Advice::kMig);  // 20 h < 24 h
}

}  // namespace
}  // namespace gpuledger::report

namespace gpuledger::report {
namespace {

// A tenant names its pod to attack the bill: markup stays text in HTML, a
// comma or quote stays in its CSV field, and invalid bytes are shown escaped.
TEST(Rightsizing, HostilePodNamesStayText) {
  Use evil{"<script>alert(1)</script>,\"x\"\xff"};
  const Rightsizing r = by_pod(hour_of(evil));
  const std::string html = rightsizing_html_section(r);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  const std::string csv = render_rightsizing_csv(r);
  EXPECT_NE(csv.find("\r\n\"ml/<script>alert(1)</script>,\"\"x\"\"\\xff\",mig,1g.10gb,"), std::string::npos) << csv;
  EXPECT_NO_THROW(nlohmann::json::parse(render_rightsizing_json(r)));
}

}  // namespace
}  // namespace gpuledger::report

namespace gpuledger::report {
namespace {

// Issue 33: advice states its confidence. Hourly windows on one H100, each
// costing 4.20; the pod holds all of it.
std::vector<WindowRecord> hours_of(const Use& use, int hours) {
  std::vector<WindowRecord> ws;
  for (int h = 0; h < hours; ++h) ws.push_back(window(kT0 + 3600 * h, 3600, "GPU-1", kH100, 4'200'000, {use}));
  return ws;
}

// The inference server of hours_of, steady, on `hours` of evidence: a 1g.10gb,
// with `saving` stated or not (limited) and `confidence` in hundredths.
void expect_one_slice(const Rightsizing& r, int hours, std::optional<int64_t> saving, int64_t confidence) {
  ASSERT_EQ(r.rows.size(), 1u);
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.advice, Advice::kMig);
  EXPECT_EQ(row.target, "1g.10gb");
  EXPECT_EQ(row.limited, !saving);
  EXPECT_EQ(row.saving_per_month_micros, saving);
  EXPECT_EQ(row.confidence_hundredths, confidence);
  EXPECT_EQ(row.evidence.evidence_seconds, hours * 3600);
  EXPECT_EQ(row.evidence.steadiness_thousandths, 1000);
}

TEST(RightsizingConfidence, TheWeightOfDaysAndSteadiness) {
  constexpr int64_t kDay = 86400;
  EXPECT_EQ(confidence_hundredths(0, 1000), 0);
  EXPECT_EQ(confidence_hundredths(40, 1000), 0);            // the issue's 40 seconds
  EXPECT_EQ(confidence_hundredths(6 * 3600, 1000), 8);      // 0.3 x 0.25 = 0.075, half up
  EXPECT_EQ(confidence_hundredths(23 * 3600, 1000), 29);    // 0.2875
  EXPECT_EQ(confidence_hundredths(kDay, 1000), 30);         // one day: 0.3
  EXPECT_EQ(confidence_hundredths(3 * kDay, 1000), 53);     // 0.3 + 0.7 x 2/6 = 0.5333
  EXPECT_EQ(confidence_hundredths(7 * kDay, 1000), 100);    // a week: 1.0
  EXPECT_EQ(confidence_hundredths(30 * kDay, 1000), 100);
  EXPECT_EQ(confidence_hundredths(7 * kDay, 700), 70);      // as steady as 0.7
  EXPECT_EQ(confidence_hundredths(kDay, 500), 15);
  EXPECT_EQ(confidence_text(8), "0.08");
  EXPECT_EQ(confidence_text(30), "0.30");
  EXPECT_EQ(confidence_text(100), "1.00");
}

// Six hours: the decision is made and shown, but no saving is stated, and the confidence is low.
TEST(RightsizingConfidence, HoursOfEvidenceStateNoSavingAndLowConfidence) {
  const Rightsizing r = by_pod(hours_of(Use{"infer"}, 6), RightsizingOptions{});
  expect_one_slice(r, 6, std::nullopt, 8);
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.why,
            "VRAM peak 6.00 GB with 20% headroom fits 1g.10gb (10.00 GB), and SM active p95 10.0% fits its 1/7 of the "
            "compute; only 6.0 h of held time behind it, below min_evidence 1 d: no saving is stated");
  const auto j = rightsizing_json(r);
  EXPECT_EQ(j["min_evidence_seconds"], 86400);
  EXPECT_TRUE(j["rows"][0]["saving_per_month_micros"].is_null());
  EXPECT_TRUE(j["rows"][0]["saving_per_month"].is_null());
  EXPECT_EQ(j["rows"][0]["confidence"].dump(), "0.08");
  EXPECT_EQ(j["rows"][0]["evidence_hours"].dump(), "6.0");
  // min_evidence 0: the same six hours state the decision's saving (3.60 an hour), with the same low confidence.
  const Rightsizing any = by_pod(hours_of(Use{"infer"}, 6));
  EXPECT_EQ(any.rows[0].saving_per_month_micros, int64_t{3'600'000} * 730);
  EXPECT_EQ(any.rows[0].confidence_hundredths, 8);
  // 23 hours are still too few; 24 are enough.
  EXPECT_EQ(by_pod(hours_of(Use{"infer"}, 23), RightsizingOptions{}).rows[0].saving_per_month_micros, std::nullopt);
  const Rightsizing day = by_pod(hours_of(Use{"infer"}, 24), RightsizingOptions{});
  EXPECT_EQ(day.rows[0].saving_per_month_micros, int64_t{3'600'000} * 730);
  EXPECT_FALSE(day.rows[0].limited);
  EXPECT_EQ(day.rows[0].confidence_hundredths, 30);
  // The issue's ledger of 40 seconds: no saving, confidence 0.
  const Rightsizing blink =
      by_pod({window(kT0, 40, "GPU-1", kH100, 46'667, {Use{"infer"}})}, RightsizingOptions{});
  EXPECT_EQ(blink.rows[0].saving_per_month_micros, std::nullopt);
  EXPECT_EQ(blink.rows[0].confidence_hundredths, 0);
  EXPECT_NE(blink.rows[0].why.find("; only 1 min of held time behind it, below min_evidence 1 d"), std::string::npos)
      << blink.rows[0].why;
}

// A week of steady use: a confident saving.
TEST(RightsizingConfidence, AWeekOfSteadyEvidenceIsConfident) {
  const Rightsizing r = by_pod(hours_of(Use{"infer"}, 168), RightsizingOptions{});
  expect_one_slice(r, 168, int64_t{3'600'000} * 730, 100);
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.why, "VRAM peak 6.00 GB with 20% headroom fits 1g.10gb (10.00 GB), and SM active p95 10.0% fits its "
                     "1/7 of the compute");
  const auto j = rightsizing_json(r);
  EXPECT_EQ(j["rows"][0]["confidence"].dump(), "1.0");
  EXPECT_EQ(j["rows"][0]["evidence_hours"].dump(), "168.0");
  EXPECT_EQ(j["rows"][0]["saving_per_month_micros"], 2'628'000'000);
  // The table and the HTML show the confidence beside the saving.
  const std::string table = render_rightsizing_table(r);
  const std::string header = table.substr(table.find("\npod ") + 1);
  EXPECT_LT(header.find("saving_per_month"), header.find("confidence"));
  EXPECT_LT(header.find("confidence"), header.find("evidence_hours"));
  EXPECT_LT(header.find("evidence_hours"), header.find("vram_peak_gb"));
  EXPECT_NE(table.find("min_evidence 24h"), std::string::npos) << table;
  const std::string html = rightsizing_html_section(r);
  EXPECT_NE(html.find("<th>saving_per_month</th><th>confidence</th><th>evidence_hours</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>2628.000000</td><td>1.00</td><td>168.0</td>"), std::string::npos) << html;
  const std::string csv = render_rightsizing_csv(r);
  EXPECT_NE(csv.find(",currency,confidence,evidence_hours\r\n"), std::string::npos);
  EXPECT_NE(csv.find(",USD,1.00,168.000\r\n"), std::string::npos) << csv;
}

// A bursty week: SM active 0.10, and 0.40 one hour in four. Its p95 sizes it
// (3g.40gb) and its spread, 0.30, takes the confidence to 0.70.
TEST(RightsizingConfidence, ABurstyWeekIsLessCertain) {
  std::vector<WindowRecord> ws = hours_of(Use{"bursty"}, 168);
  for (size_t h = 0; h < ws.size(); h += 4) ws[h].accounts[0].efficiency.sm_active = 0.40;
  const Rightsizing r = by_pod(ws, RightsizingOptions{});
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.target, "3g.40gb");
  EXPECT_EQ(row.evidence.steadiness_thousandths, 700);
  EXPECT_EQ(row.confidence_hundredths, 70);
  // 4.20 - 4.20 x 3/7 = 2.40 an hour.
  EXPECT_EQ(row.saving_per_month_micros, int64_t{2'400'000} * 730);
}

// DRAM busy, SM and tensor light: sized by its memory bandwidth, which a MIG
// profile gets in proportion to its memory (an H100's 3g.40gb: 40 of 80 GB).
TEST(RightsizingConfidence, AMemoryBoundWorkloadIsSizedByItsMemory) {
  Use streamer{"streamer"};
  streamer.dram_active = 0.45;
  streamer.tensor_active = 0.02;
  const Rightsizing r = by_pod(hours_of(streamer, 168), RightsizingOptions{});
  const Recommendation& row = r.rows[0];
  EXPECT_EQ(row.advice, Advice::kMig);
  EXPECT_EQ(row.target, "3g.40gb");  // by compute alone 1g.10gb
  EXPECT_FALSE(row.limited);
  EXPECT_EQ(row.saving_per_month_micros, int64_t{2'400'000} * 730);
  EXPECT_EQ(row.confidence_hundredths, 100);
  EXPECT_EQ(row.evidence.dram_active_p95, 0.45);
  EXPECT_EQ(row.evidence.tensor_active_p95, 0.02);
  EXPECT_EQ(row.why,
            "memory-bound (DRAM active p95 45.0%, above its SM active and tensor): sized by its memory; VRAM peak "
            "6.00 GB with 20% headroom fits 3g.40gb (40.00 GB), and SM active p95 10.0% fits its 3/7 of the compute "
            "and its 40.00 GB of 80.00 GB of the memory bandwidth");
  const auto j = rightsizing_json(r);
  EXPECT_EQ(j["rows"][0]["evidence"]["dram_active_p95"], 0.45);
  EXPECT_EQ(j["rows"][0]["evidence"]["tensor_active_p95"], 0.02);
  // DRAM light (below 0.30), or below its SM active: sized by compute, as before.
  streamer.dram_active = 0.25;
  EXPECT_EQ(by_pod(hours_of(streamer, 168), RightsizingOptions{}).rows[0].target, "1g.10gb");
  Use compute{"compute"};
  compute.sm_active = 0.50;
  compute.dram_active = 0.45;
  EXPECT_EQ(by_pod(hours_of(compute, 168), RightsizingOptions{}).rows[0].target, "4g.40gb");
  // Tensor busier than DRAM: not memory-bound.
  streamer.dram_active = 0.45;
  streamer.tensor_active = 0.50;
  EXPECT_EQ(by_pod(hours_of(streamer, 168), RightsizingOptions{}).rows[0].target, "1g.10gb");
}

TEST(RightsizingConfidence, MinEvidenceIsConfigured) {
  EXPECT_EQ(RightsizingOptions{}.min_evidence_seconds, 24 * 3600);
  EXPECT_EQ(parse_rightsizing_section("rightsizing:\n  min_evidence: 7d\n").min_evidence_seconds, 7 * 86400);
  EXPECT_EQ(parse_rightsizing_section("rightsizing:\n  min_evidence: 0\n").min_evidence_seconds, 0);
  EXPECT_EQ(parse_rightsizing_section("rightsizing:\n  idle_after: 2d\n").min_evidence_seconds, 24 * 3600);
  try {
    parse_rightsizing_section("rightsizing:\n  min_evidence: soon\n", "c.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "config c.yaml:2:17: rightsizing.min_evidence 'soon': expected a duration such as 24h, 90m or 2d");
  }
}

}  // namespace
}  // namespace gpuledger::report
