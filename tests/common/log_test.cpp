// Tests for common/log.h: a tenant's name in a log message is shown inert.
#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

namespace gpuledger {
namespace {

TEST(Log, MessagesAreInert) {
  std::ostringstream written;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(written);
  spdlog::logger logger("", sink);
  logger.set_formatter(log::inert_formatter());
  const std::string hostile = "\x1b[2J\x1b]0;pwned\x07\xE2\x80\xAEpod\xE2\x80\x8B\xFF\nforged line";
  logger.warn("cannot read the cgroup of {}", hostile);
  const std::string line = written.str();
  EXPECT_NE(line.find("[warning] cannot read the cgroup of \\x1b[2J\\x1b]0;pwned\\x07\\u202epod\\u200b\\xff\\x0aforged line\n"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\x07'), std::string::npos);
  EXPECT_EQ(line.find("\xE2\x80\xAE"), std::string::npos);
  EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1);  // one line: the name's newline forged none
  EXPECT_EQ(line.rfind("[20", 0), 0u);                       // spdlog's default timestamp still leads
}

}  // namespace
}  // namespace gpuledger
