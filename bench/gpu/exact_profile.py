"""Exact search through the C API on a CUDA context ("Flat", host to host), for timing and profiling.

usage: python3 bench/gpu/exact_profile.py [--data fashion|rand] [--k K] [--mode time|ncu|trace]
  --data fashion: Fashion-MNIST's real images (QUIVER_FASHION_MNIST_DIR, as bench/graph reads them);
         rand: uniform [-1, 1) rows, --n x --dim, --nq queries.
  --mode time: median of 9 searches after 3 warm-ups;
         ncu: one search between cudaProfilerStart / Stop, for
              `ncu --profile-from-start off --metrics gpu__time_duration.sum --csv python3 ...`;
         trace: one search under PyTorch's profiler (CUPTI sees libquiver's kernels and copies too):
              the kernels, copies and long runtime calls in order, in ms from the first event.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "graph"))
import graph_vs_hnswlib as common  # noqa: E402
from song_bench import CudaRuntime  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build-gpu/libquiver.so")
    ap.add_argument("--data", choices=("fashion", "rand"), default="fashion")
    ap.add_argument("--n", type=int, default=1000000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--nq", type=int, default=10000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--mode", choices=("time", "ncu", "trace"), default="time")
    args = ap.parse_args()

    if args.data == "fashion":
        name, base, queries, _ = common.load_data("", 0)
    else:
        rng = np.random.default_rng(6)
        base = rng.uniform(-1, 1, (args.n, args.dim)).astype(np.float32)
        queries = rng.uniform(-1, 1, (args.nq, args.dim)).astype(np.float32)
        name = f"uniform {args.n} x {args.dim}"
    queries = np.ascontiguousarray(queries, np.float32)
    if args.mode == "trace":
        import torch  # before quiver, so that both share the device's primary context from the start
        torch.zeros(1, device="cuda")
    index = common.Quiver(args.lib, os.cpu_count(), common.QV_DEVICE_CUDA)
    index.build("Flat", base)
    for _ in range(3):
        index.search(queries, args.k)

    if args.mode == "ncu":
        runtime = CudaRuntime().rt
        if runtime is None:
            sys.exit("--mode ncu needs libcudart.so")
        runtime.cudaProfilerStart()
        index.search(queries, args.k)
        runtime.cudaDeviceSynchronize()
        runtime.cudaProfilerStop()
    elif args.mode == "trace":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            index.search(queries, args.k)
            t1 = time.perf_counter()
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            prof.export_chrome_trace(f.name)
            with open(f.name) as trace:
                events = [e for e in json.load(trace)["traceEvents"] if e.get("ph") == "X"]
        start = min(e["ts"] for e in events)
        print(f"{name}, k = {args.k}: one search {1e3 * (t1 - t0):.3f} ms under the profiler")
        for e in sorted(events, key=lambda e: e["ts"]):
            cat = e.get("cat", "")
            if cat in ("kernel", "gpu_memcpy", "gpu_memset") or (cat == "cuda_runtime" and e["dur"] > 15):
                stream = e.get("args", {}).get("stream", "")
                print(f"  {(e['ts'] - start) / 1e3:8.3f} +{e['dur'] / 1e3:7.3f} ms  {cat:12s} stream {stream!s:3s} "
                      f"{e['name'][:70]}")
    else:
        times = []
        for _ in range(9):
            t0 = time.perf_counter()
            index.search(queries, args.k)
            times.append(time.perf_counter() - t0)
        print(f"{name}, {len(queries)} queries, exact k = {args.k}, host to host: "
              f"median {1e3 * statistics.median(times):.3f} ms, min {1e3 * min(times):.3f} ms")


if __name__ == "__main__":
    main()
