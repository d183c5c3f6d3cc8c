#pragma once
// A statement's result received on a thread of its own while the caller reads
// the last one: a cursor's next page (fleet_reader.cpp). Received only when
// the caller came to it, the server stopped a socket buffer into the page
// (~200 KB of its 7 MB) and waited, and the caller then waited for the rest:
// a month to date's server and client were idle a fifth of its time
// (docs/performance.md, twenty-fifth session).
//
// One thread for the receiver's life, not one a page: a thread a page took
// its memory from a new malloc arena as often as not, every page's 7 MB
// faulted in afresh (a CSV by day's client +10,000 page faults, +8 % CPU).
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fleet/pg_connection.h"

namespace gpuledger::fleet {

class PageReceiver {
 public:
  explicit PageReceiver(PgConnection& db);
  // Waits for a result still being received (its error dropped).
  ~PageReceiver();
  PageReceiver(const PageReceiver&) = delete;
  PageReceiver& operator=(const PageReceiver&) = delete;

  // Sends `sql` on the connection (PgConnection::send), received from now on.
  void send(const std::string& sql);
  // Whether a started result has not been taken yet.
  bool pending() const { return pending_; }
  // That result once received, or its error thrown (PgConnection::receive's).
  PgResult take();

 private:
  void run();
  PgConnection& db_;
  std::mutex m_;
  std::condition_variable cv_;
  bool asked_ = false, stop_ = false, pending_ = false;
  std::optional<PgResult> result_;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the rest is there
};

}  // namespace gpuledger::fleet
