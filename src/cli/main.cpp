// gpuledger: who used the GPUs, and how much.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "common/error.h"
#include "common/log.h"

int main(int argc, char** argv) {
  using namespace gpuledger::cli;
  CLI::App app{"gpuledger - attributes GPU (CUDA) work to the workloads on this node with eBPF"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gpuledger 0.1.0");

  AgentCommand agent;
  auto* agent_cmd = app.add_subcommand("agent", "Run the node agent: probe every libcuda, serve /metrics");
  agent_cmd->add_option("--listen", agent.listen, "HOST:PORT to serve /metrics, /api/v1/workloads, /healthz")
      ->capture_default_str();
  agent_cmd->add_option("--cuda-lib", agent.cuda_libs,
                        "A CUDA driver library to probe (repeatable); others are found on their own");
  agent_cmd->add_flag("--no-discovery", agent.no_discovery,
                      "Probe only the --cuda-lib paths: no host paths, no open tracing, no /proc scan");
  agent_cmd->add_flag("--launch-returns", agent.launch_returns,
                      "Also probe launch returns: counts only successful launches and their errors, at "
                      "the price of a return probe on the hottest calls");
  agent_cmd->add_option("--max-workloads", agent.max_workloads, "Capacity of the in-kernel workload map")
      ->capture_default_str();
  agent_cmd->add_option("--scan-interval-ms", agent.scan_interval_ms,
                        "Backstop scan of process maps for libcuda copies")
      ->capture_default_str();
  agent_cmd->add_option("--log-level", agent.log_level, "trace, debug, info, warn, error")->capture_default_str();

  DemoCommand demo;
  auto* demo_cmd = app.add_subcommand(
      "demo", "Run the agent against the bundled CUDA driver simulator with simulated tenants in "
              "pod-shaped cgroups (real probes, real cgroups; no GPU needed)");
  demo_cmd->add_option("--listen", demo.listen, "Where the demo's agent serves /metrics")->capture_default_str();
  demo_cmd->add_option("--seconds", demo.seconds, "How long the tenants run")->capture_default_str();
  demo_cmd->add_option("--cuda-lib", demo.cuda_lib, "The simulator library (default: next to gpuledger)");
  demo_cmd->add_option("--cudasim", demo.cudasim, "The workload generator (default: next to gpuledger)");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*agent_cmd) {
      gpuledger::log::set_level(agent.log_level);
      return run_agent(agent);
    }
    return run_demo(demo);
  } catch (const gpuledger::Error& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}
