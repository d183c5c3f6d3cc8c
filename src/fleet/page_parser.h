#pragma once
// A fetched page's JSON column, parsed by the other cores ahead of the reader,
// which takes the rows in order while they parse the next ones (or parses one
// itself when it gets there first). The JSON is most of a report's time
// (docs/performance.md, section 6) and the rows are independent; parsed a page
// at a time by every core and then billed, the bill's work (one core) and the
// parse's never overlapped. The fleet reader parses roll-up bodies and window
// bodies with it (fleet_reader.cpp).
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

// kParse: the column's text read, or nullopt where it cannot be.
template <class T, std::optional<T> (*kParse)(std::string_view)>
class PageParser {
 public:
  // A row's column, parsed: present (not NULL), and read (nullopt: unreadable).
  struct Parsed {
    bool present = false;
    std::optional<T> value;
  };

  PageParser(std::shared_ptr<const PgResult> page, int column)
      : page_(std::move(page)),
        column_(column),
        out_(static_cast<size_t>(page_->rows())),
        state_(std::make_unique<std::atomic<int>[]>(out_.size())) {
    const unsigned workers = std::clamp(std::thread::hardware_concurrency(), 1u, 16u) - 1;
    for (unsigned k = 0; k < workers && k + 1 < out_.size(); ++k)
      workers_.emplace_back([this] {
        for (size_t j; !stop_.load(std::memory_order_relaxed) && (j = next_.fetch_add(1)) < out_.size();) take(j);
      });
  }
  ~PageParser() {
    stop_ = true;
    for (auto& t : workers_) t.join();
  }
  PageParser(const PageParser&) = delete;
  PageParser& operator=(const PageParser&) = delete;

  // Row j's column, parsed (here, unless a worker has it). While a worker
  // parses it, the next row nobody has is parsed here: where billing a body
  // is quicker than parsing one, the reader caught up with the worker and
  // then waited for every row in turn, spinning and then on a futex (12 %
  // of a CSV by day's client), while one core parsed them all
  // (docs/performance.md, "The bill's builder").
  Parsed& at(int row) {
    const auto j = static_cast<size_t>(row);
    while (!take(j)) {
      if (const size_t k = next_.fetch_add(1); k < out_.size()) {
        take(k);
        continue;
      }
      // Nothing left to parse: wait for it (a futex: no core spent waiting).
      waiting_.store(j);  // before the state is read: the worker that sets it reads this after (both seq_cst)
      for (int s; (s = state_[j].load()) != kDone;) state_[j].wait(s);
      waiting_.store(kNobody);
      break;
    }
    return out_[j];
  }

 private:
  static constexpr int kFree = 0, kTaken = 1, kDone = 2;
  // Parses row j when nobody has; false when another thread has it.
  bool take(size_t j) {
    int free = kFree;
    if (!state_[j].compare_exchange_strong(free, kTaken, std::memory_order_acq_rel))
      return state_[j].load(std::memory_order_acquire) == kDone;
    const int i = static_cast<int>(j);
    if (!page_->null(i, column_)) {
      out_[j].present = true;
      out_[j].value = kParse(page_->view(i, column_));
    }
    state_[j].store(kDone);
    if (waiting_.load() == j) state_[j].notify_all();  // a wake-up only for the row waited on
    return true;
  }
  std::shared_ptr<const PgResult> page_;
  int column_;
  std::vector<Parsed> out_;
  std::unique_ptr<std::atomic<int>[]> state_;
  static constexpr size_t kNobody = SIZE_MAX;
  std::atomic<size_t> next_{0}, waiting_{kNobody};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace gpuledger::fleet
