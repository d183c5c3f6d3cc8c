#include "device/xid_parser.h"

#include <charconv>

#include "device/device_snapshot.h"

namespace gpuledger::device {
namespace {

template <typename T>
std::optional<T> parse_uint(std::string_view s) {
  T v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string_view skip_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// Takes "key=value" from the front of `rest` (value up to the next ','),
// leaving what follows the comma.
std::optional<std::string_view> take_field(std::string_view& rest, std::string_view key) {
  std::string_view s = skip_spaces(rest);
  if (!s.starts_with(key) || s.size() <= key.size() || s[key.size()] != '=') return std::nullopt;
  s.remove_prefix(key.size() + 1);
  size_t comma = s.find(',');
  std::string_view value = s.substr(0, comma);
  rest = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') value = value.substr(1, value.size() - 2);
  return value;
}

}  // namespace

std::optional<XidEvent> parse_xid_message(std::string_view message) {
  constexpr std::string_view kMarker = "NVRM: Xid (";
  size_t at = message.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view s = message.substr(at + kMarker.size());
  size_t close = s.find("):");
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view bus = s.substr(0, close);
  if (bus.starts_with("PCI:")) bus.remove_prefix(4);
  if (bus.empty()) return std::nullopt;
  s = skip_spaces(s.substr(close + 2));

  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  auto xid = parse_uint<unsigned>(s.substr(0, digits));
  if (!xid) return std::nullopt;
  s = s.substr(digits);
  if (!s.empty() && s.front() != ',') return std::nullopt;  // "13abc": not an Xid line
  if (!s.empty()) s.remove_prefix(1);

  XidEvent ev;
  std::string b(bus);
  if (b.find('.') == std::string::npos) b += ".0";  // the driver logs domain:bus:device
  ev.pci_bus_id = normalize_pci_bus_id(b);
  ev.xid = *xid;
  if (auto pid = take_field(s, "pid")) ev.pid = parse_uint<uint32_t>(*pid);
  if (auto name = take_field(s, "name"); name && *name != "<unknown>") ev.process_name = std::string(*name);
  s = skip_spaces(s);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  ev.message = std::string(s);
  return ev;
}

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  size_t semi = record.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  std::string_view prefix = record.substr(0, semi);
  std::string_view fields[4];
  for (int i = 0; i < 4; ++i) {
    size_t comma = prefix.find(',');
    fields[i] = prefix.substr(0, comma);
    if (comma == std::string_view::npos) {
      if (i < 3) return std::nullopt;
      break;
    }
    prefix.remove_prefix(comma + 1);
  }
  auto pri = parse_uint<unsigned>(fields[0]);
  auto seq = parse_uint<uint64_t>(fields[1]);
  auto usec = parse_uint<uint64_t>(fields[2]);
  if (!pri || !seq || !usec) return std::nullopt;
  KmsgRecord r;
  r.facility = *pri >> 3;
  r.level = *pri & 7;
  r.seq = *seq;
  r.usec = *usec;
  std::string_view msg = record.substr(semi + 1);
  msg = msg.substr(0, msg.find('\n'));  // dictionary lines follow the first newline
  r.message = std::string(msg);
  return r;
}

}  // namespace gpuledger::device
