#!/usr/bin/env python3
"""Measure the false-positive rate of redis-bf filters as they fill, and plot it.

Starts its own redis-server (free port, temporary directory) with the module, then for every
configuration (error 0.01 and 0.001) x (EXPANSION 1, 2, 4, and NONSCALING), initial capacity
1000, adds distinct items in steps of 0.5 x capacity up to 10 x capacity (NONSCALING: up to its
capacity, where it stops accepting items) and after every step asks BF.MEXISTS about 20,000 fresh
items that were never added. Writes:

* docs/fp-rates.csv: one row per measurement (configuration, items, fill ratio, layers,
  measured rate with its 95% Wilson interval, the rate predicted from the layers' actual bit
  counts, hash counts and fill levels read from BF.DEBUG, and the requested rate);
* docs/fp-rates.png: measured rate vs items / initial capacity, one panel per requested rate,
  the requested rate drawn as a dashed line.

Usage: scripts/fp_plot.sh [--probes N] [--out-dir DIR]   (the wrapper makes a venv with redis
and matplotlib). Environment: BF_MODULE (module path, default target/release/libredis_bf.so),
REDIS_SERVER (server binary).
"""

import argparse
import csv
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.environ.get("BF_MODULE", os.path.join(ROOT, "target", "release", "libredis_bf.so"))
SERVER = os.environ.get("REDIS_SERVER", "redis-server")

CAPACITY = 1000
ERRORS = [0.01, 0.001]
EXPANSIONS = [1, 2, 4, None]  # None = NONSCALING
STEP = 0.5  # in units of the initial capacity
MAX_FILL = 10.0
BATCH = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(tmp):
    port = free_port()
    proc = subprocess.Popen(
        [
            SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp, "--save", "",
            "--appendonly", "no", "--logfile", os.path.join(tmp, "server.log"),
            "--loadmodule", os.path.abspath(MODULE),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            break
        try:
            r = redis.Redis(port=port, protocol=2)
            r.ping()
            return proc, r
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start; see " + os.path.join(tmp, "server.log"))


def wilson(k, n, z=1.96):
    """95% Wilson score interval of a binomial proportion."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def predicted_rate(r, key):
    """False-positive rate predicted from the layers' real shapes (BF.DEBUG): each layer with m
    bits, k hashes and n items answers a non-member with probability (1 - e^(-kn/m))^k; the chain
    answers yes if any layer does."""
    lines = [x.decode() if isinstance(x, bytes) else x for x in r.execute_command("BF.DEBUG", key)]
    miss = 1.0
    for line in lines[1:]:
        f = dict(kv.split(":", 1) for kv in line.split())
        m, k, n = int(f["bits"]), int(f["hashes"]), int(f["size"])
        miss *= 1 - (1 - math.exp(-k * n / m)) ** k
    return 1 - miss, len(lines) - 1


def label(expansion):
    return "NONSCALING" if expansion is None else f"EXPANSION {expansion}"


def false_positives(r, key, prefix, n):
    fp = 0
    for i in range(0, n, BATCH):
        batch = [f"{prefix}:{j}" for j in range(i, min(n, i + BATCH))]
        fp += sum(r.execute_command("BF.MEXISTS", key, *batch))
    return fp


def row_for(r, key, error, expansion, added, probes, fp, kind):
    lo, hi = wilson(fp, probes)
    pred, layers = predicted_rate(r, key)
    return {
        "kind": kind,
        "error": error,
        "config": label(expansion),
        "items": added,
        "fill": added / CAPACITY,
        "card": r.execute_command("BF.CARD", key),
        "layers": layers,
        "probes": probes,
        "false_positives": fp,
        "measured": fp / probes,
        "ci95_low": lo,
        "ci95_high": hi,
        "predicted": pred,
        "requested": error,
    }


def show(row):
    flag = " OVER" if row["measured"] > row["requested"] else ""
    print(
        f"{row['kind']:<5} {row['error']:<6} {row['config']:<12} items {row['items']:>6} "
        f"layers {row['layers']:>2} probes {row['probes']:>7} measured {row['measured']:.6f} "
        f"[{row['ci95_low']:.6f}, {row['ci95_high']:.6f}] predicted {row['predicted']:.6f}{flag}",
        flush=True,
    )


def measure(r, probes, final_probes):
    rows = []
    for error in ERRORS:
        for expansion in EXPANSIONS:
            key = f"fp:{error}:{label(expansion)}"
            r.delete(key)
            if expansion is None:
                r.execute_command("BF.RESERVE", key, error, CAPACITY, "NONSCALING")
                max_items = CAPACITY
            else:
                r.execute_command("BF.RESERVE", key, error, CAPACITY, "EXPANSION", expansion)
                max_items = int(MAX_FILL * CAPACITY)
            added = 0
            step = 0
            while added < max_items:
                step += 1
                target = min(max_items, int(round(step * STEP * CAPACITY)))
                items = [f"item:{key}:{i}" for i in range(added, target)]
                for i in range(0, len(items), BATCH):
                    reply = r.execute_command("BF.MADD", key, *items[i : i + BATCH])
                    bad = [x for x in reply if isinstance(x, Exception)]
                    if bad:
                        sys.exit(f"{key}: BF.MADD failed at {added + i} items: {bad[0]}")
                added = target
                fp = false_positives(r, key, f"probe:{key}:{step}", probes)
                row = row_for(r, key, error, expansion, added, probes, fp, "step")
                rows.append(row)
                show(row)
            if final_probes:
                # A precise measurement of the full filter with many more probes.
                fp = false_positives(r, key, f"final:{key}", final_probes)
                row = row_for(r, key, error, expansion, added, final_probes, fp, "final")
                rows.append(row)
                show(row)
            r.delete(key)
    return rows


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for row in rows:
            out = dict(row)
            for k in ("measured", "ci95_low", "ci95_high", "predicted"):
                out[k] = f"{row[k]:.6f}"
            out["fill"] = f"{row['fill']:.1f}"
            w.writerow(out)


def plot(rows, path, probes, final_probes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {
        "EXPANSION 1": ("tab:red", "o"),
        "EXPANSION 2": ("tab:blue", "s"),
        "EXPANSION 4": ("tab:green", "^"),
        "NONSCALING": ("black", "D"),
    }
    fig, axes = plt.subplots(1, len(ERRORS), figsize=(14, 6))
    for ax, error in zip(axes, ERRORS):
        for config, (color, marker) in styles.items():
            pts = [x for x in rows if x["error"] == error and x["config"] == config]
            steps = [p for p in pts if p["kind"] == "step"]
            xs = [p["fill"] for p in steps]
            ax.fill_between(xs, [p["ci95_low"] for p in steps], [p["ci95_high"] for p in steps],
                            color=color, alpha=0.08, linewidth=0)
            ax.plot(xs, [p["measured"] for p in steps], color=color, marker=marker,
                    markersize=4, linewidth=1.4, label=f"{config}: measured ({probes} probes)")
            ax.plot(xs, [p["predicted"] for p in steps], color=color, linestyle=":",
                    linewidth=1.2)
            for p in pts:
                if p["kind"] == "final":
                    ax.errorbar([p["fill"] + 0.15], [p["measured"]],
                                yerr=[[p["measured"] - p["ci95_low"]],
                                      [p["ci95_high"] - p["measured"]]],
                                color=color, marker="*", markersize=13, capsize=3,
                                linestyle="none", markeredgecolor="white")
        ax.axhline(error, color="dimgray", linestyle="--", linewidth=2,
                   label=f"requested error rate {error}")
        ax.plot([], [], color="gray", linestyle=":", label="predicted from BF.DEBUG layers")
        if final_probes:
            ax.plot([], [], color="gray", marker="*", markersize=11, linestyle="none",
                    label=f"full filter, {final_probes} probes (95% CI)")
        ax.set_title(f"BF.RESERVE key {error} 1000 [EXPANSION 1|2|4 | NONSCALING]")
        ax.set_xlabel("items added / initial capacity (1000)")
        ax.set_ylabel("false-positive rate on never-added items")
        ax.set_ylim(0, error * 1.5)
        ax.set_xlim(0, MAX_FILL + 0.5)
        ax.set_xticks(range(0, int(MAX_FILL) + 1))
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8, framealpha=0.9)
    fig.suptitle(
        "redis-bf: measured false-positive rate while filling (shaded: 95% interval of each "
        "measurement)",
        fontsize=12,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probes", type=int, default=20000, help="probes per step (20000)")
    ap.add_argument(
        "--final-probes",
        type=int,
        default=1000000,
        help="probes for one extra, precise measurement of each full filter (1000000; 0: none)",
    )
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "docs"))
    args = ap.parse_args()
    if not os.path.exists(MODULE):
        sys.exit(f"module not found: {MODULE} (cargo build --release, or set BF_MODULE)")
    os.makedirs(args.out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="redis-bf-fp-")
    proc, r = start_server(tmp)
    try:
        rows = measure(r, args.probes, args.final_probes)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    csv_path = os.path.join(args.out_dir, "fp-rates.csv")
    png_path = os.path.join(args.out_dir, "fp-rates.png")
    write_csv(rows, csv_path)
    plot(rows, png_path, args.probes, args.final_probes)
    print(f"wrote {csv_path} and {png_path}")
    for kind in ("step", "final"):
        pts = [x for x in rows if x["kind"] == kind]
        if not pts:
            continue
        over = [x for x in pts if x["measured"] > x["requested"]]
        signif = [x for x in pts if x["ci95_low"] > x["requested"]]
        pred_over = [x for x in pts if x["predicted"] > x["requested"]]
        print(
            f"{kind} points: {len(pts)}; measured above the requested rate at {len(over)}, "
            f"with the whole 95% interval above at {len(signif)}; predicted above at "
            f"{len(pred_over)}"
        )
    for x in [x for x in rows if x["measured"] > x["requested"]]:
        print(
            f"  over: {x['kind']} {x['error']} {x['config']} items {x['items']} "
            f"layers {x['layers']} probes {x['probes']}: "
            f"measured {x['measured']:.5f} [{x['ci95_low']:.5f}, {x['ci95_high']:.5f}], "
            f"predicted {x['predicted']:.5f}"
        )


if __name__ == "__main__":
    main()
