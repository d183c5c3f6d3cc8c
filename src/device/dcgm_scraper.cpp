#include "device/dcgm_scraper.h"

#include <httplib.h>

#include "common/error.h"

namespace gpuledger::device {

ExporterUrl parse_exporter_url(const std::string& url) {
  std::string rest = url;
  std::string scheme = "http";
  if (auto p = rest.find("://"); p != std::string::npos) {
    scheme = rest.substr(0, p);
    rest = rest.substr(p + 3);
  }
  if (scheme != "http" && scheme != "https") throw Error("--dcgm-exporter: unsupported scheme in '" + url + "'");
  std::string host_port = rest, path = "/metrics";
  if (auto slash = rest.find('/'); slash != std::string::npos) {
    host_port = rest.substr(0, slash);
    path = rest.substr(slash);
  }
  if (host_port.empty()) throw Error("--dcgm-exporter: no host in '" + url + "'");
  for (char c : host_port)
    if (c == ' ' || c == '@' || c == '\t') throw Error("--dcgm-exporter: bad host in '" + url + "'");
  return {scheme + "://" + host_port, path};
}

ScrapeResult read_dcgm_page(const std::string& body, const ScrapeOptions& options) {
  ScrapeResult result;
  ParsedPage page = parse_prometheus_text(body);
  result.parse_errors = page.error_count;
  for (const auto& s : page.samples) {
    if (s.name.rfind("DCGM_FI_", 0) != 0) continue;
    ++result.dcgm_samples;
    if (s.name.rfind("DCGM_FI_PROF_", 0) == 0) result.has_profiling = true;
  }
  result.extraction = extract_dcgm_readings(page, std::chrono::system_clock::now(), options.max_sample_age);
  result.ok = true;
  return result;
}

DcgmScraper::DcgmScraper(const std::string& url, ScrapeOptions options)
    : url_(url), parsed_(parse_exporter_url(url)), options_(options) {}

ScrapeResult DcgmScraper::scrape() const {
  ScrapeResult result;
  try {
    httplib::Client client(parsed_.scheme_host_port);
    if (!client.is_valid()) {
      result.error = "cannot create an HTTP client for " + url_;
      return result;
    }
    auto secs = options_.timeout.count() / 1000;
    auto usecs = (options_.timeout.count() % 1000) * 1000;
    client.set_connection_timeout(secs, usecs);
    client.set_read_timeout(secs, usecs);
    client.set_write_timeout(secs, usecs);
    client.set_follow_location(false);
    std::string body;
    bool too_big = false;
    auto res = client.Get(parsed_.path.c_str(), [&](const char* data, size_t len) {
      if (body.size() + len > options_.max_body_bytes) {
        too_big = true;
        return false;
      }
      body.append(data, len);
      return true;
    });
    if (too_big) {
      result.error = "response larger than " + std::to_string(options_.max_body_bytes) + " bytes";
      return result;
    }
    if (!res) {
      result.error = "GET " + url_ + ": " + httplib::to_string(res.error()) + " error";
      return result;
    }
    if (res->status != 200) {
      result.error = "GET " + url_ + ": HTTP " + std::to_string(res->status);
      return result;
    }
    return read_dcgm_page(body, options_);
  } catch (const std::exception& e) {
    result.error = std::string("GET ") + url_ + ": " + e.what();
    return result;
  }
}

}  // namespace gpuledger::device
