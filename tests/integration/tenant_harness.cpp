#include "tenant_harness.h"

#include <unistd.h>

#include <sstream>

#include "common/error.h"

namespace gpuledger::testing {

const identity::CgroupMounts& mounts() {
  static const identity::CgroupMounts m = identity::discover_cgroup_mounts();
  return m;
}

std::string test_cgroup(const std::string& relative) {
  return "/gpuledger-test-" + std::to_string(::getpid()) + relative;
}

namespace {

std::vector<std::string> generator_argv(const std::string& script, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kCudasim};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(script);
  return argv;
}

nlohmann::json last_json_line(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') last = line;
  return last.empty() ? nlohmann::json() : nlohmann::json::parse(last);
}

}  // namespace

TenantResult run_tenant(const std::vector<std::string>& cgroup_dirs, const std::string& script,
                        const std::vector<std::string>& env, const std::vector<std::string>& args) {
  simulation::SpawnOptions spawn{cgroup_dirs, env, false, true};
  simulation::Child child(generator_argv(script, args), spawn);
  std::string out = child.read_all();
  TenantResult result;
  result.exit_code = child.wait();
  result.truth = last_json_line(out);
  return result;
}

std::unique_ptr<simulation::Child> start_interactive_tenant(const std::vector<std::string>& cgroup_dirs,
                                                            const std::string& script,
                                                            const std::vector<std::string>& env) {
  simulation::SpawnOptions spawn{cgroup_dirs, env, true, true};
  return std::make_unique<simulation::Child>(generator_argv(script, {}), spawn);
}

void await_ready(simulation::Child& child) {
  for (std::string line = child.read_line(); line.rfind("READY", 0) != 0; line = child.read_line())
    if (line.empty()) throw Error("generator ended before READY");
}

nlohmann::json finish_interactive_tenant(simulation::Child& child) {
  child.write_line("go");
  child.close_stdin();
  std::string out = child.read_all();
  child.wait();
  return last_json_line(out);
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

const attribution::WorkloadView* find_workload(const attribution::AttributionSnapshot& snap, const std::string& id) {
  for (const auto& w : snap.workloads)
    if (w.workload.id == id) return &w;
  return nullptr;
}

}  // namespace gpuledger::testing
