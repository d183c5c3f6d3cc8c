// gpuledger-cudasim: scripted workload generator for the gpuledger CUDA
// driver simulator (sim/libcuda, no GPU behind it).  It makes real calls into
// whatever libcuda.so.1 the dynamic loader picks (normally the simulator via
// RUNPATH; LD_LIBRARY_PATH overrides) and prints, as one JSON line, the truth
// about what it did, so tests can compare gpuledger's attribution against it.
#include "cuda_sim.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kExitUsage = 64;
constexpr int kExitInit = 2;

const char *kUsage = R"(usage: gpuledger-cudasim [options] SCRIPT
       gpuledger-cudasim [options] -f FILE

A simulated CUDA workload for the gpuledger CUDA driver simulator (no GPU is
used: every call goes to the stand-in libcuda.so.1, which fakes devices,
allocations, copies and kernels).  SCRIPT is a ';'-separated list of ops; with
-f FILE, one op per line ('#' starts a comment).  Every op may end in ' xN'
to repeat it N times.

options:
  --sync-us N     set CUDASIM_SYNC_US=N (min duration of each synchronisation)
  --kernel-us N   set CUDASIM_KERNEL_US=N (simulated duration of each launch)
  --devices N     set CUDASIM_DEVICES=N
  --quiet         print neither the final JSON truth line nor per-call errors
  -f FILE         read the script from FILE ('-' = stdin)
  -h, --help      this text

ops (BYTES accepts k/m/g suffixes = KiB/MiB/GiB, and 0x hex):
  init                          cuInit, cuDeviceGet(0), cuDevicePrimaryCtxRetain,
                                cuCtxSetCurrent, cuStreamCreate (implicit before
                                the first op that needs CUDA)
  alloc BYTES                   cuMemAlloc_v2
  alloc-managed BYTES           cuMemAllocManaged (CU_MEM_ATTACH_GLOBAL)
  alloc-async BYTES [ptsz]      cuMemAllocAsync[_ptsz] on the stream
  alloc-pool BYTES              cuDeviceGetDefaultMemPool + cuMemAllocFromPoolAsync
  alloc-pitch WIDTH HEIGHT      cuMemAllocPitch_v2 (ElementSizeBytes 4; truth = pitch*HEIGHT)
  alloc-legacy BYTES            cuMemAlloc (32-bit legacy form)
  mem-create BYTES              cuMemCreate (device 0)
  free                          free the most recent allocation with its matching call
                                (cuMemFree_v2 / cuMemFreeAsync[_ptsz] / cuMemRelease / cuMemFree)
  free-all                      'free' until nothing is left
  free-invalid                  cuMemFree_v2 on a bogus pointer (an error)
  htod BYTES [async] [ptds] [legacy]   cuMemcpyHtoD{_v2,Async_v2}[_ptds|_ptsz]; legacy = cuMemcpyHtoD
  dtoh BYTES [async] [ptds]     cuMemcpyDtoH...
  dtod BYTES [async] [ptds]     cuMemcpyDtoD...
  memcpy BYTES [ptds]           cuMemcpy[_ptds] (unified; direction 'unknown')
  memcpy-async BYTES [ptsz]     cuMemcpyAsync[_ptsz]
  peer BYTES [ptds]             cuMemcpyPeer[_ptds]
  peer-async BYTES [ptsz]       cuMemcpyPeerAsync[_ptsz]
  launch GX GY GZ BX BY BZ [ptsz] [ex]  cuLaunchKernel[_ptsz] / cuLaunchKernelEx[_ptsz]
  launch-invalid [ptsz] [ex]    a launch with gridDimX 0 (an error)
  graph | graph-ptsz            cuGraphLaunch[_ptsz] with a dummy exec handle
  sync | sync-ptsz              cuStreamSynchronize[_ptsz] on the stream
  sync-ctx                      cuCtxSynchronize
  sync-thread                   cuStreamSynchronize on the stream, from another thread (which
                                makes the context current there first)
  sync-ctx-thread               cuCtxSynchronize from another thread
  stream N                      use stream N from now on (0: the one made at init; others
                                are made by cuStreamCreate on first use)
  device N                      cuDeviceGet(N), cuDevicePrimaryCtxRetain, cuCtxSetCurrent
                                (what cudaSetDevice does), and a stream there
  ctx-create N                  cuCtxCreate_v2 on device N (pushed: now current)
  ctx-pop                       cuCtxPopCurrent_v2
  sync-event [ptsz]             cuEventCreate, cuEventRecord[_ptsz], cuEventSynchronize,
                                cuEventDestroy_v2
  copy2d W H [from-X] [to-Y] [async] [ptds] [legacy] [unaligned]
                                cuMemcpy2D{,Async,Unaligned}[_v2[_ptds|_ptsz]] of W x H bytes;
                                X, Y: host, device, array, unified (default host to device)
  copy3d W H D [from-X] [to-Y] [async] [ptds] [legacy]   cuMemcpy3D{,Async}[_v2[_ptds|_ptsz]]
  copy3d-peer W H D [async] [ptds]   cuMemcpy3DPeer{,Async}[_ptds|_ptsz], device to device
  array-create W H [legacy]     cuArrayCreate[_v2]: W x H floats, one channel (4 x W x H bytes)
  array3d-create W H D [legacy] cuArray3DCreate[_v2]: W x H x D floats
  mipmap-create W H D LEVELS    cuMipmappedArrayCreate: floats, each level half the one before
                                ('free' destroys the most recent with cuArrayDestroy /
                                cuMipmappedArrayDestroy)
  htoa | atoh BYTES [async] [ptds] [legacy]   cuMemcpyHtoA / cuMemcpyAtoH[Async][_v2[_ptds|_ptsz]]
  atod | dtoa | atoa BYTES [ptds] [legacy]    cuMemcpyAtoD / DtoA / AtoA[_v2[_ptds]] (arrays are
                                device memory; an array is made first when none is held)
  memset N [d16] [d32] [async] [ptds] [legacy]      cuMemsetD{8,16,32}[Async][_v2[_ptds|_ptsz]]
                                of N elements
  memset2d W H [d16] [d32] [async] [ptds] [legacy]  cuMemsetD2D{8,16,32}...: W x H elements
  launch-legacy GW GH BX BY BZ [plain] [async]   cuFuncSetBlockShape(BX, BY, BZ), then
                                cuLaunchGrid (default), cuLaunchGridAsync (async) or cuLaunch
                                (plain: a 1 x 1 grid)
  launch-multi N GX GY GZ BX BY BZ   cuLaunchCooperativeKernelMultiDevice with N entries
  query [ptsz]                  cuStreamQuery[_ptsz] until it reports completion
  event-query                   cuEventCreate, cuEventRecord, cuEventQuery until complete,
                                cuEventDestroy_v2
  export-table                  cuGetExportTable for the id 00010203-0405-0607-0809-0a0b0c0d0e0f
  export-tables N               cuGetExportTable for N distinct ids (the first 8 bytes count 0..N-1)
  wait-stdin                    block until a line (or EOF) arrives on stdin
  print-ready                   print "READY <pid>" and flush stdout
  sleep-ms N                    sleep N milliseconds
  exit N                        print the truth line (unless --quiet) and _exit(N) at once,
                                without freeing anything

exit status: 0 ok (failed CUDA calls are recorded, not fatal), 2 init failed,
64 bad usage or script syntax.
)";

// ------------------------------------------------------------------ script
struct OpSpec {
    const char *name;
    int nargs;
    std::set<std::string> flags;
    bool needs_cuda;
};

const std::vector<OpSpec> &op_specs()
{
    static const std::vector<OpSpec> specs = {
        {"init", 0, {}, true},
        {"alloc", 1, {}, true},
        {"alloc-managed", 1, {}, true},
        {"alloc-async", 1, {"ptsz"}, true},
        {"alloc-pool", 1, {}, true},
        {"alloc-pitch", 2, {}, true},
        {"alloc-legacy", 1, {}, true},
        {"mem-create", 1, {}, true},
        {"free", 0, {}, true},
        {"free-all", 0, {}, true},
        {"free-invalid", 0, {}, true},
        {"htod", 1, {"async", "ptds", "legacy"}, true},
        {"dtoh", 1, {"async", "ptds"}, true},
        {"dtod", 1, {"async", "ptds"}, true},
        {"memcpy", 1, {"ptds"}, true},
        {"memcpy-async", 1, {"ptsz"}, true},
        {"peer", 1, {"ptds"}, true},
        {"peer-async", 1, {"ptsz"}, true},
        {"launch", 6, {"ptsz", "ex"}, true},
        {"launch-invalid", 0, {"ptsz", "ex"}, true},
        {"graph", 0, {}, true},
        {"graph-ptsz", 0, {}, true},
        {"sync", 0, {}, true},
        {"sync-ptsz", 0, {}, true},
        {"sync-ctx", 0, {}, true},
        {"sync-thread", 0, {}, true},
        {"sync-ctx-thread", 0, {}, true},
        {"stream", 1, {}, true},
        {"sync-event", 0, {"ptsz"}, true},
        {"device", 1, {}, true},
        {"ctx-create", 1, {}, true},
        {"ctx-pop", 0, {}, true},
        {"copy2d", 2, {"from-host", "from-device", "from-array", "from-unified", "to-host", "to-device",
                        "to-array", "to-unified", "async", "ptds", "legacy", "unaligned"}, true},
        {"copy3d", 3, {"from-host", "from-device", "from-array", "from-unified", "to-host", "to-device",
                        "to-array", "to-unified", "async", "ptds", "legacy"}, true},
        {"copy3d-peer", 3, {"async", "ptds"}, true},
        {"array-create", 2, {"legacy"}, true},
        {"array3d-create", 3, {"legacy"}, true},
        {"mipmap-create", 4, {}, true},
        {"htoa", 1, {"async", "ptds", "legacy"}, true},
        {"atoh", 1, {"async", "ptds", "legacy"}, true},
        {"atod", 1, {"ptds", "legacy"}, true},
        {"dtoa", 1, {"ptds", "legacy"}, true},
        {"atoa", 1, {"ptds", "legacy"}, true},
        {"memset", 1, {"d16", "d32", "async", "ptds", "legacy"}, true},
        {"memset2d", 2, {"d16", "d32", "async", "ptds", "legacy"}, true},
        {"launch-legacy", 5, {"plain", "async"}, true},
        {"launch-multi", 7, {}, true},
        {"query", 0, {"ptsz"}, true},
        {"event-query", 0, {}, true},
        {"export-table", 0, {}, true},
        {"export-tables", 1, {}, true},
        {"wait-stdin", 0, {}, false},
        {"print-ready", 0, {}, false},
        {"sleep-ms", 1, {}, false},
        {"exit", 1, {}, false},
    };
    return specs;
}

struct Op {
    std::string name;
    std::vector<unsigned long long> args;
    std::set<std::string> flags;
    unsigned long long repeat = 1;
    bool needs_cuda = true;
    std::string text;
};

[[noreturn]] void syntax_error(const std::string &op_text, const std::string &why)
{
    std::fprintf(stderr, "gpuledger-cudasim: bad op '%s': %s (see --help)\n", op_text.c_str(),
                 why.c_str());
    std::exit(kExitUsage);
}

std::optional<unsigned long long> parse_number(const std::string &s)
{
    if (s.empty() || s[0] == '-' || s[0] == '+')
        return std::nullopt;
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || end == s.c_str())
        return std::nullopt;
    std::string suffix(end);
    unsigned shift = 0;
    if (suffix.empty())
        shift = 0;
    else if (suffix == "k" || suffix == "K" || suffix == "KiB")
        shift = 10;
    else if (suffix == "m" || suffix == "M" || suffix == "MiB")
        shift = 20;
    else if (suffix == "g" || suffix == "G" || suffix == "GiB")
        shift = 30;
    else
        return std::nullopt;
    if (shift && v > (ULLONG_MAX >> shift))
        return std::nullopt;
    return v << shift;
}

std::vector<std::string> split_words(const std::string &s)
{
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

Op parse_op(const std::string &text)
{
    std::vector<std::string> words = split_words(text);
    Op op;
    op.text = text;
    op.name = words[0];
    const OpSpec *spec = nullptr;
    for (const auto &s : op_specs())
        if (op.name == s.name)
            spec = &s;
    if (!spec)
        syntax_error(text, "unknown op '" + op.name + "'");
    op.needs_cuda = spec->needs_cuda;
    size_t end = words.size();
    if (end > 1 && words[end - 1].size() > 1 && words[end - 1][0] == 'x') {
        auto n = parse_number(words[end - 1].substr(1));
        if (!n)
            syntax_error(text, "bad repeat count '" + words[end - 1] + "' (want xN)");
        op.repeat = *n;
        --end;
    }
    size_t i = 1;
    for (; i < end && op.args.size() < static_cast<size_t>(spec->nargs); ++i) {
        auto n = parse_number(words[i]);
        if (!n)
            syntax_error(text, "'" + words[i] + "' is not a number");
        op.args.push_back(*n);
    }
    if (op.args.size() != static_cast<size_t>(spec->nargs))
        syntax_error(text, "'" + op.name + "' takes " + std::to_string(spec->nargs) +
                               " numeric argument(s)");
    for (; i < end; ++i) {
        if (!spec->flags.count(words[i]))
            syntax_error(text, "unexpected word '" + words[i] + "' for '" + op.name + "'");
        op.flags.insert(words[i]);
    }
    if (op.name == "htod" && op.flags.count("legacy") &&
        (op.flags.count("async") || op.flags.count("ptds")))
        syntax_error(text, "'legacy' cannot be combined with 'async' or 'ptds'");
    if ((op.name == "alloc-legacy" || (op.name == "htod" && op.flags.count("legacy"))) &&
        op.args[0] > UINT_MAX)
        syntax_error(text, "legacy forms take 32-bit sizes");
    if (op.name == "launch" || op.name == "launch-multi" || op.name == "launch-legacy")
        for (unsigned long long a : op.args)
            if (a > INT_MAX)
                syntax_error(text, "launch dimensions are 31-bit");
    if (op.flags.count("legacy") && op.flags.count("async") && op.name != "htoa" && op.name != "atoh" &&
        op.name != "copy2d" && op.name != "copy3d")
        syntax_error(text, "'legacy' has no 'async' form here");
    if (op.flags.count("legacy"))
        for (unsigned long long a : op.args)
            if (a > UINT_MAX)
                syntax_error(text, "legacy forms take 32-bit sizes");
    if (op.name == "exit" && op.args[0] > 255)
        syntax_error(text, "exit code must be 0..255");
    return op;
}

std::vector<Op> parse_script(const std::string &script)
{
    std::vector<Op> ops;
    std::istringstream lines(script);
    for (std::string line; std::getline(lines, line);) {
        if (auto hash = line.find('#'); hash != std::string::npos)
            line.erase(hash);
        std::istringstream parts(line);
        for (std::string part; std::getline(parts, part, ';');) {
            if (split_words(part).empty())
                continue;
            // Normalise whitespace for messages.
            auto w = split_words(part);
            std::string text = w[0];
            for (size_t i = 1; i < w.size(); ++i)
                text += " " + w[i];
            ops.push_back(parse_op(text));
        }
    }
    return ops;
}

// ------------------------------------------------------------------ truth
const char *result_name(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return "CUDA_ERROR_?";
    }
}

struct Truth {
    unsigned long long launches = 0, launched_threads = 0, graph_launches = 0;
    unsigned long long allocations = 0, allocated_bytes = 0, frees = 0, freed_bytes = 0;
    unsigned long long syncs = 0;
    unsigned long long memsets = 0, memset_bytes = 0;
    std::map<std::string, unsigned long long> export_tables;
    std::map<std::string, unsigned long long> memcpy_bytes{
        {"htod", 0}, {"dtoh", 0}, {"dtod", 0}, {"peer", 0}, {"unknown", 0}};
    std::map<std::string, unsigned long long> memcpy_count = memcpy_bytes;
    std::map<std::string, unsigned long long> errors;
    std::map<std::string, unsigned long long> calls; // successful calls by entry point
};

enum class Kind { Device, Managed, Async, AsyncPtsz, Pool, Pitch, Legacy, Handle, Array, Mipmap };

struct Alloc {
    unsigned long long ptr;
    unsigned long long bytes;
    Kind kind;
};

const char *kDirs[] = {"htod", "dtoh", "dtod", "peer", "unknown"};

class Runner {
  public:
    explicit Runner(bool quiet) : quiet_(quiet) {}

    void run(const std::vector<Op> &ops)
    {
        for (const Op &op : ops) {
            if (op.needs_cuda && op.name != "init")
                ensure_init();
            for (unsigned long long i = 0; i < op.repeat; ++i)
                exec(op);
        }
    }

    void print_truth() const
    {
        if (quiet_)
            return;
        std::string j = "{";
        auto num = [&](const char *k, unsigned long long v, bool comma = true) {
            j += "\"";
            j += k;
            j += "\":" + std::to_string(v) + (comma ? "," : "");
        };
        auto obj = [&](const char *k, const std::map<std::string, unsigned long long> &m,
                       bool comma = true) {
            j += "\"";
            j += k;
            j += "\":{";
            bool first = true;
            for (const auto &[name, v] : m) {
                if (!first)
                    j += ",";
                first = false;
                j += "\"" + name + "\":" + std::to_string(v);
            }
            j += comma ? "}," : "}";
        };
        auto ordered = [&](const char *k, const std::map<std::string, unsigned long long> &m) {
            j += "\"";
            j += k;
            j += "\":{";
            for (size_t i = 0; i < 5; ++i)
                j += std::string(i ? "," : "") + "\"" + kDirs[i] + "\":" +
                     std::to_string(m.at(kDirs[i]));
            j += "},";
        };
        num("pid", static_cast<unsigned long long>(getpid()));
        num("launches", t_.launches);
        num("launched_threads", t_.launched_threads);
        num("graph_launches", t_.graph_launches);
        num("allocations", t_.allocations);
        num("allocated_bytes", t_.allocated_bytes);
        num("frees", t_.frees);
        num("freed_bytes", t_.freed_bytes);
        unsigned long long live = 0;
        for (const Alloc &a : lifo_)
            live += a.bytes;
        num("live_allocations", lifo_.size());
        num("live_bytes", live);
        ordered("memcpy_bytes", t_.memcpy_bytes);
        ordered("memcpy", t_.memcpy_count);
        num("syncs", t_.syncs);
        num("memsets", t_.memsets);
        num("memset_bytes", t_.memset_bytes);
        obj("export_tables", t_.export_tables);
        obj("errors", t_.errors);
        obj("calls", t_.calls, false);
        j += "}\n";
        std::fputs(j.c_str(), stdout);
        std::fflush(stdout);
    }

  private:
    bool quiet_;
    bool inited_ = false;
    Truth t_;
    CUdevice dev_ = 0;
    CUcontext ctx_ = nullptr;
    CUstream stream_ = nullptr;
    std::map<unsigned, CUstream> streams_;  // 'stream N': 0 is the one made at init
    CUmodule module_ = nullptr;
    CUfunction fn_ = nullptr;
    bool fn_tried_ = false;
    CUmemoryPool pool_ = nullptr;
    bool pool_tried_ = false;
    std::vector<Alloc> lifo_;
    unsigned char host_[4096] = {};

    bool call(const char *entry, CUresult r)
    {
        if (r == CUDA_SUCCESS) {
            ++t_.calls[entry];
            return true;
        }
        ++t_.errors[entry];
        if (!quiet_)
            std::fprintf(stderr, "gpuledger-cudasim: %s -> %s (%d)\n", entry, result_name(r),
                         static_cast<int>(r));
        return false;
    }

    [[noreturn]] void init_failed(const char *entry, CUresult r)
    {
        std::fprintf(stderr, "gpuledger-cudasim: init failed: %s returned %s (%d)\n", entry,
                     result_name(r), static_cast<int>(r));
        std::exit(kExitInit);
    }

    void ensure_init()
    {
        if (inited_)
            return;
        CUresult r;
        if ((r = cuInit(0)) != CUDA_SUCCESS)
            init_failed("cuInit", r);
        call("cuInit", r);
        if ((r = cuDeviceGet(&dev_, 0)) != CUDA_SUCCESS)
            init_failed("cuDeviceGet", r);
        call("cuDeviceGet", r);
        if ((r = cuDevicePrimaryCtxRetain(&ctx_, dev_)) != CUDA_SUCCESS)
            init_failed("cuDevicePrimaryCtxRetain", r);
        call("cuDevicePrimaryCtxRetain", r);
        if ((r = cuCtxSetCurrent(ctx_)) != CUDA_SUCCESS)
            init_failed("cuCtxSetCurrent", r);
        call("cuCtxSetCurrent", r);
        if ((r = cuStreamCreate(&stream_, 0)) != CUDA_SUCCESS)
            init_failed("cuStreamCreate", r);
        call("cuStreamCreate", r);
        inited_ = true;
    }

    void record_alloc(unsigned long long ptr, unsigned long long bytes, Kind k)
    {
        ++t_.allocations;
        t_.allocated_bytes += bytes;
        lifo_.push_back({ptr, bytes, k});
    }

    void free_top()
    {
        if (lifo_.empty()) {
            if (!quiet_)
                std::fprintf(stderr, "gpuledger-cudasim: 'free' with nothing allocated, skipped\n");
            return;
        }
        Alloc a = lifo_.back();
        lifo_.pop_back();
        bool ok = false;
        switch (a.kind) {
        case Kind::Device:
        case Kind::Managed:
        case Kind::Pitch: ok = call("cuMemFree_v2", cuMemFree_v2(a.ptr)); break;
        case Kind::Async:
        case Kind::Pool: ok = call("cuMemFreeAsync", cuMemFreeAsync(a.ptr, stream_)); break;
        case Kind::AsyncPtsz:
            ok = call("cuMemFreeAsync_ptsz", cuMemFreeAsync_ptsz(a.ptr, stream_));
            break;
        case Kind::Handle: ok = call("cuMemRelease", cuMemRelease(a.ptr)); break;
        case Kind::Legacy:
            ok = call("cuMemFree", cuMemFree(static_cast<CUdeviceptr_v1>(a.ptr)));
            break;
        case Kind::Array:
            ok = call("cuArrayDestroy", cuArrayDestroy(reinterpret_cast<CUarray>(a.ptr)));
            break;
        case Kind::Mipmap:
            ok = call("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy(reinterpret_cast<CUmipmappedArray>(a.ptr)));
            break;
        }
        if (ok) {
            ++t_.frees;
            t_.freed_bytes += a.bytes;
        }
    }

    // Most recent device pointer (not a cuMemCreate handle); allocates one
    // with cuMemAlloc_v2 (or cuMemAlloc for legacy) if there is none.
    unsigned long long device_ptr(unsigned long long bytes, bool legacy, size_t skip = 0)
    {
        size_t seen = 0;
        for (auto it = lifo_.rbegin(); it != lifo_.rend(); ++it) {
            if (it->kind == Kind::Handle || it->kind == Kind::Array || it->kind == Kind::Mipmap ||
                (legacy && it->kind != Kind::Legacy))
                continue;
            if (seen++ == skip)
                return it->ptr;
        }
        if (skip)
            return device_ptr(bytes, legacy, 0);
        unsigned long long size = bytes ? bytes : 1;
        if (legacy) {
            CUdeviceptr_v1 p = 0;
            if (call("cuMemAlloc", cuMemAlloc(&p, static_cast<unsigned>(size)))) {
                record_alloc(p, size, Kind::Legacy);
                return p;
            }
            return 0;
        }
        CUdeviceptr p = 0;
        if (call("cuMemAlloc_v2", cuMemAlloc_v2(&p, size))) {
            record_alloc(p, size, Kind::Device);
            return p;
        }
        return 0;
    }

    void copied(const char *dir, unsigned long long bytes, bool ok)
    {
        if (!ok)
            return;
        t_.memcpy_bytes[dir] += bytes;
        ++t_.memcpy_count[dir];
    }

    void ensure_function()
    {
        if (fn_tried_)
            return;
        fn_tried_ = true;
        static const char image[] = "// gpuledger-cudasim fake PTX image\n";
        if (call("cuModuleLoadData", cuModuleLoadData(&module_, image)))
            call("cuModuleGetFunction",
                 cuModuleGetFunction(&fn_, module_, "gpuledger_sim_kernel"));
    }

    void launch(const Op &op, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz)
    {
        ensure_function();
        bool ptsz = op.flags.count("ptsz"), ex = op.flags.count("ex");
        bool ok;
        if (ex) {
            CUlaunchConfig cfg{};
            cfg.gridDimX = gx;
            cfg.gridDimY = gy;
            cfg.gridDimZ = gz;
            cfg.blockDimX = bx;
            cfg.blockDimY = by;
            cfg.blockDimZ = bz;
            cfg.sharedMemBytes = 0;
            cfg.hStream = stream_;
            cfg.attrs = nullptr;
            cfg.numAttrs = 0;
            ok = ptsz ? call("cuLaunchKernelEx_ptsz", cuLaunchKernelEx_ptsz(&cfg, fn_, nullptr, nullptr))
                      : call("cuLaunchKernelEx", cuLaunchKernelEx(&cfg, fn_, nullptr, nullptr));
        } else {
            ok = ptsz ? call("cuLaunchKernel_ptsz",
                             cuLaunchKernel_ptsz(fn_, gx, gy, gz, bx, by, bz, 0, stream_, nullptr,
                                                 nullptr))
                      : call("cuLaunchKernel", cuLaunchKernel(fn_, gx, gy, gz, bx, by, bz, 0,
                                                              stream_, nullptr, nullptr));
        }
        if (ok) {
            ++t_.launches;
            t_.launched_threads += static_cast<unsigned long long>(gx) * gy * gz * bx * by * bz;
        }
    }

    // ---- the families of cudasim_families.c
    // The most recent array (an Array of at least `bytes`, or any when 0);
    // makes one (cuArrayCreate_v2, floats) when none is held.
    CUarray array_for(unsigned long long bytes)
    {
        for (auto it = lifo_.rbegin(); it != lifo_.rend(); ++it)
            if (it->kind == Kind::Array && it->bytes >= bytes)
                return reinterpret_cast<CUarray>(it->ptr);
        CUDA_ARRAY_DESCRIPTOR d{};
        d.Width = bytes / 4 + 1;
        d.Height = 1;
        d.Format = CU_AD_FORMAT_FLOAT;
        d.NumChannels = 1;
        CUarray a = nullptr;
        if (call("cuArrayCreate_v2", cuArrayCreate_v2(&a, &d)))
            record_alloc(reinterpret_cast<uintptr_t>(a), d.Width * 4, Kind::Array);
        return a;
    }

    // Where a 2D/3D copy's side points: host memory, a device pointer, an array.
    struct Side {
        CUmemorytype type;
        const char *name;
    };
    static Side side(const Op &op, const char *prefix, CUmemorytype dflt)
    {
        static const std::pair<const char *, CUmemorytype> kinds[] = {{"host", CU_MEMORYTYPE_HOST},
                                                                      {"device", CU_MEMORYTYPE_DEVICE},
                                                                      {"array", CU_MEMORYTYPE_ARRAY},
                                                                      {"unified", CU_MEMORYTYPE_UNIFIED}};
        for (const auto &[name, type] : kinds)
            if (op.flags.count(std::string(prefix) + name))
                return {type, name};
        return {dflt, dflt == CU_MEMORYTYPE_HOST ? "host" : "device"};
    }
    static const char *direction(CUmemorytype src, CUmemorytype dst)
    {
        auto dev = [](CUmemorytype t) { return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY; };
        if (src == CU_MEMORYTYPE_HOST && dev(dst))
            return "htod";
        if (dev(src) && dst == CU_MEMORYTYPE_HOST)
            return "dtoh";
        if (dev(src) && dev(dst))
            return "dtod";
        return "unknown";
    }

    // Fills one side of a copy descriptor (any of the CUDA_MEMCPY* structs).
    template <typename Copy, typename Ptr>
    void fill_side(Copy &c, bool src, CUmemorytype type, unsigned long long bytes)
    {
        unsigned long long dev = type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED
                                     ? device_ptr(bytes, sizeof(Ptr) == 4, src ? 1 : 0)
                                     : 0;
        CUarray arr = type == CU_MEMORYTYPE_ARRAY ? array_for(0) : nullptr;
        if (src) {
            c.srcMemoryType = type;
            c.srcHost = host_;
            c.srcDevice = static_cast<Ptr>(dev);
            c.srcArray = arr;
        } else {
            c.dstMemoryType = type;
            c.dstHost = host_;
            c.dstDevice = static_cast<Ptr>(dev);
            c.dstArray = arr;
        }
    }

    void copy2d(const Op &op, unsigned long long w, unsigned long long h)
    {
        Side from = side(op, "from-", CU_MEMORYTYPE_HOST), to = side(op, "to-", CU_MEMORYTYPE_DEVICE);
        const bool async = op.flags.count("async"), ptds = op.flags.count("ptds"), unaligned = op.flags.count("unaligned");
        bool ok;
        if (op.flags.count("legacy")) {
            CUDA_MEMCPY2D_v1 c{};
            fill_side<CUDA_MEMCPY2D_v1, CUdeviceptr_v1>(c, true, from.type, w * h);
            fill_side<CUDA_MEMCPY2D_v1, CUdeviceptr_v1>(c, false, to.type, w * h);
            c.WidthInBytes = static_cast<unsigned>(w), c.Height = static_cast<unsigned>(h);
            ok = unaligned ? call("cuMemcpy2DUnaligned", cuMemcpy2DUnaligned(&c))
                 : async   ? call("cuMemcpy2DAsync", cuMemcpy2DAsync(&c, stream_))
                           : call("cuMemcpy2D", cuMemcpy2D(&c));
        } else {
            CUDA_MEMCPY2D c{};
            fill_side<CUDA_MEMCPY2D, CUdeviceptr>(c, true, from.type, w * h);
            fill_side<CUDA_MEMCPY2D, CUdeviceptr>(c, false, to.type, w * h);
            c.WidthInBytes = w, c.Height = h;
            if (unaligned)
                ok = ptds ? call("cuMemcpy2DUnaligned_v2_ptds", cuMemcpy2DUnaligned_v2_ptds(&c))
                          : call("cuMemcpy2DUnaligned_v2", cuMemcpy2DUnaligned_v2(&c));
            else if (async)
                ok = ptds ? call("cuMemcpy2DAsync_v2_ptsz", cuMemcpy2DAsync_v2_ptsz(&c, stream_))
                          : call("cuMemcpy2DAsync_v2", cuMemcpy2DAsync_v2(&c, stream_));
            else
                ok = ptds ? call("cuMemcpy2D_v2_ptds", cuMemcpy2D_v2_ptds(&c)) : call("cuMemcpy2D_v2", cuMemcpy2D_v2(&c));
        }
        copied(direction(from.type, to.type), w * h, ok);
    }

    void copy3d(const Op &op, unsigned long long w, unsigned long long h, unsigned long long d)
    {
        Side from = side(op, "from-", CU_MEMORYTYPE_HOST), to = side(op, "to-", CU_MEMORYTYPE_DEVICE);
        const bool async = op.flags.count("async"), ptds = op.flags.count("ptds");
        bool ok;
        if (op.flags.count("legacy")) {
            CUDA_MEMCPY3D_v1 c{};
            fill_side<CUDA_MEMCPY3D_v1, CUdeviceptr_v1>(c, true, from.type, w * h * d);
            fill_side<CUDA_MEMCPY3D_v1, CUdeviceptr_v1>(c, false, to.type, w * h * d);
            c.WidthInBytes = static_cast<unsigned>(w), c.Height = static_cast<unsigned>(h),
            c.Depth = static_cast<unsigned>(d);
            ok = async ? call("cuMemcpy3DAsync", cuMemcpy3DAsync(&c, stream_)) : call("cuMemcpy3D", cuMemcpy3D(&c));
        } else {
            CUDA_MEMCPY3D c{};
            fill_side<CUDA_MEMCPY3D, CUdeviceptr>(c, true, from.type, w * h * d);
            fill_side<CUDA_MEMCPY3D, CUdeviceptr>(c, false, to.type, w * h * d);
            c.WidthInBytes = w, c.Height = h, c.Depth = d;
            if (async)
                ok = ptds ? call("cuMemcpy3DAsync_v2_ptsz", cuMemcpy3DAsync_v2_ptsz(&c, stream_))
                          : call("cuMemcpy3DAsync_v2", cuMemcpy3DAsync_v2(&c, stream_));
            else
                ok = ptds ? call("cuMemcpy3D_v2_ptds", cuMemcpy3D_v2_ptds(&c)) : call("cuMemcpy3D_v2", cuMemcpy3D_v2(&c));
        }
        copied(direction(from.type, to.type), w * h * d, ok);
    }

    void copy3d_peer(const Op &op, unsigned long long w, unsigned long long h, unsigned long long d)
    {
        CUDA_MEMCPY3D_PEER c{};
        fill_side<CUDA_MEMCPY3D_PEER, CUdeviceptr>(c, true, CU_MEMORYTYPE_DEVICE, w * h * d);
        fill_side<CUDA_MEMCPY3D_PEER, CUdeviceptr>(c, false, CU_MEMORYTYPE_DEVICE, w * h * d);
        c.srcContext = ctx_, c.dstContext = ctx_;
        c.WidthInBytes = w, c.Height = h, c.Depth = d;
        const bool async = op.flags.count("async"), ptds = op.flags.count("ptds");
        bool ok = async ? (ptds ? call("cuMemcpy3DPeerAsync_ptsz", cuMemcpy3DPeerAsync_ptsz(&c, stream_))
                                : call("cuMemcpy3DPeerAsync", cuMemcpy3DPeerAsync(&c, stream_)))
                        : (ptds ? call("cuMemcpy3DPeer_ptds", cuMemcpy3DPeer_ptds(&c))
                                : call("cuMemcpy3DPeer", cuMemcpy3DPeer(&c)));
        copied("peer", w * h * d, ok);
    }

    void array_create(const Op &op, unsigned long long w, unsigned long long h, unsigned long long d, bool three_d)
    {
        const bool legacy = op.flags.count("legacy");
        CUarray a = nullptr;
        bool ok;
        if (!three_d) {
            if (legacy) {
                CUDA_ARRAY_DESCRIPTOR_v1 desc{static_cast<unsigned>(w), static_cast<unsigned>(h), CU_AD_FORMAT_FLOAT, 1};
                ok = call("cuArrayCreate", cuArrayCreate(&a, &desc));
            } else {
                CUDA_ARRAY_DESCRIPTOR desc{w, h, CU_AD_FORMAT_FLOAT, 1};
                ok = call("cuArrayCreate_v2", cuArrayCreate_v2(&a, &desc));
            }
        } else if (legacy) {
            CUDA_ARRAY3D_DESCRIPTOR_v1 desc{static_cast<unsigned>(w), static_cast<unsigned>(h),
                                            static_cast<unsigned>(d), CU_AD_FORMAT_FLOAT, 1, 0};
            ok = call("cuArray3DCreate", cuArray3DCreate(&a, &desc));
        } else {
            CUDA_ARRAY3D_DESCRIPTOR desc{w, h, d, CU_AD_FORMAT_FLOAT, 1, 0};
            ok = call("cuArray3DCreate_v2", cuArray3DCreate_v2(&a, &desc));
        }
        if (ok)
            record_alloc(reinterpret_cast<uintptr_t>(a), 4 * w * (h ? h : 1) * (d ? d : 1), Kind::Array);
    }

    void mipmap_create(unsigned long long w, unsigned long long h, unsigned long long d, unsigned levels)
    {
        CUDA_ARRAY3D_DESCRIPTOR desc{w, h, d, CU_AD_FORMAT_FLOAT, 1, 0};
        CUmipmappedArray m = nullptr;
        if (!call("cuMipmappedArrayCreate", cuMipmappedArrayCreate(&m, &desc, levels)))
            return;
        unsigned long long bytes = 0;
        auto one = [](unsigned long long v) { return v ? v : 1ULL; };
        h = one(h), d = one(d);
        for (unsigned l = 0; l < levels; ++l) {
            bytes += 4 * w * h * d;
            w = one(w >> 1), h = one(h >> 1), d = one(d >> 1);
        }
        record_alloc(reinterpret_cast<uintptr_t>(m), bytes, Kind::Mipmap);
    }

    void array_copy(const Op &op, unsigned long long bytes)
    {
        const std::string &n = op.name;
        const bool async = op.flags.count("async"), ptds = op.flags.count("ptds"), legacy = op.flags.count("legacy");
        CUarray a = array_for(bytes);
        bool ok = false;
        const char *dir = "dtod";
        const unsigned b32 = static_cast<unsigned>(bytes);
        if (n == "htoa") {
            dir = "htod";
            if (legacy)
                ok = async ? call("cuMemcpyHtoAAsync", cuMemcpyHtoAAsync(a, 0, host_, b32, stream_))
                           : call("cuMemcpyHtoA", cuMemcpyHtoA(a, 0, host_, b32));
            else if (async)
                ok = ptds ? call("cuMemcpyHtoAAsync_v2_ptsz", cuMemcpyHtoAAsync_v2_ptsz(a, 0, host_, bytes, stream_))
                          : call("cuMemcpyHtoAAsync_v2", cuMemcpyHtoAAsync_v2(a, 0, host_, bytes, stream_));
            else
                ok = ptds ? call("cuMemcpyHtoA_v2_ptds", cuMemcpyHtoA_v2_ptds(a, 0, host_, bytes))
                          : call("cuMemcpyHtoA_v2", cuMemcpyHtoA_v2(a, 0, host_, bytes));
        } else if (n == "atoh") {
            dir = "dtoh";
            if (legacy)
                ok = async ? call("cuMemcpyAtoHAsync", cuMemcpyAtoHAsync(host_, a, 0, b32, stream_))
                           : call("cuMemcpyAtoH", cuMemcpyAtoH(host_, a, 0, b32));
            else if (async)
                ok = ptds ? call("cuMemcpyAtoHAsync_v2_ptsz", cuMemcpyAtoHAsync_v2_ptsz(host_, a, 0, bytes, stream_))
                          : call("cuMemcpyAtoHAsync_v2", cuMemcpyAtoHAsync_v2(host_, a, 0, bytes, stream_));
            else
                ok = ptds ? call("cuMemcpyAtoH_v2_ptds", cuMemcpyAtoH_v2_ptds(host_, a, 0, bytes))
                          : call("cuMemcpyAtoH_v2", cuMemcpyAtoH_v2(host_, a, 0, bytes));
        } else if (n == "atod") {
            unsigned long long d = device_ptr(bytes, legacy);
            ok = legacy ? call("cuMemcpyAtoD", cuMemcpyAtoD(static_cast<CUdeviceptr_v1>(d), a, 0, b32))
                 : ptds ? call("cuMemcpyAtoD_v2_ptds", cuMemcpyAtoD_v2_ptds(d, a, 0, bytes))
                        : call("cuMemcpyAtoD_v2", cuMemcpyAtoD_v2(d, a, 0, bytes));
        } else if (n == "dtoa") {
            unsigned long long d = device_ptr(bytes, legacy);
            ok = legacy ? call("cuMemcpyDtoA", cuMemcpyDtoA(a, 0, static_cast<CUdeviceptr_v1>(d), b32))
                 : ptds ? call("cuMemcpyDtoA_v2_ptds", cuMemcpyDtoA_v2_ptds(a, 0, d, bytes))
                        : call("cuMemcpyDtoA_v2", cuMemcpyDtoA_v2(a, 0, d, bytes));
        } else {
            ok = legacy ? call("cuMemcpyAtoA", cuMemcpyAtoA(a, 0, a, 0, b32))
                 : ptds ? call("cuMemcpyAtoA_v2_ptds", cuMemcpyAtoA_v2_ptds(a, 0, a, 0, bytes))
                        : call("cuMemcpyAtoA_v2", cuMemcpyAtoA_v2(a, 0, a, 0, bytes));
        }
        copied(dir, bytes, ok);
    }

    // One memset through the form the flags name; `elem` bytes per element.
    template <typename V, typename F1, typename F2, typename F3, typename F4, typename F5>
    bool memset_1d(const Op &op, unsigned long long dptr, unsigned long long n, const char *const names[5], F1 v1,
                   F2 v2, F3 v2ptds, F4 async, F5 async_ptsz)
    {
        if (op.flags.count("legacy"))
            return call(names[0], v1(static_cast<CUdeviceptr_v1>(dptr), V{0}, static_cast<unsigned>(n)));
        if (op.flags.count("async"))
            return op.flags.count("ptds") ? call(names[4], async_ptsz(dptr, V{0}, n, stream_))
                                          : call(names[3], async(dptr, V{0}, n, stream_));
        return op.flags.count("ptds") ? call(names[2], v2ptds(dptr, V{0}, n)) : call(names[1], v2(dptr, V{0}, n));
    }
    template <typename V, typename F1, typename F2, typename F3, typename F4, typename F5>
    bool memset_2d(const Op &op, unsigned long long dptr, unsigned long long w, unsigned long long h,
                   const char *const names[5], F1 v1, F2 v2, F3 v2ptds, F4 async, F5 async_ptsz)
    {
        if (op.flags.count("legacy"))
            return call(names[0], v1(static_cast<CUdeviceptr_v1>(dptr), static_cast<unsigned>(w), V{0},
                                     static_cast<unsigned>(w), static_cast<unsigned>(h)));
        if (op.flags.count("async"))
            return op.flags.count("ptds") ? call(names[4], async_ptsz(dptr, w, V{0}, w, h, stream_))
                                          : call(names[3], async(dptr, w, V{0}, w, h, stream_));
        return op.flags.count("ptds") ? call(names[2], v2ptds(dptr, w, V{0}, w, h)) : call(names[1], v2(dptr, w, V{0}, w, h));
    }

    void set_memory(const Op &op, unsigned long long w, unsigned long long h, bool two_d)
    {
        const unsigned elem = op.flags.count("d32") ? 4 : op.flags.count("d16") ? 2 : 1;
        const unsigned long long bytes = w * (two_d ? h : 1) * elem;
        unsigned long long d = device_ptr(bytes, op.flags.count("legacy"));
        bool ok;
#define FORMS(b) #b, #b "_v2", #b "_v2_ptds", #b "Async", #b "Async_ptsz"
#define FNS(b) b, b##_v2, b##_v2_ptds, b##Async, b##Async_ptsz
        if (!two_d) {
            static const char *const n8[5] = {FORMS(cuMemsetD8)}, *const n16[5] = {FORMS(cuMemsetD16)},
                                     *const n32[5] = {FORMS(cuMemsetD32)};
            ok = elem == 1   ? memset_1d<unsigned char>(op, d, w, n8, FNS(cuMemsetD8))
                 : elem == 2 ? memset_1d<unsigned short>(op, d, w, n16, FNS(cuMemsetD16))
                             : memset_1d<unsigned int>(op, d, w, n32, FNS(cuMemsetD32));
        } else {
            static const char *const n8[5] = {FORMS(cuMemsetD2D8)}, *const n16[5] = {FORMS(cuMemsetD2D16)},
                                     *const n32[5] = {FORMS(cuMemsetD2D32)};
            ok = elem == 1   ? memset_2d<unsigned char>(op, d, w, h, n8, FNS(cuMemsetD2D8))
                 : elem == 2 ? memset_2d<unsigned short>(op, d, w, h, n16, FNS(cuMemsetD2D16))
                             : memset_2d<unsigned int>(op, d, w, h, n32, FNS(cuMemsetD2D32));
        }
#undef FORMS
#undef FNS
        if (ok) {
            ++t_.memsets;
            t_.memset_bytes += bytes;
        }
    }

    void launch_legacy(const Op &op, const std::vector<unsigned long long> &a)
    {
        ensure_function();
        if (!call("cuFuncSetBlockShape", cuFuncSetBlockShape(fn_, static_cast<int>(a[2]), static_cast<int>(a[3]),
                                                             static_cast<int>(a[4]))))
            return;
        const int gw = static_cast<int>(a[0]), gh = static_cast<int>(a[1]);
        bool plain = op.flags.count("plain");
        bool ok = plain ? call("cuLaunch", cuLaunch(fn_))
                  : op.flags.count("async") ? call("cuLaunchGridAsync", cuLaunchGridAsync(fn_, gw, gh, stream_))
                                            : call("cuLaunchGrid", cuLaunchGrid(fn_, gw, gh));
        if (ok) {
            ++t_.launches;
            t_.launched_threads += (plain ? 1ULL : a[0] * a[1]) * a[2] * a[3] * a[4];
        }
    }

    void launch_multi(const std::vector<unsigned long long> &a)
    {
        ensure_function();
        std::vector<CUDA_LAUNCH_PARAMS> list(a[0]);
        for (auto &p : list) {
            p = CUDA_LAUNCH_PARAMS{};
            p.function = fn_;
            p.gridDimX = static_cast<unsigned>(a[1]), p.gridDimY = static_cast<unsigned>(a[2]);
            p.gridDimZ = static_cast<unsigned>(a[3]), p.blockDimX = static_cast<unsigned>(a[4]);
            p.blockDimY = static_cast<unsigned>(a[5]), p.blockDimZ = static_cast<unsigned>(a[6]);
            p.hStream = stream_;
        }
        if (call("cuLaunchCooperativeKernelMultiDevice",
                 cuLaunchCooperativeKernelMultiDevice(list.data(), static_cast<unsigned>(a[0]), 0))) {
            t_.launches += a[0];
            t_.launched_threads += a[0] * a[1] * a[2] * a[3] * a[4] * a[5] * a[6];
        }
    }

    // Polls until `query` reports completion (CUDA_ERROR_NOT_READY is not a failure).
    template <typename Query>
    void poll(const char *entry, Query query)
    {
        for (;;) {
            CUresult r = query();
            if (r == CUDA_ERROR_NOT_READY) {
                std::this_thread::sleep_for(std::chrono::microseconds(100));
                continue;
            }
            call(entry, r);
            return;
        }
    }

    void exec(const Op &op)
    {
        const std::string &n = op.name;
        const auto &a = op.args;
        const bool async = op.flags.count("async"), ptds = op.flags.count("ptds"),
                   ptsz = op.flags.count("ptsz");
        if (n == "init") {
            ensure_init();
        } else if (n == "alloc") {
            CUdeviceptr p = 0;
            if (call("cuMemAlloc_v2", cuMemAlloc_v2(&p, a[0])))
                record_alloc(p, a[0], Kind::Device);
        } else if (n == "alloc-managed") {
            CUdeviceptr p = 0;
            if (call("cuMemAllocManaged", cuMemAllocManaged(&p, a[0], CU_MEM_ATTACH_GLOBAL)))
                record_alloc(p, a[0], Kind::Managed);
        } else if (n == "alloc-async") {
            CUdeviceptr p = 0;
            if (ptsz) {
                if (call("cuMemAllocAsync_ptsz", cuMemAllocAsync_ptsz(&p, a[0], stream_)))
                    record_alloc(p, a[0], Kind::AsyncPtsz);
            } else if (call("cuMemAllocAsync", cuMemAllocAsync(&p, a[0], stream_))) {
                record_alloc(p, a[0], Kind::Async);
            }
        } else if (n == "alloc-pool") {
            if (!pool_tried_) {
                pool_tried_ = true;
                call("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool(&pool_, dev_));
            }
            CUdeviceptr p = 0;
            if (call("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync(&p, a[0], pool_, stream_)))
                record_alloc(p, a[0], Kind::Pool);
        } else if (n == "alloc-pitch") {
            CUdeviceptr p = 0;
            size_t pitch = 0;
            if (call("cuMemAllocPitch_v2", cuMemAllocPitch_v2(&p, &pitch, a[0], a[1], 4)))
                record_alloc(p, static_cast<unsigned long long>(pitch) * a[1], Kind::Pitch);
        } else if (n == "alloc-legacy") {
            CUdeviceptr_v1 p = 0;
            if (call("cuMemAlloc", cuMemAlloc(&p, static_cast<unsigned>(a[0]))))
                record_alloc(p, a[0], Kind::Legacy);
        } else if (n == "mem-create") {
            CUmemAllocationProp prop{};
            prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
            prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
            prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
            prop.location.id = dev_;
            CUmemGenericAllocationHandle h = 0;
            if (call("cuMemCreate", cuMemCreate(&h, a[0], &prop, 0)))
                record_alloc(h, a[0], Kind::Handle);
        } else if (n == "free") {
            free_top();
        } else if (n == "free-all") {
            while (!lifo_.empty())
                free_top();
        } else if (n == "free-invalid") {
            call("cuMemFree_v2", cuMemFree_v2(0xdeadbeef000ULL));
        } else if (n == "htod") {
            if (op.flags.count("legacy")) {
                unsigned long long d = device_ptr(a[0], true);
                copied("htod", a[0],
                       call("cuMemcpyHtoD", cuMemcpyHtoD(static_cast<CUdeviceptr_v1>(d), host_,
                                                         static_cast<unsigned>(a[0]))));
                return;
            }
            unsigned long long d = device_ptr(a[0], false);
            bool ok;
            if (async)
                ok = ptds ? call("cuMemcpyHtoDAsync_v2_ptsz",
                                 cuMemcpyHtoDAsync_v2_ptsz(d, host_, a[0], stream_))
                          : call("cuMemcpyHtoDAsync_v2", cuMemcpyHtoDAsync_v2(d, host_, a[0], stream_));
            else
                ok = ptds ? call("cuMemcpyHtoD_v2_ptds", cuMemcpyHtoD_v2_ptds(d, host_, a[0]))
                          : call("cuMemcpyHtoD_v2", cuMemcpyHtoD_v2(d, host_, a[0]));
            copied("htod", a[0], ok);
        } else if (n == "dtoh") {
            unsigned long long s = device_ptr(a[0], false);
            bool ok;
            if (async)
                ok = ptds ? call("cuMemcpyDtoHAsync_v2_ptsz",
                                 cuMemcpyDtoHAsync_v2_ptsz(host_, s, a[0], stream_))
                          : call("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync_v2(host_, s, a[0], stream_));
            else
                ok = ptds ? call("cuMemcpyDtoH_v2_ptds", cuMemcpyDtoH_v2_ptds(host_, s, a[0]))
                          : call("cuMemcpyDtoH_v2", cuMemcpyDtoH_v2(host_, s, a[0]));
            copied("dtoh", a[0], ok);
        } else if (n == "dtod") {
            unsigned long long d = device_ptr(a[0], false), s = device_ptr(a[0], false, 1);
            bool ok;
            if (async)
                ok = ptds ? call("cuMemcpyDtoDAsync_v2_ptsz",
                                 cuMemcpyDtoDAsync_v2_ptsz(d, s, a[0], stream_))
                          : call("cuMemcpyDtoDAsync_v2", cuMemcpyDtoDAsync_v2(d, s, a[0], stream_));
            else
                ok = ptds ? call("cuMemcpyDtoD_v2_ptds", cuMemcpyDtoD_v2_ptds(d, s, a[0]))
                          : call("cuMemcpyDtoD_v2", cuMemcpyDtoD_v2(d, s, a[0]));
            copied("dtod", a[0], ok);
        } else if (n == "memcpy") {
            unsigned long long d = device_ptr(a[0], false), s = device_ptr(a[0], false, 1);
            copied("unknown", a[0],
                   ptds ? call("cuMemcpy_ptds", cuMemcpy_ptds(d, s, a[0]))
                        : call("cuMemcpy", cuMemcpy(d, s, a[0])));
        } else if (n == "memcpy-async") {
            unsigned long long d = device_ptr(a[0], false), s = device_ptr(a[0], false, 1);
            copied("unknown", a[0],
                   ptsz ? call("cuMemcpyAsync_ptsz", cuMemcpyAsync_ptsz(d, s, a[0], stream_))
                        : call("cuMemcpyAsync", cuMemcpyAsync(d, s, a[0], stream_)));
        } else if (n == "peer") {
            unsigned long long d = device_ptr(a[0], false), s = device_ptr(a[0], false, 1);
            copied("peer", a[0],
                   ptds ? call("cuMemcpyPeer_ptds", cuMemcpyPeer_ptds(d, ctx_, s, ctx_, a[0]))
                        : call("cuMemcpyPeer", cuMemcpyPeer(d, ctx_, s, ctx_, a[0])));
        } else if (n == "peer-async") {
            unsigned long long d = device_ptr(a[0], false), s = device_ptr(a[0], false, 1);
            copied("peer", a[0],
                   ptsz ? call("cuMemcpyPeerAsync_ptsz",
                               cuMemcpyPeerAsync_ptsz(d, ctx_, s, ctx_, a[0], stream_))
                        : call("cuMemcpyPeerAsync",
                               cuMemcpyPeerAsync(d, ctx_, s, ctx_, a[0], stream_)));
        } else if (n == "launch") {
            launch(op, static_cast<unsigned>(a[0]), static_cast<unsigned>(a[1]),
                   static_cast<unsigned>(a[2]), static_cast<unsigned>(a[3]),
                   static_cast<unsigned>(a[4]), static_cast<unsigned>(a[5]));
        } else if (n == "launch-invalid") {
            launch(op, 0, 1, 1, 1, 1, 1);
        } else if (n == "graph" || n == "graph-ptsz") {
            auto exec = reinterpret_cast<CUgraphExec>(static_cast<uintptr_t>(0x6a7e0000));
            bool ok = n == "graph" ? call("cuGraphLaunch", cuGraphLaunch(exec, stream_))
                                   : call("cuGraphLaunch_ptsz", cuGraphLaunch_ptsz(exec, stream_));
            if (ok)
                ++t_.graph_launches;
        } else if (n == "sync") {
            if (call("cuStreamSynchronize", cuStreamSynchronize(stream_)))
                ++t_.syncs;
        } else if (n == "sync-ptsz") {
            if (call("cuStreamSynchronize_ptsz", cuStreamSynchronize_ptsz(stream_)))
                ++t_.syncs;
        } else if (n == "device") {
            // Like cudaSetDevice: the device's primary context becomes current.
            CUdevice d = 0;
            if (!call("cuDeviceGet", cuDeviceGet(&d, static_cast<int>(a[0]))))
                return;
            if (!call("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx_, d)))
                return;
            if (call("cuCtxSetCurrent", cuCtxSetCurrent(ctx_)))
                call("cuStreamCreate", cuStreamCreate(&stream_, 0));
        } else if (n == "ctx-create") {
            // A context of its own, pushed on this thread's stack.
            CUdevice d = 0;
            CUcontext c = nullptr;
            if (!call("cuDeviceGet", cuDeviceGet(&d, static_cast<int>(a[0]))))
                return;
            if (call("cuCtxCreate_v2", cuCtxCreate_v2(&c, 0, d)))
                call("cuStreamCreate", cuStreamCreate(&stream_, 0));
        } else if (n == "ctx-pop") {
            CUcontext c = nullptr;
            call("cuCtxPopCurrent_v2", cuCtxPopCurrent_v2(&c));
        } else if (n == "sync-ctx") {
            if (call("cuCtxSynchronize", cuCtxSynchronize()))
                ++t_.syncs;
        } else if (n == "sync-thread" || n == "sync-ctx-thread") {
            // A framework's pattern: launch on one thread, wait on another.
            CUresult set = CUDA_SUCCESS, r = CUDA_SUCCESS;
            std::thread waiter([&] {
                set = cuCtxSetCurrent(ctx_);
                if (set == CUDA_SUCCESS)
                    r = n == "sync-thread" ? cuStreamSynchronize(stream_) : cuCtxSynchronize();
            });
            waiter.join();
            call("cuCtxSetCurrent", set);
            if (set == CUDA_SUCCESS &&
                call(n == "sync-thread" ? "cuStreamSynchronize" : "cuCtxSynchronize", r))
                ++t_.syncs;
        } else if (n == "stream") {
            if (streams_.empty())
                streams_[0] = stream_;
            auto it = streams_.find(static_cast<unsigned>(a[0]));
            if (it == streams_.end()) {
                CUstream s = nullptr;
                if (!call("cuStreamCreate", cuStreamCreate(&s, 0)))
                    return;
                it = streams_.emplace(static_cast<unsigned>(a[0]), s).first;
            }
            stream_ = it->second;
        } else if (n == "sync-event") {
            CUevent ev = nullptr;
            if (!call("cuEventCreate", cuEventCreate(&ev, 0)))
                return;
            if (ptsz)
                call("cuEventRecord_ptsz", cuEventRecord_ptsz(ev, stream_));
            else
                call("cuEventRecord", cuEventRecord(ev, stream_));
            if (call("cuEventSynchronize", cuEventSynchronize(ev)))
                ++t_.syncs;
            call("cuEventDestroy_v2", cuEventDestroy_v2(ev));
        } else if (n == "copy2d") {
            copy2d(op, a[0], a[1]);
        } else if (n == "copy3d") {
            copy3d(op, a[0], a[1], a[2]);
        } else if (n == "copy3d-peer") {
            copy3d_peer(op, a[0], a[1], a[2]);
        } else if (n == "array-create") {
            array_create(op, a[0], a[1], 1, false);
        } else if (n == "array3d-create") {
            array_create(op, a[0], a[1], a[2], true);
        } else if (n == "mipmap-create") {
            mipmap_create(a[0], a[1], a[2], static_cast<unsigned>(a[3]));
        } else if (n == "htoa" || n == "atoh" || n == "atod" || n == "dtoa" || n == "atoa") {
            array_copy(op, a[0]);
        } else if (n == "memset") {
            set_memory(op, a[0], 1, false);
        } else if (n == "memset2d") {
            set_memory(op, a[0], a[1], true);
        } else if (n == "launch-legacy") {
            launch_legacy(op, a);
        } else if (n == "launch-multi") {
            launch_multi(a);
        } else if (n == "query") {
            if (ptsz)
                poll("cuStreamQuery_ptsz", [&] { return cuStreamQuery_ptsz(stream_); });
            else
                poll("cuStreamQuery", [&] { return cuStreamQuery(stream_); });
        } else if (n == "event-query") {
            CUevent ev = nullptr;
            if (!call("cuEventCreate", cuEventCreate(&ev, 0)))
                return;
            call("cuEventRecord", cuEventRecord(ev, stream_));
            poll("cuEventQuery", [&] { return cuEventQuery(ev); });
            call("cuEventDestroy_v2", cuEventDestroy_v2(ev));
        } else if (n == "export-table") {
            CUuuid id;
            for (int i = 0; i < 16; ++i)
                id.bytes[i] = static_cast<char>(i);
            const void *table = nullptr;
            call("cuGetExportTable", cuGetExportTable(&table, &id));
            ++t_.export_tables["00010203-0405-0607-0809-0a0b0c0d0e0f"];
        } else if (n == "export-tables") {
            CUuuid id;
            std::memset(id.bytes, 0xee, sizeof id.bytes);
            const void *table = nullptr;
            for (unsigned long long i = 0; i < a[0]; ++i) {
                std::memcpy(id.bytes, &i, sizeof i);
                call("cuGetExportTable", cuGetExportTable(&table, &id));
            }
        } else if (n == "wait-stdin") {
            std::string line;
            std::getline(std::cin, line);
        } else if (n == "print-ready") {
            std::printf("READY %d\n", static_cast<int>(getpid()));
            std::fflush(stdout);
        } else if (n == "sleep-ms") {
            std::this_thread::sleep_for(std::chrono::milliseconds(a[0]));
        } else if (n == "exit") {
            print_truth();
            std::fflush(stdout);
            std::fflush(stderr);
            _exit(static_cast<int>(a[0]));
        }
    }
};

void set_env_number(const char *name, const char *value, const char *opt)
{
    auto v = parse_number(value ? value : "");
    if (!v) {
        std::fprintf(stderr, "gpuledger-cudasim: %s needs a non-negative number\n", opt);
        std::exit(kExitUsage);
    }
    setenv(name, std::to_string(*v).c_str(), 1);
}

} // namespace

int main(int argc, char **argv)
{
    bool quiet = false;
    std::optional<std::string> script, file;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&](const char *opt) -> const char * {
            std::string prefix = std::string(opt) + "=";
            if (arg.rfind(prefix, 0) == 0)
                return argv[i] + prefix.size();
            if (i + 1 >= argc) {
                std::fprintf(stderr, "gpuledger-cudasim: %s needs a value\n", opt);
                std::exit(kExitUsage);
            }
            return argv[++i];
        };
        auto is = [&](const char *opt) {
            return arg == opt || arg.rfind(std::string(opt) + "=", 0) == 0;
        };
        if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--quiet" || arg == "-q") {
            quiet = true;
        } else if (is("--sync-us")) {
            set_env_number("CUDASIM_SYNC_US", value("--sync-us"), "--sync-us");
        } else if (is("--kernel-us")) {
            set_env_number("CUDASIM_KERNEL_US", value("--kernel-us"), "--kernel-us");
        } else if (is("--devices")) {
            set_env_number("CUDASIM_DEVICES", value("--devices"), "--devices");
        } else if (arg == "-f") {
            file = value("-f");
        } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
            std::fprintf(stderr, "gpuledger-cudasim: unknown option '%s'\n%s", arg.c_str(), kUsage);
            return kExitUsage;
        } else if (!script) {
            script = arg;
        } else {
            std::fprintf(stderr, "gpuledger-cudasim: more than one SCRIPT given (quote it)\n");
            return kExitUsage;
        }
    }
    if (file && script) {
        std::fprintf(stderr, "gpuledger-cudasim: give either SCRIPT or -f FILE, not both\n");
        return kExitUsage;
    }
    if (file) {
        std::stringstream buf;
        if (*file == "-") {
            buf << std::cin.rdbuf();
        } else {
            std::ifstream in(*file);
            if (!in) {
                std::fprintf(stderr, "gpuledger-cudasim: cannot read '%s'\n", file->c_str());
                return kExitUsage;
            }
            buf << in.rdbuf();
        }
        script = buf.str();
    }
    if (!script) {
        std::fprintf(stderr, "gpuledger-cudasim: no SCRIPT given\n%s", kUsage);
        return kExitUsage;
    }
    std::vector<Op> ops = parse_script(*script); // exits 64 on bad syntax
    Runner runner(quiet);
    runner.run(ops);
    runner.print_truth();
    return 0;
}
