#include "report/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "report/report_text.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using testing::kT0;

// Two minutes of windows: min_evidence 0, so the recommendations state the
// savings their decisions make (the default, 24 h, would state none).
Report fixture_report(GroupBy by) {
  static testing::FixtureStore store("fmt");
  ledger::Store s(store.path(), ledger::Store::Mode::kReadOnly);
  RightsizingOptions any_evidence;
  any_evidence.min_evidence_seconds = 0;
  return build_report(s.windows(kT0, kT0 + 120), kT0, kT0 + 120, by, any_evidence);
}

// For people: human headers, money to the cent (rows adding up to the total), 120 columns.
TEST(ReportFormat, Table) {
  EXPECT_EQ(render(fixture_report(GroupBy::kTeam), Format::kTable), R"(GPU chargeback 2027-01-15T08:00:00Z to 2027-01-15T08:02:00Z by team (USD, local)

Team             GPU-h held  GPU-h busy  Busy cost  Idle cost  Total cost  SM active of held   of GPU
vision                 0.05        0.04       0.15       0.05        0.20              75.0%    37.5%
nlp                    0.03        0.01       0.02       0.07        0.09              25.0%    12.5%
__unallocated__        0.00        0.00       0.00       0.06        0.06            unknown  unknown
-----------------------------------------------------------------------------------------------------
TOTAL                  0.08        0.04       0.17       0.18        0.35              50.0%    50.0%
Money is rounded to the currency's minor unit so that the rows add up to the total (CSV, JSON and FOCUS carry the exact
  amounts).
SM active of held: the row's SM activity over the GPU time it held (above 100%: it used more than it held); of GPU: its
  part of the whole GPU's. The total's is the GPUs' own over the range, the same in every grouping.
unknown SM, occupancy, tensor or DRAM activity: none of the row's windows had a device reading (DCGM or NVML) for it;
  its busy time then comes from the eBPF kernel spans.
unknown energy and carbon: none of the row's windows had an energy counter or a power reading; carbon also needs
  carbon_g_per_kwh in the price list.
More columns (occupancy, tensor, DRAM, VRAM, launches, energy, carbon): --wide.

Top wasters (idle cost)
  1. nlp     0.08 USD idle (80.7% of its cost)
  2. vision  0.05 USD idle (27.3% of its cost)

Allocated against used (shares of the GPUs held or used; flag: used more or less than allocated by more than 0.10)
Team    Allocated  Used (activity)  Used (VRAM)  Used (energy)   Flag
vision     0.7500           0.8750       1.0000        unknown   over
nlp        0.6500           0.1750       0.0000        unknown  under
Over-users (used more than allocated):
  vision (allocated 0.75, used 0.88)
Under-users (used less than allocated):
  nlp (allocated 0.65, used 0.18)

Recommendations (savings per month in USD, largest first; --wide shows their evidence)
  nlp (nlp/pod-b): mig 1g.10gb, saves 544.37 a month, confidence 0.00 - VRAM peak 0.00 GB with 20% headroom fits 1g.10gb
    (10.00 GB), and SM active p95 12.5% fits its 1/7 of the compute
  vision (ml/pod-a): more, saves 0.00 a month, confidence 0.00 - used 0.75 of its GPU's activity with 0.50 allocated: an
    over-user of a shared GPU
  nlp (nlp/pod-d): mig 1g.10gb, saving not stated (limited evidence), confidence 0.00 - VRAM peak 0.00 GB with 20%
    headroom fits 1g.10gb (10.00 GB), and SM active p95 0.0% fits its 1/7 of the compute; SM active is the eBPF span
    estimate (no device counters in its windows), so no saving is stated
  vision (ml/pod-c): keep, saving not stated (limited evidence), confidence 0.00 - needs VRAM 2.15 GB +20% and SM active
    p95 75.0%: no smaller H100 80GB MIG profile fits (SM active is the eBPF span estimate: no device counters in its
    windows)

Special accounts
  __unallocated__: the part of a GPU nobody held: its time while no pod held it, work no holder or user could be named
    for, and under cost_policy allocated the share of it no pod was allocated

Coverage
  8 windows on 4 GPU slots, 0.11 GPU-hours.
  6 of the windows had no device reading (DCGM or NVML): their busy time is the eBPF span estimate and their efficiency
    unknown.

Audit
  Bill id: none (this report was not made from a ledger store's windows)
  Node: unknown (this store was written by an agent that did not record its node)
  Cluster: unknown (the agent was not given --cluster-name or $CLUSTER_NAME when it wrote this store)
  Period: 2027-01-15T08:00:00Z to 2027-01-15T08:02:00Z (end exclusive)
  Reconciliation, NVIDIA H100 80GB HBM3: 0.080952 GPU-hours on the GPU x 3.600005 USD per GPU-hour = 0.291429 USD (the
    rate applies to every hour the GPU was there; the held GPU-hours are fewer when part of it was unheld, whose cost
    goes to __unallocated__ or __idle__, and the rate is rounded here)
  Reconciliation, Tesla T4: 0.033333 GPU-hours on the GPU x 1.800000 USD per GPU-hour = 0.060000 USD (the rate applies
    to every hour the GPU was there; the held GPU-hours are fewer when part of it was unheld, whose cost goes to
    __unallocated__ or __idle__, and the rate is rounded here)
)");
}

TEST(ReportFormat, Csv) {
  std::string csv = render(fixture_report(GroupBy::kTeam), Format::kCsv);
  // RFC 4180: CRLF line ends.
  size_t lf = std::count(csv.begin(), csv.end(), '\n');
  EXPECT_EQ(lf, 4u);
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\r')), lf);
  std::erase(csv, '\r');
  EXPECT_EQ(csv, R"(team,gpu_hours_held,gpu_hours_busy,cost_busy,cost_idle,cost_memory,cost_total,sm_active,sm_occupancy,tensor_active,dram_active,vram_gib_hours,launches,energy_kwh,carbon_kg_co2e,allocated_share,used_share,used_vram_share,used_energy_share,share_flag,currency,period_start,period_end,node,cluster,bill_id,partial_period
vision,0.050000,0.040000,0.144000,0.054000,0.000000,0.198000,0.3750,0.1875,,,0.100000,1320,,,0.750000,0.875000,1.000000,,over,USD,2027-01-15T08:00:00Z,2027-01-15T08:02:00Z,,,,false
nlp,0.030952,0.005000,0.018000,0.075429,0.000000,0.093429,0.1250,0.0625,,,0.000000,240,,,0.650000,0.175000,0.000000,,under,USD,2027-01-15T08:00:00Z,2027-01-15T08:02:00Z,,,,false
__unallocated__,0.000000,0.000000,0.000000,0.060000,0.000000,0.060000,,,,,0.000000,0,,,,,,,,USD,2027-01-15T08:00:00Z,2027-01-15T08:02:00Z,,,,false
)");
}

TEST(ReportFormat, CsvTotalsRow) {
  std::string csv = render(fixture_report(GroupBy::kTeam), Format::kCsv, RenderOptions{.csv_totals = true});
  EXPECT_NE(csv.find("\r\nTOTAL,0.080952,0.045000,0.162000,0.189429,0.000000,0.351429,0.5000,0.2500,,,0.100000,1560,,,,,,,,USD,"
                     "2027-01-15T08:00:00Z,2027-01-15T08:02:00Z,,,,false\r\n"),
            std::string::npos)
      << csv;
}

TEST(ReportFormat, TotalEfficiencyIsWeightedByHeldTime) {
  Report r;
  Row a, b, c;
  a.key = "a", a.gpu_hours_held = a.efficiency_hours = 3, a.efficiency.sm_active = 0.8;
  b.key = "b", b.gpu_hours_held = b.efficiency_hours = 1, b.efficiency.sm_active = 0.4;
  c.key = "c", c.gpu_hours_held = c.efficiency_hours = 5;  // unknown: not counted as 0
  r.rows = {a, b, c};
  finish_report(r);
  EXPECT_DOUBLE_EQ(*r.total.efficiency.sm_active, 0.7);
  EXPECT_FALSE(r.total.efficiency.tensor_active);
}

TEST(ReportFormat, NoPricesIsSaidInPlainWords) {
  Report r;
  Row a;
  a.key = "a", a.gpu_hours_held = 2;
  r.rows = {a};
  finish_report(r);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("No prices are configured"), std::string::npos);
  EXPECT_NE(render_table(r).find("No prices are configured"), std::string::npos);
  EXPECT_NE(render_html(r).find("No prices are configured"), std::string::npos);
  EXPECT_TRUE(fixture_report(GroupBy::kTeam).notes.empty());
}

TEST(ReportFormat, MoneyForPeople) {
  EXPECT_EQ(money_cents(351'429), "0.35");
  EXPECT_EQ(money_cents(5'000), "0.01");  // half a cent rounds up
  EXPECT_EQ(money_cents(4'999), "0.00");
  EXPECT_EQ(money_cents(1'234'567'890), "1,234.57");
  EXPECT_EQ(money_cents(0), "0.00");
}

TEST(ReportFormat, CsvQuoting) {
  Report r;
  r.from = kT0;
  r.to = kT0 + 60;
  Row row;
  row.key = "team \"x\", inc";
  row.cost_busy_micros = 1;
  r.rows = {row};
  finish_report(r);
  std::string csv = render_csv(r);
  EXPECT_NE(csv.find("\r\n\"team \"\"x\"\", inc\",0.000000,0.000000,0.000001,0.000000,0.000000,0.000001,,,,,0.000000,0,,,,,,,,USD,2027-01-15T08:00:00Z,"
                     "2027-01-15T08:01:00Z,,,,false\r\n"),
            std::string::npos)
      << csv;
}

TEST(ReportFormat, Json) {
  auto j = nlohmann::json::parse(render(fixture_report(GroupBy::kTeam), Format::kJson));
  EXPECT_EQ(j["from"], "2027-01-15T08:00:00Z");
  EXPECT_EQ(j["to"], "2027-01-15T08:02:00Z");
  EXPECT_EQ(j["by"], "team");
  EXPECT_EQ(j["currency"], "USD");
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][0]["key"], "vision");
  EXPECT_EQ(j["rows"][0]["cost_busy_micros"], 144000);
  EXPECT_EQ(j["rows"][0]["cost_idle"], "0.054000");
  EXPECT_EQ(j["rows"][0]["sm_active"], 0.375);
  EXPECT_TRUE(j["rows"][0]["tensor_active"].is_null());  // unknown
  EXPECT_EQ(j["rows"][1]["key"], "nlp");
  EXPECT_EQ(j["rows"][1]["cost_total_micros"], 93429);
  EXPECT_EQ(j["rows"][2]["key"], "__unallocated__");
  EXPECT_EQ(j["total"]["cost_total_micros"], 351429);
  EXPECT_EQ(j["top_wasters"][0]["key"], "nlp");
  EXPECT_EQ(j["top_wasters"][0]["cost_idle_micros"], 75429);
  ASSERT_EQ(j["cost_by_team_over_time"].size(), 2u);
  EXPECT_EQ(j["cost_by_team_over_time"][1]["start"], "2027-01-15T08:01:00Z");
  EXPECT_EQ(j["cost_by_team_over_time"][1]["cost_micros"]["nlp"], 46715);
}

TEST(ReportFormat, GroupingsAddUpToTheSameTotal) {
  for (auto by : {GroupBy::kTeam, GroupBy::kNamespace, GroupBy::kPod, GroupBy::kWorkload, GroupBy::kGpu}) {
    Report r = fixture_report(by);
    EXPECT_EQ(r.total.cost_total_micros(), 351'429) << to_string(by);
  }
  Report pods = fixture_report(GroupBy::kPod);
  std::vector<std::string> keys;
  for (const auto& row : pods.rows) keys.push_back(row.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"ml/pod-c", "ml/pod-a", "__unallocated__", "nlp/pod-d", "nlp/pod-b"}));
  Report gpus = fixture_report(GroupBy::kGpu);
  EXPECT_EQ(gpus.rows[1].key, "GPU-shared");
  EXPECT_DOUBLE_EQ(*gpus.rows[1].efficiency.sm_active, 0.5);  // the device's own value
}

TEST(ReportFormat, HtmlIsSelfContained) {
  std::string html = render(fixture_report(GroupBy::kTeam), Format::kHtml);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"chart-cost-over-time", "chart-cost-vs-efficiency"})
    EXPECT_NE(html.find(std::string("<svg id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("<div id=\"chart-idle-share\""), std::string::npos);
  // No external resources: no scripts, stylesheets, images or fonts fetched from anywhere.
  for (const char* bad : {" src=", " href=", "<script", "<link", "@import", "url("})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  // On screen to the cent, the exact amount in the tooltip.
  EXPECT_NE(html.find("<td class=\"money\" title=\"0.351429 USD (exact)\">0.35</td>"), std::string::npos);
  for (const char* header : {"GPU-hours held", "Idle cost (USD)", "Kernel launches"})
    EXPECT_NE(html.find(std::string("<th>") + header + "</th>"), std::string::npos) << header;
  EXPECT_EQ(html.find("gpu_hours_held"), std::string::npos);  // no snake_case for finance
  // Summary first: the total comes before the table.
  EXPECT_LT(html.find("id=\"total\""), html.find("id=\"report\""));
  for (const char* id : {"who-pays", "prices", "coverage", "glossary"})
    EXPECT_NE(html.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
  EXPECT_NE(html.find("Unallocated (GPU time nobody held)"), std::string::npos);
  EXPECT_EQ(html.find("holder unknown"), std::string::npos);  // it holds the idle cost of GPUs nobody held
}

TEST(ReportFormat, HtmlNamesAreValidUtf8) {
  Report r;
  Row row;
  row.key = std::string("team-\xff\xfe");
  row.cost_idle_micros = 5;
  r.rows = {row};
  finish_report(r);
  EXPECT_NE(render_html(r).find("team-\\xff\\xfe"), std::string::npos);  // shown, byte by byte (inert_text.h)
  EXPECT_NO_THROW(nlohmann::json::parse(render_json(r)));
}

TEST(ReportFormat, HtmlEscapes) {
  Report r;
  r.from = kT0;
  r.to = kT0 + 60;
  Row row;
  row.key = "<script>alert(1)</script>";
  row.cost_idle_micros = 5;
  r.rows = {row};
  finish_report(r);
  std::string html = render_html(r);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
}

TEST(ReportRange, OnlyWindowsStartingInRange) {
  static testing::FixtureStore store("range");
  ledger::Store s(store.path(), ledger::Store::Mode::kReadOnly);
  Report r = build_report(s.windows(kT0 + 60, kT0 + 120), kT0 + 60, kT0 + 120, GroupBy::kTeam);
  EXPECT_EQ(r.total.cost_total_micros(), 175'715);  // the second minute: the MIG slot's 25'715 (51'429 over both, rounded once)
}

// The builder finds each record's groups once a window and reuses them for
// its charges, energy and shares. A window naming one account twice with two
// sets of labels still bills as before: each record's held time to its own
// team, the account's charges, energy and shares to its first record's.
TEST(ReportBuilder, AnAccountNamedTwiceInAWindowBillsItsChargesToItsFirstRecordsTeam) {
  ledger::WindowRecord w;
  w.start = kT0, w.end = kT0 + 60, w.gpu_fraction = 1, w.currency = "USD", w.cost_micros = 90;
  w.slot.uuid = "GPU-1", w.slot.model = "H100";
  ledger::AccountRecord first, second, other;
  first.account = second.account = "k8s/x";
  first.labels.team = "red", second.labels.team = "blue";
  first.held_share = 0.5, second.held_share = 0.25, other.held_share = 0.25;
  first.allocated_share = 0.5, second.allocated_share = 0.25, other.allocated_share = 0.25;
  first.activity_share = 0.5, second.activity_share = 0.25, other.activity_share = 0.25;
  other.account = "k8s/y", other.labels.team = "blue";
  w.accounts = {first, second, other};
  w.charges = {{"k8s/x", ledger::ChargeKind::kBusy, 60}, {"k8s/y", ledger::ChargeKind::kBusy, 30}};
  w.energy = ledger::WindowEnergyRecord{
      9000,
      "nvml",
      {{"k8s/x", ledger::ChargeKind::kBusy, 6000}, {"k8s/y", ledger::ChargeKind::kBusy, 3000}},
      std::nullopt};
  for (int repeat = 0; repeat < 2; ++repeat) {  // the second window finds the account's keys from the first
    ReportBuilder b(kT0, kT0 + 120, GroupBy::kTeam, std::nullopt);
    b.add(w);
    ledger::WindowRecord later = w;
    later.start += 60, later.end += 60;
    if (repeat) b.add(later);
    const Report r = b.finish();
    ASSERT_EQ(r.rows.size(), 2u);
    const Row& red = r.rows[0].key == "red" ? r.rows[0] : r.rows[1];
    const Row& blue = r.rows[0].key == "red" ? r.rows[1] : r.rows[0];
    const int n = repeat + 1;
    EXPECT_EQ(red.cost_busy_micros, 60 * n);
    EXPECT_EQ(blue.cost_busy_micros, 30 * n);
    EXPECT_EQ(red.energy_millijoules, 6000 * n);
    EXPECT_EQ(blue.energy_millijoules, 3000 * n);
    EXPECT_DOUBLE_EQ(red.gpu_hours_held, n * 0.5 / 60);
    EXPECT_DOUBLE_EQ(blue.gpu_hours_held, n * 0.5 / 60);  // the second record's quarter and k8s/y's
    // k8s/x's shares (its last record's used share, its allocations summed) are red's alone.
    EXPECT_DOUBLE_EQ(red.share_hours, n / 60.0);
    EXPECT_DOUBLE_EQ(red.allocated_hours, n * 0.75 / 60);
    EXPECT_DOUBLE_EQ(red.used_hours, n * 0.25 / 60);
    EXPECT_DOUBLE_EQ(blue.allocated_hours, n * 0.25 / 60);
    EXPECT_EQ(r.coverage.windows_by_device_quality.at("absent"), n);
    EXPECT_EQ(r.coverage.windows_by_split_source.at("unknown"), n);
    EXPECT_EQ(r.coverage.gpus, std::vector<std::string>{"GPU-1"});
  }
}

}  // namespace
}  // namespace gpuledger::report
