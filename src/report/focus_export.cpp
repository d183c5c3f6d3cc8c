#include "report/focus_export.h"

#include <algorithm>
#include <cstdint>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "common/micros_text.h"
#include "common/recent_map.h"
#include "ledger/prices.h"
#include "report/bill_audit.h"
#include "report/focus_cells.h"
#include "report/focus_decimal.h"
#include "report/report_text.h"
#include "report/report_time.h"
#include "report/special_accounts.h"

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

// (period start, the windows' "cluster/node" or "", uuid): a fleet's GPUs are
// rows of their own node, even where two nodes claim one UUID.
using Slots = RecentMap<std::tuple<int64_t, std::string, std::string>, SlotPeriod>;
using SlotIterator = Slots::Map::const_iterator;

}  // namespace

struct FocusBuilder::State {
  int64_t from, to;
  Granularity granularity;
  Slots slots;
};

FocusBuilder::FocusBuilder(int64_t from, int64_t to, Granularity granularity) : s_(std::make_unique<State>()) {
  s_->from = from;
  s_->to = to;
  s_->granularity = granularity;
}

FocusBuilder::~FocusBuilder() = default;

void FocusBuilder::add(const ledger::WindowRecord& w) {
  // A window belongs to the period it starts in (as to the range it starts in).
  SlotPeriod& sp = s_->slots[{period_start(w.start, s_->granularity), w.node, w.slot.uuid}];
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

size_t FocusBuilder::held() const { return s_->slots.size(); }

void FocusBuilder::flush(const Audit& audit, int64_t generated_at, const Sink& sink) {
  write_rows(*s_, audit, generated_at, sink);
  s_->slots.clear();
}

namespace {

// What the rows of one charge period share: made once a period, not once a
// GPU (a fleet's day is 8,000 GPUs; the four times were ~2 % of its export).
struct PeriodCells {
  int64_t key_start = INT64_MIN;
  std::string bstart, bend, pstart, pend;  // the billing and charge periods, RFC 3339
  bool partial = false;
};

void period_cells(PeriodCells& c, int64_t key_start, int64_t from, int64_t to, Granularity granularity,
                  int64_t generated_at) {
  if (c.key_start == key_start) return;
  c.key_start = key_start;
  const int64_t pend = std::min(period_end(key_start, granularity), to);
  c.pstart = format_rfc3339(std::max(key_start, from));
  c.pend = format_rfc3339(pend);
  c.bstart = format_rfc3339(period_start(key_start, Granularity::kMonth));
  c.bend = format_rfc3339(period_end(key_start, Granularity::kMonth));
  c.partial = generated_at > 0 && pend > generated_at;
}

// What a slot-period's rows (one an account) share, made once for them.
struct SlotCells {
  const PeriodCells& period;
  std::string resource_name, resource_type, sku, sku_price, unit_price, policy, method;
  int64_t unit_micros = 0;
};

SlotCells slot_cells(const PeriodCells& period, const SlotPeriod& sp, const Audit& audit) {
  SlotCells c{period, {}, {}, {}, {}, {}, {}, {}, 0};
  const bool mig = sp.slot.mig_profile.has_value() && !sp.slot.mig_profile->empty();
  c.resource_name = sp.slot.model + (mig ? " MIG " + *sp.slot.mig_profile + " of " + sp.slot.parent_uuid : "");
  c.resource_type = mig ? "MIG instance" : "GPU";
  const double rate = sp.gpu_hours > 0 ? static_cast<double>(sp.cost) / sp.gpu_hours : 0;  // micros per GPU-hour
  // The configured rate (the price list in effect), else the one the windows' costs measure.
  c.unit_micros = listed_rate_micros(audit, sp.slot).value_or(static_cast<int64_t>(rate + 0.5));
  c.unit_price = format_micros(c.unit_micros);
  // The SKU is the GPU (or MIG profile) model; its price, the rate per GPU-hour in the currency.
  c.sku = "gpu:" + sp.slot.model + (mig ? " MIG " + *sp.slot.mig_profile : "");
  c.sku_price = c.sku + ":" + c.unit_price + " " + sp.currency + "/GPU-Hour";
  for (const auto& p : sp.policies) c.policy += (c.policy.empty() ? "" : "+") + p;
  c.method = "gpuledger-cost-policy-" + c.policy;
  return c;
}

// Cells that are the same on every row of a slot-period (its GPU, period,
// prices, node), rendered once as the row would write them, commas between,
// and appended as one piece: 33 of a row's 56 cells, each scanned and quoted
// once a slot instead of once an account.
struct CellRun {
  size_t first_column = 0, cells = 0;
  std::string text;
};

// One row's cells in kFocusColumns' order, each as focus_cell makes it.
class RowCells {
 public:
  explicit RowCells(std::string& out, size_t first_column = 0)
      : out_(out), first_(first_column), column_(first_column) {}
  RowCells& operator<<(std::string_view v) {
    if (column_ > first_) out_ += ',';
    (verbatim_columns().at(column_++) ? append_csv_cell : append_text_cell)(out_, v);
    return *this;
  }
  RowCells& operator<<(const CellRun& run) {
    if (run.first_column != column_) throw std::logic_error("a FOCUS row's cells out of place");
    if (column_ > first_) out_ += ',';
    out_ += run.text;
    column_ += run.cells;
    return *this;
  }
  void end() {
    if (column_ != kFocusColumns.size()) throw std::logic_error("a FOCUS row of the wrong width");
    out_ += "\r\n";
  }

 private:
  std::string& out_;
  size_t first_, column_;
};

CellRun cell_run(size_t first_column, std::initializer_list<std::string_view> cells) {
  CellRun run{first_column, cells.size(), {}};
  RowCells row(run.text, first_column);
  for (std::string_view c : cells) row << c;
  return run;
}

// A JSON object of text values, as nlohmann's ordered_json dumps it (ASCII);
// a Slurm job's user and account (store schema 10) only where there are some.
using JsonFields = std::initializer_list<std::pair<std::string_view, std::string_view>>;
const std::string& json_object(std::string& out, JsonFields fields, const ledger::AccountLabels& l) {
  out = "{";
  auto field = [&](std::string_view key, std::string_view value) {
    if (out.size() > 1) out += ',';
    append_json_string(out, key);
    out += ':';
    append_json_string(out, value);
  };
  for (const auto& [key, value] : fields) field(key, value);
  if (!l.slurm_user.empty()) field("slurm_user", l.slurm_user);
  if (!l.slurm_account.empty()) field("slurm_account", l.slurm_account);
  out += '}';
  return out;
}

// AllocatedMethodDetails: the account's ratio of the GPU's cost and the GPU-hours it held.
const std::string& method_details(std::string& out, double ratio, double held_gpu_hours, const std::string& policy) {
  out = "{\"Elements\":[{\"AllocatedRatio\":";
  append_json_number(out, std::stod(decimal(ratio, 12)));
  out += ",\"UsageUnit\":\"GPU-Hours\",\"UsageQuantity\":";
  append_json_number(out, std::stod(decimal(held_gpu_hours, 9)));
  out += "}],\"x_CostPolicy\":";
  append_json_string(out, policy);
  out += '}';
  return out;
}

// The kinds of charge an account has, "busy+idle"; "none" without any.
std::string cost_kinds(const AccountPart& part) {
  std::string kinds;
  for (auto [k, v] : {std::pair{"busy", part.busy}, std::pair{"idle", part.idle}, std::pair{"memory", part.memory}})
    if (v > 0) kinds += (kinds.empty() ? "" : "+") + std::string(k);
  return kinds.empty() ? "none" : kinds;
}

// A slot-period's cells that every account's row repeats (CellRun), by the
// column each run starts at, and its description's end.
struct SlotRuns {
  CellRun account_to_category, charge_period, provider, unit_to_frequency, consumed_unit_to_sku_price, method,
      bill_id_to_cluster;
  std::string description_tail;  // after the account: " on <GPU> (<uuid>), split by cost policy <policy>"
};

SlotRuns slot_runs(const SlotPeriod& sp, const SlotCells& c, const std::string& account_id, const std::string& bill_id,
                   const std::string& node, const std::string& cluster) {
  const PeriodCells& p = c.period;
  return {cell_run(1, {account_id, account_id, sp.currency, p.bend, p.bstart, "Usage", ""}),
          cell_run(9, {p.pend, p.pstart}),
          cell_run(13, {"gpuledger"}),
          cell_run(16, {"GPU-Hours", "gpuledger", "gpuledger", "Compute", "GPU time", "Usage-Based"}),
          cell_run(23, {"GPU-Hours", c.unit_price, "", c.unit_price, "Standard", sp.slot.uuid, c.resource_name,
                        c.resource_type, "Containers", c.sku, "GPU time", "", c.sku_price}),
          cell_run(39, {c.method}),
          cell_run(44, {bill_id, node, cluster}),
          " on " + c.resource_name + " (" + sp.slot.uuid + "), split by cost policy " + c.policy};
}

// The text cells a row makes, their storage reused row after row.
struct RowText {
  std::string who, description, tags, details, allocated_tags;
};

struct RowContext {
  const SlotPeriod& sp;
  // The node and cluster the GPU's windows came from (its key's "cluster/node":
  // a fleet read names each window's); a node's own store names none, and the
  // bill's (its audit's) are the row's.
  const std::string &node, &cluster;
  const SlotCells& c;
  const SlotRuns& runs;
  RowText& text;
};

// Who an account is in words: a special account's meaning, a pod's
// namespace/pod/container, else its id.
const std::string& account_words(std::string& out, const std::string& account, const std::string& meaning,
                                 const ledger::AccountLabels& l) {
  if (!meaning.empty())
    out.assign(account).append(" (").append(meaning).append(")");
  else if (!l.pod.empty())
    out.assign(l.namespace_name).append("/").append(l.pod).append(l.container.empty() ? "" : "/").append(l.container);
  else
    out.assign(account);
  return out;
}

void write_account_row(std::string& out, RowContext& x, const std::string& account, const AccountPart& part,
                       double ratio) {
  const SlotPeriod& sp = x.sp;
  const SlotCells& c = x.c;
  const SlotRuns& runs = x.runs;
  const std::string &node = x.node, &cluster = x.cluster;
  const std::string meaning = special_account_meaning(account);
  const ledger::AccountLabels& l = part.labels;
  RowText& t = x.text;
  const std::string& who = account_words(t.who, account, meaning, l);
  const std::string billed = format_micros(part.total());
  // PricingQuantity in nano-GPU-hours, and the list (= contracted) cost of it to the last digit.
  const int64_t quantity = to_nanos(sp.gpu_hours * ratio);
  const std::string list_cost = micros_times_nanos(c.unit_micros, quantity);
  const std::string_view subaccount = meaning.empty() ? std::string_view(l.team) : std::string_view();
  RowCells row(out);
  row << billed << runs.account_to_category
      << t.description.assign("GPU time of ").append(who).append(runs.description_tail) << runs.charge_period
      << list_cost << billed << runs.provider << list_cost << scaled_decimal(quantity, 9)
      << runs.unit_to_frequency
      // conditional and recommended; InvoiceId null: gpuledger issues no invoice (the bill id is x_BillId)
      << decimal(part.held_gpu_hours, 9) << runs.consumed_unit_to_sku_price << subaccount << subaccount
      << json_object(t.tags,
                     {{"team", l.team},
                      {"namespace", l.namespace_name},
                      {"pod", l.pod},
                      {"container", l.container},
                      {"node", node},
                      {"cluster", cluster},
                      {"cost_kind", cost_kinds(part)},
                      {"account", account},
                      {"gpu_model", sp.slot.model},
                      {"cost_policy", c.policy}},
                     l)
      // split allocation
      << runs.method << method_details(t.details, ratio, part.held_gpu_hours, c.policy) << account
      << (meaning.empty() ? who : account)
      << json_object(t.allocated_tags,
                     {{"account", account},
                      {"team", l.team},
                      {"namespace", l.namespace_name},
                      {"pod", l.pod},
                      {"container", l.container}},
                     l)
      // gpuledger's own
      << runs.bill_id_to_cluster << format_micros(part.busy) << format_micros(part.idle) << format_micros(part.memory)
      << decimal(part.busy_gpu_hours, 9) << (c.period.partial ? "true" : "false")
      << (part.sm_known && part.sm_den > 0 ? decimal(part.sm_num / part.sm_den, 6) : "")
      << (part.millijoules ? scaled_decimal(*part.millijoules, 3) : "")
      << (part.vram_byte_seconds > 0 ? decimal(part.vram_byte_seconds / (1024.0 * 1024.0 * 1024.0) / 3600.0, 9) : "");
  row.end();
}

// The rows of the slots [first, last) to `sink`, a mebibyte at a time.
void write_slots(SlotIterator first, SlotIterator last, const Audit& audit, int64_t from, int64_t to,
                 Granularity granularity, int64_t generated_at, const FocusBuilder::Sink& sink) {
  std::string out;
  auto emit = [&] {
    if (!out.empty()) sink(out);
    out.clear();
  };
  const std::string account_id = !audit.cluster.empty() ? audit.cluster : !audit.node.empty() ? audit.node : "gpuledger";
  PeriodCells period;
  RowText text;
  for (auto it = first; it != last; ++it) {
    const auto& [key, sp] = *it;
    period_cells(period, std::get<0>(key), from, to, granularity, generated_at);
    const SlotCells cells = slot_cells(period, sp, audit);
    const ledger::WindowOrigin origin = ledger::window_origin(std::get<1>(key));
    const bool own = !origin.node.empty();
    const std::string& node = own ? origin.node : audit.node;
    const std::string& cluster = own ? origin.cluster : audit.cluster;
    const SlotRuns runs = slot_runs(sp, cells, account_id, audit.bill_id, node, cluster);
    RowContext x{sp, node, cluster, cells, runs, text};
    double held_total = 0;
    for (const auto& [account, part] : sp.accounts) held_total += part.held_gpu_hours;
    const size_t n = sp.accounts.size();
    for (const auto& [account, part] : sp.accounts) {
      // The account's ratio of the GPU's cost (of its held hours when the GPU cost nothing).
      const double ratio = sp.cost > 0      ? static_cast<double>(part.total()) / static_cast<double>(sp.cost)
                           : held_total > 0 ? part.held_gpu_hours / held_total
                                            : 1.0 / static_cast<double>(n);
      write_account_row(out, x, account, part, ratio);
      if (out.size() >= (1u << 20)) emit();
    }
  }
  emit();
}

}  // namespace

// The rows go to `sink` a mebibyte at a time, each piece whole rows. Every
// cell is valid UTF-8 (csv_field's repair, or ASCII), so no piece needs one.
// Many slots are cut in as many runs as cores, in order: the first written as
// it is made, the others made meanwhile on their own threads and written
// after it (at most kFocusRowsHeld slots' text held).
void FocusBuilder::write_rows(const State& st, const Audit& audit, int64_t generated_at, const Sink& sink) {
  constexpr size_t kSlotsPerRun = 256;
  const size_t runs = std::clamp<size_t>(std::min<size_t>(std::thread::hardware_concurrency(), 8), 1,
                                         std::max<size_t>(1, st.slots.size() / kSlotsPerRun));
  std::vector<SlotIterator> bounds = {st.slots.all().begin()};
  for (size_t k = 1; k < runs; ++k) bounds.push_back(std::next(bounds.back(), static_cast<long>(st.slots.size() / runs)));
  bounds.push_back(st.slots.all().end());
  std::vector<std::future<std::vector<std::string>>> later;
  for (size_t k = 1; k < runs; ++k)
    later.push_back(std::async(std::launch::async, [&, k] {
      std::vector<std::string> pieces;
      write_slots(bounds[k], bounds[k + 1], audit, st.from, st.to, st.granularity, generated_at,
                  [&](std::string_view piece) { pieces.emplace_back(piece); });
      return pieces;
    }));
  write_slots(bounds[0], bounds[1], audit, st.from, st.to, st.granularity, generated_at, sink);
  for (auto& run : later)
    for (const auto& piece : run.get()) sink(piece);
}

}  // namespace gpuledger::report
