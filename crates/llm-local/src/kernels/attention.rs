//! Attention of a few new tokens over a span of cached positions (the
//! generation path; a prompt's attention is matrix products in the
//! engine).
//!
//! Each query head is one pass over the span's keys (its query held in
//! registers, one horizontal sum per score) and one over its values (its
//! output held in registers across every position, never loaded and
//! stored per position), in explicit AVX-512 or AVX2 code picked at run
//! time, plain Rust otherwise. Written as a dot product per score and an
//! output row updated in memory per position, this was 39% of a
//! generated token's time after 4,096 tokens of context.

// The `unsafe` calls are of functions compiled for an instruction set,
// each after a run-time check that the CPU has it (`Simd::detect`).
#![allow(unsafe_code)]

use half::f16;

use super::Simd;

/// The shapes [`attend_span`] works on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AttentionShape {
    /// Values per head.
    pub(crate) head_dim: usize,
    /// Values per cached position (all kv heads).
    pub(crate) kv_dim: usize,
    /// Query heads sharing one kv head.
    pub(crate) group: usize,
    /// `1 / sqrt(head_dim)`.
    pub(crate) scale: f32,
}

/// Softmax statistics of one query head over a span of positions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpanStats {
    /// Largest score (`-inf` when the head sees none of the span).
    pub(crate) max: f32,
    /// `Σ exp(score - max)`.
    pub(crate) sum: f32,
}

/// Attention of a few consecutive tokens' query heads that share the kv
/// head at `kv_offset`, over one span of cached positions: `keys` and
/// `values` hold just the span. `queries` holds, token after token, the
/// `shape.group` heads of each (`head_dim` values each). The first token
/// sees `first_visible` positions of the span, the next one more (capped
/// at the span's length).
///
/// Writes each head's *unnormalized* output `Σ exp(s - max) v` to `out`
/// (same layout as `queries`) and its statistics to `stats`, so spans
/// computed in parallel can be merged (see [`merge_spans`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attend_span(
    shape: AttentionShape,
    queries: &[f32],
    keys: &[f16],
    values: &[f16],
    kv_offset: usize,
    first_visible: usize,
    scores: &mut Vec<f32>,
    out: &mut [f32],
    stats: &mut [SpanStats],
) {
    let span = Span {
        shape,
        queries,
        keys,
        values,
        kv_offset,
        first_visible,
    };
    attend_with(Simd::detect(), span, scores, out, stats);
}

/// The inputs of [`attend_span`].
#[derive(Clone, Copy)]
struct Span<'a> {
    shape: AttentionShape,
    queries: &'a [f32],
    keys: &'a [f16],
    values: &'a [f16],
    kv_offset: usize,
    first_visible: usize,
}

fn attend_with(
    simd: Simd,
    span: Span<'_>,
    scores: &mut Vec<f32>,
    out: &mut [f32],
    stats: &mut [SpanStats],
) {
    let AttentionShape {
        head_dim,
        kv_dim,
        group,
        scale,
    } = span.shape;
    if head_dim == 0 || kv_dim < span.kv_offset + head_dim {
        return;
    }
    let positions = (span.keys.len() / kv_dim).min(span.values.len() / kv_dim);
    let rows = (span.queries.len() / head_dim)
        .min(stats.len())
        .min(out.len() / head_dim);
    scores.clear();
    scores.resize(rows * positions, 0.0);
    out.fill(0.0);
    for r in 0..rows {
        // Rows are in token order; each token sees one more position.
        let seen = (span.first_visible + r / group.max(1)).min(positions);
        let row = Row {
            query: &span.queries[r * head_dim..(r + 1) * head_dim],
            // Just the positions the row sees: every read below is
            // within these slices.
            keys: &span.keys[..seen * kv_dim],
            values: &span.values[..seen * kv_dim],
            kv_dim,
            kv_offset: span.kv_offset,
            scale,
        };
        let scores = &mut scores[r * positions..r * positions + seen];
        let out = &mut out[r * head_dim..(r + 1) * head_dim];
        stats[r] = match simd {
            // SAFETY: `Simd::Avx512` is only made after detecting AVX-512
            // F, BW and VL (and more).
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 if head_dim.is_multiple_of(x86::AVX512_PASS) => unsafe {
                x86::row_avx512(row, scores, out)
            },
            // SAFETY: `Simd::Avx2` and `Simd::Avx512` are only made after
            // detecting AVX2 and FMA.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx2 | Simd::Avx512 if head_dim.is_multiple_of(x86::AVX2_PASS) => unsafe {
                x86::row_avx2(row, scores, out)
            },
            _ => row_portable(row, scores, out),
        };
    }
}

/// One query head's inputs: the keys and values cover exactly the
/// positions it sees.
#[derive(Clone, Copy)]
struct Row<'a> {
    query: &'a [f32],
    keys: &'a [f16],
    values: &'a [f16],
    kv_dim: usize,
    kv_offset: usize,
    scale: f32,
}

impl Row<'_> {
    fn positions(&self) -> usize {
        self.keys.len().min(self.values.len()) / self.kv_dim
    }

    fn key(&self, p: usize) -> &[f16] {
        &self.keys[p * self.kv_dim + self.kv_offset..][..self.query.len()]
    }

    fn value(&self, p: usize) -> &[f16] {
        &self.values[p * self.kv_dim + self.kv_offset..][..self.query.len()]
    }
}

/// The exponentials of `scores` (each less their maximum), in place, and
/// their statistics.
#[inline(always)]
fn softmax_weights(scores: &mut [f32]) -> SpanStats {
    if scores.is_empty() {
        return SpanStats {
            max: f32::NEG_INFINITY,
            sum: 0.0,
        };
    }
    let max = lane_max(scores);
    for s in scores.iter_mut() {
        *s = crate::math::exp(*s - max);
    }
    SpanStats {
        max,
        sum: lane_sum(scores),
    }
}

fn row_portable(row: Row<'_>, scores: &mut [f32], out: &mut [f32]) -> SpanStats {
    for (p, s) in scores.iter_mut().enumerate() {
        *s = row
            .query
            .iter()
            .zip(row.key(p))
            .map(|(q, k)| q * k.to_f32())
            .sum::<f32>()
            * row.scale;
    }
    let stats = softmax_weights(scores);
    for (p, &w) in scores.iter().enumerate() {
        for (o, v) in out.iter_mut().zip(row.value(p)) {
            *o += w * v.to_f32();
        }
    }
    stats
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use half::f16;

    use super::super::avx2::hsum;
    use super::{Row, SpanStats, softmax_weights};

    /// Sixteen f16 as f32.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    fn load16(values: &[f16]) -> __m512 {
        let values = &values[..16];
        // SAFETY: 32 readable bytes (f16 is two bytes, `repr(transparent)`
        // over `u16`); unaligned loads are allowed.
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(values.as_ptr().cast()) })
    }

    /// Eight f16 as f32.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load8(values: &[f16]) -> __m256 {
        let values = &values[..8];
        // SAFETY: 16 readable bytes, as in `load16`.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(values.as_ptr().cast()) })
    }

    /// Head values per pass of the AVX-512 row kernel (8 registers).
    pub(super) const AVX512_PASS: usize = 64;
    /// Head values per pass of the AVX2 row kernel (8 registers).
    pub(super) const AVX2_PASS: usize = 32;

    /// One head's attention, `head_dim` a multiple of [`AVX512_PASS`]:
    /// per pass of 64 values the query stays in 4 registers for the
    /// scores, and the output in 4 registers across all positions.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    pub(super) fn row_avx512(row: Row<'_>, scores: &mut [f32], out: &mut [f32]) -> SpanStats {
        let seen = row.positions().min(scores.len());
        let head_dim = row.query.len();
        scores[..seen].fill(0.0);
        for pass in (0..head_dim).step_by(AVX512_PASS) {
            let q = &row.query[pass..pass + AVX512_PASS];
            // SAFETY: 64 readable floats.
            let q: [__m512; 4] =
                std::array::from_fn(|c| unsafe { _mm512_loadu_ps(q[16 * c..].as_ptr()) });
            for (p, s) in scores[..seen].iter_mut().enumerate() {
                let k = &row.key(p)[pass..pass + AVX512_PASS];
                let k = |c: usize| load16(&k[16 * c..]);
                let a = _mm512_fmadd_ps(q[1], k(1), _mm512_mul_ps(q[0], k(0)));
                let b = _mm512_fmadd_ps(q[3], k(3), _mm512_mul_ps(q[2], k(2)));
                *s += _mm512_reduce_add_ps(_mm512_add_ps(a, b));
            }
        }
        for s in scores[..seen].iter_mut() {
            *s *= row.scale;
        }
        let stats = softmax_weights(&mut scores[..seen]);
        for pass in (0..head_dim).step_by(AVX512_PASS) {
            let mut acc = [_mm512_setzero_ps(); 4];
            for (p, &w) in scores[..seen].iter().enumerate() {
                let v = &row.value(p)[pass..pass + AVX512_PASS];
                let w = _mm512_set1_ps(w);
                for (c, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm512_fmadd_ps(w, load16(&v[16 * c..]), *acc);
                }
            }
            let out = &mut out[pass..pass + AVX512_PASS];
            for (c, acc) in acc.into_iter().enumerate() {
                // SAFETY: 16 writable floats.
                unsafe { _mm512_storeu_ps(out[16 * c..].as_mut_ptr(), acc) };
            }
        }
        stats
    }

    /// [`row_avx512`] with 256-bit registers, `head_dim` a multiple of
    /// [`AVX2_PASS`].
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn row_avx2(row: Row<'_>, scores: &mut [f32], out: &mut [f32]) -> SpanStats {
        let seen = row.positions().min(scores.len());
        let head_dim = row.query.len();
        scores[..seen].fill(0.0);
        for pass in (0..head_dim).step_by(AVX2_PASS) {
            let q = &row.query[pass..pass + AVX2_PASS];
            // SAFETY: 32 readable floats.
            let q: [__m256; 4] =
                std::array::from_fn(|c| unsafe { _mm256_loadu_ps(q[8 * c..].as_ptr()) });
            for (p, s) in scores[..seen].iter_mut().enumerate() {
                let k = &row.key(p)[pass..pass + AVX2_PASS];
                let k = |c: usize| load8(&k[8 * c..]);
                let a = _mm256_fmadd_ps(q[1], k(1), _mm256_mul_ps(q[0], k(0)));
                let b = _mm256_fmadd_ps(q[3], k(3), _mm256_mul_ps(q[2], k(2)));
                *s += hsum(_mm256_add_ps(a, b));
            }
        }
        for s in scores[..seen].iter_mut() {
            *s *= row.scale;
        }
        let stats = softmax_weights(&mut scores[..seen]);
        for pass in (0..head_dim).step_by(AVX2_PASS) {
            let mut acc = [_mm256_setzero_ps(); 4];
            for (p, &w) in scores[..seen].iter().enumerate() {
                let v = &row.value(p)[pass..pass + AVX2_PASS];
                let w = _mm256_set1_ps(w);
                for (c, acc) in acc.iter_mut().enumerate() {
                    *acc = _mm256_fmadd_ps(w, load8(&v[8 * c..]), *acc);
                }
            }
            let out = &mut out[pass..pass + AVX2_PASS];
            for (c, acc) in acc.into_iter().enumerate() {
                // SAFETY: 8 writable floats.
                unsafe { _mm256_storeu_ps(out[8 * c..].as_mut_ptr(), acc) };
            }
        }
        stats
    }
}

/// The largest value (NaN ignored; `-inf` for none), in eight lanes.
#[inline(always)]
fn lane_max(values: &[f32]) -> f32 {
    let (lanes, rest) = values.as_chunks::<8>();
    let mut max = [f32::NEG_INFINITY; 8];
    for lane in lanes {
        for (m, v) in max.iter_mut().zip(lane) {
            *m = m.max(*v);
        }
    }
    let tail = rest.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    max.into_iter().fold(tail, f32::max)
}

/// `Σ values` in eight lanes.
#[inline(always)]
fn lane_sum(values: &[f32]) -> f32 {
    let (lanes, rest) = values.as_chunks::<8>();
    let mut sum = [0.0f32; 8];
    for lane in lanes {
        for (s, v) in sum.iter_mut().zip(lane) {
            *s += v;
        }
    }
    sum.iter().sum::<f32>() + rest.iter().sum::<f32>()
}

/// Combines one head's unnormalized outputs over several spans (from
/// [`attend_span`]) into its attention output.
pub(crate) fn merge_spans<'a>(
    parts: impl Iterator<Item = (SpanStats, &'a [f32])> + Clone,
    out: &mut [f32],
) {
    let max = parts
        .clone()
        .map(|(stats, _)| stats.max)
        .fold(f32::NEG_INFINITY, f32::max);
    out.fill(0.0);
    let mut total = 0.0;
    for (stats, values) in parts {
        if stats.sum == 0.0 {
            continue;
        }
        let weight = (stats.max - max).exp();
        total += stats.sum * weight;
        for (o, v) in out.iter_mut().zip(values) {
            *o += weight * v;
        }
    }
    if total > 0.0 {
        let inverse = 1.0 / total;
        for o in out.iter_mut() {
            *o *= inverse;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(seed: u32, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = (i as u32)
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(seed * 97);
                ((x >> 8) % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// Plain softmax attention of each row over the positions it sees,
    /// in f64, unnormalized as `attend_span` returns it.
    fn reference(span: Span<'_>, rows: usize) -> (Vec<f64>, Vec<(f64, f64)>) {
        let AttentionShape {
            head_dim,
            kv_dim,
            group,
            scale,
        } = span.shape;
        let positions = span.keys.len() / kv_dim;
        let mut out = vec![0.0; rows * head_dim];
        let mut stats = Vec::new();
        for r in 0..rows {
            let seen = (span.first_visible + r / group).min(positions);
            let q = &span.queries[r * head_dim..(r + 1) * head_dim];
            let scores: Vec<f64> = (0..seen)
                .map(|p| {
                    let k = &span.keys[p * kv_dim + span.kv_offset..][..head_dim];
                    q.iter()
                        .zip(k)
                        .map(|(a, b)| f64::from(*a) * f64::from(b.to_f32()))
                        .sum::<f64>()
                        * f64::from(scale)
                })
                .collect();
            let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for (p, s) in scores.iter().enumerate() {
                let w = (s - max).exp();
                sum += w;
                let v = &span.values[p * kv_dim + span.kv_offset..][..head_dim];
                for (o, v) in out[r * head_dim..(r + 1) * head_dim].iter_mut().zip(v) {
                    *o += w * f64::from(v.to_f32());
                }
            }
            stats.push((max, sum));
        }
        (out, stats)
    }

    #[test]
    fn every_path_matches_plain_softmax_attention() {
        // Head sizes on and off the lane width, row counts around the
        // block, spans some rows see only part of (causal prompt rows).
        for (head_dim, group, tokens, first_visible) in [
            (128, 6, 1, 300),
            (64, 3, 2, 5),
            (16, 4, 3, 1),
            (24, 2, 3, 7),
            (32, 5, 1, 0),
        ] {
            let kv_heads = 2;
            let kv_dim = kv_heads * head_dim;
            let positions = 40.max(first_visible.min(300));
            let half = |v: Vec<f32>| -> Vec<f16> { v.into_iter().map(f16::from_f32).collect() };
            let keys = half(noise(1, positions * kv_dim));
            let values = half(noise(2, positions * kv_dim));
            let rows = group * tokens;
            let queries = noise(3, rows * head_dim);
            let shape = AttentionShape {
                head_dim,
                kv_dim,
                group,
                scale: 1.0 / (head_dim as f32).sqrt(),
            };
            let span = Span {
                shape,
                queries: &queries,
                keys: &keys,
                values: &values,
                kv_offset: head_dim,
                first_visible,
            };
            let (want, want_stats) = reference(span, rows);
            for simd in Simd::available() {
                let mut scores = Vec::new();
                let mut out = vec![f32::NAN; rows * head_dim];
                let empty = SpanStats {
                    max: 0.0,
                    sum: -1.0,
                };
                let mut stats = vec![empty; rows];
                attend_with(simd, span, &mut scores, &mut out, &mut stats);
                for r in 0..rows {
                    let (max, sum) = want_stats[r];
                    let got = stats[r];
                    if sum == 0.0 {
                        assert_eq!(got.sum, 0.0, "{simd:?} row {r}");
                        assert!(
                            out[r * head_dim..(r + 1) * head_dim]
                                .iter()
                                .all(|&o| o == 0.0)
                        );
                        continue;
                    }
                    assert!((f64::from(got.max) - max).abs() < 1e-5, "{simd:?} row {r}");
                    assert!(
                        (f64::from(got.sum) - sum).abs() < 1e-4 * sum,
                        "{simd:?} row {r}"
                    );
                    for d in 0..head_dim {
                        let (a, b) = (f64::from(out[r * head_dim + d]), want[r * head_dim + d]);
                        assert!(
                            (a - b).abs() < 1e-4 * sum,
                            "{simd:?} {head_dim} row {r} value {d}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn sums_and_maxima_see_every_lane() {
        for n in [0, 1, 7, 8, 9, 17, 256] {
            let values: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 3.0).collect();
            let plain_max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(lane_max(&values), plain_max, "{n}");
            let plain_sum: f32 = values.iter().sum();
            assert!((lane_sum(&values) - plain_sum).abs() < 1e-3, "{n}");
        }
    }
}
