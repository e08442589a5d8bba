#!/usr/bin/env python3
"""PyTorch's exact search (matmul + topk), the baseline many users reach for, on the shapes of
bench/gpu/gpu_bench.cu: 1M x 128 random base on the GPU, 10 000 queries from host memory, results
back in host memory; and topk alone on 10 000 x 128 000 keys. Same protocol: warm-up once, median
of at least 5 runs, CUDA events. Prints the table rows and, with --json FILE, one JSON object each."""
import argparse
import json
import statistics

import torch


def time_it(runs, fn):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="as gpu_bench: select, exact or modes (others have no baseline)")
    args = parser.parse_args()
    runs = max(5, args.runs)
    n, dim, nq, sel_cols = (100_000, 128, 1000, 12_800) if args.quick else (1_000_000, 128, 10_000, 128_000)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32, as quiver's exact search
    name = torch.cuda.get_device_name(0)
    print(f"torch_bench: PyTorch {torch.__version__}, {name}")
    rows = []

    def report(task, mode, ms, rate, unit):
        rows.append({"task": task, "mode": mode, "median_ms": ms, "rate": rate, "unit": unit, "device": name,
                     "runs": runs, "impl": f"pytorch {torch.__version__}"})
        print(f"  {task:<44} {mode:<14} {ms:10.3f} ms  {rate:10.1f} {unit}", flush=True)

    g = torch.Generator(device=dev)
    g.manual_seed(0)
    if args.only not in (None, "select", "exact", "modes"):
        print(f"torch_bench: no baseline for --only {args.only}")
        return
    keys = torch.rand(nq, sel_cols, device=dev, generator=g) * 2 - 1
    for k in (100, 1000) if args.only in (None, "select") else ():
        ms = time_it(runs, lambda: torch.topk(keys, k, dim=1, largest=False, sorted=True))
        report(f"topk {nq} x {sel_cols}, k={k}", "device", ms, keys.numel() * 4 / ms / 1e6, "GB/s")
    del keys

    base = torch.rand(n, dim, device=dev, generator=g) * 2 - 1
    base_norms = (base * base).sum(1)  # part of the index, not of the search
    queries = (torch.rand(nq, dim, generator=torch.Generator().manual_seed(1)) * 2 - 1)
    chunk = 2048  # queries per matmul: a 2048 x 1M distance block is 8 GB

    def search(q_host, k, b=base):
        q = q_host.to(dev, non_blocking=False)
        out_d, out_i = [], []
        for s in range(0, q.shape[0], chunk):
            qq = q[s:s + chunk]
            d = torch.addmm(base_norms.to(b.dtype), qq.to(b.dtype), b.T, beta=1, alpha=-2)
            v, i = torch.topk(d, k, dim=1, largest=False, sorted=True)
            out_d.append((v + (qq * qq).sum(1, keepdim=True)).clamp_min_(0))
            out_i.append(i)
        return torch.cat(out_d).cpu(), torch.cat(out_i).cpu()

    for k in (10, 100, 1024) if args.only in (None, "exact") else ():
        ms = time_it(runs, lambda: search(queries, k))
        report(f"exact {n}x{dim}, {nq} queries, k={k}", "host-to-host", ms, nq / ms * 1e3, "QPS")

    # The fast modes' baseline: the same search with TF32 or FP16 matmuls, no re-ranking.
    if args.only in (None, "modes"):
        half = base.half()
        for k in (10, 100):
            for mode in ("tf32", "fp16"):
                torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
                b = half if mode == "fp16" else base
                ms = time_it(runs, lambda: search(queries, k, b))
                report(f"exact {n}x{dim}, {nq} queries, k={k}", f"h2h,{mode}", ms, nq / ms * 1e3, "QPS")
        torch.backends.cuda.matmul.allow_tf32 = False

    if args.json:
        with open(args.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
