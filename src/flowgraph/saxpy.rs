//! The Saxpy kernel, y = a·x + b out of place, with the widest SIMD the CPU
//! has, chosen at run time so one binary runs everywhere and still uses
//! AVX2/FMA (x86-64) or NEON (aarch64) where they exist.

/// A kernel: y[i] = a·x[i] + b for i < min(len x, len y).
pub type Kernel = fn(a: f32, b: f32, x: &[f32], y: &mut [f32]);

/// The best kernel for this CPU, and its name for the report.
pub fn best() -> (Kernel, &'static str) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return (x86::saxpy_avx2_fma, "avx2+fma");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            return (arm::saxpy_neon, "neon");
        }
    }
    (portable, "portable")
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

    pub fn saxpy_avx2_fma(a: f32, b: f32, x: &[f32], y: &mut [f32]) {
        // SAFETY: chosen only after AVX2 and FMA were detected (see `best`).
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
/// page boundary so x[i] and y[i] never share an offset modulo 4 KiB.
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
        let (best_k, name) = best();
        for (k, label) in [(best_k, name), (portable as Kernel, "portable")] {
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
            // Nothing past the shorter slice is written.
            let mut short = vec![9.0f32; 10];
            k(a, b, &x[..5], &mut short);
            assert!(short[5..].iter().all(|v| *v == 9.0), "{label}");
        }
    }

    #[test]
    fn fma_kernels_are_exactly_fused() {
        let (k, name) = best();
        if name == "portable" {
            eprintln!("no FMA kernel on this CPU: skipped");
            return;
        }
        let x: Vec<f32> = (0..64).map(|i| 1.0 + i as f32 * f32::EPSILON).collect();
        let mut y = vec![0.0; 64];
        k(1.0 + f32::EPSILON, -1.0, &x, &mut y);
        for i in 0..64 {
            assert_eq!(y[i], (1.0 + f32::EPSILON).mul_add(x[i], -1.0));
        }
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
