//! Reading what the local engine needs from a GGUF file's metadata.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};

use super::LocalError;
use super::tokenizer::{PreTokenizer, Tokenizer};

/// Hyper-parameters of a llama-architecture model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LlamaParams {
    pub(crate) block_count: usize,
    pub(crate) embedding_length: usize,
    pub(crate) head_count: usize,
    pub(crate) head_count_kv: usize,
    pub(crate) rope_dim: usize,
    pub(crate) rope_freq_base: f32,
    pub(crate) rms_eps: f64,
    pub(crate) context_length: usize,
}

pub(crate) struct Meta<'a> {
    map: &'a HashMap<String, Value>,
}

impl<'a> Meta<'a> {
    pub(crate) fn new(content: &'a Content) -> Self {
        Self {
            map: &content.metadata,
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub(crate) fn string(&self, key: &str) -> Option<&'a str> {
        match self.get(key) {
            Some(Value::String(s)) => Some(s.as_str()),
            _ => None,
        }
    }

    pub(crate) fn uint(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            Value::U8(v) => Some(u64::from(*v)),
            Value::U16(v) => Some(u64::from(*v)),
            Value::U32(v) => Some(u64::from(*v)),
            Value::U64(v) => Some(*v),
            Value::I8(v) => u64::try_from(*v).ok(),
            Value::I16(v) => u64::try_from(*v).ok(),
            Value::I32(v) => u64::try_from(*v).ok(),
            Value::I64(v) => u64::try_from(*v).ok(),
            _ => None,
        }
    }

    fn float(&self, key: &str) -> Option<f64> {
        match self.get(key)? {
            Value::F32(v) => Some(f64::from(*v)),
            Value::F64(v) => Some(*v),
            _ => self.uint(key).map(|v| v as f64),
        }
    }

    fn required_usize(&self, key: &str) -> Result<usize, LocalError> {
        self.uint(key)
            .and_then(|v| usize::try_from(v).ok())
            .filter(|&v| v > 0)
            .ok_or_else(|| LocalError::Format(format!("missing or invalid metadata `{key}`")))
    }

    pub(crate) fn bool(&self, key: &str) -> Option<bool> {
        match self.get(key)? {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, LocalError> {
        match self.get(key) {
            Some(Value::Array(values)) => values
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(LocalError::Format(format!(
                        "metadata `{key}` is not an array of strings"
                    ))),
                })
                .collect(),
            None => Ok(Vec::new()),
            Some(_) => Err(LocalError::Format(format!(
                "metadata `{key}` is not an array"
            ))),
        }
    }

    fn ints(&self, key: &str) -> Vec<i32> {
        match self.get(key) {
            Some(Value::Array(values)) => values
                .iter()
                .map(|v| match v {
                    Value::I32(i) => *i,
                    Value::U32(u) => i32::try_from(*u).unwrap_or(-1),
                    Value::I8(i) => i32::from(*i),
                    Value::U8(u) => i32::from(*u),
                    _ => -1,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The model's architecture parameters; only `llama` is supported.
    pub(crate) fn llama_params(&self) -> Result<LlamaParams, LocalError> {
        let arch = self.string("general.architecture").unwrap_or("");
        if arch != "llama" {
            return Err(LocalError::Unsupported(format!(
                "architecture `{arch}`; the embedded engine runs llama-architecture models (SmolLM, Llama, Mistral-style GGUF files)"
            )));
        }
        let key = |k: &str| format!("llama.{k}");
        let embedding_length = self.required_usize(&key("embedding_length"))?;
        let head_count = self.required_usize(&key("attention.head_count"))?;
        let head_count_kv = self
            .required_usize(&key("attention.head_count_kv"))
            .unwrap_or(head_count);
        if !embedding_length.is_multiple_of(head_count) || !head_count.is_multiple_of(head_count_kv)
        {
            return Err(LocalError::Format(format!(
                "inconsistent attention shape: {embedding_length} dims, {head_count} heads, {head_count_kv} kv heads"
            )));
        }
        let head_dim = embedding_length / head_count;
        let rope_dim = self
            .required_usize(&key("rope.dimension_count"))
            .unwrap_or(head_dim);
        if rope_dim != head_dim || !head_dim.is_multiple_of(2) {
            return Err(LocalError::Unsupported(format!(
                "partial rotary embeddings ({rope_dim} of {head_dim} dims)"
            )));
        }
        Ok(LlamaParams {
            block_count: self.required_usize(&key("block_count"))?,
            embedding_length,
            head_count,
            head_count_kv,
            rope_dim,
            rope_freq_base: self
                .float(&key("rope.freq_base"))
                .map_or(10_000.0, |v| v as f32),
            rms_eps: self
                .float(&key("attention.layer_norm_rms_epsilon"))
                .unwrap_or(1e-5),
            context_length: self.required_usize(&key("context_length")).unwrap_or(2048),
        })
    }

    /// The tokenizer described by `tokenizer.ggml.*`.
    pub(crate) fn tokenizer(&self) -> Result<Tokenizer, LocalError> {
        let model = self.string("tokenizer.ggml.model").unwrap_or("");
        if model != "gpt2" {
            return Err(LocalError::Unsupported(format!(
                "tokenizer `{model}`; only byte-level BPE (`gpt2`) tokenizers are supported"
            )));
        }
        let tokens = self.strings("tokenizer.ggml.tokens")?;
        let merges = self.strings("tokenizer.ggml.merges")?;
        let types = self.ints("tokenizer.ggml.token_type");
        let id = |key: &str| self.uint(key).and_then(|v| u32::try_from(v).ok());
        Tokenizer::new(
            tokens,
            &types,
            &merges,
            id("tokenizer.ggml.bos_token_id"),
            id("tokenizer.ggml.eos_token_id"),
        )
        .map(|t| t.with_pre_tokenizer(PreTokenizer::from_gguf(self.string("tokenizer.ggml.pre"))))
    }
}
