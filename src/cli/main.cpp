// gpuledger: who used the GPUs, and how much. Lists the subcommands (each
// declares its own options: commands.h), parses and dispatches.
#include <CLI/CLI.hpp>

#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/empty_option_values.h"
#include "common/error.h"
#include "common/log.h"

int main(int argc, char** argv) {
  using namespace gpuledger::cli;
  gpuledger::log::make_inert();  // before anything logs: tenant names in messages are shown escaped
  CLI::App app{"gpuledger - attributes GPU (CUDA) work to the workloads on this node with eBPF"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuledger " GPULEDGER_VERSION);  // CMake project version
  const std::vector<Subcommand> subcommands = {
      add_agent_command(app),  add_uninstall_command(app), add_doctor_command(app),   add_demo_command(app),
      add_report_command(app), add_rightsize_command(app), add_fleet_db_command(app), add_probe_plan_command(app),
      add_job_command(app)};

  const std::vector<std::string> args = split_empty_option_values(argc, argv);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  CLI11_PARSE(app, static_cast<int>(arg_ptrs.size()), arg_ptrs.data());
  try {
    for (const auto& s : subcommands)
      if (*s.app) return s.run();
    return 1;  // require_subcommand(1): not reached
  } catch (const gpuledger::Error& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (const std::exception& e) {  // e.g. std::filesystem::filesystem_error: a message, never an abort
    spdlog::error("{}", e.what());
    return 1;
  }
}
