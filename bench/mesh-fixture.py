#!/usr/bin/env python3
"""mesh-fixture.py — a synthetic `xferbench mesh -t mpi` result, for the
report: its tests' fixtures, and the heat-map screenshot before a real MPI
run exists. Deterministic (seeded); the shape is that of src/result/mesh.rs.

    bench/mesh-fixture.py --hosts 4 --per-host 4 --slow-rank 6 --slow-link 1,13 > mesh16.json
    bench/mesh-fixture.py --hosts 2 --per-host 2 --map node --slow-rank 1 --min-bandwidth 5000
    bench/mesh-fixture.py --hosts 2 --per-host 2 --ranks 3 --stop-after 3   # a run cut short

Faults it can plant: --slow-rank R (every pair of rank R: bandwidth 0.41×,
latency 1.3×) and --slow-link A,B (both directions between A and B: latency
3×, bandwidth 0.6×). Each becomes a suspect, re-tested and confirmed. Pairs
within a host are faster (shared memory) than across hosts (the fabric).
"""
import argparse
import json
import random
import statistics
import sys


def summary(p50, count, rng):
    """A plausible latency Summary (ns) around a median of p50 ns."""
    j = lambda f: int(p50 * f * rng.uniform(0.97, 1.03))
    return {
        "count": count,
        "mean_ns": round(p50 * 1.05, 1),
        "stddev_ns": round(p50 * 0.15, 1),
        "min_ns": j(0.9),
        "p50_ns": int(p50),
        "p90_ns": j(1.1),
        "p99_ns": j(1.6),
        "p999_ns": j(3.0),
        "p9999_ns": j(6.0),
        "max_ns": j(20.0),
    }


def tournament(n):
    """Round-robin rounds (circle method): lists of unordered pairs."""
    ids = list(range(n)) + ([None] if n % 2 else [])
    m = len(ids)
    rounds = []
    for _ in range(m - 1):
        rounds.append([(a, b) for a, b in zip(ids[: m // 2], reversed(ids[m // 2 :])) if a is not None and b is not None])
        ids = [ids[0], ids[-1]] + ids[1:-1]
    return rounds


def mad(xs):
    med = statistics.median(xs)
    return statistics.median(abs(x - med) for x in xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--per-host", type=int, default=4)
    ap.add_argument("--ranks", type=int, help="fewer ranks than hosts × per-host (the last host partly filled)")
    ap.add_argument("--map", choices=["block", "node"], default="block",
                    help="rank placement: block (0..P-1 on the first host) or node (round-robin, mpirun --map-by node)")
    ap.add_argument("--slow-rank", type=int)
    ap.add_argument("--slow-link", help="A,B")
    ap.add_argument("--stop-after", type=int, help="measure only this many ordered pairs, then stop (incomplete run)")
    ap.add_argument("--min-bandwidth", type=float, help="health gate floor, MB/s")
    ap.add_argument("--max-latency", type=float, help="health gate ceiling (p50), µs")
    ap.add_argument("--mode", choices=["sequential", "concurrent"], default="sequential")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    n = a.ranks or a.hosts * a.per_host
    host_of = [(r // a.per_host if a.map == "block" else r % a.hosts) for r in range(n)]
    slot = [(r // a.hosts if a.map == "node" else r % a.per_host) for r in range(n)]  # index on its host
    names = [f"node{h + 1:02d}" for h in range(a.hosts)]
    link = tuple(int(x) for x in a.slow_link.split(",")) if a.slow_link else None
    lat_size, bw_size, window = 8, 1 << 20, 64

    def truth(f, t):
        intra = host_of[f] == host_of[t]
        lat = (450.0 if intra else 1800.0) * rng.uniform(0.96, 1.06)
        bw = (8200.0 if intra else 11500.0) * rng.uniform(0.97, 1.02)
        if a.slow_rank in (f, t):
            lat, bw = lat * 1.3, bw * 0.41
        if link and {f, t} == set(link):
            lat, bw = lat * 3.0, bw * 0.6
        return intra, lat, bw

    rounds = tournament(n)
    order = [(rd, f, t) for rd, pairs in enumerate(rounds) for p, q in pairs for f, t in ((p, q), (q, p))]
    points, lat_m, p99_m, bw_m = [], [[None] * n for _ in range(n)], [[None] * n for _ in range(n)], [[None] * n for _ in range(n)]
    missing = []
    for k, (rd, f, t) in enumerate(order):
        intra, lat, bw = truth(f, t)
        p = {"from": f, "to": t, "intra_host": intra, "round": rd, "latency": [], "bandwidth": [], "missing": False}
        if a.stop_after is not None and k >= a.stop_after:
            p["missing"] = True
            p["error"] = "not measured: the run stopped"
            missing.append([f, t])
            points.append(p)
            continue
        timed = 0.05
        oneway = summary(lat, int(timed / (2 * lat * 1e-9)), rng)
        p["latency"].append({"size_bytes": lat_size, "warmup": 1000, "timed_s": timed, "oneway": oneway})
        wt = window * bw_size / (bw * 1e6) * 1e9
        windows = max(1, int(0.1 / (wt * 1e-9)))
        moved = windows * window * bw_size
        p["bandwidth"].append({
            "size_bytes": bw_size, "window": window, "warmup": 4, "timed_s": round(windows * wt * 1.02 / 1e9, 6),
            "bytes": moved, "bandwidth_MBps": round(bw / 1.02, 1), "median_MBps": round(bw, 1),
            "window_time": summary(wt, windows, rng),
        })
        lat_m[f][t] = round(oneway["p50_ns"] / 1000, 3)
        p99_m[f][t] = round(oneway["p99_ns"] / 1000, 3)
        bw_m[f][t] = round(bw, 1)
        points.append(p)

    measured = [p for p in points if not p["missing"]]
    scopes = {s: [p for p in measured if p["intra_host"] == (s == "intra")] for s in ("intra", "inter")}
    merged, baselines = [], []
    for s, ps in scopes.items():
        if not ps:
            continue
        ow = [p["latency"][0]["oneway"] for p in ps]
        q = lambda k, f=statistics.median: int(f([o[k] for o in ow]))
        merged.append({"scope": s, "pairs": len(ps), "oneway": {
            "count": sum(o["count"] for o in ow), "mean_ns": round(statistics.mean(o["mean_ns"] for o in ow), 1),
            "stddev_ns": round(statistics.mean(o["stddev_ns"] for o in ow), 1), "min_ns": q("min_ns", min),
            "p50_ns": q("p50_ns"), "p90_ns": q("p90_ns"), "p99_ns": q("p99_ns", max), "p999_ns": q("p999_ns", max),
            "p9999_ns": q("p9999_ns", max), "max_ns": q("max_ns", max)}})
        for metric, cells in (("latency", [lat_m[p["from"]][p["to"]] for p in ps]),
                              ("bandwidth", [bw_m[p["from"]][p["to"]] for p in ps])):
            baselines.append({"metric": metric, "stats": {"scope": s, "cells": len(cells),
                              "median": round(statistics.median(cells), 3), "mad": round(mad(cells), 3)}})

    def finding(metric, subject, cells, label):
        m = lat_m if metric == "latency" else bw_m
        mine = [m[f][t] for f, t in cells if m[f][t] is not None]
        if not mine:
            return None
        inter = lambda f, t: host_of[f] != host_of[t]
        scope = "inter" if any(inter(f, t) for f, t in cells) else "intra"
        others = [m[p["from"]][p["to"]] for p in measured
                  if (p["from"], p["to"]) not in cells and (scope == "inter") == inter(p["from"], p["to"])]
        value, base = statistics.median(mine), statistics.median(others)
        spread = 1.4826 * mad(others) or base * 0.01
        ratio = value / base
        return {
            "metric": metric,
            "line": f"{label}: {metric} {ratio:.2f}× the median of the other {scope}-host pairs",
            "finding": {"subject": subject, "scope": scope, "side": "high" if ratio > 1 else "low",
                        "value": round(value, 3), "baseline": round(base, 3), "ratio": round(ratio, 3),
                        "factor": 1.5, "z": round((value - base) / spread, 1), "cells": [list(c) for c in cells]},
            "retest": [round(value * rng.uniform(0.98, 1.02), 3)],
            "confirmed": True,
        }

    suspects = []
    if a.slow_rank is not None:
        r = a.slow_rank
        cells = [(f, t) for f in range(n) for t in range(n) if f != t and r in (f, t)]
        suspects.append(finding("bandwidth", {"kind": "rank", "rank": r, "host": names[host_of[r]]}, cells,
                                f"rank {r} ({names[host_of[r]]}) ↔ all"))
    if link:
        x, y = link
        subject = {"kind": "link", "from": x, "to": y, "from_host": names[host_of[x]], "to_host": names[host_of[y]]}
        suspects.append(finding("latency", subject, [(x, y), (y, x)],
                                f"link {x} ({names[host_of[x]]}) ↔ {y} ({names[host_of[y]]})"))
    suspects = [s for s in suspects if s]
    if a.stop_after is not None:
        for s in suspects:  # the run stopped before its re-tests
            s["retest"], s["confirmed"] = [], None

    failing, bad = [], {}
    for p in measured:
        f, t = p["from"], p["to"]
        why = []
        if a.min_bandwidth is not None and bw_m[f][t] < a.min_bandwidth:
            why.append(f"bandwidth {bw_m[f][t]:.0f} MB/s below {a.min_bandwidth:.0f}")
        if a.max_latency is not None and lat_m[f][t] > a.max_latency:
            why.append(f"p50 latency {lat_m[f][t]:.2f} µs above {a.max_latency:g}")
        if why:
            failing.append(f"rank {f} ({names[host_of[f]]}) → rank {t} ({names[host_of[t]]}): {', '.join(why)}")
        for r in (f, t):
            bad.setdefault(r, []).append(bool(why))
    failing_ranks = [r for r, v in sorted(bad.items()) if all(v)]
    gate = a.min_bandwidth is not None or a.max_latency is not None

    cmd = ["xferbench", "mesh", "-t", "mpi", "--mode", a.mode]
    if a.min_bandwidth is not None:
        cmd += ["--min-bandwidth", f"{a.min_bandwidth:g}"]
    if a.max_latency is not None:
        cmd += ["--max-latency", f"{a.max_latency:g}"]
    run = {
        "experiment": "mesh",
        "complete": a.stop_after is None,
        **({"stopped_by": "interrupted (SIGINT) during round %d" % order[a.stop_after][0]}
           if a.stop_after is not None else {}),
        "env": {
            "tool": "xferbench", "version": "0.1.0", "timestamp": "2026-11-24T09:30:00Z",
            "hostname": names[host_of[0]], "kernel": "Linux 6.1", "arch": "x86_64",
            "cpu_model": "Fixture CPU", "cpus_online": 32, "cpus_allowed": 1,
            "virtualization": {"virtual_machine": False, "hypervisor": None, "container": None},
            "clock": {"source": "CLOCK_MONOTONIC", "kernel_clocksource": "tsc", "overhead_ns": 20.0,
                      "min_step_ns": 10, "resolution_ns": 1},
            "governor": "performance", "command": cmd,
        },
        "options": {"transport": "mpi", "mode": a.mode, "latency_sizes": [lat_size],
                    "bandwidth_sizes": [bw_size], "window": window, "duration": "50ms",
                    "min_bandwidth_MBps": a.min_bandwidth, "max_latency_us": a.max_latency},
        "placement": {"allowed_cpus": [0], "initiator_cpu": 0, "pinned": True, "responder_cpu": None,
                      "same_core": False, "smt_siblings": False},
        "points": points,
        "ranks_total": n,
        "ranks": [{"rank": r, "host": names[host_of[r]], "cpu": 2 * slot[r], "core": slot[r], "socket": 0,
                   "allowed_cpus": [2 * slot[r]], "pid": 41000 + r} for r in range(n)],
        "schedule": {"kind": "tournament", "mode": a.mode, "rounds": len(rounds),
                     "pairs_per_round": max(len(r) for r in rounds) if rounds else 0},
        "matrices": {"latency_size_bytes": lat_size, "latency_p50_us": lat_m, "latency_p99_us": p99_m,
                     "bandwidth_size_bytes": bw_size, "bandwidth_MBps": bw_m},
        "merged": merged,
        "baselines": baselines,
        "suspects": suspects,
        "health": {"min_bandwidth_MBps": a.min_bandwidth, "max_latency_us": a.max_latency,
                   "failing": failing, "failing_ranks": failing_ranks if gate else [],
                   "passed": not failing},
        "missing": missing,
        "warnings": [],
    }
    json.dump(run, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
