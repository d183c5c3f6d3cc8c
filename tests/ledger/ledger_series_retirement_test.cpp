// The ledger's per-account series (gpuledger_cost_total and its siblings) used
// to stay for the life of the agent, one per account and GPU ever charged, so
// they grew with pod churn. An account neither live, nor holding a GPU, nor
// charged for --retire-after now leaves /metrics; its totals stay in the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "ledger/accountant.h"
#include "ledger/series_retirement.h"
#include "ledger_fixture.h"

namespace gpuledger::ledger {
namespace {

namespace fs = std::filesystem;
using testing::kT0;

// Sample lines of the page (every family the accountant writes), those
// containing `part` only when given.
size_t series_count(const Accountant& acc, const std::string& part = "") {
  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  std::istringstream in(out.text());
  size_t n = 0;
  for (std::string line; std::getline(in, line);)
    // Per-GPU families (windows by split_source) are no account's series: not retired.
    if (!line.empty() && line[0] != '#' && line.find(part) != std::string::npos &&
        line.rfind("gpuledger_ledger_split_", 0) != 0)
      ++n;
  return n;
}

std::string page(const Accountant& acc) {
  metrics::ExpositionWriter out;
  acc.write_metrics(out);
  return out.text();
}

// The fixture node, plus `n` short-lived pods on the T4 while churn is on.
Observation with_churn(int t, int n) {
  Observation o = testing::fixture_observation(t);
  for (int i = 0; i < n; ++i) {
    const std::string pod = "churn-" + std::to_string(i);
    const AccountLabels l{"batch", pod, "main", "batch"};
    o.holders.push_back({"GPU-t4", "k8s/" + pod, l, 0.2});
    o.workloads.push_back({"k8s/" + pod, l, 0.1 * (t - 120), static_cast<uint64_t>(t - 120), 0, {"GPU-t4"}, {}});
  }
  return o;
}

TEST(LedgerSeriesRetirement, ChurnedAccountsLeaveMetricsAfterRetireAfterAndStayInTheStore) {
  const fs::path dir = fs::temp_directory_path() / ("gl_series_retire_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    Store store((dir / "ledger.db").string());
    Accountant acc(store, parse_prices(testing::kFixturePrices));
    acc.retire_series_after(120);
    testing::run_fixture(acc, 0, 120);  // two windows of the steady node
    const size_t baseline = series_count(acc);
    ASSERT_GT(baseline, 0u);

    for (int t = 130; t <= 170; t += 10) acc.observe(with_churn(t, 5));  // five pods, then gone
    for (int t = 180; t <= 290; t += 10) acc.observe(with_churn(t, 0));
    // Charged in the window that closed at 180: kept until 180 + 120.
    const std::string churned = R"(gpuledger_cost_total{namespace="batch",pod="churn-3",container="main",team="batch",UUID="GPU-t4",kind="idle"})";
    EXPECT_NE(page(acc).find(churned), std::string::npos) << page(acc);
    EXPECT_GT(series_count(acc), baseline);

    acc.observe(with_churn(300, 0));
    EXPECT_EQ(series_count(acc), baseline) << page(acc);
    EXPECT_EQ(page(acc).find("churn-"), std::string::npos);
    // The steady accounts and the special ones stay.
    EXPECT_NE(page(acc).find(R"(pod="pod-d")"), std::string::npos);
    EXPECT_NE(page(acc).find(R"(team="__unallocated__")"), std::string::npos);

    // The totals stay in the store.
    int64_t churn_micros = 0;
    for (const auto& w : store.windows(kT0 + 120, kT0 + 180))
      for (const auto& c : w.charges)
        if (c.account.rfind("k8s/churn-", 0) == 0) churn_micros += c.micros;
    EXPECT_EQ(churn_micros, 30'000);  // the T4's whole window (1.80/h, 60 s), all theirs

    // An account that comes back starts its counters again.
    for (int t = 310; t <= 360; t += 10) acc.observe(with_churn(t, 1));
    EXPECT_NE(page(acc).find(R"(pod="churn-0")"), std::string::npos);

    // A restarted agent continues the counters from the store, the gone
    // accounts' too, and retires those --retire-after after it starts.
    Accountant restarted(store, parse_prices(testing::kFixturePrices));
    restarted.retire_series_after(120);
    for (int t = 370; t <= 490; t += 10) restarted.observe(with_churn(t, 0));
    const size_t churn_series = series_count(restarted, "churn-");  // seen at 380
    EXPECT_GT(churn_series, 0u);
    const size_t before = series_count(restarted);
    restarted.observe(with_churn(500, 0));
    EXPECT_EQ(page(restarted).find("churn-"), std::string::npos) << page(restarted);
    EXPECT_EQ(series_count(restarted), before - churn_series);
  }
  fs::remove_all(dir);
}

TEST(LedgerSeriesRetirement, NeverWithoutRetireAfterAndNeverTheSpecialAccounts) {
  SeriesRetirement r;
  r.seen({"ns", "p", "c", "t"}, 100);
  EXPECT_TRUE(r.due(1e12).empty());  // off by default
  r.set_after(10);
  r.seen({"ns", "p", "c", "t"}, 100);
  r.seen({"", "", "", "__unallocated__"}, 100);
  r.seen({"", "", "", "__idle__"}, 100);
  r.seen({"ns", "q", "c", "t"}, 105);
  EXPECT_TRUE(r.due(109.5).empty());
  const auto due = r.due(110);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0], (AccountLabels{"ns", "p", "c", "t"}));
  EXPECT_TRUE(r.due(110).empty());  // forgotten once returned
  EXPECT_EQ(r.due(115).size(), 1u);
}

}  // namespace
}  // namespace gpuledger::ledger
