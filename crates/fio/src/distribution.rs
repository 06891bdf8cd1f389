//! fio's non-uniform random distributions (`random_distribution=zipf`,
//! `pareto`, `normal`) as samplers of a block index in `0..n`.
//!
//! As in fio, the law picks a *rank* (0 the most likely for zipf and
//! pareto, the middle for normal), and the rank becomes a block:
//!
//! * scattered (fio's random offsets): a keyed bijection of `0..n` spreads
//!   the hot ranks over the whole region, as fio's hash of the rank does,
//!   then `:CENTER` rotates the result. The share of accesses each block
//!   gets is the law's; where the hot blocks lie is not.
//! * in place (what fio does for `file_service_type=zipf|pareto|normal`):
//!   rank `r` is block `r`, rotated so that the most likely rank sits at
//!   `CENTER` of the range (fio's defaults: a random place for zipf and
//!   pareto, the middle for normal).
//!
//! Laws, with fio's parameters:
//!
//! * `zipf:THETA`: P(rank r) ∝ 1/(r+1)^THETA, drawn exactly by
//!   rejection-inversion (Hörmann and Derflinger); fio uses Gray's
//!   approximation of the same law, whose hit shares agree within a point
//!   or two.
//! * `pareto:H`: rank = (n-1)·u^(ln H / ln(1-H)) for a uniform u, fio's
//!   formula (H=0.2 sends about 80% of the accesses to 20% of the blocks).
//! * `normal:DEV`: fio's bell: the mean of 12 uniform draws over the range
//!   (a standard deviation of about n/12) plus a uniform jitter DEV% of the
//!   range wide.
//!
//! Draws are pure functions of a 64-bit state ([`Sampler::draw`]), so a
//! caller can make each I/O's block a function of its index.

use crate::payload::splitmix;

/// Which law, with its parameter.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Law {
    /// Zipf's law with exponent `theta` (> 0, not 1).
    Zipf { theta: f64 },
    /// fio's Pareto power `h` (0 < h < 1).
    Pareto { h: f64 },
    /// fio's normal law, jittered by `dev` percent of the range (0 ≤ dev < 100).
    Normal { dev: f64 },
}

/// A law and fio's optional `:CENTER` (0.0–1.0 of the range).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Shape {
    pub law: Law,
    pub center: Option<f64>,
}

impl Shape {
    /// Parses fio's `zipf[:THETA[:CENTER]]`, `pareto[:H[:CENTER]]`,
    /// `normal[:DEV[:CENTER]]`; None if `v` names none of them. Errors say
    /// what is wrong and the valid range, without the option's name.
    pub fn parse(v: &str) -> Option<Result<Shape, String>> {
        let (name, rest) = match v.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (v.trim(), None),
        };
        // fio's defaults when no value is given.
        let default = match name {
            "zipf" => 1.1,
            "pareto" => 0.2,
            "normal" => 0.0,
            _ => return None,
        };
        Some(Self::parse_args(name, default, rest))
    }

    fn parse_args(name: &str, default: f64, rest: Option<&str>) -> Result<Shape, String> {
        let number = |s: &str, what: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("the {what} must be a number, as in {name}:{default}"))
        };
        let what = match name {
            "zipf" => "theta",
            "pareto" => "power",
            _ => "deviation",
        };
        let (value, center) = match rest.map(|r| r.split_once(':')) {
            None => (default, None),
            Some(None) => (number(rest.unwrap_or_default(), what)?, None),
            Some(Some((v, c))) => (number(v, what)?, Some(number(c, "center")?)),
        };
        let law = match name {
            "zipf" if value > 0.0 && value != 1.0 => Law::Zipf { theta: value },
            "zipf" => {
                return Err(format!(
                    "the zipf theta must be above 0 and not 1 (fio refuses 1), as in zipf:1.2; got {value}"
                ));
            }
            "pareto" if value > 0.0 && value < 1.0 => Law::Pareto { h: value },
            "pareto" => {
                return Err(format!(
                    "the pareto power must be above 0 and below 1, as in pareto:0.2; got {value}"
                ));
            }
            _ if (0.0..100.0).contains(&value) => Law::Normal { dev: value },
            _ => {
                return Err(format!(
                    "the normal deviation must be from 0 to below 100 (percent of the range), as in normal:10; got {value}"
                ));
            }
        };
        if let Some(c) = center
            && !(0.0..=1.0).contains(&c)
        {
            return Err(format!(
                "the center must be from 0.0 to 1.0 (a fraction of the range), as in {name}:{default}:0.25; got {c}"
            ));
        }
        Ok(Shape { law, center })
    }
}

/// A law made ready for a range of `n` blocks.
#[derive(Clone, Debug)]
enum Ready {
    Zipf(Zipf),
    Pareto { pow: f64 },
    Normal { width: u64 },
}

/// Draws block indexes in `0..n` by a [`Shape`].
#[derive(Clone, Debug)]
pub struct Sampler {
    n: u64,
    ready: Ready,
    /// Added to the (scattered) rank, modulo n: fio's center.
    rotate: u64,
    scatter: Option<Scatter>,
    /// State for [`Sampler::next`].
    #[allow(dead_code)] // Offsets draws by index; next() is for callers with a running state.
    state: u64,
}

impl Sampler {
    /// A sampler over `n` blocks (at least 1). `scatter`: spread the hot
    /// ranks over the range (fio's random offsets) rather than keep rank
    /// order (fio's file selection).
    pub fn new(shape: &Shape, n: u64, seed: u64, scatter: bool) -> Sampler {
        let n = n.max(1);
        let mut s = seed ^ 0x2545_f491_4f6c_dd1d;
        let ready = match shape.law {
            Law::Zipf { theta } => Ready::Zipf(Zipf::new(n, theta)),
            Law::Pareto { h } => Ready::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
            Law::Normal { dev } => Ready::Normal {
                width: ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2),
            },
        };
        let rotate = match (shape.law, shape.center) {
            // The bell's middle is at n/2: move it to the center.
            (Law::Normal { .. }, Some(c)) => {
                ((c - 0.5) * n as f64).round().rem_euclid(n as f64) as u64 % n
            }
            (Law::Normal { .. }, None) => 0,
            (_, Some(c)) => (c * n as f64) as u64 % n,
            (_, None) => splitmix(&mut s) % n,
        };
        Sampler {
            n,
            ready,
            rotate,
            scatter: scatter.then(|| Scatter::new(n, splitmix(&mut s))),
            state: splitmix(&mut s),
        }
    }

    /// The next block index, in `0..n` (for a caller that keeps a running
    /// state, as fio's `file_service_type=zipf|pareto|normal` would).
    #[allow(dead_code)]
    // Not an Iterator: the draws never end, and none is optional.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut s = self.state;
        let b = self.draw(&mut s);
        self.state = s;
        b
    }

    /// A block index in `0..n` drawn from `rng` (advanced), nothing else:
    /// the same state gives the same block.
    pub fn draw(&self, rng: &mut u64) -> u64 {
        let rank = self.rank(rng);
        let at = match &self.scatter {
            Some(p) => p.apply(rank),
            None => rank,
        };
        ((u128::from(at) + u128::from(self.rotate)) % u128::from(self.n)) as u64
    }

    /// The law's rank, in `0..n`.
    fn rank(&self, rng: &mut u64) -> u64 {
        let n = self.n;
        match &self.ready {
            Ready::Zipf(z) => z.sample(rng) - 1,
            Ready::Pareto { pow } => {
                let r = ((n - 1) as f64 * unit(rng).powf(*pow)) as u64;
                r.min(n - 1)
            }
            Ready::Normal { width } => {
                // The mean of 12 uniform draws over 0..=n, rounded up.
                let sum: u128 = (0..12)
                    .map(|_| u128::from(splitmix(rng)) % (u128::from(n) + 1))
                    .sum();
                let mid = sum.div_ceil(12) as i128;
                let mut jitter = if *width > 0 {
                    (splitmix(rng) % width) as i128 - (*width / 2) as i128
                } else {
                    0
                };
                // As fio: halve the jitter until the block is in range.
                while !(0..i128::from(n)).contains(&(mid + jitter)) && jitter != 0 {
                    jitter /= 2;
                }
                (mid + jitter).clamp(0, i128::from(n) - 1) as u64
            }
        }
    }
}

/// A uniform draw in [0, 1).
#[inline]
fn unit(rng: &mut u64) -> f64 {
    (splitmix(rng) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Zipf's law on ranks 1..=n by rejection-inversion (W. Hörmann and
/// G. Derflinger, "Rejection-inversion to generate variates from monotone
/// discrete distributions", 1996): O(1) to set up and to draw.
#[derive(Clone, Debug)]
struct Zipf {
    s: f64,
    n: f64,
    /// H(1.5) - 1 and H(n + 0.5): the ends of the inverted range.
    lo: f64,
    hi: f64,
    /// Draws with k - x below this are taken without the test.
    squeeze: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let n = n as f64;
        let mut z = Zipf {
            s,
            n,
            lo: 0.0,
            hi: 0.0,
            squeeze: 0.0,
        };
        z.lo = z.big_h(1.5) - 1.0;
        z.hi = z.big_h(n + 0.5);
        z.squeeze = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    /// The (unnormalised) weight of rank x: x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// ∫₁ˣ t^-s dt, written to stay accurate near s = 1.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over((1.0 - self.s) * lx) * lx
    }

    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.s)).max(-1.0);
        (ln1p_over(t) * y).exp()
    }

    /// A rank in 1..=n.
    fn sample(&self, rng: &mut u64) -> u64 {
        loop {
            let u = self.hi + unit(rng) * (self.lo - self.hi);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// expm1(x)/x, 1 at 0.
fn expm1_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x / 2.0 * (1.0 + x / 3.0 * (1.0 + x / 4.0))
    }
}

/// ln(1+x)/x, 1 at 0.
fn ln1p_over(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - x / 4.0))
    }
}

/// A keyed bijection of `0..n`: a four-round Feistel network over the
/// smallest even number of bits that holds n, walked until it lands in
/// range (fewer than four steps on average).
#[derive(Clone, Debug)]
struct Scatter {
    n: u64,
    half: u32,
    keys: [u64; 4],
}

impl Scatter {
    fn new(n: u64, seed: u64) -> Scatter {
        let bits = (64 - (n.max(2) - 1).leading_zeros()).max(2);
        let mut s = seed;
        Scatter {
            n,
            half: bits.div_ceil(2),
            keys: [
                splitmix(&mut s),
                splitmix(&mut s),
                splitmix(&mut s),
                splitmix(&mut s),
            ],
        }
    }

    fn apply(&self, x: u64) -> u64 {
        if self.n < 2 {
            return 0;
        }
        let mut y = self.round_trip(x);
        while y >= self.n {
            y = self.round_trip(y);
        }
        y
    }

    fn round_trip(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut l, mut r) = (x >> self.half, x & mask);
        for k in self.keys {
            let mut m = r ^ k;
            let f = splitmix(&mut m) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half) | r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(v: &str) -> Shape {
        Shape::parse(v).unwrap().unwrap()
    }

    /// Accesses per block for `draws` draws.
    fn counts(v: &str, n: u64, draws: usize, scatter: bool) -> Vec<u64> {
        let mut s = Sampler::new(&shape(v), n, 42, scatter);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            let b = s.next();
            assert!(b < n, "{v}: {b} out of 0..{n}");
            c[b as usize] += 1;
        }
        c
    }

    /// Share of the accesses taken by the hottest `frac` of the blocks.
    fn hottest_share(c: &[u64], frac: f64) -> f64 {
        let mut s = c.to_vec();
        s.sort_unstable_by(|a, b| b.cmp(a));
        let k = ((c.len() as f64 * frac) as usize).max(1);
        s[..k].iter().sum::<u64>() as f64 / c.iter().sum::<u64>() as f64
    }

    #[test]
    fn parses_fio_syntax_and_defaults() {
        assert_eq!(shape("zipf").law, Law::Zipf { theta: 1.1 });
        assert_eq!(shape("pareto").law, Law::Pareto { h: 0.2 });
        assert_eq!(shape("normal").law, Law::Normal { dev: 0.0 });
        let z = shape("zipf:1.2:0.25");
        assert_eq!((z.law, z.center), (Law::Zipf { theta: 1.2 }, Some(0.25)));
        assert!(Shape::parse("random").is_none());
        assert!(Shape::parse("gauss:5").is_none());
        let err = |v: &str| Shape::parse(v).unwrap().unwrap_err();
        assert!(err("zipf:1").contains("above 0 and not 1"));
        assert!(err("zipf:0").contains("above 0"));
        assert!(err("zipf:-2").contains("above 0"));
        assert!(err("pareto:1").contains("above 0 and below 1"));
        assert!(err("pareto:0").contains("above 0 and below 1"));
        assert!(err("normal:100").contains("from 0 to below 100"));
        assert!(err("normal:-1").contains("from 0 to below 100"));
        assert!(err("zipf:1.2:1.5").contains("center must be from 0.0 to 1.0"));
        assert!(err("zipf:abc").contains("theta must be a number"));
        assert!(err("zipf:1.2:x").contains("center must be a number"));
    }

    #[test]
    fn zipf_and_pareto_concentrate_accesses() {
        // Loose bounds: exact shares are about 0.84 (zipf 1.2) and 0.8
        // (pareto 0.2) for the hottest 10%, or 0.1 if uniform.
        for (v, least) in [("zipf:1.2", 0.6), ("zipf:0.8", 0.3), ("pareto:0.2", 0.6)] {
            let c = counts(v, 4096, 100_000, true);
            let share = hottest_share(&c, 0.1);
            assert!(share > least, "{v}: hottest 10% took {share}");
        }
        // pareto:0.5 is uniform (power 1).
        let c = counts("pareto:0.5", 4096, 100_000, true);
        assert!(hottest_share(&c, 0.1) < 0.2);
    }

    #[test]
    fn scattered_hot_blocks_are_spread_over_the_range() {
        for v in ["zipf:1.2", "pareto:0.2", "normal:0"] {
            let n = 4096u64;
            let c = counts(v, n, 100_000, true);
            let mut hot: Vec<usize> = (0..n as usize).collect();
            hot.sort_unstable_by(|&a, &b| c[b].cmp(&c[a]));
            let hot = &hot[..40];
            // Not all in the first (or any one) tenth of the range.
            let tenths: std::collections::BTreeSet<usize> =
                hot.iter().map(|&b| b * 10 / n as usize).collect();
            assert!(
                tenths.len() >= 4,
                "{v}: hottest blocks in tenths {tenths:?}"
            );
        }
    }

    #[test]
    fn in_place_normal_concentrates_around_the_center() {
        let n = 1000u64;
        for (v, mid) in [
            ("normal", 500usize),
            ("normal:0:0.25", 250),
            ("normal:10:0.8", 800),
        ] {
            let c = counts(v, n, 50_000, false);
            // ±10% of the range around the center: about 78% of the draws
            // for a deviation of n/12 (and 1/5 if uniform).
            let near: u64 = (mid - 100..mid + 100).map(|b| c[b]).sum();
            assert!(near > 30_000, "{v}: {near} of 50000 near {mid}");
        }
        // In place, zipf's hottest block is at the center.
        let c = counts("zipf:1.2:0.3", n, 20_000, false);
        let top = (0..n as usize).max_by_key(|&b| c[b]).unwrap();
        assert_eq!(top, 300);
    }

    #[test]
    fn draws_are_pure_and_cover_tiny_ranges() {
        let s = Sampler::new(&shape("zipf:1.2"), 1000, 7, true);
        let (mut a, mut b) = (99u64, 99u64);
        assert_eq!(s.draw(&mut a), s.draw(&mut b));
        for n in [1u64, 2, 3, 5] {
            for v in ["zipf:2", "pareto:0.1", "normal:50"] {
                let mut s = Sampler::new(&shape(v), n, 3, true);
                assert!((0..200).all(|_| s.next() < n), "{v} n={n}");
            }
        }
        // Scatter is a bijection of 0..n.
        for n in [2u64, 3, 17, 1000, 4097] {
            let p = Scatter::new(n, 5);
            let mut all: Vec<u64> = (0..n).map(|x| p.apply(x)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn zipf_matches_its_law() {
        // Rank 1's share for theta 1.2 over 100 ranks: 1/H(100, 1.2).
        let z = Zipf::new(100, 1.2);
        let norm: f64 = (1..=100).map(|r| (r as f64).powf(-1.2)).sum();
        let mut rng = 11u64;
        let ones = (0..100_000).filter(|_| z.sample(&mut rng) == 1).count();
        let want = 100_000.0 / norm;
        assert!((ones as f64 - want).abs() < want * 0.05, "{ones} vs {want}");
    }
}
