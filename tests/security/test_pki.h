#pragma once
// Test support: a throwaway certificate authority made with the openssl CLI
// (server certificate for 127.0.0.1, a client certificate, and a rogue one
// from another CA).
#include <filesystem>
#include <string>

#include "cli_process.h"  // tests/report: run() a shell command

namespace gpuledger::testing {

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
