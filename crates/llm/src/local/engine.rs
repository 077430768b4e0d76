//! The transformer: a llama-architecture forward pass on candle tensors,
//! with a key/value cache that can be cut back to a shared prefix.
//!
//! candle-transformers' `quantized_llama` is the model this follows; it is
//! written out here because its cache cannot be truncated (so a new turn
//! of the same conversation would recompute the whole prompt) and its
//! weights can only be kept quantized or dequantized process-wide through
//! environment variables.

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{QMatMul, QTensor};
use candle_core::{DType, Device, IndexOp, Module, Tensor};

use super::LocalError;
use super::gguf::LlamaParams;

/// How the matrices of the transformer blocks are held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// Dequantized to f32 at load: about 4.5x the file's size in memory,
    /// and the fastest on CPUs, because candle's f32 matrix products use
    /// the CPU's vector units selected at run time (AVX2/FMA, AVX-512).
    #[default]
    F32,
    /// Kept as in the file (Q4_1, Q8_0, ...): least memory, slower.
    Quantized,
}

/// The positions rotary embeddings are precomputed for: the engine's
/// context limit whatever the model declares.
pub(crate) const MAX_POSITIONS: usize = 8192;

/// A weight matrix `(out, in)`.
struct Linear(QMatMul);

impl Linear {
    /// `x @ w^T` for `x` of shape `(1, seq, in)`.
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match &self.0 {
            // One token: a plain matrix-vector product `w @ x`.
            QMatMul::Tensor(w) if x.dim(1)? == 1 => {
                let (out, inp) = w.dims2()?;
                w.matmul(&x.reshape((inp, 1))?)?.reshape((1, 1, out))
            }
            other => other.forward(x),
        }
    }
}

struct Layer {
    attn_norm: Tensor,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    ffn_norm: Tensor,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// The weights of a model.
pub(crate) struct Weights {
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    output: Linear,
    cos: Tensor,
    sin: Tensor,
    params: LlamaParams,
    vocab: usize,
    device: Device,
}

/// Keys and values of the tokens seen so far, per layer:
/// `(1, kv_heads, len, head_dim)`.
#[derive(Clone, Default)]
pub(crate) struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvCache {
    /// Tokens in the cache.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Keeps only the first `len` tokens.
    pub(crate) fn truncate(&mut self, len: usize) -> Result<(), LocalError> {
        if len >= self.len {
            return Ok(());
        }
        if len == 0 {
            *self = KvCache::default();
            return Ok(());
        }
        for (k, v) in &mut self.layers {
            *k = k.narrow(2, 0, len)?;
            *v = v.narrow(2, 0, len)?;
        }
        self.len = len;
        Ok(())
    }
}

fn matmul(qtensor: QTensor, format: WeightFormat) -> Result<Linear, LocalError> {
    Ok(Linear(match format {
        WeightFormat::Quantized => QMatMul::from_qtensor(qtensor)?,
        WeightFormat::F32 => QMatMul::Tensor(qtensor.dequantize(&Device::Cpu)?),
    }))
}

impl Weights {
    /// Reads the tensors of a llama model.
    pub(crate) fn load<R: Read + Seek>(
        content: &Content,
        reader: &mut R,
        params: LlamaParams,
        format: WeightFormat,
    ) -> Result<Self, LocalError> {
        let device = Device::Cpu;
        let mut tensor = |name: &str| -> Result<QTensor, LocalError> {
            content
                .tensor(reader, name, &device)
                .map_err(|e| LocalError::Format(format!("tensor `{name}`: {e}")))
        };
        let dim = params.embedding_length;
        let embed_q = tensor("token_embd.weight")?;
        let embed = embed_q.dequantize(&device)?;
        let (vocab, embed_dim) = embed.dims2()?;
        if embed_dim != dim {
            return Err(LocalError::Format(format!(
                "token_embd.weight has {embed_dim} columns, expected {dim}"
            )));
        }
        let norm = tensor("output_norm.weight")?.dequantize(&device)?;
        let output = match content.tensor_infos.contains_key("output.weight") {
            true => matmul(tensor("output.weight")?, format)?,
            // Tied embeddings: the embedding matrix is the output head.
            false => match format {
                WeightFormat::F32 => Linear(QMatMul::Tensor(embed.clone())),
                WeightFormat::Quantized => matmul(embed_q, format)?,
            },
        };
        let mut layers = Vec::with_capacity(params.block_count);
        for i in 0..params.block_count {
            let mut get = |part: &str| tensor(&format!("blk.{i}.{part}.weight"));
            layers.push(Layer {
                attn_norm: get("attn_norm")?.dequantize(&device)?,
                wq: matmul(get("attn_q")?, format)?,
                wk: matmul(get("attn_k")?, format)?,
                wv: matmul(get("attn_v")?, format)?,
                wo: matmul(get("attn_output")?, format)?,
                ffn_norm: get("ffn_norm")?.dequantize(&device)?,
                gate: matmul(get("ffn_gate")?, format)?,
                up: matmul(get("ffn_up")?, format)?,
                down: matmul(get("ffn_down")?, format)?,
            });
        }
        let (cos, sin) = rope_tables(&params, &device)?;
        Ok(Self {
            embed,
            layers,
            norm,
            output,
            cos,
            sin,
            params,
            vocab,
            device,
        })
    }

    /// Vocabulary size of the embedding matrix.
    pub(crate) fn vocab(&self) -> usize {
        self.vocab
    }

    /// The model's hyper-parameters.
    pub(crate) fn params(&self) -> &LlamaParams {
        &self.params
    }

    /// Runs `tokens` after what `cache` holds and returns the logits of
    /// the last one.
    pub(crate) fn forward(
        &self,
        tokens: &[u32],
        cache: &mut KvCache,
    ) -> Result<Vec<f32>, LocalError> {
        let seq = tokens.len();
        let start = cache.len;
        if seq == 0 {
            return Err(LocalError::Engine("no tokens to run".into()));
        }
        if start + seq > MAX_POSITIONS {
            return Err(LocalError::Engine(format!(
                "position {} is past the engine's limit of {MAX_POSITIONS}",
                start + seq
            )));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= self.vocab) {
            return Err(LocalError::Engine(format!(
                "token id {bad} is out of range"
            )));
        }
        let p = &self.params;
        let head_dim = p.embedding_length / p.head_count;
        let eps = p.rms_eps as f32;
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self.embed.index_select(&ids, 0)?.unsqueeze(0)?;
        let cos = self.cos.narrow(0, start, seq)?;
        let sin = self.sin.narrow(0, start, seq)?;
        let mask = (seq > 1)
            .then(|| causal_mask(seq, start, &self.device))
            .transpose()?;
        let fresh = cache.layers.is_empty();
        for (i, layer) in self.layers.iter().enumerate() {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, eps)?;
            let q = layer
                .wq
                .forward(&h)?
                .reshape((1, seq, p.head_count, head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let k = layer
                .wk
                .forward(&h)?
                .reshape((1, seq, p.head_count_kv, head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let v = layer
                .wv
                .forward(&h)?
                .reshape((1, seq, p.head_count_kv, head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let q = candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?;
            let k = candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?;
            let (k, v) = if fresh {
                (k, v)
            } else {
                let (k_cache, v_cache) = cache
                    .layers
                    .get(i)
                    .ok_or_else(|| LocalError::Engine("the cache lost a layer".into()))?;
                (
                    Tensor::cat(&[k_cache, &k], 2)?,
                    Tensor::cat(&[v_cache, &v], 2)?,
                )
            };
            if fresh {
                cache.layers.push((k.clone(), v.clone()));
            } else if let Some(slot) = cache.layers.get_mut(i) {
                *slot = (k.clone(), v.clone());
            }
            let attn = attention(&q, &k, &v, mask.as_ref(), p, head_dim)?;
            let attn = attn
                .transpose(1, 2)?
                .reshape((1, seq, p.embedding_length))?;
            x = (layer.wo.forward(&attn)? + &x)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, eps)?;
            let gate = layer.gate.forward(&h)?.silu()?;
            let up = layer.up.forward(&h)?;
            x = (layer.down.forward(&(gate * up)?)? + &x)?;
        }
        cache.len = start + seq;
        let last = x.i((.., seq - 1.., ..))?;
        let last = candle_nn::ops::rms_norm(&last, &self.norm, eps)?;
        let logits = self.output.forward(&last)?;
        Ok(logits.flatten_all()?.to_dtype(DType::F32)?.to_vec1()?)
    }
}

fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    p: &LlamaParams,
    head_dim: usize,
) -> Result<Tensor, LocalError> {
    let groups = p.head_count / p.head_count_kv;
    let (_, _, seq, _) = q.dims4()?;
    let kv_len = k.dim(2)?;
    // Grouped-query attention without copying keys and values: the query
    // heads that share a kv head are stacked along the sequence axis.
    let q = q.reshape((1, p.head_count_kv, groups * seq, head_dim))?;
    let scale = 1.0 / (head_dim as f64).sqrt();
    let scores = (q.matmul(&k.t()?)? * scale)?;
    let scores = match mask {
        Some(mask) => {
            let scores = scores.reshape((1, p.head_count_kv, groups, seq, kv_len))?;
            scores.broadcast_add(mask)?
        }
        None => scores,
    };
    let scores = scores.reshape((1, p.head_count_kv, groups * seq, kv_len))?;
    let weights = candle_nn::ops::softmax_last_dim(&scores)?;
    let out = weights.matmul(v)?;
    Ok(out.reshape((1, p.head_count, seq, head_dim))?)
}

/// `(seq, start + seq)`: 0 where a query may look, -inf after it.
fn causal_mask(seq: usize, start: usize, device: &Device) -> Result<Tensor, LocalError> {
    let kv = start + seq;
    let data: Vec<f32> = (0..seq)
        .flat_map(|i| {
            (0..kv).map(move |j| {
                if j > start + i {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
        })
        .collect();
    Ok(Tensor::from_vec(data, (seq, kv), device)?)
}

fn rope_tables(params: &LlamaParams, device: &Device) -> Result<(Tensor, Tensor), LocalError> {
    let dim = params.rope_dim;
    let theta: Vec<f32> = (0..dim)
        .step_by(2)
        .map(|i| 1.0 / params.rope_freq_base.powf(i as f32 / dim as f32))
        .collect();
    let half = theta.len();
    let theta = Tensor::from_vec(theta, (1, half), device)?;
    let positions = Tensor::arange(0, MAX_POSITIONS as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((MAX_POSITIONS, 1))?;
    let angles = positions.broadcast_mul(&theta)?;
    Ok((angles.cos()?, angles.sin()?))
}
