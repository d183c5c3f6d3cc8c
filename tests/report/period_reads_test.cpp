// A CSV's rows read on two readers at once (period_reads.h): the range cut
// into spans of whole charge periods, each read whole by one reader, the rows
// byte for byte one reader's.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "report/bill.h"
#include "report/period_reads.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using ledger::WindowRecord;
using testing::kT0;
using testing::one_pod_window;

constexpr int64_t kDay = kT0 / 86400 * 86400;

WindowRecord window(int gpu, int64_t start) {
  WindowRecord w = one_pod_window(gpu, start, 600, "pod-" + std::to_string((gpu + start / 600) % 5),
                                  gpu % 2 ? "vision" : "nlp", 1'000 + gpu + start % 13);
  w.accounts[0].gpu_busy_seconds = 0.1 * static_cast<double>(start % 7 + gpu);
  return w;
}

struct Fixture {
  std::vector<WindowRecord> all;
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> mine, theirs;  // the spans each reader read
  std::thread::id main = std::this_thread::get_id();
  bool second_reader_asked = false;
  std::atomic<int> taken{0};  // spans the second reader took

  Fixture() {
    for (int64_t t = kDay - 3 * 3600; t < kDay + 3 * 86400; t += 600)
      for (int g = 0; g < 3; ++g) all.push_back(window(g, t));
  }
  void read(int64_t a, int64_t b, const std::function<void(WindowRecord&&)>& fn) const {
    for (auto w : all)
      if (w.start >= a && w.start < b) fn(std::move(w));
  }
  BillSource source(bool second) {
    BillSource s;
    s.for_each_window = [this](const std::function<void(WindowRecord &&)>& fn) { read(0, INT64_MAX, fn); };
    s.inputs = [] { return ledger::BillInputs{}; };
    s.for_each_window_in = [this](int64_t a, int64_t b, const std::function<void(WindowRecord &&)>& fn) {
      EXPECT_EQ(std::this_thread::get_id(), main);
      mine.emplace_back(a, b);
      read(a, b, fn);
      // With a second reader, this one's first span waits for it to take one
      // (a few windows read here would otherwise be every span before it starts).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (second_reader_asked && taken.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    };
    if (second)
      s.second_reader = [this]() -> BillSource::WindowsIn {
        EXPECT_EQ(std::this_thread::get_id(), main) << "asked for on the reader's thread";
        second_reader_asked = true;
        return [this](int64_t a, int64_t b, const std::function<void(WindowRecord &&)>& fn) {
          EXPECT_NE(std::this_thread::get_id(), main);
          {
            const std::lock_guard lock(mu);
            theirs.emplace_back(a, b);
          }
          ++taken;
          read(a, b, fn);
        };
      };
    return s;
  }
};

BillRequest csv(int64_t from, int64_t to, Granularity g) {
  BillRequest q;
  q.from = from;
  q.to = to;
  q.format = Format::kCsv;
  q.granularity = g;
  q.generated_at = kDay + 3 * 86400;
  return q;
}

TEST(PeriodReads, SpansAreWholePeriodsInOrderCoveringTheRange) {
  const int64_t from = kDay + 5 * 3600 + 17, to = kDay + 3 * 86400 + 7200;  // 4 days cut, by day
  EXPECT_EQ(period_spans(from, to, Granularity::kDay, 4),
            (std::vector<std::pair<int64_t, int64_t>>{{from, kDay + 86400},
                                                      {kDay + 86400, kDay + 2 * 86400},
                                                      {kDay + 2 * 86400, kDay + 3 * 86400},
                                                      {kDay + 3 * 86400, to}}));
  EXPECT_EQ(period_spans(from, to, Granularity::kDay, 2),
            (std::vector<std::pair<int64_t, int64_t>>{{from, kDay + 2 * 86400}, {kDay + 2 * 86400, to}}));
  EXPECT_EQ(period_spans(from, to, Granularity::kDay, 9).size(), 4u) << "never more spans than periods";
  EXPECT_EQ(period_spans(kDay, kDay + 11 * 3600, Granularity::kHour, 4),
            (std::vector<std::pair<int64_t, int64_t>>{{kDay, kDay + 2 * 3600},
                                                      {kDay + 2 * 3600, kDay + 5 * 3600},
                                                      {kDay + 5 * 3600, kDay + 8 * 3600},
                                                      {kDay + 8 * 3600, kDay + 11 * 3600}}));
  EXPECT_EQ(period_spans(from, from + 60, Granularity::kMonth, 4),
            (std::vector<std::pair<int64_t, int64_t>>{{from, from + 60}}));
  EXPECT_TRUE(period_spans(from, from, Granularity::kDay, 4).empty());
}

TEST(PeriodReads, TwoReadersWriteTheRowsOneReaderDoes) {
  for (const Granularity g : {Granularity::kHour, Granularity::kDay}) {
    for (const auto& [from, to] :
         {std::pair{kDay - 3 * 3600, kDay + 3 * 86400}, std::pair{kDay + 3 * 3600 + 300, kDay + 2 * 86400 + 1800}}) {
      SCOPED_TRACE(std::to_string(from) + ".." + std::to_string(to));
      Fixture one, two;
      const std::string expected = render_bill(one.source(false), csv(from, to, g));
      EXPECT_EQ(one.mine, (std::vector<std::pair<int64_t, int64_t>>{{from, to}})) << "one read of the range";
      EXPECT_EQ(render_bill(two.source(true), csv(from, to, g)), expected);
      ASSERT_FALSE(two.theirs.empty()) << "the second reader read a span";
      auto spans = two.mine;
      spans.insert(spans.end(), two.theirs.begin(), two.theirs.end());
      std::sort(spans.begin(), spans.end());
      EXPECT_EQ(spans, period_spans(from, to, g, 4)) << "each span read once, by one of them";
    }
  }
}

TEST(PeriodReads, TheSecondReadersErrorIsTheReports) {
  Fixture f;
  BillSource s = f.source(false);
  f.second_reader_asked = true;  // the first reader's span waits for it to take one
  s.second_reader = [&f]() -> BillSource::WindowsIn {
    return [&f](int64_t, int64_t, const std::function<void(WindowRecord &&)>&) {
      ++f.taken;
      throw std::runtime_error("the second connection was lost");
    };
  };
  EXPECT_THROW(render_bill(s, csv(kDay, kDay + 2 * 86400, Granularity::kDay)), std::runtime_error);
}

TEST(PeriodReads, NoSecondReaderOpenedReadsTheRangeOnce) {
  Fixture f;
  BillSource s = f.source(false);
  s.second_reader = [] { return BillSource::WindowsIn{}; };  // the server refused it
  const std::string text = render_bill(s, csv(kDay, kDay + 2 * 86400, Granularity::kDay));
  Fixture g;
  EXPECT_EQ(text, render_bill(g.source(false), csv(kDay, kDay + 2 * 86400, Granularity::kDay)));
  EXPECT_EQ(f.mine, (std::vector<std::pair<int64_t, int64_t>>{{kDay, kDay + 2 * 86400}}));
}

}  // namespace
}  // namespace gpuledger::report
