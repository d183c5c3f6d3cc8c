#!/usr/bin/env python3
"""The GPU validation kit's steps (scripts/gpu-validate.sh runs each under `timeout`).

Every step writes one JSON file into --steps-dir: {"step", "title", "status":
pass|fail|error|skipped, "duration_s", "rows": [{"metric", "truth", "seen",
"bar", "ok"}], "notes": [...], "data": {...}}. `report` turns them into
results.json and results.md. Bars: "exact" and ">=99%" gate the step; "info"
rows are reported, never gating. Standard library only: the GPU machine has
Python but nothing may be installed there.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TRUTH_PREFIX = "GPULEDGER_TRUTH "


# ------------------------------------------------------------------ agent access
def http_get(url, timeout=3.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8", "replace")


def find_workload(doc, pid=None, cgroup=None):
    """The workload holding pid, or the one for cgroup (its path under the cgroup2 mount this
    script sees; the agent's may be longer where a cgroup namespace hides the start)."""
    for w in doc.get("workloads", []):
        if pid is not None and any(p.get("pid") == pid for p in w.get("processes", [])):
            return w
        if cgroup and any(path.rstrip("/").endswith(cgroup.rstrip("/")) for path in w.get("cgroup_paths", [])):
            return w
    return None


def flatten(counters):
    out = {}
    for k, v in (counters or {}).items():
        if isinstance(v, dict):
            for kk, vv in v.items():
                if isinstance(vv, (int, float)):
                    out[f"{k}.{kk}"] = vv
        elif isinstance(v, (int, float)):
            out[k] = v
    return out


def workloads_doc(api):
    return json.loads(http_get(api + "/api/v1/workloads"))


def settled_counters(api, pid=None, cgroup=None, want=None, deadline_s=15.0, locate=None):
    """Polls until the counters reach `want` (a dict of minimums) or stop changing for 1 s.
    `locate(doc)` finds the workload when given; else pid, then cgroup."""
    end = time.monotonic() + deadline_s
    last, same_since, w = None, None, None
    while time.monotonic() < end:
        try:
            doc = workloads_doc(api)
            w = locate(doc) if locate else find_workload(doc, pid, cgroup)
            c = flatten(w["counters"]) if w else None
        except OSError:
            c = None
        if c is not None:
            if want and all(c.get(k, 0) >= v for k, v in want.items()):
                return c, w
            if c == last:
                if same_since and time.monotonic() - same_since >= 1.0:
                    return c, w
            else:
                last, same_since = c, time.monotonic()
        time.sleep(0.25)
    return last, w


def metric_samples(text, name):
    """[(labels dict, value)] for one metric family in a Prometheus text page."""
    out = []
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        m = re.match(r'^[a-zA-Z_:][\w:]*(\{(.*)\})?\s+(\S+)', line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        try:
            out.append((labels, float(m.group(3))))
        except ValueError:
            pass
    return out


# ------------------------------------------------------------------ workloads
class Workload:
    """A process in its own cgroup under the cgroup2 mount (one workload to the
    agent), output to a file. Where no cgroup can be made (--no-cgroups, a
    read-only cgroupfs), it shares this script's: it is then found by its pid
    while alive, else as the workload whose counters moved since it started,
    and compared as the difference from that workload's counters before."""

    def __init__(self, args, name, cmd, env=None, cwd=None):
        self.cgroup_dir = self.cgroup = None
        self.before = None  # {workload id: counters} when sharing a cgroup
        if args.cgroup_root:
            leaf = f"gpuledger-validate-{os.getpid()}-{name}"
            try:
                os.makedirs(os.path.join(args.cgroup_root, leaf), exist_ok=True)
                self.cgroup_dir = os.path.join(args.cgroup_root, leaf)
                self.cgroup = "/" + leaf  # the path under the cgroup2 root, as the agent shows it
            except OSError as e:
                print(f"[kit] cannot make cgroup {leaf} ({e}): sharing this one", file=sys.stderr)
        if not self.cgroup_dir:
            self.before = {w["workload"]: flatten(w["counters"]) for w in workloads_doc(args.api)["workloads"]}
        self.out_path = os.path.join(args.raw_dir, name + ".out")
        self.out = open(self.out_path, "w")
        procs = os.path.join(self.cgroup_dir, "cgroup.procs") if self.cgroup_dir else None

        def enter_cgroup():
            if procs:
                try:
                    with open(procs, "w") as f:
                        f.write("0")
                except OSError:
                    pass  # stays in the parent's cgroup; matched by pid

        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                     preexec_fn=enter_cgroup)
        self.pid = self.proc.pid

    def locate(self, doc):
        w = find_workload(doc, self.pid, self.cgroup)
        if w or self.before is None:
            return w
        for w in doc.get("workloads", []):
            if flatten(w["counters"]) != self.before.get(w["workload"]):
                return w
        return None

    def baseline(self, w):
        return (self.before or {}).get(w["workload"], {}) if w else {}

    def lines(self):
        with open(self.out_path, errors="replace") as f:
            return f.read().splitlines()

    def wait_line(self, prefix, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in self.lines():
                if line.startswith(prefix):
                    return line[len(prefix):]
            if self.proc.poll() is not None:
                for line in self.lines():  # the last writes before exit
                    if line.startswith(prefix):
                        return line[len(prefix):]
                return None
            time.sleep(0.1)
        return None

    def tail(self, n=15):
        return self.lines()[-n:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.out.close()
        if self.cgroup_dir:
            for _ in range(20):
                try:
                    os.rmdir(self.cgroup_dir)
                    break
                except OSError:
                    time.sleep(0.1)


# ------------------------------------------------------------------ comparison
def compare_rows(truth, seen, bars, baseline=None):
    """Rows for every metric in `bars` ({metric: "exact" | ">=99%" | "info"}) present in truth."""
    rows = []
    for metric, bar in bars.items():
        if metric not in truth:
            continue
        t = truth[metric]
        s = None if seen is None or metric not in seen else seen[metric] - (baseline or {}).get(metric, 0)
        if s is None:
            ok = False
        elif bar == "exact":
            ok = s == t
        elif bar == ">=99%":
            ok = s >= 0.99 * t if t else s == 0
        else:
            ok = None
        row = {"metric": metric, "truth": t, "seen": s, "bar": bar, "ok": ok}
        if isinstance(s, (int, float)) and t:
            row["ratio"] = round(s / t, 4)
        rows.append(row)
    return rows


def overcount_notes(rows):
    """The >= 99 % bar passes an over-count; one above 101 % (a call counted twice?) is said."""
    return [f"{r['metric']}: {r['seen']} seen for {r['truth']} true, {r['ratio']:.2%}: counted twice somewhere?"
            for r in rows if r["bar"] == ">=99%" and r.get("ratio") and r["ratio"] > 1.01]


def status_of(rows):
    gating = [r for r in rows if r["bar"] != "info"]
    if not rows:
        return "error"
    return "pass" if all(r["ok"] for r in gating) else "fail"


# The C++ program's bars: launches >= 99%, allocations and copies exact; the
# graph launches exact too; threads and syncs reported.
STATIC_BARS = {
    "kernel_launches": ">=99%",
    "graph_launches": "exact",
    "memory_allocations": "exact",
    "memory_allocated_bytes": "exact",
    "memcpy_calls.htod": "exact",
    "memcpy_calls.dtoh": "exact",
    "memcpy_calls.dtod": "exact",
    "memcpy_bytes.htod": "exact",
    "memcpy_bytes.dtoh": "exact",
    "memcpy_bytes.dtod": "exact",
    "launched_threads": "info",
    "syncs": "info",
}


def cudasim_truth(line):
    """gpuledger-cudasim's truth line, in the agent's counter names."""
    t = json.loads(line)
    out = {"pid": t["pid"], "kernel_launches": t["launches"], "launched_threads": t["launched_threads"],
           "graph_launches": t["graph_launches"], "memory_allocations": t["allocations"],
           "memory_allocated_bytes": t["allocated_bytes"], "syncs": t["syncs"]}
    for d in ("htod", "dtoh", "dtod"):
        out[f"memcpy_bytes.{d}"] = t["memcpy_bytes"][d]
        out[f"memcpy_calls.{d}"] = t["memcpy"][d]
    return out


def known_work_truth(line):
    return flatten(json.loads(line))  # pid included


# The simulated stand-in for known_work.cu (--simulate): the same shape of work.
SIM_STATIC_SCRIPT = ("init; alloc 64m; alloc 32m; alloc 16m; htod 64m; htod 32m; launch 256 1 1 256 1 1 x10; "
                     "sync-ctx; launch 1024 1 1 128 1 1 x5; sync; launch 8 4 2 32 4 1 ptsz x3; sync-ptsz; "
                     "graph x4; sync; dtod 16m; dtoh 32m; dtoh 4096; sync-ctx")


def step_static(args, result):
    """A CUDA C++ program (nvcc's default static runtime) against its printed truth."""
    if args.simulate:
        cmd = [os.path.join(args.bundle, "gpuledger-cudasim"), SIM_STATIC_SCRIPT]
        result["data"]["program"] = "gpuledger-cudasim (simulated driver) " + SIM_STATIC_SCRIPT
        parse, prefix = cudasim_truth, "{"
    else:
        exe = os.path.join(args.work, "known_work")
        if not os.path.exists(exe):
            raise RuntimeError("known_work was not built (see raw/nvcc.log)")
        cmd = [exe, "30"]
        result["data"]["program"] = "tests/gpu/known_work.cu, nvcc -O2 (static cudart)"
        parse, prefix = known_work_truth, TRUTH_PREFIX
    w = Workload(args, "static" + args.pass_suffix, cmd)
    try:
        line = w.wait_line(prefix, 60)
        if line is None:
            raise RuntimeError("no truth line; output: " + " | ".join(w.tail()))
        truth = parse(prefix + line if prefix == "{" else line)
        wl = None
        for _ in range(2):  # the second time with the baseline of the workload found the first
            want = {"kernel_launches": w.baseline(wl).get("kernel_launches", 0) + truth["kernel_launches"]}
            seen, wl = settled_counters(args.api, want=want, locate=w.locate)
            if w.before is None or not wl:
                break
        result["rows"] = compare_rows(truth, seen, STATIC_BARS, w.baseline(wl))
        result["data"].update(truth=truth, workload=wl and wl["workload"], pid=truth.get("pid"),
                              baseline=w.baseline(wl))
        # Kept for the device-plane step: the series while the program is alive.
        with open(os.path.join(args.raw_dir, "static" + args.pass_suffix + ".metrics.txt"), "w") as f:
            f.write(http_get(args.api + "/metrics"))
        with open(os.path.join(args.raw_dir, "static" + args.pass_suffix + ".workload.json"), "w") as f:
            json.dump({"workload": wl, "pid": truth.get("pid")}, f)
    finally:
        w.stop()


def torch_work_cmd(args, *mode):
    # --torch-work swaps in a stand-in with the same protocol (the kit's own
    # test drives these steps with the driver simulator).
    return [sys.executable, args.torch_work or os.path.join(HERE, "torch_work.py"), *mode]


def torch_env(args, **extra):
    return dict(os.environ, GPULEDGER_API=args.api, GPULEDGER_BUNDLE=args.bundle, **extra)


def torch_step(args, result, mode, bars, want_key):
    if args.simulate and not args.torch_work:
        result["status"] = "skipped"
        result["notes"].append("needs PyTorch on a real GPU")
        return
    env = torch_env(args)
    if mode == "expandable":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    w = Workload(args, mode + args.pass_suffix, torch_work_cmd(args, mode), env=env)
    try:
        line = w.wait_line(TRUTH_PREFIX, 90)
        if line is None:
            raise RuntimeError("no truth line; output: " + " | ".join(w.tail()))
        truth = json.loads(line)
        baseline = truth.pop("baseline", None) or {}
        want = {want_key: baseline.get(want_key, 0) + truth[want_key]} if want_key in truth else None
        seen, wl = settled_counters(args.api, want=want, locate=w.locate)
        result["rows"] = compare_rows(truth, seen, bars, baseline)
        result["data"].update(truth=truth, baseline=baseline, workload=wl and wl["workload"])
        if mode == "expandable":
            memory_rows(args, result, truth, seen)
    finally:
        w.stop()


def memory_rows(args, result, truth, seen):
    """Live bytes (agent) against torch's reserved bytes and NVML's per-process memory."""
    pid = truth["pid"]
    live = (seen or {}).get("memory_live_bytes")
    nvml_agent = None
    try:
        for labels, v in metric_samples(http_get(args.api + "/metrics"), "gpuledger_gpu_process_memory_used_bytes"):
            if labels.get("pid") == str(pid):
                nvml_agent = v
    except OSError:
        pass
    smi = None
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=15)
        for row in q.stdout.splitlines():
            parts = [p.strip() for p in row.split(",")]
            if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
                smi = int(parts[1]) * 2**20
    for name, value in (("NVML per-process used memory (agent's device plane)", nvml_agent),
                        ("NVML per-process used memory (nvidia-smi)", smi)):
        result["rows"].append({"metric": "memory_live_bytes vs " + name, "truth": value, "seen": live, "bar": "info",
                               "ok": None, "ratio": round(live / value, 4) if live and value else None})
    result["notes"].append("NVML's per-process memory includes the context and cuBLAS workspace; "
                           "torch.cuda.memory_reserved() is the allocator's segments only")


def step_eager(args, result):
    """A PyTorch eager training loop: kernel launches against torch.profiler's kernel count."""
    torch_step(args, result, "eager", {"kernel_launches": ">=99%", "graph_launches": "info"}, "kernel_launches")


def step_graph(args, result):
    """The same loop's forward pass captured as one CUDA graph and replayed."""
    torch_step(args, result, "graph", {"graph_launches": "exact", "kernel_launches": "info"}, "graph_launches")


def step_expandable(args, result):
    """PyTorch with expandable_segments: live bytes against memory_reserved() and NVML."""
    torch_step(args, result, "expandable", {"memory_live_bytes": "info", "memory_allocations": "info"},
               "memory_live_bytes")


def pmon_samples(seconds):
    """nvidia-smi pmon's per-process SM samples (NVML's process utilization): {pid: [sm%...]}."""
    p = subprocess.run(["nvidia-smi", "pmon", "-s", "u", "-d", "1", "-c", str(seconds)], capture_output=True,
                       text=True, timeout=seconds + 15)
    samples = {}
    for line in p.stdout.splitlines():
        cols = line.split()
        if not cols or cols[0].startswith("#") or len(cols) < 4 or not cols[1].isdigit():
            continue
        samples.setdefault(int(cols[1]), []).append(0 if cols[3] == "-" else float(cols[3]))
    return samples


def shares(values):
    total = sum(values.values())
    return {k: (round(v / total, 4) if total else None) for k, v in values.items()}


def step_busy(args, result):
    """Two processes sharing the GPU with different loads: each one's share, by every method."""
    if args.simulate and not args.torch_work:
        result["status"] = "skipped"
        result["notes"].append("needs a real GPU and NVML's per-process samples")
        return
    start_file = os.path.join(args.work, "busy.start" + args.pass_suffix)
    seconds = 4 if args.simulate else 10
    loads = {"heavy": "0.8", "light": "0.2"}
    ws = {}
    try:
        for name, duty in loads.items():
            env = torch_env(args, GPULEDGER_START_FILE=start_file, GPULEDGER_LOAD_SECONDS=str(seconds))
            ws[name] = Workload(args, "busy-" + name, torch_work_cmd(args, "load", duty), env=env)
        for name, w in ws.items():
            if w.wait_line("GPULEDGER_READY", 60) is None:
                raise RuntimeError(f"{name} load did not start: " + " | ".join(w.tail()))
        located = {n: settled_counters(args.api, deadline_s=3, locate=w.locate) for n, w in ws.items()}
        if len({wl["workload"] for _, wl in located.values() if wl}) < 2:
            result["status"] = "skipped"
            result["notes"].append("the two loads are not two workloads to the agent (no cgroup of their own)")
            return
        before = {n: c or {} for n, (c, _) in located.items()}
        open(start_file, "w").close()
        agent_sm = {n: [] for n in ws}
        pmon = {}
        pmon_proc = None
        if shutil.which("nvidia-smi"):
            import threading
            pmon_proc = threading.Thread(target=lambda: pmon.update(pmon_samples(seconds - 1)))
            pmon_proc.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                page = http_get(args.api + "/metrics")
                for labels, v in metric_samples(page, "gpuledger_gpu_process_sm_utilization_ratio"):
                    for n, w in ws.items():
                        if labels.get("pid") == str(w.pid):
                            agent_sm[n].append(v)
            except OSError:
                pass
            time.sleep(1)
        truths = {n: w.wait_line(TRUTH_PREFIX, 20) for n, w in ws.items()}
        if pmon_proc:
            pmon_proc.join(timeout=20)
        after = {n: settled_counters(args.api, deadline_s=3, locate=w.locate)[0] or {} for n, w in ws.items()}
        busy = {n: after[n].get("busy_seconds_estimate", 0) - before[n].get("busy_seconds_estimate", 0) for n in ws}
        self_timed = {n: json.loads(t)["gpu_seconds"] if t else 0 for n, t in truths.items()}
        nvml_pmon = {n: (sum(pmon.get(w.pid, [])) / len(pmon[w.pid]) if pmon.get(w.pid) else 0) for n, w in ws.items()}
        nvml_agent = {n: (sum(v) / len(v) if v else 0) for n, v in agent_sm.items()}
        methods = {"workload's own timing (launch to sync)": self_timed,
                   "agent busy estimate (eBPF)": busy,
                   "NVML per-process SM samples (nvidia-smi pmon)": nvml_pmon,
                   "NVML per-process SM samples (agent's device plane)": nvml_agent}
        for method, values in methods.items():
            s = shares(values)
            result["rows"].append({"metric": "shares (heavy, light): " + method, "truth": None,
                                   "seen": [s.get("heavy"), s.get("light")], "bar": "info", "ok": None,
                                   "raw": values})
        result["data"].update(duty=loads, seconds=seconds, methods=methods)
        result["status"] = "pass" if busy["heavy"] > busy["light"] > 0 else "fail"
        result["notes"].append("pass: the agent ranks the heavy process above the light one, both nonzero")
    finally:
        for w in ws.values():
            w.stop()


def step_device(args, result):
    """The device plane on a real driver: inventory, NVML readings, ioctl counts, GPU labels."""
    page = http_get(args.api + "/metrics")
    with open(os.path.join(args.raw_dir, "device.metrics.txt"), "w") as f:
        f.write(page)
    info = metric_samples(page, "gpuledger_gpu_info")
    rows = [{"metric": "GPUs in the inventory (gpuledger_gpu_info)", "truth": args.gpus, "seen": len(info),
             "bar": "exact" if args.gpus is not None else "info", "ok": len(info) == args.gpus if args.gpus is not None
             else None}]
    for name in ("gpuledger_gpu_utilization_ratio", "gpuledger_gpu_memory_used_bytes", "gpuledger_gpu_power_watts"):
        s = metric_samples(page, name)
        rows.append({"metric": f"NVML reading {name} (series)", "truth": None, "seen": len(s), "bar": "info",
                     "ok": None, "values": [v for _, v in s][:8]})
    static_metrics = os.path.join(args.raw_dir, "static.metrics.txt")
    static_wl = os.path.join(args.raw_dir, "static.workload.json")
    if os.path.exists(static_metrics) and os.path.exists(static_wl):
        saved = open(static_metrics).read()
        wid = (json.load(open(static_wl)).get("workload") or {}).get("workload")
        ioctls = sum(v for labels, v in metric_samples(saved, "gpuledger_nvidia_ioctls_total")
                     if labels.get("workload") == wid)
        up = [v for _, v in metric_samples(saved, "gpuledger_nvidia_ioctl_plane_up")]
        rows.append({"metric": "ioctl plane up", "truth": 1, "seen": up[0] if up else None,
                     "bar": "info" if args.simulate else "exact", "ok": None if args.simulate else up == [1.0]})
        rows.append({"metric": "ioctls counted for the C++ program's workload", "truth": ">0", "seen": ioctls,
                     "bar": "info", "ok": None})
        gpus = sorted({labels.get("gpu", "") for labels, _ in
                       metric_samples(saved, "gpuledger_cuda_kernel_launches_total") if labels.get("workload") == wid})
        rows.append({"metric": "gpu labels on the C++ program's series", "truth": "a GPU index", "seen": gpus,
                     "bar": "info" if args.simulate else "exact",
                     "ok": None if args.simulate else bool(gpus) and "" not in gpus})
        pid = str(json.load(open(static_wl)).get("pid"))
        proc_gpus = sorted({labels.get("gpu", "") for labels, _ in
                            metric_samples(saved, "gpuledger_gpu_process_memory_used_bytes") if labels.get("pid") == pid})
        rows.append({"metric": "gpu labels on the C++ program's NVML process series", "truth": "a GPU index",
                     "seen": proc_gpus, "bar": "info", "ok": None})
        result["data"]["workload"] = wid
    else:
        result["notes"].append("no saved series from the static step")
    result["rows"] = rows


def step_address(args, result):
    """cuGetProcAddress_v2 pointers against the exported symbols the agent probes."""
    lib = args.cuda_lib
    run = os.path.join(args.bundle, "gpuledger-run")
    plan = os.path.join(args.raw_dir, "probe-plan.txt")
    with open(plan, "w") as f:
        subprocess.run([run, "gpuledger", "probe-plan", "--cuda-lib", lib], stdout=f, check=True, timeout=30)
    p = subprocess.run([run, "gpuledger-cuda-address-check", "--plan", plan, "--library", lib],
                       capture_output=True, text=True, timeout=60)
    with open(os.path.join(args.raw_dir, "address-check.json"), "w") as f:
        f.write(p.stdout)
    doc = json.loads(p.stdout)
    if "error" in doc:
        raise RuntimeError(doc["error"])
    s = doc["summary"]
    verdicts = {}
    for q in doc["queries"]:
        verdicts[q["verdict"]] = verdicts.get(q["verdict"], 0) + 1
    missed = [q for q in doc["queries"] if q["verdict"] not in ("probed", "not_found")]
    result["rows"] = [
        {"metric": "pointers found that start a probed exported symbol", "truth": s["found"], "seen": s["probed"],
         "bar": "exact", "ok": s["probed"] == s["found"]},
        {"metric": "queries (families x versions x flags)", "truth": None, "seen": s["queries"], "bar": "info",
         "ok": None},
    ]
    result["data"] = {"library": doc["library"], "driver_version": doc["driver_version"], "api": doc["api"],
                      "verdicts": verdicts, "missed": missed[:200]}
    result["notes"].append(f"verdicts: {verdicts}")
    # Every exported entry point (by base name) at CUDA 11.0 to 13.0, flags 0, 1 and 2: each pointer
    # must start an exported symbol, and each billable one a probed symbol.
    p = subprocess.run([run, "gpuledger-cuda-address-check", "--plan", plan, "--library", lib, "--all-exports",
                        "--versions", "11000,11020,11040,11060,11080,12000,12020,12040,12060,12080,13000"],
                       capture_output=True, text=True, timeout=120)
    with open(os.path.join(args.raw_dir, "address-check-all-exports.json"), "w") as f:
        f.write(p.stdout)
    try:
        every = json.loads(p.stdout)["summary"]
    except (ValueError, KeyError) as e:
        result["notes"].append(f"--all-exports gave no summary ({e}): raw/address-check-all-exports.json")
        return
    result["rows"] += [
        {"metric": "every export: pointers that start an exported symbol", "truth": every.get("found"),
         "seen": every.get("exported"), "bar": "exact", "ok": every.get("found") == every.get("exported")},
        {"metric": "every export: billable pointers that start a probed symbol", "truth": every.get("billable_found"),
         "seen": every.get("billable_probed"), "bar": "exact",
         "ok": every.get("billable_found") == every.get("billable_probed")},
    ]
    result["data"]["all_exports"] = every


def step_catalogue(args, result):
    """The driver's exported entry points that change a bill, by a rule on their names, against the plan."""
    run = os.path.join(args.bundle, "gpuledger-run")
    p = subprocess.run([run, "gpuledger", "probe-plan", "--cuda-lib", args.cuda_lib, "--check"],
                       capture_output=True, text=True, timeout=30)
    with open(os.path.join(args.raw_dir, "probe-plan-check.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    unprobed = [line.split()[2] for line in p.stdout.splitlines() if line.startswith("# unprobed ")]
    planned = [line for line in p.stdout.splitlines() if line and not line.startswith("#")]
    probes = sum(len(line.split()) - 1 for line in planned)
    result["rows"] = [
        {"metric": "billable exported entry points the plan lacks", "truth": 0, "seen": len(unprobed),
         "bar": "exact", "ok": not unprobed and p.returncode in (0, 1)},
        {"metric": "entry points planned", "truth": None, "seen": probes, "bar": "info", "ok": None},
    ]
    result["data"] = {"library": args.cuda_lib, "unprobed": unprobed, "exit": p.returncode}
    if unprobed:
        result["notes"].append("unprobed: " + " ".join(unprobed[:40]))


def step_fetched(args, result):
    """The C++ program under the proc-address recorder: what CUDA's runtime fetches once cuInit succeeds."""
    if args.simulate:
        result["status"] = "skipped"
        result["notes"].append("needs a CUDA runtime program (the recorder's own test runs one: "
                               "probes.real_runtime_entry_points)")
        return
    exe = os.path.join(args.work, "known_work")
    if not os.path.exists(exe):
        raise RuntimeError("known_work was not built (see raw/nvcc.log)")
    log = os.path.join(args.raw_dir, "recorder-static.jsonl")
    env = dict(os.environ, GPULEDGER_PROC_ADDRESS_LOG=log,
               LD_PRELOAD=os.path.join(args.bundle, "libgpuledger-proc-address-recorder.so"))
    p = subprocess.run([exe, "0"], env=env, capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
    requests = [e for e in events if e.get("event", "").startswith("cuGetProcAddress")]
    contexts = sorted({e["symbol"] for e in requests if "Ctx" in (e.get("symbol") or "")})
    tables = sorted({e["uuid"] for e in events if e.get("event") == "cuGetExportTable"})
    result["rows"] = [{"metric": "lookups the recorder logged", "truth": ">0", "seen": len(events), "bar": "info",
                       "ok": None},
                      {"metric": "cuGetProcAddress requests", "truth": None, "seen": len(requests), "bar": "info",
                       "ok": None}]
    result["data"] = {"exit": p.returncode, "context_entry_points_fetched": contexts, "export_tables": tables}
    result["notes"].append("context entry points fetched: " + (", ".join(contexts) or "none"))
    result["notes"].append("export tables: " + (", ".join(tables) or "none"))
    result["status"] = "pass" if events and p.returncode == 0 else "fail"


def step_tables(args, result):
    """cuGetExportTable: which driver tables the runtimes asked for, by workload (after a successful cuInit)."""
    page = http_get(args.api + "/metrics")
    samples = metric_samples(page, "gpuledger_cuda_export_table_requests_total")
    tables = {}
    for labels, value in samples:
        tables[labels.get("table", "?")] = tables.get(labels.get("table", "?"), 0) + value
    result["rows"] = [{"metric": "export tables asked for (distinct ids)", "truth": None, "seen": len(tables),
                       "bar": "info", "ok": None}]
    result["data"] = {"tables": tables, "series": [[labels, value] for labels, value in samples][:200]}
    result["notes"].append("tables: " + ", ".join(f"{t} x{int(n)}" for t, n in sorted(tables.items())))
    result["status"] = "pass"


def step_env(args, result):
    """The machine: driver, CUDA, toolkit, PyTorch versions, glibc."""
    def run(cmd, timeout=20):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"unavailable ({e})"
    env = {"kernel": os.uname().release, "glibc": run(["getconf", "GNU_LIBC_VERSION"]),
           "bundle_manifest": open(os.path.join(args.bundle, "MANIFEST")).read().splitlines()[:5],
           "cuda_lib": args.cuda_lib,
           "doctor": run([os.path.join(args.bundle, "gpuledger-run"), "gpuledger", "doctor"]).splitlines()}
    if not args.simulate:
        env["nvidia_smi"] = run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                                 "--format=csv,noheader"])
        m = re.search(r"CUDA Version:\s*([\d.]+)", run(["nvidia-smi"]))
        env["driver_cuda_version"] = m.group(1) if m else None
        env["nvcc"] = (run(["nvcc", "--version"]).splitlines() or [""])[-1]
        env["python"] = sys.version.split()[0]
        env["torch"] = run([sys.executable, "-c", "import torch; print(torch.__version__, torch.version.cuda, "
                            "torch.cuda.is_available())"], timeout=60)
    result["data"] = env
    result["status"] = "pass"


STEPS = {"env": step_env, "address": step_address, "catalogue": step_catalogue, "static": step_static,
         "eager": step_eager, "graph": step_graph, "expandable": step_expandable, "busy": step_busy,
         "device": step_device, "tables": step_tables, "fetched": step_fetched}


def run_step(args):
    # `timeout` stops a step with SIGTERM: unwind, so its workloads are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    fn = STEPS[args.step]
    result = {"step": args.step + args.pass_suffix, "title": fn.__doc__.strip(), "status": None, "rows": [],
              "notes": [], "data": {}}
    t0 = time.monotonic()
    try:
        fn(args, result)
        result["notes"] += overcount_notes(result["rows"])
        if result["status"] is None:
            result["status"] = status_of(result["rows"])
    except Exception as e:  # a broken step is recorded, never fatal to the kit
        result["status"] = "error"
        result["notes"].append(f"{type(e).__name__}: {e}")
    result["duration_s"] = round(time.monotonic() - t0, 1)
    with open(os.path.join(args.steps_dir, result["step"] + ".json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(f"[kit] {result['step']}: {result['status']} ({result['duration_s']} s) {'; '.join(result['notes'])}",
          file=sys.stderr)
    return 0


# ------------------------------------------------------------------ report
def fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return ", ".join(fmt(x) for x in v) or "(none)"
    return "—" if v is None else str(v)


def report(args):
    steps = []
    for name in sorted(os.listdir(args.steps_dir), key=lambda n: os.path.getmtime(os.path.join(args.steps_dir, n))):
        with open(os.path.join(args.steps_dir, name)) as f:
            steps.append(json.load(f))
    meta = json.load(open(args.meta)) if args.meta and os.path.exists(args.meta) else {}
    # The bars gate the C++ program and the eager loop, in every pass; a
    # simulated run has no eager loop to gate.
    required = ("static",) if args.simulate else ("static", "eager")
    gated = [s for s in steps if s["step"].split("@")[0] in required]
    ran = {s["step"].split("@")[0] for s in gated}
    doc = {"kit": "gpuledger GPU validation kit", "mode": "simulate" if args.simulate else "gpu", **meta,
           "pass_bars": {"static": "launches >= 99% of truth; allocations and copies exact; graph launches exact",
                         "eager": "launches >= 99% of torch.profiler's kernel count"},
           "pass_bars_met": ran == set(required) and all(s["status"] == "pass" for s in gated),
           "steps": steps}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1, default=str)
    md = [f"# gpuledger GPU validation ({doc['mode']})", ""]
    for k in ("started", "finished", "duration_s", "passes"):
        if k in meta:
            md.append(f"- {k}: {fmt(meta[k])}")
    md += [f"- pass bars met: **{'yes' if doc['pass_bars_met'] else 'no'}** "
           "(static: launches ≥ 99%, allocations/copies/graph launches exact; eager: launches ≥ 99%)", ""]
    md += ["| step | status | s | what |", "|---|---|---|---|"]
    for s in steps:
        md.append(f"| {s['step']} | {s['status']} | {fmt(s.get('duration_s'))} | {s['title']} |")
    for s in steps:
        md += ["", f"## {s['step']}: {s['status']}", "", s["title"], ""]
        if s["rows"]:
            md += ["| metric | truth | seen | ratio | bar | ok |", "|---|---|---|---|---|---|"]
            for r in s["rows"]:
                ok = {True: "yes", False: "**NO**", None: ""}[r["ok"]]
                md.append(f"| {r['metric']} | {fmt(r['truth'])} | {fmt(r['seen'])} | {fmt(r.get('ratio'))} | "
                          f"{r['bar']} | {ok} |")
        for n in s["notes"]:
            md.append(f"- {n}")
        if s["step"] == "env":
            md += [f"- {k}: {fmt(v)}" for k, v in s["data"].items() if k != "doctor"]
            md += ["", "```", *s["data"].get("doctor", []), "```"]
        if s["step"].startswith("address") and s["data"].get("missed"):
            md += ["", "Pointers that do not start a probed symbol (first 20):", ""]
            md += [f"- {q['entry']} @{q['cuda_version']} {q['flags']}: {q['verdict']} "
                   f"({q.get('symbol')}+{q.get('offset')})" for q in s["data"]["missed"][:20]]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("step", help="run one step")
    st.add_argument("step", choices=sorted(STEPS))
    st.add_argument("--api", required=True)
    st.add_argument("--bundle", required=True)
    st.add_argument("--work", required=True)
    st.add_argument("--out", required=True)
    st.add_argument("--cuda-lib", default="libcuda.so.1")
    st.add_argument("--cgroup-root", default="")
    st.add_argument("--pass", dest="pass_name", default="")
    st.add_argument("--gpus", type=int, default=None)
    st.add_argument("--simulate", action="store_true")
    st.add_argument("--torch-work", default="", help="a stand-in for tests/gpu/torch_work.py")
    rp = sub.add_parser("report", help="results.json and results.md from the steps")
    rp.add_argument("--out", required=True)
    rp.add_argument("--meta", default="")
    rp.add_argument("--simulate", action="store_true")
    args = ap.parse_args()
    args.steps_dir = os.path.join(args.out, "steps")
    os.makedirs(args.steps_dir, exist_ok=True)
    if args.cmd == "report":
        return report(args)
    args.raw_dir = os.path.join(args.out, "raw")
    os.makedirs(args.raw_dir, exist_ok=True)
    args.pass_suffix = "@" + args.pass_name if args.pass_name else ""
    return run_step(args)


if __name__ == "__main__":
    sys.exit(main())
