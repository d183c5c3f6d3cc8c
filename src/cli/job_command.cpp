// `gpuledger job JOBID`: a Slurm job's GPU bill from the local ledger store
// (report/job_bill.h), for an epilog that writes it into the job's
// AdminComment, or a user's seff-like look.
#include <climits>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/log.h"
#include "ledger/store.h"
#include "report/job_bill.h"

namespace gpuledger::cli {
namespace {

struct JobCommand {
  std::string job;
  std::string store = "/var/lib/gpuledger/ledger.db";
  std::string format = "table";
};

int run_job(const JobCommand& cmd) {
  const std::string account = "slurm/" + cmd.job;
  std::vector<ledger::WindowRecord> windows;  // only the job's: a month of the node's stays streamed
  ledger::Store store(cmd.store, ledger::Store::Mode::kReadOnly);
  store.for_each_window(INT64_MIN, INT64_MAX, [&](ledger::WindowRecord&& w) {
    for (const auto& a : w.accounts)
      if (a.account == account) {
        windows.push_back(std::move(w));
        return;
      }
    for (const auto& c : w.charges)
      if (c.account == account) {
        windows.push_back(std::move(w));
        return;
      }
  });
  const report::JobBill bill = report::job_bill(cmd.job, windows);
  const std::string text = cmd.format == "json" ? report::render_job_json(bill) : report::render_job_table(bill);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

Subcommand add_job_command(CLI::App& app) {
  auto o = std::make_shared<JobCommand>();
  CLI::App* cmd = app.add_subcommand("job", "A Slurm job's GPU bill: GPU-hours held and busy, energy, cost");
  cmd->footer(
      "Reads the windows of slurm/JOBID from the agent's store: GPU-hours held and busy, SM active of what it "
      "held, VRAM peak, energy (J and kWh, as the ledger split it), carbon where configured, and cost. As a "
      "Slurm epilog (after the agent closed the job's last window, one --ledger-interval-ms later): "
      "scontrol update JobId=$SLURM_JOB_ID AdminComment=\"$(gpuledger job $SLURM_JOB_ID --format json | tr -d '\\n')\"");
  cmd->add_option("JOBID", o->job, "The Slurm job id")->required();
  cmd->add_option("--store", o->store, "The agent's ledger store")->capture_default_str();
  cmd->add_option("--format", o->format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return {cmd, [o] {
            log::set_level("error");
            return run_job(*o);
          }};
}

}  // namespace gpuledger::cli
