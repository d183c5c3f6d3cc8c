#include "kubernetes/hami_annotations.h"

#include <nlohmann/json.hpp>

namespace gpuledger::kubernetes {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t pos = s.find(sep);
    out.push_back(s.substr(0, pos));
    if (pos == std::string_view::npos) return out;
    s.remove_prefix(pos + 1);
  }
}

bool printable_name(std::string_view s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s)
    if (c < 0x20 || c > 0x7e || c == ',' || c == ':' || c == ';') return false;
  return true;
}

constexpr uint64_t kMaxMib = 16ull * 1024 * 1024;  // 16 TiB: no GPU has more

}  // namespace

bool is_gpu_uuid(std::string_view s) {
  if (s.size() < 5 || s.size() > 128 || (s.substr(0, 4) != "GPU-" && s.substr(0, 4) != "MIG-")) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '/') return false;
  return true;
}

std::string hami_slot_device(const std::string& id) {
  constexpr size_t kUuidEnd = 4 + 36;  // "GPU-" + 8-4-4-4-12
  if (id.size() <= kUuidEnd + 1 || id.rfind("GPU-", 0) != 0 || id[kUuidEnd] != '-') return id;
  for (size_t i = 4; i < kUuidEnd; ++i) {
    bool dash = i == 12 || i == 17 || i == 22 || i == 27;
    if (dash ? id[i] != '-' : !std::isxdigit(static_cast<unsigned char>(id[i]))) return id;
  }
  for (size_t i = kUuidEnd + 1; i < id.size(); ++i)
    if (id[i] < '0' || id[i] > '9') return id;
  return id.substr(0, kUuidEnd);
}

std::optional<uint64_t> parse_bounded(std::string_view s, uint64_t min, uint64_t max) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v < min || v > max) return std::nullopt;
  return v;
}

std::optional<std::vector<std::vector<HamiDevice>>> parse_hami_allocated(std::string_view value) {
  if (value.empty() || value.size() > 64 * 1024) return std::nullopt;
  auto containers = split(value, ';');
  // HAMi ends the list with ';': the last, empty part is not a container.
  if (containers.size() > 1 && containers.back().empty()) containers.pop_back();
  std::vector<std::vector<HamiDevice>> out;
  for (auto c : containers) {
    std::vector<HamiDevice> devices;
    for (auto d : split(c, ':')) {
      if (d.empty()) continue;  // "dev:" ends each device with ':'
      auto f = split(d, ',');
      if (f.size() != 4 || !is_gpu_uuid(f[0]) || !printable_name(f[1])) return std::nullopt;
      auto mem = parse_bounded(f[2], 0, kMaxMib);
      auto cores = parse_bounded(f[3], 0, 100);
      if (!mem || !cores) return std::nullopt;
      devices.push_back({std::string(f[0]), std::string(f[1]), *mem, static_cast<unsigned>(*cores)});
    }
    out.push_back(std::move(devices));
  }
  return out;
}

std::map<std::string, uint64_t> parse_hami_node_register(std::string_view value) {
  std::map<std::string, uint64_t> out;
  if (value.empty() || value.size() > 256 * 1024) return out;
  if (value.front() == '[') {
    auto j = nlohmann::json::parse(value, nullptr, false);
    if (!j.is_array()) return out;
    for (const auto& d : j) {
      if (!d.is_object()) continue;
      auto id = d.find("id");
      auto mem = d.find("devmem");
      if (id == d.end() || !id->is_string() || mem == d.end() || !mem->is_number_unsigned()) continue;
      auto uuid = id->get<std::string>();
      uint64_t mib = mem->get<uint64_t>();
      if (is_gpu_uuid(uuid) && mib > 0 && mib <= kMaxMib) out[uuid] = mib;
    }
    return out;
  }
  for (auto record : split(value, ':')) {
    auto f = split(record, ',');
    if (f.size() < 3 || !is_gpu_uuid(f[0])) continue;
    if (auto mib = parse_bounded(f[2], 1, kMaxMib)) out[std::string(f[0])] = *mib;
  }
  return out;
}

}  // namespace gpuledger::kubernetes
