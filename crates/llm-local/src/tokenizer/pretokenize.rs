//! Pre-tokenizers: how text is cut into pieces before byte-pair merging.
//!
//! Each is the scanner equivalent of a regular expression with lookahead
//! (which the `regex` crate does not have), following the alternatives
//! in order as a backtracking engine would. `\p{L}` and `\p{N}` are the
//! Unicode general categories (from `regex-syntax`'s tables), `\s` is the
//! White_Space property.

use std::sync::OnceLock;

use tracing::warn;

/// The pre-tokenizer a GGUF file names in `tokenizer.ggml.pre`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PreTokenizer {
    /// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
    Gpt2,
    /// SmolLM, StarCoder: every digit on its own, then GPT-2's pattern on
    /// the rest.
    SmolLm,
    /// Qwen2: NFC first, then
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    /// (transformers' `Qwen2Converter`, llama.cpp's `qwen2`).
    Qwen2,
}

impl PreTokenizer {
    /// The pre-tokenizer of `tokenizer.ggml.pre`. A missing or unknown
    /// name falls back to SmolLM's (what this crate used for every model
    /// before it read the key), with a warning: encoding then differs
    /// from the model's own tokenizer on some texts, but stays lossless.
    pub(crate) fn from_gguf(name: Option<&str>) -> Self {
        match name {
            Some("qwen2") => Self::Qwen2,
            Some("smollm" | "starcoder" | "refact") => Self::SmolLm,
            Some("gpt-2" | "gpt2") => Self::Gpt2,
            Some(other) => {
                warn!(
                    pre = other,
                    "unknown pre-tokenizer; splitting text as SmolLM does, so token ids may differ from the model's own tokenizer"
                );
                Self::SmolLm
            }
            None => Self::SmolLm,
        }
    }

    /// Whether text is NFC-normalised before it is split.
    pub(crate) fn normalizes_nfc(self) -> bool {
        matches!(self, Self::Qwen2)
    }

    /// Cuts `text` into pieces (their concatenation is `text`).
    pub(crate) fn split(self, text: &str) -> Vec<&str> {
        let mut pieces = Vec::new();
        match self {
            Self::Gpt2 => gpt2_split(text, &mut pieces),
            Self::SmolLm => {
                let mut start = 0;
                for (i, c) in text.char_indices() {
                    if is_number(c) {
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
            }
            Self::Qwen2 => qwen2_split(text, &mut pieces),
        }
        pieces
    }
}

/// Sorted, disjoint ranges of a Unicode class.
fn class_ranges(class: &str) -> Vec<(char, char)> {
    use regex_syntax::hir::{Class, HirKind};
    match regex_syntax::parse(class).map(|hir| hir.into_kind()) {
        Ok(HirKind::Class(Class::Unicode(ranges))) => ranges
            .ranges()
            .iter()
            .map(|r| (r.start(), r.end()))
            .collect(),
        _ => Vec::new(),
    }
}

fn in_ranges(ranges: &[(char, char)], c: char) -> bool {
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `\p{L}`.
pub(crate) fn is_letter(c: char) -> bool {
    static LETTERS: OnceLock<Vec<(char, char)>> = OnceLock::new();
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    in_ranges(LETTERS.get_or_init(|| class_ranges(r"\p{L}")), c)
}

/// `\p{N}`.
pub(crate) fn is_number(c: char) -> bool {
    static NUMBERS: OnceLock<Vec<(char, char)>> = OnceLock::new();
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    in_ranges(NUMBERS.get_or_init(|| class_ranges(r"\p{N}")), c)
}

/// `[^\s\p{L}\p{N}]`.
fn is_other(c: char) -> bool {
    !c.is_whitespace() && !is_letter(c) && !is_number(c)
}

fn is_newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

/// The length of a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
/// `'d`) at the start of `rest`, which begins after the apostrophe.
fn contraction(rest: &str, case_insensitive: bool) -> Option<usize> {
    let bytes = rest.as_bytes();
    let lower = |i: usize| {
        bytes.get(i).map(|&b| {
            if case_insensitive {
                b.to_ascii_lowercase()
            } else {
                b
            }
        })
    };
    match (lower(0), lower(1)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => Some(1),
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => Some(2),
        _ => None,
    }
}

/// GPT-2's pattern.
fn gpt2_split<'a>(text: &'a str, pieces: &mut Vec<&'a str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let mut k = 0;
    while k < chars.len() {
        let (start, c) = chars[k];
        if c == '\''
            && let Some(len) = contraction(&text[start + 1..], false)
        {
            pieces.push(&text[start..start + 1 + len]);
            k += 1 + len; // contraction suffixes are ASCII
            continue;
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
        } else if is_number(first) {
            Some(is_number)
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
        k = whitespace(&chars, k, false, text, pieces);
    }
}

/// A whitespace run at `k`: `\s*[\r\n]+` (when `newlines`), then
/// `\s+(?!\S)`, then `\s+`. Returns where the next piece starts.
fn whitespace<'a>(
    chars: &[(usize, char)],
    k: usize,
    newlines: bool,
    text: &'a str,
    pieces: &mut Vec<&'a str>,
) -> usize {
    let end_of = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let mut run_end = k;
    while chars
        .get(run_end)
        .is_some_and(|&(_, ch)| ch.is_whitespace())
    {
        run_end += 1;
    }
    let last_newline = if newlines {
        (k..run_end).rev().find(|&j| is_newline(chars[j].1))
    } else {
        None
    };
    let end = match last_newline {
        // `\s*` takes the run, then gives back until `[\r\n]+` matches.
        Some(j) => j + 1,
        // Leave the last space to the word after the run.
        None if run_end < chars.len() && run_end - k > 1 => run_end - 1,
        None => run_end.max(k + 1),
    };
    pieces.push(&text[chars[k].0..end_of(end)]);
    end
}

/// Qwen2's pattern.
fn qwen2_split<'a>(text: &'a str, pieces: &mut Vec<&'a str>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let end_of = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let class_run = |mut j: usize, class: fn(char) -> bool| {
        while chars.get(j).is_some_and(|&(_, ch)| class(ch)) {
            j += 1;
        }
        j
    };
    let mut k = 0;
    while k < chars.len() {
        let (start, c) = chars[k];
        let next = chars.get(k + 1).map(|&(_, ch)| ch);
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        if c == '\''
            && let Some(len) = contraction(&text[start + 1..], true)
        {
            pieces.push(&text[start..start + 1 + len]);
            k += 1 + len;
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if is_letter(c) {
            let j = class_run(k, is_letter);
            pieces.push(&text[start..end_of(j)]);
            k = j;
            continue;
        }
        if !is_newline(c) && !is_number(c) && next.is_some_and(is_letter) {
            let j = class_run(k + 1, is_letter);
            pieces.push(&text[start..end_of(j)]);
            k = j;
            continue;
        }
        // \p{N}
        if is_number(c) {
            pieces.push(&text[start..end_of(k + 1)]);
            k += 1;
            continue;
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        let body = if c == ' ' && next.is_some_and(is_other) {
            k + 1
        } else {
            k
        };
        if chars.get(body).is_some_and(|&(_, ch)| is_other(ch)) {
            let j = class_run(class_run(body, is_other), is_newline);
            pieces.push(&text[start..end_of(j)]);
            k = j;
            continue;
        }
        // `\s*[\r\n]+|\s+(?!\S)|\s+`: `c` is whitespace here.
        k = whitespace(&chars, k, true, text, pieces);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smollm_splits_digits_then_follows_gpt2() {
        let split = |t| PreTokenizer::SmolLm.split(t);
        assert_eq!(
            split("Hello world, it's 2024!\n\n  done  "),
            vec![
                "Hello", " world", ",", " it", "'s", " ", "2", "0", "2", "4", "!", "\n\n ",
                " done", "  "
            ]
        );
        assert_eq!(split("a\tb"), vec!["a", "\t", "b"]);
        assert_eq!(split("  \nx"), vec!["  ", "\n", "x"]);
        assert_eq!(split("{\"a\": 1}"), vec!["{\"", "a", "\":", " ", "1", "}"]);
        assert_eq!(split("héllo wörld"), vec!["héllo", " wörld"]);
        assert!(split("").is_empty());
        assert_eq!(
            PreTokenizer::Gpt2.split("in 2024, 'S"),
            vec!["in", " 2024", ",", " '", "S"]
        );
    }

    #[test]
    fn unicode_classes_are_general_categories() {
        assert!(is_letter('é') && is_letter('中') && is_letter('ſ'));
        // Combining marks are alphabetic but not letters.
        assert!(!is_letter('\u{0301}') && !is_letter('\u{093F}'));
        assert!(is_number('٣') && is_number('½') && is_number('Ⅻ') && is_number('²'));
        assert!(!is_letter('Ⅻ'));
        assert!(is_other('，') && is_other('🦀') && !is_other('\u{3000}'));
    }

    #[test]
    fn unknown_pre_tokenizers_fall_back_to_smollm() {
        assert_eq!(PreTokenizer::from_gguf(Some("qwen2")), PreTokenizer::Qwen2);
        assert_eq!(
            PreTokenizer::from_gguf(Some("smollm")),
            PreTokenizer::SmolLm
        );
        assert_eq!(
            PreTokenizer::from_gguf(Some("llama-bpe")),
            PreTokenizer::SmolLm
        );
        assert_eq!(PreTokenizer::from_gguf(None), PreTokenizer::SmolLm);
    }
}
