#pragma once
// `report --format focus`: the bill as FOCUS (FinOps Open Cost and Usage
// Specification) CSV, which FinOps tools load without a mapping step.
//
// One row per charge period (--granularity hour|day|month, clipped to the
// range; ChargePeriodEnd exclusive), ledger account and GPU slot. The columns:
// every column FOCUS 1.2 makes mandatory, the resource, quantity and price
// columns, Tags, FOCUS 1.3's split cost allocation columns and a few x_
// columns of gpuledger's own (kFocusColumns lists them in order).
//
// Split cost allocation: each GPU slot's cost in a period is the origin
// charge; its accounts' rows are the allocated charges. They keep the GPU's
// dimensions (ResourceId is the GPU or MIG instance UUID) and its unit price;
// AllocatedResourceId names the account, AllocatedMethodId the cost policy,
// and AllocatedMethodDetails the account's ratio of the GPU's cost with the
// GPU-hours it held. The allocated rows of a slot and period add up to its
// cost exactly, and all rows to the bill's total: BilledCost is the exact
// decimal of the ledger's integer micro-units (never a binary float).
//
// Quantities: ConsumedQuantity is the GPU-hours the account held (GPU-Hours);
// PricingQuantity is the GPU-hours it is billed for (its ratio of the hours
// the slot was there, x the slot's GPU fraction, to 9 decimals). ListCost =
// ContractedCost = ListUnitPrice x PricingQuantity exactly (FOCUS's rule, a
// decimal of up to 15 places); BilledCost = EffectiveCost, the micro-units
// billed, which differ from it by the rounding of the quantity only. There are
// no discounts and no invoice: InvoiceId is null (the bill is x_BillId).
//
// The GPU's own numbers (null where not measured, never 0): x_SmActive, the
// SM activity over what the account held (0..1); x_EnergyJoules, its share of
// the energy of the windows that measured it; x_VramGibHours, the VRAM it held.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/store.h"
#include "report/charge_period.h"
#include "report/report.h"

namespace gpuledger::report {

extern const std::vector<std::string> kFocusColumns;
// About the most GPU slot-periods a streamed export holds before it writes
// their rows (FocusBuilder::held): a day of a 1,000-node fleet is 8,000.
constexpr size_t kFocusRowsHeld = 10000;

class FocusBuilder {
 public:
  FocusBuilder(int64_t from, int64_t to, Granularity granularity);
  ~FocusBuilder();
  FocusBuilder(const FocusBuilder&) = delete;
  FocusBuilder& operator=(const FocusBuilder&) = delete;
  void add(const ledger::WindowRecord& window);
  // The CSV (RFC 4180, CRLF), with the audit's node, cluster and bill id;
  // x_PartialPeriod is true on rows whose charge period ends after `generated_at`.
  std::string finish(const Audit& audit, int64_t generated_at) const;
  // The same CSV written as it is made (a fleet's month is 720,000 daily rows):
  // the header line, then flush() after each charge period's windows were
  // added, which writes their rows (period, then GPU) and forgets them.
  // Header and every flush concatenated are finish()'s text when the windows
  // come period by period.
  using Sink = std::function<void(std::string_view)>;
  static void write_header(const Sink& sink);
  void flush(const Audit& audit, int64_t generated_at, const Sink& sink);
  // The GPU slots' charge periods added since the last flush: their rows'
  // memory (a row per account of each).
  size_t held() const;

 private:
  struct State;
  static void write_rows(const State& st, const Audit& audit, int64_t generated_at, const Sink& sink);
  std::unique_ptr<State> s_;
};

}  // namespace gpuledger::report
