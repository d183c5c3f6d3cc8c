#include <gtest/gtest.h>

#include "common/error.h"
#include "device/dcgm_scraper.h"
#include "fixture_server.h"
#include "test_util.h"

namespace gpuledger::device {
namespace {

TEST(ExporterUrl, AcceptsUrlsAndHostPort) {
  auto u = parse_exporter_url("http://10.0.0.1:9400/metrics");
  EXPECT_EQ(u.scheme_host_port, "http://10.0.0.1:9400");
  EXPECT_EQ(u.path, "/metrics");
  u = parse_exporter_url("dcgm-exporter.gpu.svc:9400");
  EXPECT_EQ(u.scheme_host_port, "http://dcgm-exporter.gpu.svc:9400");
  EXPECT_EQ(u.path, "/metrics");
  u = parse_exporter_url("https://[::1]:9400/custom/path");
  EXPECT_EQ(u.scheme_host_port, "https://[::1]:9400");
  EXPECT_EQ(u.path, "/custom/path");
  EXPECT_THROW(parse_exporter_url("ftp://x:1/"), Error);
  EXPECT_THROW(parse_exporter_url("http:///metrics"), Error);
}

TEST(DcgmScraper, ScrapesEachFixtureFromALocalServer) {
  test::FixtureServer server;
  for (const char* name : {"two-a100-kubernetes.txt", "t4-time-slicing-virtual-gpus.txt", "mig-a100.txt",
                           "hostname-lowercase-old-labels.txt", "reordered-crlf-garbage.txt",
                           "h100-hostname-lowercase.txt", "h100-hostname-capital.txt",
                           "mig-h100-hostname-lowercase.txt"}) {
    server.set(test::read_fixture(std::string("dcgm-exporter/") + name));
    DcgmScraper scraper(server.url());
    auto result = scraper.scrape();
    EXPECT_TRUE(result.ok) << name << ": " << result.error;
    EXPECT_GT(result.dcgm_samples, 0u) << name;
    EXPECT_FALSE(result.extraction.readings.empty()) << name;
  }
}

TEST(DcgmScraper, ReportsProfilingPresence) {
  test::FixtureServer server;
  server.set(test::read_fixture("dcgm-exporter/t4-time-slicing-virtual-gpus.txt"));
  auto result = DcgmScraper(server.url()).scrape();
  ASSERT_TRUE(result.ok);
  EXPECT_FALSE(result.has_profiling);
  server.set(test::read_fixture("dcgm-exporter/two-a100-kubernetes.txt"));
  result = DcgmScraper(server.url()).scrape();
  EXPECT_TRUE(result.has_profiling);
}

TEST(DcgmScraper, UnreachableEndpointIsAnErrorNotAnException) {
  auto result = DcgmScraper("http://127.0.0.1:" + std::to_string(test::closed_port()) + "/metrics").scrape();
  EXPECT_FALSE(result.ok);
  EXPECT_FALSE(result.error.empty());
}

TEST(DcgmScraper, HttpErrorStatusIsAnError) {
  test::FixtureServer server;
  server.set("oops", 503);
  auto result = DcgmScraper(server.url()).scrape();
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("503"), std::string::npos) << result.error;
}

TEST(DcgmScraper, SlowEndpointTimesOut) {
  test::FixtureServer server;
  server.set("DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-x\"} 1\n", 200, std::chrono::milliseconds(900));
  ScrapeOptions options;
  options.timeout = std::chrono::milliseconds(200);
  auto started = std::chrono::steady_clock::now();
  auto result = DcgmScraper(server.url(), options).scrape();
  EXPECT_FALSE(result.ok);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(800));
}

TEST(DcgmScraper, OversizedBodyIsRefused) {
  test::FixtureServer server;
  server.set(std::string(4096, '#'));
  ScrapeOptions options;
  options.max_body_bytes = 1024;
  auto result = DcgmScraper(server.url(), options).scrape();
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("larger"), std::string::npos) << result.error;
}

}  // namespace
}  // namespace gpuledger::device
