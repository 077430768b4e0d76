//! Quantized matrix products for the embedded engine.
//!
//! A token's forward pass reads every weight of the model once, so on a
//! CPU generation speed is set by how many bytes the weights take, and a
//! prompt's speed by how many multiplications a second the kernels keep
//! up. Here the matrices stay in their 4- to 8-bit GGUF blocks and the
//! activations are quantized to 8 bits ([`activations`]: per block of 32,
//! or per super-block of 256 for the K-quants), as llama.cpp does, so a
//! block's products are a few integer SIMD instructions.
//!
//! - Q4_K and Q6_K (most of a Q4_K_M file) are interleaved at load, 16
//!   rows at a time ([`interleaved`]): one 512-bit integer dot product
//!   covers 4 columns of 16 rows. Q5_0 blocks are used as the file has
//!   them, Q4_0, Q4_1 and Q8_0 unpacked into structs; a matrix of any
//!   other GGUF type (f16, ...) is dequantized and requantized to Q8_0 at
//!   load.
//! - Kernels: AVX-512 VNNI and AVX2 (+ FMA, F16C), selected at run time
//!   (`is_x86_feature_detected`), so the binary still runs on any x86-64
//!   CPU, and a portable scalar version that gives the same sums to
//!   rounding (the integer parts are exact; only the order of the f32
//!   additions differs).
//! - Every kernel takes up to [`TOKEN_TILE`] tokens at once: a prompt's
//!   weights are unpacked once per tile of tokens, and rows are split over
//!   threads with rayon in chunks that stay in cache while every token of
//!   the prompt passes over them. A token's outputs are the same bits
//!   whether it is multiplied alone or in a tile.

// SIMD intrinsics are `unsafe`; each use is behind a run-time check of
// the CPU features it needs, and reads only within slices whose lengths
// are checked first.
#![allow(unsafe_code)]

use std::ops::Range;
use std::sync::Arc;

use half::f16;
use rayon::prelude::*;

use super::LocalError;

mod activations;
mod attention;
mod interleaved;
mod kquants;

pub(crate) use activations::{Activations, Grain};
pub(crate) use attention::{AttentionShape, SpanStats, attend_span, merge_spans};

use interleaved::{Q4KRows16, Q6KRows16, ROWS};
use kquants::{Blocks32, Q4K_BYTES, Q5_0_BYTES, Q6K_BYTES, QK_K, TokenQ, common_len};

/// Tokens each call of a kernel multiplies by a weight row in a prompt:
/// enough that unpacking a block is paid for rarely, few enough that the
/// accumulators of every token stay in registers.
const TOKEN_TILE: usize = 8;

/// Values per quantization block, for every block type here.
pub(crate) const BLOCK: usize = 32;

/// 32 weights as `d * q + m`, `q` in 0..16 (element `j` in the low nibble
/// of byte `j`, element `j + 16` in its high nibble).
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct BlockQ4_1 {
    d: f32,
    m: f32,
    qs: [u8; 16],
}

/// 32 weights as `d * (q - 8)`, nibbles laid out as in [`BlockQ4_1`].
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct BlockQ4_0 {
    d: f32,
    qs: [u8; 16],
}

/// 32 weights as `d * q`, `q` a signed byte.
#[derive(Clone, Copy)]
#[repr(C)]
pub(crate) struct BlockQ8_0 {
    d: f32,
    qs: [i8; 32],
}

/// The blocks of a matrix, row after row.
enum Blocks {
    Q4_0(Vec<BlockQ4_0>),
    Q4_1(Vec<BlockQ4_1>),
    Q8_0(Vec<BlockQ8_0>),
    /// Q4_K super-blocks, 16 rows interleaved: groups of rows after each
    /// other, each group's super-blocks left to right.
    Q4K(Groups<Q4KRows16>),
    /// Q6_K super-blocks, as [`Blocks::Q4K`].
    Q6K(Groups<Q6KRows16>),
    /// Q5_0 blocks kept as the file's bytes.
    Q5_0(WeightBytes),
}

/// A K-quant matrix's interleaved groups: made at load, or a range of a
/// memory map of the file of repacked weights (see [`crate::repacked`]).
pub(crate) enum Groups<T> {
    /// Interleaved at load.
    Owned(Vec<T>),
    /// Checked when made ([`QMatrix::from_repacked`]) to be whole groups
    /// at an address aligned for `T`.
    Mapped(WeightBytes),
}

impl<T: bytemuck::Pod> std::ops::Deref for Groups<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match self {
            Groups::Owned(groups) => groups,
            // Never empty for a matrix that was made: checked then.
            Groups::Mapped(bytes) => bytemuck::try_cast_slice(bytes.bytes()).unwrap_or(&[]),
        }
    }
}

/// A matrix's blocks as the GGUF file has them: copied once, or a range
/// of a buffer shared with others (such as a memory map of the file).
pub(crate) enum WeightBytes {
    /// The blocks, copied.
    Owned(Vec<u8>),
    /// `range` of a shared buffer.
    Shared(Arc<dyn AsRef<[u8]> + Send + Sync>, Range<usize>),
}

impl WeightBytes {
    fn bytes(&self) -> &[u8] {
        match self {
            WeightBytes::Owned(bytes) => bytes,
            // The range was checked against the buffer when the matrix
            // was made (`QMatrix::from_shared_blocks`).
            WeightBytes::Shared(data, range) => &(**data).as_ref()[range.clone()],
        }
    }
}

/// A weight matrix of `rows` outputs by `cols` inputs, quantized.
pub(crate) struct QMatrix {
    rows: usize,
    cols: usize,
    blocks: Blocks,
}

/// The GGUF block types read as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NativeType {
    Q4_0,
    Q4_1,
    Q8_0,
    /// 256 values in 144 bytes (see [`kquants`]).
    Q4K,
    /// 256 values in 210 bytes.
    Q6K,
    /// 32 values in 22 bytes.
    Q5_0,
}

impl NativeType {
    /// Bytes of one block in a GGUF file.
    pub(crate) fn file_block_bytes(self) -> usize {
        match self {
            NativeType::Q4_0 => 18,
            NativeType::Q4_1 => 20,
            NativeType::Q8_0 => 34,
            NativeType::Q4K => Q4K_BYTES,
            NativeType::Q6K => Q6K_BYTES,
            NativeType::Q5_0 => Q5_0_BYTES,
        }
    }

    /// Values in one block; a row's length is a multiple of it.
    pub(crate) fn block_values(self) -> usize {
        match self {
            NativeType::Q4K | NativeType::Q6K => QK_K,
            _ => BLOCK,
        }
    }

    /// Whether the blocks are used as the file's bytes, so a shared buffer
    /// needs no copy.
    fn kept_as_bytes(self) -> bool {
        self == NativeType::Q5_0
    }
}

fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([bytes[at], bytes[at + 1]]).to_f32()
}

impl QMatrix {
    /// Checks that `len` bytes hold a `rows` x `cols` matrix of `kind`.
    fn check_size(
        kind: NativeType,
        len: usize,
        rows: usize,
        cols: usize,
    ) -> Result<(), LocalError> {
        let per_block = kind.block_values();
        if cols == 0 || !cols.is_multiple_of(per_block) {
            return Err(LocalError::Format(format!(
                "a {kind:?} matrix has {cols} columns, not a multiple of {per_block}"
            )));
        }
        let needed = rows
            .checked_mul(cols / per_block)
            .and_then(|count| count.checked_mul(kind.file_block_bytes()));
        if needed != Some(len) {
            return Err(LocalError::Format(format!(
                "a {rows}x{cols} {kind:?} matrix does not take {len} bytes"
            )));
        }
        Ok(())
    }

    /// A matrix from a GGUF tensor's raw bytes. Q5_0 blocks are copied as
    /// they are; the K-quants are interleaved (see [`interleaved`]), the
    /// older types unpacked.
    pub(crate) fn from_file_blocks(
        kind: NativeType,
        bytes: &[u8],
        rows: usize,
        cols: usize,
    ) -> Result<Self, LocalError> {
        Self::check_size(kind, bytes.len(), rows, cols)?;
        let size = kind.file_block_bytes();
        let chunks = bytes.chunks_exact(size);
        let blocks = match kind {
            NativeType::Q5_0 => Blocks::Q5_0(WeightBytes::Owned(bytes.to_vec())),
            NativeType::Q4K => Blocks::Q4K(Groups::Owned(interleave(
                bytes.as_chunks::<Q4K_BYTES>().0,
                rows,
                cols,
                interleaved::repack_q4k,
            ))),
            NativeType::Q6K => Blocks::Q6K(Groups::Owned(interleave(
                bytes.as_chunks::<Q6K_BYTES>().0,
                rows,
                cols,
                interleaved::repack_q6k,
            ))),
            NativeType::Q4_0 => Blocks::Q4_0(
                chunks
                    .map(|b| {
                        let mut qs = [0u8; 16];
                        qs.copy_from_slice(&b[2..18]);
                        BlockQ4_0 {
                            d: f16_at(b, 0),
                            qs,
                        }
                    })
                    .collect(),
            ),
            NativeType::Q4_1 => Blocks::Q4_1(
                chunks
                    .map(|b| {
                        let mut qs = [0u8; 16];
                        qs.copy_from_slice(&b[4..20]);
                        BlockQ4_1 {
                            d: f16_at(b, 0),
                            m: f16_at(b, 2),
                            qs,
                        }
                    })
                    .collect(),
            ),
            NativeType::Q8_0 => Blocks::Q8_0(
                chunks
                    .map(|b| {
                        let mut qs = [0i8; 32];
                        for (q, &byte) in qs.iter_mut().zip(&b[2..34]) {
                            *q = byte as i8;
                        }
                        BlockQ8_0 {
                            d: f16_at(b, 0),
                            qs,
                        }
                    })
                    .collect(),
            ),
        };
        Ok(Self { rows, cols, blocks })
    }

    /// A matrix whose blocks are `range` of `data` (e.g. a memory map of
    /// the GGUF file), used in place for Q5_0: no copy. Other types are
    /// unpacked as by [`QMatrix::from_file_blocks`].
    pub(crate) fn from_shared_blocks(
        kind: NativeType,
        data: Arc<dyn AsRef<[u8]> + Send + Sync>,
        range: Range<usize>,
        rows: usize,
        cols: usize,
    ) -> Result<Self, LocalError> {
        let Some(bytes) = (*data).as_ref().get(range.clone()) else {
            return Err(LocalError::Format(format!(
                "a {kind:?} matrix at bytes {range:?} is past the end of its file"
            )));
        };
        if !kind.kept_as_bytes() {
            return Self::from_file_blocks(kind, bytes, rows, cols);
        }
        Self::check_size(kind, bytes.len(), rows, cols)?;
        Ok(Self {
            rows,
            cols,
            blocks: Blocks::Q5_0(WeightBytes::Shared(data, range)),
        })
    }

    /// The bytes of an interleaved K-quant matrix (Q4_K, Q6_K) that
    /// [`QMatrix::from_repacked`] takes back; `None` for other types.
    pub(crate) fn repacked_bytes(&self) -> Option<&[u8]> {
        match &self.blocks {
            Blocks::Q4K(groups) => Some(bytemuck::cast_slice(groups)),
            Blocks::Q6K(groups) => Some(bytemuck::cast_slice(groups)),
            _ => None,
        }
    }

    /// The length of [`QMatrix::repacked_bytes`] for a `rows` x `cols`
    /// matrix of `kind`; `None` for types that are not interleaved or
    /// shapes that are not whole super-blocks.
    pub(crate) fn repacked_len(kind: NativeType, rows: usize, cols: usize) -> Option<usize> {
        let group = match kind {
            NativeType::Q4K => std::mem::size_of::<Q4KRows16>(),
            NativeType::Q6K => std::mem::size_of::<Q6KRows16>(),
            _ => return None,
        };
        if cols == 0 || !cols.is_multiple_of(QK_K) {
            return None;
        }
        rows.div_ceil(ROWS)
            .checked_mul(cols / QK_K)?
            .checked_mul(group)
    }

    /// A K-quant matrix whose interleaved groups are `range` of `data` (a
    /// memory map of the file of repacked weights), used in place.
    pub(crate) fn from_repacked(
        kind: NativeType,
        data: Arc<dyn AsRef<[u8]> + Send + Sync>,
        range: Range<usize>,
        rows: usize,
        cols: usize,
    ) -> Result<Self, LocalError> {
        let expected = Self::repacked_len(kind, rows, cols);
        let bytes = (*data).as_ref().get(range.clone());
        let fits = match (bytes, expected) {
            (Some(bytes), Some(expected)) if bytes.len() == expected && expected > 0 => {
                match kind {
                    NativeType::Q4K => bytemuck::try_cast_slice::<_, Q4KRows16>(bytes).is_ok(),
                    _ => bytemuck::try_cast_slice::<_, Q6KRows16>(bytes).is_ok(),
                }
            }
            _ => false,
        };
        if !fits {
            return Err(LocalError::Format(format!(
                "bytes {range:?} are not the interleaved groups of a {rows}x{cols} {kind:?} matrix"
            )));
        }
        let groups = WeightBytes::Shared(data, range);
        let blocks = match kind {
            NativeType::Q4K => Blocks::Q4K(Groups::Mapped(groups)),
            _ => Blocks::Q6K(Groups::Mapped(groups)),
        };
        Ok(Self { rows, cols, blocks })
    }

    /// `values` (row-major, `rows` x `cols`) quantized to Q8_0.
    pub(crate) fn quantize_q8_0(
        values: &[f32],
        rows: usize,
        cols: usize,
    ) -> Result<Self, LocalError> {
        if cols == 0 || !cols.is_multiple_of(BLOCK) || values.len() != rows * cols {
            return Err(LocalError::Format(format!(
                "cannot quantize {} values as a {rows}x{cols} matrix in blocks of {BLOCK}",
                values.len()
            )));
        }
        let blocks = values
            .par_chunks_exact(BLOCK)
            .map(|chunk| {
                let mut qs = [0i8; BLOCK];
                let d = activations::quantize_into(chunk, &mut qs);
                BlockQ8_0 { d, qs }
            })
            .collect();
        Ok(Self {
            rows,
            cols,
            blocks: Blocks::Q8_0(blocks),
        })
    }

    /// Output size.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    /// Input size.
    pub(crate) fn cols(&self) -> usize {
        self.cols
    }

    /// The block type of the weights.
    fn kind(&self) -> NativeType {
        match &self.blocks {
            Blocks::Q4_0(_) => NativeType::Q4_0,
            Blocks::Q4_1(_) => NativeType::Q4_1,
            Blocks::Q8_0(_) => NativeType::Q8_0,
            Blocks::Q4K(_) => NativeType::Q4K,
            Blocks::Q6K(_) => NativeType::Q6K,
            Blocks::Q5_0(_) => NativeType::Q5_0,
        }
    }

    /// How finely [`QMatrix::matmul`] wants its activations quantized.
    pub(crate) fn grain(&self) -> Grain {
        match self.kind() {
            NativeType::Q4K | NativeType::Q6K => Grain::SuperBlock,
            NativeType::Q4_0 | NativeType::Q4_1 | NativeType::Q8_0 | NativeType::Q5_0 => {
                Grain::Block32
            }
        }
    }

    /// Bytes the blocks take in memory.
    pub(crate) fn memory_bytes(&self) -> usize {
        match &self.blocks {
            Blocks::Q4_0(b) => std::mem::size_of_val(b.as_slice()),
            Blocks::Q4_1(b) => std::mem::size_of_val(b.as_slice()),
            Blocks::Q8_0(b) => std::mem::size_of_val(b.as_slice()),
            Blocks::Q4K(b) => std::mem::size_of_val(&**b),
            Blocks::Q6K(b) => std::mem::size_of_val(&**b),
            Blocks::Q5_0(bytes) => bytes.bytes().len(),
        }
    }

    /// Super-blocks (or Q5_0 blocks) per row.
    fn blocks_per_row(&self, kind: NativeType) -> usize {
        self.cols / kind.block_values()
    }

    /// Row `row` as f32 values (an embedding lookup).
    pub(crate) fn row(&self, row: usize, out: &mut [f32]) -> Result<(), LocalError> {
        let per_row = self.cols / BLOCK;
        if row >= self.rows || out.len() != self.cols {
            return Err(LocalError::Engine(format!(
                "row {row} of a {}x{} matrix into {} values",
                self.rows,
                self.cols,
                out.len()
            )));
        }
        let range = row * per_row..(row + 1) * per_row;
        let outs = out.chunks_exact_mut(BLOCK);
        match &self.blocks {
            Blocks::Q4K(groups) => {
                let per = self.blocks_per_row(NativeType::Q4K);
                let group = &groups[row / ROWS * per..(row / ROWS + 1) * per];
                let (out, _) = out.as_chunks_mut::<QK_K>();
                for (b, out) in group.iter().zip(out) {
                    interleaved::dequantize_q4k(b, row % ROWS, out);
                }
            }
            Blocks::Q6K(groups) => {
                let per = self.blocks_per_row(NativeType::Q6K);
                let group = &groups[row / ROWS * per..(row / ROWS + 1) * per];
                let (out, _) = out.as_chunks_mut::<QK_K>();
                for (b, out) in group.iter().zip(out) {
                    interleaved::dequantize_q6k(b, row % ROWS, out);
                }
            }
            Blocks::Q5_0(bytes) => {
                let (out, _) = out.as_chunks_mut::<BLOCK>();
                for (b, out) in self.q5_0_row(bytes, row).iter().zip(out) {
                    kquants::dequantize_q5_0(b, out);
                }
            }
            Blocks::Q4_0(blocks) => {
                for (b, out) in blocks[range].iter().zip(outs) {
                    for (j, &byte) in b.qs.iter().enumerate() {
                        out[j] = b.d * (f32::from(byte & 0x0f) - 8.0);
                        out[j + 16] = b.d * (f32::from(byte >> 4) - 8.0);
                    }
                }
            }
            Blocks::Q4_1(blocks) => {
                for (b, out) in blocks[range].iter().zip(outs) {
                    for (j, &byte) in b.qs.iter().enumerate() {
                        out[j] = b.d * f32::from(byte & 0x0f) + b.m;
                        out[j + 16] = b.d * f32::from(byte >> 4) + b.m;
                    }
                }
            }
            Blocks::Q8_0(blocks) => {
                for (b, out) in blocks[range].iter().zip(outs) {
                    for (o, &q) in out.iter_mut().zip(&b.qs) {
                        *o = b.d * f32::from(q);
                    }
                }
            }
        }
        Ok(())
    }

    /// `out[t][r] = Σ_c w[r][c] * x[t][c]` for every token `t` of `x`;
    /// `out` holds `x.tokens() * rows` values, token after token.
    ///
    /// The rows are split into chunks, one task each; a task passes every
    /// token over its chunk, [`TOKEN_TILE`] tokens per pass, so the
    /// chunk's blocks are read from memory once and from cache after.
    pub(crate) fn matmul(&self, x: &Activations, out: &mut [f32]) -> Result<(), LocalError> {
        self.matmul_with(Simd::detect(), x, out)
    }

    /// [`QMatrix::matmul`] of several matrices sharing one input, their
    /// chunks of rows all in one parallel pass: a generated token runs
    /// about 200 matrix products, and each pass ends in a wait for the
    /// slowest thread.
    pub(crate) fn matmul_all(
        x: &Activations,
        work: Vec<(&QMatrix, &mut [f32])>,
    ) -> Result<(), LocalError> {
        Self::matmul_all_with(Simd::detect(), x, work)
    }

    /// [`QMatrix::matmul`] by the kernels of `simd`.
    fn matmul_with(&self, simd: Simd, x: &Activations, out: &mut [f32]) -> Result<(), LocalError> {
        Self::matmul_all_with(simd, x, vec![(self, out)])
    }

    fn matmul_all_with(
        simd: Simd,
        x: &Activations,
        work: Vec<(&QMatrix, &mut [f32])>,
    ) -> Result<(), LocalError> {
        let mut chunks = Vec::new();
        for (matrix, out) in work {
            chunks.extend(matrix.chunks(x, out)?);
        }
        chunks
            .into_par_iter()
            .for_each(|chunk| chunk.matrix.run_chunk(simd, x, chunk));
        Ok(())
    }

    /// `out` split into the chunks of rows one task computes, each with
    /// its outputs for every token; the shapes and grain checked.
    fn chunks<'a>(
        &'a self,
        x: &Activations,
        out: &'a mut [f32],
    ) -> Result<Vec<RowChunk<'a>>, LocalError> {
        let tokens = x.tokens;
        if x.cols != self.cols || out.len() != tokens * self.rows {
            return Err(LocalError::Engine(format!(
                "a {}x{} matrix times {tokens} tokens of {} values into {} outputs",
                self.rows,
                self.cols,
                x.cols,
                out.len()
            )));
        }
        let grain = self.grain();
        if tokens > 0 && x.token_q(grain, tokens - 1).is_none() {
            return Err(LocalError::Engine(format!(
                "a {:?} matrix needs activations in the {grain:?} grain",
                self.kind()
            )));
        }
        // Enough chunks to keep every thread busy, few enough that each
        // one is worth a task; a chunk's blocks (at most 256 rows of 9,000
        // columns, 1.3 MB of Q4_K) stay in the L2 cache while all the
        // tokens pass over them. Whole groups of interleaved rows.
        let chunk_rows = (self.rows / (rayon::current_num_threads() * 8))
            .clamp(ROWS, 256)
            .next_multiple_of(ROWS);
        // Per chunk of rows, its outputs of every token (`out` is token
        // after token, so they are not contiguous).
        let mut chunks: Vec<RowChunk<'a>> = (0..self.rows.div_ceil(chunk_rows))
            .map(|chunk| RowChunk {
                matrix: self,
                first_row: chunk * chunk_rows,
                outs: Vec::with_capacity(tokens),
            })
            .collect();
        for of_token in out.chunks_exact_mut(self.rows) {
            for (chunk, piece) in chunks.iter_mut().zip(of_token.chunks_mut(chunk_rows)) {
                chunk.outs.push(piece);
            }
        }
        Ok(chunks)
    }

    /// Every token of `x` times the rows of `chunk`.
    fn run_chunk(&self, simd: Simd, x: &Activations, mut chunk: RowChunk<'_>) {
        let grain = self.grain();
        let tokens = chunk.outs.len();
        let mut t = 0;
        while t < tokens {
            // Tiles of 8, then 4, 2, 1 for the rest.
            let n = match tokens - t {
                left if left >= TOKEN_TILE => TOKEN_TILE,
                left => 1 << left.ilog2(),
            };
            let first_row = chunk.first_row;
            let outs = &mut chunk.outs[t..t + n];
            match n {
                1 => self.tile::<1>(simd, first_row, x, grain, t, outs),
                2 => self.tile::<2>(simd, first_row, x, grain, t, outs),
                4 => self.tile::<4>(simd, first_row, x, grain, t, outs),
                _ => self.tile::<TOKEN_TILE>(simd, first_row, x, grain, t, outs),
            }
            t += n;
        }
    }

    /// Tokens `first_token..first_token + N` times the rows from
    /// `first_row` (a multiple of [`ROWS`]) on, one output slice per
    /// token.
    fn tile<const N: usize>(
        &self,
        simd: Simd,
        first_row: usize,
        x: &Activations,
        grain: Grain,
        first_token: usize,
        outs: &mut [&mut [f32]],
    ) {
        let rows = outs.iter().map(|o| o.len()).min().unwrap_or(0);
        // Checked by `matmul_with` for the last token; an empty token
        // multiplies as zeros (every kernel stops at the shortest input).
        let xs: [TokenQ; N] =
            std::array::from_fn(|i| x.token_q(grain, first_token + i).unwrap_or(TokenQ::EMPTY));
        match &self.blocks {
            Blocks::Q4K(groups) => {
                let per = self.blocks_per_row(NativeType::Q4K);
                for start in (0..rows).step_by(ROWS) {
                    let group = (first_row + start) / ROWS;
                    let w = &groups[group * per..(group + 1) * per];
                    let values = interleaved::dot_q4k(simd, w, &xs);
                    write_group(outs, start, rows, values);
                }
            }
            Blocks::Q6K(groups) => {
                let per = self.blocks_per_row(NativeType::Q6K);
                for start in (0..rows).step_by(ROWS) {
                    let group = (first_row + start) / ROWS;
                    let w = &groups[group * per..(group + 1) * per];
                    let values = interleaved::dot_q6k(simd, w, &xs);
                    write_group(outs, start, rows, values);
                }
            }
            Blocks::Q5_0(bytes) => {
                for i in 0..rows {
                    let w = self.q5_0_row(bytes, first_row + i);
                    let values = kquants::dot_q5_0(simd, w, &xs);
                    for (out, value) in outs.iter_mut().zip(values) {
                        out[i] = value;
                    }
                }
            }
            Blocks::Q4_0(_) | Blocks::Q4_1(_) | Blocks::Q8_0(_) => {
                for i in 0..rows {
                    let values = self.dot_rows(simd, first_row + i, &xs);
                    for (out, value) in outs.iter_mut().zip(values) {
                        out[i] = value;
                    }
                }
            }
        }
    }

    /// Row `row`'s Q5_0 blocks.
    fn q5_0_row<'a>(&self, bytes: &'a WeightBytes, row: usize) -> &'a [kquants::BlockQ5_0] {
        let per = self.blocks_per_row(NativeType::Q5_0);
        &bytes.bytes().as_chunks::<Q5_0_BYTES>().0[row * per..(row + 1) * per]
    }

    /// Row `row` (of a Q4_0, Q4_1 or Q8_0 matrix) times tokens `xs`.
    fn dot_rows<const N: usize>(&self, simd: Simd, row: usize, xs: &[TokenQ; N]) -> [f32; N] {
        let per_row = self.cols / BLOCK;
        let range = row * per_row..(row + 1) * per_row;
        match &self.blocks {
            Blocks::Q4_0(b) => dot_q4_0(simd, &b[range], xs),
            Blocks::Q4_1(b) => dot_q4_1(simd, &b[range], xs),
            Blocks::Q8_0(b) => dot_q8_0(simd, &b[range], xs),
            Blocks::Q4K(_) | Blocks::Q6K(_) | Blocks::Q5_0(_) => [0.0; N],
        }
    }
}

/// One task of a matrix product: rows `first_row..` of `matrix`, and
/// each token's outputs for them.
struct RowChunk<'a> {
    matrix: &'a QMatrix,
    first_row: usize,
    outs: Vec<&'a mut [f32]>,
}

/// A group's 16 outputs per token into `outs[t][start..]`, cut at `rows`
/// (the padding rows of a matrix's last group are dropped).
fn write_group<const N: usize>(
    outs: &mut [&mut [f32]],
    start: usize,
    rows: usize,
    values: [[f32; ROWS]; N],
) {
    let len = (rows - start).min(ROWS);
    for (out, values) in outs.iter_mut().zip(values) {
        // A whole group: a copy of fixed size, inlined (a `memmove` call
        // per group and token was 3% of a prompt).
        if len == ROWS
            && let Some(whole) = out
                .get_mut(start..start + ROWS)
                .and_then(|part| <&mut [f32; ROWS]>::try_from(part).ok())
        {
            *whole = values;
            continue;
        }
        out[start..start + len].copy_from_slice(&values[..len]);
    }
}

/// The rows of a K-quant matrix in the file's layout, interleaved by
/// groups of 16 with `repack`, in parallel.
fn interleave<const SIZE: usize, T: Send>(
    blocks: &[[u8; SIZE]],
    rows: usize,
    cols: usize,
    repack: impl Fn([Option<&[u8; SIZE]>; ROWS]) -> T + Sync,
) -> Vec<T> {
    let per = cols / QK_K;
    (0..rows.div_ceil(ROWS) * per)
        .into_par_iter()
        .map(|i| {
            let (group, b) = (i / per, i % per);
            repack(std::array::from_fn(|r| {
                let row = group * ROWS + r;
                (row < rows).then(|| blocks.get(row * per + b)).flatten()
            }))
        })
        .collect()
}

/// Which kernels this CPU can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    /// Portable Rust.
    Scalar,
    /// AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// AVX-512 (F, BW, VL) with VNNI, and AVX2, FMA and F16C: the K-quant
    /// kernels take 512-bit integer dot products; the others run as
    /// [`Simd::Avx2`].
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

impl Simd {
    /// The best kernels this CPU runs (checked once, then cached).
    pub(crate) fn detect() -> Self {
        static DETECTED: std::sync::OnceLock<Simd> = std::sync::OnceLock::new();
        *DETECTED.get_or_init(|| Self::available().last().copied().unwrap_or(Simd::Scalar))
    }

    /// Every kind of kernel this CPU runs, slowest first (for tests and
    /// measurements).
    pub(crate) fn available() -> Vec<Self> {
        #[allow(unused_mut)]
        let mut found = vec![Simd::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("f16c") {
                found.push(Simd::Avx2);
                if has!("avx512f") && has!("avx512bw") && has!("avx512vl") && has!("avx512vnni") {
                    found.push(Simd::Avx512);
                }
            }
        }
        found
    }
}

/// `Σ q_w * q_x` of a block of nibbles against 8-bit activations.
fn nibble_sum(qs: &[u8; 16], q: &[i8; 32]) -> i32 {
    qs.iter()
        .zip(q.iter().zip(&q[16..]))
        .map(|(&b, (&low, &high))| {
            i32::from(b & 0x0f) * i32::from(low) + i32::from(b >> 4) * i32::from(high)
        })
        .sum()
}

/// Each token's `Σ w * x` in plain Rust, one after the other; `block`
/// takes a weight block, 32 activations, their scale and `d * Σq`.
fn each_token<const N: usize, W>(
    w: &[W],
    x: &[TokenQ; N],
    block: impl Fn(&W, &[i8; 32], f32, f32) -> f32,
) -> [f32; N] {
    x.map(|x| {
        let x = Blocks32::of(x);
        w.iter()
            .zip(x.q)
            .zip(x.d.iter().zip(x.sums))
            .map(|((w, q), (&d, &sum))| block(w, q, d, sum))
            .sum()
    })
}

fn dot_q4_1<const N: usize>(simd: Simd, w: &[BlockQ4_1], x: &[TokenQ; N]) -> [f32; N] {
    match simd {
        // SAFETY: `Simd::Avx2` and `Simd::Avx512` are only made after
        // detecting AVX2, FMA and F16C.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx512 => unsafe { avx2::dot_q4_1(w, x) },
        Simd::Scalar => each_token(w, x, |w, q, d, sum| {
            w.d * d * nibble_sum(&w.qs, q) as f32 + w.m * sum
        }),
    }
}

fn dot_q4_0<const N: usize>(simd: Simd, w: &[BlockQ4_0], x: &[TokenQ; N]) -> [f32; N] {
    match simd {
        // SAFETY: as in `dot_q4_1`.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx512 => unsafe { avx2::dot_q4_0(w, x) },
        Simd::Scalar => each_token(w, x, |w, q, d, sum| {
            w.d * (d * nibble_sum(&w.qs, q) as f32 - 8.0 * sum)
        }),
    }
}

fn dot_q8_0<const N: usize>(simd: Simd, w: &[BlockQ8_0], x: &[TokenQ; N]) -> [f32; N] {
    match simd {
        // SAFETY: as in `dot_q4_1`.
        #[cfg(target_arch = "x86_64")]
        Simd::Avx2 | Simd::Avx512 => unsafe { avx2::dot_q8_0(w, x) },
        Simd::Scalar => each_token(w, x, |w, q, d, _| {
            let sum: i32 =
                w.qs.iter()
                    .zip(q)
                    .map(|(&a, &b)| i32::from(a) * i32::from(b))
                    .sum();
            w.d * d * sum as f32
        }),
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{BlockQ4_0, BlockQ4_1, BlockQ8_0, Blocks32, TokenQ, common_len};

    /// The sum of eight lanes.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// The 32 nibbles of a block as bytes, element order.
    #[target_feature(enable = "avx2,fma")]
    fn unpack_nibbles(qs: &[u8; 16]) -> __m256i {
        // SAFETY: `qs` is 16 readable bytes; unaligned loads are allowed.
        let raw = unsafe { _mm_loadu_si128(qs.as_ptr().cast()) };
        let mask = _mm_set1_epi8(0x0f);
        let low = _mm_and_si128(raw, mask);
        let high = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);
        _mm256_set_m128i(high, low)
    }

    #[target_feature(enable = "avx2,fma")]
    fn load_act(q: &[i8; 32]) -> __m256i {
        // SAFETY: 32 readable bytes.
        unsafe { _mm256_loadu_si256(q.as_ptr().cast()) }
    }

    /// Eight i32 sums of `unsigned * signed` byte products.
    #[target_feature(enable = "avx2,fma")]
    fn products(unsigned: __m256i, signed: __m256i) -> __m256 {
        let pairs = _mm256_maddubs_epi16(unsigned, signed);
        _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)))
    }

    /// Four f32 partial sums of `nibble * signed` byte products. With
    /// 4-bit weights a pair's 16-bit sum is at most 2 * 15 * 127, so the
    /// two 128-bit halves add without overflow before one widening
    /// multiply, half the work of [`products`] on CPUs that split 256-bit
    /// operations (AMD Zen 1).
    #[target_feature(enable = "avx2,fma")]
    fn nibble_products(nibbles: __m256i, signed: __m256i) -> __m128 {
        let pairs = _mm256_maddubs_epi16(nibbles, signed);
        let halves = _mm_add_epi16(
            _mm256_castsi256_si128(pairs),
            _mm256_extracti128_si256(pairs, 1),
        );
        _mm_cvtepi32_ps(_mm_madd_epi16(halves, _mm_set1_epi16(1)))
    }

    #[target_feature(enable = "avx2,fma")]
    fn hsum128(s: __m128) -> f32 {
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q4_1<const N: usize>(w: &[BlockQ4_1], x: &[TokenQ; N]) -> [f32; N] {
        let xs = x.map(Blocks32::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let mut acc = [_mm_setzero_ps(); N];
        let mut offsets = [0.0f32; N];
        for (b, w) in w[..n].iter().enumerate() {
            let nibbles = unpack_nibbles(&w.qs);
            for t in 0..N {
                let x = &xs[t];
                let sums = nibble_products(nibbles, load_act(&x.q[b]));
                acc[t] = _mm_fmadd_ps(sums, _mm_set1_ps(w.d * x.d[b]), acc[t]);
                offsets[t] += w.m * x.sums[b];
            }
        }
        let mut out = [0.0f32; N];
        for t in 0..N {
            out[t] = hsum128(acc[t]) + offsets[t];
        }
        out
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q4_0<const N: usize>(w: &[BlockQ4_0], x: &[TokenQ; N]) -> [f32; N] {
        let xs = x.map(Blocks32::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let mut acc = [_mm_setzero_ps(); N];
        let mut offsets = [0.0f32; N];
        for (b, w) in w[..n].iter().enumerate() {
            let nibbles = unpack_nibbles(&w.qs);
            for t in 0..N {
                let x = &xs[t];
                let sums = nibble_products(nibbles, load_act(&x.q[b]));
                acc[t] = _mm_fmadd_ps(sums, _mm_set1_ps(w.d * x.d[b]), acc[t]);
                offsets[t] += w.d * 8.0 * x.sums[b];
            }
        }
        let mut out = [0.0f32; N];
        for t in 0..N {
            out[t] = hsum128(acc[t]) - offsets[t];
        }
        out
    }

    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_q8_0<const N: usize>(w: &[BlockQ8_0], x: &[TokenQ; N]) -> [f32; N] {
        let xs = x.map(Blocks32::of);
        let n = common_len(w.len(), &xs.map(|x| x.len()));
        let mut acc = [_mm256_setzero_ps(); N];
        for (b, w) in w[..n].iter().enumerate() {
            // SAFETY: `w.qs` is 32 readable bytes.
            let weights = unsafe { _mm256_loadu_si256(w.qs.as_ptr().cast()) };
            // |w| * (x * sign(w)) = w * x, with the unsigned operand first
            // as `maddubs` needs; activations are never -128.
            let magnitude = _mm256_sign_epi8(weights, weights);
            for t in 0..N {
                let x = &xs[t];
                let signed = _mm256_sign_epi8(load_act(&x.q[b]), weights);
                let sums = products(magnitude, signed);
                acc[t] = _mm256_fmadd_ps(sums, _mm256_set1_ps(w.d * x.d[b]), acc[t]);
            }
        }
        let mut out = [0.0f32; N];
        for t in 0..N {
            out[t] = hsum(acc[t]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random stream (no dependency needed).
    fn values(seed: u64, n: usize, scale: f32) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    }

    /// Q4_0/Q4_1/Q8_0 file blocks for `rows` x `cols` random weights.
    fn file_bytes(kind: NativeType, seed: u64, rows: usize, cols: usize) -> Vec<u8> {
        let raw = values(seed, rows * cols * 2, 1.0);
        let mut bytes = Vec::new();
        for (b, chunk) in raw
            .chunks_exact(BLOCK)
            .take(rows * cols / BLOCK)
            .enumerate()
        {
            let d = f16::from_f32(0.01 + (b % 7) as f32 * 0.003).to_le_bytes();
            bytes.extend_from_slice(&d);
            match kind {
                NativeType::Q4_0 | NativeType::Q4_1 => {
                    if kind == NativeType::Q4_1 {
                        bytes.extend_from_slice(&f16::from_f32(chunk[0] * 0.1).to_le_bytes());
                    }
                    for pair in chunk[..16].iter().zip(&chunk[16..]) {
                        let lo = ((pair.0 + 0.5) * 15.99) as u8 & 0x0f;
                        let hi = ((pair.1 + 0.5) * 15.99) as u8 & 0x0f;
                        bytes.push(lo | (hi << 4));
                    }
                }
                NativeType::Q8_0 => {
                    bytes.extend(chunk.iter().map(|v| ((v * 255.0) as i8) as u8));
                }
                NativeType::Q4K | NativeType::Q6K | NativeType::Q5_0 => {
                    return kquant_bytes(kind, seed, rows, cols);
                }
            }
        }
        bytes
    }

    /// K-quant or Q5_0 file blocks: candle's quantization of random
    /// weights (realistic scales), so the product is well conditioned.
    fn kquant_bytes(kind: NativeType, seed: u64, rows: usize, cols: usize) -> Vec<u8> {
        use candle_core::quantized::{GgmlDType, QTensor};
        use candle_core::{Device, Tensor};
        let dtype = match kind {
            NativeType::Q4K => GgmlDType::Q4K,
            NativeType::Q6K => GgmlDType::Q6K,
            _ => GgmlDType::Q5_0,
        };
        let w =
            Tensor::from_vec(values(seed, rows * cols, 1.0), (rows, cols), &Device::Cpu).unwrap();
        QTensor::quantize(&w, dtype)
            .unwrap()
            .data()
            .unwrap()
            .to_vec()
    }

    /// The product through f32 dequantized weights and activations.
    fn reference(m: &QMatrix, x: &[f32], tokens: usize) -> Vec<f32> {
        let mut row = vec![0.0; m.cols];
        let mut out = vec![0.0; tokens * m.rows];
        for r in 0..m.rows {
            m.row(r, &mut row).unwrap();
            for t in 0..tokens {
                let xt = &x[t * m.cols..(t + 1) * m.cols];
                out[t * m.rows + r] = row.iter().zip(xt).map(|(a, b)| a * b).sum();
            }
        }
        out
    }

    fn check(kind: NativeType, tokens: usize) {
        let (rows, cols) = (37, 96 * kind.block_values() / BLOCK);
        let bytes = file_bytes(kind, 3, rows, cols);
        let m = if kind.kept_as_bytes() && tokens % 2 == 1 {
            // Half the cases use the blocks in place in a shared buffer,
            // at an odd offset (the blocks need no alignment).
            let mut shared = vec![7u8; 3];
            shared.extend_from_slice(&bytes);
            let len = shared.len();
            QMatrix::from_shared_blocks(kind, Arc::new(shared), 3..len, rows, cols).unwrap()
        } else {
            QMatrix::from_file_blocks(kind, &bytes, rows, cols).unwrap()
        };
        if kind.kept_as_bytes() {
            // Unpacked types (Q4_0, Q4_1, Q8_0) take their structs' padded
            // size, the K-quants their interleaved layout; Q5_0 stays the
            // file's bytes.
            assert_eq!(m.memory_bytes(), bytes.len());
        }
        let x = values(11, tokens * cols, 4.0);
        let mut act = Activations::default();
        act.set(&x, cols).unwrap();
        let expected = reference(&m, &x, tokens);
        let scale = expected.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        let mut scalar = vec![0.0; tokens * rows];
        m.matmul_with(Simd::Scalar, &act, &mut scalar).unwrap();
        for simd in Simd::available() {
            let mut out = vec![0.0; tokens * rows];
            m.matmul_with(simd, &act, &mut out).unwrap();
            // 8-bit activations: errors of about 1% of the largest output.
            for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
                assert!(
                    (got - want).abs() <= 0.02 * scale,
                    "{kind:?} {simd:?} {tokens} tokens, output {i}: {got} vs {want}"
                );
            }
            // The SIMD and scalar kernels agree to rounding of the f32 sums.
            for (i, (fast, slow)) in out.iter().zip(&scalar).enumerate() {
                assert!(
                    (fast - slow).abs() <= 1e-4 * scale,
                    "{kind:?} {simd:?} output {i}: {fast} vs {slow}"
                );
            }
            // Each token's outputs are the same bits as when it is
            // multiplied alone, wherever it falls in the tiles of tokens.
            for (t, of_token) in out.chunks_exact(rows).enumerate() {
                let mut alone = Activations::default();
                alone.set(&x[t * cols..(t + 1) * cols], cols).unwrap();
                let mut single = vec![0.0; rows];
                m.matmul_with(simd, &alone, &mut single).unwrap();
                let same = of_token
                    .iter()
                    .zip(&single)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{kind:?} {simd:?} token {t} of {tokens}");
            }
        }
    }

    #[test]
    fn kernels_match_the_dequantized_product() {
        for kind in [
            NativeType::Q4_0,
            NativeType::Q4_1,
            NativeType::Q8_0,
            NativeType::Q4K,
            NativeType::Q6K,
            NativeType::Q5_0,
        ] {
            // Token counts around the tile of 4 tokens per kernel call.
            for tokens in [1, 3, 5, 17] {
                check(kind, tokens);
            }
        }
    }

    #[test]
    fn several_matrices_in_one_pass_give_each_ones_product() {
        let cols = 2 * QK_K;
        let a = QMatrix::from_file_blocks(
            NativeType::Q4K,
            &file_bytes(NativeType::Q4K, 1, 37, cols),
            37,
            cols,
        )
        .unwrap();
        let b = QMatrix::from_file_blocks(
            NativeType::Q6K,
            &file_bytes(NativeType::Q6K, 2, 16, cols),
            16,
            cols,
        )
        .unwrap();
        for tokens in [1, 9] {
            let x = values(3, tokens * cols, 2.0);
            let mut act = Activations::default();
            act.set(&x, cols).unwrap();
            let (mut one, mut two) = (vec![0.0; tokens * 37], vec![0.0; tokens * 16]);
            QMatrix::matmul_all(&act, vec![(&a, &mut one), (&b, &mut two)]).unwrap();
            let (mut alone_a, mut alone_b) = (vec![0.0; tokens * 37], vec![0.0; tokens * 16]);
            a.matmul(&act, &mut alone_a).unwrap();
            b.matmul(&act, &mut alone_b).unwrap();
            assert_eq!(one, alone_a);
            assert_eq!(two, alone_b);
            // A wrong output size is an error before anything runs.
            let mut short = vec![0.0; 3];
            assert!(QMatrix::matmul_all(&act, vec![(&a, &mut one), (&b, &mut short)]).is_err());
        }
    }

    #[test]
    fn requantized_matrices_keep_their_values() {
        let (rows, cols) = (5, 64);
        let w = values(5, rows * cols, 2.0);
        let m = QMatrix::quantize_q8_0(&w, rows, cols).unwrap();
        let mut row = vec![0.0; cols];
        for r in 0..rows {
            m.row(r, &mut row).unwrap();
            for (a, b) in row.iter().zip(&w[r * cols..]) {
                assert!((a - b).abs() <= 1.0 / 127.0 + 1e-6);
            }
        }
        assert_eq!(m.memory_bytes(), rows * cols / BLOCK * 36);
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        assert!(QMatrix::from_file_blocks(NativeType::Q4_1, &[0; 19], 1, 32).is_err());
        assert!(QMatrix::from_file_blocks(NativeType::Q8_0, &[0; 34], 1, 31).is_err());
        assert!(QMatrix::quantize_q8_0(&[0.0; 30], 1, 30).is_err());
        let m = QMatrix::quantize_q8_0(&[0.5; 64], 2, 32).unwrap();
        let mut act = Activations::default();
        act.set(&[1.0; 64], 64).unwrap();
        assert!(m.matmul(&act, &mut [0.0; 2]).is_err());
        assert!(m.row(2, &mut [0.0; 32]).is_err());
        assert!(act.set(&[1.0; 48], 32).is_err());
        // K-quant rows are whole super-blocks; sizes and ranges are checked.
        assert!(QMatrix::from_file_blocks(NativeType::Q4K, &[0; 144], 1, 128).is_err());
        assert!(QMatrix::from_file_blocks(NativeType::Q6K, &[0; 209], 1, 256).is_err());
        assert!(QMatrix::from_file_blocks(NativeType::Q5_0, &[0; 22], 1, 32).is_ok());
        let shared: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(vec![0u8; 300]);
        let at =
            |range| QMatrix::from_shared_blocks(NativeType::Q4K, shared.clone(), range, 1, 256);
        assert!(at(10..154).is_ok());
        assert!(at(200..344).is_err());
        assert!(at(0..145).is_err());
        assert!(QMatrix::from_file_blocks(NativeType::Q4K, &[0; 144], usize::MAX, 256).is_err());
    }
}
