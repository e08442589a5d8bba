#!/usr/bin/env python3
"""quiver's k-means (qv_kmeans through ctypes on libquiver.so, a CPU context) against faiss-cpu's
faiss.Kmeans, side by side in one process, on Fashion-MNIST or a `quiver gen` folder (--data DIR).

Both cluster the same vectors into --k centroids with --iterations Lloyd iterations, the same thread
count and the same sampling rule (at most 256 points per centroid: every point of Fashion-MNIST at
k = 1024). The runs alternate (quiver, faiss, quiver, ...), so a burst of other work on the machine
hits both alike; each row is the median wall time of --repeats runs. Quality is compared on the same
footing: the objective (sum of squared distances to the nearest centroid) of every point against each
method's final centroids, computed afterwards by one exact search.

    python3 bench/cpu/kmeans_vs_faiss.py --lib build/libquiver.so --threads 2 --json bench/cpu/out/kmeans.json
"""
import argparse
import ctypes
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "graph"))
from graph_vs_hnswlib import FASHION, Quiver, read_idx, read_vecs  # noqa: E402

POINTS_PER_CENTROID = 256  # both libraries' default sample rule


class KmeansParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("iterations", ctypes.c_uint32), ("seed", ctypes.c_uint64),
                ("max_points_per_centroid", ctypes.c_int64), ("progress", ctypes.c_void_p),
                ("user_data", ctypes.c_void_p)]


class QuiverKmeans(Quiver):
    """graph_vs_hnswlib's CPU context with `threads`, and qv_kmeans on it."""

    def __init__(self, lib_path, threads):
        super().__init__(lib_path, threads)
        self.lib.qv_kmeans_params_init_sized.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

    def train(self, x, k, iterations, seed):
        params = KmeansParams()
        self.check(self.lib.qv_kmeans_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)), "params")
        params.iterations, params.seed, params.max_points_per_centroid = iterations, seed, POINTS_PER_CENTROID
        centroids = np.empty((k, x.shape[1]), np.float32)
        self.check(self.lib.qv_kmeans(self.ctx, ctypes.c_int64(x.shape[1]), ctypes.c_int64(len(x)),
                                      x.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint32(k), ctypes.byref(params),
                                      centroids.ctypes.data_as(ctypes.c_void_p), None, None), "qv_kmeans")
        return centroids


def objective(faiss, x, centroids):
    """Sum of squared distances of every point to its nearest centroid (exact search)."""
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(centroids)
    distances, _ = index.search(x, 1)
    return float(distances.astype(np.float64).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(REPO, "build", "libquiver.so"))
    ap.add_argument("--data", default="", help="a `quiver gen` folder (base.fvecs); default Fashion-MNIST")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    try:
        import faiss
    except ImportError:
        sys.exit("faiss-cpu is not installed (pip install faiss-cpu)")
    faiss.omp_set_num_threads(args.threads)
    if args.data:
        dataset, x = os.path.basename(os.path.normpath(args.data)), read_vecs(os.path.join(args.data, "base.fvecs"),
                                                                              np.float32)
    else:
        dataset, x = "fashion-mnist", read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz"))
    x = np.ascontiguousarray(x, np.float32)
    quiver = QuiverKmeans(args.lib, args.threads)

    def run_faiss():
        km = faiss.Kmeans(x.shape[1], args.k, niter=args.iterations, seed=args.seed,
                          max_points_per_centroid=POINTS_PER_CENTROID, verbose=False)
        km.train(x)
        return km.centroids

    runs = {"quiver": (lambda: quiver.train(x, args.k, args.iterations, args.seed), []), "faiss-cpu": (run_faiss, [])}
    centroids = {}
    for r in range(args.repeats):
        for name, (run, times) in runs.items():
            t0 = time.perf_counter()
            centroids[name] = run()
            times.append(time.perf_counter() - t0)
            print(f"round {r + 1}: {name} {times[-1]:.2f} s", flush=True)
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {args.threads} threads"
    versions = {"quiver": quiver.version(), "faiss-cpu": importlib.metadata.version("faiss-cpu")}
    task = f"k-means {dataset} {len(x)}x{x.shape[1]} -> {args.k}, {args.iterations} iterations"
    rows = []
    for name, (_, times) in runs.items():
        row = {"task": task, "impl": name, "version": versions[name], "median_s": statistics.median(times),
               "runs_s": times, "objective": objective(faiss, x, centroids[name]), "threads": args.threads,
               "machine": machine, "date": datetime.date.today().isoformat()}
        if name != "quiver":
            row["baseline"] = name
        rows.append(row)
    print(f"\n{task}, {machine}")
    for row in rows:
        print(f"  {row['impl']:10s} {row['version']:10s} {row['median_s']:8.2f} s   objective {row['objective']:.6g}")
    print(f"  quiver / faiss-cpu: {rows[1]['median_s'] / rows[0]['median_s']:.2f}x faster, objective ratio "
          f"{rows[0]['objective'] / rows[1]['objective']:.4f}")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
