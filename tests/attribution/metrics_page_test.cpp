// Tests for the /metrics page (export/metrics_page.h) and the
// /api/v1/workloads document (export/workloads_json.h) built from one
// hand-made agent snapshot. The /metrics output is parsed with a strict
// validator of the text exposition format 0.0.4.
#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attribution/metrics_page.h"
#include "attribution/snapshot.h"
#include "attribution/workloads_json.h"

namespace gpuledger::attribution {
namespace {

// ---------------------------------------------------------------------------
// A strict line validator for the text format.

struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // unescaped, in order
  std::string raw_value;
  double value = 0;
  std::map<std::string, std::string> label_map() const { return {labels.begin(), labels.end()}; }
};

struct Family {
  std::string type;
  std::string help;  // as written (escaped)
  int help_count = 0;
  int type_count = 0;
  int samples = 0;
};

struct Parsed {
  std::vector<std::string> family_order;
  std::map<std::string, Family> families;
  std::vector<Sample> samples;
};

bool is_name_start(char c, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
}
bool is_name_char(char c, bool colon_ok) { return is_name_start(c, colon_ok) || (c >= '0' && c <= '9'); }

// Reads a metric name (colon_ok) or label name at `pos`; empty on failure.
std::string read_name(const std::string& s, size_t& pos, bool colon_ok) {
  size_t start = pos;
  if (pos >= s.size() || !is_name_start(s[pos], colon_ok)) return {};
  ++pos;
  while (pos < s.size() && is_name_char(s[pos], colon_ok)) ++pos;
  return s.substr(start, pos - start);
}

bool is_metric_name(const std::string& s) {
  size_t pos = 0;
  return !read_name(s, pos, true).empty() && pos == s.size();
}

std::optional<double> parse_value(const std::string& v) {
  if (v == "NaN") return std::nan("");
  if (v == "+Inf") return INFINITY;
  if (v == "-Inf") return -INFINITY;
  if (v.empty()) return std::nullopt;
  double d = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc{} || end != v.data() + v.size()) return std::nullopt;
  return d;
}

// Parses `line` as a sample; returns an error string or "" on success.
std::string parse_sample(const std::string& line, Sample& out) {
  size_t pos = 0;
  out.name = read_name(line, pos, true);
  if (out.name.empty()) return "bad metric name";
  if (pos < line.size() && line[pos] == '{') {
    ++pos;
    bool first = true;
    while (true) {
      if (pos >= line.size()) return "unterminated label set";
      if (line[pos] == '}') {
        if (!first) return "trailing comma or empty label after comma";
        ++pos;
        break;
      }
      std::string lname = read_name(line, pos, false);
      if (lname.empty()) return "bad label name";
      if (pos >= line.size() || line[pos] != '=') return "expected '='";
      ++pos;
      if (pos >= line.size() || line[pos] != '"') return "expected '\"'";
      ++pos;
      std::string value;
      bool closed = false;
      while (pos < line.size()) {
        char c = line[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (pos >= line.size()) return "dangling backslash";
          char e = line[pos++];
          if (e == '\\') value += '\\';
          else if (e == '"') value += '"';
          else if (e == 'n') value += '\n';
          else return std::string("bad escape \\") + e;
        } else if (c == '\n') {
          return "raw newline in label value";
        } else {
          value += c;
        }
      }
      if (!closed) return "unterminated label value";
      for (const auto& [n, v] : out.labels)
        if (n == lname) return "duplicate label " + lname;
      out.labels.emplace_back(lname, value);
      first = false;
      if (pos < line.size() && line[pos] == ',') {
        ++pos;
        if (pos < line.size() && line[pos] == '}') return "trailing comma";
        first = true;  // another label must follow
        continue;
      }
      if (pos < line.size() && line[pos] == '}') {
        ++pos;
        break;
      }
      return "expected ',' or '}'";
    }
  }
  if (pos >= line.size() || line[pos] != ' ') return "expected one space before the value";
  ++pos;
  out.raw_value = line.substr(pos);
  if (out.raw_value.find(' ') != std::string::npos) return "unexpected timestamp or extra field";
  auto v = parse_value(out.raw_value);
  if (!v) return "unparseable value '" + out.raw_value + "'";
  out.value = *v;
  return "";
}

bool help_escapes_valid(const std::string& help) {
  for (size_t i = 0; i < help.size(); ++i) {
    if (help[i] == '\\') {
      if (i + 1 >= help.size() || (help[i + 1] != '\\' && help[i + 1] != 'n')) return false;
      ++i;
    }
  }
  return true;
}

// Validates the whole page; every violation is reported as a test failure.
Parsed validate_page(const std::string& text) {
  Parsed p;
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "page must end in a newline";
  std::string current;  // family whose samples may follow
  size_t start = 0;
  int lineno = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    ++lineno;
    SCOPED_TRACE("line " + std::to_string(lineno) + ": " + line);
    EXPECT_FALSE(line.empty()) << "empty line";
    if (line.empty()) continue;
    if (line.starts_with("# HELP ")) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      if (sp == std::string::npos) {
        ADD_FAILURE() << "HELP without text";
        continue;
      }
      std::string name = rest.substr(0, sp);
      EXPECT_TRUE(is_metric_name(name)) << name;
      Family& f = p.families[name];
      if (f.help_count == 0 && f.type_count == 0) p.family_order.push_back(name);
      EXPECT_EQ(f.samples, 0) << "HELP after samples of " << name;
      EXPECT_EQ(f.type_count, 0) << "HELP after TYPE of " << name;
      ++f.help_count;
      f.help = rest.substr(sp + 1);
      EXPECT_TRUE(help_escapes_valid(f.help)) << f.help;
      current.clear();
    } else if (line.starts_with("# TYPE ")) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      if (sp == std::string::npos) {
        ADD_FAILURE() << "TYPE without type";
        continue;
      }
      std::string name = rest.substr(0, sp);
      std::string type = rest.substr(sp + 1);
      EXPECT_TRUE(is_metric_name(name)) << name;
      EXPECT_TRUE(type == "counter" || type == "gauge") << type;
      Family& f = p.families[name];
      EXPECT_EQ(f.help_count, 1) << "TYPE of " << name << " must follow its HELP";
      EXPECT_EQ(f.samples, 0) << "TYPE after samples of " << name;
      ++f.type_count;
      f.type = type;
      current = name;
    } else if (line.starts_with("#")) {
      ADD_FAILURE() << "unexpected comment line";
    } else {
      Sample s;
      std::string err = parse_sample(line, s);
      EXPECT_EQ(err, "");
      if (!err.empty()) continue;
      EXPECT_EQ(s.name, current) << "sample outside its family's block";
      auto it = p.families.find(s.name);
      if (it == p.families.end() || it->second.type_count == 0) {
        ADD_FAILURE() << "sample of " << s.name << " before its TYPE";
      } else {
        ++it->second.samples;
      }
      p.samples.push_back(std::move(s));
    }
  }
  for (const auto& [name, f] : p.families) {
    EXPECT_EQ(f.help_count, 1) << name;
    EXPECT_EQ(f.type_count, 1) << name;
    if (name.ends_with("_total")) {
      EXPECT_EQ(f.type, "counter") << name;
    }
  }
  // Series must be unique.
  std::set<std::pair<std::string, std::map<std::string, std::string>>> series;
  for (const auto& s : p.samples)
    EXPECT_TRUE(series.emplace(s.name, s.label_map()).second) << "duplicate series of " << s.name;
  return p;
}

// ---------------------------------------------------------------------------
// The snapshot under test.

constexpr const char* kPodUid = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0";
constexpr const char* kCid = "abcdef0123456789";
// A workload id with a quote and a backslash, to exercise escaping.
const std::string kK8sId = std::string("k8s/") + kPodUid + "/" + kCid + "\"q\\b";
const std::string kSystemdId = "systemd/trainer.service";

attribution::AttributionSnapshot make_snapshot() {
  attribution::AttributionSnapshot snap;

  attribution::WorkloadView k8s;
  k8s.workload.id = kK8sId;
  k8s.workload.kind = identity::WorkloadKind::kKubernetes;
  k8s.workload.cgroup_path = "/kubepods.slice/pod";
  k8s.workload.pod_uid = kPodUid;
  k8s.workload.container_id = kCid;
  k8s.workload.container_runtime = "containerd";
  k8s.workload.qos_class = "burstable";
  k8s.cgroup_paths = {"/kubepods.slice/a", "/kubepods.slice/a/b"};
  auto& c = k8s.usage.counters;
  c.launches = 10;
  c.launched_threads = 2560;
  c.graph_launches = 2;
  c.allocations = 3;
  c.allocated_bytes = 4096;
  c.freed_bytes = 1024;
  for (int d = 0; d < GL_DIR_COUNT; ++d) {
    c.memcpy_bytes[d] = 100 * (d + 1);
    c.memcpy_calls[d] = d + 1;
  }
  c.syncs = 7;
  c.sync_ns = 1500000000;
  c.untracked_frees = 1;
  k8s.usage.errors_by_call = {{"cuMemAlloc_v2", 2}, {"cuLaunchKernel", 1}};
  k8s.processes = {{1234, "python3", 3072}};
  snap.workloads.push_back(k8s);

  attribution::WorkloadView sd;
  sd.workload.id = kSystemdId;
  sd.workload.kind = identity::WorkloadKind::kSystemd;
  sd.workload.cgroup_path = "/system.slice/trainer.service";
  sd.workload.systemd_unit = "trainer.service";
  sd.cgroup_paths = {"/system.slice/trainer.service"};
  sd.usage.counters.allocated_bytes = 100;
  sd.usage.counters.freed_bytes = 300;  // frees of memory allocated before attach
  sd.usage.counters.sync_ns = 0;
  snap.workloads.push_back(sd);

  probes::LibraryRecord lib;
  lib.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  lib.origin = "scan";
  lib.file = {2049, 777};
  lib.probes = 40;
  snap.self.libraries.push_back(lib);
  probes::LibraryRecord bad;
  bad.path = "/opt/\"odd\"/libcuda.so";
  bad.origin = "command line";
  bad.error = "not an ELF file";
  snap.self.rejected_libraries.push_back(bad);
  snap.self.probes_attached = 40;
  snap.self.probe_attach_failures = 1;
  snap.self.evidence_scans_truncated = 2;
  snap.self.maps = {{"gl_workloads", 2, 4096}};
  snap.self.kernel_stats = {5, 0, 0, 0, 3};
  snap.self.library_events_dropped = 0;
  snap.self.library_watcher = true;
  snap.self.workloads_retired = 4;
  snap.self.exited_process_records_evicted = 6;
  snap.self.workloads_known = 7;
  return snap;
}

const std::vector<std::string> kWorkloadLabels = {"workload", "pod_uid", "container_id", "namespace", "pod", "container", "team"};

std::vector<std::string> label_names(const Sample& s) {
  std::vector<std::string> out;
  for (const auto& [n, v] : s.labels) out.push_back(n);
  return out;
}

class MetricsPage : public ::testing::Test {
 protected:
  void SetUp() override {
    text_ = render_metrics(make_snapshot(), 0.25);
    parsed_ = validate_page(text_);
  }

  // The value of the one sample of `name` whose labels include `match`.
  std::optional<Sample> find(const std::string& name, const std::map<std::string, std::string>& match) const {
    std::optional<Sample> found;
    for (const auto& s : parsed_.samples) {
      if (s.name != name) continue;
      auto labels = s.label_map();
      bool ok = true;
      for (const auto& [k, v] : match) {
        auto it = labels.find(k);
        if (it == labels.end() || it->second != v) ok = false;
      }
      if (!ok) continue;
      EXPECT_FALSE(found) << "more than one sample of " << name << " matches";
      found = s;
    }
    return found;
  }
  std::string value(const std::string& name, const std::map<std::string, std::string>& match) const {
    auto s = find(name, match);
    return s ? s->raw_value : "<missing>";
  }

  std::string text_;
  Parsed parsed_;
};

TEST_F(MetricsPage, IsValidTextFormat) {
  // validate_page() reported any violation; require it saw real content.
  EXPECT_GT(parsed_.families.size(), 20u);
  EXPECT_GT(parsed_.samples.size(), 40u);
}

TEST_F(MetricsPage, ContractFamiliesArePresentWithTheirTypes) {
  const std::map<std::string, std::string> contract = {
      {"gpuledger_cuda_kernel_launches_total", "counter"},
      {"gpuledger_cuda_launched_threads_total", "counter"},
      {"gpuledger_cuda_graph_launches_total", "counter"},
      {"gpuledger_cuda_memory_allocations_total", "counter"},
      {"gpuledger_cuda_memory_allocated_bytes_total", "counter"},
      {"gpuledger_cuda_memory_freed_bytes_total", "counter"},
      {"gpuledger_cuda_memory_live_bytes", "gauge"},
      {"gpuledger_cuda_memcpy_bytes_total", "counter"},
      {"gpuledger_cuda_memcpy_total", "counter"},
      {"gpuledger_cuda_syncs_total", "counter"},
      {"gpuledger_cuda_sync_seconds_total", "counter"},
      {"gpuledger_cuda_api_errors_total", "counter"},
      {"gpuledger_evidence_scan_truncated_total", "counter"},  // issue 29
  };
  for (const auto& [name, type] : contract) {
    auto it = parsed_.families.find(name);
    ASSERT_NE(it, parsed_.families.end()) << name;
    EXPECT_EQ(it->second.type, type) << name;
    EXPECT_GT(it->second.samples, 0) << name;
  }
}

TEST_F(MetricsPage, AttributionSamplesCarryExactlyTheWorkloadLabels) {
  int checked = 0;
  for (const auto& s : parsed_.samples) {
    if (!s.name.starts_with("gpuledger_cuda_") || s.name.starts_with("gpuledger_cuda_librar")) continue;
    SCOPED_TRACE(s.name);
    auto expected = kWorkloadLabels;
    expected.push_back("gpu");  // every attribution series says which GPU ("" when unknown)
    expected.push_back("UUID");
    if (s.name == "gpuledger_cuda_memcpy_bytes_total" || s.name == "gpuledger_cuda_memcpy_total")
      expected.push_back("direction");
    if (s.name == "gpuledger_cuda_api_errors_total") expected.push_back("call");
    if (s.name == "gpuledger_cuda_export_table_requests_total") expected.push_back("table");
    EXPECT_EQ(label_names(s), expected);
    auto labels = s.label_map();
    EXPECT_TRUE(labels["workload"] == kK8sId || labels["workload"] == kSystemdId) << labels["workload"];
    EXPECT_EQ(labels["namespace"], "");
    EXPECT_EQ(labels["pod"], "");
    EXPECT_EQ(labels["container"], "");
    ++checked;
  }
  // 11 plain families (launches, threads, graphs, allocations, bytes allocated,
  // freed and live, untracked frees, memsets, memset bytes, syncs) + sync and
  // busy seconds, 2 workloads each; 2 x 2 x 5 memcpy; 2 errors.
  EXPECT_EQ(checked, 13 * 2 + 2 * 2 * 5 + 2);
  for (const auto& s : parsed_.samples)
    if (s.name == "gpuledger_workload_processes") {
      EXPECT_EQ(label_names(s), kWorkloadLabels);
    }
}

TEST_F(MetricsPage, EscapedWorkloadIdRoundTrips) {
  // The raw page holds the escaped form; the parser gives back the original.
  EXPECT_NE(text_.find("workload=\"k8s/" + std::string(kPodUid) + "/" + kCid + "\\\"q\\\\b\""), std::string::npos);
  auto s = find("gpuledger_cuda_kernel_launches_total", {{"workload", kK8sId}});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->label_map()["pod_uid"], kPodUid);
  EXPECT_EQ(s->label_map()["container_id"], kCid);
  auto sd = find("gpuledger_cuda_kernel_launches_total", {{"workload", kSystemdId}});
  ASSERT_TRUE(sd);
  EXPECT_EQ(sd->label_map()["pod_uid"], "");
  EXPECT_EQ(sd->label_map()["container_id"], "");
}

TEST_F(MetricsPage, ExactValues) {
  const std::map<std::string, std::string> k8s = {{"workload", kK8sId}};
  const std::map<std::string, std::string> sd = {{"workload", kSystemdId}};
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", k8s), "10");
  EXPECT_EQ(value("gpuledger_cuda_launched_threads_total", k8s), "2560");
  EXPECT_EQ(value("gpuledger_cuda_graph_launches_total", k8s), "2");
  EXPECT_EQ(value("gpuledger_cuda_memory_allocations_total", k8s), "3");
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", k8s), "4096");
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", k8s), "1024");
  EXPECT_EQ(value("gpuledger_cuda_memory_live_bytes", k8s), "3072");
  EXPECT_EQ(value("gpuledger_cuda_memory_untracked_frees_total", k8s), "1");
  EXPECT_EQ(value("gpuledger_cuda_syncs_total", k8s), "7");
  EXPECT_EQ(value("gpuledger_cuda_sync_seconds_total", k8s), "1.5");
  EXPECT_EQ(value("gpuledger_workload_processes", k8s), "1");

  // Freed more than allocated (allocations before attach): live clamps to 0.
  EXPECT_EQ(value("gpuledger_cuda_memory_live_bytes", sd), "0");
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", sd), "100");
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", sd), "300");
  EXPECT_EQ(value("gpuledger_cuda_sync_seconds_total", sd), "0");
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", sd), "0");
  EXPECT_EQ(value("gpuledger_workload_processes", sd), "0");
}

TEST_F(MetricsPage, MemcpyHasAllFiveDirections) {
  const std::vector<std::string> dirs = {"htod", "dtoh", "dtod", "peer", "unknown"};
  for (const std::string& wl : {kK8sId, kSystemdId}) {
    for (const char* family : {"gpuledger_cuda_memcpy_bytes_total", "gpuledger_cuda_memcpy_total"}) {
      std::vector<std::string> seen;
      for (const auto& s : parsed_.samples)
        if (s.name == family && s.label_map()["workload"] == wl) seen.push_back(s.label_map()["direction"]);
      EXPECT_EQ(seen, dirs) << family << " " << wl;
    }
  }
  for (size_t d = 0; d < dirs.size(); ++d) {
    EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"workload", kK8sId}, {"direction", dirs[d]}}),
              std::to_string(100 * (d + 1)));
    EXPECT_EQ(value("gpuledger_cuda_memcpy_total", {{"workload", kK8sId}, {"direction", dirs[d]}}),
              std::to_string(d + 1));
    EXPECT_EQ(value("gpuledger_cuda_memcpy_total", {{"workload", kSystemdId}, {"direction", dirs[d]}}), "0");
  }
}

TEST_F(MetricsPage, ApiErrorsByCall) {
  EXPECT_EQ(value("gpuledger_cuda_api_errors_total", {{"workload", kK8sId}, {"call", "cuMemAlloc_v2"}}), "2");
  EXPECT_EQ(value("gpuledger_cuda_api_errors_total", {{"workload", kK8sId}, {"call", "cuLaunchKernel"}}), "1");
  EXPECT_FALSE(find("gpuledger_cuda_api_errors_total", {{"workload", kSystemdId}}));
}

TEST_F(MetricsPage, SelfMetrics) {
  EXPECT_EQ(value("gpuledger_probes_attached", {}), "40");
  EXPECT_EQ(value("gpuledger_probe_attach_failures", {}), "1");
  EXPECT_EQ(value("gpuledger_cuda_libraries_attached", {}), "1");
  EXPECT_EQ(value("gpuledger_cuda_libraries_rejected", {}), "1");
  EXPECT_EQ(value("gpuledger_library_watcher_enabled", {}), "1");
  EXPECT_EQ(value("gpuledger_cuda_library_info",
                  {{"path", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"}, {"origin", "scan"}, {"inode", "777"}}),
            "1");
  EXPECT_EQ(value("gpuledger_bpf_map_entries", {{"map", "gl_workloads"}}), "2");
  EXPECT_EQ(value("gpuledger_bpf_map_capacity", {{"map", "gl_workloads"}}), "4096");
  EXPECT_EQ(value("gpuledger_events_dropped_total", {{"source", "probes"}}), "5");
  EXPECT_EQ(value("gpuledger_events_dropped_total", {{"source", "library_watcher"}}), "0");
  EXPECT_EQ(value("gpuledger_bpf_overflow_total", {{"reason", "return_without_entry"}}), "3");
  EXPECT_EQ(value("gpuledger_bpf_overflow_total", {{"reason", "workload_map_full"}}), "0");
  EXPECT_EQ(value("gpuledger_workloads_retired_total", {}), "4");
  EXPECT_EQ(value("gpuledger_exited_process_records_evicted_total", {}), "6");
  EXPECT_EQ(value("gpuledger_workload_directory_entries", {}), "7");
  EXPECT_EQ(value("gpuledger_scrape_duration_seconds", {}), "0.25");
  EXPECT_EQ(value("gpuledger_evidence_scan_truncated_total", {}), "2");
}

TEST(MetricsPageEmpty, EmptySnapshotIsStillValid) {
  attribution::AttributionSnapshot snap;
  Parsed p = validate_page(render_metrics(snap, 0.0));
  EXPECT_TRUE(p.families.count("gpuledger_cuda_kernel_launches_total"));
  for (const auto& s : p.samples) EXPECT_FALSE(s.name.starts_with("gpuledger_cuda_memcpy")) << s.name;
}

TEST(MetricsPageValidator, RejectsMalformedLines) {
  Sample s;
  EXPECT_NE(parse_sample("1abc 1", s), "");
  s = {};
  EXPECT_NE(parse_sample("m{a=\"x\",} 1", s), "");
  s = {};
  EXPECT_NE(parse_sample("m{a=\"x\\t\"} 1", s), "");
  s = {};
  EXPECT_NE(parse_sample("m{a=\"x\"} 1x", s), "");
  s = {};
  EXPECT_NE(parse_sample("m{a=x} 1", s), "");
  s = {};
  EXPECT_NE(parse_sample("m  1", s), "");
  s = {};
  EXPECT_EQ(parse_sample("m:x{a=\"\\\\\\\"\\n\",b=\"\"} -Inf", s), "");
  EXPECT_EQ(s.labels[0].second, "\\\"\n");
}

// ---------------------------------------------------------------------------
// /api/v1/workloads

TEST(WorkloadsJson, FieldsOfBothWorkloads) {
  nlohmann::json j = workloads_json(make_snapshot());
  ASSERT_TRUE(j["workloads"].is_array());
  ASSERT_EQ(j["workloads"].size(), 2u);

  const auto& k = j["workloads"][0];
  EXPECT_EQ(k["workload"], kK8sId);
  EXPECT_EQ(k["identity"]["kind"], "kubernetes");
  EXPECT_EQ(k["identity"]["pod_uid"], kPodUid);
  EXPECT_EQ(k["identity"]["container_id"], kCid);
  EXPECT_EQ(k["identity"]["container_runtime"], "containerd");
  EXPECT_EQ(k["identity"]["qos_class"], "burstable");
  EXPECT_EQ(k["identity"]["systemd_unit"], "");
  EXPECT_EQ(k["identity"]["namespace"], "");
  EXPECT_EQ(k["identity"]["pod"], "");
  EXPECT_EQ(k["identity"]["container"], "");
  EXPECT_EQ(k["cgroup_paths"], nlohmann::json({"/kubepods.slice/a", "/kubepods.slice/a/b"}));
  ASSERT_EQ(k["processes"].size(), 1u);
  EXPECT_EQ(k["processes"][0]["pid"], 1234);
  EXPECT_FALSE(k["processes"][0].contains("comm")) << "no process names over HTTP";
  EXPECT_EQ(k["processes"][0]["live_bytes"], 3072);
  const auto& c = k["counters"];
  EXPECT_EQ(c["kernel_launches"], 10);
  EXPECT_EQ(c["launched_threads"], 2560);
  EXPECT_EQ(c["graph_launches"], 2);
  EXPECT_EQ(c["memory_allocations"], 3);
  EXPECT_EQ(c["memory_allocated_bytes"], 4096);
  EXPECT_EQ(c["memory_freed_bytes"], 1024);
  EXPECT_EQ(c["memory_live_bytes"], 3072);
  EXPECT_EQ(c["memory_untracked_frees"], 1);
  EXPECT_EQ(c["memcpy_bytes"],
            nlohmann::json({{"htod", 100}, {"dtoh", 200}, {"dtod", 300}, {"peer", 400}, {"unknown", 500}}));
  EXPECT_EQ(c["memcpy_calls"], nlohmann::json({{"htod", 1}, {"dtoh", 2}, {"dtod", 3}, {"peer", 4}, {"unknown", 5}}));
  EXPECT_EQ(c["syncs"], 7);
  EXPECT_DOUBLE_EQ(c["sync_seconds"].get<double>(), 1.5);
  EXPECT_EQ(c["api_errors"], nlohmann::json({{"cuLaunchKernel", 1}, {"cuMemAlloc_v2", 2}}));

  const auto& s = j["workloads"][1];
  EXPECT_EQ(s["workload"], kSystemdId);
  EXPECT_EQ(s["identity"]["kind"], "systemd");
  EXPECT_EQ(s["identity"]["systemd_unit"], "trainer.service");
  EXPECT_EQ(s["identity"]["pod_uid"], "");
  EXPECT_EQ(s["processes"], nlohmann::json::array());
  EXPECT_EQ(s["counters"]["memory_live_bytes"], 0);
  EXPECT_EQ(s["counters"]["api_errors"], nlohmann::json::object());
  EXPECT_DOUBLE_EQ(s["counters"]["sync_seconds"].get<double>(), 0.0);
}

TEST(WorkloadsJson, LibrariesAndProbes) {
  nlohmann::json j = workloads_json(make_snapshot());
  EXPECT_EQ(j["probes_attached"], 40);
  ASSERT_EQ(j["libraries"].size(), 1u);
  const auto& lib = j["libraries"][0];
  EXPECT_EQ(lib["path"], "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(lib["origin"], "scan");
  EXPECT_EQ(lib["device"], 2049);
  EXPECT_EQ(lib["inode"], 777);
  EXPECT_EQ(lib["probes"], 40);
  EXPECT_EQ(lib["probe_failures"], nlohmann::json::array());
  EXPECT_FALSE(lib.contains("error"));
  ASSERT_EQ(j["rejected_libraries"].size(), 1u);
  EXPECT_EQ(j["rejected_libraries"][0]["path"], "/opt/\"odd\"/libcuda.so");
  EXPECT_EQ(j["rejected_libraries"][0]["error"], "not an ELF file");
  // Serialises (and the quote in the path survives a round trip).
  auto round = nlohmann::json::parse(j.dump());
  EXPECT_EQ(round, j);
}

TEST(WorkloadsJson, EmptySnapshot) {
  nlohmann::json j = workloads_json(attribution::AttributionSnapshot{});
  EXPECT_EQ(j["workloads"], nlohmann::json::array());
  EXPECT_EQ(j["libraries"], nlohmann::json::array());
  EXPECT_EQ(j["rejected_libraries"], nlohmann::json::array());
  EXPECT_EQ(j["probes_attached"], 0);
}

}  // namespace
}  // namespace gpuledger::attribution
