#pragma once
// A private copy of a library, loaded with dlopen: uprobes are per file
// (inode), so probes someone else attaches to the original (tests, a demo)
// cannot land on the calls being timed, and a rebuild cannot pull it away
// mid-run. The copy is named `name` (never libcuda.so*: an agent with
// discovery on would find it in this process's maps and probe it too). Only
// the directory entry goes at destruction; the mapping stays until exit.
#include <string>

namespace gpuledger::bench {

class PrivateCopy {
 public:
  PrivateCopy(const std::string& original, const std::string& name);  // throws Error
  ~PrivateCopy();
  PrivateCopy(const PrivateCopy&) = delete;
  PrivateCopy& operator=(const PrivateCopy&) = delete;

  const std::string& path() const { return path_; }
  void* handle() const { return handle_; }
  // The exported function `symbol`, or an Error naming what lacks it.
  void* symbol(const char* symbol) const;

 private:
  std::string dir_, path_;
  void* handle_ = nullptr;
};

}  // namespace gpuledger::bench
