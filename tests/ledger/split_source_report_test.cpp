// The reports say which evidence split each window (split_sources.h): JSON per
// row and in the coverage, HTML in the coverage; CSV and the table unchanged.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/report.h"

namespace gpuledger::report {
namespace {

ledger::WindowRecord window(int64_t start, const std::string& split_source) {
  ledger::WindowRecord w;
  w.start = start;
  w.end = start + 3600;
  w.slot = {"GPU-1", "H100", std::nullopt, ""};
  w.cost_micros = 1000;
  w.busy_micros = 1000;
  w.busy_fraction = 1;
  w.split_source = split_source;
  ledger::AccountRecord a;
  a.account = "k8s/a";
  a.labels = {"ns", "a", "main", "team-a"};
  a.gpu_busy_seconds = 3600;
  a.held_share = 1;
  w.accounts = {a};
  w.charges = {{"k8s/a", ledger::ChargeKind::kBusy, 1000}};
  return w;
}

TEST(SplitSourceReport, JsonAndHtmlSayWhichEvidenceSplitTheWindows) {
  const Report r = build_report({window(0, "nvml"), window(3600, "nvml"), window(7200, "spans"), window(10800, "")},
                                0, 14400, GroupBy::kTeam);
  const auto j = nlohmann::json::parse(render_json(r));
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["split_source"], "nvml+spans+unknown");
  EXPECT_DOUBLE_EQ(row["split_busy_gpu_hours"]["nvml"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row["split_busy_gpu_hours"]["spans"].get<double>(), 1.0);
  EXPECT_EQ(j["coverage"]["windows_by_split_source"]["nvml"], 2);
  EXPECT_EQ(j["coverage"]["windows_by_split_source"]["unknown"], 1);  // written before schema 7
  EXPECT_NE(render_html(r).find("<dt>Busy part split by</dt><dd>nvml 2, spans 1, unknown 1 of 4 windows with users"),
            std::string::npos);
  EXPECT_EQ(render_csv(r).find("split"), std::string::npos);  // the CSV columns are a contract: unchanged
}

}  // namespace
}  // namespace gpuledger::report
