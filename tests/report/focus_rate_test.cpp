// Issue 31, the rate is the rate, as the bill shows it: the issue's three GPUs
// at 2.00, 4.10 and 0.35 EUR an hour over 5 s windows. FOCUS's ListUnitPrice
// and ContractedUnitPrice are the configured rates (they were 2.000160,
// 4.099680 and 0.349920), and the audit's reconciliation is exact.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "csv_records.h"
#include "ledger/accountant.h"
#include "ledger/bill_inputs.h"
#include "report/bill.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using testing::kT0;

const char* kPrices = R"(currency: EUR
default_per_hour: 0.35
per_model:
  "A100": 2.00
  "H100": 4.10
window_seconds: 5
)";

TEST(FocusRate, ListUnitPriceIsTheConfiguredRateAndTheReconciliationIsExact) {
  const auto dir = std::filesystem::temp_directory_path() / ("gl_focus_rate_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ledger.db").string();
  {
    ledger::Store store(path);
    const ledger::PriceBook book = ledger::parse_prices(kPrices);
    ledger::record_bill_inputs(store, "node-1", "prod", book, kT0 - 60);
    ledger::Accountant acc(store, book);
    for (int64_t t = 0; t <= 3 * 3600; t += 5) {
      ledger::Observation o;
      o.time = static_cast<double>(kT0 + t);
      o.slots = {{"GPU-a100", "NVIDIA A100-SXM4-80GB", std::nullopt, ""},
                 {"GPU-h100", "NVIDIA H100 80GB HBM3", std::nullopt, ""},
                 {"GPU-t4", "Tesla T4", std::nullopt, ""}};
      acc.observe(o);
    }
  }
  ledger::Store store(path, ledger::Store::Mode::kReadOnly);
  BillRequest q;
  q.from = kT0;
  q.to = kT0 + 3 * 3600;
  q.format = Format::kFocus;
  q.granularity = Granularity::kHour;
  q.generated_at = kT0 + 86400;
  const auto rows = testing::parse_csv(render_bill(store, q));
  ASSERT_EQ(rows.size(), 1u + 3 * 3) << "three GPUs, three hours, one account (__unallocated__) each";
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  const std::map<std::string, std::string> rate = {
      {"GPU-a100", "2.000000"}, {"GPU-h100", "4.100000"}, {"GPU-t4", "0.350000"}};
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const std::string& gpu = row[col["ResourceId"]];
    EXPECT_EQ(row[col["ListUnitPrice"]], rate.at(gpu)) << gpu;
    EXPECT_EQ(row[col["ContractedUnitPrice"]], rate.at(gpu)) << gpu;
    EXPECT_EQ(row[col["BilledCost"]], rate.at(gpu)) << gpu << ": a whole hour costs the rate";
    EXPECT_EQ(row[col["PricingQuantity"]], "1") << gpu;
    const std::map<std::string, std::string> list_cost = {{"GPU-a100", "2"}, {"GPU-h100", "4.1"}, {"GPU-t4", "0.35"}};
    EXPECT_EQ(row[col["ListCost"]], list_cost.at(gpu)) << gpu;
  }
  q.format = Format::kTable;
  const std::string table = render_bill(store, q);
  for (const char* line : {"3.000000 GPU-hours on the GPU x 2.000000 EUR per GPU-hour (the price list's rate) = "
                           "6.000000 EUR exactly",
                           "3.000000 GPU-hours on the GPU x 4.100000 EUR per GPU-hour (the price list's rate) = "
                           "12.300000 EUR exactly",
                           "3.000000 GPU-hours on the GPU x 0.350000 EUR per GPU-hour (the price list's rate) = "
                           "1.050000 EUR exactly"}) {
    std::string flat;  // the table wraps lines: compare without the wrapping
    for (size_t i = 0; i < table.size(); ++i) {
      if (table[i] == '\n') {
        while (i + 1 < table.size() && table[i + 1] == ' ') ++i;
        flat += ' ';
      } else {
        flat += table[i];
      }
    }
    EXPECT_NE(flat.find(line), std::string::npos) << line << "\n" << table;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuledger::report
