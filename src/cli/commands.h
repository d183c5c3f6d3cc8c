#pragma once
// The subcommands of the gpuledger binary; main.cpp only parses and dispatches.
#include <string>
#include <vector>

namespace gpuledger::cli {

struct AgentCommand {
  std::string listen = "127.0.0.1:9400";
  std::vector<std::string> cuda_libs;
  bool no_discovery = false;
  bool launch_returns = false;
  unsigned max_workloads = 16384;
  unsigned scan_interval_ms = 5000;
  std::string log_level = "info";
};
int run_agent(const AgentCommand& cmd);

struct DemoCommand {
  std::string listen = "127.0.0.1:9400";
  unsigned seconds = 12;
  std::string cuda_lib;   // default: the simulator next to this binary
  std::string cudasim;    // default: gpuledger-cudasim next to this binary
};
int run_demo(const DemoCommand& cmd);

// Stops on SIGINT/SIGTERM: installs handlers and answers whether one came.
void install_stop_signals();
bool stop_requested();

}  // namespace gpuledger::cli
