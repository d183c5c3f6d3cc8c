// `gpuledger probe-plan` (hidden, diagnostic): the driver entry points the
// agent would probe in one library, printed as plain text for the GPU
// validation kit's address check (tools/cuda_address_check.c), which asks the
// real driver's cuGetProcAddress for each family and checks that the pointer
// it returns starts one of these probed symbols.
//
// One line per entry-point family, in the agent's own order:
//   <family base name> [<probed symbol>...]
// A family the library lacks has no symbols after its name. Lines starting
// with '#' are comments.
#include <cstdio>
#include <map>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "probes/billable_entry_points.h"
#include "probes/cuda_entry_points.h"
#include "probes/elf_symbols.h"

namespace gpuledger::cli {

int run_probe_plan(const ProbePlanCommand& cmd) {
  auto functions = probes::read_dynamic_functions(cmd.cuda_lib);
  probes::CallNames names;
  probes::ProbePlanOptions options;
  options.launch_returns = cmd.launch_returns;
  options.hot_path = cmd.probe_set != "billing";
  // plan_probes keeps one probe per address (aliases share it); group its
  // specs by the family they came from, which is the form's base name.
  std::map<std::string, std::vector<std::string>, std::less<>> probed_by_base;
  const auto plan = probes::plan_probes(functions, names, options);
  for (const auto& spec : plan) {
    for (const auto& family : probes::entry_point_families()) {
      if (probes::parse_entry_point_form(spec.name, family.base)) {
        probed_by_base[std::string(family.base)].push_back(spec.name);
        break;
      }
    }
  }
  std::printf("# gpuledger probe plan for %s (probe set %s): %zu probes\n", cmd.cuda_lib.c_str(),
              cmd.probe_set.c_str(), plan.size());
  for (const auto& family : probes::entry_point_families()) {
    std::printf("%.*s", static_cast<int>(family.base.size()), family.base.data());
    if (auto it = probed_by_base.find(family.base); it != probed_by_base.end())
      for (const auto& name : it->second) std::printf(" %s", name.c_str());
    std::printf("\n");
  }
  if (!cmd.check) return 0;
  // The catalogue against a rule on the names (docs/entry-points.md): what
  // its full plan lacks (billing leaves out the hot path on purpose).
  probes::CallNames full_names;
  const auto unprobed = probes::unprobed_billable(
      functions, probes::plan_probes(functions, full_names, {.launch_returns = cmd.launch_returns}));
  for (const auto& name : unprobed) std::printf("# unprobed %s\n", name.c_str());
  std::printf("# check: %zu billable entry points unprobed\n", unprobed.size());
  return unprobed.empty() ? 0 : 1;
}

Subcommand add_probe_plan_command(CLI::App& app) {
  auto o = std::make_shared<ProbePlanCommand>();
  // Diagnostic, hidden from --help (empty group): used by scripts/gpu-validate.sh.
  CLI::App* cmd = app.add_subcommand(
      "probe-plan", "Print the CUDA driver entry points the agent probes in one library, one family a line");
  cmd->group("");
  cmd->add_option("--cuda-lib", o->cuda_lib, "The driver library (libcuda.so.1) to read")
      ->required();
  cmd->add_flag("--launch-returns", o->launch_returns, "As the agent's --launch-returns");
  cmd->add_option("--probe-set", o->probe_set, "As the agent's --probe-set, resolved: billing or full")
      ->check(CLI::IsMember({"billing", "full"}))
      ->capture_default_str();
  cmd->add_flag("--check", o->check,
                           "Also list, as '# unprobed NAME' lines, every exported entry point that changes a bill "
                           "(by its name) the plan lacks; exit 1 when there is one");

  return {cmd, [o] { return run_probe_plan(*o); }};
}

}  // namespace gpuledger::cli
