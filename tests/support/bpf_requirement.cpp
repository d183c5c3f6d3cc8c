#include "bpf_requirement.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "probes/cuda_probe_program.h"

namespace gpuledger::testing {

bool running_in_ci() {
  const char* ci = std::getenv("CI");
  return ci && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

std::string bpf_unavailable_reason() {
  static const std::string reason = [] {
    if (::geteuid() != 0) return std::string("not running as root");
    try {
      probes::CudaProbeProgram program(probes::ProbeProgramConfig{});
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return reason;
}

}  // namespace gpuledger::testing
