#!/usr/bin/env python3
"""faiss-cpu's exact range search, the CPU baseline of quiver's GPU range search (bench/gpu/gpu_bench.cu
--only range): IndexFlatL2.range_search on 2 threads over the same synthetic data, made the same way
(the driver's counter hash: 1M x 128 uniform floats in [-1, 1), base seed 6, queries seed 7, bit for
bit the driver's), at the same radii (quantiles 0.01%, 0.1% and 1% of the exact squared distances
of the first 16 queries to every row, as the driver picks them; or --radii). Warm-up once, then the
median of --runs timed calls (monotonic clock). Prints the machine, the command and QPS per radius;
with --json FILE also one JSON object per measurement.

usage: bench/range/faiss_range.py [--quick] [--nq N] [--runs N] [--threads N] [--radii R,R,...] [--json FILE]
needs: pip install faiss-cpu numpy
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def uniform(count, seed, chunk=1 << 24):
    """gpu_bench.cu's fill_uniform: element i is the hash of i and seed, as a float in [-1, 1)."""
    out = np.empty(count, dtype=np.float32)
    offset = np.uint64((seed * GOLDEN) & MASK)
    scale = np.float32(2.0 / 16777216.0)
    with np.errstate(over="ignore"):
        for start in range(0, count, chunk):
            i = np.arange(start, min(count, start + chunk), dtype=np.uint64)
            z = (i + offset) * np.uint64(MIX1)
            z = (z ^ (z >> np.uint64(31))) * np.uint64(MIX2)
            z ^= z >> np.uint64(29)
            out[start:start + len(i)] = (z >> np.uint64(40)).astype(np.float32) * scale - np.float32(1.0)
    return out


SHARES = (1e-4, 1e-3, 1e-2)


def sample_radii(base, sample, chunk=1 << 17):
    """The SHARES quantiles of the squared distances (in float64) of the sample queries to every row."""
    s = sample.astype(np.float64)
    s_norms = (s * s).sum(axis=1)
    parts = []
    for start in range(0, base.shape[0], chunk):
        b = base[start:start + chunk].astype(np.float64)
        parts.append(((b * b).sum(axis=1)[:, None] + s_norms[None, :] - 2 * (b @ s.T)).ravel())
    d = np.concatenate(parts)
    return [float(np.partition(d, int(share * d.size))[int(share * d.size)]) for share in SHARES]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 000 x 128, 100 queries (a smoke run)")
    parser.add_argument("--n", type=int, default=None)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--nq", type=int, default=None,
                        help="queries searched (the first of the driver's; default 1000: faiss-cpu "
                             "takes seconds per thousand)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--radii", default=None, help="comma-separated squared radii (default: the quantiles)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import faiss

    n = args.n or (100_000 if args.quick else 1_000_000)
    nq = args.nq or (100 if args.quick else 1000)
    dim = args.dim
    faiss.omp_set_num_threads(args.threads)
    print(f"faiss_range: faiss {faiss.__version__}, {cpu_name()}, {os.cpu_count()} logical CPUs, "
          f"{args.threads} threads (faiss.omp_set_num_threads)")
    print("command: " + " ".join([sys.executable] + sys.argv))
    print(f"data: {n} x {dim} uniform [-1, 1) (gpu_bench.cu's hash, seeds 6 / 7), {nq} queries; "
          f"warm-up 1, median of {args.runs}")

    base = uniform(n * dim, 6).reshape(n, dim)
    queries = uniform(nq * dim, 7).reshape(nq, dim)

    if args.radii:
        radii = [(None, float(r)) for r in args.radii.split(",")]
    else:
        radii = [(share, r) for share, r in zip(SHARES, sample_radii(base, queries[:min(nq, 16)]))]

    index = faiss.IndexFlatL2(dim)
    index.add(base)
    rows = []
    for share, radius in radii:
        found = 0

        def search():
            nonlocal found
            lims, _, _ = index.range_search(queries, radius)
            found = int(lims[-1])

        search()
        times = []
        for _ in range(max(1, args.runs)):
            start = time.perf_counter()
            search()
            times.append(time.perf_counter() - start)
        seconds = statistics.median(times)
        what = f"{share * 100:g}%" if share is not None else "given"
        task = f"range {n}x{dim}, {nq} queries, {what} (r={radius:.4g})"
        note = f"{found / nq:.1f} hits/query"
        print(f"  {task:<44} {'faiss-cpu':<14} {seconds * 1e3:10.3f} ms  {nq / seconds:10.1f} QPS      {note}",
              flush=True)
        rows.append({"task": task, "mode": f"faiss-cpu,{args.threads} threads", "median_ms": seconds * 1e3,
                     "rate": nq / seconds, "unit": "QPS", "device": cpu_name(), "runs": args.runs,
                     "impl": f"faiss {faiss.__version__}", "note": note})
    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
