// A streamed FOCUS export (write_bill with for_each_window_in) reads whole
// charge periods, several at a time while they hold few rows, fewer again
// once a read held many: byte for byte the export built whole in memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "report/bill.h"
#include "report/focus_export.h"
#include "report_fixture.h"

namespace gpuledger::report {
namespace {

using ledger::WindowRecord;
using testing::kT0;
using testing::one_pod_window;

constexpr int64_t kHours = 12;
constexpr int kBusyGpus = static_cast<int>(kFocusRowsHeld) + 2000;  // hours 5 and 6: one read's worth and more

WindowRecord window(int gpu, int64_t start) {
  return one_pod_window(gpu, start, 3600, "pod-" + std::to_string(gpu % 7), "vision", 1'000 + gpu);
}

std::vector<WindowRecord> windows() {
  std::vector<WindowRecord> out;
  for (int64_t h = 0; h < kHours; ++h)
    for (int g = 0; g < (h == 5 || h == 6 ? kBusyGpus : 3); ++g) out.push_back(window(g, kT0 + h * 3600));
  return out;
}

// The whole range's windows (the first pass); for_each_window_in is each test's.
BillSource whole_range_source(const std::vector<WindowRecord>& all) {
  BillSource source;
  source.for_each_window = [&all](const std::function<void(WindowRecord&&)>& fn) {
    for (auto w : all) fn(std::move(w));
  };
  source.inputs = [] { return ledger::BillInputs{}; };
  return source;
}

BillRequest hourly_focus() {
  BillRequest q;
  q.from = kT0;
  q.to = kT0 + kHours * 3600;
  q.format = Format::kFocus;
  q.granularity = Granularity::kHour;
  q.generated_at = q.to;
  return q;
}

TEST(FocusStream, ReadsSeveralPeriodsWhileFewFewerOnceAReadHeldManyAndWritesTheSameBytes) {
  const std::vector<WindowRecord> all = windows();
  BillSource source = whole_range_source(all);
  const BillRequest q = hourly_focus();
  const std::string whole = render_bill(source, q);  // no for_each_window_in: built in memory

  std::vector<std::pair<int64_t, int64_t>> reads;
  source.for_each_window_in = [&](int64_t a, int64_t b, const std::function<void(WindowRecord&&)>& fn) {
    reads.emplace_back(a, b);
    for (auto w : all)
      if (w.start >= a && w.start < b) fn(std::move(w));
  };
  EXPECT_EQ(render_bill(source, q), whole);
  // A row per window here (one account each), in (period, GPU) order: a period of 12,002 GPUs is
  // written by as many threads as cores, each run after the one before it.
  const auto column = [](const std::string& name) {
    return static_cast<size_t>(std::find(kFocusColumns.begin(), kFocusColumns.end(), name) - kFocusColumns.begin());
  };
  std::vector<std::pair<std::string, std::string>> keys;  // (ChargePeriodStart, ResourceId) of each row
  for (size_t line = whole.find("\r\n") + 2; line < whole.size(); line = whole.find("\r\n", line) + 2) {
    std::vector<std::string> cells;
    size_t at = line;
    for (const size_t end = whole.find("\r\n", line); at <= end;) {
      const bool quoted = whole[at] == '"';
      size_t stop = quoted ? at + 1 : at;
      while (quoted && (stop = whole.find('"', stop)) + 1 < end && whole[stop + 1] == '"') stop += 2;
      stop = std::min(whole.find(',', quoted ? stop : at), end);
      cells.push_back(whole.substr(at, stop - at));
      at = stop + 1;
    }
    keys.emplace_back(cells.at(column("ChargePeriodStart")), cells.at(column("ResourceId")));
  }
  EXPECT_EQ(keys.size(), all.size());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  // Whole hours, in order, none twice: 1, 2 and 4 hours while each held 3 GPUs; hours 3-6 held
  // 2 x kBusyGpus + 6 slot-hours, so the next read is 2 hours, then 4 again.
  const std::vector<std::pair<int64_t, int64_t>> expected = {
      {kT0, kT0 + 3600}, {kT0 + 3600, kT0 + 3 * 3600}, {kT0 + 3 * 3600, kT0 + 7 * 3600},
      {kT0 + 7 * 3600, kT0 + 9 * 3600}, {kT0 + 9 * 3600, kT0 + 12 * 3600}};
  EXPECT_EQ(reads, expected);
}

// The next read runs while this one's rows are written: the writer of the
// first read's rows waits (with a deadline) for the second read to begin,
// which one after the other never happens. The same bytes, the same reads.
TEST(FocusStream, ReadsTheNextPeriodsWhileThisReadsRowsAreWritten) {
  const std::vector<WindowRecord> all = windows();
  BillSource source = whole_range_source(all);
  const BillRequest q = hourly_focus();
  const std::string whole = render_bill(source, q);

  std::mutex m;
  std::condition_variable changed;
  int reads_begun = 0;
  source.for_each_window_in = [&](int64_t a, int64_t b, const std::function<void(WindowRecord&&)>& fn) {
    {
      std::lock_guard lock(m);
      ++reads_begun;
    }
    changed.notify_all();
    for (auto w : all)
      if (w.start >= a && w.start < b) fn(std::move(w));
  };
  std::string text;
  bool overlapped = false;
  size_t pieces = 0;
  write_bill(source, q, nullptr, [&](std::string_view piece) {
    if (++pieces == 2) {  // the first read's rows (the header is the first piece)
      std::unique_lock lock(m);
      overlapped = changed.wait_for(lock, std::chrono::seconds(10), [&] { return reads_begun >= 2; });
    }
    text += piece;
  });
  EXPECT_TRUE(overlapped);
  EXPECT_EQ(text, whole);
}

// A read that fails fails the export; a writer that fails waits for the read
// in flight (which uses the caller's connection) before it is thrown past.
TEST(FocusStream, AFailedReadOrWriteEndsTheExportWithNoReadLeftRunning) {
  const std::vector<WindowRecord> all = windows();
  BillSource source = whole_range_source(all);
  const BillRequest q = hourly_focus();
  int reads = 0;
  source.for_each_window_in = [&](int64_t, int64_t, const std::function<void(WindowRecord&&)>&) {
    if (++reads == 3) throw std::runtime_error("the connection was lost");
  };
  EXPECT_THROW(write_bill(source, q, nullptr, [](std::string_view) {}), std::runtime_error);
  EXPECT_EQ(reads, 3);

  std::atomic<int> running{0}, finished{0};
  std::atomic<bool> writer_failed{false};
  source.for_each_window_in = [&](int64_t a, int64_t b, const std::function<void(WindowRecord&&)>& fn) {
    ++running;
    if (running.load() + finished.load() == 2) {  // the second read: still running when the writer fails
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!writer_failed && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the rest of a slow read
    }
    for (auto w : all)
      if (w.start >= a && w.start < b) fn(std::move(w));
    --running;
    ++finished;
  };
  size_t pieces = 0;
  EXPECT_THROW(write_bill(source, q, nullptr,
                          [&](std::string_view) {
                            if (++pieces < 2) return;  // the header
                            writer_failed = true;
                            throw std::runtime_error("the disk is full");
                          }),
               std::runtime_error);
  EXPECT_TRUE(writer_failed);
  EXPECT_EQ(running.load(), 0);
  EXPECT_EQ(finished.load(), 2);  // the first read, and the one in flight when its rows failed
}

}  // namespace
}  // namespace gpuledger::report
