#pragma once
// Fetches dcgm-exporter's /metrics over HTTP (cpp-httplib) with connect/read
// timeouts and a size cap, and extracts device readings from it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "device/dcgm_readings.h"

namespace gpuledger::device {

struct ExporterUrl {
  std::string scheme_host_port;  // "http://127.0.0.1:9400"
  std::string path;              // "/metrics"
};
// "http://host:port/path", "https://...", or "host:port" (http, /metrics).
// Throws Error when it is not a URL this can fetch.
ExporterUrl parse_exporter_url(const std::string& url);

struct ScrapeOptions {
  std::chrono::milliseconds timeout{3000};  // connect and read, each
  size_t max_body_bytes = 32u << 20;
  std::chrono::milliseconds max_sample_age{std::chrono::minutes(5)};
};

struct ScrapeResult {
  bool ok = false;       // fetched (HTTP 200) and parsed
  std::string error;     // why not
  size_t parse_errors = 0;
  size_t dcgm_samples = 0;   // samples of a DCGM_FI_* family
  bool has_profiling = false;  // at least one DCGM_FI_PROF_* sample
  DcgmExtraction extraction;
};

class DcgmScraper {
 public:
  DcgmScraper(const std::string& url, ScrapeOptions options = {});  // throws Error on a bad URL
  ScrapeResult scrape() const;
  const std::string& url() const { return url_; }

 private:
  std::string url_;
  ExporterUrl parsed_;
  ScrapeOptions options_;
};

// Reads a page already fetched (the scrape minus HTTP), for tests and replay.
ScrapeResult read_dcgm_page(const std::string& body, const ScrapeOptions& options = {});

}  // namespace gpuledger::device
