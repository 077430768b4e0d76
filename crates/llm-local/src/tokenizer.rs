//! GPT-2 style byte-level BPE, rebuilt from a GGUF file's
//! `tokenizer.ggml.*` metadata.
//!
//! The pre-tokenizer is the one SmolLM, StarCoder and GPT-2 use: every
//! digit on its own, then GPT-2's split
//! (`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`),
//! written as a scanner instead of a regular expression. Each piece is
//! mapped byte by byte to GPT-2's printable alphabet and merged by merge
//! rank. Decoding maps the alphabet back to bytes.

use std::collections::HashMap;
use std::sync::Mutex;

use super::LocalError;

/// GGUF token type of control tokens (`<|im_start|>`, `<|endoftext|>`).
pub(crate) const TOKEN_TYPE_CONTROL: i32 = 3;

/// A byte-level BPE tokenizer.
pub struct Tokenizer {
    /// Token text in GPT-2's byte alphabet, by id.
    tokens: Vec<String>,
    /// Raw bytes of each token (empty for control tokens).
    bytes: Vec<Vec<u8>>,
    /// Whether each token is a control token.
    control: Vec<bool>,
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
            .finish_non_exhaustive()
    }
}

impl Tokenizer {
    /// Builds the tokenizer from its vocabulary (in GPT-2's byte alphabet),
    /// token types (GGUF numbering; may be empty) and merges (`"a b"`).
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
            .map(|i| token_types.get(i) == Some(&TOKEN_TYPE_CONTROL))
            .collect();
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
            ids,
            merges: merge_map,
            byte_ids,
            cache: Mutex::new(HashMap::new()),
        })
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

    /// Whether `id` is a control token (never produced from plain text).
    pub fn is_control(&self, id: u32) -> bool {
        self.control.get(id as usize).copied().unwrap_or(false)
    }

    /// The bytes a token stands for (empty for control and unknown ids).
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.bytes.get(id as usize).map_or(&[], Vec::as_slice)
    }

    /// Encodes plain text. Control tokens written in the text (such as
    /// `<|im_end|>`) are encoded as plain text, never as control tokens, so
    /// message contents cannot forge the chat template.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        for piece in pre_tokenize(text) {
            self.encode_piece(piece, &mut out);
        }
        out
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

/// Splits text the way SmolLM's pre-tokenizer does: digits one by one, then
/// GPT-2's pattern on the rest.
pub(crate) fn pre_tokenize(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c.is_numeric() {
            if start < i {
                gpt2_split(&text[start..i], &mut pieces);
            }
            let end = i + c.len_utf8();
            pieces.push(&text[i..end]);
            start = end;
        }
    }
    if start < text.len() {
        gpt2_split(&text[start..], &mut pieces);
    }
    pieces
}

fn is_letter(c: char) -> bool {
    c.is_alphabetic() && !c.is_numeric()
}

fn is_other(c: char) -> bool {
    !c.is_whitespace() && !c.is_alphabetic() && !c.is_numeric()
}

/// GPT-2's pattern as a scanner, over text without digits (numbers are
/// still handled, for completeness).
fn gpt2_split<'a>(text: &'a str, pieces: &mut Vec<&'a str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let mut k = 0;
    while k < chars.len() {
        let (start, c) = chars[k];
        // Contractions.
        if c == '\'' {
            let rest = &text[start + 1..];
            let len = ["s", "t", "m", "d", "re", "ve", "ll"]
                .iter()
                .find(|suffix| rest.starts_with(*suffix))
                .map(|suffix| suffix.len());
            if let Some(len) = len {
                let end = start + 1 + len;
                pieces.push(&text[start..end]);
                k += 1 + len; // contraction suffixes are ASCII
                continue;
            }
        }
        let (body, first) = if c == ' ' {
            match chars.get(k + 1) {
                Some(&(_, next)) if !next.is_whitespace() => (k + 1, next),
                _ => (k, c),
            }
        } else {
            (k, c)
        };
        let class: Option<fn(char) -> bool> = if is_letter(first) {
            Some(is_letter)
        } else if first.is_numeric() {
            Some(char::is_numeric)
        } else if is_other(first) {
            Some(is_other)
        } else {
            None
        };
        if let Some(class) = class {
            let mut j = body;
            while chars.get(j).is_some_and(|&(_, ch)| class(ch)) {
                j += 1;
            }
            pieces.push(&text[start..end_of(j)]);
            k = j;
            continue;
        }
        // Whitespace: a run, leaving its last character to the next word.
        let mut j = k;
        while chars.get(j).is_some_and(|&(_, ch)| ch.is_whitespace()) {
            j += 1;
        }
        let j = if j < chars.len() && j - k > 1 {
            j - 1
        } else {
            j
        };
        pieces.push(&text[start..end_of(j)]);
        k = j;
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
    fn pre_tokenizer_matches_the_gpt2_pattern_with_single_digits() {
        assert_eq!(
            pre_tokenize("Hello world, it's 2024!\n\n  done  "),
            vec![
                "Hello", " world", ",", " it", "'s", " ", "2", "0", "2", "4", "!", "\n\n ",
                " done", "  "
            ]
        );
        assert_eq!(pre_tokenize("a\tb"), vec!["a", "\t", "b"]);
        assert_eq!(pre_tokenize("  \nx"), vec!["  ", "\n", "x"]);
        assert_eq!(
            pre_tokenize("{\"a\": 1}"),
            vec!["{\"", "a", "\":", " ", "1", "}"]
        );
        assert_eq!(pre_tokenize("héllo wörld"), vec!["héllo", " wörld"]);
        assert!(pre_tokenize("").is_empty());
    }

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
}
