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

Window filters (filters that forget) are measured over time instead: for each error rate a
`BF.RESERVE key error 20000 WINDOW 4000` filter receives a steady stream of distinct items, 1x
and 2x its capacity per window (1000 or 2000 items every 200 ms) for 5 windows, and every
200 ms BF.MEXISTS is asked about 30,000 fresh items. The items of the first tick are never added
again, and are asked about at every tick too, to see when they are forgotten. Writes
docs/fp-rates-window.csv (one row per tick) and the figure's lower row of panels.

Cuckoo filters: for bucket sizes 1, 2, 4 and 8, `CF.RESERVE key 8192 BUCKETSIZE b` (expansion 1,
so every sub-filter has as many buckets as the first) receives distinct items (CF.INSERT) in
steps of 0.25 x capacity up to 3 x capacity, growing sub-filters; after every step CF.MEXISTS is
asked about the --probes fresh items, and CF.COUNT about every item added so far (each was added
once, so a count above 1 is an over-count). The rate is compared with RedisBloom's documented
bound, 2 x b / 255 per sub-filter (two buckets of b one-byte fingerprints, 255 fingerprint
values), and with the estimate from the filter's real fill, 2 x items / (255 x buckets per
sub-filter). Writes docs/fp-rates-cuckoo.csv and docs/fp-rates-cuckoo.png.

Ribbon filters (RF.*) are measured on the core, without a server: `cargo run --release -p
redis-bf-core --example ribbon_fp` builds filters of 100,000 and 1,000,000 items for asked
error rates from 0.5 to 0.00005 and asks each about at least --ribbon-probes never-added items
(1,000,000; more at small rates, about 1,000 expected false positives, at most 10,000,000).
Writes docs/fp-rates-ribbon.csv (the measured rate with its 95% Wilson interval, the rate the
filter's shape gives, bits per item and log2(1/error)) and the figure's bottom row: measured
vs asked rate, and bits per item beside a Bloom filter's and the minimum.

Usage: scripts/fp_plot.sh [--probes N] [--out-dir DIR] [--parts fill,window,cuckoo,ribbon]   (the wrapper
makes a venv with redis and matplotlib; a part left out is read back from its CSV for the
figure). Environment: BF_MODULE (module path, default target/release/libredis_bf.so),
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

WINDOW_MS = 4000  # window filters: the window, in milliseconds
WINDOW_CAPACITY = 20000  # distinct items per window (large enough that the layers keep their formula's size)
WINDOW_TICKS = 20  # ticks per window: every tick adds load x capacity / 20 items, then probes
WINDOW_COUNT = 5  # windows measured
WINDOW_LOADS = [1.0, 2.0]  # distinct items per window, in units of the capacity

CF_CAPACITY = 8192  # cuckoo filters: CF.RESERVE capacity
CF_BUCKET_SIZES = [1, 2, 4, 8]
CF_STEP = 0.25  # in units of the capacity
CF_MAX_FILL = 3.0


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


def measure_window(r, probes):
    """False-positive rate of window filters over time (see the module docstring)."""
    rows = []
    tick_s = WINDOW_MS / 1000 / WINDOW_TICKS
    for error in ERRORS:
        for load in WINDOW_LOADS:
            key = f"fpw:{error}:{load}"
            r.delete(key)
            r.execute_command("BF.RESERVE", key, error, WINDOW_CAPACITY, "WINDOW", WINDOW_MS)
            per_tick = int(round(load * WINDOW_CAPACITY / WINDOW_TICKS))
            first = [f"item:{key}:{i}" for i in range(per_tick)]
            added = 0
            t0 = time.monotonic()
            for tick in range(WINDOW_COUNT * WINDOW_TICKS):
                delay = t0 + tick * tick_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                items = [f"item:{key}:{i}" for i in range(added, added + per_tick)]
                pipe = r.pipeline(transaction=False)
                for i in range(0, len(items), BATCH):
                    pipe.execute_command("BF.MADD", key, *items[i : i + BATCH])
                pipe.execute()
                added += per_tick
                now = time.monotonic()
                if tick == 0:
                    first_added = now  # the first tick's items are at most this old
                # Their presence is asked at once; the probes take a while.
                present = sum(r.execute_command("BF.MEXISTS", key, *first))
                age = (now - first_added) * 1000 / WINDOW_MS
                elapsed = (now - t0) * 1000 / WINDOW_MS
                pipe = r.pipeline(transaction=False)
                for i in range(0, probes, BATCH):
                    pipe.execute_command(
                        "BF.MEXISTS", key,
                        *[f"probe:{key}:{tick}:{j}" for j in range(i, min(probes, i + BATCH))])
                fp = sum(sum(x) for x in pipe.execute())
                lo, hi = wilson(fp, probes)
                row = {
                    "error": error,
                    "load": load,
                    "window_ms": WINDOW_MS,
                    "tick": tick,
                    "windows": elapsed,
                    "items_added": added,
                    "probes": probes,
                    "false_positives": fp,
                    "measured": fp / probes,
                    "ci95_low": lo,
                    "ci95_high": hi,
                    "requested": error,
                    "first_tick_present": present / len(first),
                    "first_tick_age": age,
                }
                rows.append(row)
                if tick % WINDOW_TICKS == WINDOW_TICKS - 1:
                    print(
                        f"window {error:<6} load {load}x after {elapsed:.2f} windows: measured "
                        f"{row['measured']:.6f} [{lo:.6f}, {hi:.6f}]; first tick's items "
                        f"present {present}/{len(first)}",
                        flush=True,
                    )
            late = rows[-1]["windows"] - (WINDOW_COUNT * WINDOW_TICKS - 1) / WINDOW_TICKS
            if late > 0.05:
                print(f"window {error} {load}x: the ticks fell {late:.2f} windows behind "
                      "(a slow machine): fewer items per window than stated", flush=True)
            r.delete(key)
    return rows


def info_map(r, key, command):
    reply = r.execute_command(command, key)
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in zip(reply[::2], reply[1::2])}


def measure_cuckoo(r, probes):
    """Cuckoo filters' false-positive rate and CF.COUNT over-count as they fill (see the module
    docstring)."""
    rows = []
    for bucket_size in CF_BUCKET_SIZES:
        key = f"fpc:{bucket_size}"
        r.delete(key)
        r.execute_command("CF.RESERVE", key, CF_CAPACITY, "BUCKETSIZE", bucket_size,
                          "EXPANSION", 1)
        added = 0
        step = 0
        while added < CF_MAX_FILL * CF_CAPACITY:
            step += 1
            target = int(round(step * CF_STEP * CF_CAPACITY))
            for i in range(added, target, BATCH):
                items = [f"item:{key}:{j}" for j in range(i, min(target, i + BATCH))]
                reply = r.execute_command("CF.INSERT", key, "NOCREATE", "ITEMS", *items)
                if any(x != 1 for x in reply):
                    sys.exit(f"{key}: CF.INSERT refused an item at {i} items: {reply[:5]}")
            added = target
            pipe = r.pipeline(transaction=False)
            for i in range(0, probes, BATCH):
                pipe.execute_command(
                    "CF.MEXISTS", key,
                    *[f"probe:{key}:{step}:{j}" for j in range(i, min(probes, i + BATCH))])
            fp = sum(sum(x) for x in pipe.execute())
            pipe = r.pipeline(transaction=False)
            for j in range(added):
                pipe.execute_command("CF.COUNT", key, f"item:{key}:{j}")
            counts = pipe.execute()
            if min(counts) < 1:
                sys.exit(f"{key}: an added item has CF.COUNT 0 (a false negative)")
            info = info_map(r, key, "CF.INFO")
            buckets = int(info["Number of buckets"])
            filters = int(info["Number of filters"])
            lo, hi = wilson(fp, probes)
            row = {
                "bucket_size": bucket_size,
                "items": added,
                "fill": added / CF_CAPACITY,
                "sub_filters": filters,
                "buckets": buckets,
                "probes": probes,
                "false_positives": fp,
                "measured": fp / probes,
                "ci95_low": lo,
                "ci95_high": hi,
                "predicted": 2 * added / (255 * buckets),
                "documented": 2 * bucket_size * filters / 255,
                "overcounted": sum(1 for c in counts if c > 1) / added,
                "overcount_mean": (sum(counts) - added) / added,
            }
            rows.append(row)
            print(
                f"cuckoo b={bucket_size} items {added:>6} sub-filters {filters} measured "
                f"{row['measured']:.5f} [{lo:.5f}, {hi:.5f}] estimate {row['predicted']:.5f} "
                f"documented bound {row['documented']:.5f}; CF.COUNT > 1 for "
                f"{row['overcounted']:.5f} of the items", flush=True)
        r.delete(key)
    return rows


def plot_cuckoo(rows, path, probes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {1: "tab:red", 2: "tab:blue", 4: "tab:green", 8: "tab:purple"}
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 6))
    for b in CF_BUCKET_SIZES:
        pts = [x for x in rows if x["bucket_size"] == b]
        if not pts:
            continue
        color = colors.get(b, "tab:gray")
        xs = [p["fill"] for p in pts]
        measured_line(left, xs, pts, color, "o", 1.4,
                      f"BUCKETSIZE {b}: measured ({probes} probes)")
        left.plot(xs, [p["predicted"] for p in pts], color=color, linestyle=":", linewidth=1.2)
        left.step(xs, [p["documented"] for p in pts], color=color, linestyle="--",
                  linewidth=1.0, where="post", alpha=0.7)
        right.plot(xs, [p["overcounted"] for p in pts], color=color, marker="s", markersize=4,
                   linewidth=1.4, label=f"BUCKETSIZE {b}")
    left.plot([], [], color="gray", linestyle=":", label="estimate: 2 x items / (255 x buckets)")
    left.plot([], [], color="gray", linestyle="--",
              label="documented bound: 2 x b / 255 per sub-filter")
    left.set_yscale("log")
    left.set_title(f"CF.RESERVE key {CF_CAPACITY} BUCKETSIZE b EXPANSION 1: false positives")
    left.set_xlabel(f"items added / capacity ({CF_CAPACITY})")
    left.set_ylabel("false-positive rate on never-added items (log)")
    left.grid(True, alpha=0.3, which="both")
    left.legend(loc="lower right", fontsize=8, framealpha=0.9)
    right.set_title("CF.COUNT over-count: share of items added once that count more than 1")
    right.set_xlabel(f"items added / capacity ({CF_CAPACITY})")
    right.set_ylabel("share of added items with CF.COUNT > 1")
    right.grid(True, alpha=0.3)
    right.legend(loc="upper left", fontsize=8, framealpha=0.9)
    fig.suptitle("redis-bf cuckoo filters: measured false-positive rate and CF.COUNT over-count "
                 "(shaded: 95% interval)", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def forget_summary(rows):
    """For each window configuration: the highest age (in windows, at least their true age) at
    which all of the first tick's items were still present, and the lowest at which at most a
    tenth of them was."""
    out = []
    for error in ERRORS:
        for load in WINDOW_LOADS:
            pts = [x for x in rows if x["error"] == error and x["load"] == load]
            if not pts:
                continue
            kept = max((x["first_tick_age"] for x in pts if x["first_tick_present"] == 1.0),
                       default=0)
            gone = min(
                (x["first_tick_age"] for x in pts
                 if x["first_tick_present"] <= 0.1 and x["tick"] > 0),
                default=float("nan"),
            )
            worst = max(x["measured"] for x in pts)
            out.append((error, load, kept, gone, worst))
    return out


def measure_ribbon(least_probes):
    """The Ribbon series, from the core (core/examples/ribbon_fp.rs), with 95% intervals."""
    out = subprocess.run(
        ["cargo", "run", "--release", "--quiet", "-p", "redis-bf-core", "--example", "ribbon_fp",
         "--", str(least_probes)],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    rows = []
    for row in csv.DictReader(out.splitlines()):
        n, probes, fp = int(row["n"]), int(row["probes"]), int(row["false_positives"])
        low, high = wilson(fp, probes)
        rows.append({
            "n": n, "error": float(row["error"]), "expected": float(row["expected"]),
            "bits_per_item": float(row["bits_per_item"]),
            "minimum_bits": float(row["minimum_bits"]), "bumped": int(row["bumped"]),
            "probes": probes, "false_positives": fp, "measured": fp / probes,
            "ci95_low": low, "ci95_high": high,
        })
        show_ribbon(rows[-1])
    return rows


def show_ribbon(x):
    print(f"ribbon n {x['n']} error {x['error']}: measured {x['measured']:.6f} "
          f"[{x['ci95_low']:.6f}, {x['ci95_high']:.6f}] on {x['probes']} probes, shape "
          f"{x['expected']:.6f}, {x['bits_per_item']:.3f} bits per item", flush=True)


def plot_ribbon(axes, rows):
    """Bottom row: Ribbon filters, measured / asked rate against the asked rate, and bits per
    item."""
    colors = {100000: "tab:purple", 1000000: "tab:olive"}
    ax = axes[0]
    for n, color in colors.items():
        pts = sorted((x for x in rows if x["n"] == n), key=lambda x: x["error"])
        if not pts:
            continue
        xs = [p["error"] * (0.96 if n == min(colors) else 1.04) for p in pts]
        ax.errorbar(xs, [p["measured"] / p["error"] for p in pts],
                    yerr=[[(p["measured"] - p["ci95_low"]) / p["error"] for p in pts],
                          [(p["ci95_high"] - p["measured"]) / p["error"] for p in pts]],
                    color=color, marker="o", markersize=4, capsize=2, linewidth=1.2,
                    label=f"RF.BUILD of {n:,} items: measured (95% CI)")
    pts = sorted((x for x in rows if x["n"] == max(colors)), key=lambda x: x["error"])
    ax.plot([p["error"] for p in pts], [p["expected"] / p["error"] for p in pts], color="gray",
            linestyle=":", linewidth=1.5, label="the filter's shape: its expected rate (0.9 e)")
    ax.axhline(1.0, color="dimgray", linestyle="--", linewidth=2, label="asked error rate e")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_ylim(0.85, 1.15)
    ax.set_title("Ribbon filters (RF.BUILD key ERROR e): measured / asked false-positive rate")
    ax.set_xlabel("asked error rate e (>= 1e6 never-added probes a point, ~1000 false positives)")
    ax.set_ylabel("measured rate / e")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)
    ax = axes[1]
    pts = sorted((x for x in rows if x["n"] == max(colors)), key=lambda x: x["error"])
    xs = [p["error"] for p in pts]
    ax.plot(xs, [p["bits_per_item"] for p in pts], color="tab:olive", marker="o",
            markersize=4, label="Ribbon: measured bits per item (1,000,000 items)")
    ax.plot(xs, [p["minimum_bits"] / math.log(2) for p in pts], color="tab:blue",
            linestyle="-.", label="Bloom filter (one layer): log2(1/e) / ln 2")
    ax.plot(xs, [p["minimum_bits"] for p in pts], color="dimgray", linestyle="--",
            label="minimum: log2(1/e)")
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_title("Memory: bits per item at the asked rate")
    ax.set_xlabel("asked error rate e")
    ax.set_ylabel("bits per item")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8, framealpha=0.9)


def write_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for row in rows:
            out = dict(row)
            for k in ("measured", "ci95_low", "ci95_high", "predicted", "first_tick_present",
                      "first_tick_age", "documented", "overcounted", "overcount_mean"):
                if k in row:
                    out[k] = f"{row[k]:.6f}"
            if "expected" in row:  # Ribbon rows: rates down to 5e-5 keep 8 decimals
                for k in ("measured", "ci95_low", "ci95_high", "expected"):
                    out[k] = f"{row[k]:.8f}"
            if "fill" in row:
                out["fill"] = f"{row['fill']:.2f}" if "bucket_size" in row else f"{row['fill']:.1f}"
            if "windows" in row:
                out["windows"] = f"{row['windows']:.4f}"
            w.writerow(out)


def read_csv(path):
    """Rows written by write_csv, with numbers as numbers (for redrawing a part not measured)."""
    if not os.path.exists(path):
        return []
    rows = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            out = {}
            for k, v in row.items():
                try:
                    out[k] = int(v)
                except ValueError:
                    try:
                        out[k] = float(v)
                    except ValueError:
                        out[k] = v
            rows.append(out)
    return rows


def measured_line(ax, xs, pts, color, marker, linewidth, label, alpha=0.1):
    """One measured series: its 95% interval as a shaded band, the measured rate as a line."""
    ax.fill_between(xs, [p["ci95_low"] for p in pts], [p["ci95_high"] for p in pts],
                    color=color, alpha=alpha, linewidth=0)
    ax.plot(xs, [p["measured"] for p in pts], color=color, marker=marker, markersize=4,
            linewidth=linewidth, label=label)


def plot(rows, window_rows, ribbon_rows, path, probes, final_probes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {
        "EXPANSION 1": ("tab:red", "o"),
        "EXPANSION 2": ("tab:blue", "s"),
        "EXPANSION 4": ("tab:green", "^"),
        "NONSCALING": ("black", "D"),
    }
    nrows = 1 + bool(window_rows) + bool(ribbon_rows)
    fig, grid = plt.subplots(nrows, len(ERRORS), figsize=(14, 6 * nrows), squeeze=False)
    for ax, error in zip(grid[0], ERRORS):
        for config, (color, marker) in styles.items():
            pts = [x for x in rows if x["error"] == error and x["config"] == config]
            steps = [p for p in pts if p["kind"] == "step"]
            xs = [p["fill"] for p in steps]
            measured_line(ax, xs, steps, color, marker, 1.4,
                          f"{config}: measured ({probes} probes)", alpha=0.08)
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
    if window_rows:
        plot_window(grid[1], window_rows)
    if ribbon_rows:
        plot_ribbon(grid[nrows - 1], ribbon_rows)
    fig.suptitle(
        "redis-bf: measured false-positive rates (shaded or bars: 95% intervals); top: Bloom "
        "filters filling up; middle: window filters over time; bottom: Ribbon filters",
        fontsize=12,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    fig.savefig(path, dpi=110)


def plot_window(axes, rows):
    """Lower row: window filters' false-positive rate over time, one panel per error rate."""
    colors = {1.0: "tab:blue", 2.0: "tab:orange"}
    for ax, error in zip(axes, ERRORS):
        for load in WINDOW_LOADS:
            pts = [x for x in rows if x["error"] == error and x["load"] == load]
            if not pts:
                continue
            color = colors.get(load, "tab:gray")
            xs = [p["windows"] for p in pts]
            measured_line(ax, xs, pts, color, ".", 1.2,
                          f"{load:g} x capacity per window: measured ({pts[0]['probes']} probes "
                          "a tick)")
        ax.axhline(error, color="dimgray", linestyle="--", linewidth=2,
                   label=f"requested error rate {error}")
        for w in range(1, WINDOW_COUNT + 1):
            ax.axvline(w, color="lightgray", linewidth=0.8, zorder=0)
        ax.set_title(f"BF.RESERVE key {error} {WINDOW_CAPACITY} WINDOW {WINDOW_MS}, steady stream")
        ax.set_xlabel(f"time / window ({WINDOW_MS} ms)")
        ax.set_ylabel("false-positive rate on never-added items")
        ax.set_ylim(0, error * 1.5)
        ax.set_xlim(0, WINDOW_COUNT)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right", fontsize=8, framealpha=0.9)


def measure_with_server(parts, args):
    """The parts that need a server (fill, window, cuckoo), on one server of our own."""
    tmp = tempfile.mkdtemp(prefix="redis-bf-fp-")
    proc, r = start_server(tmp)
    try:
        rows = measure(r, args.probes, args.final_probes) if "fill" in parts else []
        window_rows = measure_window(r, args.window_probes) if "window" in parts else []
        cuckoo_rows = measure_cuckoo(r, args.probes) if "cuckoo" in parts else []
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows, window_rows, cuckoo_rows


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
    ap.add_argument(
        "--parts",
        default="fill,window,cuckoo,ribbon",
        help="what to measure, comma-separated: fill (filters filling up), window (window "
        "filters over time), cuckoo (cuckoo filters filling up), ribbon (Ribbon filters, on "
        "the core); default all four. A part left out is read back from its CSV in --out-dir",
    )
    ap.add_argument("--window-probes", type=int, default=30000,
                    help="window filters: probes per tick (30000)")
    ap.add_argument("--ribbon-probes", type=int, default=1000000,
                    help="Ribbon filters: the least probes per point (1000000)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if not parts or not parts <= {"fill", "window", "cuckoo", "ribbon"}:
        sys.exit("--parts takes fill, window, cuckoo and ribbon, comma-separated")
    server_parts = parts & {"fill", "window", "cuckoo"}
    if server_parts and not os.path.exists(MODULE):
        sys.exit(f"module not found: {MODULE} (cargo build --release, or set BF_MODULE)")
    os.makedirs(args.out_dir, exist_ok=True)
    ribbon_csv_path = os.path.join(args.out_dir, "fp-rates-ribbon.csv")
    ribbon_rows = measure_ribbon(args.ribbon_probes) if "ribbon" in parts else []
    if ribbon_rows:
        write_csv(ribbon_rows, ribbon_csv_path)
    else:
        ribbon_rows = read_csv(ribbon_csv_path)
    rows, window_rows, cuckoo_rows = [], [], []
    if server_parts:
        rows, window_rows, cuckoo_rows = measure_with_server(parts, args)
    csv_path = os.path.join(args.out_dir, "fp-rates.csv")
    window_csv_path = os.path.join(args.out_dir, "fp-rates-window.csv")
    png_path = os.path.join(args.out_dir, "fp-rates.png")
    cuckoo_csv_path = os.path.join(args.out_dir, "fp-rates-cuckoo.csv")
    cuckoo_png_path = os.path.join(args.out_dir, "fp-rates-cuckoo.png")
    if rows:
        write_csv(rows, csv_path)
    else:
        rows = read_csv(csv_path)
    if window_rows:
        write_csv(window_rows, window_csv_path)
    else:
        window_rows = read_csv(window_csv_path)
    if cuckoo_rows:
        write_csv(cuckoo_rows, cuckoo_csv_path)
        plot_cuckoo(cuckoo_rows, cuckoo_png_path, args.probes)
        over = [x for x in cuckoo_rows if x["ci95_low"] > x["documented"]]
        print(f"wrote {cuckoo_png_path}; cuckoo points: {len(cuckoo_rows)}, whole 95% interval "
              f"above the documented bound at {len(over)}")
    if not parts & {"fill", "window", "ribbon"}:
        return  # only the cuckoo part was measured: the Bloom figure stays as it is
    if not rows:
        sys.exit(f"no fill measurements: run with --parts fill first ({csv_path} is missing)")
    plot(rows, window_rows, ribbon_rows, png_path, args.probes, args.final_probes)
    over = [x for x in ribbon_rows if x["measured"] > x["error"]]
    signif = [x for x in ribbon_rows if x["ci95_low"] > x["error"]]
    print(f"ribbon points: {len(ribbon_rows)}; measured above the asked rate at {len(over)}, "
          f"with the whole 95% interval above at {len(signif)}")
    print(f"wrote {png_path} and the CSV files of the parts measured ({', '.join(sorted(parts))})")
    for error, load, kept, gone, worst in forget_summary(window_rows):
        over = " OVER" if worst > error else ""
        print(
            f"window {error} at {load:g}x capacity: first tick's items all present until "
            f"{kept:.2f} windows, forgotten (<= 10% present) from {gone:.2f} windows; highest "
            f"measured rate {worst:.6f}{over}"
        )
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
