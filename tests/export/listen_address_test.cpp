// Tests for parse_listen_address (export/http_server.h).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"
#include "export/http_server.h"

namespace gpuledger::exporter {
namespace {

using HostPort = std::pair<std::string, int>;

TEST(ParseListenAddress, HostAndPort) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:9400"), (HostPort{"127.0.0.1", 9400}));
  EXPECT_EQ(parse_listen_address("localhost:65535"), (HostPort{"localhost", 65535}));
  EXPECT_EQ(parse_listen_address("0.0.0.0:0"), (HostPort{"0.0.0.0", 0}));
}

TEST(ParseListenAddress, BracketedIpv6) {
  EXPECT_EQ(parse_listen_address("[::1]:80"), (HostPort{"::1", 80}));
  EXPECT_EQ(parse_listen_address("[::]:9400"), (HostPort{"::", 9400}));
}

TEST(ParseListenAddress, EmptyHostMeansAllInterfaces) {
  EXPECT_EQ(parse_listen_address(":9400"), (HostPort{"0.0.0.0", 9400}));
}

TEST(ParseListenAddress, MalformedThrows) {
  for (const char* bad : {"abc", "1.2.3.4:", "h:70000", "h:12x", "", ":", "h:", "h:-1", "h:65536",
                          "h:99999999999999999999", "h:x12", "[::1]", "h: 80", "h:+80", "::1", "[::1:80", "a]:80"}) {
    EXPECT_THROW(parse_listen_address(bad), gpuledger::Error) << "'" << bad << "'";
  }
}

TEST(ParseListenAddress, ErrorMessageNamesTheInput) {
  try {
    parse_listen_address("h:12x");
    FAIL() << "no throw";
  } catch (const gpuledger::Error& e) {
    EXPECT_NE(std::string(e.what()).find("h:12x"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpuledger::exporter
