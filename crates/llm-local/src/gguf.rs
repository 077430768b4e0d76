//! Reading what the local engine needs from a GGUF file's metadata.

use std::collections::HashMap;

use candle_core::quantized::gguf_file::{Content, Value};

use super::LocalError;
use super::tokenizer::{PreTokenizer, Tokenizer};

/// The transformer families the engine runs. They share one forward
/// pass (pre-norm decoder, grouped-query attention, SwiGLU feed-forward)
/// and differ in their metadata prefix, how rotary embeddings pair a
/// head's dimensions, and whether q/k/v have biases (read when present).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Architecture {
    /// `llama` (SmolLM, Llama, Mistral-style files).
    Llama,
    /// `qwen2` (Qwen2, Qwen2.5, Qwen2.5-Coder): q/k/v biases, NEOX rotary.
    Qwen2,
}

impl Architecture {
    /// The architecture named by `general.architecture`.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "llama" => Some(Self::Llama),
            "qwen2" => Some(Self::Qwen2),
            _ => None,
        }
    }

    /// The prefix of its metadata keys (`llama.block_count`, ...).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
        }
    }

    /// How its rotary embeddings pair a head's dimensions.
    pub(crate) fn rope_style(self) -> RopeStyle {
        match self {
            // llama.cpp's converter permutes llama's q/k rows so that the
            // pairs are adjacent in the file.
            Self::Llama => RopeStyle::Adjacent,
            // Qwen2's q/k are stored as trained (Hugging Face's
            // `rotate_half`): dimension i pairs with i + head_dim/2.
            Self::Qwen2 => RopeStyle::Neox,
        }
    }
}

/// Which dimensions of a head a rotary embedding rotates together; pair
/// `i` (of `head_dim / 2`) turns by `position * base^(-2i/head_dim)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RopeStyle {
    /// Pair `i` is dimensions `(2i, 2i + 1)` (GGML's "normal" mode).
    Adjacent,
    /// Pair `i` is dimensions `(i, i + head_dim/2)` (GGML's NEOX mode).
    Neox,
}

/// Hyper-parameters of a model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelParams {
    pub(crate) architecture: Architecture,
    pub(crate) block_count: usize,
    pub(crate) embedding_length: usize,
    pub(crate) head_count: usize,
    pub(crate) head_count_kv: usize,
    pub(crate) rope_dim: usize,
    pub(crate) rope_style: RopeStyle,
    pub(crate) rope_freq_base: f32,
    pub(crate) rms_eps: f64,
    pub(crate) context_length: usize,
    /// The feed-forward width, when the file declares it (checked against
    /// the tensors).
    pub(crate) feed_forward_length: Option<usize>,
}

impl ModelParams {
    /// Dimensions of one attention head.
    pub(crate) fn head_dim(&self) -> usize {
        self.embedding_length / self.head_count
    }

    /// Key (or value) values per position.
    pub(crate) fn kv_dim(&self) -> usize {
        self.head_count_kv * self.head_dim()
    }
}

pub(crate) struct Meta<'a> {
    map: &'a HashMap<String, Value>,
}

impl<'a> Meta<'a> {
    pub(crate) fn new(content: &'a Content) -> Self {
        Self::from_map(&content.metadata)
    }

    /// Metadata given as a map (tests build one by hand).
    pub(crate) fn from_map(map: &'a HashMap<String, Value>) -> Self {
        Self { map }
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

    /// The model's architecture parameters, read under the prefix of its
    /// `general.architecture` (`llama` or `qwen2`).
    pub(crate) fn params(&self) -> Result<ModelParams, LocalError> {
        let name = self.string("general.architecture").unwrap_or("");
        let architecture = Architecture::from_name(name).ok_or_else(|| {
            LocalError::Unsupported(format!(
                "architecture `{name}`; the embedded engine runs `llama` (SmolLM, Llama, Mistral-style) and `qwen2` (Qwen2, Qwen2.5) GGUF files"
            ))
        })?;
        let prefix = architecture.name();
        let key = |k: &str| format!("{prefix}.{k}");
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
        let rope_freq_base = self
            .float(&key("rope.freq_base"))
            .map_or(10_000.0, |v| v as f32);
        let rms_eps = self
            .float(&key("attention.layer_norm_rms_epsilon"))
            .unwrap_or(1e-5);
        let valid = rope_freq_base.is_finite()
            && rope_freq_base > 1.0
            && rms_eps.is_finite()
            && rms_eps >= 0.0;
        if !valid {
            return Err(LocalError::Format(format!(
                "invalid rope base {rope_freq_base} or norm epsilon {rms_eps}"
            )));
        }
        let feed_forward_length = match self.get(&key("feed_forward_length")) {
            None => None,
            Some(_) => Some(self.required_usize(&key("feed_forward_length"))?),
        };
        Ok(ModelParams {
            architecture,
            block_count: self.required_usize(&key("block_count"))?,
            embedding_length,
            head_count,
            head_count_kv,
            rope_dim,
            rope_style: architecture.rope_style(),
            rope_freq_base,
            rms_eps,
            context_length: self.required_usize(&key("context_length")).unwrap_or(2048),
            feed_forward_length,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata of Qwen2.5-Coder-1.5B-Instruct's GGUF (the keys the engine
    /// reads), under `arch`'s prefix.
    fn metadata(arch: &str) -> HashMap<String, Value> {
        let mut map = HashMap::new();
        map.insert(
            "general.architecture".to_owned(),
            Value::String(arch.to_owned()),
        );
        let mut set = |key: &str, value: Value| {
            map.insert(format!("{arch}.{key}"), value);
        };
        set("block_count", Value::U32(28));
        set("context_length", Value::U32(32_768));
        set("embedding_length", Value::U32(1536));
        set("feed_forward_length", Value::U32(8960));
        set("attention.head_count", Value::U32(12));
        set("attention.head_count_kv", Value::U32(2));
        set("rope.freq_base", Value::F32(1_000_000.0));
        set("attention.layer_norm_rms_epsilon", Value::F32(1e-6));
        map
    }

    #[test]
    fn qwen2_parameters_are_read_under_their_prefix() {
        let map = metadata("qwen2");
        let p = Meta::from_map(&map).params().unwrap();
        assert_eq!(p.architecture, Architecture::Qwen2);
        assert_eq!(p.rope_style, RopeStyle::Neox);
        assert_eq!(
            (
                p.block_count,
                p.embedding_length,
                p.head_count,
                p.head_count_kv
            ),
            (28, 1536, 12, 2)
        );
        assert_eq!((p.head_dim(), p.kv_dim(), p.rope_dim), (128, 256, 128));
        assert_eq!(p.rope_freq_base, 1_000_000.0);
        assert!((p.rms_eps - 1e-6).abs() < 1e-12);
        assert_eq!(p.context_length, 32_768);
        assert_eq!(p.feed_forward_length, Some(8960));
    }

    #[test]
    fn llama_parameters_keep_adjacent_pairs() {
        let map = metadata("llama");
        let p = Meta::from_map(&map).params().unwrap();
        assert_eq!(p.architecture, Architecture::Llama);
        assert_eq!(p.rope_style, RopeStyle::Adjacent);
        assert_eq!(p.block_count, 28);
    }

    #[test]
    fn keys_of_another_architecture_are_not_read() {
        // A qwen2 file whose keys say `llama.`: the parameters are missing.
        let mut map = metadata("llama");
        map.insert(
            "general.architecture".to_owned(),
            Value::String("qwen2".into()),
        );
        let err = Meta::from_map(&map).params().unwrap_err();
        assert!(err.to_string().contains("qwen2.embedding_length"), "{err}");
    }

    #[test]
    fn an_unknown_architecture_is_a_clear_error() {
        for arch in ["phi3", "gemma2", ""] {
            let map = metadata(arch);
            let err = Meta::from_map(&map).params().unwrap_err();
            assert!(matches!(err, LocalError::Unsupported(_)), "{err}");
            let text = err.to_string();
            assert!(text.contains(&format!("architecture `{arch}`")), "{text}");
            assert!(text.contains("qwen2") && text.contains("llama"), "{text}");
        }
    }

    #[test]
    fn inconsistent_shapes_are_rejected() {
        let mut map = metadata("qwen2");
        map.insert("qwen2.attention.head_count_kv".into(), Value::U32(5));
        assert!(Meta::from_map(&map).params().is_err());
        let mut map = metadata("qwen2");
        map.insert("qwen2.rope.dimension_count".into(), Value::U32(64));
        assert!(matches!(
            Meta::from_map(&map).params(),
            Err(LocalError::Unsupported(_))
        ));
        let mut map = metadata("qwen2");
        map.insert("qwen2.feed_forward_length".into(), Value::U32(0));
        assert!(Meta::from_map(&map).params().is_err());
        let mut map = metadata("qwen2");
        map.insert("qwen2.rope.freq_base".into(), Value::F32(f32::NAN));
        assert!(Meta::from_map(&map).params().is_err());
    }
}
