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
  device N                      cuDeviceGet(N), cuDevicePrimaryCtxRetain, cuCtxSetCurrent
                                (what cudaSetDevice does), and a stream there
  ctx-create N                  cuCtxCreate_v2 on device N (pushed: now current)
  ctx-pop                       cuCtxPopCurrent_v2
  sync-event [ptsz]             cuEventCreate, cuEventRecord[_ptsz], cuEventSynchronize,
                                cuEventDestroy_v2
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
        {"sync-event", 0, {"ptsz"}, true},
        {"device", 1, {}, true},
        {"ctx-create", 1, {}, true},
        {"ctx-pop", 0, {}, true},
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
    if (op.name == "launch")
        for (unsigned long long a : op.args)
            if (a > UINT_MAX)
                syntax_error(text, "launch dimensions are 32-bit");
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
    std::map<std::string, unsigned long long> memcpy_bytes{
        {"htod", 0}, {"dtoh", 0}, {"dtod", 0}, {"peer", 0}, {"unknown", 0}};
    std::map<std::string, unsigned long long> memcpy_count = memcpy_bytes;
    std::map<std::string, unsigned long long> errors;
    std::map<std::string, unsigned long long> calls; // successful calls by entry point
};

enum class Kind { Device, Managed, Async, AsyncPtsz, Pool, Pitch, Legacy, Handle };

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
            if (it->kind == Kind::Handle || (legacy && it->kind != Kind::Legacy))
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
