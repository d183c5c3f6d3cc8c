#include "probes/map_reader.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <vector>

namespace gpuledger::probes {
namespace {

int possible_cpus() {
  static const int n = libbpf_num_possible_cpus();
  return n > 0 ? n : 1;
}

// Calls fn(key) for every key of a hash map.
template <typename Key, typename Fn>
void for_each_key(int fd, Fn&& fn) {
  for (const auto& k : map_keys<Key>(fd)) fn(k);
}

}  // namespace

size_t copies_per_value(int fd) {
  bpf_map_info info{};
  uint32_t len = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) return 1;
  const bool per_cpu = info.type == BPF_MAP_TYPE_PERCPU_HASH || info.type == BPF_MAP_TYPE_PERCPU_ARRAY ||
                       info.type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
  return per_cpu ? static_cast<size_t>(possible_cpus()) : 1;
}

std::map<CounterKey, gl_counters> read_workload_counters(int fd) {
  constexpr size_t kFields = sizeof(gl_counters) / sizeof(uint64_t);
  std::map<CounterKey, gl_counters> out;
  std::vector<gl_counters> copies(copies_per_value(fd));
  for_each_key<gl_workload_key>(fd, [&](const gl_workload_key& key) {
    if (bpf_map_lookup_elem(fd, &key, copies.data()) != 0) return;
    gl_counters sum{};
    auto* dst = reinterpret_cast<uint64_t*>(&sum);
    for (const auto& c : copies) {
      const auto* src = reinterpret_cast<const uint64_t*>(&c);
      for (size_t i = 0; i < kFields; ++i) dst[i] += src[i];
    }
    out[CounterKey{key.cgroup_key, key.device}] = sum;
  });
  return out;
}

std::map<ErrorKey, uint64_t> read_call_errors(int fd) {
  std::map<ErrorKey, uint64_t> out;
  for_each_key<gl_error_key>(fd, [&](const gl_error_key& key) {
    uint64_t n = 0;
    if (bpf_map_lookup_elem(fd, &key, &n) == 0) out[ErrorKey{{key.cgroup_key, key.device}, key.call_id}] = n;
  });
  return out;
}

namespace {
std::string uuid_text(const gl_u8 (&b)[16]) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += hex[b[i] >> 4];
    out += hex[b[i] & 0xf];
  }
  return out;
}
}  // namespace

std::map<ExportTableKey, uint64_t> read_export_tables(int fd) {
  std::map<ExportTableKey, uint64_t> out;
  if (fd < 0) return out;
  for_each_key<gl_export_table_key>(fd, [&](const gl_export_table_key& key) {
    uint64_t n = 0;
    if (bpf_map_lookup_elem(fd, &key, &n) == 0)
      out[ExportTableKey{{key.cgroup_key, GL_DEVICE_UNKNOWN}, uuid_text(key.table)}] = n;
  });
  return out;
}

void delete_export_tables(int fd, const std::set<uint64_t>& cgroup_keys) {
  if (fd < 0) return;
  for (const auto& key : map_keys<gl_export_table_key>(fd))
    if (cgroup_keys.contains(key.cgroup_key)) bpf_map_delete_elem(fd, &key);
}

std::map<uint32_t, gl_proc_state> read_processes(int fd) {
  std::map<uint32_t, gl_proc_state> out;
  for_each_key<uint32_t>(fd, [&](uint32_t tgid) {
    gl_proc_state st{};
    if (bpf_map_lookup_elem(fd, &tgid, &st) == 0) out[tgid] = st;
  });
  return out;
}

uint64_t read_percpu_u64_sum(int fd, uint32_t index) {
  std::vector<uint64_t> values(possible_cpus());
  if (bpf_map_lookup_elem(fd, &index, values.data()) != 0) return 0;
  uint64_t sum = 0;
  for (auto v : values) sum += v;
  return sum;
}

std::array<uint64_t, GL_STAT_COUNT> read_stats(int fd) {
  std::array<uint64_t, GL_STAT_COUNT> out{};
  for (uint32_t i = 0; i < GL_STAT_COUNT; ++i) out[i] = read_percpu_u64_sum(fd, i);
  return out;
}

size_t count_entries(int fd) {
  size_t n = 0;
  std::vector<char> key(256), next(256);
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
    ++n;
    key.swap(next);
    prev = key.data();
  }
  return n;
}

uint64_t live_bytes_of(const gl_proc_state& process) {
  uint64_t sum = 0;
  for (auto b : process.live_bytes) sum += b;
  return sum;
}

size_t prune_orphan_contexts(int fd, const std::map<uint32_t, gl_proc_state>& processes) {
  size_t removed = 0;
  for_each_key<gl_ctx_key>(fd, [&](const gl_ctx_key& key) {
    if (!processes.contains(key.tgid) && bpf_map_delete_elem(fd, &key) == 0) ++removed;
  });
  return removed;
}

size_t prune_orphan_allocations(int fd, const std::map<uint32_t, gl_proc_state>& processes) {
  size_t removed = 0;
  for_each_key<gl_alloc_key>(fd, [&](const gl_alloc_key& key) {
    gl_alloc_value value{};
    if (bpf_map_lookup_elem(fd, &key, &value) != 0) return;
    auto it = processes.find(key.tgid);
    if (it != processes.end() && it->second.start_ns == value.proc_start_ns) return;
    if (bpf_map_delete_elem(fd, &key) == 0) ++removed;
  });
  return removed;
}

}  // namespace gpuledger::probes
