#!/usr/bin/env python3
"""Benchmarks quiver against the baselines of BENCHMARKS.md, side by side, on the same data.

quiver's rows come from `quiver bench --json`; the baselines (faiss-cpu, hnswlib, and on a CUDA
machine PyTorch matmul + topk) run here on the same vectors, with the same thread count and the same
protocol (one warm-up, then the median of --repeats timed runs of all queries in one call, recall@10).
Writes JSON lines (one object per measurement), a recall@10-vs-QPS plot next to them, and prints a
table with quiver/baseline QPS ratios and each method's best QPS at recall@10 >= 0.95 and 0.99.
A baseline whose module is missing is skipped with a note.

Inverted-file descriptors ("IVF1024,Flat", "IVF1024,PQ32", "OPQ32,IVF1024,PQ32", any of them with
",Refine") run in faiss through faiss.index_factory with the same string (",Refine" becomes faiss'
",RFlat", whose k_factor is quiver's refine factor), trained on the same vectors, over the same nprobe
(x refine) sweep: by default 1, 2, 4, ... up to min(256, nlist).

    python3 bench/compare.py --dataset fashion-mnist --index Flat --json out/fm.json --threads 2
    python3 bench/compare.py --dataset fashion-mnist --index IVF1024,Flat --json out/fm-ivf.json --threads 2

Graph descriptors ("Graph32") are swept over --width (quiver's search_width) and compared with hnswlib
at each --hnsw-m (default 16 and 32 for a graph index), efConstruction 200, over the --ef sweep;
faiss has no equivalent of quiver's graph and is skipped for them.
    python3 bench/compare.py --dataset fashion-mnist --index Graph32 --width 10,16,24,32,48,64,96 \
        --ef 10,16,24,32,48,64,96,128 --json out/fm-graph.json --threads 2
"""
import argparse
import datetime
import gzip
import importlib
import importlib.metadata
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot_curves  # noqa: E402  (bench/plot_curves.py: the plot and the target-recall summary)
from plot_curves import fmt_params, method  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYNTH_NAMES = ("synth-100k-128", "synth-1m-128", "synth-10m-96")
HNSW_M = 16                 # the graph baseline BENCHMARKS.md names
HNSW_EF_CONSTRUCTION = 200  # hnswlib's recommended build quality
DEFAULT_EF = "10,16,32,64,128,256,512"
RECALL_DEPTH = 10
MAX_DEFAULT_NPROBE = 256     # as `quiver bench`: the default sweep is the powers of two up to this
DEFAULT_REFINE = [8]         # refine factor(s) for ",Refine" descriptors when --refine is not given
PROTOCOL_REPEATS = 5         # latency rows, as `quiver bench`: at least this many batches...
MAX_LATENCY_QUERIES = 1000   # ...over at most this many queries...
LATENCY_BUDGET_S = 10.0      # ...or this long
LATENCY_BATCHES = (1, 100)


def note(msg):
    print(f"note: {msg}", flush=True)


# ---- data: the same readers as the quiver tool, so both sides see identical vectors ----------------

def fashion_dir():
    return os.environ.get("QUIVER_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"


def read_texmex(path, dtype):
    """.fvecs / .ivecs / .bvecs: per row a little-endian int32 dimension, then the values."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0:
        return np.zeros((0, 0), dtype)
    dim = int(raw[:4].view("<i4")[0])
    item = np.dtype(dtype).itemsize
    record = 4 + dim * item
    if dim <= 0 or raw.size % record:
        sys.exit(f"{path}: truncated or corrupt TEXMEX file (dimension {dim}, size {raw.size})")
    rows = raw.reshape(-1, record)
    if not (rows[:, :4].copy().view("<i4") == dim).all():
        sys.exit(f"{path}: corrupt TEXMEX file: rows of different dimensions")
    return rows[:, 4:].copy().view(np.dtype(dtype).newbyteorder("<")).astype(dtype, copy=False)


def read_idx_ubyte(path):
    """IDX (MNIST format), gzip or raw, unsigned bytes -> float32 rows of 0..255."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] or data[1] or data[2] != 0x08:
        sys.exit(f"{path}: not an unsigned-byte IDX file")
    rank = data[3]
    dims = np.frombuffer(data, ">u4", count=rank, offset=4).astype(np.int64)
    per_item = int(np.prod(dims[1:])) if rank > 1 else 1
    body = np.frombuffer(data, np.uint8, offset=4 + 4 * rank)
    if body.size < dims[0] * per_item:
        sys.exit(f"{path}: truncated IDX file")
    return body[: dims[0] * per_item].reshape(int(dims[0]), per_item).astype(np.float32)


class Dataset:
    def __init__(self, name, quiver_arg, base, queries, gt):
        self.name, self.quiver_arg = name, quiver_arg
        self.base, self.queries, self.gt = base, queries, gt


def load_dataset(spec, quiver_bin, cache_dir, nq):
    if spec == "fashion-mnist":
        d = fashion_dir()
        train = os.path.join(d, "train-images-idx3-ubyte.gz")
        if not os.path.exists(train):
            sys.exit(f"fashion-mnist: {train} not found; install the Debian package "
                     "dataset-fashion-mnist (apt-get install dataset-fashion-mnist)")
        base = read_idx_ubyte(train)
        queries = read_idx_ubyte(os.path.join(d, "t10k-images-idx3-ubyte.gz"))
        return Dataset(spec, spec, base, queries[:nq], None)
    folder = spec
    if spec in SYNTH_NAMES:
        folder = os.path.join(cache_dir, spec)
        if not os.path.exists(os.path.join(folder, "gt.ivecs")):
            print(f"generating {spec} into {folder} (once; later runs reuse it)", flush=True)
            run_checked([quiver_bin, "gen", "--dataset", spec, "--out", folder])
    if not os.path.isdir(folder) or not os.path.exists(os.path.join(folder, "base.fvecs")):
        sys.exit(f"--dataset {spec}: not fashion-mnist, a synth-* name or a `quiver gen` folder")
    gt_path = os.path.join(folder, "gt.ivecs")
    gt = read_texmex(gt_path, np.int32)[:nq] if os.path.exists(gt_path) else None
    return Dataset(os.path.basename(os.path.normpath(folder)), folder,
                   read_texmex(os.path.join(folder, "base.fvecs"), np.float32),
                   read_texmex(os.path.join(folder, "query.fvecs"), np.float32)[:nq], gt)


def exact_ground_truth(base, queries, depth, metric):
    """Exact top-depth with NumPy's BLAS, independent of both quiver and the baselines."""
    if metric == "cosine":
        base, queries = normalized(base), normalized(queries)
    base_sq = (base.astype(np.float64) ** 2).sum(1).astype(np.float32)
    out = np.empty((len(queries), depth), np.int64)
    chunk = max(1, (1 << 27) // max(1, len(base)))  # about 512 MB of scores at a time
    for q0 in range(0, len(queries), chunk):
        scores = queries[q0:q0 + chunk] @ base.T
        # Rank by "smaller is closer" for every metric.
        key = base_sq[None, :] - 2 * scores if metric == "l2" else -scores
        part = np.argpartition(key, depth - 1, axis=1)[:, :depth]
        order = np.take_along_axis(key, part, 1).argsort(1, kind="stable")
        out[q0:q0 + chunk] = np.take_along_axis(part, order, 1)
    return out


def normalized(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def recall_at(ids, gt, r=RECALL_DEPTH):
    """Mean over queries of |first r returned ∩ first r true| / r (BENCHMARKS.md)."""
    ids, gt = np.asarray(ids)[:, :r], np.asarray(gt)[: len(ids), :r]
    hits = (ids[:, :, None] == gt[:, None, :]).any(2) & (ids >= 0)
    return float(hits.sum()) / (len(ids) * r)


# ---- timing: the protocol, shared by every baseline ---------------------------------------------

def timed(fn, repeats):
    """One warm-up call, then the median wall time of `repeats` calls; returns (seconds, last result)."""
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# ---- machine description and rows ------------------------------------------------------------------

def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def gpu_description():
    """{"gpu": name} when PyTorch sees a CUDA device (quiver names it only when it runs there)."""
    try:
        torch = importlib.import_module("torch")
        if torch.cuda.is_available():
            return {"gpu": torch.cuda.get_device_name(0)}
    except ImportError:
        pass
    return {}


def module_version(module, dist_names):
    for name in dist_names:
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return dist_names[0], getattr(module, "__version__", "unknown")


class RowMaker:
    """Fills the fields every JSON row shares, so baseline rows line up with quiver's."""

    def __init__(self, args, data, machine, quiver_version, command):
        self.common = dict(dataset=data.name, n=len(data.base), d=data.base.shape[1],
                           nq=len(data.queries), k=args.k, metric=args.metric, threads=args.threads,
                           batch=len(data.queries), machine=machine,
                           quiver_version=quiver_version, command=command)
        self.gt = data.gt

    def row(self, baseline, index, params, device, build_s, search_s, ids, repeats, batch=None,
            train_s=None, add_s=None):
        """batch: queries per call (default all: a throughput row); ids: the answered queries' rows."""
        r = dict(self.common)
        batch = batch or r["nq"]
        r.update(index=index, params=params, device=device, batch=batch, build_s=build_s)
        if train_s is not None:
            r.update(train_s=train_s, add_s=add_s)
        r.update(search_s=search_s, qps=batch / search_s,
                 recall10=recall_at(ids, self.gt) if r["k"] >= RECALL_DEPTH else None,
                 recall_at_k=recall_at(ids, self.gt, min(r["k"], self.gt.shape[1])),
                 repeats=repeats, baseline=baseline,
                 time=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if batch < r["nq"]:
            r["latency_ms"] = search_s * 1e3
        what = f"{r['qps']:12.0f} QPS" if batch == r["nq"] else f"batch {batch:3d} {search_s * 1e3:8.3f} ms"
        print(f"  {baseline:28s} {index:24s} {fmt_params(params):22s} "
              f"{what}  recall@10 {fmt(r['recall10'])}", flush=True)
        return r


def latency(search, queries, batch):
    """Consecutive batches of `batch` queries, each its own call, as `quiver bench --latency`:
    one warm-up, then up to MAX_LATENCY_QUERIES queries or LATENCY_BUDGET_S seconds (at least
    PROTOCOL_REPEATS batches). Returns (median seconds per call, ids of the answered queries, calls)."""
    batches = min(len(queries), MAX_LATENCY_QUERIES) // batch
    search(queries[:batch])
    times, ids = [], []
    budget = time.perf_counter()
    for b in range(batches):
        if b >= PROTOCOL_REPEATS and time.perf_counter() - budget > LATENCY_BUDGET_S:
            break
        q = queries[b * batch:(b + 1) * batch]
        t0 = time.perf_counter()
        ids.append(search(q))
        times.append(time.perf_counter() - t0)
    return statistics.median(times), np.concatenate(ids), len(times)


# ---- baselines ---------------------------------------------------------------------------------

def descriptor_nlist(descriptor):
    """nlist of the "IVF<nlist>" component, 0 when there is none (as `quiver bench` reads it)."""
    m = re.search(r"(?:^|,)IVF(\d+)", descriptor)
    return int(m.group(1)) if m else 0


def has_refine(descriptor):
    return any(c.startswith("Refine") or c == "RFlat" for c in descriptor.split(","))


def faiss_descriptor(descriptor):
    """quiver's descriptor in faiss' factory language: the same but for exact re-ranking, which
    faiss spells ",RFlat" (IndexRefineFlat over the raw vectors; its k_factor is our refine), and
    ",HostIds" (where a GPU index keeps its ids), which has no faiss counterpart and is dropped."""
    parts = [c for c in descriptor.split(",") if c != "HostIds"]
    return ",".join("RFlat" if c == "Refine" else c for c in parts)


def sweep_points(args):
    """The search parameters of every measurement, in the order and form of quiver's rows:
    refine factors (outer) x nprobe values; [{}] for an index with neither."""
    refines = args.refine or [None]
    nprobes = args.nprobe or [None]
    points = []
    for refine in refines:
        for nprobe in nprobes:
            p = {}
            if nprobe is not None:
                p["nprobe"] = nprobe
            if refine is not None:
                p["refine"] = refine
            points.append(p)
    return points


def faiss_rows(args, data, rows):
    try:
        faiss = importlib.import_module("faiss")
    except ImportError:
        note("faiss is not installed here (pip install faiss-cpu); skipping the faiss baseline")
        return []
    dist, version = module_version(faiss, ["faiss-cpu", "faiss-gpu", "faiss"])
    name = f"{dist} {version}"
    faiss.omp_set_num_threads(args.threads)
    base, queries = data.base, data.queries
    if args.metric == "cosine":
        base, queries = normalized(base), normalized(queries)
    metric = faiss.METRIC_L2 if args.metric == "l2" else faiss.METRIC_INNER_PRODUCT
    descriptor = faiss_descriptor(args.index)
    try:
        index = faiss.index_factory(base.shape[1], descriptor, metric)
    except RuntimeError as e:
        note(f"faiss does not understand descriptor {descriptor!r} ({e}); skipping faiss")
        return []
    train = base[:args.ntrain] if args.ntrain else base  # the vectors quiver trains on
    print(f"  faiss: building {descriptor!r} (train on {len(train)} vectors, add {len(base)})",
          flush=True)
    t0 = time.perf_counter()
    if not index.is_trained:
        index.train(train)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index.add(base)
    add_s = time.perf_counter() - t0
    ivf = None
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        pass
    out = []
    for params in sweep_points(args):
        if "nprobe" in params:
            if ivf is None:
                note(f"faiss {descriptor} has no nprobe; sweep ignored")
                params = {k: v for k, v in params.items() if k != "nprobe"}
            else:
                ivf.nprobe = params["nprobe"]
        if "refine" in params:
            if not hasattr(index, "k_factor"):
                note(f"faiss {descriptor} has no k_factor; refine ignored")
                params = {k: v for k, v in params.items() if k != "refine"}
            else:
                index.k_factor = float(params["refine"])
        search_s, (_, ids) = timed(lambda: index.search(queries, args.k), args.repeats)
        out.append(rows.row(name, args.index, params, "cpu", train_s + add_s, search_s, ids,
                            args.repeats, train_s=train_s, add_s=add_s))
        if args.latency:
            for batch in LATENCY_BATCHES:
                if batch < len(queries):  # batch nq is the throughput row
                    lat_s, lat_ids, calls = latency(lambda q: index.search(q, args.k)[1], queries, batch)
                    out.append(rows.row(name, args.index, params, "cpu", train_s + add_s, lat_s,
                                        lat_ids, calls, batch=batch, train_s=train_s, add_s=add_s))
        if not params:
            break  # nothing to sweep
    return out


def hnswlib_rows(args, data, rows):
    try:
        hnswlib = importlib.import_module("hnswlib")
    except ImportError:
        note("hnswlib is not installed here; skipping the hnswlib baseline")
        return []
    name = "%s %s" % module_version(hnswlib, ["hnswlib"])
    space = {"l2": "l2", "ip": "ip", "cosine": "cosine"}[args.metric]
    out = []
    for m in args.hnsw_m:
        index = hnswlib.Index(space=space, dim=data.base.shape[1])
        t0 = time.perf_counter()
        index.init_index(max_elements=len(data.base), M=m, ef_construction=HNSW_EF_CONSTRUCTION,
                         random_seed=100)
        index.add_items(data.base, num_threads=args.threads)
        build_s = time.perf_counter() - t0
        for ef in args.ef:
            if ef < args.k:
                continue  # hnswlib needs ef >= k
            index.set_ef(ef)
            search_s, (ids, _) = timed(
                lambda: index.knn_query(data.queries, k=args.k, num_threads=args.threads), args.repeats)
            params = {"M": m, "ef_construction": HNSW_EF_CONSTRUCTION, "ef": ef}
            out.append(rows.row(name, f"HNSW{m}", params, "cpu", build_s, search_s,
                                ids.astype(np.int64), args.repeats))
    return out


def torch_rows(args, data, rows):
    """Exact search as many users write it on the GPU: one fp32 matmul and topk."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    name = f"torch {torch.__version__} matmul+topk"
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32, the same arithmetic quiver's rows use
    base, queries = data.base, data.queries
    if args.metric == "cosine":
        base, queries = normalized(base), normalized(queries)
    t0 = time.perf_counter()
    xb = torch.from_numpy(np.ascontiguousarray(base)).to(dev)
    xb_sq = (xb * xb).sum(1) if args.metric == "l2" else None
    torch.cuda.synchronize()
    build_s = time.perf_counter() - t0
    # Query chunks keep the score matrix near 2 GB whatever the base size.
    chunk = max(1, (1 << 29) // len(base))

    def search_device(xq):
        ids = []
        for q0 in range(0, len(xq), chunk):
            scores = xq[q0:q0 + chunk] @ xb.T
            if xb_sq is not None:
                ids.append(torch.topk(xb_sq[None, :] - 2 * scores, args.k, largest=False).indices)
            else:
                ids.append(torch.topk(scores, args.k, largest=True).indices)
        return torch.cat(ids)

    def host_to_host():
        ids = search_device(torch.from_numpy(queries).to(dev)).cpu().numpy()
        torch.cuda.synchronize()
        return ids

    xq_dev = torch.from_numpy(queries).to(dev)

    def device_resident():
        ids = search_device(xq_dev)
        torch.cuda.synchronize()
        return ids

    out = []
    for io, fn in (("host", host_to_host), ("device", device_resident)):
        search_s, ids = timed(fn, args.repeats)
        ids = ids if isinstance(ids, np.ndarray) else ids.cpu().numpy()
        # Exact search whatever args.index is: its rows say "Flat" (the recall-1.0 reference point).
        out.append(rows.row(name, "Flat", {"io": io}, "cuda:0", build_s, search_s, ids,
                            args.repeats))
    return out


# ---- quiver ------------------------------------------------------------------------------------

def run_checked(cmd):
    print("$ " + shlex.join(cmd), flush=True)
    proc = subprocess.run(cmd)
    if proc.returncode:
        sys.exit(f"command failed with exit code {proc.returncode}: {shlex.join(cmd)}")


def quiver_rows(args, data):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "quiver.json")
        cmd = [args.quiver, "bench", "--dataset", data.quiver_arg, "--index", args.index,
               "--metric", args.metric, "--k", str(args.k), "--threads", str(args.threads),
               "--repeats", str(args.repeats), "--device", args.device, "--json", out]
        if args.nq:
            cmd += ["--nq", str(args.nq)]
        if args.nprobe:
            cmd += ["--nprobe", ",".join(map(str, args.nprobe))]
        if args.refine:
            cmd += ["--refine", ",".join(map(str, args.refine))]
        if args.width:
            cmd += ["--width", ",".join(map(str, args.width))]
        if args.ntrain:
            cmd += ["--ntrain", str(args.ntrain)]
        if args.mode:
            cmd += ["--mode", args.mode]
        if args.latency:
            cmd += ["--latency"]
        run_checked(cmd)
        with open(out) as f:
            return [json.loads(line) for line in f if line.strip()]


# ---- report ------------------------------------------------------------------------------------

def fmt(x, spec=".4f"):
    return "-" if x is None else format(x, spec)


def qps_ratio(row, quiver):
    """quiver QPS over this row's: at the same index and params if quiver measured them, else
    quiver's best QPS at a recall at least as high (a fair comparison between different indexes)."""
    kind = row["device"].split(":")[0]
    quiver = [q for q in quiver if q["device"].split(":")[0] == kind]  # CPU against CPU, GPU against GPU
    if not quiver:
        return None, f"no quiver row on {kind}"
    same = [q for q in quiver if q["index"] == row["index"] and q["params"] == row["params"]]
    if same:
        return same[0]["qps"] / row["qps"], "same params"
    if row["recall10"] is None:
        return None, ""
    better = [q for q in quiver if q["recall10"] is not None and q["recall10"] >= row["recall10"]]
    if not better:
        return None, "quiver never reaches this recall"
    return max(q["qps"] for q in better) / row["qps"], "at >= recall"


def print_table(rows, machine, command):
    quiver = [r for r in rows if "baseline" not in r and r["batch"] == r["nq"]]
    first = rows[0]
    print(f"\nmachine: {machine['cpu']}, {machine['cores']} logical CPUs"
          + (f", GPU {machine['gpu']}" if machine.get("gpu") else "")
          + f"; threads {first['threads']}")
    print(f"command: {command}")
    print(f"data:    {first['dataset']} n={first['n']} d={first['d']} nq={first['nq']} "
          f"k={first['k']} metric={first['metric']}\n")
    print(f"{'method':30s} {'index':24s} {'params':36s} {'device':7s} {'build_s':>8s} "
          f"{'search_s':>10s} {'QPS':>10s} {'recall@10':>9s}  quiver/this")
    for r in rows:
        if r["batch"] != r["nq"]:
            continue  # latency rows are quiver-only; they stay in the JSON
        ratio, why = qps_ratio(r, quiver) if "baseline" in r else (None, "")
        ratio_text = f"{ratio:.2f}x ({why})" if ratio else why
        print(f"{method(r)[:30]:30s} {r['index'][:24]:24s} {fmt_params(r['params'])[:36]:36s} "
              f"{r['device']:7s} {r['build_s']:8.3f} {r['search_s']:10.4f} {r['qps']:10.0f} "
              f"{fmt(r['recall10']):>9s}  {ratio_text}")


# ---- main --------------------------------------------------------------------------------------

def int_list(text):
    return [int(v) for v in text.split(",") if v]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True,
                   help="fashion-mnist, synth-100k-128 | synth-1m-128 | synth-10m-96, or a quiver gen folder")
    p.add_argument("--index", default="Flat",
                   help="descriptor: Flat (default), IVF1024,Flat, IVF1024,PQ32, OPQ32,IVF1024,PQ32, "
                        "...,Refine")
    p.add_argument("--json", required=True, help="JSON lines output; the plot goes beside it (.png)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads for every method")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--nq", type=int, default=0, help="use the first NQ queries (default all)")
    p.add_argument("--ntrain", type=int, default=0,
                   help="train every method on the first NTRAIN base vectors (default all)")
    p.add_argument("--metric", choices=["l2", "ip", "cosine"], default="l2")
    p.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (median)")
    p.add_argument("--nprobe", type=int_list, default=None,
                   help="nprobe sweep, e.g. 1,2,4,8 (IVF; default 1,2,4,... up to min(256, nlist))")
    p.add_argument("--refine", type=int_list, default=None,
                   help="refine factors of a ,Refine descriptor (faiss k_factor), e.g. 2,4,8 "
                        f"(default {','.join(map(str, DEFAULT_REFINE))})")
    p.add_argument("--latency", action="store_true",
                   help="also time batches of 1 and 100 queries (quiver and faiss)")
    p.add_argument("--ef", type=int_list, default=int_list(DEFAULT_EF), help="hnswlib ef sweep")
    p.add_argument("--width", type=int_list, default=None,
                   help="search_width sweep of a Graph index, e.g. 10,16,32,64 (default: the index's)")
    p.add_argument("--hnsw-m", type=int_list, default=None,
                   help=f"hnswlib M values (default {HNSW_M}; 16,32 for a Graph index)")
    p.add_argument("--hnsw", action="store_true", help="run the hnswlib curve also for Flat")
    p.add_argument("--skip", type=lambda t: [v for v in t.split(",") if v], default=[],
                   help="methods to leave out, e.g. hnswlib or faiss,torch; quiver for a "
                        "baselines-only dry run")
    p.add_argument("--targets", default="0.95,0.99", help="recall@10 targets of the summary")
    p.add_argument("--device", default="auto", help="quiver's device: auto | cpu | cuda")
    p.add_argument("--mode", help="quiver's --mode (GPU arithmetic), e.g. fp16")
    p.add_argument("--quiver", default=os.path.join(REPO, "build", "bin", "quiver"))
    p.add_argument("--cache", default=os.path.join(REPO, "data"), help="where synth-* data is generated")
    p.add_argument("--append", action="store_true", help="append to --json instead of replacing it")
    args = p.parse_args()
    nlist = descriptor_nlist(args.index)
    if args.nprobe is None:
        args.nprobe = []
        while nlist and (1 << len(args.nprobe)) <= min(MAX_DEFAULT_NPROBE, nlist):
            args.nprobe.append(1 << len(args.nprobe))
    if nlist and any(v < 1 or v > nlist for v in args.nprobe):
        p.error(f"--nprobe: values must be in 1 .. nlist = {nlist}")
    if args.refine is None:
        args.refine = list(DEFAULT_REFINE) if has_refine(args.index) else []
    elif args.refine and not has_refine(args.index):
        p.error(f"--refine: {args.index!r} has no ,Refine component to re-rank with")
    is_graph = args.index.startswith("Graph")
    if args.width and not is_graph:
        p.error(f"--width: {args.index!r} is not a graph index")
    if args.hnsw_m is None:
        args.hnsw_m = [16, 32] if is_graph else [HNSW_M]
    if is_graph and "faiss" not in args.skip:
        args.skip.append("faiss")  # no faiss index is quiver's graph; hnswlib is the baseline
    unknown = set(args.skip) - {"quiver", "faiss", "hnswlib", "torch"}
    if unknown:
        p.error(f"--skip: unknown method(s) {', '.join(sorted(unknown))} (quiver, faiss, hnswlib, torch)")
    return args


def main():
    args = parse_args()
    if not os.access(args.quiver, os.X_OK) and "quiver" not in args.skip:
        sys.exit(f"{args.quiver}: no quiver binary; build it first "
                 "(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2)")
    command = shlex.join([sys.executable] + sys.argv)
    data = load_dataset(args.dataset, args.quiver, args.cache, args.nq or None)
    print(f"data: {data.name} n={len(data.base)} d={data.base.shape[1]} nq={len(data.queries)}", flush=True)

    if "quiver" in args.skip:  # a baselines-only dry run
        q_rows = []
        machine = {"cpu": cpu_model(), "cores": os.cpu_count()}
        version = None
    else:
        q_rows = quiver_rows(args, data)
        if not q_rows:
            sys.exit("quiver bench wrote no rows")
        machine = dict(q_rows[0]["machine"])
        version = q_rows[0]["quiver_version"]
    if "gpu" not in machine:
        machine.update(gpu_description())
    if data.gt is None or data.gt.shape[1] < max(args.k, RECALL_DEPTH) or args.metric != "l2":
        t0 = time.perf_counter()
        data.gt = exact_ground_truth(data.base, data.queries, max(args.k, RECALL_DEPTH), args.metric)
        print(f"ground truth for the baselines: exact NumPy top-{data.gt.shape[1]} "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
    rows = RowMaker(args, data, machine, version, command)

    print("baselines:", flush=True)
    b_rows = []
    if "faiss" not in args.skip:
        b_rows += faiss_rows(args, data, rows)
    if (args.index != "Flat" or args.hnsw) and "hnswlib" not in args.skip:
        b_rows += hnswlib_rows(args, data, rows)
    if "torch" not in args.skip:
        b_rows += torch_rows(args, data, rows)

    all_rows = q_rows + b_rows
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "a" if args.append else "w") as f:
        for r in all_rows:
            f.write(json.dumps(r) + "\n")
    print(f"JSON lines: {args.json}")
    print_table(all_rows, machine, command)
    plot_curves.summary(all_rows, [float(t) for t in args.targets.split(",") if t])
    plot_curves.latency_table(all_rows)
    title = (f"{data.name} n={len(data.base)} d={data.base.shape[1]} k={args.k}, "
             f"{args.threads} threads, {machine['cpu']}" + (f", {machine['gpu']}" if machine.get("gpu") else ""))
    plot_curves.plot(all_rows, os.path.splitext(args.json)[0] + ".png", title)


if __name__ == "__main__":
    main()
