#include "report/report_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "common/error.h"
#include "report/report_choices.h"

namespace gpuledger::report {
namespace {

constexpr int64_t kT0 = 1'800'000'000;  // 2027-01-15T08:00:00Z

TEST(ReportTime, Parse) {
  const int64_t now = 1'800'000'000;
  EXPECT_EQ(parse_time("now", now), now);
  EXPECT_EQ(parse_time("-24h", now), now - 86400);
  EXPECT_EQ(parse_time("-30m", now), now - 1800);
  EXPECT_EQ(parse_time("-7d", now), now - 7 * 86400);
  EXPECT_EQ(parse_time("-90s", now), now - 90);
  EXPECT_EQ(parse_time("2027-01-15T08:00:00Z", now), kT0);
  EXPECT_EQ(parse_time("2027-01-15T10:00:00+02:00", now), kT0);
  EXPECT_EQ(parse_time("2027-01-15T08:00:00.123Z", now), kT0);
  EXPECT_EQ(parse_time("1800000000", now), kT0);
  EXPECT_EQ(format_rfc3339(kT0), "2027-01-15T08:00:00Z");
  EXPECT_EQ(parse_time("2027-01-15", now), kT0 - 8 * 3600);  // a plain date: its midnight, UTC
  EXPECT_EQ(parse_time("2026-11-01", now), 1'793'491'200);
  EXPECT_EQ(parse_month("2026-11"), (std::pair<int64_t, int64_t>{1'793'491'200, 1'793'491'200 + 30 * 86400}));
  EXPECT_EQ(parse_month("2026-12").second, parse_time("2027-01-01", now));
  EXPECT_EQ(parse_month("2028-02").second - parse_month("2028-02").first, 29 * 86400);  // leap year
  for (const char* bad : {"2026-13", "2026-1", "26-11", "2026-11-01"}) EXPECT_THROW(parse_month(bad), Error) << bad;
  for (const char* bad : {"yesterday", "-5y", "2027-13-15", "2027-01-15T08:00:00", "-h", "2027-1-15"})
    EXPECT_THROW(parse_time(bad, now), Error) << bad;
  EXPECT_THROW(parse_group_by("cluster"), Error);
  EXPECT_THROW(parse_format("xml"), Error);
}

TEST(ReportTime, ImpossibleDatesAndNumbersAreRefused) {
  for (const char* bad : {"2026-11-31", "2026-02-29", "2026-13-01", "2026-11-30T24:00:00Z", "2026-11-30T10:61:00Z",
                          "99999999999999999999", "-99999999999999999999d", "2026-1-01", "+5", "2026-11-30T10:00:00+25:00"}) {
    try {
      parse_time(bad, 0);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find("stoll"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_time("2028-02-29", 0), parse_time("2028-02-29T00:00:00Z", 0));
}

}  // namespace
}  // namespace gpuledger::report
