//! FutureSDR 0.8 peer for bench/flowgraph-peers.sh.
//!
//! Dummy Source (claims its whole output slice without writing it) -> M Saxpy
//! blocks (y = a*x + b on f32, out of place) -> Benchmark Sink (consumes its
//! whole input slice without reading it, times itself after a warm-up and
//! finishes after the measuring window, which ends the flowgraph).
//!
//! Schedulers (pick with --scheduler):
//!   smol  the seed's "default" strategy: SmolScheduler with N executors, each
//!         pinned to one of the CPUs this process may run on;
//!   flow  the seed's "custom" strategy: FlowScheduler with the saxpy blocks
//!         split into N consecutive groups (the first M % N groups get one
//!         more), the source with the first group, the sink with the last.
//! FlowScheduler starts one worker per CPU in the process's affinity mask, so
//! run this under `taskset -c 0-(N-1)`.
//!
//! Prints one JSON line:
//! {"runtime":"futuresdr","scheduler":"smol|flow","cores":N,"blocks":M,"samples_per_s":X}

use futuresdr::prelude::*;
use futuresdr::runtime::dev::prelude::*;
use futuresdr::runtime::scheduler::FlowScheduler;
use futuresdr::runtime::scheduler::SmolScheduler;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

/// Claims every free output item without writing it.
#[derive(Block)]
struct DummySource {
    #[output]
    output: DefaultCpuWriter<f32>,
}

impl Kernel for DummySource {
    async fn work(
        &mut self,
        _io: &mut WorkIo,
        _mo: &mut MessageOutputs,
        _meta: &BlockMeta,
    ) -> futuresdr::runtime::Result<()> {
        let n = self.output.slice().len();
        if n > 0 {
            self.output.produce(n);
        }
        Ok(())
    }
}

/// y = a*x + b, out of place.
#[derive(Block)]
struct Saxpy {
    a: f32,
    b: f32,
    #[input]
    input: DefaultCpuReader<f32>,
    #[output]
    output: DefaultCpuWriter<f32>,
}

impl Saxpy {
    fn new(a: f32, b: f32) -> Self {
        Self {
            a,
            b,
            input: Default::default(),
            output: Default::default(),
        }
    }
}

impl Kernel for Saxpy {
    async fn work(
        &mut self,
        io: &mut WorkIo,
        _mo: &mut MessageOutputs,
        _meta: &BlockMeta,
    ) -> futuresdr::runtime::Result<()> {
        let i = self.input.slice();
        let o = self.output.slice();
        let i_len = i.len();
        let m = i_len.min(o.len());
        if m > 0 {
            let (a, b) = (self.a, self.b);
            for (x, y) in i[..m].iter().zip(o[..m].iter_mut()) {
                // algebraic ops let LLVM fuse into an FMA where the target has one
                *y = x.algebraic_mul(a).algebraic_add(b);
            }
            self.input.consume(m);
            self.output.produce(m);
        }
        if self.input.finished() && m == i_len {
            io.finished = true;
        }
        Ok(())
    }
}

/// Consumes every available input item without reading it. Measures its own
/// rate, as the seed's Benchmark Sink does: the clock starts at the first call
/// after the warm-up and stops at the first call after the window; then the
/// sink finishes, which finishes the blocks upstream of it.
#[derive(Block)]
struct BenchmarkSink {
    warmup: Duration,
    window: Duration,
    count: u64,
    started: Option<Instant>,
    mark: Option<(Instant, u64)>,
    /// items per second, as f64 bits, once measured
    result: Arc<AtomicU64>,
    #[input]
    input: DefaultCpuReader<f32>,
}

impl Kernel for BenchmarkSink {
    async fn work(
        &mut self,
        io: &mut WorkIo,
        _mo: &mut MessageOutputs,
        _meta: &BlockMeta,
    ) -> futuresdr::runtime::Result<()> {
        let n = self.input.slice().len();
        if n > 0 {
            self.input.consume(n);
            self.count += n as u64;
            let now = Instant::now();
            let started = *self.started.get_or_insert(now);
            match self.mark {
                None if now - started >= self.warmup => self.mark = Some((now, self.count)),
                Some((t0, c0)) if now - t0 >= self.window => {
                    let sps = (self.count - c0) as f64 / (now - t0).as_secs_f64();
                    self.result.store(sps.to_bits(), Ordering::Relaxed);
                    io.finished = true;
                }
                _ => {}
            }
        }
        if self.input.finished() {
            io.finished = true;
        }
        Ok(())
    }
}

struct Args {
    cores: usize,
    blocks: usize,
    scheduler: String,
    duration: f64,
    warmup: f64,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut a = Args {
        cores: 1,
        blocks: 1,
        scheduler: "flow".into(),
        duration: 2.0,
        warmup: 0.5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--cores" => a.cores = v.parse().map_err(|e| bad(&e))?,
            "--blocks" => a.blocks = v.parse().map_err(|e| bad(&e))?,
            "--scheduler" => a.scheduler = v,
            "--duration" => a.duration = v.parse().map_err(|e| bad(&e))?,
            "--warmup" => a.warmup = v.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if a.cores == 0 || a.blocks == 0 || a.duration <= 0.0 || a.warmup < 0.0 {
        return Err("cores, blocks and duration must be > 0".into());
    }
    if a.scheduler != "flow" && a.scheduler != "smol" {
        return Err(format!("--scheduler must be flow or smol, not {}", a.scheduler));
    }
    Ok(a)
}

/// Runs the flowgraph on `rt` until the sink has measured and finished.
fn measure<S>(rt: Runtime<S>, fg: Flowgraph, result: &AtomicU64) -> std::result::Result<f64, String>
where
    S: futuresdr::runtime::scheduler::Scheduler + 'static,
{
    rt.run(fg).map_err(|e| format!("run: {e}"))?;
    match f64::from_bits(result.load(Ordering::Relaxed)) {
        sps if sps > 0.0 => Ok(sps),
        _ => Err("the flowgraph ended before the sink measured a rate".into()),
    }
}

fn run(args: &Args) -> std::result::Result<f64, String> {
    let (n, m) = (args.cores, args.blocks);
    let result = Arc::new(AtomicU64::new(0));
    let mut fg = Flowgraph::new();
    let e = |e: Error| format!("flowgraph: {e}");

    let src = fg.add(DummySource { output: Default::default() }).map_err(e)?;
    let mut saxpys = Vec::with_capacity(m);
    for k in 0..m {
        // distinct coefficients per block, values stay finite whatever x is
        saxpys.push(fg.add(Saxpy::new(0.5 + 0.001 * k as f32, 0.25)).map_err(e)?);
    }
    let snk = fg
        .add(BenchmarkSink {
            warmup: Duration::from_secs_f64(args.warmup),
            window: Duration::from_secs_f64(args.duration),
            count: 0,
            started: None,
            mark: None,
            result: result.clone(),
            input: Default::default(),
        })
        .map_err(e)?;

    fg.stream(&src, |b: &mut DummySource| &mut b.output, &saxpys[0], |b: &mut Saxpy| &mut b.input)
        .map_err(e)?;
    for w in saxpys.windows(2) {
        fg.stream(&w[0], |b: &mut Saxpy| &mut b.output, &w[1], |b: &mut Saxpy| &mut b.input)
            .map_err(e)?;
    }
    fg.stream(&saxpys[m - 1], |b: &mut Saxpy| &mut b.output, &snk, |b: &mut BenchmarkSink| &mut b.input)
        .map_err(e)?;

    if args.scheduler == "smol" {
        let rt = Runtime::with_scheduler(SmolScheduler::with_config(n, true));
        measure(rt, fg, &result)
    } else {
        // The seed's custom split: groups of consecutive saxpy blocks.
        let (q, r) = (m / n, m % n);
        let mut groups: Vec<Vec<BlockId>> = vec![Vec::new(); n];
        groups[0].push(src.id());
        let mut k = 0;
        for (g, group) in groups.iter_mut().enumerate() {
            for _ in 0..q + usize::from(g < r) {
                group.push(saxpys[k].id());
                k += 1;
            }
        }
        groups[n - 1].push(snk.id());
        let sched = FlowScheduler::with_pinned_blocks(groups);
        let rt = Runtime::with_scheduler(sched);
        measure(rt, fg, &result)
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("futuresdr-flowgraph: {e}");
            eprintln!(
                "usage: futuresdr-flowgraph --cores N --blocks M [--scheduler flow|smol] [--duration S] [--warmup S]"
            );
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(sps) => println!(
            "{{\"runtime\":\"futuresdr\",\"scheduler\":\"{}\",\"cores\":{},\"blocks\":{},\"samples_per_s\":{:.0}}}",
            args.scheduler, args.cores, args.blocks, sps
        ),
        Err(e) => {
            eprintln!("futuresdr-flowgraph: {e}");
            std::process::exit(1);
        }
    }
}
