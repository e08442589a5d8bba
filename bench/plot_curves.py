#!/usr/bin/env python3
"""Recall@10-vs-QPS curves and a best-QPS-at-target-recall summary from benchmark JSON lines.

Reads the rows `quiver bench --json` and `bench/compare.py` write (BENCHMARKS.md fields), draws one
curve per method (method = quiver or a baseline with its version, plus index, device, compute mode and
refine factor) with recall@10 on x and QPS on a log y axis, and prints, for each target recall, every
method's best measured QPS at or above it (measured points only: no interpolation). Latency rows
(batch < nq) are listed apart and left out of the curves.

    python3 bench/plot_curves.py out/fm-ivf.json                 # writes out/fm-ivf.png
    python3 bench/plot_curves.py a.json b.json --out out/both.png --targets 0.9,0.95,0.99

compare.py uses the same functions for its plot and summary.
"""
import argparse
import json
import os
import sys

DEFAULT_TARGETS = (0.95, 0.99)


def load_rows(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: not a JSON line ({e})")
    return rows


def is_throughput(row):
    """A whole-batch row (the curves); latency rows have batch < nq."""
    return row.get("batch", row.get("nq")) == row.get("nq")


def method(row):
    return row.get("baseline") or f"quiver {row.get('quiver_version', '')}".strip()


def system_label(row):
    """What one summary line stands for: the method on one index and device, all its sweeps."""
    p = row.get("params") or {}
    extra = []
    if p.get("io") == "device":
        extra.append("device io")
    if p.get("compute_mode"):
        extra.append(p["compute_mode"])
    return f"{method(row)} {row['index']} ({', '.join([row['device']] + extra)})"


def curve_label(row):
    """One curve: a system at one refine factor (the sweep along the curve is nprobe or ef)."""
    refine = (row.get("params") or {}).get("refine")
    return system_label(row) + (f" refine={refine}" if refine else "")


def fmt_params(p):
    return ",".join(f"{k}={v}" for k, v in (p or {}).items()) or "-"


def curves(rows):
    out = {}
    for r in rows:
        if is_throughput(r) and r.get("recall10") is not None:
            out.setdefault(curve_label(r), []).append(r)
    for pts in out.values():
        pts.sort(key=lambda r: (r["recall10"], -r["qps"]))
    return out


def plot(rows, path, title):
    """Writes the PNG; returns False (with a note) when matplotlib is missing or nothing to draw."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib is not installed; no plot (pip install matplotlib, or plot the JSON "
              "lines elsewhere with bench/plot_curves.py)", flush=True)
        return False
    drawn = curves(rows)
    if not drawn:
        print("note: no throughput rows with recall@10; no plot", flush=True)
        return False
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for label, pts in sorted(drawn.items()):
        style = "-" if label.startswith("quiver") else "--"
        ax.plot([r["recall10"] for r in pts], [r["qps"] for r in pts], style, marker="o",
                markersize=4, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per second (log)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"plot: {path}", flush=True)
    return True


def best_at(rows, target):
    """The measured throughput row with the highest QPS among those with recall@10 >= target."""
    ok = [r for r in rows if r.get("recall10") is not None and r["recall10"] >= target]
    return max(ok, key=lambda r: r["qps"]) if ok else None


def summary(rows, targets=DEFAULT_TARGETS):
    """Prints each system's best QPS at each target recall, then quiver over each baseline."""
    systems = {}
    for r in rows:
        if is_throughput(r):
            systems.setdefault(system_label(r), []).append(r)
    if not systems:
        return
    print("\nbest measured QPS at recall@10 >= target (no interpolation; threads as in the rows):")
    width = max(len(s) for s in systems) + 2
    for target in targets:
        print(f"  target {target}:")
        for label, sys_rows in sorted(systems.items()):
            b = best_at(sys_rows, target)
            text = (f"{b['qps']:12.0f} QPS  recall {b['recall10']:.4f}  {fmt_params(b.get('params'))}"
                    f"  threads {b.get('threads')}" if b else "    not reached "
                    f"(best recall {max((r['recall10'] or 0) for r in sys_rows):.4f})")
            print(f"    {label:{width}s}{text}")
    quiver = {s: r for s, r in systems.items() if not r[0].get("baseline")}
    baselines = {s: r for s, r in systems.items() if r[0].get("baseline")}
    lines = []
    for target in targets:
        for q_label, q_rows in sorted(quiver.items()):
            q = best_at(q_rows, target)
            kind = q_rows[0]["device"].split(":")[0]
            for b_label, b_rows in sorted(baselines.items()):
                if b_rows[0]["device"].split(":")[0] != kind:
                    continue  # CPU against CPU, GPU against GPU
                b = best_at(b_rows, target)
                if q and b:
                    lines.append(f"  {target}: {q_label} / {b_label}: {q['qps'] / b['qps']:.2f}x")
                elif b:
                    lines.append(f"  {target}: {q_label} does not reach it; {b_label} does")
    if lines:
        print("quiver QPS over the baseline's, each at its best point reaching the target:")
        print("\n".join(lines))


def latency_table(rows):
    lat = [r for r in rows if not is_throughput(r)]
    if not lat:
        return
    print("\nlatency (median per call):")
    print(f"  {'method':44s} {'params':28s} {'batch':>5s} {'ms':>9s} {'recall@10':>9s}")
    for r in lat:
        recall = "-" if r.get("recall10") is None else f"{r['recall10']:.4f}"
        print(f"  {system_label(r)[:44]:44s} {fmt_params(r.get('params'))[:28]:28s} "
              f"{r['batch']:5d} {r['search_s'] * 1e3:9.3f} {recall:>9s}")


def title_of(rows):
    r = rows[0]
    machine = r.get("machine") or {}
    gpu = f", {machine['gpu']}" if machine.get("gpu") else ""
    threads = sorted({x.get("threads") for x in rows if x.get("threads") is not None})
    return (f"{r['dataset']} n={r['n']} d={r['d']} nq={r['nq']} k={r['k']}, "
            f"threads {','.join(map(str, threads))}, {machine.get('cpu', '?')}{gpu}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", nargs="+", help="JSON lines files (quiver bench --json, compare.py)")
    p.add_argument("--out", help="PNG path (default: the first file with .png)")
    p.add_argument("--targets", default=",".join(map(str, DEFAULT_TARGETS)),
                   help="recall@10 targets for the summary (default 0.95,0.99)")
    p.add_argument("--title", help="plot title (default: data set, threads and machine)")
    args = p.parse_args()
    rows = load_rows(args.json)
    if not rows:
        sys.exit("no rows in " + ", ".join(args.json))
    targets = [float(t) for t in args.targets.split(",") if t]
    summary(rows, targets)
    latency_table(rows)
    plot(rows, args.out or os.path.splitext(args.json[0])[0] + ".png", args.title or title_of(rows))


if __name__ == "__main__":
    main()
