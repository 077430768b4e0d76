//! Attention of a forward pass over the key/value cache: a prompt
//! chunk's as f32 matrix products per tile of queries, a few generated
//! tokens' split over spans of cached positions (the spans' kernels are
//! `kernels::attention`).

use half::f16;
use half::slice::HalfFloatSliceExt as _;
use rayon::prelude::*;

use super::super::LocalError;
use super::super::gguf::ModelParams;
use super::super::kernels::{AttentionShape, SpanStats, attend_span, merge_spans};

/// Cached positions one attention task covers when few tokens are run
/// (generation), so that a long context is split over every thread.
const ATTENTION_SPAN: usize = 256;

/// Causal grouped-query attention of a few new tokens' queries over every
/// cached position up to their own: one task per kv head and span of
/// positions, merged per head afterwards.
pub(super) fn attention(
    q: &[f32],
    keys: &[f16],
    values: &[f16],
    start: usize,
    p: &ModelParams,
    out: &mut [f32],
) {
    let dim = p.embedding_length;
    let head_dim = dim / p.head_count;
    let kv_dim = p.head_count_kv * head_dim;
    let group = p.head_count / p.head_count_kv;
    let shape = AttentionShape {
        head_dim,
        kv_dim,
        group,
        scale: 1.0 / (head_dim as f32).sqrt(),
    };
    let width = group * head_dim;
    let seq = q.len() / dim;
    let positions = keys.len() / kv_dim;
    let spans = positions.div_ceil(ATTENTION_SPAN).max(1);
    let rows = seq * group;
    let parts: Vec<(Vec<SpanStats>, Vec<f32>)> = (0..p.head_count_kv * spans)
        .into_par_iter()
        .map_init(Vec::new, |scores, task| {
            let (kv_head, span) = (task / spans, task % spans);
            let lo = span * ATTENTION_SPAN;
            let hi = (lo + ATTENTION_SPAN).min(positions);
            let queries: Vec<f32> = q
                .chunks_exact(dim)
                .flat_map(|row| row[kv_head * width..(kv_head + 1) * width].iter().copied())
                .collect();
            let mut stats = vec![
                SpanStats {
                    max: f32::NEG_INFINITY,
                    sum: 0.0,
                };
                rows
            ];
            let mut local = vec![0.0; rows * head_dim];
            attend_span(
                shape,
                &queries,
                &keys[lo * kv_dim..hi * kv_dim],
                &values[lo * kv_dim..hi * kv_dim],
                kv_head * head_dim,
                (start + 1).saturating_sub(lo),
                scores,
                &mut local,
                &mut stats,
            );
            (stats, local)
        })
        .collect();
    for (t, row) in out.chunks_exact_mut(dim).enumerate() {
        for (h, head) in row.chunks_exact_mut(head_dim).enumerate() {
            let (kv_head, r) = (h / group, t * group + h % group);
            let of_head = parts[kv_head * spans..(kv_head + 1) * spans]
                .iter()
                .map(|(stats, local)| (stats[r], &local[r * head_dim..(r + 1) * head_dim]));
            merge_spans(of_head, head);
        }
    }
}

/// Query tokens per matrix product in [`attention_batched`]: small enough
/// that little of the causal mask's upper triangle is computed and thrown
/// away, large enough for the products to run at full speed.
const BATCHED_TILE: usize = 128;

/// Buffers of one thread's [`attention_batched`] tasks, kept between
/// tasks and calls: allocated and freed per task (12 MB of scores for a
/// tile of 128 queries after 4,096 positions, three times over through
/// candle's tensors), they raised glibc's mmap threshold and the freed
/// memory stayed in the heap, 180 MB of peak memory in a long prompt.
#[derive(Default)]
struct BatchedBuffers {
    queries: Vec<f32>,
    keys: Vec<f32>,
    values: Vec<f32>,
    scores: Vec<f32>,
}

thread_local! {
    static BATCHED: std::cell::RefCell<BatchedBuffers> = std::cell::RefCell::default();
}

/// `out (m×n) = a (m×k) · b`, row-major `out` and `a`; `b`'s element
/// (i, j) at `b[i * b_rows + j * b_cols]` (so `b` may be read transposed).
fn product(
    out: &mut [f32],
    a: &[f32],
    b: &[f32],
    (m, n, k): (usize, usize, usize),
    (b_rows, b_cols): (usize, usize),
) -> Result<(), LocalError> {
    let last_b = if k == 0 || n == 0 {
        0
    } else {
        (k - 1) * b_rows + (n - 1) * b_cols + 1
    };
    if out.len() < m * n || a.len() < m * k || b.len() < last_b {
        return Err(LocalError::Engine(format!(
            "a {m}x{k} by {k}x{n} product on buffers of {}, {} and {}",
            a.len(),
            b.len(),
            out.len()
        )));
    }
    // SAFETY: the checks above keep every element `gemm` reads or writes
    // inside the three slices (rows and columns at the given strides),
    // and `out` is not aliased.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            b_cols as isize,
            b_rows as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    Ok(())
}

/// A prompt chunk's attention as f32 matrix products (scores = Q Kᵀ, then
/// softmax, then P V), per tile of query tokens and kv head.
pub(super) fn attention_batched(
    q: &[f32],
    keys: &[f16],
    values: &[f16],
    start: usize,
    p: &ModelParams,
    out: &mut [f32],
) -> Result<(), LocalError> {
    let dim = p.embedding_length;
    let head_dim = dim / p.head_count;
    let kv_dim = p.head_count_kv * head_dim;
    let group = p.head_count / p.head_count_kv;
    let width = group * head_dim;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let seq = q.len() / dim;
    let tiles = seq.div_ceil(BATCHED_TILE);
    let task = |task: usize| -> Result<(usize, usize, Vec<f32>), LocalError> {
        let (tile, kv_head) = (task / p.head_count_kv, task % p.head_count_kv);
        let first = tile * BATCHED_TILE;
        let tokens = BATCHED_TILE.min(seq - first);
        let rows = tokens * group;
        // Positions the tile's last token sees.
        let visible = start + first + tokens;
        BATCHED.with_borrow_mut(|b| {
            b.queries.clear();
            for row in q.chunks_exact(dim).skip(first).take(tokens) {
                b.queries
                    .extend_from_slice(&row[kv_head * width..(kv_head + 1) * width]);
            }
            for (cache, head) in [(keys, &mut b.keys), (values, &mut b.values)] {
                head.resize(visible * head_dim, 0.0);
                for (out, pos) in head
                    .chunks_exact_mut(head_dim)
                    .zip(cache.chunks_exact(kv_dim))
                {
                    pos[kv_head * head_dim..(kv_head + 1) * head_dim].convert_to_f32_slice(out);
                }
            }
            b.scores.resize(rows * visible, 0.0);
            // Kᵀ: element (d, position) at `keys[position * head_dim + d]`.
            product(
                &mut b.scores,
                &b.queries,
                &b.keys,
                (rows, visible, head_dim),
                (1, head_dim),
            )?;
            for (r, row) in b.scores.chunks_exact_mut(visible).enumerate() {
                let (seen, hidden) = row.split_at_mut(start + first + r / group + 1);
                hidden.fill(0.0);
                let max = seen.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                for s in seen.iter_mut() {
                    *s = crate::math::exp((*s - max) * scale);
                }
                let total: f32 = seen.iter().sum();
                let inverse = 1.0 / total;
                for s in seen.iter_mut() {
                    *s *= inverse;
                }
            }
            let mut heads = vec![0.0f32; rows * head_dim];
            product(
                &mut heads,
                &b.scores,
                &b.values,
                (rows, head_dim, visible),
                (head_dim, 1),
            )?;
            Ok((first, kv_head, heads))
        })
    };
    let results = (0..tiles * p.head_count_kv)
        .into_par_iter()
        .map(task)
        .collect::<Result<Vec<_>, _>>()?;
    for (first, kv_head, heads) in results {
        for (row, heads) in out
            .chunks_exact_mut(dim)
            .skip(first)
            .zip(heads.chunks_exact(width))
        {
            row[kv_head * width..(kv_head + 1) * width].copy_from_slice(heads);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{noise, params};
    use super::*;

    /// Softmax attention written the obvious way.
    fn reference(
        q: &[f32],
        keys: &[f32],
        values: &[f32],
        start: usize,
        p: &ModelParams,
    ) -> Vec<f32> {
        let dim = p.embedding_length;
        let hd = dim / p.head_count;
        let kv_dim = p.head_count_kv * hd;
        let group = p.head_count / p.head_count_kv;
        let mut out = vec![0.0; q.len()];
        for (t, row) in q.chunks_exact(dim).enumerate() {
            for h in 0..p.head_count {
                let qh = &row[h * hd..(h + 1) * hd];
                let off = (h / group) * hd;
                let n = start + t + 1;
                let scores: Vec<f32> = (0..n)
                    .map(|j| {
                        let k = &keys[j * kv_dim + off..j * kv_dim + off + hd];
                        qh.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() / (hd as f32).sqrt()
                    })
                    .collect();
                let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let e: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f32 = e.iter().sum();
                for (j, w) in e.iter().enumerate() {
                    for d in 0..hd {
                        out[t * dim + h * hd + d] += w / total * values[j * kv_dim + off + d];
                    }
                }
            }
        }
        out
    }

    #[test]
    fn both_attention_paths_match_plain_softmax_attention() {
        let p = params();
        let dim = p.embedding_length;
        let kv_dim = 2 * 16;
        for (start, seq) in [(0, 1), (0, 5), (700, 1), (700, 3), (0, 200), (300, 150)] {
            let q = noise(1, seq * dim);
            // The cache holds f16; the reference takes the same values.
            let keys: Vec<f16> = noise(2, (start + seq) * kv_dim)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            let values: Vec<f16> = noise(3, (start + seq) * kv_dim)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            let wide = |v: &[f16]| -> Vec<f32> { v.iter().map(|v| v.to_f32()).collect() };
            let expected = reference(&q, &wide(&keys), &wide(&values), start, &p);
            let mut few = vec![0.0; seq * dim];
            attention(&q, &keys, &values, start, &p, &mut few);
            let mut batched = vec![0.0; seq * dim];
            attention_batched(&q, &keys, &values, start, &p, &mut batched).unwrap();
            for (i, ((a, b), want)) in few.iter().zip(&batched).zip(&expected).enumerate() {
                assert!(
                    (a - want).abs() < 1e-4,
                    "start {start} seq {seq} [{i}]: spans {a} vs {want}"
                );
                assert!(
                    (b - want).abs() < 1e-4,
                    "start {start} seq {seq} [{i}]: batched {b} vs {want}"
                );
            }
        }
    }
}
