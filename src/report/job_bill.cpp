#include "report/job_bill.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "common/error.h"
#include "ledger/prices.h"
#include "common/micros_text.h"

namespace gpuledger::report {
namespace {

// One window's part of the bill.
struct WindowPart {
  bool present = false;
  double held_seconds = 0;
};

WindowPart add_account(JobBill& bill, const ledger::WindowRecord& w, double& sm_weighted, double& sm_seconds) {
  WindowPart part;
  const double length = static_cast<double>(w.end - w.start);
  for (const auto& a : w.accounts) {
    if (a.account != bill.account) continue;
    part.present = true;
    part.held_seconds = a.held_share * w.gpu_fraction * length;
    bill.held_gpu_hours += part.held_seconds / 3600.0;
    bill.busy_gpu_hours += a.gpu_busy_seconds * w.gpu_fraction / 3600.0;
    if (w.device.sm_active && part.held_seconds > 0) {
      sm_weighted += *w.device.sm_active * part.held_seconds;
      sm_seconds += part.held_seconds;
    }
    auto peak = a.evidence.vram_peak_bytes.value_or(0) ? a.evidence.vram_peak_bytes : a.evidence.nvml_vram_peak_bytes;
    if (peak) bill.vram_peak_bytes = std::max(bill.vram_peak_bytes.value_or(0), *peak);
  }
  for (const auto& c : w.charges) {
    if (c.account != bill.account) continue;
    part.present = true;
    bill.cost_micros += c.micros;
    (c.kind == ledger::ChargeKind::kBusy ? bill.busy_micros
     : c.kind == ledger::ChargeKind::kIdle ? bill.idle_micros
                                           : bill.memory_micros) += c.micros;
  }
  return part;
}

void add_energy(JobBill& bill, const ledger::WindowRecord& w) {
  if (!w.energy) {
    bill.energy_partial = true;
    return;
  }
  int64_t mj = 0;
  for (const auto& c : w.energy->charges)
    if (c.account == bill.account) mj += c.millijoules;
  bill.energy_millijoules = bill.energy_millijoules.value_or(0) + mj;
  if (w.energy->carbon_g_per_kwh)
    bill.carbon_grams = bill.carbon_grams.value_or(0) + static_cast<double>(mj) / 3.6e9 * *w.energy->carbon_g_per_kwh;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

JobBill job_bill(const std::string& job, const std::vector<ledger::WindowRecord>& windows) {
  if (job.empty() || job.size() > 20 || !std::all_of(job.begin(), job.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw Error("a Slurm job id is digits, not '" + job + "'");
  JobBill bill;
  bill.job = job;
  bill.account = "slurm/" + job;
  std::set<std::string> gpus;
  double sm_weighted = 0, sm_seconds = 0;
  for (const auto& w : windows) {
    const WindowPart part = add_account(bill, w, sm_weighted, sm_seconds);
    if (!part.present) continue;
    ++bill.windows;
    bill.currency = w.currency;
    gpus.insert(w.slot.uuid);
    bill.first_start = std::min(bill.first_start.value_or(w.start), w.start);
    bill.last_end = std::max(bill.last_end.value_or(w.end), w.end);
    add_energy(bill, w);
  }
  bill.gpus.assign(gpus.begin(), gpus.end());
  if (sm_seconds > 0) bill.sm_active = sm_weighted / sm_seconds;
  return bill;
}

std::string render_job_table(const JobBill& b) {
  std::ostringstream out;
  const auto unknown = [](const std::optional<std::string>& v, const char* why) { return v ? *v : std::string(why); };
  out << "Slurm job " << b.job << " (" << b.account << ")\n";
  if (b.windows == 0) {
    out << "  no window of this store has it: it held and used no GPU this agent watched\n";
    return out.str();
  }
  out << "  windows          " << b.windows << " on " << b.gpus.size() << " GPU" << (b.gpus.size() == 1 ? "" : "s")
      << "\n";
  out << "  GPU-hours held   " << fixed(b.held_gpu_hours, 4) << "\n";
  out << "  GPU-hours busy   " << fixed(b.busy_gpu_hours, 4) << "\n";
  out << "  SM active        "
      << unknown(b.sm_active ? std::optional(fixed(*b.sm_active * 100, 1) + " % of the held time") : std::nullopt,
                 "unknown (no SM-active reading)")
      << "\n";
  out << "  VRAM peak        "
      << unknown(b.vram_peak_bytes ? std::optional(fixed(static_cast<double>(*b.vram_peak_bytes) / (1 << 20), 1) + " MiB")
                                   : std::nullopt,
                 "unknown (none seen)")
      << "\n";
  if (b.energy_millijoules) {
    const double j = static_cast<double>(*b.energy_millijoules) / 1000.0;
    out << "  energy           " << fixed(j, 3) << " J (" << fixed(j / 3.6e6, 6) << " kWh)"
        << (b.energy_partial ? ", some windows without an energy reading" : "") << "\n";
  } else {
    out << "  energy           unknown (no energy reading in its windows)\n";
  }
  out << "  carbon           "
      << unknown(b.carbon_grams ? std::optional(fixed(*b.carbon_grams, 3) + " gCO2e") : std::nullopt,
                 "unknown (no carbon_g_per_kwh configured)")
      << "\n";
  out << "  cost             " << format_micros(b.cost_micros) << " " << b.currency << " (busy "
      << format_micros(b.busy_micros) << ", idle " << format_micros(b.idle_micros) << ", memory "
      << format_micros(b.memory_micros) << ")\n";
  return out.str();
}

std::string render_job_json(const JobBill& b) {
  using nlohmann::json;
  const auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  json j = {{"job", b.job},
            {"account", b.account},
            {"windows", b.windows},
            {"start", opt(b.first_start)},
            {"end", opt(b.last_end)},
            {"gpus", b.gpus},
            {"gpu_hours_held", b.held_gpu_hours},
            {"gpu_hours_busy", b.busy_gpu_hours},
            {"sm_active_ratio", opt(b.sm_active)},
            {"vram_peak_bytes", opt(b.vram_peak_bytes)},
            {"energy_millijoules", opt(b.energy_millijoules)},
            {"energy_kwh", b.energy_millijoules ? json(static_cast<double>(*b.energy_millijoules) / 3.6e9) : json(nullptr)},
            {"energy_partial", b.energy_partial},
            {"carbon_grams", opt(b.carbon_grams)},
            {"currency", b.currency},
            {"cost_micros", b.cost_micros},
            {"cost", format_micros(b.cost_micros)},
            {"busy_micros", b.busy_micros},
            {"idle_micros", b.idle_micros},
            {"memory_micros", b.memory_micros}};
  return j.dump(2) + "\n";
}

}  // namespace gpuledger::report
