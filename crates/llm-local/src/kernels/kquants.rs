//! GGUF K-quant (Q4_K, Q6_K) and Q5_0 blocks as the file has them.
//!
//! Q5_0 blocks are used as the file's bytes (`[u8; N]` arrays, alignment
//! 1), so such a matrix can be a slice of a buffer shared with others; the
//! K-quants are unpacked from here into [`super::interleaved`]'s layout at
//! load, and dequantized from here for embedding lookups. Layouts, as in
//! ggml:
//!
//! - **Q4_K**, 256 values in 144 bytes: f16 `d`, f16 `dmin`, 12 bytes of
//!   six-bit scales and mins for 8 sub-blocks of 32, then 128 bytes of
//!   nibbles. Value `i` of sub-block `j` is `d * sc_j * q - dmin * m_j`,
//!   where, in each 64-value group `g = j / 2`, the low nibbles of bytes
//!   `32g..32g + 32` are sub-block `2g` and their high nibbles sub-block
//!   `2g + 1`.
//! - **Q6_K**, 256 values in 210 bytes: `ql[128]` (low four bits), `qh[64]`
//!   (high two bits), `scales: i8[16]` (one per 16 values), f16 `d`; value
//!   `d * scale * (q - 32)`. Each half of 128 values takes 64 bytes of `ql`
//!   and 32 of `qh`: value `l` (of 32) takes the low nibble of `ql[l]` and
//!   bits 0-1 of `qh[l]`, value `l + 32` the low nibble of `ql[l + 32]` and
//!   bits 2-3, value `l + 64` the high nibble of `ql[l]` and bits 4-5,
//!   value `l + 96` the high nibble of `ql[l + 32]` and bits 6-7.
//! - **Q5_0**, 32 values in 22 bytes: f16 `d`, `qh` (a little-endian u32 of
//!   fifth bits, bit `j` for value `j`), 16 bytes of nibbles (value `j` in
//!   the low nibble of byte `j`, value `j + 16` in its high nibble); value
//!   `d * (q - 16)`.
//!
//! The dot products (here and in [`super::interleaved`]) take the 8-bit
//! activations of [`super::Activations`] in a contiguous layout,
//! [`TokenQ`]: Q5_0 one scale per 32 values, the K-quants one per
//! super-block of 256 (the scalar and AVX2 K-quant kernels read a scale
//! per 32 values, which is correct in either grain). A Q4_K sub-block is
//! one activation block; a Q6_K activation block covers two sub-blocks,
//! whose `- 32` offsets take the per-16 activation sums (or, in the
//! AVX-512 kernel, start its integer sums at `-32 * Σx`).

// SIMD intrinsics are `unsafe`; each kernel runs only after a run-time
// check of the CPU features it needs (see `Simd::detect`), and its loads
// read within fixed-size arrays.
#![allow(unsafe_code)]

use half::f16;

use super::Simd;

/// Values per K-quant super-block.
pub(crate) const QK_K: usize = 256;
/// Bytes of a Q4_K super-block.
pub(crate) const Q4K_BYTES: usize = 144;
/// Bytes of a Q6_K super-block.
pub(crate) const Q6K_BYTES: usize = 210;
/// Bytes of a Q5_0 block (32 values).
pub(crate) const Q5_0_BYTES: usize = 22;

/// One Q4_K super-block, as in the file.
pub(crate) type BlockQ4K = [u8; Q4K_BYTES];
/// One Q6_K super-block, as in the file.
pub(crate) type BlockQ6K = [u8; Q6K_BYTES];
/// One Q5_0 block, as in the file.
pub(crate) type BlockQ5_0 = [u8; Q5_0_BYTES];

/// One token's activations quantized to 8 bits (see
/// [`super::activations`]), laid out for the kernels: `q` the 8-bit
/// values, and per block of 32 its scale `d` and `sums` (`d * Σq`); per
/// 16 values `halves` (`d * Σq` over the 16) and, in the super-block
/// grain, `offsets` (`-32 * Σq`; empty in the other grain).
#[derive(Clone, Copy)]
pub(crate) struct TokenQ<'a> {
    pub(crate) q: &'a [i8],
    pub(crate) d: &'a [f32],
    pub(crate) sums: &'a [f32],
    pub(crate) halves: &'a [f32],
    pub(crate) offsets: &'a [i32],
}

impl TokenQ<'_> {
    /// No values.
    pub(crate) const EMPTY: TokenQ<'static> = TokenQ {
        q: &[],
        d: &[],
        sums: &[],
        halves: &[],
        offsets: &[],
    };
}

fn f16_le(lo: u8, hi: u8) -> f32 {
    f16::from_le_bytes([lo, hi]).to_f32()
}

/// The 8 six-bit scales and 8 mins of a Q4_K super-block, one byte each,
/// as two little-endian u64 (byte `j` is sub-block `j`'s).
///
/// Scales 0-3 are the low six bits of bytes 0-3 and mins 0-3 those of
/// bytes 4-7; scale `4 + i` is the low nibble of byte `8 + i` with the top
/// two bits of byte `i` above it, min `4 + i` the high nibble of byte
/// `8 + i` with the top two bits of byte `4 + i`.
#[inline(always)]
pub(crate) fn scales_mins(block: &BlockQ4K) -> (u64, u64) {
    const LOW6: u32 = 0x3f3f_3f3f;
    const LOW4: u32 = 0x0f0f_0f0f;
    const LOW2: u32 = 0x0303_0303;
    let word =
        |i: usize| u32::from_le_bytes([block[4 + i], block[5 + i], block[6 + i], block[7 + i]]);
    let (a, b, c) = (word(0), word(4), word(8));
    let scales_low = a & LOW6;
    let mins_low = b & LOW6;
    let scales_high = (c & LOW4) | (((a >> 6) & LOW2) << 4);
    let mins_high = ((c >> 4) & LOW4) | (((b >> 6) & LOW2) << 4);
    (
        u64::from(scales_low) | (u64::from(scales_high) << 32),
        u64::from(mins_low) | (u64::from(mins_high) << 32),
    )
}

/// The four-bit values (0..16) of a Q4_K super-block, in order.
pub(crate) fn q4k_values(block: &BlockQ4K) -> [u8; QK_K] {
    let mut q = [0u8; QK_K];
    for (g, bytes) in block[16..].chunks_exact(32).enumerate() {
        for (l, &byte) in bytes.iter().enumerate() {
            q[64 * g + l] = byte & 0x0f;
            q[64 * g + 32 + l] = byte >> 4;
        }
    }
    q
}

/// The 256 values of a Q4_K super-block (the reference the interleaved
/// layout is tested against).
#[cfg(test)]
pub(crate) fn dequantize_q4k(block: &BlockQ4K, out: &mut [f32; QK_K]) {
    let d = f16_le(block[0], block[1]);
    let dmin = f16_le(block[2], block[3]);
    let (scales, mins) = scales_mins(block);
    let (scales, mins) = (scales.to_le_bytes(), mins.to_le_bytes());
    let values = q4k_values(block);
    for (j, (out, q)) in out
        .chunks_exact_mut(32)
        .zip(values.chunks_exact(32))
        .enumerate()
    {
        let scale = d * f32::from(scales[j]);
        let min = dmin * f32::from(mins[j]);
        for (o, &q) in out.iter_mut().zip(q) {
            *o = scale * f32::from(q) - min;
        }
    }
}

/// The six-bit values (0..64) of a Q6_K super-block, in order.
pub(crate) fn q6k_values(block: &BlockQ6K) -> [u8; QK_K] {
    let mut q = [0u8; QK_K];
    for half in 0..2 {
        let ql = &block[64 * half..64 * half + 64];
        let qh = &block[128 + 32 * half..128 + 32 * half + 32];
        let q = &mut q[128 * half..128 * half + 128];
        for l in 0..32 {
            q[l] = (ql[l] & 0x0f) | ((qh[l] & 0x03) << 4);
            q[l + 32] = (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 0x03) << 4);
            q[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 0x03) << 4);
            q[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 0x03) << 4);
        }
    }
    q
}

#[cfg(test)]
fn q6k_scale(block: &BlockQ6K, s: usize) -> f32 {
    f32::from(block[192 + s] as i8)
}

/// The 256 values of a Q6_K super-block (the reference the interleaved
/// layout is tested against).
#[cfg(test)]
pub(crate) fn dequantize_q6k(block: &BlockQ6K, out: &mut [f32; QK_K]) {
    let d = f16_le(block[208], block[209]);
    let q = q6k_values(block);
    for (s, (out, q)) in out.chunks_exact_mut(16).zip(q.chunks_exact(16)).enumerate() {
        let scale = d * q6k_scale(block, s);
        for (o, &q) in out.iter_mut().zip(q) {
            *o = scale * f32::from(i16::from(q) - 32);
        }
    }
}

/// The five-bit values (0..32) of a Q5_0 block, in order.
fn q5_0_values(block: &BlockQ5_0) -> [u8; 32] {
    let high = u32::from_le_bytes([block[2], block[3], block[4], block[5]]);
    let mut q = [0u8; 32];
    for (j, &byte) in block[6..22].iter().enumerate() {
        q[j] = (byte & 0x0f) | ((((high >> j) & 1) as u8) << 4);
        q[j + 16] = (byte >> 4) | ((((high >> (j + 16)) & 1) as u8) << 4);
    }
    q
}

/// The 32 values of a Q5_0 block.
pub(crate) fn dequantize_q5_0(block: &BlockQ5_0, out: &mut [f32; 32]) {
    let d = f16_le(block[0], block[1]);
    for (o, &q) in out.iter_mut().zip(&q5_0_values(block)) {
        *o = f32::from(i16::from(q) - 16) * d;
    }
}

fn int_dot(w: &[u8], x: &[i8]) -> i32 {
    w.iter()
        .zip(x)
        .map(|(&w, &x)| i32::from(w) * i32::from(x))
        .sum()
}

/// One token's activations seen in super-blocks of 256 values (the
/// super-block grain: a K-quant kernel takes `d[0]` as the whole
/// super-block's scale).
#[derive(Clone, Copy)]
pub(crate) struct SuperBlocks<'a> {
    pub(crate) q: &'a [[i8; QK_K]],
    pub(crate) d: &'a [[f32; 8]],
    pub(crate) sums: &'a [[f32; 8]],
    pub(crate) halves: &'a [[f32; 16]],
    pub(crate) offsets: &'a [[i32; 16]],
}

impl<'a> SuperBlocks<'a> {
    pub(crate) fn of(x: TokenQ<'a>) -> Self {
        Self {
            q: x.q.as_chunks().0,
            d: x.d.as_chunks().0,
            sums: x.sums.as_chunks().0,
            halves: x.halves.as_chunks().0,
            offsets: x.offsets.as_chunks().0,
        }
    }

    /// Super-block `b`, as fixed-size arrays: a kernel that takes its
    /// tokens' blocks once per weight block indexes them without bounds
    /// checks. Panics past [`SuperBlocks::len`]; the kernels stop there.
    #[inline(always)]
    pub(crate) fn block(&self, b: usize) -> TokenBlock<'a> {
        TokenBlock {
            q: &self.q[b],
            d: &self.d[b],
            sums: &self.sums[b],
            halves: &self.halves[b],
            offsets: &self.offsets[b],
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.q
            .len()
            .min(self.d.len())
            .min(self.sums.len())
            .min(self.halves.len())
            .min(self.offsets.len())
    }
}

/// One super-block of one token's activations (see [`SuperBlocks`]).
#[derive(Clone, Copy)]
pub(crate) struct TokenBlock<'a> {
    pub(crate) q: &'a [i8; QK_K],
    pub(crate) d: &'a [f32; 8],
    pub(crate) sums: &'a [f32; 8],
    pub(crate) halves: &'a [f32; 16],
    pub(crate) offsets: &'a [i32; 16],
}

/// One token's activations seen in blocks of 32 values.
#[derive(Clone, Copy)]
pub(crate) struct Blocks32<'a> {
    pub(crate) q: &'a [[i8; 32]],
    pub(crate) d: &'a [f32],
    pub(crate) sums: &'a [f32],
}

impl<'a> Blocks32<'a> {
    pub(crate) fn of(x: TokenQ<'a>) -> Self {
        Self {
            q: x.q.as_chunks().0,
            d: x.d,
            sums: x.sums,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.q.len().min(self.d.len()).min(self.sums.len())
    }
}

/// The blocks of a row of `row` blocks that every token has: the kernels
/// index only below it.
pub(crate) fn common_len<const N: usize>(row: usize, tokens: &[usize; N]) -> usize {
    tokens.iter().fold(row, |n, &len| n.min(len))
}

/// `Σ w * x` of a row of Q5_0 blocks and each of `N` tokens: each block
/// is unpacked once for all of them, and each token's result is the same,
/// bit for bit, whatever `N` is.
pub(crate) fn dot_q5_0<const N: usize>(simd: Simd, w: &[BlockQ5_0], x: &[TokenQ; N]) -> [f32; N] {
    match simd {
        // SAFETY: `Simd::Avx2` and `Simd::Avx512` are only made after
        // detecting AVX2, FMA and F16C.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx512 => unsafe { avx2::dot_q5_0(w, x) },
        Simd::Scalar => dot_q5_0_scalar(w, x),
    }
}

fn dot_q5_0_scalar<const N: usize>(w: &[BlockQ5_0], x: &[TokenQ; N]) -> [f32; N] {
    let xs = x.map(Blocks32::of);
    let n = common_len(w.len(), &xs.map(|x| x.len()));
    let mut total = [0.0f32; N];
    for (b, block) in w[..n].iter().enumerate() {
        let values = q5_0_values(block);
        let bd = f16_le(block[0], block[1]);
        for (total, x) in total.iter_mut().zip(&xs) {
            let product = int_dot(&values, &x.q[b]);
            *total += bd * (x.d[b] * product as f32 - 16.0 * x.sums[b]);
        }
    }
    total
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{BlockQ5_0, Blocks32, TokenQ, common_len};

    /// An f16 (two little-endian bytes) as f32, in one instruction: the
    /// `half` crate's portable conversion showed in profiles.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn f16_le(lo: u8, hi: u8) -> f32 {
        let bits = _mm_cvtsi32_si128(i32::from(u16::from_le_bytes([lo, hi])));
        _mm_cvtss_f32(_mm_cvtph_ps(bits))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_act(q: &[i8; 32]) -> __m256i {
        // SAFETY: 32 readable bytes.
        unsafe { _mm256_loadu_si256(q.as_ptr().cast()) }
    }

    /// Eight i32 sums of adjacent `unsigned * signed` byte products in
    /// groups of four.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn products(unsigned: __m256i, signed: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned, signed), _mm256_set1_epi16(1))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dot_q5_0<const N: usize>(w: &[BlockQ5_0], x: &[TokenQ; N]) -> [f32; N] {
        let xs = x.map(Blocks32::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let mask = _mm_set1_epi8(0x0f);
        let spread = _mm256_setr_epi64x(
            0,
            0x0101_0101_0101_0101,
            0x0202_0202_0202_0202,
            0x0303_0303_0303_0303,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
        let fifth = _mm256_set1_epi8(0x10);
        let mut acc = [_mm256_setzero_ps(); N];
        let mut offset = [0.0f32; N];
        for (b, block) in w[..n].iter().enumerate() {
            // SAFETY: bytes 6..22 are the 16 bytes of nibbles.
            let raw = unsafe { _mm_loadu_si128(block[6..22].as_ptr().cast()) };
            let nibbles = _mm256_set_m128i(
                _mm_and_si128(_mm_srli_epi16(raw, 4), mask),
                _mm_and_si128(raw, mask),
            );
            let high = u32::from_le_bytes([block[2], block[3], block[4], block[5]]);
            // Byte j of `bytes` is byte j / 8 of `high`; keep its bit j % 8.
            let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(high as i32), spread);
            let set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
            let values = _mm256_or_si256(nibbles, _mm256_and_si256(set, fifth));
            let bd = f16_le(block[0], block[1]);
            for t in 0..N {
                let x = &xs[t];
                let sums = _mm256_cvtepi32_ps(products(values, load_act(&x.q[b])));
                acc[t] = _mm256_fmadd_ps(sums, _mm256_set1_ps(bd * x.d[b]), acc[t]);
                offset[t] += bd * x.sums[b];
            }
        }
        let mut out = [0.0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]) - 16.0 * offset[t];
        }
        out
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::borrow::Cow;

    use candle_core::Device;
    use candle_core::quantized::{GgmlDType, QStorage, QTensor};
    use proptest::prelude::*;

    use super::super::interleaved::{self, ROWS, repack_q4k, repack_q6k};
    use super::super::{Activations, Grain};
    use super::*;

    /// A deterministic byte stream.
    pub(in super::super) fn bytes(seed: u64, n: usize) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    /// A finite, modest f16 scale from two random bytes.
    fn scale(a: u8, b: u8) -> [u8; 2] {
        let magnitude = (f32::from(a) + 1.0) / 256.0 * 0.05;
        let sign = if b & 1 == 1 { -1.0 } else { 1.0 };
        f16::from_f32(sign * magnitude).to_le_bytes()
    }

    /// `count` random blocks of `kind` (random bits, finite scales).
    pub(in super::super) fn random_blocks(kind: GgmlDType, seed: u64, count: usize) -> Vec<u8> {
        let (size, scales): (usize, &[usize]) = match kind {
            GgmlDType::Q4K => (Q4K_BYTES, &[0, 2]),
            GgmlDType::Q6K => (Q6K_BYTES, &[208]),
            _ => (Q5_0_BYTES, &[0]),
        };
        let mut raw = bytes(seed, count * size);
        for block in raw.chunks_exact_mut(size) {
            for &at in scales {
                let d = scale(block[at], block[at + 1]);
                block[at..at + 2].copy_from_slice(&d);
            }
        }
        raw
    }

    pub(in super::super) fn dequantize(kind: GgmlDType, raw: &[u8]) -> Vec<f32> {
        match kind {
            GgmlDType::Q4K => raw
                .as_chunks::<Q4K_BYTES>()
                .0
                .iter()
                .flat_map(|b| {
                    let mut out = [0.0; QK_K];
                    dequantize_q4k(b, &mut out);
                    out
                })
                .collect(),
            GgmlDType::Q6K => raw
                .as_chunks::<Q6K_BYTES>()
                .0
                .iter()
                .flat_map(|b| {
                    let mut out = [0.0; QK_K];
                    dequantize_q6k(b, &mut out);
                    out
                })
                .collect(),
            _ => raw
                .as_chunks::<Q5_0_BYTES>()
                .0
                .iter()
                .flat_map(|b| {
                    let mut out = [0.0; 32];
                    dequantize_q5_0(b, &mut out);
                    out
                })
                .collect(),
        }
    }

    /// ggml's `get_scale_min_k4`, written from its description.
    fn scale_min_spec(j: usize, s: &[u8]) -> (u8, u8) {
        if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            (
                (s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4),
                (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
            )
        }
    }

    /// Q4_K values straight from the layout description, one at a time.
    fn q4k_spec(block: &[u8]) -> Vec<f32> {
        let d = f16_le(block[0], block[1]);
        let dmin = f16_le(block[2], block[3]);
        (0..QK_K)
            .map(|i| {
                let (j, l) = (i / 32, i % 32);
                let (sc, m) = scale_min_spec(j, &block[4..16]);
                let byte = block[16 + 32 * (j / 2) + l];
                let q = if j % 2 == 0 { byte & 0x0f } else { byte >> 4 };
                (d * f32::from(sc)) * f32::from(q) - dmin * f32::from(m)
            })
            .collect()
    }

    pub(in super::super) fn candle(kind: GgmlDType, raw: &[u8], values: usize) -> Vec<f32> {
        let storage = QStorage::from_data(Cow::Borrowed(raw), &Device::Cpu, kind).unwrap();
        let tensor = QTensor::new(storage, (values,)).unwrap();
        tensor
            .dequantize(&Device::Cpu)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    }

    pub(in super::super) fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    #[test]
    fn dequantization_is_bit_exact_with_the_spec_and_candle() {
        for seed in 0..20 {
            let raw = random_blocks(GgmlDType::Q4K, seed, 3);
            let ours = dequantize(GgmlDType::Q4K, &raw);
            let spec: Vec<f32> = raw.chunks_exact(Q4K_BYTES).flat_map(q4k_spec).collect();
            assert!(same_bits(&ours, &spec), "Q4_K seed {seed} vs the spec");
            assert!(same_bits(&ours, &candle(GgmlDType::Q4K, &raw, 3 * QK_K)));

            let raw = random_blocks(GgmlDType::Q6K, seed, 3);
            let ours = dequantize(GgmlDType::Q6K, &raw);
            assert!(same_bits(&ours, &candle(GgmlDType::Q6K, &raw, 3 * QK_K)));

            let raw = random_blocks(GgmlDType::Q5_0, seed, 5);
            let ours = dequantize(GgmlDType::Q5_0, &raw);
            assert!(same_bits(&ours, &candle(GgmlDType::Q5_0, &raw, 5 * 32)));
        }
    }

    #[test]
    fn q6k_and_q5_0_match_their_spec_on_known_blocks() {
        // Q6_K: every ql nibble 0xf and qh 0 gives q = 15 (value -17 * d * sc);
        // setting qh's bits 2-3 of byte 0 lifts value 32 to 15 + 48 = 63.
        let mut block = [0u8; Q6K_BYTES];
        block[..128].fill(0xff);
        block[128] = 0b0000_1100;
        block[192..208].fill(2);
        block[208..].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        let mut out = [0.0; QK_K];
        dequantize_q6k(&block, &mut out);
        assert_eq!(out[0], 0.5 * 2.0 * -17.0);
        assert_eq!(out[32], 0.5 * 2.0 * 31.0);
        // Q5_0: qh bit 16 sets the fifth bit of value 16 (high nibble of byte 0).
        let mut block = [0u8; Q5_0_BYTES];
        block[..2].copy_from_slice(&f16::from_f32(0.25).to_le_bytes());
        block[2..6].copy_from_slice(&(1u32 << 16).to_le_bytes());
        block[6] = 0x3a;
        let mut out = [0.0; 32];
        dequantize_q5_0(&block, &mut out);
        assert_eq!(out[0], (10.0 - 16.0) * 0.25);
        assert_eq!(out[16], (3.0 + 16.0 - 16.0) * 0.25);
        assert_eq!(out[1], -16.0 * 0.25);
    }

    /// Tokens `first..first + N` of `act` times `rows` rows of `raw`
    /// (file blocks of `kind`, row after row) as the engine multiplies
    /// them: Q5_0 row by row, the K-quants interleaved.
    fn run<const N: usize>(
        kind: GgmlDType,
        raw: &[u8],
        rows: usize,
        act: &Activations,
        simd: Simd,
        first: usize,
        out: &mut [Vec<f32>],
    ) {
        let xs: [TokenQ; N] =
            std::array::from_fn(|i| act.token_q(grain_of(kind), first + i).unwrap());
        let out = &mut out[first..first + N];
        match kind {
            GgmlDType::Q4K | GgmlDType::Q6K => {
                for g in 0..rows.div_ceil(ROWS) {
                    let values = match kind {
                        GgmlDType::Q4K => {
                            let groups = interleave(raw.as_chunks::<Q4K_BYTES>().0, rows, g);
                            let w: Vec<_> = groups.into_iter().map(repack_q4k).collect();
                            interleaved::dot_q4k(simd, &w, &xs)
                        }
                        _ => {
                            let groups = interleave(raw.as_chunks::<Q6K_BYTES>().0, rows, g);
                            let w: Vec<_> = groups.into_iter().map(repack_q6k).collect();
                            interleaved::dot_q6k(simd, &w, &xs)
                        }
                    };
                    for (out, values) in out.iter_mut().zip(values) {
                        for (r, v) in values.into_iter().enumerate() {
                            if g * ROWS + r < rows {
                                out[g * ROWS + r] = v;
                            }
                        }
                    }
                }
            }
            _ => {
                let blocks = raw.as_chunks::<Q5_0_BYTES>().0;
                let per = blocks.len() / rows;
                for r in 0..rows {
                    let values = dot_q5_0(simd, &blocks[r * per..(r + 1) * per], &xs);
                    for (out, v) in out.iter_mut().zip(values) {
                        out[r] = v;
                    }
                }
            }
        }
    }

    /// The activations' grain the kernels of `kind` take.
    fn grain_of(kind: GgmlDType) -> Grain {
        match kind {
            GgmlDType::Q4K | GgmlDType::Q6K => Grain::SuperBlock,
            _ => Grain::Block32,
        }
    }

    /// Group `g`'s rows of `blocks` (`rows` rows), super-block after
    /// super-block, as [`repack_q4k`] and [`repack_q6k`] take them.
    pub(in super::super) fn interleave<const SIZE: usize>(
        blocks: &[[u8; SIZE]],
        rows: usize,
        g: usize,
    ) -> Vec<[Option<&[u8; SIZE]>; ROWS]> {
        let per = blocks.len() / rows;
        (0..per)
            .map(|b| {
                std::array::from_fn(|r| {
                    let row = g * ROWS + r;
                    (row < rows).then(|| &blocks[row * per + b])
                })
            })
            .collect()
    }

    /// Every token's products with every row (`[token][row]`), by `simd`,
    /// `tile` tokens per kernel call.
    fn products(
        kind: GgmlDType,
        raw: &[u8],
        rows: usize,
        act: &Activations,
        simd: Simd,
        tile: usize,
    ) -> Vec<Vec<f32>> {
        let tokens = act.tokens;
        let mut out = vec![vec![0.0; rows]; tokens];
        let mut t = 0;
        while t < tokens {
            let n = match tile.min(tokens - t) {
                n @ 1..=4 => n,
                5..8 => 4,
                _ => 8,
            };
            match n {
                1 => run::<1>(kind, raw, rows, act, simd, t, &mut out),
                2 => run::<2>(kind, raw, rows, act, simd, t, &mut out),
                3 => run::<3>(kind, raw, rows, act, simd, t, &mut out),
                4 => run::<4>(kind, raw, rows, act, simd, t, &mut out),
                _ => run::<8>(kind, raw, rows, act, simd, t, &mut out),
            }
            t += n;
        }
        out
    }

    fn bits(values: &[Vec<f32>]) -> Vec<Vec<u32>> {
        values
            .iter()
            .map(|v| v.iter().map(|x| x.to_bits()).collect())
            .collect()
    }

    /// `rows` rows of `raw` times the tokens of `x`, by every kernel this
    /// CPU has, checked against f64 arithmetic on the dequantized values;
    /// and each token's results must not depend on how many tokens a
    /// kernel call takes or on the token's place among them.
    fn check_rows(kind: GgmlDType, raw: &[u8], rows: usize, x: &[f32]) {
        let weights = dequantize(kind, raw);
        let cols = weights.len() / rows;
        let mut act = Activations::default();
        act.set(x, cols).unwrap();
        for simd in Simd::available() {
            let single = products(kind, raw, rows, &act, simd, 1);
            for tile in [2, 3, 4, 8] {
                let tiled = products(kind, raw, rows, &act, simd, tile);
                assert_eq!(bits(&tiled), bits(&single), "{kind:?} {simd:?} tile {tile}");
            }
            for (t, single) in single.iter().enumerate() {
                let token = act.token_q(grain_of(kind), t).unwrap();
                let acts: Vec<f64> = token
                    .q
                    .iter()
                    .enumerate()
                    .map(|(i, &q)| f64::from(token.d[i / 32]) * f64::from(q))
                    .collect();
                for (r, row) in weights.chunks_exact(cols).enumerate() {
                    let terms = row.iter().zip(&acts).map(|(&w, a)| f64::from(w) * a);
                    let exact: f64 = terms.clone().sum();
                    let magnitude: f64 = terms.map(f64::abs).sum();
                    // f32 sums of at most a few thousand terms: relative
                    // error well under 1e-5 of the sum of magnitudes.
                    let tolerance = 1e-5 * magnitude + 1e-6;
                    let got = single[r];
                    assert!(
                        (f64::from(got) - exact).abs() <= tolerance,
                        "{kind:?} {simd:?} token {t} row {r}: {got} vs exact {exact}"
                    );
                }
            }
        }
    }

    pub(in super::super) fn activations(seed: u64, n: usize) -> Vec<f32> {
        bytes(seed, n)
            .into_iter()
            .map(|b| (f32::from(b) - 127.5) / 64.0)
            .collect()
    }

    #[test]
    fn every_kernel_matches_the_exact_product() {
        eprintln!("kernels on this CPU: {:?}", Simd::available());
        for seed in 0..4 {
            // Row counts below, at and past one interleaved group.
            for (kind, rows, per, values) in [
                (GgmlDType::Q4K, 5, 3, QK_K),
                (GgmlDType::Q4K, 21, 2, QK_K),
                (GgmlDType::Q6K, 16, 3, QK_K),
                (GgmlDType::Q6K, 3, 2, QK_K),
                (GgmlDType::Q5_0, 3, 16, 32),
            ] {
                let raw = random_blocks(kind, seed, rows * per);
                let x = activations(seed + 100, 9 * per * values);
                check_rows(kind, &raw, rows, &x);
            }
        }
    }

    #[test]
    fn extreme_blocks_do_not_overflow() {
        // All weights at their largest, activations at ±127: the AVX2
        // kernels' 16-bit pair sums reach 32,004 for Q6_K.
        for kind in [GgmlDType::Q4K, GgmlDType::Q6K, GgmlDType::Q5_0] {
            let (size, per) = match kind {
                GgmlDType::Q4K => (Q4K_BYTES, QK_K),
                GgmlDType::Q6K => (Q6K_BYTES, QK_K),
                _ => (Q5_0_BYTES, 32),
            };
            let rows = 16;
            let mut raw = vec![0xffu8; 4 * rows * size];
            for block in raw.chunks_exact_mut(size) {
                let at = if kind == GgmlDType::Q6K { 208 } else { 0 };
                block[at..at + 2].copy_from_slice(&f16::from_f32(0.01).to_le_bytes());
                if kind == GgmlDType::Q4K {
                    block[2..4].copy_from_slice(&f16::from_f32(0.02).to_le_bytes());
                }
                if kind == GgmlDType::Q6K {
                    block[192..208].fill(0x80); // scale -128
                }
            }
            let x: Vec<f32> = [1.0, -1.0, 1.0]
                .iter()
                .flat_map(|&sign| vec![sign; 4 * per])
                .collect();
            check_rows(kind, &raw, rows, &x);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_blocks_agree_on_every_path(
            seed in any::<u64>(),
            kind in prop_oneof![Just(GgmlDType::Q4K), Just(GgmlDType::Q6K), Just(GgmlDType::Q5_0)],
            rows in 1usize..20,
            blocks in 1usize..4,
            tokens in 1usize..10,
            spread in 0.01f32..100.0,
        ) {
            let (raw, per) = match kind {
                GgmlDType::Q5_0 => (random_blocks(kind, seed, 8 * blocks * rows), 32 * 8),
                _ => (random_blocks(kind, seed, blocks * rows), QK_K),
            };
            let x: Vec<f32> = activations(seed ^ 0x55, tokens * blocks * per)
                .into_iter()
                .map(|v| v * spread)
                .collect();
            check_rows(kind, &raw, rows, &x);
            let ours = dequantize(kind, &raw);
            prop_assert!(same_bits(&ours, &candle(kind, &raw, rows * blocks * per)));
        }
    }
}
