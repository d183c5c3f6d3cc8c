#pragma once
// HTTP/1.1 request heads and responses as the agent's listener reads and
// writes them: heads parsed strictly (anything odd is a 400), no bodies.
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuledger::exporter {

struct HttpRequest {
  std::string method;
  std::string target;                          // as sent: path and query
  std::string path;                            // target up to '?'
  std::string version;                         // "HTTP/1.1" or "HTTP/1.0"
  std::map<std::string, std::string> headers;  // names lowercased; repeats joined by ", "
  std::string header(const std::string& lowercase_name) const;
  bool keep_alive() const;                     // HTTP/1.1 unless "close"; 1.0 only with "keep-alive"
  bool has_body() const;                       // Content-Length other than 0, or any Transfer-Encoding
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Parses a request head (request line and header lines, without the blank
// line that ends it). Returns 0 and fills `out`, or the status to answer with:
// 400 for a malformed head, 505 for a version other than HTTP/1.0 or 1.1.
int parse_request_head(std::string_view head, HttpRequest& out);

// "HTTP/1.1 200 OK\r\n..." for a response; `keep_alive` picks the Connection
// header, `head` leaves the body out (the length stays the body's).
std::string serialize_response(const HttpResponse& response, bool keep_alive, bool head);

// A plain-text response with this status and its reason phrase as the body.
HttpResponse status_response(int status);
std::string_view reason_phrase(int status);

}  // namespace gpuledger::exporter
