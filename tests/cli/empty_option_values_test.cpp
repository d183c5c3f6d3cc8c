#include "cli/empty_option_values.h"

#include <gtest/gtest.h>

namespace gpuledger::cli {
namespace {

std::vector<std::string> split(std::vector<const char*> argv) {
  return split_empty_option_values(static_cast<int>(argv.size()), argv.data());
}

// Issue 10: `--store= --no-discovery` made "--no-discovery" the store's path.
TEST(EmptyOptionValues, AnEmptyAssignmentIsAnEmptyValue) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split({"gpuledger", "agent", "--store=", "--no-discovery"}),
            (V{"gpuledger", "agent", "--store", "", "--no-discovery"}));
  EXPECT_EQ(split({"gpuledger", "agent", "--store=a=", "--listen=:1"}),
            (V{"gpuledger", "agent", "--store=a=", "--listen=:1"}))
      << "values that are not empty are CLI11's";
  EXPECT_EQ(split({"gpuledger", "--=", "-s=", "--"}), (V{"gpuledger", "--=", "-s=", "--"})) << "not long options";
  EXPECT_EQ(split({"--x=", "a", "--", "--y="}), (V{"--x=", "a", "--", "--y="}))
      << "the program name and what follows -- are left alone";
}

}  // namespace
}  // namespace gpuledger::cli
