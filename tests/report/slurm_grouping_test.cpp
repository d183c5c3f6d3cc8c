// `report --by user` and `--by account`: a Slurm job's user and account as
// the controller gave them (store schema 10), every other workload under
// "(no Slurm user)" / "(no Slurm account)", the special accounts as they are.
// Exact micro-units adding up to the GPUs' cost, in every format, with a
// hostile user name (a fleet database holds other nodes' rows) escaped.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "report/bill.h"
#include "report/report.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using ledger::AccountRecord;
using ledger::ChargeKind;
using ledger::WindowRecord;
using testing::kT0;

const std::string kHostile = "=1+1<script>\",eve";  // a formula, markup, a quote and a separator

AccountRecord holder(const std::string& account, ledger::AccountLabels labels, double share) {
  AccountRecord a;
  a.account = account;
  a.labels = std::move(labels);
  a.held_share = a.allocated_share = share;
  return a;
}

WindowRecord window(const std::string& uuid, std::vector<AccountRecord> accounts, std::vector<ledger::Charge> charges) {
  WindowRecord w;
  w.start = kT0;
  w.end = kT0 + 60;
  w.slot = {uuid, "NVIDIA H100 80GB HBM3", std::nullopt, ""};
  w.currency = "EUR";
  w.observed_seconds = 60;
  w.accounts = std::move(accounts);
  w.charges = std::move(charges);
  for (const auto& c : w.charges) {
    w.cost_micros += c.micros;
    (c.kind == ChargeKind::kBusy ? w.busy_micros : w.idle_micros) += c.micros;
  }
  return w;
}

// GPU-1: job 1 (alice, physics) and a pod; GPU-2: job 2 (bob, chemistry),
// job 3 (a hostile user, chemistry) and the part nobody held.
std::vector<WindowRecord> windows() {
  return {window("GPU-1",
                 {holder("slurm/1", {"", "", "", "", "alice", "physics"}, 0.7),
                  holder("k8s/pod", {"ml", "pod", "main", "vision"}, 0.3)},
                 {{"k8s/pod", ChargeKind::kIdle, 30'000},
                  {"slurm/1", ChargeKind::kBusy, 60'000},
                  {"slurm/1", ChargeKind::kIdle, 10'000}}),
          window("GPU-2",
                 {holder("slurm/2", {"", "", "", "", "bob", "chemistry"}, 0.5),
                  holder("slurm/3", {"", "", "", "", kHostile, "chemistry"}, 0.5)},
                 {{"__unallocated__", ChargeKind::kIdle, 30'000},
                  {"slurm/2", ChargeKind::kBusy, 30'000},
                  {"slurm/3", ChargeKind::kBusy, 30'001}})};
}

BillSource source() {
  BillSource s;
  s.for_each_window = [](const std::function<void(WindowRecord&&)>& fn) {
    for (auto w : windows()) fn(std::move(w));
  };
  s.inputs = [] { return ledger::BillInputs{}; };
  return s;
}

std::string bill(GroupBy by, Format format) {
  BillRequest q;
  q.from = kT0;
  q.to = kT0 + 60;
  q.by = by;
  q.format = format;
  q.generated_at = kT0 + 3600;
  return render_bill(source(), q);
}

std::map<std::string, int64_t> micros_by_key(GroupBy by) {
  const auto j = nlohmann::json::parse(bill(by, Format::kJson));
  std::map<std::string, int64_t> out;
  int64_t sum = 0;
  for (const auto& row : j.at("rows")) {
    out[row.at("key").get<std::string>()] = row.at("cost_total_micros").get<int64_t>();
    sum += row.at("cost_total_micros").get<int64_t>();
  }
  EXPECT_EQ(sum, j.at("total").at("cost_total_micros").get<int64_t>());
  EXPECT_EQ(j.at("total").at("cost_total_micros").get<int64_t>(), 190'001);  // the GPUs' cost
  EXPECT_EQ(j.at("by").get<std::string>(), to_string(by));
  return out;
}

TEST(SlurmGrouping, ByAccountAddsUpToTheGpusCostExactly) {
  EXPECT_EQ(micros_by_key(GroupBy::kAccount), (std::map<std::string, int64_t>{{"physics", 70'000},
                                                                               {"chemistry", 60'001},
                                                                               {"(no Slurm account)", 30'000},
                                                                               {"__unallocated__", 30'000}}));
}

TEST(SlurmGrouping, ByUserAddsUpToTheGpusCostExactly) {
  EXPECT_EQ(micros_by_key(GroupBy::kUser), (std::map<std::string, int64_t>{{"alice", 70'000},
                                                                            {"bob", 30'000},
                                                                            {kHostile, 30'001},
                                                                            {"(no Slurm user)", 30'000},
                                                                            {"__unallocated__", 30'000}}));
}

TEST(SlurmGrouping, ParsedAndNamed) {
  EXPECT_EQ(parse_group_by("user"), GroupBy::kUser);
  EXPECT_EQ(parse_group_by("account"), GroupBy::kAccount);
  EXPECT_EQ(to_string(GroupBy::kAccount), "account");
  EXPECT_EQ(parse_rightsizing_by("account"), GroupBy::kAccount);
}

// Attack: a user name is a tenant's string: escaped in every format.
TEST(SlurmGrouping, AHostileUserIsEscapedInEveryFormat) {
  const std::string table = bill(GroupBy::kUser, Format::kTable);
  EXPECT_NE(table.find("Slurm user"), std::string::npos) << table;
  EXPECT_NE(table.find("alice"), std::string::npos) << table;
  const std::string csv = bill(GroupBy::kUser, Format::kCsv);
  EXPECT_EQ(csv.find("\n=1+1"), std::string::npos) << csv;  // never a cell a spreadsheet runs
  EXPECT_NE(csv.find("\n\"'=1+1<script>\"\",eve\","), std::string::npos) << csv;
  const std::string html = bill(GroupBy::kUser, Format::kHtml);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("=1+1&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("Slurm user"), std::string::npos);
  // FOCUS: one row per account; the Slurm user and account in its tags, as JSON.
  const std::string focus = bill(GroupBy::kUser, Format::kFocus);
  EXPECT_NE(focus.find(R"(""slurm_user"":""alice"",""slurm_account"":""physics"")"), std::string::npos) << focus;
  EXPECT_NE(focus.find(R"(""slurm_user"":""=1+1<script>\"",eve"")"), std::string::npos) << focus;
}

}  // namespace
}  // namespace gpuledger::report
