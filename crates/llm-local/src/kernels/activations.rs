//! Activations quantized to 8 bits for the matrix kernels.
//!
//! Two grains, as in llama.cpp (its `Q8_0` and `Q8_K`):
//!
//! - [`Grain::Block32`]: one scale per 32 values, for the Q4_0, Q4_1,
//!   Q8_0 and Q5_0 kernels, whose weight blocks are 32 values.
//! - [`Grain::SuperBlock`]: one scale per 256 values, for the K-quant
//!   kernels. Their weights carry a scale per sub-block of 16 or 32
//!   values and one per super-block of 256; with a single activation
//!   scale per super-block, a kernel adds a super-block's sub-block sums
//!   with the weight scales alone and multiplies by the two outer scales
//!   once. With one activation scale per 32 values each sub-block sum of
//!   each token needed its own product of scales: a third of the
//!   instructions of a prompt's Q4_K kernel went to that float work.
//!
//! Both grains are laid out the same way ([`TokenQ`]): per block of 32,
//! `d` (equal over a super-block in the coarse grain), `d * Σq`; per 16
//! values `d * Σq`; and, in the coarse grain only, `-32 * Σq` per 16
//! values as integers, the start of a Q6_K kernel's sums for a weight
//! stored as `q + 32`.

use rayon::prelude::*;

use super::kquants::{QK_K, TokenQ};
use super::{BLOCK, LocalError, Simd};

/// How finely a kernel wants its activations quantized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grain {
    /// One scale per 32 values.
    Block32,
    /// One scale per super-block of 256 values.
    SuperBlock,
}

/// Tokens from which [`Activations::set`] quantizes in parallel.
const PARALLEL_TOKENS: usize = 8;

/// Activations of several tokens for [`super::QMatrix::matmul`], in the
/// grains the matrices that take them need.
#[derive(Default)]
pub(crate) struct Activations {
    pub(super) tokens: usize,
    pub(super) cols: usize,
    block32: Quantized,
    super_block: Quantized,
}

/// One grain's values; `ready` says whether the last
/// [`Activations::set_grains`] filled them.
#[derive(Default)]
struct Quantized {
    ready: bool,
    /// The 8-bit values, token after token.
    q: Vec<i8>,
    /// Each block's scale.
    scales: Vec<f32>,
    /// Each block's `d * Σq`.
    sums: Vec<f32>,
    /// `d * Σq` over each half block (16 values).
    halves: Vec<f32>,
    /// `-32 * Σq` over each half block (super-block grain only).
    offsets: Vec<i32>,
}

impl Activations {
    /// Quantizes `values`, `cols` per token, in every grain `cols` allows
    /// (the super-block grain when `cols` is a multiple of 256); reuses
    /// this buffer.
    #[cfg(test)]
    pub(crate) fn set(&mut self, values: &[f32], cols: usize) -> Result<(), LocalError> {
        let grains: &[Grain] = if cols.is_multiple_of(QK_K) {
            &[Grain::Block32, Grain::SuperBlock]
        } else {
            &[Grain::Block32]
        };
        self.set_grains(values, cols, grains)
    }

    /// Quantizes `values`, `cols` per token, in the given grains only.
    pub(crate) fn set_grains(
        &mut self,
        values: &[f32],
        cols: usize,
        grains: &[Grain],
    ) -> Result<(), LocalError> {
        if cols == 0 || !cols.is_multiple_of(BLOCK) || !values.len().is_multiple_of(cols) {
            return Err(LocalError::Engine(format!(
                "cannot quantize {} activations in rows of {cols}",
                values.len()
            )));
        }
        if grains.contains(&Grain::SuperBlock) && !cols.is_multiple_of(QK_K) {
            return Err(LocalError::Engine(format!(
                "rows of {cols} activations are not whole super-blocks of {QK_K}"
            )));
        }
        self.tokens = values.len() / cols;
        self.cols = cols;
        for (grain, quantized) in [
            (Grain::Block32, &mut self.block32),
            (Grain::SuperBlock, &mut self.super_block),
        ] {
            quantized.ready = grains.contains(&grain);
            if quantized.ready {
                quantized.fill(values, cols, grain);
            }
        }
        Ok(())
    }

    /// Token `t` in `grain`, if the last [`Activations::set_grains`]
    /// quantized that grain.
    pub(crate) fn token_q(&self, grain: Grain, t: usize) -> Option<TokenQ<'_>> {
        let quantized = match grain {
            Grain::Block32 => &self.block32,
            Grain::SuperBlock => &self.super_block,
        };
        if !quantized.ready || t >= self.tokens {
            return None;
        }
        let per = self.cols / BLOCK;
        let offsets = match grain {
            Grain::Block32 => &[][..],
            Grain::SuperBlock => &quantized.offsets[2 * t * per..2 * (t + 1) * per],
        };
        Some(TokenQ {
            q: &quantized.q[t * self.cols..(t + 1) * self.cols],
            d: &quantized.scales[t * per..(t + 1) * per],
            sums: &quantized.sums[t * per..(t + 1) * per],
            halves: &quantized.halves[2 * t * per..2 * (t + 1) * per],
            offsets,
        })
    }
}

impl Quantized {
    fn fill(&mut self, values: &[f32], cols: usize, grain: Grain) {
        let blocks = values.len() / BLOCK;
        self.q.resize(values.len(), 0);
        self.scales.resize(blocks, 0.0);
        self.sums.resize(blocks, 0.0);
        self.halves.resize(2 * blocks, 0.0);
        let offsets = match grain {
            Grain::Block32 => 0,
            Grain::SuperBlock => 2 * blocks,
        };
        self.offsets.resize(offsets, 0);
        let per = cols / BLOCK;
        let offsets_per = match grain {
            Grain::Block32 => 0,
            Grain::SuperBlock => 2 * per,
        };
        let tokens = values.len() / cols;
        let rows = values
            .chunks_exact(cols)
            .zip(self.q.chunks_exact_mut(cols))
            .zip(self.scales.chunks_exact_mut(per))
            .zip(self.sums.chunks_exact_mut(per))
            .zip(self.halves.chunks_exact_mut(2 * per))
            .map(|((((values, q), scales), sums), halves)| TokenOut {
                values,
                q,
                scales,
                sums,
                halves,
            });
        let quantize = |token: TokenOut<'_>| token.quantize(grain);
        if tokens < PARALLEL_TOKENS {
            rows.for_each(quantize);
        } else {
            rows.par_bridge().for_each(quantize);
        }
        // The offsets are a function of `q` alone, filled after it.
        if offsets_per > 0 {
            let q = &self.q;
            let fill = |(t, out): (usize, &mut [i32])| {
                let row = &q[t * cols..(t + 1) * cols];
                for (o, half) in out.iter_mut().zip(row.chunks_exact(16)) {
                    *o = -32 * half.iter().map(|&v| i32::from(v)).sum::<i32>();
                }
            };
            if tokens < PARALLEL_TOKENS {
                self.offsets
                    .chunks_exact_mut(offsets_per)
                    .enumerate()
                    .for_each(fill);
            } else {
                self.offsets
                    .par_chunks_exact_mut(offsets_per)
                    .enumerate()
                    .for_each(fill);
            }
        }
    }
}

/// One token's values and where [`Quantized::fill`] puts them.
struct TokenOut<'a> {
    values: &'a [f32],
    q: &'a mut [i8],
    scales: &'a mut [f32],
    sums: &'a mut [f32],
    halves: &'a mut [f32],
}

impl TokenOut<'_> {
    /// Quantizes with the widest vectors this CPU has: compiled for the
    /// baseline, the conversion to bytes was scalar shifts and ors, 3% of
    /// a prompt.
    fn quantize(self, grain: Grain) {
        self.quantize_with(Simd::detect(), grain);
    }

    fn quantize_with(self, simd: Simd, grain: Grain) {
        match simd {
            // SAFETY: `Simd::Avx512` is only made after detecting AVX-512
            // F, BW and VL (and more).
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => unsafe { quantize_avx512(self, grain) },
            // SAFETY: `Simd::Avx2` is only made after detecting AVX2.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 => unsafe { quantize_avx2(self, grain) },
            Simd::Scalar => self.quantize_portable(grain),
        }
    }

    #[inline(always)]
    fn quantize_portable(self, grain: Grain) {
        let span = match grain {
            Grain::Block32 => BLOCK,
            Grain::SuperBlock => QK_K,
        };
        let per_span = span / BLOCK;
        let spans = self
            .values
            .chunks_exact(span)
            .zip(self.q.chunks_exact_mut(span))
            .zip(self.scales.chunks_exact_mut(per_span))
            .zip(self.sums.chunks_exact_mut(per_span))
            .zip(self.halves.chunks_exact_mut(2 * per_span));
        for ((((values, q), scales), sums), halves) in spans {
            let d = quantize_into(values, q);
            for (((q, scale), sum), halves) in q
                .chunks_exact(BLOCK)
                .zip(scales.iter_mut())
                .zip(sums.iter_mut())
                .zip(halves.chunks_exact_mut(2))
            {
                let half = |part: &[i8]| part.iter().map(|&v| i32::from(v)).sum::<i32>();
                let (first, second) = (half(&q[..16]), half(&q[16..]));
                *scale = d;
                *sum = d * (first + second) as f32;
                halves[0] = d * first as f32;
                halves[1] = d * second as f32;
            }
        }
    }
}

/// [`TokenOut::quantize_portable`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c")]
fn quantize_avx2(token: TokenOut<'_>, grain: Grain) {
    token.quantize_portable(grain);
}

/// [`TokenOut::quantize_portable`] compiled for AVX-512.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
fn quantize_avx512(token: TokenOut<'_>, grain: Grain) {
    token.quantize_portable(grain);
}

/// Symmetric 8-bit quantization of `values` into `q` (in -127..=127) with
/// one scale, which it returns.
#[inline(always)]
pub(super) fn quantize_into(values: &[f32], q: &mut [i8]) -> f32 {
    let d = abs_max(values) / 127.0;
    let inverse = if d > 0.0 { 1.0 / d } else { 0.0 };
    // Adding 1.5 * 2^23 rounds to the nearest integer (ties to even) in
    // the low bits of the sum. `f32::round` is a libm call on baseline
    // x86-64 and `as` casts are scalar code with NaN checks: either kept
    // this loop from vectorizing.
    const ROUND: f32 = 12_582_912.0;
    for (q, v) in q.iter_mut().zip(values) {
        // `max` and `min` drop a NaN (to -127): no value leaves the range
        // (`clamp` keeps NaN).
        #[allow(clippy::manual_clamp)]
        let scaled = (v * inverse).max(-127.0).min(127.0);
        *q = (scaled + ROUND).to_bits().wrapping_sub(ROUND.to_bits()) as i8;
    }
    d
}

/// The largest `|v|` (0 for none; NaN values are skipped). In eight
/// independent lanes: one running maximum is a chain of dependent
/// instructions the compiler may not reorder, three cycles a value.
#[inline(always)]
fn abs_max(values: &[f32]) -> f32 {
    let (lanes, rest) = values.as_chunks::<8>();
    let mut max = [0.0f32; 8];
    for lane in lanes {
        for (m, v) in max.iter_mut().zip(lane) {
            *m = m.max(v.abs());
        }
    }
    let tail = rest.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    max.into_iter().fold(tail, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_grain_has_one_scale_per_super_block_and_its_offsets() {
        let values: Vec<f32> = (0..2 * 512)
            .map(|i| ((i % 97) as f32 - 48.0) / 7.0)
            .collect();
        let mut act = Activations::default();
        act.set_grains(&values, 512, &[Grain::SuperBlock]).unwrap();
        assert!(act.token_q(Grain::Block32, 0).is_none());
        assert!(act.token_q(Grain::SuperBlock, 2).is_none());
        for t in 0..2 {
            let x = act.token_q(Grain::SuperBlock, t).unwrap();
            for (b, d) in x.d.chunks_exact(8).enumerate() {
                assert!(d.iter().all(|&v| v == d[0]), "token {t} super-block {b}");
                let amax = values[t * 512 + 256 * b..t * 512 + 256 * (b + 1)]
                    .iter()
                    .fold(0.0f32, |m, v| m.max(v.abs()));
                assert_eq!(d[0], amax / 127.0);
            }
            for (s, &offset) in x.offsets.iter().enumerate() {
                let sum: i32 = x.q[16 * s..16 * s + 16].iter().map(|&v| i32::from(v)).sum();
                assert_eq!(offset, -32 * sum);
                assert_eq!(x.halves[s], x.d[s / 2] * sum as f32);
            }
        }
    }

    #[test]
    fn every_instruction_set_quantizes_to_the_same_bits() {
        let values: Vec<f32> = (0..512)
            .map(|i| ((i * 7919) % 1013) as f32 / 37.0 - 13.0)
            .collect();
        for grain in [Grain::Block32, Grain::SuperBlock] {
            let run = |simd: Simd| {
                let mut out = Quantized::default();
                out.q.resize(512, 0);
                out.scales.resize(16, 0.0);
                out.sums.resize(16, 0.0);
                out.halves.resize(32, 0.0);
                TokenOut {
                    values: &values,
                    q: &mut out.q,
                    scales: &mut out.scales,
                    sums: &mut out.sums,
                    halves: &mut out.halves,
                }
                .quantize_with(simd, grain);
                let floats = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                (
                    out.q.clone(),
                    floats(&out.scales),
                    floats(&out.sums),
                    floats(&out.halves),
                )
            };
            let portable = run(Simd::Scalar);
            assert!(portable.0.iter().any(|&q| q == 127 || q == -127));
            for simd in Simd::available() {
                assert_eq!(run(simd), portable, "{simd:?} {grain:?}");
            }
        }
    }

    #[test]
    fn the_largest_magnitude_is_found_in_any_lane() {
        for n in [0, 1, 7, 8, 9, 31, 256] {
            for at in 0..n {
                let mut values: Vec<f32> = (0..n).map(|i| (i as f32).sin()).collect();
                values[at] = -3.5;
                assert_eq!(abs_max(&values), 3.5, "{n} values, largest at {at}");
            }
        }
        assert_eq!(abs_max(&[]), 0.0);
        assert_eq!(abs_max(&[f32::NAN, -2.0]), 2.0);
    }

    #[test]
    fn the_fine_grain_has_one_scale_per_block() {
        let mut values = vec![0.5f32; 64];
        values[40] = 100.0;
        let mut act = Activations::default();
        act.set(&values, 64).unwrap();
        assert!(act.token_q(Grain::SuperBlock, 0).is_none());
        let x = act.token_q(Grain::Block32, 0).unwrap();
        assert_eq!(x.d, &[0.5 / 127.0, 100.0 / 127.0]);
        assert!(x.offsets.is_empty());
        assert!(act.set_grains(&values, 64, &[Grain::SuperBlock]).is_err());
    }
}
