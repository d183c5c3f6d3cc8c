#include "cli/demo_shared_bill.h"

#include <cstdio>
#include <vector>

#include "kubernetes/gpu_allocation.h"
#include "node/observation_inputs.h"
#include "report/report.h"
#include "report/report_text.h"
#include "report/report_time.h"

namespace gpuledger::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr int64_t kWindow = 60;

struct Tenant {
  const char* pod;
  std::vector<double> shares;  // one allocation entry per share (a pod can hold several replicas)
  double busy_seconds;
  double vram_gib;
};

struct SharedGpu {
  const char* mode;  // GpuAllocation::mode
  const char* what;
  ledger::GpuSlot slot;
  double device_busy;
  std::vector<Tenant> tenants;
};

std::vector<SharedGpu> shared_gpus() {
  const std::string model = "gpuledger simulated H100";
  return {
      {"time-slicing", "4 replicas, 3 held (2 by ts-train)", {"GPU-demo-ts", model, std::nullopt, ""}, 0.75,
       {{"ts-train", {0.25, 0.25}, 20, 16}, {"ts-eval", {0.25}, 25, 8}}},
      {"mps", "2 MPS clients of one server, 1/2 each", {"GPU-demo-mps", model, std::nullopt, ""}, 0.55,
       {{"mps-a", {0.5}, 30, 20}, {"mps-b", {0.5}, 3, 4}}},
      {"mig", "a 3g.40gb slice of 7, held whole", {"MIG-demo-3g", model, "3g.40gb", "GPU-demo-mig"}, 0.2,
       {{"mig-infer", {1.0}, 10, 12}}},
      {"fraction", "HAMi: 0.3 and 0.5 of one GPU", {"GPU-demo-frac", model, std::nullopt, ""}, 0.3,
       {{"frac-a", {0.3}, 12, 30}, {"frac-b", {0.5}, 6, 10}}},
  };
}

// One GPU's window under one price book: the hand-made allocations go
// through holders_from like the kubelet's, then the ledger's own accounting.
ledger::WindowRecord bill(const SharedGpu& g, const ledger::PriceBook& prices, int64_t start) {
  std::vector<kubernetes::GpuAllocation> allocations;
  ledger::SlotWindow sw;
  sw.slot = g.slot;
  sw.device_busy_fraction = g.device_busy;
  sw.vram_capacity_bytes = (g.slot.mig_profile ? 40 : 80) * kGiB;
  for (const auto& t : g.tenants) {
    for (double share : t.shares) {
      kubernetes::GpuAllocation a;
      a.namespace_name = "shared";
      a.pod = t.pod;
      a.container = "main";
      a.resource = g.slot.mig_profile ? "nvidia.com/mig-3g.40gb" : "nvidia.com/gpu";
      a.device.uuid = g.slot.uuid;
      a.share = share;
      a.mode = g.mode;
      allocations.push_back(a);
    }
  }
  sw.holders = node::holders_from(allocations, attribution::AttributionSnapshot{});
  for (const auto& t : g.tenants) {
    const std::string account = std::string("k8s/shared/") + t.pod + "/main";
    sw.activity[account] = {t.busy_seconds, t.vram_gib * kGiB * kWindow, 100};
    sw.labels[account] = {"shared", t.pod, "main", g.mode};
  }
  for (const auto& h : sw.holders) sw.labels[h.account] = h.labels;
  return ledger::account_window(prices, start, start + kWindow, sw, kWindow, "live");
}

int64_t total_of(const ledger::WindowRecord& w, const std::string& pod) {
  int64_t sum = 0;
  const std::string account = "k8s/shared/" + pod + "/main";
  for (const auto& c : w.charges)
    if (c.account == account) sum += c.micros;
  return sum;
}

int64_t unallocated_of(const ledger::WindowRecord& w) {
  int64_t sum = 0;
  for (const auto& c : w.charges)
    if (c.account == ledger::kUnallocatedAccount) sum += c.micros;
  return sum;
}

}  // namespace

std::string shared_gpu_bill(int64_t price_per_hour, const std::string& currency, int64_t start) {
  ledger::PriceBook book;
  book.currency = currency;
  book.default_micros_per_hour = price_per_hour;
  book.window_seconds = kWindow;
  book.memory_price_share = 0.3;
  std::string out;
  char line[1024];
  std::snprintf(line, sizeof line,
                "\nShared GPU bills: one 60 s window (%s) of each way to share a GPU, at %s %s per GPU-hour, 30%% of it\n"
                "for memory (memory_price_share: 0.3). HAND-MADE allocations (share and mode, as the Kubernetes\n"
                "plane reports them) and SCRIPTED activity; the ledger's own arithmetic. Costs in %s under each\n"
                "cost_policy; used = share of the work (VRAM share in brackets); flag: over- or under-user.\n",
                report::format_rfc3339(start).c_str(), report::money(price_per_hour).c_str(), currency.c_str(),
                currency.c_str());
  out += line;
  std::vector<ledger::WindowRecord> allocated_windows;
  for (const auto& g : shared_gpus()) {
    ledger::PriceBook usage = book, allocated = book, blend = book;
    allocated.cost_policy = ledger::CostPolicy::kAllocated;
    blend.cost_policy = ledger::CostPolicy::kBlend;
    const auto wu = bill(g, usage, start), wa = bill(g, allocated, start), wb = bill(g, blend, start);
    allocated_windows.push_back(wa);
    std::snprintf(line, sizeof line, "\n  %s: %s; window cost %s (memory part %s)\n", g.mode, g.what,
                  report::money(wa.cost_micros).c_str(), report::money(wa.memory_micros).c_str());
    out += line;
    std::snprintf(line, sizeof line, "    %-16s %9s %14s %10s %10s %10s  %s\n", "pod", "allocated", "used (vram)",
                  "usage", "allocated", "blend", "flag");
    out += line;
    const auto alloc = ledger::allocated_shares(wa);
    const auto used = ledger::used_shares(wa);
    for (const auto& t : g.tenants) {
      const std::string account = std::string("k8s/shared/") + t.pod + "/main";
      const double a = alloc.count(account) ? alloc.at(account) : 0;
      const ledger::UsedShares u = used.count(account) ? used.at(account) : ledger::UsedShares{};
      std::snprintf(line, sizeof line, "    %-16s %9.2f %7.2f (%.2f) %10s %10s %10s  %s\n", t.pod, a, u.activity, u.vram,
                    report::money(total_of(wu, t.pod)).c_str(), report::money(total_of(wa, t.pod)).c_str(),
                    report::money(total_of(wb, t.pod)).c_str(),
                    std::string(ledger::to_string(ledger::share_flag(a, u.activity))).c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "    %-16s %9.2f %14s %10s %10s %10s\n", "__unallocated__",
                  alloc.count(std::string(ledger::kUnallocatedAccount)) ? alloc.at(std::string(ledger::kUnallocatedAccount)) : 0.0,
                  "", report::money(unallocated_of(wu)).c_str(), report::money(unallocated_of(wa)).c_str(),
                  report::money(unallocated_of(wb)).c_str());
    out += line;
  }
  out += "\nThe same windows billed by allocation (cost_policy: allocated), as `gpuledger report --by pod` shows them:\n\n";
  out += report::render(report::build_report(allocated_windows, start, start + kWindow, report::GroupBy::kPod),
                        report::Format::kTable);
  return out;
}

}  // namespace gpuledger::cli
