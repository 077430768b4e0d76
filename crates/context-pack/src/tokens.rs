//! Token counting with tiktoken, cached by text hash.

use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;

/// The tokenizer a budget is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// GPT-4o's tokenizer (the default).
    #[default]
    O200kBase,
    /// GPT-4's and GPT-3.5's tokenizer.
    Cl100kBase,
}

fn bpe(encoding: Encoding) -> Result<&'static CoreBPE, crate::Error> {
    static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
    let slot = match encoding {
        Encoding::O200kBase => O200K.get_or_init(|| tiktoken_rs::o200k_base().ok()),
        Encoding::Cl100kBase => CL100K.get_or_init(|| tiktoken_rs::cl100k_base().ok()),
    };
    slot.as_ref().ok_or(crate::Error::Tokenizer(encoding))
}

/// Texts at most this long are counted without touching the cache.
const UNCACHED_LEN: usize = 256;

/// Counts tokens; clones share one cache of counts keyed by a hash of the
/// text, so re-counting an unchanged observation is a hash lookup.
///
/// ```
/// let counter = context_pack::TokenCounter::new(context_pack::Encoding::default()).unwrap();
/// assert_eq!(counter.count("hello world"), 2);
/// assert_eq!(counter.count(""), 0);
/// ```
#[derive(Clone)]
pub struct TokenCounter {
    bpe: &'static CoreBPE,
    encoding: Encoding,
    cache: Arc<Mutex<FxHashMap<u64, usize>>>,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

impl TokenCounter {
    /// A counter for `encoding` (loading it the first time takes ~0.1 s).
    pub fn new(encoding: Encoding) -> Result<Self, crate::Error> {
        Ok(TokenCounter {
            bpe: bpe(encoding)?,
            encoding,
            cache: Arc::new(Mutex::new(FxHashMap::default())),
        })
    }

    /// The encoding this counter measures in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Number of tokens in `text`.
    pub fn count(&self, text: &str) -> usize {
        if text.len() <= UNCACHED_LEN {
            return self.bpe.encode_ordinary(text).len();
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        if let Ok(cache) = self.cache.lock()
            && let Some(count) = cache.get(&key)
        {
            return *count;
        }
        let count = self.bpe.encode_ordinary(text).len();
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(key, count);
        }
        count
    }

    /// `Some(count)` when `text` holds at most `limit` tokens, else `None`,
    /// without tokenizing all of a text that is far over the limit: if a
    /// prefix already holds more than `limit` (plus a margin for merges at
    /// the cut), the whole does too.
    ///
    /// ```
    /// let counter = context_pack::TokenCounter::new(Default::default()).unwrap();
    /// assert_eq!(counter.count_within("hello world", 5), Some(2));
    /// assert_eq!(counter.count_within(&"word ".repeat(100_000), 50), None);
    /// ```
    pub fn count_within(&self, text: &str, limit: usize) -> Option<usize> {
        let probe = limit.saturating_add(16).saturating_mul(12);
        if text.len() > probe {
            let mut end = probe;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            if self.count(&text[..end]) > limit.saturating_add(16) {
                return None;
            }
        }
        let count = self.count(text);
        (count <= limit).then_some(count)
    }

    /// The longest prefix of `text` that fits in `max_tokens`, cut at a
    /// line boundary when one exists in the last quarter of the prefix.
    pub fn truncate<'t>(&self, text: &'t str, max_tokens: usize) -> &'t str {
        if self.count(text) <= max_tokens {
            return text;
        }
        let tokens = self.bpe.encode_ordinary(text);
        let kept = tokens.get(..max_tokens).unwrap_or(&tokens);
        let prefix_len = self.bpe.decode(kept).map(|s| s.len()).unwrap_or(0);
        let mut end = prefix_len.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        // Decoding may merge differently; shrink until it really fits.
        while end > 0 && self.count(&text[..end]) > max_tokens {
            end -= 1;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
        }
        let prefix = &text[..end];
        match prefix.rfind('\n') {
            Some(nl) if nl >= prefix.len() * 3 / 4 => &prefix[..=nl],
            _ => prefix,
        }
    }
}
