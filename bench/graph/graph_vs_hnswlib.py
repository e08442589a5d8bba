#!/usr/bin/env python3
"""quiver's graph index ("Graph<R>") against hnswlib, side by side in one process, on Fashion-MNIST
or on a folder written by `quiver gen` (--data DIR: base.fvecs, query.fvecs, gt.ivecs).

Both run in this process with the same thread count: quiver through ctypes on libquiver.so (the C
ABI, nothing else), hnswlib through its Python module. Every sweep point of every method is timed in
interleaved rounds (quiver point, hnswlib point, quiver point, ...), so a burst of other work on the
machine hits both alike; each row reports the median wall time of the rounds (QPS) and, as a check on
a busy machine, the median CPU time of the process ("cpu_qps" = nq / (cpu_s / threads): the QPS the
threads would give with the cores to themselves). Build time is measured the same way (wall), once.

Writes JSON lines in bench/compare.py's row format (quiver's rows without "baseline", hnswlib's with
it), a recall@10-vs-QPS PNG beside them (bench/plot_curves.py), and prints the best QPS at recall@10
>= 0.95 and 0.99 of each curve.

    python3 bench/graph/graph_vs_hnswlib.py --lib build/libquiver.so --threads 2 \\
        --index Graph32 --index Graph24 --width 10,12,16,24,32,48,64 --ef 10,16,24,32,48,64,96,128 \\
        --json bench/graph/out/fashion-mnist.json
    build/bin/quiver gen --dataset synth-1m-128 --out /tmp/synth-1m-128
    python3 bench/graph/graph_vs_hnswlib.py --data /tmp/synth-1m-128 --json bench/graph/out/synth-1m-128.json
"""
import argparse
import ctypes
import datetime
import gzip
import importlib.metadata
import json
import os
import platform
import shlex
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import plot_curves  # noqa: E402  (bench/plot_curves.py)

FASHION = os.environ.get("QUIVER_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"
RECALL_DEPTH = 10
HNSW_EF_CONSTRUCTION = 200


# ---- data ----------------------------------------------------------------------------------------

def read_idx(path):
    """IDX (MNIST) unsigned-byte images as float32 rows of the raw 0..255 values."""
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    if raw[2] != 0x08:
        sys.exit(f"{path}: not unsigned-byte IDX data")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(raw[3])]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * raw[3]).reshape(dims[0], -1).astype(np.float32)


def read_vecs(path, dtype):
    """.fvecs / .ivecs rows (each an int32 length, then that many values) as a 2-d array."""
    raw = np.fromfile(path, dtype=np.int32)
    d = int(raw[0])
    return raw.reshape(-1, d + 1)[:, 1:].view(dtype).copy()


def exact_truth(base, queries, depth):
    """Exact L2 top-depth ids, in float64 blocks (ties by id)."""
    norms = (base.astype(np.float64) ** 2).sum(1)
    out = np.empty((len(queries), depth), np.int64)
    for i in range(0, len(queries), 500):
        q = queries[i:i + 500].astype(np.float64)
        d = norms[None, :] - 2 * q @ base.T.astype(np.float64)
        part = np.argpartition(d, depth, axis=1)[:, :depth + 1]
        for r in range(len(q)):
            cand = part[r]
            order = np.lexsort((cand, d[r, cand]))
            out[i + r] = cand[order][:depth]
    return out


def load_data(folder, nq=0):
    """(name, base, queries, top-10 ground truth) of a `quiver gen` folder, or of Fashion-MNIST when
    folder is empty; the first nq queries when nq > 0."""
    if folder:
        dataset = os.path.basename(os.path.normpath(folder))
        base = read_vecs(os.path.join(folder, "base.fvecs"), np.float32)
        queries = read_vecs(os.path.join(folder, "query.fvecs"), np.float32)
        gt = read_vecs(os.path.join(folder, "gt.ivecs"), np.int32)[:, :RECALL_DEPTH].astype(np.int64)
    else:
        dataset = "fashion-mnist"
        base = read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz"))
        queries = read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"))
        gt = None
    if nq:
        queries = queries[:nq]
        gt = gt[:nq] if gt is not None else None
    queries = np.ascontiguousarray(queries)
    base = np.ascontiguousarray(base)
    if gt is None:
        gt = exact_truth(base, queries, RECALL_DEPTH)
    return dataset, base, queries, gt


def recall_at(ids, gt, r=RECALL_DEPTH):
    return float(np.mean([len(set(ids[i, :r]) & set(gt[i, :r])) / r for i in range(len(gt))]))


# ---- quiver through the C ABI --------------------------------------------------------------------

# The structs of quiver.h, passed to the init functions with their size (ctypes.sizeof).
class ContextOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("device", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("cpu_threads", ctypes.c_int32),
                ("device_count", ctypes.c_int32), ("device_ids", ctypes.c_int32 * 64)]


class SearchParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("filter", ctypes.c_void_p),
                ("filter_bits", ctypes.c_int64), ("nprobe", ctypes.c_uint32),
                ("search_width", ctypes.c_uint32), ("compute_mode", ctypes.c_int32),
                ("refine_factor", ctypes.c_uint32), ("max_range_results", ctypes.c_int64),
                ("graph_visited", ctypes.c_int32), ("graph_probes", ctypes.c_uint32),
                ("graph_warps_per_query", ctypes.c_uint32), ("graph_queries_per_warp", ctypes.c_uint32)]


class IndexInfo(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("dim", ctypes.c_int64), ("metric", ctypes.c_int32),
                ("is_trained", ctypes.c_int32), ("count", ctypes.c_int64), ("device", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("host_bytes", ctypes.c_int64), ("device_bytes", ctypes.c_int64),
                ("descriptor", ctypes.c_char * 128)]


QV_DEVICE_CPU = 1
QV_DEVICE_CUDA = 2
QV_METRIC_L2 = 0


class Quiver:
    """One context (CPU with `threads`, or CUDA device 0) and one index on it."""

    def __init__(self, lib_path, threads, device=QV_DEVICE_CPU):
        self.lib = ctypes.CDLL(lib_path)
        self.lib.qv_last_error_message.restype = ctypes.c_char_p
        self.lib.qv_version_string.restype = ctypes.c_char_p
        for init in (self.lib.qv_context_options_init_sized, self.lib.qv_search_params_init_sized):
            init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        opts = ContextOptions()
        self.check(self.lib.qv_context_options_init_sized(ctypes.byref(opts), ctypes.sizeof(opts)),
                   "qv_context_options_init_sized")
        opts.device, opts.cpu_threads = device, threads
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.qv_context_create(ctypes.byref(opts), ctypes.byref(self.ctx)), "qv_context_create")
        self.index = ctypes.c_void_p()

    def check(self, status, what):
        if status != 0:
            sys.exit(f"{what}: status {status}: {self.lib.qv_last_error_message().decode()}")

    def version(self):
        return self.lib.qv_version_string().decode()

    def build(self, descriptor, base, train=None):
        """Creates the index, trains it on `train` if given, adds `base`; returns the seconds taken."""
        self.check(self.lib.qv_index_create(self.ctx, descriptor.encode(), ctypes.c_int64(base.shape[1]),
                                            QV_METRIC_L2, ctypes.byref(self.index)), "qv_index_create")
        base = np.ascontiguousarray(base, np.float32)
        t0 = time.perf_counter()
        if train is not None:
            train = np.ascontiguousarray(train, np.float32)
            self.check(self.lib.qv_index_train(self.index, ctypes.c_int64(len(train)),
                                               train.ctypes.data_as(ctypes.c_void_p)), "qv_index_train")
        self.check(self.lib.qv_index_add(self.index, ctypes.c_int64(len(base)),
                                         base.ctypes.data_as(ctypes.c_void_p), None), "qv_index_add")
        return time.perf_counter() - t0

    def info(self):
        info = IndexInfo()
        self.check(self.lib.qv_index_info_init(ctypes.byref(info)), "qv_index_info_init")
        self.check(self.lib.qv_index_info(self.index, ctypes.byref(info)), "qv_index_info")
        return info

    def search(self, queries, k, width=0, nprobe=0, mode=0):
        """mode: qv_compute_mode_t (0 float32, 1 TF32, 2 float16, 3 bfloat16)."""
        dist = np.empty((len(queries), k), np.float32)
        ids = np.empty((len(queries), k), np.int64)
        self.search_raw(len(queries), queries.ctypes.data, k, dist.ctypes.data, ids.ctypes.data, width, nprobe,
                        mode)
        return ids

    def search_raw(self, nq, queries, k, distances, ids, width=0, nprobe=0, mode=0):
        """search() on addresses (host, page-locked or device memory) of nq queries and their results."""
        params = SearchParams()
        self.check(self.lib.qv_search_params_init_sized(ctypes.byref(params), ctypes.sizeof(params)),
                   "qv_search_params_init_sized")
        params.search_width = width
        params.compute_mode = mode
        if nprobe:
            params.nprobe = nprobe
        self.check(self.lib.qv_index_search(self.index, ctypes.c_int64(nq), ctypes.c_void_p(queries),
                                            ctypes.c_uint32(k), ctypes.byref(params), ctypes.c_void_p(distances),
                                            ctypes.c_void_p(ids)), "qv_index_search")


# ---- timing --------------------------------------------------------------------------------------

def timed_once(fn):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default=os.path.join(REPO, "build", "libquiver.so"))
    p.add_argument("--index", action="append", help="quiver descriptor (repeat for several; default Graph32)")
    p.add_argument("--width", default="10,12,16,24,32,48,64", help="quiver search_width sweep")
    p.add_argument("--ef", default="10,16,24,32,48,64,96,128", help="hnswlib ef sweep")
    p.add_argument("--hnsw-m", default="16,32", help="hnswlib M values")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5, help="timed rounds after one warm-up (median)")
    p.add_argument("--nq", type=int, default=0, help="use the first NQ queries (default all 10 000)")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--data", default="", help="a `quiver gen` folder instead of Fashion-MNIST")
    p.add_argument("--json", default="", help="output (default bench/graph/out/<data set>.json)")
    args = p.parse_args()
    widths = [int(v) for v in args.width.split(",") if v]
    efs = [int(v) for v in args.ef.split(",") if v]
    ms = [int(v) for v in args.hnsw_m.split(",") if v]
    command = shlex.join([sys.executable] + sys.argv)

    t0 = time.perf_counter()
    dataset, base, queries, gt = load_data(args.data, args.nq)
    json_path = args.json or os.path.join(HERE, "out", dataset + ".json")
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "load1": os.getloadavg()[0]}
    print(f"machine: {machine['cpu']}, {machine['cores']} CPUs, load {machine['load1']:.1f}; "
          f"threads {args.threads}\ncommand: {command}\n"
          f"data: {dataset} n={len(base)} d={base.shape[1]} nq={len(queries)} "
          f"(ground truth {time.perf_counter() - t0:.1f} s)", flush=True)

    import hnswlib
    hnsw_name = f"hnswlib {importlib.metadata.version('hnswlib')}"
    qv = Quiver(args.lib, args.threads)
    # Builds, one after the other (each alone on the machine's cores as far as this script goes).
    methods = []  # (label, index name, baseline, build_s, search(param) -> ids, params(param), points)
    for descriptor in args.index or ["Graph32"]:
        q = qv if not methods else Quiver(args.lib, args.threads)
        build_s = q.build(descriptor, base)
        print(f"build: quiver {descriptor} {build_s:.2f} s", flush=True)
        methods.append((descriptor, descriptor, None, build_s,
                        lambda w, q=q: q.search(queries, args.k, w), lambda w: {"search_width": w}, widths))
    for m in ms:
        h = hnswlib.Index(space="l2", dim=base.shape[1])
        t0 = time.perf_counter()
        h.init_index(max_elements=len(base), M=m, ef_construction=HNSW_EF_CONSTRUCTION, random_seed=100)
        h.add_items(base, num_threads=args.threads)
        b = time.perf_counter() - t0
        print(f"build: {hnsw_name} M={m} efConstruction={HNSW_EF_CONSTRUCTION} {b:.2f} s", flush=True)

        def search(ef, h=h):
            h.set_ef(max(ef, args.k))
            return h.knn_query(queries, k=args.k, num_threads=args.threads)[0].astype(np.int64)
        methods.append((f"HNSW{m}", f"HNSW{m}", hnsw_name, b, search,
                        lambda ef, m=m: {"M": m, "ef_construction": HNSW_EF_CONSTRUCTION, "ef": ef}, efs))

    # Interleaved rounds: every point of every method once per round.
    points = [(mi, v) for mi, meth in enumerate(methods) for v in meth[6]]
    walls = {pt: [] for pt in points}
    cpus = {pt: [] for pt in points}
    recalls = {}
    for rnd in range(args.repeats + 1):
        for mi, v in points:
            wall, cpu, ids = timed_once(lambda: methods[mi][4](v))
            if rnd == 0:  # warm-up; recall from it
                recalls[(mi, v)] = recall_at(ids, gt)
            else:
                walls[(mi, v)].append(wall)
                cpus[(mi, v)].append(cpu)
        print(f"round {rnd}/{args.repeats} done", flush=True)

    rows = []
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for mi, v in points:
        label, index, baseline, b, _, params, _ = methods[mi]
        wall, cpu = statistics.median(walls[(mi, v)]), statistics.median(cpus[(mi, v)])
        r = dict(dataset=dataset, n=len(base), d=base.shape[1], nq=len(queries), k=args.k,
                 metric="l2", index=index, params=params(v), device="cpu", threads=args.threads,
                 batch=len(queries), build_s=b, search_s=wall, qps=len(queries) / wall,
                 cpu_s=cpu, cpu_qps=len(queries) / (cpu / args.threads), recall10=recalls[(mi, v)],
                 repeats=args.repeats, machine=machine, command=command, time=stamp)
        if baseline:
            r["baseline"] = baseline
        else:
            r["quiver_version"] = qv.version()
        rows.append(r)
        print(f"  {label:12s} {plot_curves.fmt_params(r['params']):36s} recall@10 {r['recall10']:.4f} "
              f"QPS {r['qps']:9.0f}  cpu-QPS {r['cpu_qps']:9.0f}  build {b:7.2f} s", flush=True)

    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"JSON lines: {json_path}")
    for key, what in (("qps", "wall-clock QPS"), ("cpu_qps", "CPU-time QPS")):
        print(f"\nbest {what} at recall@10 >= target:")
        for label in dict.fromkeys(methods[mi][0] for mi, _ in points):
            line = f"  {label:12s}"
            for target in (0.95, 0.99):
                ok = [r for r, (mi, _) in zip(rows, points) if methods[mi][0] == label and r["recall10"] >= target]
                best = max(ok, key=lambda r: r[key]) if ok else None
                line += (f"  {target}: {best[key]:8.0f} ({plot_curves.fmt_params(best['params'])})" if best
                         else f"  {target}: -")
            print(line)
    title = f"{dataset} n={len(base)} d={base.shape[1]} k={args.k}, {args.threads} threads, {machine['cpu']}"
    plot_curves.plot(rows, os.path.splitext(json_path)[0] + ".png", title)


if __name__ == "__main__":
    main()
