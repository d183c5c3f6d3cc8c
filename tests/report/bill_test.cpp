// The bill half of issue 19: FOCUS rows checked against FOCUS's column rules,
// cents that add up, one efficiency definition, the audit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <regex>
#include <set>

#include "common/error.h"
#include "ledger/bill_inputs.h"
#include "report/bill_audit.h"
#include "report/bill.h"
#include "report/charge_period.h"
#include "report/focus_export.h"
#include "report/report_text.h"
#include "report/shown_money.h"
#include "csv_records.h"
#include "report_fixture.h"
#include "report/report_time.h"

namespace gpuledger::report {
namespace {

using testing::kT0;
using testing::parse_csv;

// An exact decimal ("0.351429", at most 6 places) in micro-units; nullopt when not one.
std::optional<int64_t> decimal_micros(const std::string& s) {
  static const std::regex re(R"(^-?\d+(\.\d{1,6})?$)");
  if (!std::regex_match(s, re)) return std::nullopt;
  const bool neg = s[0] == '-';
  const std::string body = neg ? s.substr(1) : s;
  const auto dot = body.find('.');
  std::string frac = dot == std::string::npos ? "" : body.substr(dot + 1);
  frac.resize(6, '0');
  const int64_t v = std::stoll(body.substr(0, dot)) * 1'000'000 + std::stoll(frac);
  return neg ? -v : v;
}

struct FocusRule {
  enum Type { kDecimal, kString, kDateTime, kJson } type;
  bool nullable;
  std::set<std::string> allowed;  // empty: any
};

// FOCUS 1.2's rules for the columns this bill writes (1.3's for the allocation ones).
const std::map<std::string, FocusRule>& focus_rules() {
  using R = FocusRule;
  static const std::map<std::string, FocusRule> rules = {
      {"BilledCost", {R::kDecimal, false, {}}},
      {"BillingAccountId", {R::kString, false, {}}},
      {"BillingAccountName", {R::kString, true, {}}},
      {"BillingCurrency", {R::kString, false, {}}},
      {"BillingPeriodEnd", {R::kDateTime, false, {}}},
      {"BillingPeriodStart", {R::kDateTime, false, {}}},
      {"ChargeCategory", {R::kString, false, {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}}},
      {"ChargeClass", {R::kString, true, {"Correction"}}},
      {"ChargeDescription", {R::kString, true, {}}},
      {"ChargeFrequency", {R::kString, false, {"One-Time", "Recurring", "Usage-Based"}}},
      {"ChargePeriodEnd", {R::kDateTime, false, {}}},
      {"ChargePeriodStart", {R::kDateTime, false, {}}},
      {"ConsumedQuantity", {R::kDecimal, false, {}}},
      {"ConsumedUnit", {R::kString, false, {}}},
      {"ContractedCost", {R::kDecimal, false, {}}},
      {"ContractedUnitPrice", {R::kDecimal, true, {}}},
      {"EffectiveCost", {R::kDecimal, false, {}}},
      {"InvoiceId", {R::kString, true, {}}},
      {"InvoiceIssuerName", {R::kString, false, {}}},
      {"ListCost", {R::kDecimal, false, {}}},
      {"ListUnitPrice", {R::kDecimal, true, {}}},
      {"PricingCategory", {R::kString, true, {"Standard", "Dynamic", "Committed", "Other"}}},
      {"PricingQuantity", {R::kDecimal, false, {}}},
      {"PricingUnit", {R::kString, false, {}}},
      {"ProviderName", {R::kString, false, {}}},
      {"PublisherName", {R::kString, false, {}}},
      {"ResourceId", {R::kString, true, {}}},
      {"ResourceName", {R::kString, true, {}}},
      {"ResourceType", {R::kString, true, {}}},
      {"ServiceCategory",
       {R::kString, false, {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
                            "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
                            "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
                            "Storage", "Web", "Other"}}},
      {"ServiceName", {R::kString, false, {}}},
      {"ServiceSubcategory", {R::kString, true, {}}},
      {"SkuId", {R::kString, false, {}}},
      {"SkuMeter", {R::kString, true, {}}},
      {"SkuPriceDetails", {R::kJson, true, {}}},
      {"SkuPriceId", {R::kString, false, {}}},
      {"SubAccountId", {R::kString, true, {}}},
      {"SubAccountName", {R::kString, true, {}}},
      {"Tags", {R::kJson, true, {}}},
      {"AllocatedMethodId", {R::kString, false, {}}},
      {"AllocatedMethodDetails", {R::kJson, false, {}}},
      {"AllocatedResourceId", {R::kString, false, {}}},
      {"AllocatedResourceName", {R::kString, false, {}}},
      {"AllocatedTags", {R::kJson, false, {}}},
  };
  return rules;
}

// The 21 columns FOCUS 1.2 makes mandatory.
const std::vector<std::string> kMandatory = {
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd",
    "BillingPeriodStart", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd",
    "ChargePeriodStart", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost", "PricingQuantity",
    "PricingUnit", "ProviderName", "PublisherName", "ServiceCategory", "ServiceName"};

int64_t parse_datetime(const std::string& s) { return parse_time(s, 0); }

// Every row against the rules; returns Σ BilledCost in micro-units.
int64_t validate_focus(const std::string& csv) {
  const auto rows = parse_csv(csv);
  EXPECT_GE(rows.size(), 1u);
  if (rows.empty()) return 0;
  const auto& header = rows[0];
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const auto& m : kMandatory) EXPECT_TRUE(col.count(m)) << "missing mandatory column " << m;
  for (const auto& [name, rule] : focus_rules()) EXPECT_TRUE(col.count(name)) << "missing column " << name;
  for (const auto& h : header)
    EXPECT_TRUE(focus_rules().count(h) || h.rfind("x_", 0) == 0) << "a custom column without the x_ prefix: " << h;
  static const std::regex datetime(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$)");
  static const std::regex currency(R"(^[A-Z]{3}$)");
  int64_t billed = 0;
  // Per origin charge (GPU, period): Σ AllocatedRatio = 1, Σ BilledCost = the rows' own.
  std::map<std::pair<std::string, std::string>, double> ratio_sum;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    EXPECT_EQ(row.size(), header.size()) << "row " << r;
    if (row.size() != header.size()) continue;
    for (const auto& [name, rule] : focus_rules()) {
      const std::string& v = row[col.at(name)];
      if (v.empty()) {
        EXPECT_TRUE(rule.nullable) << name << " is null in row " << r;
        continue;
      }
      switch (rule.type) {
        case FocusRule::kDecimal: EXPECT_TRUE(std::regex_match(v, std::regex(R"(^-?\d+(\.\d+)?$)"))) << name << "=" << v; break;
        case FocusRule::kDateTime: EXPECT_TRUE(std::regex_match(v, datetime)) << name << "=" << v; break;
        case FocusRule::kJson: {
          const auto j = nlohmann::json::parse(v, nullptr, false);
          EXPECT_TRUE(j.is_object()) << name << "=" << v;
          break;
        }
        case FocusRule::kString: break;
      }
      if (!rule.allowed.empty()) {
        EXPECT_TRUE(rule.allowed.count(v)) << name << "=" << v;
      }
    }
    EXPECT_TRUE(std::regex_match(row[col["BillingCurrency"]], currency));
    const auto cost = decimal_micros(row[col["BilledCost"]]);
    EXPECT_TRUE(cost) << "BilledCost is not an exact decimal: " << row[col["BilledCost"]];
    billed += cost.value_or(0);
    // No discounts: what is billed is the effective cost, and the contracted price the list price.
    EXPECT_EQ(row[col["EffectiveCost"]], row[col["BilledCost"]]);
    EXPECT_EQ(row[col["ContractedCost"]], row[col["ListCost"]]);
    EXPECT_TRUE(row[col["InvoiceId"]].empty()) << "gpuledger issues no invoice";
    EXPECT_LT(parse_datetime(row[col["ChargePeriodStart"]]), parse_datetime(row[col["ChargePeriodEnd"]]));
    EXPECT_LE(parse_datetime(row[col["BillingPeriodStart"]]), parse_datetime(row[col["ChargePeriodStart"]]));
    EXPECT_GE(parse_datetime(row[col["BillingPeriodEnd"]]), parse_datetime(row[col["ChargePeriodEnd"]]));
    const auto tags = nlohmann::json::parse(row[col["Tags"]]);
    for (const char* k : {"team", "namespace", "pod", "container", "node", "cluster", "cost_kind"})
      EXPECT_TRUE(tags.contains(k)) << k;
    const auto details = nlohmann::json::parse(row[col["AllocatedMethodDetails"]]);
    EXPECT_TRUE(details["Elements"].is_array());
    EXPECT_EQ(details["Elements"][0]["UsageUnit"], "GPU-Hours");
    ratio_sum[{row[col["ResourceId"]], row[col["ChargePeriodStart"]]}] +=
        details["Elements"][0]["AllocatedRatio"].get<double>();
  }
  for (const auto& [origin, sum] : ratio_sum) EXPECT_NEAR(sum, 1.0, 1e-9) << origin.first << " " << origin.second;
  return billed;
}

ledger::Store& fixture_store() {
  static testing::FixtureStore dir("bill");
  static ledger::Store store(dir.path(), ledger::Store::Mode::kReadOnly);
  return store;
}

BillRequest request(Format f, Granularity g = Granularity::kDay, int64_t from = kT0, int64_t to = kT0 + 120) {
  BillRequest q;
  q.from = from;
  q.to = to;
  q.format = f;
  q.granularity = g;
  q.generated_at = kT0 + 3600;
  return q;
}

TEST(Focus, EveryRowFollowsTheColumnRulesAndAddsUpToTheBillExactly) {
  for (auto g : {Granularity::kHour, Granularity::kDay, Granularity::kMonth}) {
    const std::string csv = render_bill(fixture_store(), request(Format::kFocus, g));
    const int64_t total = build_bill(fixture_store(), request(Format::kTable)).total.cost_total_micros();
    EXPECT_EQ(total, 351'429);
    EXPECT_EQ(validate_focus(csv), total) << to_string(g);
    // One row per period, account and GPU: the fixture's 2 minutes are one period with 5 (GPU, account) pairs.
    const auto rows = parse_csv(csv);
    EXPECT_EQ(rows.size(), 1u + 5u) << csv;
  }
}

TEST(Focus, PeriodsAreClippedToTheRangeAndEndExclusive) {
  // A range over two hours of which the fixture fills the first two minutes: hour periods clip to the range.
  const std::string csv = render_bill(fixture_store(), request(Format::kFocus, Granularity::kHour, kT0 - 1800, kT0 + 7200));
  const auto rows = parse_csv(csv);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r][col["ChargePeriodStart"]], "2027-01-15T08:00:00Z");
    EXPECT_EQ(rows[r][col["ChargePeriodEnd"]], "2027-01-15T09:00:00Z");
    EXPECT_EQ(rows[r][col["BillingPeriodStart"]], "2027-01-01T00:00:00Z");
    EXPECT_EQ(rows[r][col["BillingPeriodEnd"]], "2027-02-01T00:00:00Z");
  }
  const std::string day = render_bill(fixture_store(), request(Format::kFocus, Granularity::kDay, kT0 - 1800, kT0 + 7200));
  const auto drows = parse_csv(day);
  EXPECT_EQ(drows[1][col["ChargePeriodStart"]], "2027-01-15T07:30:00Z");  // the range's start, not the day's
  EXPECT_EQ(drows[1][col["ChargePeriodEnd"]], "2027-01-15T10:00:00Z");
}

TEST(Focus, APodsShareReconcilesWithTheGpusCost) {
  const auto rows = parse_csv(render_bill(fixture_store(), request(Format::kFocus)));
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  // The shared H100: pod-a 27'000 x2 + 12'000 x2, pod-b 9'000 x2 + 12'000 x2: 120'000 = 2 minutes at 3.60/h.
  std::map<std::string, int64_t> by_pod;
  int64_t gpu = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r][col["ResourceId"]] != "GPU-shared") continue;
    const int64_t c = *decimal_micros(rows[r][col["BilledCost"]]);
    gpu += c;
    by_pod[rows[r][col["AllocatedResourceId"]]] = c;
    EXPECT_EQ(rows[r][col["ListUnitPrice"]], "3.600000");
    EXPECT_EQ(rows[r][col["ResourceType"]], "GPU");
    EXPECT_EQ(rows[r][col["AllocatedMethodId"]], "gpuledger-cost-policy-usage");
  }
  EXPECT_EQ(gpu, 120'000);
  EXPECT_EQ(by_pod["k8s/pod-a"], 78'000);
  EXPECT_EQ(by_pod["k8s/pod-b"], 42'000);
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r][col["ResourceId"]] == "MIG-d") {
      EXPECT_EQ(rows[r][col["ResourceType"]], "MIG instance");
    }
}

TEST(ShownMoney, LargestRemainderAddsUpToTheShownTotal) {
  // The issue's five teams: 0.015 + 0.014 x3 + 0.013 = 0.07, shown 0.02 + 0.02 + 0.01 + 0.01 + 0.01.
  const auto shown = round_parts({15'000, 14'000, 14'000, 14'000, 13'000}, 10'000);
  EXPECT_EQ(shown, (std::vector<int64_t>{20'000, 20'000, 10'000, 10'000, 10'000}));
  std::mt19937_64 rng(19);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<int64_t> parts(1 + rng() % 12);
    int64_t sum = 0;
    for (auto& p : parts) sum += p = static_cast<int64_t>(rng() % 5'000'000);
    for (int64_t unit : {1'000'000LL, 10'000LL, 1'000LL}) {
      const auto s = round_parts(parts, unit);
      int64_t shown_sum = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        shown_sum += s[i];
        EXPECT_EQ(s[i] % unit, 0);
        EXPECT_LT(std::abs(s[i] - parts[i]), unit);  // each part moves by less than one unit
      }
      EXPECT_EQ(shown_sum, (sum + unit / 2) / unit * unit);
    }
  }
  EXPECT_EQ(minor_unit_digits("USD"), 2);
  EXPECT_EQ(minor_unit_digits("JPY"), 0);
  EXPECT_EQ(minor_unit_digits("KWD"), 3);
  EXPECT_EQ(format_shown(1'234'570'000, 2), "1,234.57");
  EXPECT_EQ(format_shown(3'000'000, 0), "3");
  EXPECT_EQ(format_shown(1'234'000, 3), "1.234");
}

TEST(ShownMoney, TableRowsAndColumnsAddUp) {
  for (GroupBy by : {GroupBy::kTeam, GroupBy::kPod, GroupBy::kGpu}) {
    BillRequest q = request(Format::kTable);
    q.by = by;
    const Report r = build_bill(fixture_store(), q);
    const ShownCosts s = shown_costs(r.rows, r.currency);
    std::array<int64_t, 4> sum{};
    for (const auto& row : s.rows) {
      EXPECT_EQ(row[0] + row[1] + row[2], row[3]);
      for (int c = 0; c < 4; ++c) sum[c] += row[c];
    }
    EXPECT_EQ(sum, s.total);
    EXPECT_EQ(s.total[3], 350'000);  // 0.351429 shown as 0.35
  }
}

TEST(Efficiency, TheTotalIsTheSameWhateverTheGrouping) {
  std::optional<double> first;
  for (GroupBy by : {GroupBy::kTeam, GroupBy::kNamespace, GroupBy::kPod, GroupBy::kWorkload, GroupBy::kGpu}) {
    BillRequest q = request(Format::kTable);
    q.by = by;
    const Report r = build_bill(fixture_store(), q);
    ASSERT_TRUE(r.total.efficiency.sm_active) << to_string(by);
    // Only the shared H100 has device readings: SM active 0.5 over its GPU-time.
    EXPECT_DOUBLE_EQ(*r.total.efficiency.sm_active, 0.5) << to_string(by);
    if (first) {
      EXPECT_DOUBLE_EQ(*first, *r.total.efficiency.sm_active);
    }
    first = r.total.efficiency.sm_active;
  }
  BillRequest q = request(Format::kTable);
  q.by = GroupBy::kPod;
  const Report r = build_bill(fixture_store(), q);
  for (const auto& row : r.rows) {
    if (row.key != "ml/pod-a") continue;
    // pod-a did 3/4 of the shared GPU's work at SM active 0.5 while holding half of it:
    // its part of the GPU 0.375, of what it held 0.75.
    EXPECT_DOUBLE_EQ(*row.efficiency.sm_active, 0.375);
    EXPECT_DOUBLE_EQ(*row.efficiency_of_held.sm_active, 0.75);
  }
}

TEST(Audit, TheBillIdChangesWithItsInputsAndNotWithTheView) {
  testing::FixtureStore dir("bill_id");
  std::string id;
  {
    ledger::Store store(dir.path(), ledger::Store::Mode::kReadOnly);
    id = build_bill(store, request(Format::kTable)).audit.bill_id;
    EXPECT_EQ(id.rfind("sha256:", 0), 0u);
    EXPECT_EQ(id.size(), 7u + 64u);
    BillRequest by_pod = request(Format::kTable);
    by_pod.by = GroupBy::kPod;
    EXPECT_EQ(build_bill(store, by_pod).audit.bill_id, id);
    EXPECT_NE(build_bill(store, request(Format::kTable, Granularity::kDay, kT0, kT0 + 60)).audit.bill_id, id);
  }
  {
    ledger::Store store(dir.path());
    ledger::record_bill_inputs(store, "node-1", "prod", ledger::parse_prices(testing::kFixturePrices), kT0 - 10);
  }
  ledger::Store store(dir.path(), ledger::Store::Mode::kReadOnly);
  const Report r = build_bill(store, request(Format::kTable));
  EXPECT_NE(r.audit.bill_id, id);
  EXPECT_EQ(r.audit.node, "node-1");
  EXPECT_EQ(r.audit.cluster, "prod");
  ASSERT_EQ(r.audit.price_lists.size(), 1u);
  EXPECT_NE(r.audit.price_lists[0].second.find("\"idle_policy\":\"holders\""), std::string::npos);
  EXPECT_EQ(r.audit.cost_policies, std::vector<std::string>{"usage"});
  EXPECT_FALSE(r.audit.partial_period);
  // The reconciliation: GPU-hours on the GPU x rate = cost, per model.
  bool reconciled = false;
  for (const auto& line : audit_lines(r))
    if (line.find("Reconciliation, Tesla T4: 0.033333 GPU-hours on the GPU x 1.800000 USD per GPU-hour (the price "
                  "list's rate) = 0.060000 USD exactly") != std::string::npos)
      reconciled = true;
  EXPECT_TRUE(reconciled);
  BillRequest future = request(Format::kTable, Granularity::kDay, kT0, kT0 + 7200);
  future.generated_at = kT0 + 600;
  const Report partial = build_bill(store, future);
  EXPECT_TRUE(partial.audit.partial_period);
  EXPECT_EQ(partial.coverage.seconds_future, 6600);
  EXPECT_EQ(partial.coverage.seconds_no_data, 480);
  EXPECT_EQ(partial.coverage.seconds_watched, 120);
}

TEST(Coverage, BeforeTheAgentStartedIsNotAgentDown) {
  BillRequest q = request(Format::kTable, Granularity::kDay, kT0 - 3600, kT0 + 120);
  const Report r = build_bill(fixture_store(), q);
  EXPECT_EQ(r.coverage.seconds_before_agent, 3600);
  EXPECT_EQ(r.coverage.seconds_agent_down, 0);
  EXPECT_EQ(r.coverage.seconds_no_data, 0);
  EXPECT_EQ(r.coverage.seconds_watched, 120);
}

TEST(ChargePeriod, MonthsAndDays) {
  const auto periods = charge_periods(parse_time("2026-11-30T12:00:00Z", 0), parse_time("2027-01-02", 0), Granularity::kMonth);
  ASSERT_EQ(periods.size(), 3u);
  EXPECT_EQ(format_rfc3339(periods[0].second), "2026-12-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(periods[1].second), "2027-01-01T00:00:00Z");
  EXPECT_EQ(format_rfc3339(periods[2].second), "2027-01-02T00:00:00Z");
  EXPECT_THROW(parse_granularity("week"), Error);
}

}  // namespace
}  // namespace gpuledger::report

namespace gpuledger::report {
namespace {

// A month of windows (the fixture's two minutes copied to every 6 hours of
// 40 days, across a month's end; Jan 15 08:00 to Feb 24 02:00): FOCUS at every granularity adds up to the
// bill exactly, with one row per period, account and GPU.
TEST(Focus, AMonthAcrossPeriodsAddsUpExactly) {
  testing::FixtureStore dir("bill_month");
  std::vector<ledger::WindowRecord> base;
  {
    ledger::Store s(dir.path(), ledger::Store::Mode::kReadOnly);
    base = s.windows(kT0, kT0 + 120);
  }
  ledger::Store store(dir.path());
  std::vector<ledger::WindowRecord> copies;
  for (int64_t k = 1; k < 40 * 4; ++k)
    for (auto w : base) {
      w.start += k * 6 * 3600;
      w.end += k * 6 * 3600;
      copies.push_back(std::move(w));
    }
  store.insert_windows(copies);
  const int64_t from = parse_time("2027-01-15", 0), to = parse_time("2027-02-25", 0);
  const int64_t total = build_bill(store, request(Format::kTable, Granularity::kDay, from, to)).total.cost_total_micros();
  EXPECT_EQ(total, 160 * 351'429);
  for (auto [g, periods] : {std::pair{Granularity::kHour, 160}, {Granularity::kDay, 41}, {Granularity::kMonth, 2}}) {
    const std::string csv = render_bill(store, request(Format::kFocus, g, from, to));
    EXPECT_EQ(validate_focus(csv), total) << to_string(g);
    EXPECT_EQ(parse_csv(csv).size(), 1u + 5u * periods) << to_string(g);
  }
  // CSV by day: 41 days (Jan 15 08:00 to Feb 24 02:00) of 3 teams, and the TOTAL of the whole range.
  BillRequest csv = request(Format::kCsv, Granularity::kDay, from, to);
  csv.csv_totals = true;
  const auto rows = parse_csv(render_bill(store, csv));
  EXPECT_EQ(rows.size(), 1u + 41u * 3u + 1u);
  EXPECT_EQ(rows.back()[0], "TOTAL");
  EXPECT_EQ(*decimal_micros(rows.back()[6]), total);
  int64_t days = 0;
  for (size_t i = 1; i + 1 < rows.size(); ++i) days += *decimal_micros(rows[i][6]);
  EXPECT_EQ(days, total);
}

// The HTML's money adds up where people read it, and it carries the audit.
TEST(ShownMoney, TheHtmlShowsRowsThatAddUpAndTheAudit) {
  const std::string html = render_bill(fixture_store(), request(Format::kHtml));
  EXPECT_NE(html.find("id=\"audit\""), std::string::npos);
  EXPECT_NE(html.find("Bill id: sha256:"), std::string::npos);
  EXPECT_NE(html.find("Reconciliation, "), std::string::npos);
  // vision 0.198 + nlp 0.093429 + unallocated 0.06 = 0.351429: shown 0.20 + 0.09 + 0.06 = 0.35.
  for (const char* cell : {"title=\"0.198000 USD (exact)\">0.20<", "title=\"0.093429 USD (exact)\">0.09<",
                           "title=\"0.351429 USD (exact)\">0.35<", "id=\"total\">0.35 USD"})
    EXPECT_NE(html.find(cell), std::string::npos) << cell;
  EXPECT_EQ(html.find("holder unknown"), std::string::npos);
  EXPECT_EQ(html.find("see Notes"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::report
