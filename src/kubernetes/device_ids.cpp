#include "kubernetes/device_ids.h"

#include <cctype>

namespace gpuledger::kubernetes {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "<prefix><digits>" -> true
bool prefixed_number(std::string_view s, std::string_view prefix) {
  return starts_with(s, prefix) && all_digits(s.substr(prefix.size()));
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

}  // namespace

std::string_view to_string(Sharing sharing) {
  switch (sharing) {
    case Sharing::kExclusive: return "exclusive";
    case Sharing::kReplicas: return "replicas";
    case Sharing::kMig: return "mig";
  }
  return "exclusive";
}

bool is_gpu_resource(std::string_view r, const std::vector<std::string>& extra) {
  if (r == "nvidia.com/gpu" || r == "nvidia.com/gpu.shared" || starts_with(r, "nvidia.com/mig-")) return true;
  for (const auto& e : extra)
    if (r == e) return true;
  return false;
}

std::optional<GpuDevice> parse_device_id(std::string_view resource, std::string_view id) {
  if (id.empty()) return std::nullopt;
  for (char c : id)
    if (std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c)))
      return std::nullopt;

  GpuDevice dev;
  bool replica = resource == "nvidia.com/gpu.shared";
  // A trailing "::<n>" marks a time-slicing or MPS replica of the device before it.
  if (size_t pos = id.rfind("::"); pos != std::string_view::npos && all_digits(id.substr(pos + 2))) {
    id = id.substr(0, pos);
    replica = true;
    if (id.empty()) return std::nullopt;
  }

  if (starts_with(id, "MIG-GPU-")) {
    // MIG-GPU-<uuid>/<gi>/<ci>: the parent GPU and the instance within it.
    auto parts = split(id.substr(4), '/');
    dev.uuid = std::string(parts[0]);
    if (parts.size() == 3 && all_digits(parts[1]) && all_digits(parts[2]))
      dev.mig_instance = std::string(parts[1]) + "/" + std::string(parts[2]);
    dev.sharing = Sharing::kMig;
  } else if (starts_with(id, "MIG-")) {
    dev.uuid = std::string(id);
    dev.sharing = Sharing::kMig;
  } else if (starts_with(id, "GPU-")) {
    dev.uuid = std::string(id);
    dev.sharing = Sharing::kExclusive;
  } else if (auto parts = split(id, '/'); prefixed_number(parts[0], "nvidia") && parts.size() <= 3) {
    // GKE: nvidia<N>[/gi<G>][/vgpu<V>]
    dev.uuid = std::string(parts[0]);
    dev.sharing = Sharing::kExclusive;
    bool ok = true;
    for (size_t i = 1; i < parts.size(); ++i) {
      if (prefixed_number(parts[i], "gi") && i == 1) {
        dev.mig_instance = std::string(parts[i]);
        dev.sharing = Sharing::kMig;
      } else if (prefixed_number(parts[i], "vgpu")) {
        replica = true;
      } else {
        ok = false;
      }
    }
    if (!ok) {
      dev = GpuDevice{std::string(id), "", Sharing::kExclusive};
    }
  } else {
    dev.uuid = std::string(id);
    dev.sharing = Sharing::kExclusive;
  }
  if (replica) dev.sharing = Sharing::kReplicas;
  if (dev.uuid.empty()) return std::nullopt;
  return dev;
}

std::string replica_base(std::string_view id) {
  if (size_t pos = id.rfind("::"); pos != std::string_view::npos && all_digits(id.substr(pos + 2)))
    id = id.substr(0, pos);
  if (size_t slash = id.rfind('/'); slash != std::string_view::npos && prefixed_number(id.substr(slash + 1), "vgpu") &&
                                    starts_with(id, "nvidia"))
    id = id.substr(0, slash);
  return std::string(id);
}

std::string sharing_mode(const GpuDevice& device) {
  switch (device.sharing) {
    case Sharing::kReplicas: return "time-slicing";
    case Sharing::kMig: return "mig";
    case Sharing::kExclusive: break;
  }
  return "exclusive";
}

}  // namespace gpuledger::kubernetes
