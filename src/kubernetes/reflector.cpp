#include "kubernetes/reflector.h"

#include "common/log.h"

namespace gpuledger::kubernetes {
namespace {

std::string resource_version_of(const nlohmann::json& object) {
  if (!object.is_object()) return "";
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return "";
  auto rv = md->find("resourceVersion");
  return rv != md->end() && rv->is_string() ? rv->get<std::string>() : "";
}

}  // namespace

std::string url_encode(std::string_view s) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::optional<WatchEvent> parse_watch_event(std::string_view line, std::string* error) {
  auto doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  auto bad = [&](const std::string& why) -> std::optional<WatchEvent> {
    if (error) *error = why;
    return std::nullopt;
  };
  if (doc.is_discarded()) return bad("not JSON");
  if (!doc.is_object()) return bad("not a JSON object");
  auto type = doc.find("type");
  if (type == doc.end() || !type->is_string()) return bad("no \"type\" string");
  auto object = doc.find("object");
  if (object == doc.end() || !object->is_object()) return bad("no \"object\" object");
  WatchEvent ev;
  const auto& t = type->get_ref<const std::string&>();
  if (t == "ADDED") ev.type = EventType::kAdded;
  else if (t == "MODIFIED") ev.type = EventType::kModified;
  else if (t == "DELETED") ev.type = EventType::kDeleted;
  else if (t == "BOOKMARK") ev.type = EventType::kBookmark;
  else if (t == "ERROR") ev.type = EventType::kError;
  else return bad("unknown event type \"" + t + "\"");
  ev.object = std::move(*object);
  return ev;
}

Reflector::Reflector(ApiClient& client, ReflectorOptions options, ResourceSink& sink)
    : client_(client), options_(std::move(options)), sink_(sink), backoff_(options_.initial_backoff) {}

Reflector::~Reflector() { stop(); }

void Reflector::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { run(); });
}

void Reflector::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ReflectorStats Reflector::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::string Reflector::query(bool watch) const {
  std::string q = options_.path + "?";
  if (!options_.field_selector.empty()) q += "fieldSelector=" + url_encode(options_.field_selector) + "&";
  if (watch) {
    std::string rv;
    {
      std::lock_guard lock(mu_);
      rv = stats_.resource_version;
    }
    q += "watch=true&allowWatchBookmarks=true&resourceVersion=" + url_encode(rv) +
         "&timeoutSeconds=" + std::to_string(options_.watch_timeout_seconds);
  } else {
    q += "limit=" + std::to_string(options_.page_size);
  }
  return q;
}

void Reflector::sleep_backoff() {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, backoff_, [this] { return stopping_; });
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

bool Reflector::list() {
  std::vector<nlohmann::json> items;
  std::string cont, rv;
  for (int page = 0;; ++page) {
    std::string q = query(false);
    if (!cont.empty()) q += "&continue=" + url_encode(cont);
    auto res = client_.get(q, std::chrono::seconds(60));
    if (!res.ok()) {
      std::lock_guard lock(mu_);
      if (stats_.up || stats_.errors == 0 || !res.error.empty())
        spdlog::warn("kubernetes {}: list failed: {}", options_.name, res.describe());
      stats_.up = false;
      ++stats_.errors;
      return false;
    }
    auto doc = nlohmann::json::parse(res.body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("items") ||
        !(doc["items"].is_array() || doc["items"].is_null())) {
      spdlog::error("kubernetes {}: the list response is not a Kubernetes list (first bytes: {})", options_.name,
                    res.body.substr(0, 120));
      std::lock_guard lock(mu_);
      stats_.up = false;
      ++stats_.errors;
      ++stats_.malformed;
      return false;
    }
    if (doc["items"].is_array())
      for (auto& item : doc["items"]) items.push_back(std::move(item));
    rv = resource_version_of(doc);
    cont.clear();
    if (auto md = doc.find("metadata"); md != doc.end() && md->is_object())
      if (auto c = md->find("continue"); c != md->end() && c->is_string()) cont = c->get<std::string>();
    if (cont.empty()) break;
    std::lock_guard lock(mu_);
    if (stopping_) return false;
  }
  sink_.replace(items);
  std::lock_guard lock(mu_);
  bool was_up = stats_.up;
  stats_.resource_version = rv;
  stats_.up = true;
  stats_.synced = true;
  ++stats_.lists;
  backoff_ = options_.initial_backoff;
  if (!was_up) spdlog::info("kubernetes {}: listed {} at resourceVersion {}", options_.name, items.size(), rv);
  return true;
}

Reflector::WatchEnd Reflector::watch() {
  bool gone = false, failed = false;
  uint64_t applied = 0;
  auto started = std::chrono::steady_clock::now();
  auto res = client_.stream_lines(
      query(true), std::chrono::seconds(options_.watch_timeout_seconds + 30), [&](const std::string& line) {
        {
          std::lock_guard lock(mu_);
          if (stopping_) return false;
          if (!stats_.up) {
            stats_.up = true;
            spdlog::info("kubernetes {}: watching again from resourceVersion {}", options_.name,
                         stats_.resource_version);
          }
        }
        std::string why;
        auto ev = parse_watch_event(line, &why);
        if (!ev) {
          spdlog::warn("kubernetes {}: skipping a malformed watch event ({}): {}", options_.name, why,
                       line.substr(0, 200));
          std::lock_guard lock(mu_);
          ++stats_.malformed;
          return true;
        }
        if (ev->type == EventType::kError) {
          int code = ev->object.value("code", 0);
          if (code == 410) {
            gone = true;
          } else {
            spdlog::warn("kubernetes {}: watch error {}: {}", options_.name, code,
                         ev->object.value("message", std::string()));
            failed = true;
          }
          return false;
        }
        auto rv = resource_version_of(ev->object);
        if (ev->type == EventType::kBookmark) {
          std::lock_guard lock(mu_);
          if (!rv.empty()) stats_.resource_version = rv;
          ++stats_.bookmarks;
          return true;
        }
        sink_.apply(ev->type, ev->object);
        ++applied;
        std::lock_guard lock(mu_);
        if (!rv.empty()) stats_.resource_version = rv;
        ++stats_.events;
        return true;
      });
  {
    std::lock_guard lock(mu_);
    if (stopping_) return WatchEnd::kStopped;
  }
  if (gone || res.status == 410) return WatchEnd::kGone;
  if (failed || !res.error.empty() || res.status != 200) {
    std::lock_guard lock(mu_);
    if (stats_.up || !res.error.empty())
      spdlog::warn("kubernetes {}: watch failed: {}", options_.name, failed ? "error event" : res.describe());
    stats_.up = false;
    ++stats_.errors;
    return WatchEnd::kFailed;
  }
  // A watch that ends at once, empty, again and again would spin: treat it as a failure.
  if (applied == 0 && std::chrono::steady_clock::now() - started < std::chrono::milliseconds(100))
    return WatchEnd::kFailed;
  std::lock_guard lock(mu_);
  backoff_ = options_.initial_backoff;
  return WatchEnd::kTimeout;
}

void Reflector::run() {
  bool need_list = true;
  bool first_watch = true;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (need_list) {
      if (!list()) {
        sleep_backoff();
        continue;
      }
      need_list = false;
    }
    if (!first_watch) {
      std::lock_guard lock(mu_);
      ++stats_.watch_restarts;
    }
    first_watch = false;
    switch (watch()) {
      case WatchEnd::kStopped: return;
      case WatchEnd::kTimeout: break;
      case WatchEnd::kGone: {
        spdlog::info("kubernetes {}: resourceVersion too old (410 Gone): listing again", options_.name);
        std::lock_guard lock(mu_);
        ++stats_.relists_gone;
        need_list = true;
        break;
      }
      case WatchEnd::kFailed: sleep_backoff(); break;
    }
  }
}

}  // namespace gpuledger::kubernetes
