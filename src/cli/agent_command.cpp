#include <csignal>
#include <thread>

#include "agent/agent.h"
#include "cli/commands.h"
#include "common/log.h"
#include "export/http_server.h"

namespace gpuledger::cli {
namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

void install_stop_signals() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
bool stop_requested() { return g_stop != 0; }

int run_agent(const AgentCommand& cmd) {
  auto [host, port] = exporter::parse_listen_address(cmd.listen);
  agent::AgentOptions options;
  options.cuda_libs = cmd.cuda_libs;
  options.discover = !cmd.no_discovery;
  options.launch_returns = cmd.launch_returns;
  options.max_workloads = cmd.max_workloads;
  options.scan_interval = std::chrono::milliseconds(cmd.scan_interval_ms);

  agent::Agent agent(options);
  agent.start();
  exporter::HttpServer server(agent);
  int bound = server.start(host, port);
  spdlog::info("gpuledger agent serving http://{}:{}/metrics", host, bound);
  install_stop_signals();
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  spdlog::info("stopping");
  server.stop();
  agent.stop();
  return 0;
}

}  // namespace gpuledger::cli
