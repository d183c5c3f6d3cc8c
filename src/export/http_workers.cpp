#include "export/http_workers.h"

#include <algorithm>

#include "common/log.h"

namespace gpuledger::exporter {

HttpWorkers::HttpWorkers(HttpHandler handler, std::function<bool(const HttpRequest&)> slow, unsigned fast_workers,
                         std::function<void()> on_done)
    : handler_(std::move(handler)), slow_(std::move(slow)), on_done_(std::move(on_done)) {
  for (unsigned i = 0; i < std::max(1u, fast_workers); ++i) threads_.emplace_back([this] { work(kFast); });
  if (slow_) threads_.emplace_back([this] { work(kSlow); });
}

HttpWorkers::~HttpWorkers() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  for (auto& cv : cv_) cv.notify_all();
  for (auto& t : threads_) t.join();
}

void HttpWorkers::submit(uint64_t id, HttpRequest request) {
  const Lane lane = slow_ && slow_(request) ? kSlow : kFast;
  {
    std::lock_guard lock(mu_);
    jobs_[lane].push_back({id, std::move(request)});
  }
  cv_[lane].notify_one();
}

std::vector<HttpWorkers::Done> HttpWorkers::take_done() {
  std::lock_guard lock(mu_);
  return std::exchange(done_, {});
}

void HttpWorkers::work(Lane lane) {
  while (true) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_[lane].wait(lock, [&] { return stopping_ || !jobs_[lane].empty(); });
      if (stopping_) return;
      job = std::move(jobs_[lane].front());
      jobs_[lane].pop_front();
    }
    HttpResponse response;
    try {
      response = handler_(job.request);
    } catch (const std::exception& e) {
      spdlog::warn("http: {} {}: {}", job.request.method, job.request.path, e.what());
      response = status_response(500);
    }
    const bool keep_alive = job.request.keep_alive();
    std::string bytes = serialize_response(response, keep_alive, job.request.method == "HEAD");
    {
      std::lock_guard lock(mu_);
      done_.push_back({job.id, std::move(bytes), keep_alive});
    }
    on_done_();
  }
}

}  // namespace gpuledger::exporter
