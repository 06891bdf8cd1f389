//! The Saxpy kernel, y = a·x + b out of place, with the widest SIMD the CPU
//! has, chosen at run time so one binary runs everywhere and still uses
//! AVX-512 or AVX2/FMA (x86-64), or NEON (aarch64), where they exist.

/// A kernel: `y[i] = a·x[i] + b` for i < min(len x, len y).
pub type Kernel = fn(a: f32, b: f32, x: &[f32], y: &mut [f32]);

/// Every kernel there is, on any CPU, widest first.
pub const NAMES: [&str; 4] = ["avx512", "avx2+fma", "neon", "portable"];

/// The best kernel for this CPU, and its name for the report.
pub fn best() -> (Kernel, &'static str) {
    available()[0]
}

/// Every kernel this CPU can run, widest first; the portable one is last
/// and always there.
pub fn available() -> Vec<(Kernel, &'static str)> {
    let mut ks: Vec<(Kernel, &'static str)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        // 512-bit vectors double what one load, FMA and store move: on a
        // 16 KiB buffer (in L1) the kernel is bound by exactly those.
        if has!("avx512f") {
            ks.push((x86::saxpy_avx512, "avx512"));
        }
        if has!("avx2") && has!("fma") {
            ks.push((x86::saxpy_avx2_fma, "avx2+fma"));
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            ks.push((arm::saxpy_neon, "neon"));
        }
    }
    ks.push((portable, "portable"));
    ks
}

/// The kernel called `name`, if this CPU can run it.
pub fn by_name(name: &str) -> Option<(Kernel, &'static str)> {
    available().into_iter().find(|(_, n)| *n == name)
}

/// Any CPU: the compiler vectorises this with the baseline SIMD (SSE2 on
/// x86-64). Two roundings (multiply, then add): within 1 ulp of the fused
/// result.
pub fn portable(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y = a * *x + b;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    pub fn saxpy_avx512(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        // SAFETY: chosen only after AVX-512F was detected (see `available`).
        unsafe { inner512(a, b, x, y) }
    }

    /// As [`inner`], 64 floats per iteration in 512-bit vectors, and the
    /// tail in one masked load and store (no scalar loop).
    #[target_feature(enable = "avx512f")]
    unsafe fn inner512(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        let va = _mm512_set1_ps(a);
        let vb = _mm512_set1_ps(b);
        let mut i = 0;
        // SAFETY: every access is below n, the length of both slices; the
        // masked tail touches only lanes below n.
        unsafe {
            while i + 64 <= n {
                let x0 = _mm512_loadu_ps(xp.add(i));
                let x1 = _mm512_loadu_ps(xp.add(i + 16));
                let x2 = _mm512_loadu_ps(xp.add(i + 32));
                let x3 = _mm512_loadu_ps(xp.add(i + 48));
                _mm512_storeu_ps(yp.add(i), _mm512_fmadd_ps(va, x0, vb));
                _mm512_storeu_ps(yp.add(i + 16), _mm512_fmadd_ps(va, x1, vb));
                _mm512_storeu_ps(yp.add(i + 32), _mm512_fmadd_ps(va, x2, vb));
                _mm512_storeu_ps(yp.add(i + 48), _mm512_fmadd_ps(va, x3, vb));
                i += 64;
            }
            while i + 16 <= n {
                let v = _mm512_loadu_ps(xp.add(i));
                _mm512_storeu_ps(yp.add(i), _mm512_fmadd_ps(va, v, vb));
                i += 16;
            }
            if i < n {
                let m: __mmask16 = (1u16 << (n - i)) - 1;
                let v = _mm512_maskz_loadu_ps(m, xp.add(i));
                _mm512_mask_storeu_ps(yp.add(i), m, _mm512_fmadd_ps(va, v, vb));
            }
        }
    }

    pub fn saxpy_avx2_fma(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        // SAFETY: chosen only after AVX2 and FMA were detected (see `available`).
        unsafe { inner(a, b, x, y) }
    }

    /// 32 floats per iteration in four independent FMAs, so the two FMA
    /// ports stay busy while loads and stores stream; unaligned loads and
    /// stores (ring slices start anywhere).
    #[target_feature(enable = "avx2,fma")]
    unsafe fn inner(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        let va = _mm256_set1_ps(a);
        let vb = _mm256_set1_ps(b);
        let mut i = 0;
        // SAFETY: every access is below n, the length of both slices.
        unsafe {
            while i + 32 <= n {
                let x0 = _mm256_loadu_ps(xp.add(i));
                let x1 = _mm256_loadu_ps(xp.add(i + 8));
                let x2 = _mm256_loadu_ps(xp.add(i + 16));
                let x3 = _mm256_loadu_ps(xp.add(i + 24));
                _mm256_storeu_ps(yp.add(i), _mm256_fmadd_ps(va, x0, vb));
                _mm256_storeu_ps(yp.add(i + 8), _mm256_fmadd_ps(va, x1, vb));
                _mm256_storeu_ps(yp.add(i + 16), _mm256_fmadd_ps(va, x2, vb));
                _mm256_storeu_ps(yp.add(i + 24), _mm256_fmadd_ps(va, x3, vb));
                i += 32;
            }
            while i + 8 <= n {
                let v = _mm256_loadu_ps(xp.add(i));
                _mm256_storeu_ps(yp.add(i), _mm256_fmadd_ps(va, v, vb));
                i += 8;
            }
            while i < n {
                *yp.add(i) = a.mul_add(*xp.add(i), b);
                i += 1;
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    pub fn saxpy_neon(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        // SAFETY: chosen only after NEON was detected (see `best`).
        unsafe { inner(a, b, x, y) }
    }

    #[target_feature(enable = "neon")]
    unsafe fn inner(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        let n = x.len().min(y.len());
        let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
        let vb = vdupq_n_f32(b);
        let mut i = 0;
        // SAFETY: every access is below n, the length of both slices.
        unsafe {
            while i + 16 <= n {
                let x0 = vld1q_f32(xp.add(i));
                let x1 = vld1q_f32(xp.add(i + 4));
                let x2 = vld1q_f32(xp.add(i + 8));
                let x3 = vld1q_f32(xp.add(i + 12));
                vst1q_f32(yp.add(i), vfmaq_n_f32(vb, x0, a));
                vst1q_f32(yp.add(i + 4), vfmaq_n_f32(vb, x1, a));
                vst1q_f32(yp.add(i + 8), vfmaq_n_f32(vb, x2, a));
                vst1q_f32(yp.add(i + 12), vfmaq_n_f32(vb, x3, a));
                i += 16;
            }
            while i < n {
                *yp.add(i) = a.mul_add(*xp.add(i), b);
                i += 1;
            }
        }
    }
}

/// Page-aligned x and y for a kernel run, y placed 1 KiB + 64 B past a
/// page boundary so `x[i]` and `y[i]` never share an offset modulo 4 KiB.
pub struct Pair {
    mem: Vec<f32>,
    n: usize,
    y_at: usize,
}

impl Pair {
    pub fn new(n: usize) -> Pair {
        let page = super::ring::PAGE / 4;
        let x_pages = n.div_ceil(page) * page;
        let pad = page + (1024 + 64) / 4;
        let mut mem = vec![0.0f32; page + x_pages + pad + n];
        for (i, v) in mem.iter_mut().enumerate() {
            *v = (i % 1000) as f32 * 0.001;
        }
        Pair {
            n,
            y_at: x_pages + pad,
            mem,
        }
    }

    fn base(&self) -> usize {
        self.mem.as_ptr().align_offset(super::ring::PAGE)
    }

    pub fn run(&mut self, k: Kernel, a: f32, b: f32) {
        let (n, base, y_at) = (self.n, self.base(), self.y_at);
        let (xs, ys) = self.mem.split_at_mut(base + y_at);
        k(a, b, &xs[base..base + n], &mut ys[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place.
    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i32).abs_diff(b.to_bits() as i32)
    }

    #[test]
    fn every_kernel_matches_the_fused_scalar_reference() {
        let n = 1000 + 7; // a tail after the vector loops
        let x: Vec<f32> = (0..n).map(|i| (i as f32 - 500.0) * 0.37 + 1e-3).collect();
        let (a, b) = (1.000_123_4f32, -0.3f32);
        let want: Vec<f32> = x.iter().map(|v| a.mul_add(*v, b)).collect();
        for (k, label) in available() {
            let mut y = vec![0.0f32; n];
            k(a, b, &x, &mut y);
            for i in 0..n {
                assert!(
                    ulps(y[i], want[i]) <= 1,
                    "{label}: y[{i}] = {} vs {} (x = {})",
                    y[i],
                    want[i],
                    x[i]
                );
            }
            // Nothing past the shorter slice is written, whatever the tail.
            for len in [0, 1, 5, 15, 16, 17, 63, 64, 65, 100] {
                let mut short = vec![9.0f32; len + 40];
                k(a, b, &x[..len], &mut short);
                assert!(short[len..].iter().all(|v| *v == 9.0), "{label}, {len}");
                assert!(
                    (0..len).all(|i| ulps(short[i], want[i]) <= 1),
                    "{label}, {len}"
                );
            }
        }
    }

    #[test]
    fn fma_kernels_are_exactly_fused() {
        let fused: Vec<_> = available()
            .into_iter()
            .filter(|(_, n)| *n != "portable")
            .collect();
        if fused.is_empty() {
            eprintln!("no FMA kernel on this CPU: skipped");
        }
        for (k, name) in fused {
            let x: Vec<f32> = (0..77).map(|i| 1.0 + i as f32 * f32::EPSILON).collect();
            let mut y = vec![0.0; 77];
            k(1.0 + f32::EPSILON, -1.0, &x, &mut y);
            for i in 0..77 {
                assert_eq!(y[i], (1.0 + f32::EPSILON).mul_add(x[i], -1.0), "{name}");
            }
        }
    }

    #[test]
    fn kernels_are_found_by_name_and_portable_is_always_there() {
        let all = available();
        assert_eq!(all.last().map(|k| k.1), Some("portable"));
        assert_eq!(best().1, all[0].1);
        for (_, name) in &all {
            assert_eq!(by_name(name).map(|k| k.1), Some(*name));
        }
        assert!(by_name("sse9").is_none());
        assert!(all.iter().all(|(_, n)| NAMES.contains(n)));
    }

    #[test]
    fn pair_keeps_x_and_y_apart_modulo_4k() {
        let mut p = Pair::new(4096);
        let base = p.base();
        let x = p.mem[base..].as_ptr() as usize;
        let y = p.mem[base + p.y_at..].as_ptr() as usize;
        assert_eq!(x % 4096, 0);
        assert_ne!(y % 4096, 0);
        assert!(y >= x + 4096 * 4);
        let (k, _) = best();
        p.run(k, 2.0, 1.0);
        assert_eq!(p.mem[base + p.y_at + 1], 2.0 * p.mem[base + 1] + 1.0);
    }
}
