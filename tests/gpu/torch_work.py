#!/usr/bin/env python3
"""PyTorch workloads with known GPU work, for the validation kit (tests/gpu/kit.py).

    torch_work.py eager        a training loop; truth = torch.profiler's kernel count
    torch_work.py graph        its forward pass captured as a CUDA graph; truth = replays
    torch_work.py expandable   allocations under expandable_segments; truth = memory_reserved()
    torch_work.py load DUTY    keeps the GPU busy DUTY of the time (busy-share step)

Each prints one line `GPULEDGER_TRUTH {json}` in the agent's counter names, then
holds (the kit reads the agent, then stops it). The truth covers only the
measured section: "baseline" is the agent's counters for this process just
before it (read from $GPULEDGER_API), which the kit subtracts.
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kit  # noqa: E402  (the agent-reading helpers)

API = os.environ.get("GPULEDGER_API", "")


def baseline():
    """The agent's counters for this process once they stop moving (nothing runs meanwhile)."""
    torch.cuda.synchronize()
    if not API:
        return {}
    counters, _ = kit.settled_counters(API, pid=os.getpid(), deadline_s=10)
    return counters or {}


def emit(truth):
    truth["pid"] = os.getpid()
    print(kit.TRUTH_PREFIX + json.dumps(truth), flush=True)
    time.sleep(120)  # held until the kit has read the agent


def model_and_data():
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)).cuda()
    x = torch.randn(256, 1024, device="cuda")
    y = torch.randint(0, 10, (256,), device="cuda")
    return model, x, y


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def eager():
    model, x, y = model_and_data()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):  # warm-up: cuBLAS handles, allocator segments, lazy init
        train_step(model, opt, x, y)
    base = baseline()
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(50):
            train_step(model, opt, x, y)
        torch.cuda.synchronize()
    # The trace's "kernel" events are the kernels the GPU ran (memcpy and
    # memset are categories of their own).
    trace = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"gpuledger-eager-{os.getpid()}.json")
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        events = json.load(f).get("traceEvents", [])
    os.unlink(trace)
    kernels = sum(1 for e in events if e.get("cat") == "kernel")
    launches = sum(1 for e in events if e.get("cat") == "cuda_runtime" and "aunch" in e.get("name", ""))
    emit({"kernel_launches": kernels, "graph_launches": 0, "iterations": 50, "baseline": base,
          "runtime_launch_calls_in_trace": launches})


def graph():
    model, x, _ = model_and_data()
    model.eval()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(side):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        model(x)
    base = baseline()
    replays = 100
    for _ in range(replays):
        g.replay()
    torch.cuda.synchronize()
    emit({"graph_launches": replays, "kernel_launches": 0, "baseline": base})


def expandable():
    assert "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    held = [torch.empty(256 << 20, dtype=torch.uint8, device="cuda")]
    held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    for i in range(20):  # churn: grow and shrink within the segment
        t = torch.empty((8 + i) << 20, dtype=torch.uint8, device="cuda")
        del t
    held.append(torch.empty(100 << 20, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    emit({"memory_live_bytes": torch.cuda.memory_reserved(), "memory_allocated_torch": torch.cuda.memory_allocated()})


def load(duty):
    """Busy `duty` of each 100 ms period, for $GPULEDGER_LOAD_SECONDS after $GPULEDGER_START_FILE appears."""
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    print("GPULEDGER_READY", flush=True)
    start_file = os.environ["GPULEDGER_START_FILE"]
    while not os.path.exists(start_file):
        time.sleep(0.01)
    seconds = float(os.environ.get("GPULEDGER_LOAD_SECONDS", "10"))
    end = time.monotonic() + seconds
    gpu_seconds = 0.0
    while time.monotonic() < end:
        period_start = time.monotonic()
        while time.monotonic() - period_start < duty * 0.1:
            t0 = time.monotonic()
            a @ b
            torch.cuda.synchronize()
            gpu_seconds += time.monotonic() - t0
        rest = 0.1 - (time.monotonic() - period_start)
        if rest > 0:
            time.sleep(rest)
    emit({"gpu_seconds": gpu_seconds, "duty": duty, "seconds": seconds})


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "load":
        load(float(sys.argv[2]))
    else:
        {"eager": eager, "graph": graph, "expandable": expandable}[mode]()
