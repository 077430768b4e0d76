//! The transformer: the forward pass of llama- and qwen2-architecture
//! models in plain Rust over quantized matrices (see `kernels.rs`), with a
//! key/value cache that can be cut back to a shared prefix.
//!
//! The two architectures differ only in q/k/v biases (qwen2; added when
//! the file has them) and in which dimensions a rotary embedding pairs
//! ([`RopeStyle`]).
//!
//! candle parses the GGUF header (and dequantizes block types without a
//! kernel here); tensors are read here ([`TensorFile`]); the forward pass itself is written out because a
//! 135M-parameter model is small enough that tensor-library overhead and
//! f32 weights, not arithmetic, set its speed, and because the cache must
//! be truncatable so a new turn of the same conversation does not
//! recompute the whole prompt.

use std::fs::File;
use std::os::unix::fs::FileExt as _;

use candle_core::quantized::GgmlDType;
use candle_core::quantized::ggml_file::qtensor_from_ggml;
use candle_core::quantized::gguf_file::Content;
use candle_core::{DType, Device};
use half::f16;
use half::slice::HalfFloatSliceExt as _;
use rayon::prelude::*;
use tracing::{debug, warn};

use super::LocalError;
use super::gguf::{ModelParams, RopeStyle};
use super::kernels::{Activations, Grain, NativeType, QMatrix};
use super::repacked::{Repacked, Writer};

mod attention;

use attention::{attention, attention_batched};

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
    /// Biases added to the q, k and v projections (qwen2), if any.
    bq: Option<Vec<f32>>,
    bk: Option<Vec<f32>>,
    bv: Option<Vec<f32>>,
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
    params: ModelParams,
    hidden: usize,
    /// Positions a cache may hold (the context window).
    max_positions: usize,
    /// The buffers of the last forward call, kept for the next: a
    /// prompt chunk's are tens of megabytes, and fresh ones cost a page
    /// fault per 4 KiB and a fill with zeros per layer.
    scratch: std::sync::Mutex<Scratch>,
}

/// Keys and values of the tokens seen so far: per layer, position after
/// position, `head_count_kv * head_dim` values each, in f16 (as llama.cpp
/// keeps them): half the memory of f32, and half the bytes a generated
/// token's attention reads (235 MB per token after 4,096 positions of
/// Qwen2.5-1.5B in f32). The prompt and generation paths read the same
/// rounded values.
#[derive(Clone, Default)]
pub(crate) struct KvCache {
    keys: Vec<Vec<f16>>,
    values: Vec<Vec<f16>>,
    /// Values per position in each layer's keys (and values).
    width: usize,
    len: usize,
    /// Positions [`KvCache::reserve`] asked room for.
    reserved: usize,
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

    /// A cache of `len` positions in one layer, each position's values
    /// all equal to its index (for tests of what is kept).
    #[cfg(test)]
    pub(crate) fn numbered(len: usize) -> KvCache {
        let layer: Vec<f16> = (0..len)
            .flat_map(|i| [f16::from_f32(i as f32); 2])
            .collect();
        KvCache {
            keys: vec![layer.clone()],
            values: vec![layer],
            width: 2,
            len,
            reserved: 0,
        }
    }

    /// The first value of each position of the first layer's keys.
    #[cfg(test)]
    pub(crate) fn positions(&self) -> Vec<f32> {
        self.keys
            .first()
            .map(|layer| {
                layer
                    .iter()
                    .step_by(self.width)
                    .map(|v| v.to_f32())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Makes room for `positions` positions in all (within the layers the
    /// cache has; a fresh cache gets its layers on the first forward call,
    /// which reserves then).
    pub(crate) fn reserve(&mut self, positions: usize) {
        let want = positions * self.width;
        for layer in self.keys.iter_mut().chain(self.values.iter_mut()) {
            layer.reserve_exact(want.saturating_sub(layer.len()));
        }
        self.reserved = self.reserved.max(positions);
    }

    /// A copy of the first `len` tokens (all of them if there are fewer).
    pub(crate) fn prefix(&self, len: usize) -> KvCache {
        let len = len.min(self.len);
        let copy = |layers: &[Vec<f16>]| -> Vec<Vec<f16>> {
            layers
                .iter()
                .map(|layer| layer.get(..len * self.width).unwrap_or(layer).to_vec())
                .collect()
        };
        KvCache {
            keys: copy(&self.keys),
            values: copy(&self.values),
            width: self.width,
            len,
            reserved: 0,
        }
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

/// The tensors of an open GGUF file, read by name.
///
/// Each tensor is read with one positioned read into a buffer of its own
/// size (from the page cache, about 0.1 s per GB) and then converted once
/// into the engine's blocks; no copy of the whole file is kept. Tensors
/// are read and converted in parallel. The interleaved K-quant matrices
/// come from the file of repacked weights when there is one
/// ([`Repacking`]).
pub(crate) struct TensorFile<'a> {
    content: &'a Content,
    file: &'a File,
    file_len: u64,
    repacking: Repacking,
}

/// What a load does with the file of repacked weights
/// ([`crate::repacked`]).
pub(crate) enum Repacking {
    /// Interleaves the K-quant matrices in memory.
    Off,
    /// Maps the K-quant matrices from this file.
    Use(Repacked),
    /// Interleaves them and writes them to this file.
    Write(Writer),
}

/// A tensor's bytes, as stored in the file.
struct RawTensor {
    dtype: GgmlDType,
    /// Dimensions, outermost first (candle's order: rows, then columns).
    dims: Vec<usize>,
    bytes: Vec<u8>,
}

impl RawTensor {
    fn dtype(&self) -> GgmlDType {
        self.dtype
    }

    fn dims2(&self, name: &str) -> Result<(usize, usize), LocalError> {
        match self.dims[..] {
            [rows, cols] => Ok((rows, cols)),
            _ => Err(LocalError::Format(format!(
                "tensor `{name}` is not a matrix"
            ))),
        }
    }

    /// The values of the tensor, dequantized by candle.
    fn dequantize(&self) -> Result<Vec<f32>, LocalError> {
        Ok(
            qtensor_from_ggml(self.dtype, &self.bytes, self.dims.clone(), &Device::Cpu)?
                .dequantize(&Device::Cpu)?
                .flatten_all()?
                .to_dtype(DType::F32)?
                .to_vec1::<f32>()?,
        )
    }
}

impl<'a> TensorFile<'a> {
    /// The tensors `content` (read from `file`) describes.
    pub(crate) fn new(content: &'a Content, file: &'a File) -> Result<Self, LocalError> {
        let file_len = file
            .metadata()
            .map_err(|e| LocalError::Format(format!("cannot stat the file: {e}")))?
            .len();
        Ok(Self {
            content,
            file,
            file_len,
            repacking: Repacking::Off,
        })
    }

    /// Takes the K-quant matrices from, or writes them to, a file of
    /// repacked weights.
    pub(crate) fn with_repacking(mut self, repacking: Repacking) -> Self {
        self.repacking = repacking;
        self
    }

    /// Ends the load: renames a file of repacked weights being written
    /// into place. Whether the weights were mapped from one: the load is
    /// fast then.
    pub(crate) fn finish(self) -> bool {
        match self.repacking {
            Repacking::Off => false,
            Repacking::Use(_) => true,
            Repacking::Write(writer) => {
                if let Err(error) = writer.finish() {
                    warn!(%error, "cannot keep the repacked weights; the next load interleaves them again");
                }
                false
            }
        }
    }

    fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    fn read(&self, name: &str) -> Result<RawTensor, LocalError> {
        let failed = |what: String| LocalError::Format(format!("tensor `{name}`: {what}"));
        let info = self
            .content
            .tensor_infos
            .get(name)
            .ok_or_else(|| failed("missing".into()))?;
        let dtype = info.ggml_dtype;
        let dims = info.shape.dims().to_vec();
        let elements = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| failed(format!("impossible shape {dims:?}")))?;
        let (block, block_bytes) = (dtype.block_size(), dtype.type_size());
        if block == 0 || !elements.is_multiple_of(block) {
            return Err(failed(format!(
                "{elements} values are not whole blocks of {block} ({dtype:?})"
            )));
        }
        let len = (elements / block)
            .checked_mul(block_bytes)
            .ok_or_else(|| failed(format!("impossible shape {dims:?}")))?;
        let start = self
            .content
            .tensor_data_offset
            .checked_add(info.offset)
            .filter(|&start| {
                start
                    .checked_add(len as u64)
                    .is_some_and(|end| end <= self.file_len)
            })
            .ok_or_else(|| {
                failed(format!(
                    "{len} bytes at offset {} are past the end of the file ({} bytes)",
                    info.offset, self.file_len
                ))
            })?;
        let mut bytes = vec![0u8; len];
        self.file
            .read_exact_at(&mut bytes, start)
            .map_err(|e| failed(format!("cannot read: {e}")))?;
        Ok(RawTensor { dtype, dims, bytes })
    }

    pub(crate) fn matrix(&self, name: &str) -> Result<QMatrix, LocalError> {
        if let Repacking::Use(repacked) = &self.repacking
            && let Some(matrix) = repacked.matrix(self.content, name)
        {
            return Ok(matrix);
        }
        let matrix = matrix(self.read(name)?, name)?;
        if let Repacking::Write(writer) = &self.repacking {
            writer.add(name, &matrix);
        }
        Ok(matrix)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>, LocalError> {
        vector(self.read(name)?, name, len)
    }

    /// The vector `name`, or `None` when the file has no such tensor.
    fn optional_vector(&self, name: &str, len: usize) -> Result<Option<Vec<f32>>, LocalError> {
        match self.has(name) {
            true => self.vector(name, len).map(Some),
            false => Ok(None),
        }
    }
}

fn matrix(tensor: RawTensor, name: &str) -> Result<QMatrix, LocalError> {
    let (rows, cols) = tensor.dims2(name)?;
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
            // The tensor's own buffer, shared: the K-quant blocks are used
            // where the read put them, with no second copy.
            let len = tensor.bytes.len();
            let bytes: std::sync::Arc<dyn AsRef<[u8]> + Send + Sync> =
                std::sync::Arc::new(tensor.bytes);
            QMatrix::from_shared_blocks(kind, bytes, 0..len, rows, cols).map_err(described)
        }
        None => {
            let values = dequantize_rows(&tensor, rows, cols).map_err(described)?;
            QMatrix::quantize_q8_0(&values, rows, cols).map_err(described)
        }
    }
}

/// Rows dequantized per task of [`dequantize_rows`].
const DEQUANTIZE_ROWS: usize = 256;

/// A block type without a kernel, dequantized to f32 (for requantizing to
/// Q8_0) by candle, in parallel over chunks of rows.
fn dequantize_rows(tensor: &RawTensor, rows: usize, cols: usize) -> Result<Vec<f32>, LocalError> {
    let (block, block_bytes) = (tensor.dtype.block_size(), tensor.dtype.type_size());
    if block == 0
        || cols == 0
        || !cols.is_multiple_of(block)
        || tensor.bytes.len() != rows * cols / block * block_bytes
    {
        return Err(LocalError::Format(format!(
            "a {rows}x{cols} {:?} matrix in {} bytes",
            tensor.dtype,
            tensor.bytes.len()
        )));
    }
    let row_bytes = cols / block * block_bytes;
    let mut values = vec![0.0f32; rows * cols];
    values
        .par_chunks_mut(DEQUANTIZE_ROWS * cols)
        .zip(tensor.bytes.par_chunks(DEQUANTIZE_ROWS * row_bytes))
        .try_for_each(|(out, bytes)| -> Result<(), LocalError> {
            let chunk = RawTensor {
                dtype: tensor.dtype,
                dims: vec![out.len() / cols, cols],
                bytes: bytes.to_vec(),
            };
            out.copy_from_slice(&chunk.dequantize()?);
            Ok(())
        })?;
    Ok(values)
}

fn vector(tensor: RawTensor, name: &str, len: usize) -> Result<Vec<f32>, LocalError> {
    let values = match tensor.dtype {
        GgmlDType::F32 => tensor
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        _ => tensor.dequantize()?,
    };
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

/// What a forward call runs, which decides how attention is computed.
///
/// Each position's keys and values must not depend on how a prompt was
/// cut into calls, or a cached prefix would give other answers than a
/// fresh one; so the choice follows what the tokens are, not how many
/// there are. (The matrix products give a token the same bits whether it
/// is multiplied alone or with others.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Prompt tokens: attention as f32 matrix products over the chunk.
    Prompt,
    /// One generated token: attention split over spans of the cache.
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

/// `buffer` at `len` values, keeping what it held: every caller
/// overwrites all of them.
fn resize(buffer: &mut Vec<f32>, len: usize) {
    buffer.resize(len, 0.0);
}

impl Weights {
    /// Reads the tensors of a model.
    pub(crate) fn load(tensors: &TensorFile<'_>, params: ModelParams) -> Result<Self, LocalError> {
        let dim = params.embedding_length;
        let kv_dim = params.kv_dim();
        let embed = tensors.matrix("token_embd.weight")?;
        if embed.cols() != dim {
            return Err(LocalError::Format(format!(
                "token_embd.weight has {} columns, expected {dim}",
                embed.cols()
            )));
        }
        let norm = tensors.vector("output_norm.weight", dim)?;
        let output = match tensors.has("output.weight") {
            true => {
                let m = tensors.matrix("output.weight")?;
                expect_shape(&m, "output.weight", m.rows(), dim)?;
                Some(m)
            }
            false => None,
        };
        let layers = (0..params.block_count)
            .into_par_iter()
            .map(|i| Self::load_layer(tensors, &params, i))
            .collect::<Result<Vec<_>, _>>()?;
        let hidden = layers.first().map_or(0, |l| l.gate.rows());
        for (i, layer) in layers.iter().enumerate() {
            let name = |part: &str| format!("blk.{i}.{part}.weight");
            expect_shape(&layer.wq, &name("attn_q"), dim, dim)?;
            expect_shape(&layer.wk, &name("attn_k"), kv_dim, dim)?;
            expect_shape(&layer.wv, &name("attn_v"), kv_dim, dim)?;
            expect_shape(&layer.wo, &name("attn_output"), dim, dim)?;
            expect_shape(&layer.gate, &name("ffn_gate"), hidden, dim)?;
            expect_shape(&layer.up, &name("ffn_up"), hidden, dim)?;
            expect_shape(&layer.down, &name("ffn_down"), dim, hidden)?;
        }
        if let Some(declared) = params.feed_forward_length
            && !layers.is_empty()
            && declared != hidden
        {
            return Err(LocalError::Format(format!(
                "the feed-forward tensors have {hidden} rows, the metadata says {declared}"
            )));
        }
        let inverse_frequencies = inverse_frequencies(&params);
        let weights = Self {
            embed,
            layers,
            norm,
            output,
            inverse_frequencies,
            params,
            hidden,
            max_positions: usize::MAX,
            scratch: std::sync::Mutex::default(),
        };
        debug!(
            megabytes = weights.memory_bytes() / 1_000_000,
            "weights loaded"
        );
        Ok(weights)
    }

    fn load_layer(
        tensors: &TensorFile<'_>,
        params: &ModelParams,
        i: usize,
    ) -> Result<Layer, LocalError> {
        let dim = params.embedding_length;
        let kv_dim = params.kv_dim();
        let weight = |part: &str| format!("blk.{i}.{part}.weight");
        let bias = |part: &str| format!("blk.{i}.{part}.bias");
        Ok(Layer {
            wq: tensors.matrix(&weight("attn_q"))?,
            wk: tensors.matrix(&weight("attn_k"))?,
            wv: tensors.matrix(&weight("attn_v"))?,
            wo: tensors.matrix(&weight("attn_output"))?,
            gate: tensors.matrix(&weight("ffn_gate"))?,
            up: tensors.matrix(&weight("ffn_up"))?,
            down: tensors.matrix(&weight("ffn_down"))?,
            attn_norm: tensors.vector(&weight("attn_norm"), dim)?,
            ffn_norm: tensors.vector(&weight("ffn_norm"), dim)?,
            bq: tensors.optional_vector(&bias("attn_q"), dim)?,
            bk: tensors.optional_vector(&bias("attn_k"), kv_dim)?,
            bv: tensors.optional_vector(&bias("attn_v"), kv_dim)?,
        })
    }

    /// Limits the positions [`Weights::forward`] runs (the context window).
    pub(crate) fn set_max_positions(&mut self, positions: usize) {
        self.max_positions = positions;
    }

    /// Bytes the key/value cache takes per position.
    pub(crate) fn kv_bytes_per_position(&self) -> usize {
        self.layers.len() * 2 * self.params.kv_dim() * std::mem::size_of::<f16>()
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
    pub(crate) fn params(&self) -> &ModelParams {
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
        if start + tokens.len() > self.max_positions {
            return Err(LocalError::Engine(format!(
                "position {} is past the context window of {} positions",
                start + tokens.len(),
                self.max_positions
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
        let p = &self.params;
        let seq = tokens.len();
        let start = cache.len;
        let dim = p.embedding_length;
        let head_dim = dim / p.head_count;
        let kv_dim = p.head_count_kv * head_dim;
        let eps = p.rms_eps as f32;
        if cache.keys.len() != self.layers.len() {
            let reserved = cache.reserved.min(self.max_positions);
            *cache = KvCache {
                keys: vec![Vec::new(); self.layers.len()],
                values: vec![Vec::new(); self.layers.len()],
                width: kv_dim,
                len: 0,
                reserved: 0,
            };
            cache.reserve(reserved.max(start + seq));
        }

        let mut x = vec![0.0f32; seq * dim];
        for (&token, row) in tokens.iter().zip(x.chunks_exact_mut(dim)) {
            self.embed.row(token as usize, row)?;
        }
        let rotary = self.rotary(start, seq);
        let mut scratch = self
            .scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let s = &mut *scratch;
        for (i, layer) in self.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, eps, dim, &mut s.normed);
            let grains = grains_of(&[&layer.wq, &layer.wk, &layer.wv]);
            s.act.set_grains(&s.normed, dim, &grains)?;
            resize(&mut s.q, seq * dim);
            resize(&mut s.k, seq * kv_dim);
            resize(&mut s.v, seq * kv_dim);
            QMatrix::matmul_all(
                &s.act,
                vec![
                    (&layer.wq, &mut s.q),
                    (&layer.wk, &mut s.k),
                    (&layer.wv, &mut s.v),
                ],
            )?;
            add_bias(&mut s.q, layer.bq.as_deref());
            add_bias(&mut s.k, layer.bk.as_deref());
            add_bias(&mut s.v, layer.bv.as_deref());
            rotate(&mut s.q, &rotary, head_dim, p.rope_style);
            rotate(&mut s.k, &rotary, head_dim, p.rope_style);
            let (keys, values) = match (cache.keys.get_mut(i), cache.values.get_mut(i)) {
                (Some(k), Some(v)) => (k, v),
                _ => return Err(LocalError::Engine("the cache lost a layer".into())),
            };
            append_f16(keys, &s.k);
            append_f16(values, &s.v);
            resize(&mut s.attn, seq * dim);
            if pass == Pass::Prompt {
                attention_batched(&s.q, keys, values, start, p, &mut s.attn)?;
            } else {
                attention(&s.q, keys, values, start, p, &mut s.attn);
            }
            s.act.set_grains(&s.attn, dim, &[layer.wo.grain()])?;
            resize(&mut s.projected, seq * dim);
            layer.wo.matmul(&s.act, &mut s.projected)?;
            add(&mut x, &s.projected);

            rms_norm(&x, &layer.ffn_norm, eps, dim, &mut s.normed);
            let grains = grains_of(&[&layer.gate, &layer.up]);
            s.act.set_grains(&s.normed, dim, &grains)?;
            resize(&mut s.gate, seq * self.hidden);
            resize(&mut s.up, seq * self.hidden);
            QMatrix::matmul_all(
                &s.act,
                vec![(&layer.gate, &mut s.gate), (&layer.up, &mut s.up)],
            )?;
            swiglu(&mut s.gate, &s.up);
            s.act
                .set_grains(&s.gate, self.hidden, &[layer.down.grain()])?;
            layer.down.matmul(&s.act, &mut s.projected)?;
            add(&mut x, &s.projected);
        }
        cache.len = start + seq;

        let last = &x[(seq - 1) * dim..];
        rms_norm(last, &self.norm, eps, dim, &mut s.normed);
        let head = self.head();
        s.act.set_grains(&s.normed, dim, &[head.grain()])?;
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

/// Values from which the element-wise passes of a forward pass are split
/// over threads: a prompt chunk's (millions of values, `exp` in SwiGLU)
/// took a tenth of its wall time on one thread while the other waited;
/// one generated token's (a few thousand) are not worth a task.
const PARALLEL_VALUES: usize = 1 << 15;

/// `values` rounded to f16 at the end of `cache`.
fn append_f16(cache: &mut Vec<f16>, values: &[f32]) {
    let at = cache.len();
    cache.resize(at + values.len(), f16::ZERO);
    cache[at..].convert_from_f32_slice(values);
}

/// The activation grains a set of matrices sharing one input needs.
fn grains_of(matrices: &[&QMatrix]) -> Vec<Grain> {
    let mut grains: Vec<Grain> = matrices.iter().map(|m| m.grain()).collect();
    grains.dedup();
    grains
}

/// Root-mean-square normalisation of each `dim`-sized row, times `weight`.
fn rms_norm(x: &[f32], weight: &[f32], eps: f32, dim: usize, out: &mut Vec<f32>) {
    resize(out, x.len());
    let one = |(row, out): (&[f32], &mut [f32])| {
        let mean_square = row.iter().map(|v| v * v).sum::<f32>() / dim as f32;
        let scale = 1.0 / (mean_square + eps).sqrt();
        for ((o, v), w) in out.iter_mut().zip(row).zip(weight) {
            *o = v * scale * w;
        }
    };
    if x.len() < PARALLEL_VALUES {
        x.chunks_exact(dim)
            .zip(out.chunks_exact_mut(dim))
            .for_each(one);
    } else {
        x.par_chunks_exact(dim)
            .zip(out.par_chunks_exact_mut(dim))
            .for_each(one);
    }
}

fn add(x: &mut [f32], delta: &[f32]) {
    in_pieces(x, delta, |x, delta| {
        for (a, b) in x.iter_mut().zip(delta) {
            *a += b;
        }
    });
}

/// `gate = silu(gate) * up`, element by element.
fn swiglu(gate: &mut [f32], up: &[f32]) {
    in_pieces(gate, up, crate::math::swiglu);
}

/// `one` over matching pieces of `out` and `input`: on every thread when
/// they are large (a prompt chunk), in place otherwise (one token).
fn in_pieces(out: &mut [f32], input: &[f32], one: impl Fn(&mut [f32], &[f32]) + Sync) {
    if out.len() < PARALLEL_VALUES {
        one(out, input);
    } else {
        out.par_chunks_mut(PARALLEL_VALUES / 4)
            .zip(input.par_chunks(PARALLEL_VALUES / 4))
            .for_each(|(out, input)| one(out, input));
    }
}

/// The rotary frequency of each pair of a head's dimensions:
/// `base^(-2i / rope_dim)` for pair `i`.
fn inverse_frequencies(params: &ModelParams) -> Vec<f32> {
    (0..params.rope_dim)
        .step_by(2)
        .map(|i| {
            1.0 / params
                .rope_freq_base
                .powf(i as f32 / params.rope_dim as f32)
        })
        .collect()
}

/// Adds `bias` to every token's row of `x` (a projection's output).
fn add_bias(x: &mut [f32], bias: Option<&[f32]>) {
    let Some(bias) = bias.filter(|b| !b.is_empty()) else {
        return;
    };
    for row in x.chunks_exact_mut(bias.len()) {
        add(row, bias);
    }
}

/// Rotary embedding of every head of every token; `rotary` holds one row
/// of `(cos, sin)` per token, one per pair of dimensions, and `style`
/// says which dimensions form pair `i`.
fn rotate(x: &mut [f32], rotary: &[(f32, f32)], head_dim: usize, style: RopeStyle) {
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
            match style {
                RopeStyle::Adjacent => {
                    for (pair, &(cos, sin)) in head.chunks_exact_mut(2).zip(angles) {
                        let (a, b) = (pair[0], pair[1]);
                        pair[0] = a * cos - b * sin;
                        pair[1] = a * sin + b * cos;
                    }
                }
                RopeStyle::Neox => {
                    let (first, second) = head.split_at_mut(pairs);
                    for ((a, b), &(cos, sin)) in first.iter_mut().zip(second).zip(angles) {
                        let (x0, x1) = (*a, *b);
                        *a = x0 * cos - x1 * sin;
                        *b = x0 * sin + x1 * cos;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::gguf::Architecture;
    use super::*;

    pub(super) fn params() -> ModelParams {
        ModelParams {
            architecture: Architecture::Llama,
            block_count: 1,
            embedding_length: 6 * 16,
            head_count: 6,
            head_count_kv: 2,
            rope_dim: 16,
            rope_style: RopeStyle::Adjacent,
            rope_freq_base: 10_000.0,
            rms_eps: 1e-5,
            context_length: 4096,
            feed_forward_length: None,
        }
    }

    pub(super) fn noise(seed: u32, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = (i as u32)
                    .wrapping_mul(2_654_435_761)
                    .wrapping_add(seed.wrapping_mul(97));
                ((x >> 8) % 2000) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// Rotary embedding as Hugging Face writes it for one head: with
    /// `rotate_half` (NEOX) dimension `i` pairs with `i + d/2`; GGUF llama
    /// files pair `2i` with `2i + 1`. Angle of pair `i` at `position`:
    /// `position / base^(2i/d)`, computed in f64.
    fn rope_reference(head: &[f64], position: usize, base: f64, style: RopeStyle) -> Vec<f64> {
        let d = head.len();
        let mut out = head.to_vec();
        for i in 0..d / 2 {
            let angle = position as f64 / base.powf(2.0 * i as f64 / d as f64);
            let (a, b) = match style {
                RopeStyle::Adjacent => (2 * i, 2 * i + 1),
                RopeStyle::Neox => (i, i + d / 2),
            };
            out[a] = head[a] * angle.cos() - head[b] * angle.sin();
            out[b] = head[a] * angle.sin() + head[b] * angle.cos();
        }
        out
    }

    #[test]
    fn both_rope_styles_match_a_plain_rotation() {
        let mut p = params();
        p.rope_freq_base = 1_000_000.0;
        let head_dim = p.head_dim();
        for style in [RopeStyle::Adjacent, RopeStyle::Neox] {
            p.rope_style = style;
            let weights_frequencies = inverse_frequencies(&p);
            // Three tokens at positions 5, 6, 7, two heads each.
            let (start, seq, heads) = (5, 3, 2);
            let rotary: Vec<(f32, f32)> = (start..start + seq)
                .flat_map(|pos| {
                    weights_frequencies.iter().map(move |f| {
                        let angle = pos as f32 * f;
                        (angle.cos(), angle.sin())
                    })
                })
                .collect();
            let original = noise(7, seq * heads * head_dim);
            let mut rotated = original.clone();
            rotate(&mut rotated, &rotary, head_dim, style);
            for (t, (got, was)) in rotated
                .chunks_exact(heads * head_dim)
                .zip(original.chunks_exact(heads * head_dim))
                .enumerate()
            {
                for (got, was) in got.chunks_exact(head_dim).zip(was.chunks_exact(head_dim)) {
                    let was: Vec<f64> = was.iter().map(|&v| f64::from(v)).collect();
                    let want = rope_reference(&was, start + t, 1_000_000.0, style);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (f64::from(*g) - w).abs() < 1e-5,
                            "{style:?} token {t} dim {i}: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn neox_rotation_of_a_known_vector() {
        // head_dim 4: pairs (0, 2) and (1, 3); at position 1 pair 0 turns
        // by 1 radian, pair 1 by 1/sqrt(base) = 0.01 radian (base 10^4).
        let mut p = params();
        p.rope_dim = 4;
        let frequencies = inverse_frequencies(&p);
        assert_eq!(frequencies.len(), 2);
        let rotary: Vec<(f32, f32)> = frequencies.iter().map(|f| (f.cos(), f.sin())).collect();
        let mut x = vec![1.0, 0.0, 0.0, 1.0];
        rotate(&mut x, &rotary, 4, RopeStyle::Neox);
        let (c0, s0) = (1.0f32.cos(), 1.0f32.sin());
        let (c1, s1) = (0.01f32.cos(), 0.01f32.sin());
        let want = [c0, -s1, s0, c1];
        for (g, w) in x.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{x:?} vs {want:?}");
        }
        // The same vector with adjacent pairs (0, 1) and (2, 3).
        let mut y = vec![1.0, 0.0, 0.0, 1.0];
        rotate(&mut y, &rotary, 4, RopeStyle::Adjacent);
        let want = [c0, s0, -s1, c1];
        for (g, w) in y.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{y:?} vs {want:?}");
        }
    }

    #[test]
    fn biases_are_added_to_every_token() {
        let mut x = vec![1.0, 2.0, 3.0, 10.0, 20.0, 30.0];
        add_bias(&mut x, Some(&[0.5, -1.0, 2.0]));
        assert_eq!(x, [1.5, 1.0, 5.0, 10.5, 19.0, 32.0]);
        add_bias(&mut x, None);
        assert_eq!(x, [1.5, 1.0, 5.0, 10.5, 19.0, 32.0]);
    }

    /// A tiny qwen2-shaped model: Q8_0 matrices and f32 norms and biases,
    /// written as a GGUF file, and the same weights dequantized for
    /// [`reference_logits`].
    struct Tiny {
        params: ModelParams,
        vocab: usize,
        hidden: usize,
        values: std::collections::HashMap<String, Vec<f32>>,
        file: tempfile::NamedTempFile,
    }

    fn tiny(style: RopeStyle) -> Tiny {
        use candle_core::Tensor;
        use candle_core::quantized::{QTensor, gguf_file};
        let params = ModelParams {
            architecture: Architecture::Qwen2,
            block_count: 2,
            embedding_length: 64,
            head_count: 4,
            head_count_kv: 2,
            rope_dim: 16,
            rope_style: style,
            rope_freq_base: 1_000_000.0,
            rms_eps: 1e-6,
            context_length: 128,
            feed_forward_length: Some(96),
        };
        let (dim, kv, hidden, vocab) = (64, 32, 96, 40);
        let mut shapes: Vec<(String, Vec<usize>, bool)> = vec![
            ("token_embd.weight".into(), vec![vocab, dim], true),
            ("output.weight".into(), vec![vocab, dim], true),
            ("output_norm.weight".into(), vec![dim], false),
        ];
        for i in 0..params.block_count {
            for (part, shape) in [
                ("attn_q.weight", vec![dim, dim]),
                ("attn_k.weight", vec![kv, dim]),
                ("attn_v.weight", vec![kv, dim]),
                ("attn_output.weight", vec![dim, dim]),
                ("ffn_gate.weight", vec![hidden, dim]),
                ("ffn_up.weight", vec![hidden, dim]),
                ("ffn_down.weight", vec![dim, hidden]),
                ("attn_norm.weight", vec![dim]),
                ("ffn_norm.weight", vec![dim]),
                ("attn_q.bias", vec![dim]),
                ("attn_k.bias", vec![kv]),
                ("attn_v.bias", vec![kv]),
            ] {
                let quantized = shape.len() == 2;
                shapes.push((format!("blk.{i}.{part}"), shape, quantized));
            }
        }
        let mut values = std::collections::HashMap::new();
        let mut tensors = Vec::new();
        for (seed, (name, shape, quantized)) in shapes.into_iter().enumerate() {
            let n = shape.iter().product();
            let raw: Vec<f32> = noise(seed as u32 + 11, n)
                .into_iter()
                .map(|v| match (quantized, name.contains("norm")) {
                    (true, _) => v * 0.3,
                    (false, true) => 1.0 + 0.2 * v,
                    (false, false) => v,
                })
                .collect();
            let tensor = Tensor::from_vec(raw, shape.as_slice(), &Device::Cpu).unwrap();
            let dtype = match quantized {
                true => GgmlDType::Q8_0,
                false => GgmlDType::F32,
            };
            let q = QTensor::quantize(&tensor, dtype).unwrap();
            let stored = q
                .dequantize(&Device::Cpu)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            values.insert(name.clone(), stored);
            tensors.push((name, q));
        }
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(n, q)| (n.as_str(), q)).collect();
        gguf_file::write(file.as_file_mut(), &[], &refs).unwrap();
        Tiny {
            params,
            vocab,
            hidden,
            values,
            file,
        }
    }

    fn load_tiny(tiny: &Tiny) -> Weights {
        let mut file = File::open(tiny.file.path()).unwrap();
        let content = Content::read(&mut file).unwrap();
        let tensors = TensorFile::new(&content, &file).unwrap();
        Weights::load(&tensors, tiny.params.clone()).unwrap()
    }

    /// The network written out in f64 from the dequantized weights, with
    /// the rotary pairing of `style` and the biases if `biases`.
    fn reference_logits(tiny: &Tiny, tokens: &[u32], style: RopeStyle, biases: bool) -> Vec<f64> {
        let p = &tiny.params;
        let (dim, hd, kv) = (p.embedding_length, p.head_dim(), p.kv_dim());
        let w =
            |name: &str| -> Vec<f64> { tiny.values[name].iter().map(|&v| f64::from(v)).collect() };
        let matvec = |m: &[f64], x: &[f64]| -> Vec<f64> {
            m.chunks_exact(x.len())
                .map(|row| row.iter().zip(x).map(|(a, b)| a * b).sum())
                .collect()
        };
        let norm = |x: &[f64], weight: &[f64]| -> Vec<f64> {
            let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
            let scale = 1.0 / (ms + p.rms_eps).sqrt();
            x.iter().zip(weight).map(|(v, w)| v * scale * w).collect()
        };
        let embed = w("token_embd.weight");
        let mut xs: Vec<Vec<f64>> = tokens
            .iter()
            .map(|&t| embed[t as usize * dim..(t as usize + 1) * dim].to_vec())
            .collect();
        let base = f64::from(p.rope_freq_base);
        for i in 0..p.block_count {
            let l = |part: &str| w(&format!("blk.{i}.{part}"));
            let with_bias = |mut v: Vec<f64>, part: &str| {
                if biases {
                    for (a, b) in v.iter_mut().zip(l(part)) {
                        *a += b;
                    }
                }
                v
            };
            let rope = |v: Vec<f64>, pos: usize| -> Vec<f64> {
                v.chunks_exact(hd)
                    .flat_map(|h| rope_reference(h, pos, base, style))
                    .collect()
            };
            let (mut ks, mut vs, mut qs) = (Vec::new(), Vec::new(), Vec::new());
            for (pos, x) in xs.iter().enumerate() {
                let h = norm(x, &l("attn_norm.weight"));
                qs.push(rope(
                    with_bias(matvec(&l("attn_q.weight"), &h), "attn_q.bias"),
                    pos,
                ));
                ks.push(rope(
                    with_bias(matvec(&l("attn_k.weight"), &h), "attn_k.bias"),
                    pos,
                ));
                vs.push(with_bias(matvec(&l("attn_v.weight"), &h), "attn_v.bias"));
            }
            for (pos, x) in xs.iter_mut().enumerate() {
                let mut attn = vec![0.0; dim];
                for head in 0..p.head_count {
                    let off = head / (p.head_count / p.head_count_kv) * hd;
                    let q = &qs[pos][head * hd..(head + 1) * hd];
                    let scores: Vec<f64> = (0..=pos)
                        .map(|j| {
                            let k = &ks[j][off..off + hd];
                            q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>() / (hd as f64).sqrt()
                        })
                        .collect();
                    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = e.iter().sum();
                    for (j, weight) in e.iter().enumerate() {
                        for d in 0..hd {
                            attn[head * hd + d] += weight / total * vs[j][off + d];
                        }
                    }
                }
                let _ = kv;
                for (a, b) in x.iter_mut().zip(matvec(&l("attn_output.weight"), &attn)) {
                    *a += b;
                }
                let h = norm(x, &l("ffn_norm.weight"));
                let gate = matvec(&l("ffn_gate.weight"), &h);
                let up = matvec(&l("ffn_up.weight"), &h);
                let act: Vec<f64> = gate
                    .iter()
                    .zip(&up)
                    .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
                    .collect();
                for (a, b) in x.iter_mut().zip(matvec(&l("ffn_down.weight"), &act)) {
                    *a += b;
                }
            }
        }
        let last = norm(&xs[xs.len() - 1], &w("output_norm.weight"));
        matvec(&w("output.weight"), &last)
    }

    /// Largest difference between two logit vectors.
    fn distance(a: &[f32], b: &[f64]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (f64::from(*x) - y).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn a_tiny_qwen2_file_runs_like_the_reference_network() {
        let tokens = [3u32, 17, 5, 30, 8, 1];
        for style in [RopeStyle::Neox, RopeStyle::Adjacent] {
            let tiny = tiny(style);
            let weights = load_tiny(&tiny);
            assert_eq!(weights.vocab(), tiny.vocab);
            assert_eq!(weights.hidden, tiny.hidden);
            let want = reference_logits(&tiny, &tokens, style, true);
            let scale = want.iter().map(|v| v.abs()).fold(0.0, f64::max);
            // The whole prompt at once (f32 products), then token by token
            // (8-bit activations), from the same cache.
            let mut cache = KvCache::default();
            let prompt = weights.forward(&tokens, &mut cache, Pass::Prompt).unwrap();
            let mut step_cache = KvCache::default();
            let mut step = Vec::new();
            for &t in &tokens {
                step = weights
                    .forward(&[t], &mut step_cache, Pass::Generate)
                    .unwrap();
            }
            // 8-bit activations cost about 1% of the scale.
            let tolerance = 0.03 * scale;
            assert!(distance(&prompt, &want) < tolerance, "{style:?} prompt");
            assert!(distance(&step, &want) < tolerance, "{style:?} steps");
            // What the test would catch: the other pairing, or no biases.
            let other = match style {
                RopeStyle::Neox => RopeStyle::Adjacent,
                RopeStyle::Adjacent => RopeStyle::Neox,
            };
            let wrong_rope = reference_logits(&tiny, &tokens, other, true);
            let no_bias = reference_logits(&tiny, &tokens, style, false);
            assert!(distance(&prompt, &wrong_rope) > 3.0 * distance(&prompt, &want));
            assert!(distance(&prompt, &no_bias) > 3.0 * distance(&prompt, &want));
        }
    }

    #[test]
    fn a_reserved_cache_grows_without_moving() {
        let mut cache = KvCache::numbered(3);
        cache.reserve(100);
        let keys = cache.keys[0].as_ptr();
        assert!(cache.keys[0].capacity() >= 200 && cache.values[0].capacity() >= 200);
        for layer in cache.keys.iter_mut().chain(cache.values.iter_mut()) {
            append_f16(layer, &[7.0; 194]);
        }
        assert_eq!(
            cache.keys[0].as_ptr(),
            keys,
            "no reallocation within the reserve"
        );
        assert_eq!(&cache.positions()[..3], &[0.0, 1.0, 2.0]);
        // A fresh cache keeps the request for its first forward call.
        let mut fresh = KvCache::default();
        fresh.reserve(50);
        assert_eq!(fresh.reserved, 50);
    }

    #[test]
    fn the_context_window_bounds_the_cache() {
        let tiny = tiny(RopeStyle::Neox);
        let mut weights = load_tiny(&tiny);
        weights.set_max_positions(4);
        let mut cache = KvCache::default();
        weights
            .forward(&[1, 2, 3], &mut cache, Pass::Prompt)
            .unwrap();
        let err = weights
            .forward(&[4, 5], &mut cache, Pass::Generate)
            .unwrap_err();
        assert!(err.to_string().contains("context window of 4"), "{err}");
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn a_tensor_past_the_end_of_the_file_is_an_error() {
        let tiny = tiny(RopeStyle::Neox);
        let bytes = std::fs::read(tiny.file.path()).unwrap();
        let cut = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(cut.path(), &bytes[..bytes.len() - 100]).unwrap();
        let mut file = File::open(cut.path()).unwrap();
        let content = Content::read(&mut file).unwrap();
        let tensors = TensorFile::new(&content, &file).unwrap();
        let err = Weights::load(&tensors, tiny.params.clone())
            .err()
            .expect("a cut file fails");
        assert!(
            err.to_string().contains("past the end of the file"),
            "{err}"
        );
    }
}
