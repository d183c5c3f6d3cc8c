#include "probes/call_name_map.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace gpuledger::probes {

std::map<uint32_t, std::string> read_call_names(int map_fd) {
  std::map<uint32_t, std::string> out;
  for (uint32_t id = 0; id < GL_MAX_CALLS; ++id) {
    gl_call_name value{};
    if (bpf_map_lookup_elem(map_fd, &id, &value) != 0) continue;
    const std::string name(value.name, strnlen(value.name, sizeof value.name));
    if (!name.empty()) out.emplace(id, name);
  }
  return out;
}

void keep_call_names_in(CallNames& names, int map_fd) {
  if (map_fd < 0) return;
  names.restore(read_call_names(map_fd));
  names.on_assign([map_fd](uint32_t id, const std::string& name) {
    gl_call_name value{};
    if (name.size() >= sizeof value.name) {
      spdlog::warn("call name {} is too long to keep for a successor agent", name);
      return;
    }
    std::memcpy(value.name, name.data(), name.size());
    if (bpf_map_update_elem(map_fd, &id, &value, BPF_ANY) != 0)
      spdlog::warn("call name {} (id {}) not kept for a successor agent: {}", name, id, std::strerror(errno));
  });
}

}  // namespace gpuledger::probes
