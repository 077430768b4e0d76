//! GGUF K-quant (Q4_K, Q6_K) and Q5_0 blocks, read in place.
//!
//! The blocks stay as the file's bytes (`[u8; N]` arrays, alignment 1), so
//! a matrix can be a slice of a memory-mapped file: nothing is expanded at
//! load. Layouts, as in ggml:
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
//! The dot products take the 8-bit activations of [`super::Activations`]
//! (one scale per 32 values) in a contiguous layout, [`TokenQ`]. A Q4_K
//! sub-block is one activation block; a Q6_K activation block covers two
//! sub-blocks, whose `- 32` offsets take the per-16 activation sums.

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

/// One token's activations quantized in blocks of 32, laid out for the
/// kernels: `q` the 8-bit values, and per block of 32 its scale `d` and
/// `sums` (`d * Σq`); per 16 values `halves` (`d * Σq` over the 16).
#[derive(Clone, Copy)]
pub(crate) struct TokenQ<'a> {
    pub(crate) q: &'a [i8],
    pub(crate) d: &'a [f32],
    pub(crate) sums: &'a [f32],
    pub(crate) halves: &'a [f32],
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
fn scales_mins(block: &BlockQ4K) -> (u64, u64) {
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

/// The 256 values of a Q4_K super-block.
pub(crate) fn dequantize_q4k(block: &BlockQ4K, out: &mut [f32; QK_K]) {
    let d = f16_le(block[0], block[1]);
    let dmin = f16_le(block[2], block[3]);
    let (scales, mins) = scales_mins(block);
    let (scales, mins) = (scales.to_le_bytes(), mins.to_le_bytes());
    for (j, out) in out.chunks_exact_mut(32).enumerate() {
        let scale = d * f32::from(scales[j]);
        let min = dmin * f32::from(mins[j]);
        let bytes = &block[16 + 32 * (j / 2)..16 + 32 * (j / 2) + 32];
        let shift = 4 * (j % 2);
        for (o, &byte) in out.iter_mut().zip(bytes) {
            *o = scale * f32::from((byte >> shift) & 0x0f) - min;
        }
    }
}

/// The six-bit values (0..64) of a Q6_K super-block, in order.
fn q6k_values(block: &BlockQ6K) -> [u8; QK_K] {
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

fn q6k_scale(block: &BlockQ6K, s: usize) -> f32 {
    f32::from(block[192 + s] as i8)
}

/// The 256 values of a Q6_K super-block.
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

/// The `N` elements of `a` from `at` on, as an array (indexing panics
/// only on a wrong constant offset).
#[inline(always)]
fn sub<const N: usize, T>(a: &[T], at: usize) -> &[T; N] {
    &a[at..].as_chunks::<N>().0[0]
}

fn int_dot(w: &[u8], x: &[i8]) -> i32 {
    w.iter()
        .zip(x)
        .map(|(&w, &x)| i32::from(w) * i32::from(x))
        .sum()
}

/// `Σ w * x` of a row of Q4_K super-blocks and one token's activations.
pub(crate) fn dot_q4k(simd: Simd, w: &[BlockQ4K], x: TokenQ) -> f32 {
    match simd {
        // SAFETY: `Simd::Avx512` is only made after detecting AVX-512 F, BW,
        // VL and VNNI, AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { avx512::dot_q4k(w, x) },
        // SAFETY: `Simd::Avx2` is only made after detecting AVX2 and FMA.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { avx2::dot_q4k(w, x) },
        Simd::Scalar => dot_q4k_scalar(w, x),
    }
}

fn dot_q4k_scalar(w: &[BlockQ4K], x: TokenQ) -> f32 {
    let (xq, _) = x.q.as_chunks::<QK_K>();
    let (xd, _) = x.d.as_chunks::<8>();
    let (xs, _) = x.sums.as_chunks::<8>();
    let mut total = 0.0f32;
    for (((block, q), d), s) in w.iter().zip(xq).zip(xd).zip(xs) {
        let (scales, mins) = scales_mins(block);
        let (scales, mins) = (scales.to_le_bytes(), mins.to_le_bytes());
        let bd = f16_le(block[0], block[1]);
        let bmin = f16_le(block[2], block[3]);
        let (mut sum, mut offset) = (0.0f32, 0.0f32);
        for j in 0..8 {
            let bytes = &block[16 + 32 * (j / 2)..16 + 32 * (j / 2) + 32];
            let shift = 4 * (j % 2);
            let product: i32 = bytes
                .iter()
                .zip(&q[32 * j..32 * j + 32])
                .map(|(&b, &x)| i32::from((b >> shift) & 0x0f) * i32::from(x))
                .sum();
            sum += bd * f32::from(scales[j]) * d[j] * product as f32;
            offset += bmin * f32::from(mins[j]) * s[j];
        }
        total += sum - offset;
    }
    total
}

/// `Σ w * x` of a row of Q6_K super-blocks and one token's activations.
pub(crate) fn dot_q6k(simd: Simd, w: &[BlockQ6K], x: TokenQ) -> f32 {
    match simd {
        // SAFETY: as in `dot_q4k`.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { avx512::dot_q6k(w, x) },
        // SAFETY: as in `dot_q4k`.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { avx2::dot_q6k(w, x) },
        Simd::Scalar => dot_q6k_scalar(w, x),
    }
}

fn dot_q6k_scalar(w: &[BlockQ6K], x: TokenQ) -> f32 {
    let (xq, _) = x.q.as_chunks::<QK_K>();
    let (xd, _) = x.d.as_chunks::<8>();
    let (xh, _) = x.halves.as_chunks::<16>();
    let mut total = 0.0f32;
    for (((block, q), d), h) in w.iter().zip(xq).zip(xd).zip(xh) {
        let values = q6k_values(block);
        let bd = f16_le(block[208], block[209]);
        let (mut sum, mut offset) = (0.0f32, 0.0f32);
        for s in 0..16 {
            let product = int_dot(&values[16 * s..16 * s + 16], &q[16 * s..16 * s + 16]);
            let scale = q6k_scale(block, s);
            sum += scale * d[s / 2] * product as f32;
            offset += scale * h[s];
        }
        total += bd * (sum - 32.0 * offset);
    }
    total
}

/// `Σ w * x` of a row of Q5_0 blocks and one token's activations.
pub(crate) fn dot_q5_0(simd: Simd, w: &[BlockQ5_0], x: TokenQ) -> f32 {
    match simd {
        // SAFETY: as in `dot_q4k` (both variants have AVX2 and FMA).
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx512 => unsafe { avx2::dot_q5_0(w, x) },
        Simd::Scalar => dot_q5_0_scalar(w, x),
    }
}

fn dot_q5_0_scalar(w: &[BlockQ5_0], x: TokenQ) -> f32 {
    let (xq, _) = x.q.as_chunks::<32>();
    w.iter()
        .zip(xq)
        .zip(x.d.iter().zip(x.sums))
        .map(|((block, q), (&d, &s))| {
            let product = int_dot(&q5_0_values(block), q);
            f16_le(block[0], block[1]) * (d * product as f32 - 16.0 * s)
        })
        .sum()
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{BlockQ4K, BlockQ5_0, BlockQ6K, QK_K, TokenQ, f16_le, scales_mins, sub};

    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    fn load32(bytes: &[u8; 32]) -> __m256i {
        // SAFETY: 32 readable bytes; unaligned loads are allowed.
        unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn load_act(q: &[i8; 32]) -> __m256i {
        // SAFETY: 32 readable bytes.
        unsafe { _mm256_loadu_si256(q.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn load8(values: &[f32; 8]) -> __m256 {
        // SAFETY: 8 readable floats.
        unsafe { _mm256_loadu_ps(values.as_ptr()) }
    }

    /// Eight bytes (a u64, little-endian) as eight f32.
    #[target_feature(enable = "avx2,fma")]
    fn bytes_to_f32(bytes: u64) -> __m256 {
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes as i64)))
    }

    /// Eight i32 sums of adjacent `unsigned * signed` byte products in
    /// groups of four.
    #[target_feature(enable = "avx2,fma")]
    fn products(unsigned: __m256i, signed: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned, signed), _mm256_set1_epi16(1))
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q4k(w: &[BlockQ4K], x: TokenQ) -> f32 {
        let (xq, _) = x.q.as_chunks::<QK_K>();
        let (xd, _) = x.d.as_chunks::<8>();
        let (xs, _) = x.sums.as_chunks::<8>();
        let mask = _mm256_set1_epi8(0x0f);
        let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut offsets = _mm256_setzero_ps();
        for (((block, q), d), s) in w.iter().zip(xq).zip(xd).zip(xs) {
            let (scales, mins) = scales_mins(block);
            let bd = _mm256_set1_ps(f16_le(block[0], block[1]));
            let bmin = _mm256_set1_ps(f16_le(block[2], block[3]));
            let scale = _mm256_mul_ps(_mm256_mul_ps(bytes_to_f32(scales), bd), load8(d));
            offsets = _mm256_fmadd_ps(_mm256_mul_ps(bytes_to_f32(mins), bmin), load8(s), offsets);
            let mut scale_of = [0.0f32; 8];
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(scale_of.as_mut_ptr(), scale) };
            for g in 0..4 {
                let raw = load32(sub(block, 16 + 32 * g));
                let low = _mm256_and_si256(raw, mask);
                let high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
                let p0 = products(low, load_act(sub(q, 64 * g)));
                let p1 = products(high, load_act(sub(q, 64 * g + 32)));
                even = _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(p0),
                    _mm256_set1_ps(scale_of[2 * g]),
                    even,
                );
                odd = _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(p1),
                    _mm256_set1_ps(scale_of[2 * g + 1]),
                    odd,
                );
            }
        }
        hsum(_mm256_add_ps(even, odd)) - hsum(offsets)
    }

    /// The four 32-value runs of six-bit values of one Q6_K half.
    #[target_feature(enable = "avx2,fma")]
    fn q6k_half(block: &BlockQ6K, half: usize) -> [__m256i; 4] {
        let low = _mm256_set1_epi8(0x0f);
        let two = _mm256_set1_epi8(0x30);
        let ql0 = load32(sub(block, 64 * half));
        let ql1 = load32(sub(block, 64 * half + 32));
        let qh = load32(sub(block, 128 + 32 * half));
        [
            _mm256_or_si256(
                _mm256_and_si256(ql0, low),
                _mm256_and_si256(_mm256_slli_epi16(qh, 4), two),
            ),
            _mm256_or_si256(
                _mm256_and_si256(ql1, low),
                _mm256_and_si256(_mm256_slli_epi16(qh, 2), two),
            ),
            _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(ql0, 4), low),
                _mm256_and_si256(qh, two),
            ),
            _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi16(ql1, 4), low),
                _mm256_and_si256(_mm256_srli_epi16(qh, 2), two),
            ),
        ]
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q6k(w: &[BlockQ6K], x: TokenQ) -> f32 {
        let (xq, _) = x.q.as_chunks::<QK_K>();
        let (xd, _) = x.d.as_chunks::<8>();
        let (xh, _) = x.halves.as_chunks::<16>();
        let (mut even, mut odd) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        let mut offsets = _mm256_setzero_ps();
        for (((block, q), d), h) in w.iter().zip(xq).zip(xd).zip(xh) {
            let bd = _mm256_set1_ps(f16_le(block[208], block[209]));
            // SAFETY: bytes 192..208 are the 16 scales.
            let scales = unsafe { _mm_loadu_si128(block[192..208].as_ptr().cast()) };
            let scale_lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(scales));
            let scale_hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(scales, 8)));
            let h_lo = load8(sub(h, 0));
            let h_hi = load8(sub(h, 8));
            let weighted = _mm256_fmadd_ps(scale_hi, h_hi, _mm256_mul_ps(scale_lo, h_lo));
            offsets = _mm256_fmadd_ps(weighted, bd, offsets);
            let mut factor = [0.0f32; 8];
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(factor.as_mut_ptr(), _mm256_mul_ps(bd, load8(d))) };
            for half in 0..2 {
                let runs = q6k_half(block, half);
                for (i, run) in runs.into_iter().enumerate() {
                    let k = 4 * half + i;
                    // Sub-block 2k's scale in the low eight 16-bit lanes,
                    // 2k + 1's in the high eight.
                    let pick = _mm_set_epi64x(
                        0x0101_0101_0101_0101 * (2 * k as i64 + 1),
                        0x0101_0101_0101_0101 * (2 * k as i64),
                    );
                    let pair = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
                    let pairs = _mm256_maddubs_epi16(run, load_act(sub(q, 32 * k)));
                    let sums = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, pair));
                    if i % 2 == 0 {
                        even = _mm256_fmadd_ps(sums, _mm256_set1_ps(factor[k]), even);
                    } else {
                        odd = _mm256_fmadd_ps(sums, _mm256_set1_ps(factor[k]), odd);
                    }
                }
            }
        }
        hsum(_mm256_add_ps(even, odd)) - 32.0 * hsum(offsets)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q5_0(w: &[BlockQ5_0], x: TokenQ) -> f32 {
        let (xq, _) = x.q.as_chunks::<32>();
        let mask = _mm_set1_epi8(0x0f);
        let spread = _mm256_setr_epi64x(
            0,
            0x0101_0101_0101_0101,
            0x0202_0202_0202_0202,
            0x0303_0303_0303_0303,
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201_u64 as i64);
        let fifth = _mm256_set1_epi8(0x10);
        let mut acc = _mm256_setzero_ps();
        let mut offset = 0.0f32;
        for ((block, q), (&d, &s)) in w.iter().zip(xq).zip(x.d.iter().zip(x.sums)) {
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
            let sums = _mm256_cvtepi32_ps(products(values, load_act(q)));
            let bd = f16_le(block[0], block[1]);
            acc = _mm256_fmadd_ps(sums, _mm256_set1_ps(bd * d), acc);
            offset += bd * s;
        }
        hsum(acc) - 16.0 * offset
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{BlockQ4K, BlockQ6K, QK_K, TokenQ, f16_le, scales_mins, sub};

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    fn load64(q: &[i8; 64]) -> __m512i {
        // SAFETY: 64 readable bytes; unaligned loads are allowed.
        unsafe { _mm512_loadu_si512(q.as_ptr().cast()) }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    fn load32_twice(bytes: &[u8; 32]) -> __m512i {
        // SAFETY: 32 readable bytes.
        let half = unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) };
        _mm512_broadcast_i64x4(half)
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    fn load8(values: &[f32; 8]) -> __m256 {
        // SAFETY: 8 readable floats.
        unsafe { _mm256_loadu_ps(values.as_ptr()) }
    }

    /// Eight bytes (a u64, little-endian) as eight f32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    fn bytes_to_f32(bytes: u64) -> __m256 {
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes as i64)))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    pub(super) fn dot_q4k(w: &[BlockQ4K], x: TokenQ) -> f32 {
        let (xq, _) = x.q.as_chunks::<QK_K>();
        let (xd, _) = x.d.as_chunks::<8>();
        let (xs, _) = x.sums.as_chunks::<8>();
        let mask = _mm512_set1_epi8(0x0f);
        // The low 256 bits keep the low nibbles, the high 256 the high.
        let shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
        // Lanes of sub-blocks 2g and 2g + 1, eight each.
        let picks = [0, 1, 2, 3].map(|g| {
            let (a, b) = (2 * g, 2 * g + 1);
            _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b)
        });
        let mut accs = [_mm512_setzero_ps(); 2];
        let mut offsets = _mm256_setzero_ps();
        for (((block, q), d), s) in w.iter().zip(xq).zip(xd).zip(xs) {
            let (scales, mins) = scales_mins(block);
            let bd = _mm256_set1_ps(f16_le(block[0], block[1]));
            let bmin = _mm256_set1_ps(f16_le(block[2], block[3]));
            let scale = _mm256_mul_ps(_mm256_mul_ps(bytes_to_f32(scales), bd), load8(d));
            let scale = _mm512_castps256_ps512(scale);
            offsets = _mm256_fmadd_ps(_mm256_mul_ps(bytes_to_f32(mins), bmin), load8(s), offsets);
            for (g, pick) in picks.iter().enumerate() {
                let raw = load32_twice(sub(block, 16 + 32 * g));
                let nibbles = _mm512_and_si512(_mm512_srlv_epi64(raw, shift), mask);
                let sums =
                    _mm512_dpbusd_epi32(_mm512_setzero_si512(), nibbles, load64(sub(q, 64 * g)));
                let factor = _mm512_permutexvar_ps(*pick, scale);
                accs[g % 2] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), factor, accs[g % 2]);
            }
        }
        let offsets = _mm512_castps256_ps512(offsets);
        let offsets = _mm512_maskz_mov_ps(0x00ff, offsets);
        _mm512_reduce_add_ps(_mm512_sub_ps(_mm512_add_ps(accs[0], accs[1]), offsets))
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")]
    pub(super) fn dot_q6k(w: &[BlockQ6K], x: TokenQ) -> f32 {
        let (xq, _) = x.q.as_chunks::<QK_K>();
        let (xd, _) = x.d.as_chunks::<8>();
        let (xh, _) = x.halves.as_chunks::<16>();
        let low = _mm512_set1_epi8(0x0f);
        let two = _mm512_set1_epi8(0x30);
        // Bits 0-1 (low 256) and 2-3 (high 256) of `qh` up to bits 4-5;
        // bits 4-5 (low) and 6-7 (high) likewise.
        let up = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2);
        let down = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
        // Lanes of the four sub-blocks of 16 in a run of 64 values.
        let picks = [0, 1, 2, 3].map(|r| {
            let s = 4 * r;
            let (a, b, c, d) = (s, s + 1, s + 2, s + 3);
            _mm512_setr_epi32(a, a, a, a, b, b, b, b, c, c, c, c, d, d, d, d)
        });
        // Each activation scale twice: sub-blocks 2k and 2k + 1.
        let twice = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
        let mut accs = [_mm512_setzero_ps(); 2];
        let mut offsets = _mm512_setzero_ps();
        for (((block, q), d), h) in w.iter().zip(xq).zip(xd).zip(xh) {
            let bd = _mm512_set1_ps(f16_le(block[208], block[209]));
            // SAFETY: bytes 192..208 are the 16 scales.
            let scales = unsafe { _mm_loadu_si128(block[192..208].as_ptr().cast()) };
            let scales = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(scales));
            // SAFETY: 16 readable floats.
            let halves = unsafe { _mm512_loadu_ps(h.as_ptr()) };
            offsets = _mm512_fmadd_ps(_mm512_mul_ps(scales, halves), bd, offsets);
            let acts = _mm512_permutexvar_ps(twice, _mm512_castps256_ps512(load8(d)));
            let factor = _mm512_mul_ps(_mm512_mul_ps(scales, acts), bd);
            for half in 0..2 {
                // SAFETY: 64 readable bytes of `ql`.
                let ql =
                    unsafe { _mm512_loadu_si512(block[64 * half..64 * half + 64].as_ptr().cast()) };
                let qh = {
                    let bytes: &[u8; 32] = sub(block, 128 + 32 * half);
                    // SAFETY: 32 readable bytes.
                    _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) })
                };
                let first = _mm512_or_si512(
                    _mm512_and_si512(ql, low),
                    _mm512_and_si512(_mm512_sllv_epi64(qh, up), two),
                );
                let second = _mm512_or_si512(
                    _mm512_and_si512(_mm512_srli_epi16(ql, 4), low),
                    _mm512_and_si512(_mm512_srlv_epi64(qh, down), two),
                );
                for (r, run) in [first, second].into_iter().enumerate() {
                    let at = 128 * half + 64 * r;
                    let sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), run, load64(sub(q, at)));
                    let scale = _mm512_permutexvar_ps(picks[2 * half + r], factor);
                    accs[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, accs[r]);
                }
            }
        }
        let total = _mm512_add_ps(accs[0], accs[1]);
        _mm512_reduce_add_ps(_mm512_fnmadd_ps(_mm512_set1_ps(32.0), offsets, total))
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use candle_core::Device;
    use candle_core::quantized::{GgmlDType, QStorage, QTensor};
    use proptest::prelude::*;

    use super::super::{Activations, Arithmetic};
    use super::*;

    /// A deterministic byte stream.
    fn bytes(seed: u64, n: usize) -> Vec<u8> {
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
    fn random_blocks(kind: GgmlDType, seed: u64, count: usize) -> Vec<u8> {
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

    fn dequantize(kind: GgmlDType, raw: &[u8]) -> Vec<f32> {
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

    fn candle(kind: GgmlDType, raw: &[u8], values: usize) -> Vec<f32> {
        let storage = QStorage::from_data(Cow::Borrowed(raw), &Device::Cpu, kind).unwrap();
        let tensor = QTensor::new(storage, (values,)).unwrap();
        tensor
            .dequantize(&Device::Cpu)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
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

    /// The dot product of `raw` (one row) against `x`, by every kernel this
    /// CPU has, checked against f64 arithmetic on the dequantized values.
    fn check_dots(kind: GgmlDType, raw: &[u8], x: &[f32]) {
        let mut act = Activations::default();
        act.set(x, x.len(), Arithmetic::Int8).unwrap();
        let token = act.token_q(0);
        let weights = dequantize(kind, raw);
        let acts: Vec<f64> = token
            .q
            .iter()
            .enumerate()
            .map(|(i, &q)| f64::from(token.d[i / 32]) * f64::from(q))
            .collect();
        let exact: f64 = weights
            .iter()
            .zip(&acts)
            .map(|(&w, a)| f64::from(w) * a)
            .sum();
        let magnitude: f64 = weights
            .iter()
            .zip(&acts)
            .map(|(&w, a)| (f64::from(w) * a).abs())
            .sum();
        // f32 sums of at most a few thousand terms: relative error well
        // under 1e-5 of the sum of magnitudes.
        let tolerance = 1e-5 * magnitude + 1e-6;
        let dot = |simd| match kind {
            GgmlDType::Q4K => dot_q4k(simd, raw.as_chunks().0, token),
            GgmlDType::Q6K => dot_q6k(simd, raw.as_chunks().0, token),
            _ => dot_q5_0(simd, raw.as_chunks().0, token),
        };
        let scalar = dot(Simd::Scalar);
        assert!(
            (f64::from(scalar) - exact).abs() <= tolerance,
            "{kind:?} scalar {scalar} vs exact {exact}"
        );
        for simd in Simd::available() {
            let fast = dot(simd);
            assert!(
                (fast - scalar).abs() as f64 <= tolerance,
                "{kind:?} {simd:?} {fast} vs scalar {scalar} (tolerance {tolerance})"
            );
        }
    }

    fn activations(seed: u64, n: usize) -> Vec<f32> {
        bytes(seed, n)
            .into_iter()
            .map(|b| (f32::from(b) - 127.5) / 64.0)
            .collect()
    }

    #[test]
    fn every_kernel_matches_the_exact_product() {
        eprintln!("kernels on this CPU: {:?}", Simd::available());
        for seed in 0..10 {
            for (kind, blocks, per) in [
                (GgmlDType::Q4K, 6, QK_K),
                (GgmlDType::Q6K, 6, QK_K),
                (GgmlDType::Q5_0, 48, 32),
            ] {
                let raw = random_blocks(kind, seed, blocks);
                check_dots(kind, &raw, &activations(seed + 100, blocks * per));
            }
        }
    }

    #[test]
    fn extreme_blocks_do_not_overflow() {
        // All weights at their largest, activations at ±127.
        for kind in [GgmlDType::Q4K, GgmlDType::Q6K, GgmlDType::Q5_0] {
            let (size, per) = match kind {
                GgmlDType::Q4K => (Q4K_BYTES, QK_K),
                GgmlDType::Q6K => (Q6K_BYTES, QK_K),
                _ => (Q5_0_BYTES, 32),
            };
            let mut raw = vec![0xffu8; 4 * size];
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
            for sign in [1.0, -1.0] {
                check_dots(kind, &raw, &vec![sign; 4 * per]);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn random_blocks_agree_on_every_path(
            seed in any::<u64>(),
            kind in prop_oneof![Just(GgmlDType::Q4K), Just(GgmlDType::Q6K), Just(GgmlDType::Q5_0)],
            blocks in 1usize..5,
            spread in 0.01f32..100.0,
        ) {
            let (raw, per) = match kind {
                GgmlDType::Q5_0 => (random_blocks(kind, seed, 8 * blocks), 32 * 8),
                _ => (random_blocks(kind, seed, blocks), QK_K),
            };
            let x: Vec<f32> = activations(seed ^ 0x55, blocks * per)
                .into_iter()
                .map(|v| v * spread)
                .collect();
            check_dots(kind, &raw, &x);
            let ours = dequantize(kind, &raw);
            prop_assert!(same_bits(&ours, &candle(kind, &raw, blocks * per)));
        }
    }
}
