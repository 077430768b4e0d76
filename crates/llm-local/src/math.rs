//! `exp` that the compiler can vectorize.
//!
//! `f32::exp` is a libm call per value; in a prompt's SwiGLU (millions of
//! values per layer) and attention softmax it was 3% of the time on one
//! thread. [`exp`] is straight-line arithmetic (range reduction by a
//! rounding trick that needs no SSE4.1, a degree-6 polynomial, the power
//! of two built from bits), so loops over slices that call it become SIMD
//! code; [`swiglu`] compiles such a loop for each instruction set and
//! picks one at run time.

// The `unsafe` calls are of functions compiled for an instruction set,
// each after a run-time check that the CPU has it (`Simd::detect`).
#![allow(unsafe_code)]

use crate::kernels::Simd;

/// `e^x` within 2 ulp for `x` in about -87.3..88.7; below that range the
/// result is `e^-87.3` (about 1.2e-38) rather than a subnormal or zero,
/// above it `e^88.7` rather than infinity; NaN stays NaN.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split so that `n * LN2_HI` is exact for the `n` that occur.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Adding 1.5 * 2^23 rounds to the nearest integer in the low bits.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.3, 88.7);
    let shifted = x * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    // Cephes' expf polynomial for e^r, |r| <= ln2 / 2.
    let z = r * r;
    let p = 1.987_569_2e-4_f32;
    let p = p * r + 1.398_2e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e = p * z + r + 1.0;
    // 2^n from the rounded value's low bits: n is in -126..=128 after
    // the clamp, so `n + 127` is a valid biased exponent except at 128,
    // where e < 1 keeps the product finite through 2^127 * 2.
    let bits = shifted.to_bits().wrapping_sub(ROUND.to_bits()) as i32;
    let half = ((bits >> 1) + 127) as u32;
    let rest = ((bits - (bits >> 1)) + 127) as u32;
    e * f32::from_bits(half << 23) * f32::from_bits(rest << 23)
}

/// `gate = silu(gate) * up` (SwiGLU's element-wise step), with the
/// widest vectors this CPU has.
pub(crate) fn swiglu(gate: &mut [f32], up: &[f32]) {
    swiglu_with(Simd::detect(), gate, up);
}

fn swiglu_with(simd: Simd, gate: &mut [f32], up: &[f32]) {
    match simd {
        // SAFETY: `Simd::Avx512` is only made after detecting AVX-512 F,
        // BW and VL (and more).
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { swiglu_avx512(gate, up) },
        // SAFETY: `Simd::Avx2` is only made after detecting AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { swiglu_avx2(gate, up) },
        Simd::Scalar => swiglu_portable(gate, up),
    }
}

#[inline(always)]
fn swiglu_portable(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + exp(-*g)) * u;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn swiglu_avx2(gate: &mut [f32], up: &[f32]) {
    swiglu_portable(gate, up);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn swiglu_avx512(gate: &mut [f32], up: &[f32]) {
    swiglu_portable(gate, up);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swiglu_is_the_same_on_every_instruction_set() {
        let up: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin()).collect();
        let gate: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0) / 25.0).collect();
        let mut portable = gate.clone();
        swiglu_with(Simd::Scalar, &mut portable, &up);
        for ((&g, &u), &got) in gate.iter().zip(&up).zip(&portable) {
            let exact = f64::from(g) / (1.0 + (-f64::from(g)).exp()) * f64::from(u);
            assert!((f64::from(got) - exact).abs() <= 1e-6 * exact.abs().max(1e-3));
        }
        for simd in Simd::available() {
            let mut out = gate.clone();
            swiglu_with(simd, &mut out, &up);
            let same = out
                .iter()
                .zip(&portable)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{simd:?}");
        }
    }

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_is_within_two_ulp_of_the_exact_value() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.5 {
            let exact = (x as f64).exp() as f32;
            worst = worst.max(ulps(exp(x), exact));
            x += 0.000_731;
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        for x in [0.0f32, -0.0, 1.0, -1.0, 1e-8, -1e-8, 0.5, 20.0, -20.0] {
            assert!(ulps(exp(x), (x as f64).exp() as f32) <= 2, "{x}");
        }
    }

    #[test]
    fn exp_saturates_instead_of_overflowing() {
        assert!(exp(1000.0).is_finite() && exp(1000.0) > 1e38);
        assert!(exp(-1000.0) >= 0.0 && exp(-1000.0) < 1e-37);
        assert!(exp(f32::NEG_INFINITY) < 1e-37);
        assert!(exp(f32::NAN).is_nan());
        // A softmax weight of a masked score is (almost) nothing.
        assert_eq!(1.0 + exp(-1e30), 1.0);
    }
}
