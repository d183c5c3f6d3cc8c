// The charts' time axes: buckets of round lengths that never read "0 min",
// ticks on round UTC times that never read the same, from seconds to months.
#include "report/chart_time.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuledger::report {
namespace {

constexpr int64_t kNov30 = 1796083200 - 86400;  // 2026-11-30T00:00:00Z
constexpr int64_t kDay = 86400;

std::vector<std::string> texts(const std::vector<TimeTick>& ticks) {
  std::vector<std::string> out;
  for (const auto& t : ticks) out.push_back(t.context.empty() ? t.label : t.label + " | " + t.context);
  return out;
}

TEST(ChartTime, BucketsAreRoundLengthsOfWholeWindows) {
  EXPECT_EQ(chart_bucket_seconds(40, 5), 5);            // 40 s of 5 s windows
  EXPECT_EQ(chart_bucket_seconds(300, 10), 10);         // five minutes of 10 s windows
  EXPECT_EQ(chart_bucket_seconds(300, 1), 10);          // 300 / 48 = 6.25 -> 10 s
  EXPECT_EQ(chart_bucket_seconds(7200, 60), 300);       // two hours: 150 s -> 5 min
  EXPECT_EQ(chart_bucket_seconds(kDay, 60), 1800);      // a day: 30 min
  EXPECT_EQ(chart_bucket_seconds(30 * kDay, 3600), kDay);     // a month: a day
  EXPECT_EQ(chart_bucket_seconds(365 * kDay, 3600), 14 * kDay);  // a year: two weeks
  EXPECT_EQ(chart_bucket_seconds(3650 * kDay, 3600), 84 * kDay);  // ten years: whole multiples of 28 days
  EXPECT_EQ(chart_bucket_seconds(300, 7), 7);           // 7 s windows: one (7 days is round, but no bucket)
  EXPECT_EQ(chart_bucket_seconds(3600, 7), 77);         // 75 s needed: 11 windows
  EXPECT_EQ(chart_bucket_seconds(0, 0), 1);
}

TEST(ChartTime, BucketWordsNameARealLength) {
  EXPECT_EQ(duration_words_short(5), "5 s");
  EXPECT_EQ(duration_words_short(30), "30 s");
  EXPECT_EQ(duration_words_short(90), "90 s");
  EXPECT_EQ(duration_words_short(300), "5 min");
  EXPECT_EQ(duration_words_short(3600), "1 hour");
  EXPECT_EQ(duration_words_short(6 * 3600), "6 hours");
  EXPECT_EQ(duration_words_short(kDay), "1 day");
  EXPECT_EQ(duration_words_short(14 * kDay), "14 days");
}

TEST(ChartTime, TicksFitTheRangeFromSecondsToMonths) {
  const int64_t t1747 = kNov30 + 17 * 3600 + 47 * 60;
  // Five seconds: every second, to the second (never six ticks reading 17:47).
  EXPECT_EQ(texts(time_ticks(t1747, t1747 + 5, 6)),
            (std::vector<std::string>{"17:47:00 | Nov 30", "17:47:01", "17:47:02", "17:47:03", "17:47:04", "17:47:05"}));
  EXPECT_EQ(texts(time_ticks(t1747 + 3, t1747 + 63, 6)),
            (std::vector<std::string>{"17:47:10 | Nov 30", "17:47:20", "17:47:30", "17:47:40", "17:47:50", "17:48:00"}));
  EXPECT_EQ(texts(time_ticks(t1747 - 120, t1747 + 180, 6)),
            (std::vector<std::string>{"17:45 | Nov 30", "17:46", "17:47", "17:48", "17:49", "17:50"}));
  // Across midnight, the new day says its date.
  EXPECT_EQ(texts(time_ticks(kNov30 + 20 * 3600, kNov30 + 28 * 3600, 6)),
            (std::vector<std::string>{"20:00 | Nov 30", "22:00", "00:00 | Dec 01", "02:00", "04:00"}));
  EXPECT_EQ(texts(time_ticks(kNov30, kNov30 + kDay, 3)), (std::vector<std::string>{"00:00 | Nov 30", "12:00", "00:00 | Dec 01"}));
  // A month: Mondays; a year: months; ten years: years.
  const int64_t nov1 = kNov30 - 29 * kDay;
  EXPECT_EQ(texts(time_ticks(nov1, nov1 + 30 * kDay, 6)),
            (std::vector<std::string>{"Nov 02 | 2026", "Nov 09", "Nov 16", "Nov 23", "Nov 30"}));
  const int64_t jan2027 = nov1 + 61 * kDay;
  EXPECT_EQ(texts(time_ticks(jan2027, jan2027 + 365 * kDay, 6)),
            (std::vector<std::string>{"Jan | 2027", "Apr", "Jul", "Oct", "Jan | 2028"}));
  EXPECT_EQ(texts(time_ticks(nov1 - 300 * kDay, jan2027 + 30 * kDay, 6)),
            (std::vector<std::string>{"Mar | 2026", "May", "Jul", "Sep", "Nov", "Jan | 2027"}));
  EXPECT_EQ(texts(time_ticks(jan2027, jan2027 + 3652 * kDay, 6)),
            (std::vector<std::string>{"2028", "2030", "2032", "2034", "2036"}));
  // However short or odd the range, at most the ticks asked for, none alike.
  for (int64_t span : std::vector<int64_t>{0, 1, 2, 7, 59, 61, 3599, 86399, 86401, 400 * kDay})
    for (int max : {2, 3, 6, 8}) {
      const auto ticks = time_ticks(t1747 + 13, t1747 + 13 + span, max);
      EXPECT_LE(static_cast<int>(ticks.size()), max) << span;
      auto all = texts(ticks);
      std::sort(all.begin(), all.end());
      EXPECT_EQ(std::unique(all.begin(), all.end()), all.end()) << span;
    }
}

TEST(ChartTime, ABucketsRangeForItsTooltip) {
  const int64_t t = kNov30 + 14 * 3600 + 5 * 60;
  EXPECT_EQ(bucket_range_text(t + 10, 10), "2026-11-30 14:05:10 to 14:05:20 UTC");
  EXPECT_EQ(bucket_range_text(t, 300), "2026-11-30 14:05 to 14:10 UTC");
  EXPECT_EQ(bucket_range_text(kNov30, kDay), "2026-11-30 00:00 to 2026-12-01 00:00 UTC");
}

}  // namespace
}  // namespace gpuledger::report
