#pragma once
// Test support for the reliability tests: the agent binary of this build with
// the simulated driver, a scratch directory, and polls with deadlines.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent_under_test.h"
#include "identity/cgroup_fs.h"
#include "probes/pin_store.h"
#include "raw_client.h"

namespace gpuledger::testing {

namespace fs = std::filesystem;

inline std::string gpuledger_binary() { return GPULEDGER_BINARY; }
inline std::string sim_library() { return GPULEDGER_SIM_LIB; }
inline std::string cudasim_binary() { return GPULEDGER_CUDASIM; }
inline std::string nvml_sim_library() { return GPULEDGER_NVML_SIM_LIB; }

struct Agent : AgentUnderTest {
  explicit Agent(const std::vector<std::string>& args) : AgentUnderTest(gpuledger_binary(), args) {}
};

// A directory of its own, removed afterwards.
class Scratch {
 public:
  explicit Scratch(const std::string& tag)
      : dir_(fs::temp_directory_path() / ("gl_rel_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const fs::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

// A pin directory of this test's own on the node's bpffs, removed afterwards.
// Those of test processes that died before removing theirs are removed too:
// their probes would stay attached until a reboot.
class PinDir {
 public:
  explicit PinDir(const std::string& tag)
      : path_(probes::find_or_mount_bpffs() + "/gl-test-" + tag + "-" + std::to_string(::getpid())) {
    for (const auto& e : fs::directory_iterator(fs::path(path_).parent_path())) {
      const std::string name = e.path().filename();
      const auto dash = name.rfind('-');
      if (name.starts_with("gl-test-") && dash != std::string::npos &&
          !fs::exists("/proc/" + name.substr(dash + 1)))
        probes::remove_pin_tree(e.path());
    }
    probes::remove_pin_tree(path_);
  }
  ~PinDir() { probes::remove_pin_tree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Stops the agent: SIGKILL (then reaped), or SIGTERM, a graceful stop waited for.
inline void stop_agent(std::unique_ptr<Agent>& agent, int signal) {
  if (signal == SIGKILL) ::kill(agent->pid(), SIGKILL);
  agent.reset();
}

// The working directory changed for a scope (the agent inherits it).
class InDirectory {
 public:
  explicit InDirectory(const fs::path& dir) : before_(fs::current_path()) { fs::current_path(dir); }
  ~InDirectory() { fs::current_path(before_); }

 private:
  fs::path before_;
};

inline bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

inline std::string get_body(int port, const std::string& path, int* status = nullptr) {
  std::string body;
  int s = timed_get(port, path, nullptr, &body);
  if (status) *status = s;
  return body;
}

inline const std::string& cgroup_v2() {
  static const std::string mount = identity::discover_cgroup_mounts().v2;
  return mount;
}

inline std::string test_cgroup(const std::string& relative) {
  return "/gpuledger-rel-" + std::to_string(::getpid()) + relative;
}

// Moves the calling process into the cgroup directory `dir`. Safe after
// fork(): no allocation, no exceptions.
inline bool join_cgroup(const char* dir) {
  char path[512];
  std::snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, "0", 1) == 1;
  ::close(fd);
  return ok;
}

// The value of the sample `series` (name and labels, as on the page); 0 if none.
inline uint64_t metric_value(const std::string& page, const std::string& series) {
  auto at = page.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stoull(page.substr(at + 1 + series.size() + 1));
}

// `gpuledger ARGS...` run to its end: its exit code, stdout and stderr in
// `output`, or stderr apart in `errors` when given.
inline int run_cli(const std::vector<std::string>& args, std::string* output, std::string* errors = nullptr) {
  std::string command = gpuledger_binary();
  for (const auto& a : args) command += " '" + a + "'";
  char err_file[] = "/tmp/gpuledger-cli-stderr-XXXXXX";
  if (errors) {
    const int fd = ::mkstemp(err_file);
    if (fd < 0) return -1;
    ::close(fd);
  }
  FILE* p = ::popen((command + (errors ? std::string(" 2>") + err_file : std::string(" 2>&1"))).c_str(), "r");
  char buf[512];
  output->clear();
  while (p && std::fgets(buf, sizeof buf, p)) *output += buf;
  int status = p ? ::pclose(p) : -1;
  if (errors) {
    std::ifstream in(err_file);
    errors->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ::unlink(err_file);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline void sleep_until_unix(double t) {
  while (unix_now() < t) std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// A node with one simulated H100 (NVML simulator), 50 % busy, priced 3.60 per
// GPU-hour in windows of `window_seconds`; the agents started after this see it.
inline const std::string kSimulatedGpu = "GPU-5a1e2f3a-4b5c-3f6a-2c1e-8b4d7e219c0a";
inline void write_simulated_node(const Scratch& s, int window_seconds) {
  std::ofstream(s.path("nvml.json"))
      << R"({"driver_version": "550.90.07", "devices": [{"uuid": ")" << kSimulatedGpu
      << R"(", "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:07:00.0", "minor": 0, "mig_mode": 0,
         "utilization": {"gpu": 50, "memory": 10}, "memory": {"total": 85899345920, "used": 0},
         "compute_processes": [], "process_utilization": []}]})";
  std::ofstream(s.path("prices.yaml")) << "per_model:\n  H100: 3.60\nwindow_seconds: " << window_seconds << "\n";
  ::setenv("GPULEDGER_NVML_SIM_CONFIG", s.path("nvml.json").c_str(), 1);
}

// The agent on that node, observing every 200 ms. Its NVML answers
// per-process samples but has none to give (no work directory): `auto` would
// turn billing and bill by samples that never come, so these tests, which
// count launches, probe them: --probe-set full (probe_set_auto_test.cpp tests auto).
inline std::vector<std::string> simulated_node_agent_args(const Scratch& s, const std::string& store) {
  return {"--no-discovery", "--cuda-lib", sim_library(), "--no-nvml=false", "--nvml-lib", nvml_sim_library(),
          "--nvml-interval-ms", "200", "--store", store, "--prices", s.path("prices.yaml"),
          "--ledger-interval-ms", "200", "--probe-set", "full"};
}

}  // namespace gpuledger::testing
