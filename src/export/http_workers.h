#pragma once
// The threads that turn complete requests into response bytes for the
// listener (http_listener.h), in two lanes: requests the `slow` predicate
// picks (say, a password to check with bcrypt) queue for one worker of their
// own, so a flood of them never delays the others.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "export/http_message.h"

namespace gpuledger::exporter {

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpWorkers {
 public:
  struct Done {
    uint64_t id;         // the connection's, as submitted
    std::string bytes;   // the serialized response
    bool keep_alive;
  };
  // `on_done` runs on a worker after each answer, to wake whoever takes them.
  HttpWorkers(HttpHandler handler, std::function<bool(const HttpRequest&)> slow, unsigned fast_workers,
              std::function<void()> on_done);
  ~HttpWorkers();  // stops; queued requests are dropped
  HttpWorkers(const HttpWorkers&) = delete;
  HttpWorkers& operator=(const HttpWorkers&) = delete;

  void submit(uint64_t id, HttpRequest request);
  std::vector<Done> take_done();

 private:
  enum Lane { kFast = 0, kSlow = 1 };
  struct Job {
    uint64_t id;
    HttpRequest request;
  };
  void work(Lane lane);

  HttpHandler handler_;
  std::function<bool(const HttpRequest&)> slow_;
  std::function<void()> on_done_;
  std::mutex mu_;  // guards jobs_, done_, stopping_
  std::condition_variable cv_[2];
  std::deque<Job> jobs_[2];
  std::vector<Done> done_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuledger::exporter
