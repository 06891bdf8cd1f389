#!/usr/bin/python3
"""GNU Radio 3.10 peer for bench/flowgraph-peers.sh.

Flowgraph: blocks.null_source (float) -> M x blocks.multiply_const_ff ->
blocks.null_sink, run for a warm-up and then a measuring window; the rate is
the sink's nitems_read() difference over the window's wall-clock time.

Differences from the seed's flowgraph, all in GNU Radio's favour or neutral:
  * GNU Radio 3.10 has no one-block a*x+b for floats (multiply_const_ff and
    add_const_ff are two blocks), so each "saxpy" block here is one
    multiply_const_ff (VOLK volk_32f_s32f_multiply_32f, out of place): one
    multiply per item, cheaper than saxpy.
  * null_source memsets its output (GNU Radio has no source that claims
    items without writing them); at GNU Radio's rates the memset is noise.
  * null_sink consumes without reading, as the seed's Benchmark Sink does.

CPU placement (the seed's two strategies for GNU Radio 3.10):
  default  every block's affinity is the first N CPUs (0..N-1); the kernel
           schedules the thread-per-block threads within them;
  custom   saxpy blocks split into N consecutive groups (the first M % N
           groups get floor(M/N)+1), the source with the first group, the sink
           with the last; each block pinned to its group's CPU.

Runs only under /usr/bin/python3 (Debian's gnuradio bindings are built for it).
Prints one JSON line per run:
{"runtime":"gnuradio3.10","scheduler":"default|custom","cores":N,"blocks":M,"samples_per_s":X}
"""
import argparse
import json
import sys
import time

from gnuradio import blocks, gr


def groups(n, m):
    """Sizes of the N consecutive saxpy groups of the custom strategy."""
    q, r = divmod(m, n)
    return [q + 1 if g < r else q for g in range(n)]


def measure(n, m, strategy, duration, warmup):
    tb = gr.top_block("xferbench-flowgraph-peer")
    src = blocks.null_source(gr.sizeof_float)
    saxpys = [blocks.multiply_const_ff(0.5 + 0.001 * k) for k in range(m)]
    snk = blocks.null_sink(gr.sizeof_float)
    tb.connect(src, *saxpys, snk)

    if strategy == "default":
        cpus = list(range(n))
        for b in [src, *saxpys, snk]:
            b.set_processor_affinity(cpus)
    else:
        src.set_processor_affinity([0])
        k = 0
        for cpu, size in enumerate(groups(n, m)):
            for _ in range(size):
                saxpys[k].set_processor_affinity([cpu])
                k += 1
        snk.set_processor_affinity([n - 1])

    tb.start()
    try:
        time.sleep(warmup)
        c0, t0 = snk.nitems_read(0), time.perf_counter()
        time.sleep(duration)
        c1, t1 = snk.nitems_read(0), time.perf_counter()
    finally:
        tb.stop()
        tb.wait()
    return (c1 - c0) / (t1 - t0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", type=int, required=True, help="N: CPUs 0..N-1")
    p.add_argument("--blocks", type=int, required=True, help="M: saxpy blocks")
    p.add_argument("--strategy", choices=["default", "custom"], default="default")
    p.add_argument("--duration", type=float, default=2.0, help="measuring window, s")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up, s")
    a = p.parse_args()
    if a.cores < 1 or a.blocks < 1 or a.duration <= 0 or a.warmup < 0:
        p.error("cores, blocks and duration must be positive")
    sps = measure(a.cores, a.blocks, a.strategy, a.duration, a.warmup)
    print(json.dumps({"runtime": "gnuradio3.10", "scheduler": a.strategy,
                      "cores": a.cores, "blocks": a.blocks,
                      "samples_per_s": round(sps)}, separators=(",", ":")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
