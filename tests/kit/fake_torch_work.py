#!/usr/bin/env python3
"""A stand-in for tests/gpu/torch_work.py with the same protocol, doing its
work through the driver simulator (gpuledger-cudasim from $GPULEDGER_BUNDLE),
so that the kit's PyTorch and busy-share steps run end to end without a GPU
(kit.gpu_validate_simulate). Each mode prints `GPULEDGER_TRUTH {json}` for
known work; `load DUTY` prints GPULEDGER_READY, waits for the start file and
keeps the simulated GPU busy DUTY of the time.
"""
import json
import os
import signal
import subprocess
import sys
import time

CUDASIM = os.path.join(os.environ["GPULEDGER_BUNDLE"], "gpuledger-cudasim")
children = []


def cudasim(script, *options, wait=True):
    p = subprocess.Popen([CUDASIM, "--quiet", *options, script], stdout=subprocess.PIPE, text=True)
    children.append(p)
    if wait and p.wait() != 0:
        sys.exit(f"gpuledger-cudasim failed: {script}")
    return p


def emit(truth):
    truth["pid"] = os.getpid()
    print("GPULEDGER_TRUTH " + json.dumps(truth), flush=True)
    time.sleep(120)


def stop(*_):
    for p in children:
        p.kill()
    sys.exit(0)


def main():
    signal.signal(signal.SIGTERM, stop)
    mode = sys.argv[1]
    if mode == "eager":
        cudasim("init; launch 64 1 1 64 1 1 x50; sync")
        emit({"kernel_launches": 50, "graph_launches": 0, "baseline": {}})
    elif mode == "graph":
        cudasim("init; graph x100; sync")
        emit({"graph_launches": 100, "kernel_launches": 0, "baseline": {}})
    elif mode == "expandable":
        assert "expandable_segments:True" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
        held = cudasim("init; mem-create 256m; mem-create 1g; print-ready; sleep-ms 60000", wait=False)
        held.stdout.readline()  # READY: the memory is held until this process is stopped
        emit({"memory_live_bytes": (256 << 20) + (1 << 30)})
    elif mode == "load":
        duty = float(sys.argv[2])
        cudasim("init; launch 1 1 1 1 1 1; sync")  # a workload to the agent already, as after a warm-up
        print("GPULEDGER_READY", flush=True)
        while not os.path.exists(os.environ["GPULEDGER_START_FILE"]):
            time.sleep(0.01)
        # 10 ms of simulated kernel per launch, each waited for: busy for duty of the window.
        launches = int(duty * float(os.environ["GPULEDGER_LOAD_SECONDS"]) * 100 * 0.5)
        cudasim("; ".join(["init"] + ["launch 1 1 1 1 1 1; sync"] * launches), "--kernel-us", "10000")
        emit({"gpu_seconds": launches * 0.01, "duty": duty})
    stop()


if __name__ == "__main__":
    main()
