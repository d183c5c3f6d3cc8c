#!/usr/bin/env python3
"""nvml_split.py: what NVML's per-process utilisation samples say when processes share one GPU.

The billing probe set (docs/probe-sets.md) lets NVML split a GPU's busy time between the
processes on it. This records, for loads of known duty cycles run alone and together, every
raw sample of nvmlDeviceGetProcessUtilization (and of nvmlDeviceGetProcessesUtilizationInfo
where the driver has it) next to each load's own launch-to-sync timing, so the split NVML
gives can be compared with the work each process did.

    python3 tests/gpu/nvml_split.py OUT.json [SECONDS]

Needs PyTorch and nvidia-ml-py (pynvml); the loads are tests/gpu/torch_work.py's.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import pynvml

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = {
    "light alone": ["0.2"],
    "heavy alone": ["0.8"],
    "heavy and light": ["0.8", "0.2"],
    "half and half": ["0.5", "0.5"],
    "both flat out": ["1.0", "1.0"],
    "three: 0.6, 0.3, 0.1": ["0.6", "0.3", "0.1"],
}


def poll(handle, last):
    """New samples since `last` (microseconds), from each API the driver has."""
    out = {"v1": [], "v2": []}
    try:
        for s in pynvml.nvmlDeviceGetProcessUtilization(handle, last):
            out["v1"].append({"pid": s.pid, "ts": s.timeStamp, "sm": s.smUtil, "mem": s.memUtil})
    except pynvml.NVMLError as e:
        out["v1_error"] = str(e)
    try:
        info = pynvml.nvmlDeviceGetProcessesUtilizationInfo(handle, last)
        for s in info:
            out["v2"].append({"pid": s.pid, "ts": s.timeStamp, "sm": s.smUtil, "mem": s.memUtil})
    except (pynvml.NVMLError, AttributeError, TypeError) as e:
        out["v2_error"] = str(e)
    return out


def run(scenario, duties, seconds, handle):
    work = tempfile.mkdtemp()
    start = os.path.join(work, "start")
    env = dict(os.environ, GPULEDGER_START_FILE=start, GPULEDGER_LOAD_SECONDS=str(seconds))
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "torch_work.py"), "load", d], env=env,
                              stdout=subprocess.PIPE, text=True) for d in duties]
    for p in procs:
        while True:
            line = p.stdout.readline()
            if not line or line.startswith("GPULEDGER_READY"):
                break
    last = int(time.time() * 1e6)
    open(start, "w").close()
    polls = []
    device = []
    end = time.monotonic() + seconds + 0.5
    while time.monotonic() < end:
        time.sleep(0.2)
        got = poll(handle, last)
        stamps = [s["ts"] for s in got["v1"] + got["v2"]]
        if stamps:
            last = max(last, max(stamps))
        polls.append(got)
        u = pynvml.nvmlDeviceGetUtilizationRates(handle)
        device.append(u.gpu)
    truths = []
    for p in procs:  # each load prints its truth, then waits to be read: stopped here
        line = p.stdout.readline()
        while line and not line.startswith("GPULEDGER_TRUTH"):
            line = p.stdout.readline()
        truths.append(json.loads(line.split(" ", 1)[1]) if line else None)
        p.kill()
        p.wait()
    pids = [p.pid for p in procs]
    summary = {}
    for api in ("v1", "v2"):
        samples = [s for got in polls for s in got[api]]
        by_pid = {pid: [s["sm"] for s in samples if s["pid"] == pid] for pid in pids}
        summary[api] = {str(pid): {"samples": len(v), "sm_sum": sum(v)} for pid, v in by_pid.items()}
        summary[api]["other_pids"] = sorted({s["pid"] for s in samples} - set(pids))
        summary[api]["distinct_timestamps"] = len({s["ts"] for s in samples})
    result = {"scenario": scenario, "duties": duties, "pids": pids, "truths": truths, "summary": summary,
              "device_util_mean": sum(device) / len(device) if device else None, "polls": polls}
    print(json.dumps({k: v for k, v in result.items() if k != "polls"}), flush=True)
    return result


def main():
    out_path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 6
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    results = [run(name, duties, seconds, handle) for name, duties in SCENARIOS.items()]
    with open(out_path, "w") as f:
        json.dump({"driver": pynvml.nvmlSystemGetDriverVersion(), "results": results}, f)


if __name__ == "__main__":
    main()
