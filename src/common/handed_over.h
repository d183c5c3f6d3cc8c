#pragma once
// A stream of values made on a thread of its own and used on the caller's, in
// the order they were made. A fleet report's reading thread fetched pages,
// read each window's columns and hashed its digest, and then billed it,
// one after the other: that thread was 72 % of the report's client samples
// and the others waited on it, with cores to spare (docs/performance.md,
// "The reader and the bill on two threads"). Handed over in batches, the
// reading and the billing overlap; the values and their order are the same,
// so the bill is too.
//
// Bounded: at most `batches` batches of `batch` values wait. An exception
// in either side ends both and is thrown here (the producer's first).
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gpuledger {

template <class T>
void hand_over(const std::function<void(const std::function<void(T&&)>&)>& produce,
               const std::function<void(T&&)>& consume, std::size_t batch = 256, std::size_t batches = 8) {
  batches = std::max<std::size_t>(batches, 1);  // room for one at least, or nothing would ever be handed over
  struct Abandoned {};                          // thrown in the producer when the consumer has failed
  std::mutex m;
  std::condition_variable changed;
  std::deque<std::vector<T>> ready;
  bool done = false, abandoned = false;
  std::exception_ptr produced_error;

  std::thread producer([&] {
    std::vector<T> filling;
    auto send = [&] {
      std::unique_lock lock(m);
      changed.wait(lock, [&] { return ready.size() < batches || abandoned; });
      if (abandoned) throw Abandoned{};
      ready.push_back(std::move(filling));
      changed.notify_all();
      filling = {};
      filling.reserve(batch);
    };
    try {
      filling.reserve(batch);
      try {
        produce([&](T&& value) {
          filling.push_back(std::move(value));
          if (filling.size() >= batch) send();
        });
      } catch (const Abandoned&) {
        throw;
      } catch (...) {
        produced_error = std::current_exception();  // what was made before it is still handed over
      }
      if (!filling.empty()) send();
    } catch (const Abandoned&) {
    } catch (...) {  // no room for a batch
      if (!produced_error) produced_error = std::current_exception();
    }
    std::lock_guard lock(m);
    done = true;
    changed.notify_all();
  });

  std::exception_ptr consumed_error;
  try {
    for (;;) {
      std::vector<T> taken;
      {
        std::unique_lock lock(m);
        changed.wait(lock, [&] { return !ready.empty() || done; });
        if (ready.empty()) break;
        taken = std::move(ready.front());
        ready.pop_front();
        changed.notify_all();
      }
      for (T& value : taken) consume(std::move(value));
    }
  } catch (...) {
    consumed_error = std::current_exception();
    std::lock_guard lock(m);
    abandoned = true;
    changed.notify_all();
  }
  producer.join();
  if (produced_error) std::rethrow_exception(produced_error);
  if (consumed_error) std::rethrow_exception(consumed_error);
}

}  // namespace gpuledger
