//! GPT-2 style byte-level BPE, rebuilt from a GGUF file's
//! `tokenizer.ggml.*` metadata.
//!
//! Text is first cut at the vocabulary's user-defined tokens (GGUF token
//! type 4, such as Qwen's `<tool_call>`), which stand for themselves as
//! in Hugging Face `tokenizers` and llama.cpp. The rest is normalised
//! (NFC, for Qwen2) and split by the pre-tokenizer `tokenizer.ggml.pre`
//! names (see [`PreTokenizer`]); each piece is mapped byte by byte to
//! GPT-2's printable alphabet and merged by merge rank. Decoding maps the
//! alphabet back to bytes. Control tokens (`<|im_end|>`) are never
//! produced from text: the chat template inserts them by id.

use std::collections::HashMap;
use std::sync::Mutex;

use std::borrow::Cow;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};

use super::LocalError;

mod pretokenize;

pub(crate) use self::pretokenize::PreTokenizer;

/// GGUF token type of control tokens (`<|im_start|>`, `<|endoftext|>`).
pub(crate) const TOKEN_TYPE_CONTROL: i32 = 3;
/// GGUF token type of user-defined tokens (Qwen's `<tool_call>`): matched
/// as whole tokens in text.
pub(crate) const TOKEN_TYPE_USER_DEFINED: i32 = 4;
/// GGUF token type of unused (padding) tokens.
pub(crate) const TOKEN_TYPE_UNUSED: i32 = 5;

/// A byte-level BPE tokenizer.
pub struct Tokenizer {
    /// Token text in GPT-2's byte alphabet, by id.
    tokens: Vec<String>,
    /// Raw bytes of each token (empty for control and unused tokens).
    bytes: Vec<Vec<u8>>,
    /// Whether each token is a control or unused token.
    control: Vec<bool>,
    /// User-defined tokens as `(text, id)`, longest first.
    user_defined: Vec<(String, u32)>,
    pre: PreTokenizer,
    ids: HashMap<String, u32>,
    /// `(left, right) -> (rank, merged id)`.
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// Byte -> id of the single-byte token. A few byte-level vocabularies
    /// (SmolLM2's among them) lack some control bytes; like Hugging Face
    /// `tokenizers` without an unknown token, encoding drops those bytes.
    byte_ids: [Option<u32>; 256],
    bos: Option<u32>,
    eos: Option<u32>,
    cache: Mutex<HashMap<String, Vec<u32>>>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.tokens.len())
            .field("merges", &self.merges.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .field("pre", &self.pre)
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Builds the tokenizer from its vocabulary (in GPT-2's byte alphabet),
    /// token types (GGUF numbering; may be empty) and merges (`"a b"`),
    /// with SmolLM's pre-tokenizer ([`Tokenizer::with_pre_tokenizer`]
    /// changes it).
    pub(crate) fn new(
        tokens: Vec<String>,
        token_types: &[i32],
        merges: &[String],
        bos: Option<u32>,
        eos: Option<u32>,
    ) -> Result<Self, LocalError> {
        if tokens.is_empty() {
            return Err(LocalError::Tokenizer("the vocabulary is empty".into()));
        }
        let n = u32::try_from(tokens.len())
            .map_err(|_| LocalError::Tokenizer("the vocabulary is too large".into()))?;
        let mut ids = HashMap::with_capacity(tokens.len());
        for (id, token) in (0..n).zip(&tokens) {
            ids.entry(token.clone()).or_insert(id);
        }
        let control: Vec<bool> = (0..tokens.len())
            .map(|i| {
                matches!(
                    token_types.get(i),
                    Some(&(TOKEN_TYPE_CONTROL | TOKEN_TYPE_UNUSED))
                )
            })
            .collect();
        let mut user_defined: Vec<(String, u32)> = (0..n)
            .zip(&tokens)
            .filter(|&(id, token)| {
                token_types.get(id as usize) == Some(&TOKEN_TYPE_USER_DEFINED)
                    && !token.is_empty()
                    && ids.get(token) == Some(&id)
            })
            .map(|(id, token)| (token.clone(), id))
            .collect();
        user_defined.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let decode_map = byte_decoder();
        let bytes: Vec<Vec<u8>> = tokens
            .iter()
            .zip(&control)
            .map(|(token, &is_control)| {
                if is_control {
                    Vec::new()
                } else {
                    token_to_bytes(token, &decode_map)
                }
            })
            .collect();
        let encoder = byte_encoder();
        let mut byte_ids = [None; 256];
        for (slot, ch) in byte_ids.iter_mut().zip(encoder) {
            *slot = ids.get(&ch.to_string()).copied();
        }
        let missing = byte_ids.iter().filter(|id| id.is_none()).count();
        if missing > 64 {
            return Err(LocalError::Tokenizer(format!(
                "the vocabulary has no token for {missing} of the 256 bytes; only byte-level BPE (tokenizer.ggml.model = gpt2) is supported"
            )));
        }
        let mut merge_map = HashMap::with_capacity(merges.len());
        for (rank, merge) in (0u32..).zip(merges) {
            let Some((left, right)) = merge.split_once(' ') else {
                return Err(LocalError::Tokenizer(format!(
                    "merge #{rank} ({merge:?}) is not two tokens separated by a space"
                )));
            };
            let (Some(&l), Some(&r)) = (ids.get(left), ids.get(right)) else {
                continue;
            };
            let Some(&merged) = ids.get(&format!("{left}{right}")) else {
                continue;
            };
            merge_map.entry((l, r)).or_insert((rank, merged));
        }
        let check = |id: Option<u32>, what: &str| match id {
            Some(id) if id >= n => Err(LocalError::Tokenizer(format!(
                "the {what} token id {id} is outside the vocabulary of {n}"
            ))),
            other => Ok(other),
        };
        Ok(Self {
            bos: check(bos, "bos")?,
            eos: check(eos, "eos")?,
            tokens,
            bytes,
            control,
            user_defined,
            pre: PreTokenizer::SmolLm,
            ids,
            merges: merge_map,
            byte_ids,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// Uses `pre` to split text.
    pub(crate) fn with_pre_tokenizer(mut self, pre: PreTokenizer) -> Self {
        self.pre = pre;
        if let Ok(mut cache) = self.cache.lock() {
            cache.clear();
        }
        self
    }

    /// A tokenizer of the 256 byte tokens plus `extra` tokens (text, GGUF
    /// type), without merges, for tests.
    #[cfg(test)]
    pub(crate) fn for_tests(extra: &[(&str, i32)]) -> Self {
        let mut tokens: Vec<String> = byte_encoder().iter().map(|c| c.to_string()).collect();
        let mut types = vec![1; tokens.len()];
        for (token, ty) in extra {
            tokens.push((*token).to_owned());
            types.push(*ty);
        }
        match Self::new(tokens, &types, &[], None, None) {
            Ok(t) => t.with_pre_tokenizer(PreTokenizer::Qwen2),
            Err(e) => panic!("{e}"),
        }
    }

    /// Number of tokens in the vocabulary.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The id of a token given by its text (as in the vocabulary, e.g.
    /// `"<|im_end|>"`).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The beginning-of-sequence token, if the model has one.
    pub fn bos(&self) -> Option<u32> {
        self.bos
    }

    /// The end-of-sequence token, if the model has one.
    pub fn eos(&self) -> Option<u32> {
        self.eos
    }

    /// Whether `id` is a control or unused token (never produced from
    /// plain text).
    pub fn is_control(&self, id: u32) -> bool {
        self.control.get(id as usize).copied().unwrap_or(false)
    }

    /// Whether `id` is a user-defined token (such as Qwen's `<tool_call>`),
    /// which text that spells it is encoded to.
    pub fn is_user_defined(&self, id: u32) -> bool {
        self.user_defined.iter().any(|&(_, u)| u == id)
    }

    /// The bytes a token stands for (empty for control, unused and unknown
    /// ids).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Encodes plain text. User-defined tokens written in the text (Qwen's
    /// `<tool_call>`) become those tokens, as with the model's own
    /// tokenizer; control tokens written in the text (such as `<|im_end|>`)
    /// are encoded as plain text, never as control tokens, so message
    /// contents cannot forge the chat template.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut rest = text;
        while let Some((at, token, id)) = self.next_user_defined(rest) {
            self.encode_text(&rest[..at], &mut out);
            out.push(id);
            rest = &rest[at + token.len()..];
        }
        self.encode_text(rest, &mut out);
        out
    }

    /// The first user-defined token in `text` (the longest where several
    /// start at the same place): its offset, text and id.
    fn next_user_defined<'t>(&'t self, text: &str) -> Option<(usize, &'t str, u32)> {
        if self.user_defined.is_empty() {
            return None;
        }
        text.char_indices().find_map(|(at, _)| {
            let rest = &text[at..];
            self.user_defined
                .iter()
                .find(|(token, _)| rest.starts_with(token.as_str()))
                .map(|(token, id)| (at, token.as_str(), *id))
        })
    }

    /// Encodes text without user-defined tokens.
    fn encode_text(&self, text: &str, out: &mut Vec<u32>) {
        if text.is_empty() {
            return;
        }
        let text: Cow<'_, str> =
            if self.pre.normalizes_nfc() && is_nfc_quick(text.chars()) != IsNormalized::Yes {
                Cow::Owned(text.nfc().collect())
            } else {
                Cow::Borrowed(text)
            };
        for piece in self.pre.split(&text) {
            self.encode_piece(piece, out);
        }
    }

    /// Decodes tokens to text, skipping control tokens; invalid UTF-8 is
    /// replaced.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&id| self.token_bytes(id).iter().copied())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn encode_piece(&self, piece: &str, out: &mut Vec<u32>) {
        if let Ok(cache) = self.cache.lock()
            && let Some(ids) = cache.get(piece)
        {
            out.extend_from_slice(ids);
            return;
        }
        let mut word: Vec<u32> = piece
            .bytes()
            .filter_map(|b| self.byte_ids[usize::from(b)])
            .collect();
        loop {
            let mut best: Option<(usize, u32, u32)> = None;
            for (i, pair) in word.windows(2).enumerate() {
                if let [l, r] = pair
                    && let Some(&(rank, merged)) = self.merges.get(&(*l, *r))
                    && best.is_none_or(|(_, best_rank, _)| rank < best_rank)
                {
                    best = Some((i, rank, merged));
                }
            }
            let Some((i, _, merged)) = best else { break };
            word[i] = merged;
            word.remove(i + 1);
        }
        out.extend_from_slice(&word);
        if piece.len() <= 64
            && let Ok(mut cache) = self.cache.lock()
        {
            if cache.len() > 100_000 {
                cache.clear();
            }
            cache.insert(piece.to_owned(), word);
        }
    }
}

/// GPT-2's map from bytes to printable characters.
fn byte_encoder() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut extra = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        map[usize::from(b)] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + extra).unwrap_or('\0');
            extra += 1;
            c
        };
    }
    map
}

fn byte_decoder() -> HashMap<char, u8> {
    byte_encoder()
        .iter()
        .zip(0..=255u8)
        .map(|(&c, b)| (c, b))
        .collect()
}

fn token_to_bytes(token: &str, decoder: &HashMap<char, u8>) -> Vec<u8> {
    let mut out = Vec::with_capacity(token.len());
    for c in token.chars() {
        match decoder.get(&c) {
            Some(&b) => out.push(b),
            // Not in the byte alphabet (a user-defined token): keep its UTF-8.
            None => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_alphabet_is_a_bijection() {
        let enc = byte_encoder();
        let dec = byte_decoder();
        assert_eq!(dec.len(), 256);
        assert_eq!(enc[usize::from(b' ')], 'Ġ');
        assert_eq!(enc[usize::from(b'\n')], 'Ċ');
        for b in 0..=255u8 {
            assert_eq!(dec[&enc[usize::from(b)]], b);
        }
    }

    fn toy() -> Tokenizer {
        let enc = byte_encoder();
        let mut tokens: Vec<String> = enc.iter().map(|c| c.to_string()).collect();
        tokens.extend(["ab", "abc", "Ġa", "<|end|>"].map(String::from));
        let mut types = vec![1; tokens.len()];
        if let Some(last) = types.last_mut() {
            *last = TOKEN_TYPE_CONTROL;
        }
        let merges = ["a b", "ab c", "Ġ a"].map(String::from);
        Tokenizer::new(tokens, &types, &merges, None, Some(259)).unwrap()
    }

    #[test]
    fn merges_apply_by_rank_and_round_trip() {
        let t = toy();
        let ids = t.encode("abc ab");
        // "a b" (rank 0) wins over "Ġ a" (rank 2).
        assert_eq!(ids, vec![257, u32::from(b' '), 256]);
        assert_eq!(t.decode(&ids), "abc ab");
        assert_eq!(t.decode(&[259]), "", "control tokens decode to nothing");
        assert!(t.is_control(259));
        assert_eq!(
            t.encode("<|end|>").len(),
            7,
            "control text stays plain text"
        );
        let text = "naïve 🦀\r\n";
        assert_eq!(t.decode(&t.encode(text)), text);
    }

    #[test]
    fn broken_vocabularies_are_errors() {
        assert!(Tokenizer::new(Vec::new(), &[], &[], None, None).is_err());
        let only_a = vec!["a".to_owned()];
        assert!(Tokenizer::new(only_a, &[], &[], None, None).is_err());
        // A few missing bytes are dropped, as Hugging Face does.
        let enc = byte_encoder();
        let mut tokens: Vec<String> = enc.iter().map(|c| c.to_string()).collect();
        tokens[4] = "<unused>".into();
        let t = Tokenizer::new(tokens, &[], &[], None, None).unwrap();
        assert_eq!(t.encode("a\u{4}b"), vec![97, 98]);
        let enc = byte_encoder();
        let tokens: Vec<String> = enc.iter().map(|c| c.to_string()).collect();
        assert!(Tokenizer::new(tokens.clone(), &[], &["ab".into()], None, None).is_err());
        assert!(Tokenizer::new(tokens, &[], &[], None, Some(999)).is_err());
    }

    #[test]
    fn user_defined_tokens_are_matched_in_text() {
        let enc = byte_encoder();
        let mut tokens: Vec<String> = enc.iter().map(|c| c.to_string()).collect();
        tokens.extend(["<tc>", "<tc>x", "<|c|>", "[PAD]"].map(String::from));
        let mut types = vec![1; tokens.len()];
        types[256] = TOKEN_TYPE_USER_DEFINED;
        types[257] = TOKEN_TYPE_USER_DEFINED;
        types[258] = TOKEN_TYPE_CONTROL;
        types[259] = TOKEN_TYPE_UNUSED;
        let t = Tokenizer::new(tokens, &types, &[], None, None)
            .unwrap()
            .with_pre_tokenizer(PreTokenizer::Qwen2);
        assert_eq!(t.encode("a<tc>b"), vec![97, 256, 98]);
        assert_eq!(t.encode("<tc>x<tc>"), vec![257, 256], "longest first");
        assert_eq!(t.encode("<|c|>").len(), 5, "control text stays text");
        assert!(t.is_user_defined(256) && !t.is_user_defined(258));
        assert!(t.is_control(258) && t.is_control(259) && !t.is_control(256));
        assert_eq!(t.decode(&[97, 256, 259]), "a<tc>");
        // NFC before splitting: a decomposed é is encoded as the composed one.
        assert_eq!(t.encode("e\u{301}"), t.encode("\u{e9}"));
    }

    /// Reference pieces and ids, from
    /// `scripts/qwen2_tokenizer_reference.py` (Hugging Face `tokenizers`
    /// configured as transformers configures every Qwen2 tokenizer, on the
    /// vocabulary and merges of Qwen2.5-Coder-1.5B-Instruct's GGUF).
    fn qwen2_reference() -> Vec<(String, Vec<String>, Vec<u32>)> {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../tests/data/qwen2_tokenizer.json")).unwrap();
        data["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| {
                let pieces = case["pieces"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap().to_owned())
                    .collect();
                let ids = case["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|id| u32::try_from(id.as_u64().unwrap()).unwrap())
                    .collect();
                (case["text"].as_str().unwrap().to_owned(), pieces, ids)
            })
            .collect()
    }

    #[test]
    fn qwen2_split_matches_the_reference_pieces() {
        let cases = qwen2_reference();
        assert!(cases.len() > 100);
        for (text, pieces, _) in &cases {
            let normalized: String = text.nfc().collect();
            assert_eq!(PreTokenizer::Qwen2.split(&normalized), *pieces, "{text:?}");
        }
    }

    /// With `REPO_AGENT_QWEN_MODEL` set to the Qwen2.5-Coder GGUF, the
    /// tokenizer read from it gives the reference ids.
    #[test]
    #[ignore = "needs the Qwen2.5-Coder-1.5B GGUF named by REPO_AGENT_QWEN_MODEL"]
    fn qwen2_ids_match_the_reference() {
        let path = std::env::var_os("REPO_AGENT_QWEN_MODEL")
            .expect("REPO_AGENT_QWEN_MODEL names the Qwen2.5-Coder GGUF");
        let mut file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let content = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
        let t = crate::gguf::Meta::new(&content).tokenizer().unwrap();
        assert_eq!(t.pre, PreTokenizer::Qwen2);
        let cases = qwen2_reference();
        let mut ids_total = 0;
        for (text, _, expected) in &cases {
            let ids = t.encode(text);
            assert_eq!(&ids, expected, "{text:?}");
            assert_eq!(t.decode(&ids), text.nfc().collect::<String>());
            ids_total += ids.len();
        }
        eprintln!("{} texts, {ids_total} ids match the reference", cases.len());
    }
}
