#include "fleet/page_receiver.h"

#include <stdexcept>
#include <utility>

namespace gpuledger::fleet {

PageReceiver::PageReceiver(PgConnection& db) : db_(db), thread_([this] { run(); }) {}

PageReceiver::~PageReceiver() {
  try {
    if (pending_) take();
  } catch (...) {  // not wanted: the caller is ending its read
  }
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PageReceiver::send(const std::string& sql) {
  db_.send(sql);
  {
    std::lock_guard<std::mutex> lock(m_);
    asked_ = true;
  }
  pending_ = true;
  cv_.notify_all();
}

PgResult PageReceiver::take() {
  if (!pending_) throw std::logic_error("a page taken that was never started");
  std::unique_lock<std::mutex> lock(m_);
  cv_.wait(lock, [this] { return !asked_; });
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  PgResult r = std::move(*result_);
  result_.reset();
  return r;
}

void PageReceiver::run() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [this] { return asked_ || stop_; });
    if (!asked_) return;
    lock.unlock();
    std::optional<PgResult> r;
    std::exception_ptr error;
    try {
      r.emplace(db_.receive());
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    result_.reset();
    if (r) result_.emplace(std::move(*r));
    error_ = error;
    asked_ = false;
    cv_.notify_all();
  }
}

}  // namespace gpuledger::fleet
