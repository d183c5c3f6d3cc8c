// The first-call hold never leaves a tenant stopped: an agent that dies while
// holding a process has its successor continue it (the map of held processes
// is pinned), a hung agent holds nobody (heartbeat), and a recycled pid is
// never continued in another process's place.
#include <bpf/bpf.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "bpf_requirement.h"
#include "lib_discovery.h"
#include "probes/library_discovery.h"

namespace gpuledger::probes {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

char state_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return '?';
  auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

bool wait_state(pid_t pid, char state, std::chrono::milliseconds deadline) {
  for (auto end = std::chrono::steady_clock::now() + deadline; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(5ms))
    if (state_of(pid) == state) return true;
  return false;
}

// Exit status of `pid`, or -1 if it has not ended by the deadline.
int wait_exit(pid_t pid, std::chrono::milliseconds deadline) {
  for (auto end = std::chrono::steady_clock::now() + deadline; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(5ms)) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  }
  return -1;
}

class HeldProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gl_held_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    pin_ = "/sys/fs/bpf/gl_held_test_" + std::to_string(::getpid());
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      ::kill(pid, SIGKILL);
      ::kill(pid, SIGCONT);
      ::waitpid(pid, nullptr, 0);
    }
    ::unlink(pin_.c_str());
    fs::remove_all(dir_);
  }
  // A child that loads the copy (as the CUDA runtime does) and exits 0.
  pid_t load_the_copy(const std::string& sub = "") {
    fs::create_directories(dir_ / sub);
    const fs::path copy = dir_ / sub / "libcuda.so.1";
    if (!fs::exists(copy)) fs::copy_file(GPULEDGER_SIM_LIB, copy);
    const std::string lib = copy.string();
    pid_t pid = ::fork();
    if (pid == 0) _exit(::dlopen(lib.c_str(), RTLD_NOW) ? 0 : 3);
    children_.push_back(pid);
    return pid;
  }
  pid_t stopped_sleeper() {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::raise(SIGSTOP);
      _exit(0);
    }
    children_.push_back(pid);
    return pid;
  }
  fs::path dir_;
  std::string pin_;
  std::vector<pid_t> children_;
};

TEST_F(HeldProcess, AProcessHeldByAnAgentThatDiedIsContinuedByItsSuccessor) {
  GL_REQUIRE_BPF();
  auto first = std::make_unique<LibOpenWatcher>(true, pin_);
  first->heartbeat();
  pid_t tenant = load_the_copy();  // a copy no watcher has seen: a new inode named like the driver
  ASSERT_TRUE(wait_state(tenant, 'T', 5000ms)) << "the watcher did not hold the first process of a new copy";
  first.reset();  // the agent dies holding it: its report is never read
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(state_of(tenant), 'T') << "nothing but the held-process map can continue it";
  LibOpenWatcher successor(true, pin_);
  EXPECT_EQ(successor.continue_held(0), 1u);
  EXPECT_EQ(wait_exit(tenant, 5000ms), 0);
  EXPECT_EQ(successor.continue_held(0), 0u) << "continued processes are forgotten";
}

TEST_F(HeldProcess, UninstallContinuesAProcessADeadAgentHeld) {
  GL_REQUIRE_BPF();
  auto dead = std::make_unique<LibOpenWatcher>(true, pin_);
  dead->heartbeat();
  pid_t tenant = load_the_copy();
  ASSERT_TRUE(wait_state(tenant, 'T', 5000ms));
  dead.reset();
  EXPECT_EQ(continue_pinned_held(pin_), 1u);  // what `gpuledger uninstall` does before removing the pins
  EXPECT_EQ(wait_exit(tenant, 5000ms), 0);
}

TEST_F(HeldProcess, AnAgentWhoseLoopIsNotAliveHoldsNobody) {
  GL_REQUIRE_BPF();
  LibOpenWatcher watcher(true, pin_);  // no heartbeat: a hung (or stopped) agent
  pid_t tenant = load_the_copy();
  EXPECT_EQ(wait_exit(tenant, 5000ms), 0) << "a process was held with nobody alive to continue it";
  watcher.heartbeat();
  watcher.stop_holding();  // the agent going: nobody is held from here on
  EXPECT_EQ(wait_exit(load_the_copy("second"), 5000ms), 0) << "a going agent held a process";
}

TEST_F(HeldProcess, ARecycledPidIsNeverContinuedInTheHeldProcesssPlace) {
  GL_REQUIRE_BPF();
  LibOpenWatcher watcher(true, pin_);  // creates and pins the map
  pid_t other = stopped_sleeper();
  ASSERT_TRUE(wait_state(other, 'T', 5000ms));
  const int map = bpf_obj_get(pin_.c_str());
  ASSERT_GE(map, 0);
  // An entry for this pid from a process that started at another time.
  uint32_t key = static_cast<uint32_t>(other);
  gl_held_process stale{1, 0};
  ASSERT_EQ(bpf_map_update_elem(map, &key, &stale, BPF_ANY), 0);
  EXPECT_EQ(watcher.continue_held(0), 0u);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(state_of(other), 'T') << "a process that was never held was continued";
  gl_held_process ignored{};
  EXPECT_NE(bpf_map_lookup_elem(map, &key, &ignored), 0) << "the stale entry is forgotten";
  ::close(map);
}

}  // namespace
}  // namespace gpuledger::probes
