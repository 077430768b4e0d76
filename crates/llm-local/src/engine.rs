//! The transformer: a llama-architecture forward pass in plain Rust over
//! quantized matrices (see `kernels.rs`), with a key/value cache that can
//! be cut back to a shared prefix.
//!
//! candle reads the GGUF file (and dequantizes block types without a
//! kernel here); the forward pass itself is written out because a
//! 135M-parameter model is small enough that tensor-library overhead and
//! f32 weights, not arithmetic, set its speed, and because the cache must
//! be truncatable so a new turn of the same conversation does not
//! recompute the whole prompt.

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{DType, Device};
use rayon::prelude::*;
use tracing::debug;

use super::LocalError;
use super::gguf::LlamaParams;
use super::kernels::{
    Activations, Arithmetic, AttentionShape, NativeType, QMatrix, SpanStats, attend_span,
    merge_spans,
};

/// The positions the engine runs, whatever the model declares.
pub(crate) const MAX_POSITIONS: usize = 8192;

struct Layer {
    attn_norm: Vec<f32>,
    wq: QMatrix,
    wk: QMatrix,
    wv: QMatrix,
    wo: QMatrix,
    ffn_norm: Vec<f32>,
    gate: QMatrix,
    up: QMatrix,
    down: QMatrix,
}

/// The weights of a model.
pub(crate) struct Weights {
    embed: QMatrix,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    /// `None` when the output head is the embedding matrix (tied).
    output: Option<QMatrix>,
    /// Rotary frequency of each pair of a head's dimensions.
    inverse_frequencies: Vec<f32>,
    params: LlamaParams,
    hidden: usize,
}

/// Keys and values of the tokens seen so far: per layer, position after
/// position, `head_count_kv * head_dim` values each.
#[derive(Clone, Default)]
pub(crate) struct KvCache {
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    /// Values per position in each layer's keys (and values).
    width: usize,
    len: usize,
}

impl KvCache {
    /// Tokens in the cache.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keeps only the first `len` tokens.
    pub(crate) fn truncate(&mut self, len: usize) -> Result<(), LocalError> {
        if len < self.len {
            self.cut(len);
        }
        Ok(())
    }

    /// Drops every position from `len` on, in every layer, even in layers
    /// a failed call had extended past `self.len`.
    fn cut(&mut self, len: usize) {
        for layer in self.keys.iter_mut().chain(self.values.iter_mut()) {
            layer.truncate(len * self.width);
        }
        self.len = len;
    }
}

fn read_tensor<R: Read + Seek>(
    content: &Content,
    reader: &mut R,
    name: &str,
) -> Result<QTensor, LocalError> {
    content
        .tensor(reader, name, &Device::Cpu)
        .map_err(|e| LocalError::Format(format!("tensor `{name}`: {e}")))
}

fn matrix(tensor: QTensor, name: &str) -> Result<QMatrix, LocalError> {
    let (rows, cols) = tensor
        .shape()
        .dims2()
        .map_err(|_| LocalError::Format(format!("tensor `{name}` is not a matrix")))?;
    let native = match tensor.dtype() {
        GgmlDType::Q4_0 => Some(NativeType::Q4_0),
        GgmlDType::Q4_1 => Some(NativeType::Q4_1),
        GgmlDType::Q8_0 => Some(NativeType::Q8_0),
        GgmlDType::Q4K => Some(NativeType::Q4K),
        GgmlDType::Q6K => Some(NativeType::Q6K),
        GgmlDType::Q5_0 => Some(NativeType::Q5_0),
        _ => None,
    };
    let described = |e: LocalError| LocalError::Format(format!("tensor `{name}`: {e}"));
    match native {
        Some(kind) => {
            QMatrix::from_file_blocks(kind, &tensor.data()?, rows, cols).map_err(described)
        }
        None => {
            let values = tensor
                .dequantize(&Device::Cpu)?
                .flatten_all()?
                .to_dtype(DType::F32)?
                .to_vec1::<f32>()?;
            QMatrix::quantize_q8_0(&values, rows, cols).map_err(described)
        }
    }
}

fn vector(tensor: QTensor, name: &str, len: usize) -> Result<Vec<f32>, LocalError> {
    let values = tensor
        .dequantize(&Device::Cpu)?
        .flatten_all()?
        .to_dtype(DType::F32)?
        .to_vec1::<f32>()?;
    if values.len() != len {
        return Err(LocalError::Format(format!(
            "tensor `{name}` has {} values, expected {len}",
            values.len()
        )));
    }
    Ok(values)
}

fn expect_shape(m: &QMatrix, name: &str, rows: usize, cols: usize) -> Result<(), LocalError> {
    if (m.rows(), m.cols()) != (rows, cols) {
        return Err(LocalError::Format(format!(
            "tensor `{name}` is {}x{}, expected {rows}x{cols}",
            m.rows(),
            m.cols()
        )));
    }
    Ok(())
}

/// What a forward call runs, which decides its arithmetic.
///
/// Each position's keys and values must not depend on how a prompt was
/// cut into calls, or a cached prefix would give other answers than a
/// fresh one; so the choice follows what the tokens are, not how many
/// there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Prompt tokens: f32 matrix products, fastest for many tokens.
    Prompt,
    /// One generated token: 8-bit kernels, which read the fewest bytes.
    Generate,
}

/// Scratch buffers of one forward call.
#[derive(Default)]
struct Scratch {
    normed: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    attn: Vec<f32>,
    projected: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    act: Activations,
}

fn resize(buffer: &mut Vec<f32>, len: usize) {
    buffer.clear();
    buffer.resize(len, 0.0);
}

impl Weights {
    /// Reads the tensors of a llama model.
    pub(crate) fn load<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        params: LlamaParams,
    ) -> Result<Self, LocalError> {
        let dim = params.embedding_length;
        let head_dim = dim / params.head_count;
        let kv_dim = params.head_count_kv * head_dim;
        let embed = matrix(
            read_tensor(content, reader, "token_embd.weight")?,
            "token_embd.weight",
        )?;
        if embed.cols() != dim {
            return Err(LocalError::Format(format!(
                "token_embd.weight has {} columns, expected {dim}",
                embed.cols()
            )));
        }
        let norm = vector(
            read_tensor(content, reader, "output_norm.weight")?,
            "output_norm.weight",
            dim,
        )?;
        let output = match content.tensor_infos.contains_key("output.weight") {
            true => {
                let m = matrix(
                    read_tensor(content, reader, "output.weight")?,
                    "output.weight",
                )?;
                expect_shape(&m, "output.weight", m.rows(), dim)?;
                Some(m)
            }
            false => None,
        };
        let mut layers = Vec::with_capacity(params.block_count);
        let mut hidden = 0;
        for i in 0..params.block_count {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            let mut get_matrix = |part: &str| -> Result<QMatrix, LocalError> {
                let name = name(part);
                matrix(read_tensor(content, reader, &name)?, &name)
            };
            let layer = Layer {
                wq: get_matrix("attn_q")?,
                wk: get_matrix("attn_k")?,
                wv: get_matrix("attn_v")?,
                wo: get_matrix("attn_output")?,
                gate: get_matrix("ffn_gate")?,
                up: get_matrix("ffn_up")?,
                down: get_matrix("ffn_down")?,
                attn_norm: vector(
                    read_tensor(content, reader, &name("attn_norm"))?,
                    &name("attn_norm"),
                    dim,
                )?,
                ffn_norm: vector(
                    read_tensor(content, reader, &name("ffn_norm"))?,
                    &name("ffn_norm"),
                    dim,
                )?,
            };
            hidden = layer.gate.rows();
            expect_shape(&layer.wq, &name("attn_q"), dim, dim)?;
            expect_shape(&layer.wk, &name("attn_k"), kv_dim, dim)?;
            expect_shape(&layer.wv, &name("attn_v"), kv_dim, dim)?;
            expect_shape(&layer.wo, &name("attn_output"), dim, dim)?;
            expect_shape(&layer.gate, &name("ffn_gate"), hidden, dim)?;
            expect_shape(&layer.up, &name("ffn_up"), hidden, dim)?;
            expect_shape(&layer.down, &name("ffn_down"), dim, hidden)?;
            layers.push(layer);
        }
        let inverse_frequencies = (0..params.rope_dim)
            .step_by(2)
            .map(|i| {
                1.0 / params
                    .rope_freq_base
                    .powf(i as f32 / params.rope_dim as f32)
            })
            .collect();
        let weights = Self {
            embed,
            layers,
            norm,
            output,
            inverse_frequencies,
            params,
            hidden,
        };
        debug!(
            megabytes = weights.memory_bytes() / 1_000_000,
            "weights loaded"
        );
        Ok(weights)
    }

    fn memory_bytes(&self) -> usize {
        let layers: usize = self
            .layers
            .iter()
            .map(|l| {
                [&l.wq, &l.wk, &l.wv, &l.wo, &l.gate, &l.up, &l.down]
                    .iter()
                    .map(|m| m.memory_bytes())
                    .sum::<usize>()
            })
            .sum();
        layers + self.embed.memory_bytes() + self.output.as_ref().map_or(0, QMatrix::memory_bytes)
    }

    /// Vocabulary size of the output head.
    pub(crate) fn vocab(&self) -> usize {
        self.head().rows()
    }

    fn head(&self) -> &QMatrix {
        self.output.as_ref().unwrap_or(&self.embed)
    }

    /// The model's hyper-parameters.
    pub(crate) fn params(&self) -> &LlamaParams {
        &self.params
    }

    /// Runs `tokens` after what `cache` holds and returns the logits of
    /// the last one. On an error the cache is left as it was.
    pub(crate) fn forward(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
        pass: Pass,
    ) -> Result<Vec<f32>, LocalError> {
        let start = cache.len;
        if tokens.is_empty() {
            return Err(LocalError::Engine("no tokens to run".into()));
        }
        if start + tokens.len() > MAX_POSITIONS {
            return Err(LocalError::Engine(format!(
                "position {} is past the engine's limit of {MAX_POSITIONS}",
                start + tokens.len()
            )));
        }
        let embedded_rows = self.embed.rows();
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= embedded_rows) {
            return Err(LocalError::Engine(format!(
                "token id {bad} is out of range"
            )));
        }
        let result = self.run(tokens, cache, pass);
        if result.is_err() {
            cache.cut(start);
        }
        result
    }

    fn run(&self, tokens: &[u32], cache: &mut KvCache, pass: Pass) -> Result<Vec<f32>, LocalError> {
        let arithmetic = match pass {
            Pass::Prompt => Arithmetic::F32,
            Pass::Generate => Arithmetic::Int8,
        };
        let p = &self.params;
        let seq = tokens.len();
        let start = cache.len;
        let dim = p.embedding_length;
        let head_dim = dim / p.head_count;
        let kv_dim = p.head_count_kv * head_dim;
        let eps = p.rms_eps as f32;
        if cache.keys.len() != self.layers.len() {
            *cache = KvCache {
                keys: vec![Vec::new(); self.layers.len()],
                values: vec![Vec::new(); self.layers.len()],
                width: kv_dim,
                len: 0,
            };
        }

        let mut x = vec![0.0f32; seq * dim];
        for (&token, row) in tokens.iter().zip(x.chunks_exact_mut(dim)) {
            self.embed.row(token as usize, row)?;
        }
        let rotary = self.rotary(start, seq);
        let mut s = Scratch::default();
        for (i, layer) in self.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, eps, dim, &mut s.normed);
            s.act.set(&s.normed, dim, arithmetic)?;
            resize(&mut s.q, seq * dim);
            resize(&mut s.k, seq * kv_dim);
            resize(&mut s.v, seq * kv_dim);
            layer.wq.matmul(&s.act, &mut s.q)?;
            layer.wk.matmul(&s.act, &mut s.k)?;
            layer.wv.matmul(&s.act, &mut s.v)?;
            rotate(&mut s.q, &rotary, head_dim);
            rotate(&mut s.k, &rotary, head_dim);
            let (keys, values) = match (cache.keys.get_mut(i), cache.values.get_mut(i)) {
                (Some(k), Some(v)) => (k, v),
                _ => return Err(LocalError::Engine("the cache lost a layer".into())),
            };
            keys.extend_from_slice(&s.k);
            values.extend_from_slice(&s.v);
            resize(&mut s.attn, seq * dim);
            if pass == Pass::Prompt {
                attention_batched(&s.q, keys, values, start, p, &mut s.attn)?;
            } else {
                attention(&s.q, keys, values, start, p, &mut s.attn);
            }
            s.act.set(&s.attn, dim, arithmetic)?;
            resize(&mut s.projected, seq * dim);
            layer.wo.matmul(&s.act, &mut s.projected)?;
            add(&mut x, &s.projected);

            rms_norm(&x, &layer.ffn_norm, eps, dim, &mut s.normed);
            s.act.set(&s.normed, dim, arithmetic)?;
            resize(&mut s.gate, seq * self.hidden);
            resize(&mut s.up, seq * self.hidden);
            layer.gate.matmul(&s.act, &mut s.gate)?;
            layer.up.matmul(&s.act, &mut s.up)?;
            for (g, u) in s.gate.iter_mut().zip(&s.up) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            s.act.set(&s.gate, self.hidden, arithmetic)?;
            layer.down.matmul(&s.act, &mut s.projected)?;
            add(&mut x, &s.projected);
        }
        cache.len = start + seq;

        let last = &x[(seq - 1) * dim..];
        rms_norm(last, &self.norm, eps, dim, &mut s.normed);
        // One token, whatever the pass: the head's f32 copy would cost more
        // than the product, and logits are not cached.
        s.act.set(&s.normed, dim, Arithmetic::Int8)?;
        let head = self.head();
        let mut logits = vec![0.0f32; head.rows()];
        head.matmul(&s.act, &mut logits)?;
        Ok(logits)
    }

    /// `(cos, sin)` of every position and dimension pair.
    fn rotary(&self, start: usize, seq: usize) -> Vec<(f32, f32)> {
        (start..start + seq)
            .flat_map(|position| {
                self.inverse_frequencies.iter().map(move |f| {
                    let angle = position as f32 * f;
                    (angle.cos(), angle.sin())
                })
            })
            .collect()
    }
}

/// Root-mean-square normalisation of each `dim`-sized row, times `weight`.
fn rms_norm(x: &[f32], weight: &[f32], eps: f32, dim: usize, out: &mut Vec<f32>) {
    resize(out, x.len());
    for (row, out) in x.chunks_exact(dim).zip(out.chunks_exact_mut(dim)) {
        let mean_square = row.iter().map(|v| v * v).sum::<f32>() / dim as f32;
        let scale = 1.0 / (mean_square + eps).sqrt();
        for ((o, v), w) in out.iter_mut().zip(row).zip(weight) {
            *o = v * scale * w;
        }
    }
}

fn add(x: &mut [f32], delta: &[f32]) {
    for (a, b) in x.iter_mut().zip(delta) {
        *a += b;
    }
}

/// Rotary embedding of adjacent pairs (GGUF llama's layout) of every
/// head of every token; `rotary` holds one row per token.
fn rotate(x: &mut [f32], rotary: &[(f32, f32)], head_dim: usize) {
    let pairs = head_dim / 2;
    let tokens = rotary.len() / pairs.max(1);
    if tokens == 0 {
        return;
    }
    let per_token = x.len() / tokens;
    for (row, angles) in x
        .chunks_exact_mut(per_token)
        .zip(rotary.chunks_exact(pairs))
    {
        for head in row.chunks_exact_mut(head_dim) {
            for (pair, &(cos, sin)) in head.chunks_exact_mut(2).zip(angles) {
                let (a, b) = (pair[0], pair[1]);
                pair[0] = a * cos - b * sin;
                pair[1] = a * sin + b * cos;
            }
        }
    }
}

/// Cached positions one attention task covers when few tokens are run
/// (generation), so that a long context is split over every thread.
const ATTENTION_SPAN: usize = 256;

/// Causal grouped-query attention of a few new tokens' queries over every
/// cached position up to their own: one task per kv head and span of
/// positions, merged per head afterwards.
fn attention(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    start: usize,
    p: &LlamaParams,
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

/// A prompt chunk's attention as f32 matrix products (scores = Q Kᵀ, then
/// softmax, then P V), per tile of query tokens and kv head.
fn attention_batched(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    start: usize,
    p: &LlamaParams,
    out: &mut [f32],
) -> Result<(), LocalError> {
    use candle_core::Tensor;
    let dim = p.embedding_length;
    let head_dim = dim / p.head_count;
    let kv_dim = p.head_count_kv * head_dim;
    let group = p.head_count / p.head_count_kv;
    let width = group * head_dim;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let seq = q.len() / dim;
    let tiles = seq.div_ceil(BATCHED_TILE);
    let results = (0..tiles * p.head_count_kv)
        .into_par_iter()
        .map(|task| -> Result<(usize, usize, Vec<f32>), LocalError> {
            let (tile, kv_head) = (task / p.head_count_kv, task % p.head_count_kv);
            let first = tile * BATCHED_TILE;
            let tokens = BATCHED_TILE.min(seq - first);
            // Positions the tile's last token sees.
            let visible = start + first + tokens;
            let queries: Vec<f32> = q
                .chunks_exact(dim)
                .skip(first)
                .take(tokens)
                .flat_map(|row| row[kv_head * width..(kv_head + 1) * width].iter().copied())
                .collect();
            let head_of = |cache: &[f32]| -> Vec<f32> {
                cache
                    .chunks_exact(kv_dim)
                    .take(visible)
                    .flat_map(|pos| {
                        pos[kv_head * head_dim..(kv_head + 1) * head_dim]
                            .iter()
                            .copied()
                    })
                    .collect()
            };
            let device = &Device::Cpu;
            let k = Tensor::from_vec(head_of(keys), (visible, head_dim), device)?;
            let v = Tensor::from_vec(head_of(values), (visible, head_dim), device)?;
            let queries = Tensor::from_vec(queries, (tokens * group, head_dim), device)?;
            let mut scores = queries.matmul(&k.t()?)?.flatten_all()?.to_vec1::<f32>()?;
            for (r, row) in scores.chunks_exact_mut(visible).enumerate() {
                let (seen, hidden) = row.split_at_mut(start + first + r / group + 1);
                hidden.fill(0.0);
                let max = seen.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut total = 0.0;
                for s in seen.iter_mut() {
                    *s = ((*s - max) * scale).exp();
                    total += *s;
                }
                let inverse = 1.0 / total;
                for s in seen.iter_mut() {
                    *s *= inverse;
                }
            }
            let probabilities = Tensor::from_vec(scores, (tokens * group, visible), device)?;
            let heads = probabilities.matmul(&v)?.flatten_all()?.to_vec1::<f32>()?;
            Ok((first, kv_head, heads))
        })
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
    use super::*;

    fn params() -> LlamaParams {
        LlamaParams {
            block_count: 1,
            embedding_length: 6 * 16,
            head_count: 6,
            head_count_kv: 2,
            rope_dim: 16,
            rope_freq_base: 10_000.0,
            rms_eps: 1e-5,
            context_length: 4096,
        }
    }

    fn noise(seed: u32, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = (i as u32)
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(seed.wrapping_mul(97));
                ((x >> 8) % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// Softmax attention written the obvious way.
    fn reference(
        q: &[f32],
        keys: &[f32],
        values: &[f32],
        start: usize,
        p: &LlamaParams,
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
            let keys = noise(2, (start + seq) * kv_dim);
            let values = noise(3, (start + seq) * kv_dim);
            let expected = reference(&q, &keys, &values, start, &p);
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
