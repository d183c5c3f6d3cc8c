#pragma once
// Tests that need BPF say so with GL_REQUIRE_BPF(): skipped where BPF cannot
// be had (not root, no BTF), but FAILED under CI=true, where a skip would hide
// that the real probes never ran.
#include <gtest/gtest.h>

#include <string>

namespace gpuledger::testing {

// Empty when BPF programs can be loaded here; otherwise why not.
std::string bpf_unavailable_reason();
bool running_in_ci();

}  // namespace gpuledger::testing

#define GL_REQUIRE_BPF()                                                                          \
  do {                                                                                            \
    if (auto why = ::gpuledger::testing::bpf_unavailable_reason(); !why.empty()) {                \
      if (::gpuledger::testing::running_in_ci()) FAIL() << "BPF unavailable under CI: " << why;   \
      GTEST_SKIP() << "BPF unavailable: " << why;                                                 \
    }                                                                                             \
  } while (0)
