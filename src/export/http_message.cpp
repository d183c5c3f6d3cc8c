#include "export/http_message.h"

#include <algorithm>
#include <cctype>

namespace gpuledger::exporter {
namespace {

bool is_token_char(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool has_token(const std::string& value, std::string_view token) {
  std::string v = lower(value);
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    if (trim(std::string_view(v).substr(start, comma - start)) == token) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

std::string HttpRequest::header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? "" : it->second;
}

bool HttpRequest::keep_alive() const {
  const std::string connection = header("connection");
  if (version == "HTTP/1.0") return has_token(connection, "keep-alive");
  return !has_token(connection, "close");
}

bool HttpRequest::has_body() const {
  if (headers.count("transfer-encoding")) return true;
  auto it = headers.find("content-length");
  if (it == headers.end()) return false;
  return it->second.empty() || !std::all_of(it->second.begin(), it->second.end(), [](char c) { return c == '0'; });
}

int parse_request_head(std::string_view head, HttpRequest& out) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return 400;
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), [](unsigned char c) { return is_token_char(c); }))
    return 400;
  if (target.empty() || target.front() != '/' ||
      !std::all_of(target.begin(), target.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; }))
    return 400;
  if (version.substr(0, 5) != "HTTP/") return 400;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return 505;
  out.method = method;
  out.target = target;
  out.path = target.substr(0, target.find('?'));
  out.version = version;
  out.headers.clear();
  while (eol != std::string_view::npos) {
    size_t start = eol + 2;
    eol = head.find("\r\n", start);
    std::string_view field = head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
    if (field.empty()) continue;  // a trailing CRLF
    size_t colon = field.find(':');
    if (colon == 0 || colon == std::string_view::npos) return 400;
    std::string_view name = field.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), [](unsigned char c) { return is_token_char(c); }))
      return 400;  // also refuses obsolete line folding and a space before the colon (smuggling vectors)
    std::string_view value = trim(field.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](unsigned char c) { return c == '\r' || c == '\n' || c == 0; }))
      return 400;
    auto [it, fresh] = out.headers.emplace(lower(name), std::string(value));
    if (!fresh) it->second += ", " + std::string(value);
  }
  return 0;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

HttpResponse status_response(int status) {
  HttpResponse r;
  r.status = status;
  r.body = std::string(reason_phrase(status)) + "\n";
  return r;
}

std::string serialize_response(const HttpResponse& r, bool keep_alive, bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(r.status) + " " + std::string(reason_phrase(r.status)) + "\r\n";
  out += "Content-Type: " + r.content_type + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  if (!head) out += r.body;
  return out;
}

}  // namespace gpuledger::exporter
