#include "private_copy.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>

#include "common/error.h"

namespace gpuledger::bench {
namespace fs = std::filesystem;

PrivateCopy::PrivateCopy(const std::string& original, const std::string& name) {
  char tmpl[] = "/tmp/gpuledger-bench.XXXXXX";
  if (!::mkdtemp(tmpl)) throw Error("cannot create a temporary directory");
  dir_ = tmpl;
  path_ = dir_ + "/" + name;
  std::error_code ec;
  fs::copy_file(original, path_, ec);
  if (ec) throw Error("cannot copy " + original + ": " + ec.message());
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error("cannot load " + original + ": " + ::dlerror());
}

PrivateCopy::~PrivateCopy() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void* PrivateCopy::symbol(const char* symbol) const {
  void* fn = ::dlsym(handle_, symbol);
  if (!fn) throw Error(path_ + " does not export " + symbol);
  return fn;
}

}  // namespace gpuledger::bench
