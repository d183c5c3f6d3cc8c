// nvidia-cuda-mps-control, simulated, with the real command line:
//   nvidia-cuda-mps-control -d     start the control daemon (in the background)
//   nvidia-cuda-mps-control -f     the same in the foreground
//   nvidia-cuda-mps-control        read commands on stdin: "quit" stops the
//                                  daemon and its server, "get_server_list"
//                                  prints the server's pid
// The daemon writes <CUDA_MPS_PIPE_DIRECTORY>/control.pid and starts the
// server (nvidia-cuda-mps-server next to this executable), which inherits its
// cgroup, as the real daemon's server does. It makes no CUDA call itself.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace {

std::string pipe_dir() {
  const char* d = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  return d && *d ? d : "/tmp/nvidia-mps";
}

long read_pid(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  in >> pid;
  return pid;
}

int run_daemon() {
  const std::string dir = pipe_dir();
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  std::string server = std::string(self, static_cast<size_t>(n));
  server = server.substr(0, server.rfind('/')) + "/nvidia-cuda-mps-server";
  std::ofstream(dir + "/control.pid") << ::getpid() << "\n";
  pid_t child = ::fork();
  if (child == 0) {
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, nullptr);
    ::execl(server.c_str(), "nvidia-cuda-mps-server", static_cast<char*>(nullptr));
    _exit(127);
  }
  int sig = 0;
  sigwait(&stop, &sig);
  if (sig != SIGCHLD) ::kill(child, SIGTERM);
  ::waitpid(child, nullptr, 0);
  ::unlink((dir + "/control.pid").c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "-f") == 0) return run_daemon();
  if (argc > 1 && std::strcmp(argv[1], "-d") == 0) {
    pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid > 0) return 0;
    ::setsid();
    return run_daemon();
  }
  const std::string dir = pipe_dir();
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "quit") {
      long pid = read_pid(dir + "/control.pid");
      if (pid > 0) ::kill(static_cast<pid_t>(pid), SIGTERM);
    } else if (line == "get_server_list") {
      if (long pid = read_pid(dir + "/server.pid"); pid > 0) std::printf("%ld\n", pid);
    } else if (!line.empty()) {
      std::fprintf(stderr, "nvidia-cuda-mps-control (simulated): unknown command '%s'\n", line.c_str());
    }
  }
  return 0;
}
