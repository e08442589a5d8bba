#!/usr/bin/env python3
"""SONG (issue 14's targets): quiver's graph index searched on the GPU, against quiver's own GPU
IVF-Flat and single-thread hnswlib, in one process on one machine, through the C ABI (ctypes on
libquiver.so) and hnswlib's Python module.

For each method a sweep of its knob (graph: search_width; IVF-Flat: nprobe; hnswlib: ef) over the
same queries, host to host (queries in host memory, results back in host memory), one warm-up then
the median of --repeats timed calls; then batch-1 latency (one query a call, median over
--latency-queries queries) of the graph at the narrowest width reaching recall@10 0.95. Prints the
best QPS of each method at recall@10 >= 0.95 and 0.99 and the ratios the issue names; writes JSON
lines in bench/compare.py's row format.

    python3 bench/graph/song_bench.py --lib build-gpu/libquiver.so                 # Fashion-MNIST
    python3 bench/graph/song_bench.py --lib build-gpu/libquiver.so --data /tmp/synth-1m-128 --nlist 1024

hnswlib runs when it is importable (M=16, efConstruction 200, built with every core, searched with
one thread on the first --hnsw-nq queries); otherwise its rows are left out and said to be.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import graph_vs_hnswlib as common  # noqa: E402  (data, recall, the ctypes wrapper)

TARGETS = (0.95, 0.99)
MODES = {"fp32": 0, "tf32": 1, "fp16": 2, "bf16": 3}  # qv_compute_mode_t


class CudaRuntime:
    """The CUDA runtime through ctypes, for --io pinned / device and the queries' upload time."""

    def __init__(self):
        self.rt = None
        for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "/usr/local/cuda/lib64/libcudart.so"):
            try:
                self.rt = ctypes.CDLL(name)
                break
            except OSError:
                continue

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what}: CUDA error {rc}")

    def host_array(self, shape, dtype):
        """A numpy array in page-locked memory (never freed: the script's life)."""
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        p = ctypes.c_void_p()
        self.check(self.rt.cudaHostAlloc(ctypes.byref(p), ctypes.c_size_t(nbytes), 0), "cudaHostAlloc")
        return np.frombuffer((ctypes.c_char * nbytes).from_address(p.value), dtype).reshape(shape)

    def device(self, nbytes):
        p = ctypes.c_void_p()
        self.check(self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cudaMalloc")
        return p.value

    def copy(self, dst, src, nbytes):
        self.check(self.rt.cudaMemcpy(ctypes.c_void_p(dst), ctypes.c_void_p(src), ctypes.c_size_t(nbytes), 4),
                   "cudaMemcpy")  # cudaMemcpyDefault


class QueryIO:
    """Where a search's queries and results live: host (pageable numpy), pinned (page-locked host) or
    device memory. search(index, first, count, ...) answers queries [first, first + count); ids()
    the last call's ids in host memory, fetched outside any timing."""

    def __init__(self, kind, queries, k, cuda):
        self.kind, self.k, self.cuda = kind, k, cuda
        nq, d = queries.shape
        self.row = d * 4
        if kind in ("host", "pinned"):
            alloc = np.empty if kind == "host" else cuda.host_array
            self.q = alloc(queries.shape, np.float32)
            self.q[:] = queries
            self.dist, self.found = alloc((nq, k), np.float32), alloc((nq, k), np.int64)
            self.q_ptr, self.d_ptr, self.i_ptr = self.q.ctypes.data, self.dist.ctypes.data, self.found.ctypes.data
        else:
            self.q_ptr = cuda.device(queries.nbytes)
            cuda.copy(self.q_ptr, queries.ctypes.data, queries.nbytes)
            self.d_ptr, self.i_ptr = cuda.device(nq * k * 4), cuda.device(nq * k * 8)
            self.found = np.empty((nq, k), np.int64)
        self.count = nq

    def search(self, index, first, count, **kw):
        self.count = count
        index.search_raw(count, self.q_ptr + first * self.row, self.k, self.d_ptr + first * self.k * 4,
                         self.i_ptr + first * self.k * 8, **kw)

    def ids(self, first=0):
        if self.kind == "device":
            out = np.empty((self.count, self.k), np.int64)
            self.cuda.copy(out.ctypes.data, self.i_ptr + first * self.k * 8, out.nbytes)
            return out
        return np.array(self.found[first:first + self.count])


def median_seconds(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def sweep(label, search, ids, points, gt, nq, repeats, params):
    """search(v) answers every query; ids() gives the last answer's ids, read back untimed."""
    rows = []
    for v in points:
        search(v)
        recall = common.recall_at(ids(), gt)
        s = median_seconds(lambda: search(v), repeats)
        rows.append(dict(label=label, params=params(v), recall10=recall, search_s=s, qps=nq / s))
        print(f"  {label:14s} {str(params(v)):28s} recall@10 {recall:.4f}  QPS {nq / s:12.0f}  "
              f"({s * 1e3:8.3f} ms)", flush=True)
    return rows


def best(rows, target):
    ok = [r for r in rows if r["recall10"] >= target]
    return max(ok, key=lambda r: r["qps"]) if ok else None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", default=os.path.join(common.REPO, "build-gpu", "libquiver.so"))
    p.add_argument("--data", default="", help="a `quiver gen` folder instead of Fashion-MNIST")
    p.add_argument("--graph", default="Graph32", help="graph index descriptor")
    p.add_argument("--width", default="10,12,16,20,24,32,48,64,96,128", help="graph search_width sweep")
    p.add_argument("--graph-modes", default="fp32,fp16", help="compute modes of the graph's sweeps")
    p.add_argument("--hash", type=int, default=0, help="also SONG's hashing mode with codes of this many bits")
    p.add_argument("--hash-width", default="64,128,256,512,1024", help="search_width sweep of the hashing mode")
    p.add_argument("--nlist", type=int, default=256, help="IVF-Flat lists")
    p.add_argument("--ivf-modes", default="fp32,tf32", help="compute modes of IVF-Flat's sweeps")
    p.add_argument("--nprobe", default="1,2,3,4,6,8,12,16,24,32", help="IVF-Flat nprobe sweep")
    p.add_argument("--ef", default="10,16,24,32,48,64,96", help="hnswlib ef sweep")
    p.add_argument("--no-hnsw", action="store_true", help="leave hnswlib out")
    p.add_argument("--hnsw-nq", type=int, default=2000, help="queries hnswlib's single thread answers")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--latency-queries", type=int, default=300)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--nq", type=int, default=0, help="use the first NQ queries (default all)")
    p.add_argument("--io", choices=("host", "pinned", "device"), default="host",
                   help="where queries and results live: pageable host (numpy), page-locked host or device memory")
    p.add_argument("--cpu", action="store_true", help="quiver on a CPU context (a smoke test of the script)")
    p.add_argument("--json", default="", help="output (default bench/graph/out/song-<data set>.json)")
    args = p.parse_args()
    ints = lambda s: [int(v) for v in s.split(",") if v]  # noqa: E731

    dataset, base, queries, gt = common.load_data(args.data, args.nq)
    nq = len(queries)
    threads = os.cpu_count()
    print(f"data: {dataset} n={len(base)} d={base.shape[1]} nq={nq}", flush=True)
    rows = []
    queries = np.ascontiguousarray(queries, np.float32)
    cuda = CudaRuntime()
    if args.io != "host" and (cuda.rt is None or args.cpu):
        sys.exit(f"--io {args.io} needs a CUDA context and libcudart.so")
    if cuda.rt is not None and not args.cpu:
        # The floor under every host-to-host row: the pageable queries' copy to the device alone.
        dev = cuda.device(queries.nbytes)
        upload = median_seconds(lambda: cuda.copy(dev, queries.ctypes.data, queries.nbytes), args.repeats)
        print(f"the queries' copy alone, pageable host -> device (cudaMemcpy, {queries.nbytes / 2**20:.1f} MiB): "
              f"{upload * 1e3:.3f} ms", flush=True)
    io = QueryIO(args.io, queries, args.k, cuda)
    print(f"queries and results in {args.io} memory", flush=True)

    device = common.QV_DEVICE_CPU if args.cpu else common.QV_DEVICE_CUDA
    graph = common.Quiver(args.lib, threads, device)
    b = graph.build(args.graph, base)
    print(f"build: {args.graph} {b:.2f} s", flush=True)
    for mode in args.graph_modes.split(","):
        rows += sweep(f"{args.graph}-{mode}", lambda w: io.search(graph, 0, nq, width=w, mode=MODES[mode]), io.ids,
                      ints(args.width), gt, nq, args.repeats, lambda w: {"search_width": w})

    floats = len(base) * base.shape[1] * 4
    print(f"device bytes: {args.graph} {graph.info().device_bytes / 2**20:.1f} MiB "
          f"(the float vectors alone: {floats / 2**20:.1f} MiB)", flush=True)
    if args.hash:
        hashed = common.Quiver(args.lib, threads, device)
        descriptor = f"{args.graph},H{args.hash}"
        b = hashed.build(descriptor, base)
        device_bytes = hashed.info().device_bytes
        print(f"build: {descriptor} {b:.2f} s; device bytes {device_bytes / 2**20:.1f} MiB "
              f"({device_bytes / floats:.2f} of the float vectors)", flush=True)
        rows += sweep(descriptor, lambda w: io.search(hashed, 0, nq, width=w), io.ids, ints(args.hash_width), gt,
                      nq, args.repeats, lambda w: {"search_width": w})
        rows[-1]["device_bytes"] = device_bytes

    ivf = common.Quiver(args.lib, threads, device)
    rng = np.random.default_rng(1)
    train = base[rng.choice(len(base), min(len(base), 100 * args.nlist), replace=False)]
    descriptor = f"IVF{args.nlist},Flat"
    b = ivf.build(descriptor, base, train)
    print(f"build: {descriptor} {b:.2f} s", flush=True)
    for mode in args.ivf_modes.split(","):
        rows += sweep(f"{descriptor}-{mode}", lambda n: io.search(ivf, 0, nq, nprobe=n, mode=MODES[mode]), io.ids,
                      ints(args.nprobe), gt, nq, args.repeats, lambda n: {"nprobe": n})

    try:
        import hnswlib
    except ImportError:
        hnswlib = None
        print("hnswlib: not importable, its rows are left out", flush=True)
    if args.no_hnsw:
        hnswlib = None
    if hnswlib is not None:
        h = hnswlib.Index(space="l2", dim=base.shape[1])
        t0 = time.perf_counter()
        h.init_index(max_elements=len(base), M=16, ef_construction=common.HNSW_EF_CONSTRUCTION, random_seed=100)
        h.add_items(base, num_threads=threads)
        print(f"build: hnswlib M=16 {time.perf_counter() - t0:.2f} s ({threads} threads)", flush=True)
        hq, hgt = queries[:args.hnsw_nq], gt[:args.hnsw_nq]

        last = {}

        def hsearch(ef):
            h.set_ef(max(ef, args.k))
            last["ids"] = h.knn_query(hq, k=args.k, num_threads=1)[0]
        rows += sweep("hnswlib-1thr", hsearch, lambda: last["ids"].astype(np.int64), ints(args.ef), hgt, len(hq),
                      max(1, args.repeats // 2), lambda ef: {"M": 16, "ef": ef})

    # Batch-1 latency of each graph sweep at its narrowest width reaching 0.95.
    for mode in args.graph_modes.split(","):
        label = f"{args.graph}-{mode}"
        g95 = [r for r in rows if r["label"] == label and r["recall10"] >= 0.95]
        if not g95:
            continue
        width = min(r["params"]["search_width"] for r in g95)
        lat, found = [], []
        count = min(args.latency_queries, nq)
        for i in range(count):
            io.search(graph, i, 1, width=width, mode=MODES[mode])
            t0 = time.perf_counter()
            io.search(graph, i, 1, width=width, mode=MODES[mode])
            lat.append(time.perf_counter() - t0)
            found.append(io.ids(i))
        ms = statistics.median(lat) * 1e3
        # Small batches start their walks differently (cuda/graph/layer_scan.h): their own recall.
        recall = common.recall_at(np.vstack(found), gt[:count])
        print(f"batch-1 latency ({args.io} I/O), {label} width {width}: median {ms:.4f} ms, "
              f"p90 {np.percentile(lat, 90) * 1e3:.4f} ms, recall@10 {recall:.4f} over {count} queries", flush=True)
        rows.append(dict(label=label, params={"search_width": width, "batch": 1}, latency_ms=ms, recall10=recall))

    print("\nbest QPS at recall@10 >= target:")
    labels = list(dict.fromkeys(r["label"] for r in rows if "qps" in r))
    found = {}
    for label in labels:
        line = f"  {label:14s}"
        for t in TARGETS:
            r = best([x for x in rows if x["label"] == label and "qps" in x], t)
            found[(label, t)] = r
            line += f"  {t}: " + (f"{r['qps']:11.0f} ({r['params']})" if r else "-")
        print(line)
    graphs = [lb for lb in labels if lb.startswith(args.graph + "-")]
    ivfs = [lb for lb in labels if lb.startswith(descriptor + "-")]
    for t in TARGETS:
        pick = lambda names: max((found[(n, t)] for n in names if found[(n, t)]),  # noqa: E731
                                 key=lambda r: r["qps"], default=None)
        g, i, h = pick(graphs), pick(ivfs), found.get(("hnswlib-1thr", t))
        if g and i:
            print(f"ratio at {t}: best graph ({g['label']}) / best IVF-Flat ({i['label']}) = "
                  f"{g['qps'] / i['qps']:.2f}x")
        if g and h:
            print(f"ratio at {t}: best graph ({g['label']}) / hnswlib single thread = {g['qps'] / h['qps']:.1f}x")

    json_path = args.json or os.path.join(HERE, "out", f"song-{dataset}.json")
    os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
    with open(json_path, "w") as f:
        for r in rows:
            f.write(json.dumps(dict(r, dataset=dataset, n=len(base), d=base.shape[1], nq=nq, k=args.k, io=args.io))
                    + "\n")
    print(f"JSON lines: {json_path}")


if __name__ == "__main__":
    main()
