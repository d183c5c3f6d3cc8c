// __unattributed__ (NVML time of processes no workload could be named for,
// ledger/window_split.h) is named in every report view for what it holds,
// like the other special accounts, and is nobody's workload.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ledger/window_split.h"
#include "report/report.h"
#include "report/special_accounts.h"

namespace gpuledger::report {
namespace {

constexpr int64_t kT0 = 1'800'000'000;

std::vector<ledger::WindowRecord> window_with_unattributed_time() {
  ledger::WindowRecord w;
  w.start = kT0;
  w.end = kT0 + 60;
  w.slot = {"GPU-1", "H100", std::nullopt, ""};
  w.currency = "USD";
  w.cost_micros = 100'000;
  w.busy_micros = 100'000;
  w.busy_fraction = 1;
  w.split_source = "nvml";
  w.charges = {{"k8s/a", ledger::ChargeKind::kBusy, 60'000}, {"__unattributed__", ledger::ChargeKind::kBusy, 40'000}};
  ledger::AccountRecord a, u;
  a.account = "k8s/a";
  a.labels = {"ns", "pod-a", "main", "team-a"};
  a.held_share = 1;
  a.gpu_busy_seconds = 36;
  u.account = "__unattributed__";
  u.gpu_busy_seconds = 24;
  w.accounts = {a, u};
  return {w};
}

TEST(UnattributedAccount, EveryViewNamesItForWhatItHolds) {
  const Report r = build_report(window_with_unattributed_time(), kT0, kT0 + 60, GroupBy::kTeam);
  const std::string meaning = special_account_meaning("__unattributed__");
  EXPECT_NE(meaning.find("no workload could be named for"), std::string::npos);
  EXPECT_TRUE(is_special_account("__unattributed__"));
  const std::string table = render_table(r);
  EXPECT_NE(table.find("__unattributed__: SM time NVML reported for processes"), std::string::npos) << table;
  EXPECT_NE(render_table(r, true).find("__unattributed__"), std::string::npos);
  EXPECT_NE(render_html(r).find("Unattributed (GPU time of processes no workload was found for)"), std::string::npos);
  EXPECT_NE(render_csv(r).find("\r\n__unattributed__,"), std::string::npos);
  const auto j = nlohmann::json::parse(render(r, Format::kJson));
  bool found = false;
  for (const auto& row : j["rows"])
    if (row["key"] == "__unattributed__") found = row["cost_busy_micros"] == 40'000;
  EXPECT_TRUE(found) << j.dump();
}

}  // namespace
}  // namespace gpuledger::report
