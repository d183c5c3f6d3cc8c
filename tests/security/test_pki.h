#pragma once
// Test support: a throwaway certificate authority made with the openssl CLI
// (server certificate for 127.0.0.1, a client certificate, and a rogue one
// from another CA), and a shell runner.
#include <filesystem>
#include <string>

namespace gpuledger::testing {

struct ShellResult {
  int status = -1;
  std::string out;  // stdout and stderr together
};
ShellResult run_shell(const std::string& command);

class TestPki {
 public:
  explicit TestPki(const std::string& tag);  // throws std::runtime_error when openssl fails
  ~TestPki();
  const std::filesystem::path& dir() const { return dir_; }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace gpuledger::testing
