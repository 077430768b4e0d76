//! Q4_K and Q6_K matrices repacked at load, sixteen rows interleaved.
//!
//! In the file a row's super-blocks follow each other (see [`super::kquants`]),
//! so a dot product of one row ends in horizontal sums and, per 32 values,
//! float work that costs more than the integer products themselves. Here
//! the super-blocks of 16 consecutive rows at the same columns are stored
//! together, with every row's four consecutive values of a column run
//! side by side: one 512-bit register holds 4 values of all 16 rows, so
//! one `vpdpbusd` with a broadcast of 4 activation bytes adds 64 products
//! into the 16 rows' sums, and the float work (scales, the `- min` and
//! `- 32` offsets) is done once per sub-block for 16 rows at a time. Each
//! group of rows is multiplied against up to `N` tokens while its values
//! are unpacked in registers. The layouts take the file's size (Q6_K) or
//! 2.8% more (Q4_K: 8-bit rather than 6-bit scales).
//!
//! Values are counted in *chunks* of 4 consecutive values of a super-block:
//! chunk `c` is values `4c..4c + 4`.
//!
//! - [`Q4KRows16`]: per row `d` and `dmin` (f16 bits), the 8 scales and 8
//!   mins of its sub-blocks of 32 as bytes (`scales[j][r]`), and
//!   `qs[8g + k]`, 64 bytes: bytes `4r..4r + 4` are row `r`'s file bytes
//!   `32g + 4k..32g + 4k + 4` of nibbles, so their low nibbles are chunk
//!   `8 * (2g) + k` (sub-block `2g`) and their high nibbles chunk
//!   `8 * (2g + 1) + k`.
//! - [`Q6KRows16`]: per row `d` (f16 bits), the 16 signed scales of its
//!   sub-blocks of 16 (`scales[s][r]`); the six-bit values in `ql[p]`
//!   (bytes `4r..4r + 4`: low four bits of chunk `p` in the low nibble,
//!   of chunk `p + 32` in the high nibble) and `qh[p]` (bits `2m, 2m + 1`:
//!   the top two bits of chunk `p + 16m`).
//!
//! A matrix whose row count is not a multiple of 16 is padded with zero
//! rows (scales 0), whose outputs are dropped.

// SIMD intrinsics are `unsafe`; each kernel runs only after a run-time
// check of the CPU features it needs (see `Simd::detect`), and its loads
// read within fixed-size arrays.
#![allow(unsafe_code)]

use half::f16;

use super::Simd;
use super::kquants::{
    BlockQ4K, BlockQ6K, QK_K, SuperBlocks, TokenBlock, TokenQ, common_len, q4k_values, q6k_values,
    scales_mins,
};

/// Rows interleaved in one group.
pub(crate) const ROWS: usize = 16;

/// One super-block (256 columns) of 16 rows of a Q4_K matrix.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Q4KRows16 {
    d: [u16; ROWS],
    dmin: [u16; ROWS],
    scales: [[u8; ROWS]; 8],
    mins: [[u8; ROWS]; 8],
    qs: [[u8; 64]; 32],
}

/// One super-block (256 columns) of 16 rows of a Q6_K matrix.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Q6KRows16 {
    d: [u16; ROWS],
    scales: [[i8; ROWS]; 16],
    ql: [[u8; 64]; 32],
    qh: [[u8; 64]; 16],
}

const ZERO_Q4K: Q4KRows16 = Q4KRows16 {
    d: [0; ROWS],
    dmin: [0; ROWS],
    scales: [[0; ROWS]; 8],
    mins: [[0; ROWS]; 8],
    qs: [[0; 64]; 32],
};

const ZERO_Q6K: Q6KRows16 = Q6KRows16 {
    d: [0; ROWS],
    scales: [[0; ROWS]; 16],
    ql: [[0; 64]; 32],
    qh: [[0; 64]; 16],
};

fn f16_bits(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

/// One super-block of 16 rows interleaved: `blocks[r]` is row `r`'s in
/// the file (`None` past the matrix's last row: zeros).
pub(crate) fn repack_q4k(blocks: [Option<&BlockQ4K>; ROWS]) -> Q4KRows16 {
    let mut out = ZERO_Q4K;
    for (r, block) in blocks.into_iter().enumerate() {
        let Some(block) = block else { continue };
        out.d[r] = u16::from_le_bytes([block[0], block[1]]);
        out.dmin[r] = u16::from_le_bytes([block[2], block[3]]);
        let (scales, mins) = scales_mins(block);
        for (j, (s, m)) in scales
            .to_le_bytes()
            .into_iter()
            .zip(mins.to_le_bytes())
            .enumerate()
        {
            out.scales[j][r] = s;
            out.mins[j][r] = m;
        }
        for (p, run) in out.qs.iter_mut().enumerate() {
            let at = 16 + 4 * p;
            run[4 * r..4 * r + 4].copy_from_slice(&block[at..at + 4]);
        }
    }
    out
}

/// As [`repack_q4k`], for Q6_K.
pub(crate) fn repack_q6k(blocks: [Option<&BlockQ6K>; ROWS]) -> Q6KRows16 {
    let mut out = ZERO_Q6K;
    for (r, block) in blocks.into_iter().enumerate() {
        let Some(block) = block else { continue };
        out.d[r] = u16::from_le_bytes([block[208], block[209]]);
        for (s, scale) in out.scales.iter_mut().enumerate() {
            scale[r] = block[192 + s] as i8;
        }
        let values = q6k_values(block);
        for (c, chunk) in values.chunks_exact(4).enumerate() {
            for (i, &v) in chunk.iter().enumerate() {
                out.ql[c % 32][4 * r + i] |= (v & 0x0f) << (4 * (c / 32));
                out.qh[c % 16][4 * r + i] |= (v >> 4) << (2 * (c / 16));
            }
        }
    }
    out
}

/// The four-bit values (0..16) of row `r` of a Q4_K group, in order.
fn q4k_row_values(block: &Q4KRows16, r: usize) -> [u8; QK_K] {
    let mut file = [0u8; 128];
    for (p, run) in block.qs.iter().enumerate() {
        file[4 * p..4 * p + 4].copy_from_slice(&run[4 * r..4 * r + 4]);
    }
    let mut whole: BlockQ4K = [0; 144];
    whole[16..].copy_from_slice(&file);
    q4k_values(&whole)
}

/// The six-bit values (0..64) of row `r` of a Q6_K group, in order.
fn q6k_row_values(block: &Q6KRows16, r: usize) -> [u8; QK_K] {
    let mut q = [0u8; QK_K];
    for (c, chunk) in q.chunks_exact_mut(4).enumerate() {
        for (i, v) in chunk.iter_mut().enumerate() {
            let low = (block.ql[c % 32][4 * r + i] >> (4 * (c / 32))) & 0x0f;
            let high = (block.qh[c % 16][4 * r + i] >> (2 * (c / 16))) & 0x03;
            *v = low | (high << 4);
        }
    }
    q
}

/// Row `r`'s 256 values of a Q4_K group (the same floats as
/// [`super::kquants::dequantize_q4k`] of the file's block).
pub(crate) fn dequantize_q4k(block: &Q4KRows16, r: usize, out: &mut [f32; QK_K]) {
    let d = f16_bits(block.d[r]);
    let dmin = f16_bits(block.dmin[r]);
    let values = q4k_row_values(block, r);
    for (j, (out, q)) in out
        .chunks_exact_mut(32)
        .zip(values.chunks_exact(32))
        .enumerate()
    {
        let scale = d * f32::from(block.scales[j][r]);
        let min = dmin * f32::from(block.mins[j][r]);
        for (o, &q) in out.iter_mut().zip(q) {
            *o = scale * f32::from(q) - min;
        }
    }
}

/// Row `r`'s 256 values of a Q6_K group.
pub(crate) fn dequantize_q6k(block: &Q6KRows16, r: usize, out: &mut [f32; QK_K]) {
    let d = f16_bits(block.d[r]);
    let values = q6k_row_values(block, r);
    for (s, (out, q)) in out
        .chunks_exact_mut(16)
        .zip(values.chunks_exact(16))
        .enumerate()
    {
        let scale = d * f32::from(block.scales[s][r]);
        for (o, &q) in out.iter_mut().zip(q) {
            *o = scale * f32::from(i16::from(q) - 32);
        }
    }
}

// The kernels take one group of 16 rows (its super-blocks, left to right)
// and `N` tokens, and return each token's 16 sums. Each token's arithmetic
// is the same sequence of operations whatever `N` is, so its results are
// the same bit for bit: a prompt's keys and values are those one-token
// generation computes.

/// `Σ w * x` of a group of 16 Q4_K rows and each of `N` tokens.
pub(crate) fn dot_q4k<const N: usize>(
    simd: Simd,
    w: &[Q4KRows16],
    x: &[TokenQ; N],
) -> [[f32; ROWS]; N] {
    match simd {
        // SAFETY: `Simd::Avx512` is only made after detecting AVX-512 F, BW,
        // VL and VNNI, AVX2, FMA and F16C.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx512 => unsafe { avx512::dot_q4k(w, x) },
        // SAFETY: `Simd::Avx2` is only made after detecting AVX2, FMA and
        // F16C.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 => unsafe { avx2::dot_q4k(w, x) },
        Simd::Scalar => dot_q4k_scalar(w, x),
    }
}

fn int_dot(w: &[u8], x: &[i8]) -> i32 {
    w.iter()
        .zip(x)
        .map(|(&w, &x)| i32::from(w) * i32::from(x))
        .sum()
}

fn dot_q4k_scalar<const N: usize>(w: &[Q4KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
    let xs = x.map(SuperBlocks::of);
    let n = common_len(w.len(), &xs.map(|x| x.len()));
    let mut out = [[0.0f32; ROWS]; N];
    for (b, block) in w[..n].iter().enumerate() {
        let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
        for r in 0..ROWS {
            let values = q4k_row_values(block, r);
            let d = f16_bits(block.d[r]);
            let dmin = f16_bits(block.dmin[r]);
            for (out, x) in out.iter_mut().zip(&xb) {
                let mut sum = 0.0f32;
                for j in 0..8 {
                    let range = 32 * j..32 * j + 32;
                    let product = int_dot(&values[range.clone()], &x.q[range]);
                    sum += d * f32::from(block.scales[j][r]) * x.d[j] * product as f32;
                    sum -= dmin * f32::from(block.mins[j][r]) * x.sums[j];
                }
                out[r] += sum;
            }
        }
    }
    out
}

/// `Σ w * x` of a group of 16 Q6_K rows and each of `N` tokens.
pub(crate) fn dot_q6k<const N: usize>(
    simd: Simd,
    w: &[Q6KRows16],
    x: &[TokenQ; N],
) -> [[f32; ROWS]; N] {
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

fn dot_q6k_scalar<const N: usize>(w: &[Q6KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
    let xs = x.map(SuperBlocks::of);
    let n = common_len(w.len(), &xs.map(|x| x.len()));
    let mut out = [[0.0f32; ROWS]; N];
    for (b, block) in w[..n].iter().enumerate() {
        let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
        for r in 0..ROWS {
            let values = q6k_row_values(block, r);
            let d = f16_bits(block.d[r]);
            for (out, x) in out.iter_mut().zip(&xb) {
                let (mut sum, mut offset) = (0.0f32, 0.0f32);
                for s in 0..16 {
                    let range = 16 * s..16 * s + 16;
                    let product = int_dot(&values[range.clone()], &x.q[range]);
                    let scale = d * f32::from(block.scales[s][r]);
                    sum += scale * x.d[s / 2] * product as f32;
                    offset += scale * x.halves[s];
                }
                out[r] += sum - 32.0 * offset;
            }
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{Q4KRows16, Q6KRows16, ROWS, SuperBlocks, TokenBlock, TokenQ, common_len};

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn load64(bytes: &[u8; 64]) -> __m512i {
        // SAFETY: 64 readable bytes; unaligned loads are allowed.
        unsafe { _mm512_loadu_si512(bytes.as_ptr().cast()) }
    }

    /// Sixteen f16 (as bits) as f32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn halves16(bits: &[u16; ROWS]) -> __m512 {
        // SAFETY: 32 readable bytes.
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(bits.as_ptr().cast()) })
    }

    /// Sixteen unsigned bytes as f32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn unsigned16(bytes: &[u8; ROWS]) -> __m512 {
        // SAFETY: 16 readable bytes.
        let raw = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(raw))
    }

    /// Sixteen signed bytes as f32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn signed16(bytes: &[i8; ROWS]) -> __m512 {
        // SAFETY: 16 readable bytes.
        let raw = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
        _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw))
    }

    /// Activation bytes `4k..4k + 4` of `q` in every 32-bit lane.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn broadcast4(q: &[i8], k: usize) -> __m512i {
        let b = &q[4 * k..4 * k + 4];
        _mm512_set1_epi32(i32::from_le_bytes([
            b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8,
        ]))
    }

    /// `start` plus the 16 rows' integer sums over `K` chunks (`weights`)
    /// against the activations `q` (`4K` bytes). One chain: the tokens of
    /// a tile and the sub-blocks after it are independent chains enough
    /// to hide its latency.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    fn chunk_sums<const K: usize>(start: __m512i, weights: &[__m512i; K], q: &[i8]) -> __m512i {
        let mut sum = start;
        for (k, weights) in weights.iter().enumerate() {
            sum = _mm512_dpbusd_epi32(sum, *weights, broadcast4(q, k));
        }
        sum
    }

    // Both kernels take the super-block grain (one activation scale per
    // 256 values, `x.d[0]` of each super-block): a sub-block's sums are
    // scaled by the weights' small scales alone, in floats, and a
    // super-block's total by `d` and the activation scale once.

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    pub(super) fn dot_q4k<const N: usize>(w: &[Q4KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
        let xs = x.map(SuperBlocks::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let (low, high) = (_mm512_set1_epi8(0x0f), _mm512_set1_epi8(-16));
        let zero = _mm512_setzero_si512();
        let sixteenth = _mm512_set1_ps(1.0 / 16.0);
        let mut acc = [_mm512_setzero_ps(); N];
        for (b, block) in w[..n].iter().enumerate() {
            let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
            let d = halves16(&block.d);
            let dmin = halves16(&block.dmin);
            // Per token, `Σ_j scale_j * (integer sum of sub-block j)`.
            let mut scaled = [_mm512_setzero_ps(); N];
            for g in 0..4 {
                let raw: [__m512i; 8] = std::array::from_fn(|k| load64(&block.qs[8 * g + k]));
                for h in 0..2 {
                    let j = 2 * g + h;
                    // High nibbles are used in place, as 16 times their
                    // value (one `and`, no shift): `vpdpbusd` sums into 32
                    // bits, so 240 * 127 * 32 cannot overflow, and the
                    // 1/16 goes into the scale.
                    let (mask, scale) = match h {
                        0 => (low, unsigned16(&block.scales[j])),
                        _ => (high, _mm512_mul_ps(unsigned16(&block.scales[j]), sixteenth)),
                    };
                    let weights = raw.map(|r| _mm512_and_si512(r, mask));
                    let min = _mm512_mul_ps(unsigned16(&block.mins[j]), dmin);
                    for t in 0..N {
                        let x = &xb[t];
                        let sums = chunk_sums(zero, &weights, &x.q[32 * j..32 * j + 32]);
                        scaled[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scale, scaled[t]);
                        acc[t] = _mm512_fnmadd_ps(min, _mm512_set1_ps(x.sums[j]), acc[t]);
                    }
                }
            }
            for t in 0..N {
                let factor = _mm512_mul_ps(d, _mm512_set1_ps(xb[t].d[0]));
                acc[t] = _mm512_fmadd_ps(scaled[t], factor, acc[t]);
            }
        }
        let mut out = [[0.0f32; ROWS]; N];
        for (out, acc) in out.iter_mut().zip(acc) {
            // SAFETY: 16 writable floats.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
        }
        out
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
    pub(super) fn dot_q6k<const N: usize>(w: &[Q6KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
        let xs = x.map(SuperBlocks::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let low = _mm512_set1_epi8(0x0f);
        let two = _mm512_set1_epi8(0x30);
        let mut acc = [_mm512_setzero_ps(); N];
        for (b, block) in w[..n].iter().enumerate() {
            let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
            let d = halves16(&block.d);
            let mut scaled = [_mm512_setzero_ps(); N];
            // Activation block `a` (32 values) is chunks 8a..8a + 8, Q6_K
            // sub-blocks 2a and 2a + 1.
            for a in 0..8 {
                let chunk = |c: usize| {
                    let ql = load64(&block.ql[c % 32]);
                    let ql = if c < 32 { ql } else { _mm512_srli_epi16(ql, 4) };
                    let qh = load64(&block.qh[c % 16]);
                    // The chunk's two bits up to bits 4-5.
                    let qh = match c / 16 {
                        0 => _mm512_slli_epi16(qh, 4),
                        1 => _mm512_slli_epi16(qh, 2),
                        2 => qh,
                        _ => _mm512_srli_epi16(qh, 2),
                    };
                    _mm512_or_si512(_mm512_and_si512(ql, low), _mm512_and_si512(qh, two))
                };
                let first: [__m512i; 4] = std::array::from_fn(|k| chunk(8 * a + k));
                let second: [__m512i; 4] = std::array::from_fn(|k| chunk(8 * a + 4 + k));
                let scale0 = signed16(&block.scales[2 * a]);
                let scale1 = signed16(&block.scales[2 * a + 1]);
                for t in 0..N {
                    let x = &xb[t];
                    let q = &x.q[32 * a..32 * a + 32];
                    // Weights are stored as `q + 32`: each sum starts at
                    // `-32 * Σx` of its 16 values.
                    let start0 = _mm512_set1_epi32(x.offsets[2 * a]);
                    let start1 = _mm512_set1_epi32(x.offsets[2 * a + 1]);
                    let sums0 = _mm512_cvtepi32_ps(chunk_sums(start0, &first, &q[..16]));
                    let sums1 = _mm512_cvtepi32_ps(chunk_sums(start1, &second, &q[16..]));
                    scaled[t] = _mm512_fmadd_ps(sums0, scale0, scaled[t]);
                    scaled[t] = _mm512_fmadd_ps(sums1, scale1, scaled[t]);
                }
            }
            for t in 0..N {
                let factor = _mm512_mul_ps(d, _mm512_set1_ps(xb[t].d[0]));
                acc[t] = _mm512_fmadd_ps(scaled[t], factor, acc[t]);
            }
        }
        let mut out = [[0.0f32; ROWS]; N];
        for (out, acc) in out.iter_mut().zip(acc) {
            // SAFETY: 16 writable floats.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Q4KRows16, Q6KRows16, ROWS, SuperBlocks, TokenBlock, TokenQ, common_len};

    /// Bytes `32 * half..32 * half + 32` of a 64-byte run: rows
    /// `8 * half..8 * half + 8`.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_half(bytes: &[u8; 64], half: usize) -> __m256i {
        let part = &bytes[32 * half..32 * half + 32];
        // SAFETY: 32 readable bytes; unaligned loads are allowed.
        unsafe { _mm256_loadu_si256(part.as_ptr().cast()) }
    }

    /// Eight f16 (as bits) as f32.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn halves8(bits: &[u16]) -> __m256 {
        let part = &bits[..8];
        // SAFETY: 16 readable bytes.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(part.as_ptr().cast()) })
    }

    /// Eight unsigned bytes as f32.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn unsigned8(bytes: &[u8]) -> __m256 {
        let part = &bytes[..8];
        // SAFETY: 8 readable bytes.
        let raw = unsafe { _mm_loadl_epi64(part.as_ptr().cast()) };
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(raw))
    }

    /// Eight signed bytes as f32.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn signed8(bytes: &[i8]) -> __m256 {
        let part = &bytes[..8];
        // SAFETY: 8 readable bytes.
        let raw = unsafe { _mm_loadl_epi64(part.as_ptr().cast()) };
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(raw))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn broadcast4(q: &[i8], k: usize) -> __m256i {
        let b = &q[4 * k..4 * k + 4];
        _mm256_set1_epi32(i32::from_le_bytes([
            b[0] as u8, b[1] as u8, b[2] as u8, b[3] as u8,
        ]))
    }

    /// The 8 rows' integer sums over `K` chunks against `4K` activation
    /// bytes. Two chunks' 16-bit pair sums are added before widening: at
    /// most 2 * 2 * 63 * 127 = 32,004 for six-bit weights, within i16.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn chunk_sums<const K: usize>(weights: &[__m256i; K], q: &[i8]) -> __m256i {
        let ones = _mm256_set1_epi16(1);
        let mut sum = _mm256_setzero_si256();
        for k in (0..K).step_by(2) {
            let a = _mm256_maddubs_epi16(weights[k], broadcast4(q, k));
            let b = _mm256_maddubs_epi16(weights[k + 1], broadcast4(q, k + 1));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_add_epi16(a, b), ones));
        }
        sum
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dot_q4k<const N: usize>(w: &[Q4KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
        let xs = x.map(SuperBlocks::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let mask = _mm256_set1_epi8(0x0f);
        let mut out = [[0.0f32; ROWS]; N];
        // Eight rows at a time: sixteen registers of unpacked weights
        // would not leave room for the accumulators.
        for half in 0..2 {
            let rows = 8 * half..8 * half + 8;
            let mut acc = [_mm256_setzero_ps(); N];
            for (b, block) in w[..n].iter().enumerate() {
                let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
                let d = halves8(&block.d[rows.clone()]);
                let dmin = halves8(&block.dmin[rows.clone()]);
                for j in 0..8 {
                    let (g, shift) = (j / 2, 4 * (j % 2) as i32);
                    let weights: [__m256i; 8] = std::array::from_fn(|k| {
                        let raw = load_half(&block.qs[8 * g + k], half);
                        let raw = match shift {
                            0 => raw,
                            _ => _mm256_srli_epi16(raw, 4),
                        };
                        _mm256_and_si256(raw, mask)
                    });
                    let scale = _mm256_mul_ps(unsigned8(&block.scales[j][rows.clone()]), d);
                    let min = _mm256_mul_ps(unsigned8(&block.mins[j][rows.clone()]), dmin);
                    for t in 0..N {
                        let x = &xb[t];
                        let sums = chunk_sums(&weights, &x.q[32 * j..32 * j + 32]);
                        let factor = _mm256_mul_ps(scale, _mm256_set1_ps(x.d[j]));
                        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), factor, acc[t]);
                        acc[t] = _mm256_fnmadd_ps(min, _mm256_set1_ps(x.sums[j]), acc[t]);
                    }
                }
            }
            for (out, acc) in out.iter_mut().zip(acc) {
                // SAFETY: 8 writable floats.
                unsafe { _mm256_storeu_ps(out[rows.clone()].as_mut_ptr(), acc) };
            }
        }
        out
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dot_q6k<const N: usize>(w: &[Q6KRows16], x: &[TokenQ; N]) -> [[f32; ROWS]; N] {
        let xs = x.map(SuperBlocks::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let low = _mm256_set1_epi8(0x0f);
        let two = _mm256_set1_epi8(0x30);
        let mut out = [[0.0f32; ROWS]; N];
        for half in 0..2 {
            let rows = 8 * half..8 * half + 8;
            let mut acc = [_mm256_setzero_ps(); N];
            let mut offsets = [_mm256_setzero_ps(); N];
            for (b, block) in w[..n].iter().enumerate() {
                let xb: [TokenBlock; N] = std::array::from_fn(|t| xs[t].block(b));
                let d = halves8(&block.d[rows.clone()]);
                // Sub-block `s` (16 values) is chunks 4s..4s + 4.
                for s in 0..16 {
                    let weights: [__m256i; 4] = std::array::from_fn(|k| {
                        let c = 4 * s + k;
                        let ql = load_half(&block.ql[c % 32], half);
                        let ql = if c < 32 { ql } else { _mm256_srli_epi16(ql, 4) };
                        let qh = load_half(&block.qh[c % 16], half);
                        let qh = match c / 16 {
                            0 => _mm256_slli_epi16(qh, 4),
                            1 => _mm256_slli_epi16(qh, 2),
                            2 => qh,
                            _ => _mm256_srli_epi16(qh, 2),
                        };
                        _mm256_or_si256(_mm256_and_si256(ql, low), _mm256_and_si256(qh, two))
                    });
                    let scale = _mm256_mul_ps(signed8(&block.scales[s][rows.clone()]), d);
                    for t in 0..N {
                        let x = &xb[t];
                        let q = &x.q[16 * s..16 * s + 16];
                        let sums = _mm256_cvtepi32_ps(chunk_sums(&weights, q));
                        let factor = _mm256_mul_ps(scale, _mm256_set1_ps(x.d[s / 2]));
                        acc[t] = _mm256_fmadd_ps(sums, factor, acc[t]);
                        offsets[t] =
                            _mm256_fmadd_ps(scale, _mm256_set1_ps(x.halves[s]), offsets[t]);
                    }
                }
            }
            for t in 0..N {
                let total = _mm256_fnmadd_ps(_mm256_set1_ps(32.0), offsets[t], acc[t]);
                // SAFETY: 8 writable floats.
                unsafe { _mm256_storeu_ps(out[t][rows.clone()].as_mut_ptr(), total) };
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;

    use super::super::kquants::tests::{dequantize, interleave, random_blocks, same_bits};
    use super::super::kquants::{Q4K_BYTES, Q6K_BYTES};
    use super::*;

    /// Row `r` of group `g` dequantized from the interleaved blocks.
    fn row_values<T>(
        groups: &[T],
        r: usize,
        one: impl Fn(&T, usize, &mut [f32; QK_K]),
    ) -> Vec<f32> {
        groups
            .iter()
            .flat_map(|b| {
                let mut out = [0.0; QK_K];
                one(b, r, &mut out);
                out
            })
            .collect()
    }

    #[test]
    fn repacking_keeps_every_value_and_pads_with_zeros() {
        for seed in 0..6 {
            for rows in [1, 7, 16, 19] {
                let per = 2;
                for kind in [GgmlDType::Q4K, GgmlDType::Q6K] {
                    let raw = random_blocks(kind, seed, rows * per);
                    let file = dequantize(kind, &raw);
                    for g in 0..rows.div_ceil(ROWS) {
                        for r in 0..ROWS {
                            let row = g * ROWS + r;
                            let ours = match kind {
                                GgmlDType::Q4K => {
                                    let blocks = raw.as_chunks::<Q4K_BYTES>().0;
                                    let groups: Vec<_> = interleave(blocks, rows, g)
                                        .into_iter()
                                        .map(repack_q4k)
                                        .collect();
                                    row_values(&groups, r, dequantize_q4k)
                                }
                                _ => {
                                    let blocks = raw.as_chunks::<Q6K_BYTES>().0;
                                    let groups: Vec<_> = interleave(blocks, rows, g)
                                        .into_iter()
                                        .map(repack_q6k)
                                        .collect();
                                    row_values(&groups, r, dequantize_q6k)
                                }
                            };
                            if row < rows {
                                let want = &file[row * per * QK_K..(row + 1) * per * QK_K];
                                assert!(same_bits(&ours, want), "{kind:?} row {row} of {rows}");
                            } else {
                                assert!(ours.iter().all(|&v| v == 0.0), "{kind:?} padding row");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_layouts_take_the_sizes_the_docs_say() {
        assert_eq!(std::mem::size_of::<Q4KRows16>(), 2368);
        assert_eq!(std::mem::size_of::<Q6KRows16>(), ROWS * Q6K_BYTES);
    }
}
