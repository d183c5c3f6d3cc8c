#include "report/focus_export.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <set>

#include "common/inert_text.h"
#include "common/utf8.h"
#include "ledger/prices.h"
#include "report/bill_audit.h"
#include "report/focus_decimal.h"
#include "report/report_text.h"
#include "report/special_accounts.h"
#include "common/micros_text.h"
#include "report/report_time.h"

namespace gpuledger::report {

const std::vector<std::string> kFocusColumns = {
    // FOCUS 1.2 mandatory columns, alphabetical.
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
    "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargePeriodEnd", "ChargePeriodStart", "ContractedCost",
    "EffectiveCost", "InvoiceIssuerName", "ListCost", "PricingQuantity", "PricingUnit", "ProviderName",
    "PublisherName", "ServiceCategory", "ServiceName",
    // Conditional and recommended columns this bill has values for.
    "ChargeFrequency", "ConsumedQuantity", "ConsumedUnit", "ContractedUnitPrice", "InvoiceId", "ListUnitPrice",
    "PricingCategory", "ResourceId", "ResourceName", "ResourceType", "ServiceSubcategory", "SkuId", "SkuMeter",
    "SkuPriceDetails", "SkuPriceId", "SubAccountId", "SubAccountName", "Tags",
    // FOCUS 1.3 split cost allocation.
    "AllocatedMethodId", "AllocatedMethodDetails", "AllocatedResourceId", "AllocatedResourceName", "AllocatedTags",
    // gpuledger's own (x_ prefix, as FOCUS requires of custom columns).
    "x_BillId", "x_Node", "x_Cluster", "x_CostBusy", "x_CostIdle", "x_CostMemory", "x_GpuHoursBusy",
    "x_PartialPeriod", "x_SmActive", "x_EnergyJoules", "x_VramGibHours"};

namespace {

// Columns that are amounts (stay numbers, a negative one too) or JSON (whose
// escapes are JSON's own); every other cell is text: spreadsheet_text.
const std::set<std::string> kAmountColumns = {"BilledCost",       "ContractedCost",      "EffectiveCost",
                                              "ListCost",         "PricingQuantity",     "ConsumedQuantity",
                                              "ContractedUnitPrice", "ListUnitPrice",    "x_CostBusy",
                                              "x_CostIdle",       "x_CostMemory",        "x_GpuHoursBusy",
                                              "x_SmActive",       "x_EnergyJoules",      "x_VramGibHours"};
const std::set<std::string> kJsonColumns = {"Tags", "AllocatedMethodDetails", "AllocatedTags"};

// Per column of kFocusColumns: written as it is (an amount or JSON), else as spreadsheet text.
// Looked up once, not per cell: a fleet's month is 720,000 rows of 56 cells.
const std::vector<bool>& verbatim_columns() {
  static const std::vector<bool> verbatim = [] {
    std::vector<bool> v;
    for (const auto& c : kFocusColumns) v.push_back(kAmountColumns.count(c) || kJsonColumns.count(c));
    return v;
  }();
  return verbatim;
}

std::string focus_cell(size_t column, const std::string& value) {
  return verbatim_columns().at(column) ? csv_field(value) : csv_field(spreadsheet_text(value));
}

struct AccountPart {
  ledger::AccountLabels labels;
  int64_t busy = 0, idle = 0, memory = 0;
  double held_gpu_hours = 0, busy_gpu_hours = 0;
  // SM activity over what the account held, where the device measured it.
  double sm_num = 0, sm_den = 0;
  bool sm_known = false;
  std::optional<int64_t> millijoules;  // nullopt: no window of it measured energy
  double vram_byte_seconds = 0;
  int64_t total() const { return busy + idle + memory; }
};

struct SlotPeriod {
  ledger::GpuSlot slot;
  std::string currency;
  int64_t cost = 0;
  double gpu_hours = 0;  // window x gpu_fraction: the hours the slot was there, in GPU-hours
  std::set<std::string> policies;
  std::map<std::string, AccountPart> accounts;
};

std::string decimal(double v, int places) {
  std::string s = fixed(v, places);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

// ASCII JSON: a name's controls, bidi and invisible characters are \u escapes
// there (JSON's own, so a reader still gets the exact name).
std::string json_text(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

struct FocusBuilder::State {
  int64_t from, to;
  Granularity granularity;
  std::map<std::pair<int64_t, std::string>, SlotPeriod> slots;  // (period start, uuid)
};

FocusBuilder::FocusBuilder(int64_t from, int64_t to, Granularity granularity) : s_(std::make_unique<State>()) {
  s_->from = from;
  s_->to = to;
  s_->granularity = granularity;
}

FocusBuilder::~FocusBuilder() = default;

void FocusBuilder::add(const ledger::WindowRecord& w) {
  // A window belongs to the period it starts in (as to the range it starts in).
  SlotPeriod& sp = s_->slots[{period_start(w.start, s_->granularity), w.slot.uuid}];
  sp.slot = w.slot;
  sp.currency = w.currency;
  sp.cost += w.cost_micros;
  const double len = static_cast<double>(w.end - w.start);
  sp.gpu_hours += len * w.gpu_fraction / 3600.0;
  sp.policies.insert(w.cost_policy);
  for (const auto& a : w.accounts) {
    AccountPart& part = sp.accounts[a.account];
    part.labels = a.labels;
    part.held_gpu_hours += a.held_share * len * w.gpu_fraction / 3600.0;
    part.busy_gpu_hours += a.gpu_busy_seconds * w.gpu_fraction / 3600.0;
    part.vram_byte_seconds += a.vram_byte_seconds;
    if (a.efficiency.sm_active && a.held_share > 0) {
      part.sm_num += *a.efficiency.sm_active * len * w.gpu_fraction;
      part.sm_den += a.held_share * len * w.gpu_fraction;
      part.sm_known = true;
    }
  }
  if (w.energy)
    for (const auto& e : w.energy->charges) {
      std::optional<int64_t>& mj = sp.accounts[e.account].millijoules;
      mj = mj.value_or(0) + e.millijoules;
    }
  for (const auto& ch : w.charges) {
    AccountPart& part = sp.accounts[ch.account];
    (ch.kind == ledger::ChargeKind::kBusy ? part.busy : ch.kind == ledger::ChargeKind::kIdle ? part.idle : part.memory) +=
        ch.micros;
  }
}

std::string FocusBuilder::finish(const Audit& audit, int64_t generated_at) const {
  std::string out;
  const Sink append = [&out](std::string_view text) { out += text; };
  write_header(append);
  write_rows(*s_, audit, generated_at, append);
  return out;
}

void FocusBuilder::write_header(const Sink& sink) {
  std::string out;
  for (size_t i = 0; i < kFocusColumns.size(); ++i) out += (i ? "," : "") + kFocusColumns[i];
  out += "\r\n";
  sink(out);
}

void FocusBuilder::flush(const Audit& audit, int64_t generated_at, const Sink& sink) {
  write_rows(*s_, audit, generated_at, sink);
  s_->slots.clear();
}

// The rows go to `sink` a mebibyte at a time, each piece whole rows made valid
// UTF-8: rows end in CRLF, so no repair spans two pieces.
void FocusBuilder::write_rows(const State& st, const Audit& audit, int64_t generated_at, const Sink& sink) {
  std::string out;
  auto emit = [&] {
    if (!out.empty()) sink(valid_utf8(out));
    out.clear();
  };
  const std::string node = audit.node, cluster = audit.cluster;
  const std::string account_id = !cluster.empty() ? cluster : !node.empty() ? node : "gpuledger";
  for (const auto& [key, sp] : st.slots) {
    const int64_t pstart = std::max(key.first, st.from);
    const int64_t pend = std::min(period_end(key.first, st.granularity), st.to);
    const int64_t bstart = period_start(key.first, Granularity::kMonth);
    const int64_t bend = period_end(key.first, Granularity::kMonth);
    const bool mig = sp.slot.mig_profile.has_value() && !sp.slot.mig_profile->empty();
    const std::string resource_name =
        sp.slot.model + (mig ? " MIG " + *sp.slot.mig_profile + " of " + sp.slot.parent_uuid : "");
    const double rate = sp.gpu_hours > 0 ? static_cast<double>(sp.cost) / sp.gpu_hours : 0;  // micros per GPU-hour
    // The configured rate (the price list in effect), else the one the windows' costs measure.
    const int64_t unit_micros = listed_rate_micros(audit, sp.slot).value_or(static_cast<int64_t>(rate + 0.5));
    const std::string unit_price = format_micros(unit_micros);
    // The SKU is the GPU (or MIG profile) model; its price, the rate per GPU-hour in the currency.
    const std::string sku = "gpu:" + sp.slot.model + (mig ? " MIG " + *sp.slot.mig_profile : "");
    const std::string sku_price = sku + ":" + unit_price + " " + sp.currency + "/GPU-Hour";
    std::string policy;
    for (const auto& p : sp.policies) policy += (policy.empty() ? "" : "+") + p;
    double held_total = 0;
    for (const auto& [account, part] : sp.accounts) held_total += part.held_gpu_hours;
    const size_t n = sp.accounts.size();
    for (const auto& [account, part] : sp.accounts) {
      // The account's ratio of the GPU's cost (of its held hours when the GPU cost nothing).
      const double ratio = sp.cost > 0      ? static_cast<double>(part.total()) / static_cast<double>(sp.cost)
                           : held_total > 0 ? part.held_gpu_hours / held_total
                                            : 1.0 / static_cast<double>(n);
      const std::string meaning = special_account_meaning(account);
      const ledger::AccountLabels& l = part.labels;
      std::string kinds;
      for (auto [k, v] : {std::pair{"busy", part.busy}, std::pair{"idle", part.idle}, std::pair{"memory", part.memory}})
        if (v > 0) kinds += (kinds.empty() ? "" : "+") + std::string(k);
      if (kinds.empty()) kinds = "none";
      nlohmann::ordered_json tags = {{"team", l.team},          {"namespace", l.namespace_name},
                                     {"pod", l.pod},            {"container", l.container},
                                     {"node", node},            {"cluster", cluster},
                                     {"cost_kind", kinds},      {"account", account},
                                     {"gpu_model", sp.slot.model}, {"cost_policy", policy}};
      nlohmann::ordered_json allocated_tags = {{"account", account},
                                               {"team", l.team},
                                               {"namespace", l.namespace_name},
                                               {"pod", l.pod},
                                               {"container", l.container}};
      // A Slurm job's user and account (store schema 10), only where there are some.
      for (auto* t : {&tags, &allocated_tags}) {
        if (!l.slurm_user.empty()) (*t)["slurm_user"] = l.slurm_user;
        if (!l.slurm_account.empty()) (*t)["slurm_account"] = l.slurm_account;
      }
      nlohmann::ordered_json details = {
          {"Elements",
           nlohmann::ordered_json::array({{{"AllocatedRatio", std::stod(decimal(ratio, 12))},
                                           {"UsageUnit", "GPU-Hours"},
                                           {"UsageQuantity", std::stod(decimal(part.held_gpu_hours, 9))}}})},
          {"x_CostPolicy", policy}};
      std::string who = !meaning.empty() ? account + " (" + meaning + ")"
                        : !l.pod.empty() ? l.namespace_name + "/" + l.pod + (l.container.empty() ? "" : "/" + l.container)
                                         : account;
      const std::string billed = format_micros(part.total());
      // PricingQuantity in nano-GPU-hours, and the list (= contracted) cost of it to the last digit.
      const int64_t quantity = to_nanos(sp.gpu_hours * ratio);
      const std::string list_cost = micros_times_nanos(unit_micros, quantity);
      const std::string sm_active = part.sm_known && part.sm_den > 0 ? decimal(part.sm_num / part.sm_den, 6) : "";
      const std::string energy = part.millijoules ? scaled_decimal(*part.millijoules, 3) : "";
      const std::string vram =
          part.vram_byte_seconds > 0 ? decimal(part.vram_byte_seconds / (1024.0 * 1024.0 * 1024.0) / 3600.0, 9) : "";
      const std::string subaccount = meaning.empty() ? l.team : "";
      std::vector<std::string> cells = {
          billed, account_id, account_id, sp.currency, format_rfc3339(bend), format_rfc3339(bstart), "Usage", "",
          "GPU time of " + who + " on " + resource_name + " (" + sp.slot.uuid + "), split by cost policy " + policy,
          format_rfc3339(pend), format_rfc3339(pstart), list_cost, billed, "gpuledger", list_cost,
          scaled_decimal(quantity, 9), "GPU-Hours", "gpuledger", "gpuledger", "Compute", "GPU time",
          // conditional and recommended; InvoiceId null: gpuledger issues no invoice (the bill id is x_BillId)
          "Usage-Based", decimal(part.held_gpu_hours, 9), "GPU-Hours", unit_price, "", unit_price, "Standard",
          sp.slot.uuid, resource_name, mig ? "MIG instance" : "GPU", "Containers", sku, "GPU time", "", sku_price,
          subaccount, subaccount, json_text(tags),
          // split allocation
          "gpuledger-cost-policy-" + policy, json_text(details), account, meaning.empty() ? who : account,
          json_text(allocated_tags),
          // gpuledger's own
          audit.bill_id, node, cluster, format_micros(part.busy), format_micros(part.idle),
          format_micros(part.memory), decimal(part.busy_gpu_hours, 9), generated_at > 0 && pend > generated_at ? "true" : "false",
          sm_active, energy, vram};
      for (size_t i = 0; i < cells.size(); ++i) {
        if (i) out += ',';
        out += focus_cell(i, cells[i]);
      }
      out += "\r\n";
      if (out.size() >= (1u << 20)) emit();
    }
  }
  emit();
}

}  // namespace gpuledger::report
