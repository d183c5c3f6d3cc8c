#pragma once
// Test support for the reliability tests: the agent binary of this build with
// the simulated driver, a scratch directory, and polls with deadlines.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "agent_under_test.h"
#include "identity/cgroup_fs.h"
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

}  // namespace gpuledger::testing
