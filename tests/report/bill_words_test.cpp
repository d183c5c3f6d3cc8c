// Issue 31's words and numbers that agree: an empty range's currency, coverage
// durations for people, and busy hours beside a busy cost.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "ledger/bill_inputs.h"
#include "report/bill.h"
#include "report/bill_words.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using testing::kT0;

BillRequest request(Format f, int64_t from, int64_t to) {
  BillRequest q;
  q.from = from;
  q.to = to;
  q.format = f;
  q.generated_at = kT0 + 3600;
  return q;
}

// The store's windows are in USD from the fixture; its price list, recorded later, in EUR: a range without
// windows names the price list's currency, not the builder's default USD.
TEST(BillWords, AnEmptyRangesCurrencyIsTheStoresPriceList) {
  testing::FixtureStore dir("empty_currency");
  {
    ledger::Store store(dir.path());
    std::string eur = testing::kFixturePrices;
    eur.replace(eur.find("USD"), 3, "EUR");
    ledger::record_bill_inputs(store, "node-1", "prod", ledger::parse_prices(eur), kT0 - 10);
  }
  ledger::Store store(dir.path(), ledger::Store::Mode::kReadOnly);
  const auto empty = nlohmann::json::parse(render_bill(store, request(Format::kJson, kT0 + 86400, kT0 + 2 * 86400)));
  EXPECT_EQ(empty["currency"], "EUR");
  EXPECT_EQ(empty["rightsizing"]["currency"], "EUR");
  const auto full = nlohmann::json::parse(render_bill(store, request(Format::kJson, kT0, kT0 + 120)));
  EXPECT_EQ(full["currency"], "USD") << "a range with windows keeps theirs";
}

TEST(BillWords, CoverageSaysDaysAndHours) {
  testing::FixtureStore dir("coverage_words");
  ledger::Store store(dir.path(), ledger::Store::Mode::kReadOnly);
  const Report r = build_bill(store, request(Format::kTable, 0, kT0 + 120));  // from 1970
  bool found = false;
  for (const auto& line : coverage_lines(r))
    if (line.find("before the agent started") != std::string::npos) {
      found = true;
      EXPECT_EQ(line, "20833d 8h before the agent started: the store has no window before 2027-01-15T08:00:00Z, so "
                      "nothing is billed for it.");
    }
  EXPECT_TRUE(found);
}

// The HTML summary's GPU-hours beside "… for GPU time in use".
TEST(BillWords, TheSummaryNeverShowsNoBusyHoursBesideABusyCost) {
  Report r;
  r.from = kT0;
  r.to = kT0 + 86400;
  r.total.gpu_hours_held = 24;
  r.total.cost_busy_micros = 1'231'200'000;
  r.total.gpu_hours_busy = 0.0042;
  EXPECT_NE(render(r, Format::kHtml).find("<dd>24.00 held, 0.004 busy</dd>"), std::string::npos);
  r.total.gpu_hours_busy = 0;
  const std::string html = render(r, Format::kHtml);
  EXPECT_NE(html.find("<dd>24.00 held, 0 busy attributed (the GPUs reported busy time"), std::string::npos) << html;
  EXPECT_EQ(html.find("0.00 busy"), std::string::npos);
  r.total.gpu_hours_busy = 3.5;
  EXPECT_NE(render(r, Format::kHtml).find("<dd>24.00 held, 3.50 busy</dd>"), std::string::npos);
}

}  // namespace
}  // namespace gpuledger::report
