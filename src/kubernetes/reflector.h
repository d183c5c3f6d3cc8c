#pragma once
// List + watch of one kind of Kubernetes object, the way client-go's reflector
// does it: list, then watch from the list's resourceVersion with bookmarks,
// resume from the last resourceVersion seen after a dropped connection, and
// re-list when the server says 410 Gone. Failures back off exponentially; the
// sink keeps what it had meanwhile.
#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kubernetes/api_client.h"

namespace gpuledger::kubernetes {

enum class EventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  EventType type = EventType::kError;
  nlohmann::json object;
};

// One line of a watch stream. nullopt, with *error saying why, for anything
// that is not {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}.
std::optional<WatchEvent> parse_watch_event(std::string_view line, std::string* error);

class ResourceSink {
 public:
  virtual ~ResourceSink() = default;
  virtual void replace(const std::vector<nlohmann::json>& items) = 0;  // a full list
  virtual void apply(EventType type, const nlohmann::json& object) = 0;  // ADDED, MODIFIED, DELETED
};

struct ReflectorOptions {
  std::string name = "pods";        // for logs and metrics
  std::string path = "/api/v1/pods";
  std::string field_selector;       // e.g. "spec.nodeName=node-1"
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  int watch_timeout_seconds = 300;  // the server ends each watch after this; the reflector resumes
  int page_size = 500;
};

struct ReflectorStats {
  bool up = false;                 // the last request to the API server succeeded
  bool synced = false;             // a list has completed at least once
  uint64_t lists = 0;              // completed lists
  uint64_t relists_gone = 0;       // lists forced by 410 Gone
  uint64_t watch_restarts = 0;     // watches started after the first one
  uint64_t errors = 0;             // failed requests
  uint64_t malformed = 0;          // lines or objects that could not be understood
  uint64_t events = 0;             // events applied
  uint64_t bookmarks = 0;
  std::string resource_version;
};

class Reflector {
 public:
  Reflector(ApiClient& client, ReflectorOptions options, ResourceSink& sink);
  ~Reflector();
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;
  void start();
  void stop();  // the client must be cancelled too for a watch in flight to end at once
  ReflectorStats stats() const;

 private:
  void run();
  bool list();  // false on failure
  enum class WatchEnd { kTimeout, kGone, kFailed, kStopped };
  WatchEnd watch();
  void sleep_backoff();
  std::string query(bool watch) const;

  ApiClient& client_;
  ReflectorOptions options_;
  ResourceSink& sink_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  ReflectorStats stats_;
  std::chrono::milliseconds backoff_;
  std::thread thread_;
};

std::string url_encode(std::string_view s);

}  // namespace gpuledger::kubernetes
