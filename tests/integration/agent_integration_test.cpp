// End-to-end tests of the attribution plane, as root, with the real BPF
// programs, real cgroups and real processes running the CUDA driver simulator.
// Each expected value is worked out by hand from the tenant's script.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent_under_test.h"
#include "attribution/attribution_plane.h"
#include "bpf_requirement.h"
#include "device/capabilities.h"
#include "export/http_server.h"
#include "exposition_parser.h"
#include "node/served_content.h"
#include "probes/library_discovery.h"
#include "tenant_harness.h"

namespace gpuledger::testing {
namespace {
namespace fs = std::filesystem;
using simulation::ScopedCgroup;

constexpr char kUidA[] = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
constexpr char kUidB[] = "11112222-3333-4444-9555-666677778888";
constexpr char kUidC[] = "aaaabbbb-cccc-4ddd-8eee-ffff00001111";
const std::string kHexA(64, 'a');
const std::string kHexB = std::string(32, 'b') + std::string(32, '1');
const std::string kHexC = std::string(32, 'c') + std::string(32, '2');

std::string underscored(std::string uid) {
  for (char& c : uid)
    if (c == '-') c = '_';
  return uid;
}

// The node's GPUs as the device plane would list them.
const std::string kUuid0 = "GPU-00000000-1111-2222-3333-444444444444";
const std::string kUuid1 = "GPU-55555555-6666-7777-8888-999999999999";

attribution::AttributionOptions sim_options(bool discover) {
  attribution::AttributionOptions options;
  options.gpu_inventory = [] {
    return std::vector<identity::GpuIdentity>{{0, kUuid0, 0}, {1, kUuid1, 1}};
  };
  options.cuda_libs = {kSimLib};
  options.discover = discover;
  options.scan_interval = std::chrono::milliseconds(5000);
  options.classifier.cgroup_roots = {test_cgroup("")};  // the tenants' hierarchy starts there
  return options;
}

// One agent for the suite, with discovery on (it must find copies by itself),
// served over HTTP on a free port.
class AgentIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!bpf_unavailable_reason().empty()) return;
    // The least-privilege CTest (tests/security) sets this and runs only the
    // scenarios that read the agent over HTTP: against `gpuledger agent` as
    // its own process holding exactly the agent's capabilities.
    if (std::getenv("GPULEDGER_AGENT_LEAST_PRIVILEGE")) {
      external_ = new AgentUnderTest(GPULEDGER_BINARY, {"--cuda-lib", kSimLib, "--store", "", "--cgroup-root", test_cgroup("")},
                                     {"setpriv", "--bounding-set=-all," + device::setpriv_capability_list(),
                                      "--inh-caps=-all", "--"});
      port_ = external_->port();
      return;
    }
    agent_ = new attribution::AttributionPlane(sim_options(true));
    agent_->start();
    server_ = new exporter::HttpServer(node::served_content(*agent_));
    port_ = server_->start("127.0.0.1", 0);
  }
  static void TearDownTestSuite() {
    delete external_;
    external_ = nullptr;
    delete server_;
    delete agent_;
    server_ = nullptr;
    agent_ = nullptr;
    std::error_code ec;
    fs::remove(mounts().v2 + test_cgroup(""), ec);
  }
  void SetUp() override { GL_REQUIRE_BPF(); }

  static std::string get(const std::string& path, std::string* content_type = nullptr) {
    httplib::Client client("127.0.0.1", port_);
    auto res = client.Get(path.c_str());
    if (!res || res->status != 200) return "";
    if (content_type) *content_type = res->get_header_value("Content-Type");
    return res->body;
  }

  static inline attribution::AttributionPlane* agent_ = nullptr;
  static inline exporter::HttpServer* server_ = nullptr;
  static inline AgentUnderTest* external_ = nullptr;
  static inline int port_ = 0;
};

TEST_F(AgentIntegration, TenantsInPodShapedCgroupsGetExactCounts) {
  // Three Kubernetes shapes (cgroupfs burstable, systemd guaranteed with
  // containerd, systemd besteffort with CRI-O) and a systemd service.
  ScopedCgroup a(mounts().v2, test_cgroup("/kubepods/burstable/pod" + std::string(kUidA) + "/" + kHexA));
  ScopedCgroup b(mounts().v2, test_cgroup("/kubepods.slice/kubepods-pod" + underscored(kUidB) +
                                          ".slice/cri-containerd-" + kHexB + ".scope"));
  ScopedCgroup c(mounts().v2, test_cgroup("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" +
                                          underscored(kUidC) + ".slice/crio-" + kHexC + ".scope"));
  ScopedCgroup d(mounts().v2, test_cgroup("/system.slice/trainer.service"));

  auto ta = run_tenant({a.dir()}, "init; alloc 1048576; htod 4096 x3; launch 2 3 4 8 8 2 x5; sync x2; dtoh 1000; free",
                       {}, {"--sync-us", "20000"});
  auto tb = run_tenant({b.dir()},
                       "init; alloc 4096; alloc-async 8192; memcpy 777; peer 555 x2; dtod 64 async ptds; "
                       "launch 1 1 1 32 1 1 ex x4; launch 10 1 1 1 1 1 ptsz x6; graph x3; sync-ctx; sync-event; "
                       "free; free; free-invalid");
  auto tc = run_tenant({c.dir()},
                       "init; alloc-pitch 1000 3; alloc-managed 65536; mem-create 2097152; alloc-legacy 4096; "
                       "htod 100 legacy; free-all; sync-ptsz");
  auto td = run_tenant({d.dir()}, "init; alloc 1000; launch 1 1 1 1 1 1 x7; exit 0");
  for (const auto* t : {&ta, &tb, &tc, &td}) ASSERT_EQ(t->exit_code, 0);

  const std::string ida = std::string("k8s/") + kUidA + "/" + kHexA;
  const std::string idb = std::string("k8s/") + kUidB + "/" + kHexB;
  const std::string idc = std::string("k8s/") + kUidC + "/" + kHexC;
  const std::string idd = "systemd/trainer.service";

  std::string content_type;
  auto samples = parse_exposition(get("/metrics", &content_type));
  EXPECT_EQ(content_type, "text/plain; version=0.0.4; charset=utf-8");
  auto value = [&](const std::string& name, const std::string& id, std::map<std::string, std::string> extra = {}) {
    extra["workload"] = id;
    return sample_value(samples, name, extra).value_or(-1);
  };

  // Tenant A: 5 launches of (2*3*4) x (8*8*2) threads; 3 x 4096 up, 1000 down.
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", ida), 5);
  EXPECT_EQ(value("gpuledger_cuda_launched_threads_total", ida), 5 * 24 * 128);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocations_total", ida), 1);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", ida), 1048576);
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", ida), 1048576);
  EXPECT_EQ(value("gpuledger_cuda_memory_live_bytes", ida), 0);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", ida, {{"direction", "htod"}}), 12288);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_total", ida, {{"direction", "htod"}}), 3);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", ida, {{"direction", "dtoh"}}), 1000);
  EXPECT_EQ(value("gpuledger_cuda_syncs_total", ida), 2);
  // Two syncs that each block 20 ms in the simulator.
  EXPECT_GE(value("gpuledger_cuda_sync_seconds_total", ida), 0.040);
  EXPECT_LT(value("gpuledger_cuda_sync_seconds_total", ida), 1.0);
  EXPECT_EQ(sample_value(samples, "gpuledger_cuda_kernel_launches_total", {{"workload", ida}, {"pod_uid", kUidA},
                                                                           {"container_id", kHexA}, {"namespace", ""},
                                                                           {"pod", ""}, {"container", ""}}),
            5);

  // Tenant B: Ex (4 x 32 threads) and _ptsz (6 x 10) launches, graphs, every copy direction but htod/dtoh.
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", idb), 10);
  EXPECT_EQ(value("gpuledger_cuda_launched_threads_total", idb), 4 * 32 + 6 * 10);
  EXPECT_EQ(value("gpuledger_cuda_graph_launches_total", idb), 3);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocations_total", idb), 2);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", idb), 12288);
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", idb), 12288);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", idb, {{"direction", "unknown"}}), 777);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", idb, {{"direction", "peer"}}), 1110);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_total", idb, {{"direction", "peer"}}), 2);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", idb, {{"direction", "dtod"}}), 64);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_total", idb, {{"direction", "htod"}}), 0);
  EXPECT_EQ(value("gpuledger_cuda_syncs_total", idb), 2);
  EXPECT_EQ(value("gpuledger_cuda_api_errors_total", idb, {{"call", "cuMemFree_v2"}}), 1);

  // Tenant C: pitch 1000 -> 1024 x 3 rows, managed, VMM, and a legacy 32-bit allocation and copy.
  EXPECT_EQ(value("gpuledger_cuda_memory_allocations_total", idc), 4);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", idc), 3072 + 65536 + 2097152 + 4096);
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", idc), 3072 + 65536 + 2097152 + 4096);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", idc, {{"direction", "htod"}}), 100);
  EXPECT_EQ(value("gpuledger_cuda_syncs_total", idc), 1);

  // Tenant D: exits holding its allocation; the exit frees it.
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", idd), 7);
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total", idd), 1000);
  EXPECT_EQ(value("gpuledger_cuda_memory_live_bytes", idd), 0);

  // The generator's own account agrees where both count the same thing.
  for (const auto& [t, id] : {std::pair{&ta, ida}, {&tb, idb}, {&tc, idc}}) {
    EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total", id), t->truth["launches"].get<double>()) << id;
    EXPECT_EQ(value("gpuledger_cuda_launched_threads_total", id), t->truth["launched_threads"].get<double>()) << id;
    EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total", id), t->truth["allocated_bytes"].get<double>())
        << id;
    EXPECT_EQ(value("gpuledger_cuda_syncs_total", id), t->truth["syncs"].get<double>()) << id;
    for (const char* dir : {"htod", "dtoh", "dtod", "peer", "unknown"})
      EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", id, {{"direction", dir}}),
                t->truth["memcpy_bytes"][dir].get<double>())
          << id << " " << dir;
  }

  // The JSON view carries the same counters and the identity.
  auto doc = nlohmann::json::parse(get("/api/v1/workloads"));
  const nlohmann::json* wb = nullptr;
  for (const auto& w : doc["workloads"])
    if (w["workload"] == idb) wb = &w;
  ASSERT_NE(wb, nullptr);
  EXPECT_EQ((*wb)["identity"]["kind"], "kubernetes");
  EXPECT_EQ((*wb)["identity"]["pod_uid"], kUidB);
  EXPECT_EQ((*wb)["identity"]["container_id"], kHexB);
  EXPECT_EQ((*wb)["identity"]["container_runtime"], "containerd");
  EXPECT_EQ((*wb)["identity"]["qos_class"], "guaranteed");
  EXPECT_EQ((*wb)["cgroup_paths"][0], b.path());
  EXPECT_EQ((*wb)["counters"]["kernel_launches"], 10);
  EXPECT_EQ((*wb)["counters"]["launched_threads"], 188);
  EXPECT_EQ((*wb)["counters"]["graph_launches"], 3);
  EXPECT_EQ((*wb)["counters"]["memcpy_bytes"]["peer"], 1110);
  EXPECT_EQ((*wb)["counters"]["api_errors"]["cuMemFree_v2"], 1);
  EXPECT_EQ((*wb)["processes"].size(), 0u);
  EXPECT_EQ(get("/healthz").rfind("ok\n", 0), 0u);
}

// The families beyond the basic forms (the real driver exports them all):
// copies described by structs, array copies, memsets, arrays, legacy and
// multi-device launches, queries and export tables, each counted exactly.
TEST_F(AgentIntegration, EveryDriverFamilyIsCountedExactly) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/families.service"));
  auto t = run_tenant({cg.dir()},
                      "init; array-create 256 4; array3d-create 16 16 4 legacy; mipmap-create 64 32 1 3; "
                      "copy2d 100 10; copy2d 64 2 from-device to-host ptds; copy2d 8 8 from-device to-device async; "
                      "copy2d 16 4 from-host to-unified; copy2d 30 3 legacy; "
                      "copy2d 10 10 unaligned from-device to-array; copy3d 4 5 6; "
                      "copy3d 2 2 2 from-array to-host async ptds; copy3d 3 3 3 legacy from-device to-device; "
                      "copy3d-peer 10 10 2; copy3d-peer 5 5 5 async ptds; "
                      "htoa 512; atoh 256 async ptds; htoa 100 legacy; atod 128; dtoa 64 legacy; atoa 32 ptds; "
                      "memset 1000; memset 100 d32 async ptds; memset 50 d16 legacy; memset2d 10 20 d32; "
                      "memset2d 4 4 async; launch-legacy 4 2 8 8 1; launch-legacy 1 1 32 1 1 plain; "
                      "launch-legacy 3 3 2 2 2 async; launch-multi 3 2 1 1 64 1 1; query; query ptsz; "
                      "event-query; export-table x2; free-all",
                      {}, {"--kernel-us", "200"});
  ASSERT_EQ(t.exit_code, 0);
  ASSERT_TRUE(t.truth["errors"].size() == 1 && t.truth["errors"]["cuGetExportTable"] == 2) << t.truth.dump();
  const std::string id = "systemd/families.service";
  auto samples = parse_exposition(get("/metrics"));
  auto value = [&](const std::string& name, std::map<std::string, std::string> extra = {}) {
    extra["workload"] = id;
    return sample_value(samples, name, extra).value_or(-1);
  };
  // Copies: host->device 100x10 + 30x3 (legacy) + 4x5x6 + 512 + 100 (legacy) into arrays.
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", "htod"}}), 1000 + 90 + 120 + 512 + 100);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", "dtoh"}}), 128 + 8 + 256);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", "dtod"}}), 64 + 100 + 27 + 128 + 64 + 32);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", "unknown"}}), 64);  // to unified memory
  EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", "peer"}}), 200 + 125);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_total", {{"direction", "htod"}}), 5);
  EXPECT_EQ(value("gpuledger_cuda_memcpy_total", {{"direction", "dtod"}}), 6);
  // Arrays: 256x4 floats, 16x16x4 floats (legacy), a 64x32 mipmap of 3
  // levels; and the two device buffers the copies made (1000 bytes, 90 legacy).
  const double allocated = 4096 + 4096 + (8192 + 2048 + 512) + 1000 + 90;
  EXPECT_EQ(value("gpuledger_cuda_memory_allocated_bytes_total"), allocated);
  EXPECT_EQ(value("gpuledger_cuda_memory_allocations_total"), 5);
  EXPECT_EQ(t.truth["allocated_bytes"].get<double>(), allocated);
  EXPECT_EQ(value("gpuledger_cuda_memory_freed_bytes_total"), allocated);
  EXPECT_EQ(value("gpuledger_cuda_memory_live_bytes"), 0);
  EXPECT_EQ(value("gpuledger_cuda_memory_untracked_frees_total"), 0);
  // Memsets: 1000 x 1, 100 x 4, 50 x 2 (legacy), 10x20 x 4, 4x4 x 1.
  EXPECT_EQ(value("gpuledger_cuda_memsets_total"), 5);
  EXPECT_EQ(value("gpuledger_cuda_memset_bytes_total"), 1000 + 400 + 100 + 800 + 16);
  // Launches: grid 4x2 of 8x8x1, cuLaunch of 32x1x1, grid 3x3 of 2x2x2, and
  // a multi-device launch of 3 entries of 2 x 64 threads.
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total"), 3 + 3);
  EXPECT_EQ(value("gpuledger_cuda_launched_threads_total"), 512 + 32 + 72 + 3 * 128);
  // Polling reports completion: no synchronisation was made, yet the launch
  // spans were closed (the work took 200 us a launch).
  EXPECT_EQ(value("gpuledger_cuda_syncs_total"), 0);
  EXPECT_GT(value("gpuledger_cuda_busy_seconds_total"), 0);
  // Export tables: asked for twice (the simulator has none: both failed).
  EXPECT_EQ(value("gpuledger_cuda_export_table_requests_total", {{"table", "00010203-0405-0607-0809-0a0b0c0d0e0f"}}), 2);
  EXPECT_EQ(value("gpuledger_cuda_api_errors_total", {{"call", "cuGetExportTable"}}), 2);
  // The generator's own account agrees.
  EXPECT_EQ(value("gpuledger_cuda_kernel_launches_total"), t.truth["launches"].get<double>());
  EXPECT_EQ(value("gpuledger_cuda_launched_threads_total"), t.truth["launched_threads"].get<double>());
  EXPECT_EQ(value("gpuledger_cuda_memsets_total"), t.truth["memsets"].get<double>());
  EXPECT_EQ(value("gpuledger_cuda_memset_bytes_total"), t.truth["memset_bytes"].get<double>());
  for (const char* dir : {"htod", "dtoh", "dtod", "peer", "unknown"})
    EXPECT_EQ(value("gpuledger_cuda_memcpy_bytes_total", {{"direction", dir}}), t.truth["memcpy_bytes"][dir].get<double>())
        << dir;
}

// The kernel side follows each thread's current context to its device
// ordinal; the process's CUDA_VISIBLE_DEVICES ties ordinals to physical GPUs.
TEST_F(AgentIntegration, EveryCounterSaysWhichGpu) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/two-gpus.service"));
  auto child = start_interactive_tenant(
      {cg.dir()},
      "init; launch 1 1 1 1 1 1 x2; alloc 1000; print-ready; wait-stdin; device 1; launch 1 1 1 2 1 1 x3; alloc 500; "
      "sync; ctx-create 0; launch 1 1 1 4 1 1; ctx-pop; launch 1 1 1 8 1 1; exit 0",
      {"CUDA_VISIBLE_DEVICES=" + kUuid1 + "," + kUuid0, "CUDASIM_DEVICES=2"});
  await_ready(*child);
  // The agent reads a process's view of its GPUs when it starts its CUDA
  // life, from its environment: let it do so while the process lives (on a
  // busy machine the event can wait behind a library scan).
  ASSERT_TRUE(eventually([&] {
    const auto snap = agent_->snapshot();
    const auto* w = find_workload(snap, "systemd/two-gpus.service");
    return w && !w->by_gpu.empty() && w->by_gpu[0].uuid == kUuid1;
  }));
  finish_interactive_tenant(*child);

  auto samples = parse_exposition(get("/metrics"));
  auto on = [&](const std::string& name, const std::string& gpu, const std::string& uuid) {
    return sample_value(samples, name, {{"workload", "systemd/two-gpus.service"}, {"gpu", gpu}, {"UUID", uuid}})
        .value_or(-1);
  };
  // Ordinal 0 is the second listed UUID's GPU: index 1.
  EXPECT_EQ(on("gpuledger_cuda_kernel_launches_total", "1", kUuid1), 3);   // 2 at init, 1 in the created context
  EXPECT_EQ(on("gpuledger_cuda_launched_threads_total", "1", kUuid1), 6);
  EXPECT_EQ(on("gpuledger_cuda_memory_allocated_bytes_total", "1", kUuid1), 1000);
  EXPECT_EQ(on("gpuledger_cuda_memory_freed_bytes_total", "1", kUuid1), 1000);  // released at exit
  // Ordinal 1 is GPU index 0; after ctx-pop its primary context is current again.
  EXPECT_EQ(on("gpuledger_cuda_kernel_launches_total", "0", kUuid0), 4);
  EXPECT_EQ(on("gpuledger_cuda_launched_threads_total", "0", kUuid0), 14);
  EXPECT_EQ(on("gpuledger_cuda_memory_allocated_bytes_total", "0", kUuid0), 500);
  EXPECT_EQ(on("gpuledger_cuda_memory_freed_bytes_total", "0", kUuid0), 500);
  EXPECT_EQ(on("gpuledger_cuda_syncs_total", "0", kUuid0), 1);
  EXPECT_EQ(on("gpuledger_cuda_kernel_launches_total", "", ""), -1) << "nothing on an unknown GPU";
  // The span from the first launch to the sync is busy time, closed on the GPU current at the sync.
  EXPECT_GT(on("gpuledger_cuda_busy_seconds_total", "0", kUuid0), 0);
}

// Without CUDA_VISIBLE_DEVICES, a restricted container or PCI ordering, an
// ordinal on a two-GPU node could be either GPU: the labels stay empty.
TEST_F(AgentIntegration, AnOrdinalThatCannotBeTiedToAGpuStaysUnknown) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/ambiguous.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x2", {}, {"--quiet"}).exit_code, 0);
  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, "systemd/ambiguous.service");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->by_gpu.size(), 1u);
  EXPECT_EQ(w->by_gpu[0].gpu, "");
  EXPECT_EQ(w->by_gpu[0].uuid, "");
  EXPECT_EQ(w->by_gpu[0].usage.counters.launches, 2u) << get("/api/v1/workloads");
}

TEST_F(AgentIntegration, HundredShortLivedProcessesAreAllCounted) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/batch.service"));
  for (int i = 0; i < 100; ++i)
    ASSERT_EQ(run_tenant({cg.dir()}, "init; alloc 4096; launch 1 1 1 2 1 1; htod 10; free", {}, {"--quiet"}).exit_code,
              0);
  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, "systemd/batch.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 100u);
  EXPECT_EQ(w->usage.counters.launched_threads, 200u);
  EXPECT_EQ(w->usage.counters.allocations, 100u);
  EXPECT_EQ(w->usage.counters.allocated_bytes, 409600u);
  EXPECT_EQ(w->usage.counters.freed_bytes, 409600u);
  EXPECT_EQ(w->usage.counters.memcpy_bytes[GL_DIR_HTOD], 1000u);
  EXPECT_TRUE(w->processes.empty());
}

TEST_F(AgentIntegration, LiveBytesReturnToZeroWhenAProcessExits) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/kubepods/besteffort/pod" + std::string(kUidC) + "/" + kHexB));
  const std::string id = std::string("k8s/") + kUidC + "/" + kHexB;
  auto child = start_interactive_tenant({cg.dir()}, "init; alloc 1048576; alloc 2048; print-ready; wait-stdin; exit 0");
  await_ready(*child);

  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, id);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.live_bytes(), 1050624u);
  ASSERT_EQ(w->processes.size(), 1u);
  EXPECT_EQ(w->processes[0].pid, static_cast<uint32_t>(child->pid()));
  EXPECT_EQ(w->processes[0].live_bytes, 1050624u);

  finish_interactive_tenant(*child);
  snap = agent_->snapshot();
  w = find_workload(snap, id);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.live_bytes(), 0u);
  EXPECT_EQ(w->usage.counters.freed_bytes, 1050624u);
  EXPECT_TRUE(w->processes.empty());
}

TEST_F(AgentIntegration, SecondLibraryCopyIsFoundWithoutBeingNamed) {
  auto dir = fs::temp_directory_path() / ("gpuledger-copy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kSimLib, dir / "libcuda.so.1", fs::copy_options::overwrite_existing);
  auto copy_id = probes::file_id_of((dir / "libcuda.so.1").string());
  ASSERT_TRUE(copy_id);
  ASSERT_NE(copy_id, probes::file_id_of(kSimLib));

  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/copy.service"));
  auto child = start_interactive_tenant({cg.dir()}, "init; print-ready; wait-stdin; launch 1 1 1 3 1 1 x4; alloc 100; free",
                                        {"LD_LIBRARY_PATH=" + dir.string()});
  await_ready(*child);
  std::string origin;
  auto covered = [&] {
    for (const auto& lib : agent_->snapshot().self.libraries)
      if (lib.file == *copy_id) origin = lib.origin;
    return !origin.empty();
  };
  // Mapping the library for execution is the trigger ("map"); the periodic
  // scan of process maps ("maps", every 5 s here) is only a backstop.
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually(covered, std::chrono::milliseconds(3000)));
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(origin, "map");
  EXPECT_LT(waited, std::chrono::milliseconds(1000));
  RecordProperty("coverage_ms", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()));
  EXPECT_TRUE(agent_->snapshot().self.rejected_libraries.empty());
  finish_interactive_tenant(*child);

  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, "systemd/copy.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 4u);
  EXPECT_EQ(w->usage.counters.launched_threads, 12u);
  EXPECT_EQ(w->usage.counters.allocated_bytes, 100u);
  EXPECT_EQ(w->usage.counters.freed_bytes, 100u);
  fs::remove_all(dir);
}

// The first process to load a never-seen copy and call at once (as the CUDA
// runtime does right after dlopen) loses no call: the watcher holds it until
// the probes are in place. Five fresh copies, 3,000 launches each.
TEST_F(AgentIntegration, TheFirstProcessOfANeverSeenCopyLosesNoCall) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/first-calls.service"));
  for (int i = 0; i < 5; ++i) {
    auto dir = fs::temp_directory_path() / ("gpuledger-first-" + std::to_string(::getpid()) + "-" + std::to_string(i));
    fs::create_directories(dir);
    fs::copy_file(kSimLib, dir / "libcuda.so.1", fs::copy_options::overwrite_existing);
    ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x3000", {"LD_LIBRARY_PATH=" + dir.string()}, {"--quiet"})
                  .exit_code,
              0);
    fs::remove_all(dir);
  }
  const auto* w = find_workload(agent_->snapshot(), "systemd/first-calls.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 15000u);
}

// Two containers of one image: two overlay mounts over one lower directory.
// Each sees its own overlay inode, but the kernel probes the one real file:
// attaching once per overlay path would count every call twice.
TEST_F(AgentIntegration, OneImageInTwoOverlayContainersIsProbedOnce) {
  auto root = fs::temp_directory_path() / ("gpuledger-overlay-" + std::to_string(::getpid()));
  fs::create_directories(root / "lower");
  fs::copy_file(kSimLib, root / "lower" / "libcuda.so.1", fs::copy_options::overwrite_existing);
  std::vector<std::string> merged;
  for (const char* name : {"c1", "c2"}) {
    for (const char* d : {"upper", "work", "merged"}) fs::create_directories(root / name / d);
    std::string options = "lowerdir=" + (root / "lower").string() + ",upperdir=" + (root / name / "upper").string() +
                          ",workdir=" + (root / name / "work").string();
    std::string mount_cmd = "mount -t overlay overlay -o " + options + " " + (root / name / "merged").string();
    ASSERT_EQ(std::system(mount_cmd.c_str()), 0) << mount_cmd;
    merged.push_back((root / name / "merged").string());
  }
  ScopedCgroup cg1(mounts().v2, test_cgroup("/system.slice/overlay-one.service"));
  ScopedCgroup cg2(mounts().v2, test_cgroup("/system.slice/overlay-two.service"));
  const char* script = "init; print-ready; wait-stdin; launch 1 1 1 1 1 1 x3";
  auto first = start_interactive_tenant({cg1.dir()}, script, {"LD_LIBRARY_PATH=" + merged[0]});
  auto second = start_interactive_tenant({cg2.dir()}, script, {"LD_LIBRARY_PATH=" + merged[1]});
  await_ready(*first);
  await_ready(*second);
  auto real = probes::file_id_of((root / "lower" / "libcuda.so.1").string());
  auto covered = [&] {
    for (const auto& lib : agent_->snapshot().self.libraries)
      if (lib.file == *real) return true;
    return false;
  };
  EXPECT_TRUE(eventually(covered));
  finish_interactive_tenant(*first);
  finish_interactive_tenant(*second);

  auto snap = agent_->snapshot();
  size_t attachments_of_real = 0;
  for (const auto& lib : snap.self.libraries) attachments_of_real += lib.file == *real;
  EXPECT_EQ(attachments_of_real, 1u);
  ASSERT_NE(find_workload(snap, "systemd/overlay-one.service"), nullptr);
  ASSERT_NE(find_workload(snap, "systemd/overlay-two.service"), nullptr);
  EXPECT_EQ(find_workload(snap, "systemd/overlay-one.service")->usage.counters.launches, 3u);
  EXPECT_EQ(find_workload(snap, "systemd/overlay-two.service")->usage.counters.launches, 3u);
  for (const auto& m : merged) std::system(("umount " + m).c_str());
  fs::remove_all(root);
}

TEST_F(AgentIntegration, CountersOfAnExitedProcessStayWithItsWorkload) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/stays.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x3", {}, {"--quiet"}).exit_code, 0);
  auto before = find_workload(agent_->snapshot(), "systemd/stays.service")->usage.counters.launches;
  // A new process (likely with a new PID, possibly a reused one) elsewhere.
  ScopedCgroup other(mounts().v2, test_cgroup("/system.slice/other.service"));
  ASSERT_EQ(run_tenant({other.dir()}, "init; launch 1 1 1 1 1 1 x2", {}, {"--quiet"}).exit_code, 0);
  auto snap = agent_->snapshot();
  EXPECT_EQ(before, 3u);
  EXPECT_EQ(find_workload(snap, "systemd/stays.service")->usage.counters.launches, 3u);
  EXPECT_EQ(find_workload(snap, "systemd/other.service")->usage.counters.launches, 2u);
}

// A process in the v2 root on a host whose workloads live in cgroup v1: the
// kernel side keys it by its v1 (memory) cgroup instead.
TEST_F(AgentIntegration, CgroupV1FallbackNamesTheWorkload) {
  if (mounts().v1.empty() || !mounts().v1_subsys_index) GTEST_SKIP() << "no cgroup v1 memory hierarchy here";
  ScopedCgroup v1(mounts().v1, test_cgroup("/kubepods/burstable/pod" + std::string(kUidA) + "/" + kHexC));
  ScopedCgroup v2root(mounts().v2, "/");
  ASSERT_EQ(run_tenant({v2root.dir(), v1.dir()}, "init; alloc 512; launch 2 1 1 2 1 1 x2; free", {}, {"--quiet"}).exit_code,
            0);
  auto snap = agent_->snapshot();
  const auto* w = find_workload(snap, std::string("k8s/") + kUidA + "/" + kHexC);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 2u);
  EXPECT_EQ(w->usage.counters.launched_threads, 8u);
  EXPECT_EQ(w->usage.counters.allocated_bytes, 512u);
}

// Agents of their own, for what needs a fresh start or other options.
class AgentOwnInstance : public ::testing::Test {
 protected:
  void SetUp() override { GL_REQUIRE_BPF(); }
};

TEST_F(AgentOwnInstance, ProcessRunningBeforeTheAgentIsCountedFromThenOn) {
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/early.service"));
  auto child = start_interactive_tenant(
      {cg.dir()}, "init; alloc 1000; launch 1 1 1 1 1 1 x3; print-ready; wait-stdin; launch 1 1 1 2 1 1 x5; alloc 2000; "
                  "free; sync; exit 0");
  await_ready(*child);
  attribution::AttributionPlane agent(sim_options(false));
  finish_interactive_tenant(*child);

  auto snap = agent.snapshot();
  const auto* w = find_workload(snap, "systemd/early.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 5u);
  EXPECT_EQ(w->usage.counters.launched_threads, 10u);
  EXPECT_EQ(w->usage.counters.allocations, 1u);
  EXPECT_EQ(w->usage.counters.allocated_bytes, 2000u);
  // The 1000 bytes allocated before the agent are unknown to it: not counted
  // as freed at exit either, so live bytes stay exact.
  EXPECT_EQ(w->usage.counters.freed_bytes, 2000u);
  EXPECT_EQ(w->usage.live_bytes(), 0u);
  EXPECT_EQ(w->usage.counters.syncs, 1u);
}

// A driver upgrade replaces libcuda.so.1 with a new file at the same path:
// the path is watched, and the new file gets its own probes.
TEST_F(AgentOwnInstance, ALibraryReplacedOnDiskIsAttachedAgain) {
  auto dir = fs::temp_directory_path() / ("gpuledger-upgrade-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto lib = dir / "libcuda.so.1";
  fs::copy_file(kSimLib, lib, fs::copy_options::overwrite_existing);
  attribution::AttributionOptions options = sim_options(true);
  options.cuda_libs = {lib.string()};
  options.scan_interval = std::chrono::milliseconds(100);
  attribution::AttributionPlane agent(options);
  agent.start();
  auto old_id = probes::file_id_of(lib.string());

  // The installer writes the new version beside the old and renames it over.
  fs::copy_file(kSimLib, dir / "libcuda.so.1.new");
  fs::rename(dir / "libcuda.so.1.new", lib);
  auto new_id = probes::file_id_of(lib.string());
  ASSERT_NE(old_id, new_id);
  auto covered = [&] {
    for (const auto& l : agent.snapshot().self.libraries)
      if (l.file == *new_id) return true;
    return false;
  };
  ASSERT_TRUE(eventually(covered));

  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/after-upgrade.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x4", {"LD_LIBRARY_PATH=" + dir.string()}, {"--quiet"})
                .exit_code,
            0);
  auto snap = agent.snapshot();
  const auto* w = find_workload(snap, "systemd/after-upgrade.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 4u);
  agent.stop();
  fs::remove_all(dir);
}

TEST_F(AgentOwnInstance, BadLibrariesAreReportedAndTheAgentKeepsRunning) {
  auto text = fs::temp_directory_path() / ("gpuledger-not-elf-" + std::to_string(::getpid()));
  std::ofstream(text) << "not a library\n";
  attribution::AttributionOptions options = sim_options(false);
  options.cuda_libs = {"/nonexistent/libcuda.so.1", text.string(), "/lib/x86_64-linux-gnu/libm.so.6", kSimLib};
  attribution::AttributionPlane agent(options);

  auto self = agent.snapshot().self;
  ASSERT_EQ(self.libraries.size(), 1u);
  EXPECT_EQ(self.libraries[0].path, kSimLib);
  ASSERT_EQ(self.rejected_libraries.size(), 3u);
  std::map<std::string, std::string> why;
  for (const auto& r : self.rejected_libraries) why[r.path] = r.error;
  EXPECT_NE(why["/nonexistent/libcuda.so.1"].find("no such file"), std::string::npos);
  EXPECT_NE(why[text.string()].find("not an ELF file"), std::string::npos);
  EXPECT_NE(why["/lib/x86_64-linux-gnu/libm.so.6"].find("does not export the CUDA driver API"), std::string::npos);

  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/after-bad.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 1 1 1 x2", {}, {"--quiet"}).exit_code, 0);
  auto snap = agent.snapshot();
  const auto* w = find_workload(snap, "systemd/after-bad.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 2u);
  fs::remove(text);
}

// Kernels before 6.6 have no multi-uprobe links: one perf-event link per probe.
TEST_F(AgentOwnInstance, PerProbeLinksCountTheSame) {
  attribution::AttributionOptions options = sim_options(false);
  options.per_probe_links = true;
  attribution::AttributionPlane agent(options);
  auto snap = agent.snapshot();
  ASSERT_EQ(snap.self.libraries.size(), 1u);
  EXPECT_GT(snap.self.libraries[0].probes, 90u);
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/per-probe.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; alloc 64; launch 2 1 1 2 1 1 x3; htod 5; sync; free", {}, {"--quiet"}).exit_code,
            0);
  snap = agent.snapshot();
  const auto* w = find_workload(snap, "systemd/per-probe.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 3u);
  EXPECT_EQ(w->usage.counters.launched_threads, 12u);
  EXPECT_EQ(w->usage.counters.allocated_bytes, 64u);
  EXPECT_EQ(w->usage.counters.freed_bytes, 64u);
  EXPECT_EQ(w->usage.counters.memcpy_bytes[GL_DIR_HTOD], 5u);
  EXPECT_EQ(w->usage.counters.syncs, 1u);
}

// A tenant that asks for endless export-table ids fills the bounded map and no
// more: what does not fit is counted as an overflow, and another workload's
// request is still counted as a call (its error), only not by id.
TEST_F(AgentOwnInstance, ExportTableIdsFillABoundedMapAndTheRestIsCounted) {
  attribution::AttributionPlane agent(sim_options(false));
  const uint64_t capacity = [&] {
    for (const auto& m : agent.snapshot().self.maps)
      if (m.name == "export_tables") return static_cast<uint64_t>(m.capacity);
    return uint64_t{0};
  }();
  ASSERT_EQ(capacity, 4096u);
  ScopedCgroup flood(mounts().v2, test_cgroup("/system.slice/tables-flood.service"));
  ScopedCgroup other(mounts().v2, test_cgroup("/system.slice/tables-other.service"));
  ASSERT_EQ(run_tenant({flood.dir()}, "init; export-tables 4196", {}, {"--quiet"}).exit_code, 0);
  ASSERT_EQ(run_tenant({other.dir()}, "init; export-table", {}, {"--quiet"}).exit_code, 0);
  auto snap = agent.snapshot();
  const auto* f = find_workload(snap, "systemd/tables-flood.service");
  const auto* o = find_workload(snap, "systemd/tables-other.service");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(f->usage.export_tables.size(), capacity) << "the map holds what fits";
  EXPECT_EQ(snap.self.kernel_stats[GL_STAT_EXPORT_TABLES_FULL], 4196 - capacity + 1);
  EXPECT_TRUE(o->usage.export_tables.empty());
  EXPECT_EQ(o->usage.errors_by_call.at("cuGetExportTable"), 1u) << "the call itself is still counted";
  EXPECT_EQ(f->usage.errors_by_call.at("cuGetExportTable"), 4196u);
  for (const auto& m : snap.self.maps)
    if (m.name == "export_tables") EXPECT_EQ(m.entries, capacity);
}

TEST_F(AgentOwnInstance, LaunchReturnsCountOnlySuccessfulLaunchesAndTheirErrors) {
  attribution::AttributionOptions options = sim_options(false);
  options.launch_returns = true;
  attribution::AttributionPlane agent(options);
  ScopedCgroup cg(mounts().v2, test_cgroup("/system.slice/launch-errors.service"));
  ASSERT_EQ(run_tenant({cg.dir()}, "init; launch 1 1 1 4 1 1 x3; launch-invalid; free-invalid", {}, {"--quiet"}).exit_code,
            0);
  auto snap = agent.snapshot();
  const auto* w = find_workload(snap, "systemd/launch-errors.service");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->usage.counters.launches, 3u);
  EXPECT_EQ(w->usage.counters.launched_threads, 12u);
  EXPECT_EQ(w->usage.errors_by_call.at("cuLaunchKernel"), 1u);
  EXPECT_EQ(w->usage.errors_by_call.at("cuMemFree_v2"), 1u);
}

}  // namespace
}  // namespace gpuledger::testing
