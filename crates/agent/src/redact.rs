//! Secrets kept out of everything the model and the trajectory see.
//!
//! Model-written code runs with a clean environment, but in process
//! isolation it may still find a secret elsewhere (the agent's
//! `/proc/<pid>/environ` when it runs as the same user, a config file), and
//! a hostile repository may hand one to the agent itself (a `README.md`
//! that links to `/proc/self/environ`). So every text bound for the model
//! passes one [`Redactor`], built once per run: the initial context, the
//! task, every message of the conversation ([`crate::History`] redacts on
//! the way in), every tool output, and every request of a setup call or of
//! `generate` ([`RedactingModel`] wraps the model). The trajectory records
//! only those redacted texts.
//!
//! Code that found a secret can print it encoded to get it past a plain
//! search, so each secret is also looked for as:
//! - its reverse (`rev`),
//! - hex, lower and upper case (`xxd -p`, `od`-free hex dumps),
//! - base64, standard and URL-safe alphabets, with or without padding, at
//!   each of the three byte alignments it can have inside a longer encoded
//!   text (`base64` of `OPENAI_API_KEY=sk-...`): at alignment `a` only the
//!   characters that depend on the secret's bits alone are searched for,
//!   so the text around it does not matter;
//! - any of these broken by whitespace (`fold -w 8`, `base64 -w 20`):
//!   matching runs over the text with whitespace removed, and a match is
//!   mapped back to the original bytes, so the whole span, line breaks
//!   included, is replaced.
//!
//! All patterns of all secrets go into one Aho-Corasick automaton, so a
//! text is searched once, whatever the number of secrets: linear in its
//! length.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Message, ToolCall};
use serde_json::Value;

/// Shorter values are not treated as secrets (they would redact ordinary
/// words and numbers), and no shorter encoded form is searched for.
const MIN_SECRET_LEN: usize = 8;

/// What a secret, in any of its forms, is replaced with.
const REDACTED: &str = "[redacted]";

const BASE64_STANDARD: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Replaces known secret values, and their encodings, with `[redacted]`.
///
/// Cloning is cheap: clones share one automaton.
///
/// ```
/// let redactor = agent::Redactor::new(["sk-live-0123456789".to_string()]);
/// assert_eq!(redactor.redact("key=sk-live-0123456789!"), "key=[redacted]!");
/// // Reversed, or folded over lines, it is found all the same.
/// assert_eq!(redactor.redact("9876543210-evil-ks"), "[redacted]");
/// assert_eq!(redactor.redact("<sk-live-\n01234\n56789>"), "<[redacted]>");
/// // Hex and base64 too (here of `sk-live-0123456789`).
/// assert_eq!(redactor.redact("736b2d6c6976652d30313233343536373839"), "[redacted]");
/// assert_eq!(redactor.redact("c2stbGl2ZS0wMTIzNDU2Nzg5\n"), "[redacted]\n");
/// assert_eq!(redactor.redact("nothing here"), "nothing here");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    /// `None` when there is no secret: nothing to search for.
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// How many secrets the patterns come from.
    secrets: usize,
    /// Every form of every secret, whitespace removed, deduplicated.
    patterns: Vec<String>,
    /// All of `patterns`; `None` only if the automaton could not be built,
    /// when each pattern is searched for on its own (slower, as safe).
    automaton: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (secrets, patterns) = self
            .inner
            .as_ref()
            .map_or((0, 0), |i| (i.secrets, i.patterns.len()));
        f.debug_struct("Redactor")
            .field("secrets", &secrets)
            .field("patterns", &patterns)
            .finish()
    }
}

/// Work done by one redaction, counted so that tests can check it is
/// linear in the text without timing it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Work {
    /// Bytes of the text looked at while removing whitespace.
    pub scanned: u64,
    /// Bytes searched for patterns (once per text with the automaton).
    pub searched: u64,
    /// Matches found (overlapping ones each count).
    pub matches: u64,
    /// Bytes written to the redacted copy.
    pub written: u64,
}

impl Redactor {
    /// A redactor for these values (those shorter than 8 characters once
    /// trimmed are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        // Trimmed: a value read from an env file may carry a newline that
        // the printed secret does not.
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| strip_whitespace(s).len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort();
        secrets.dedup();
        if secrets.is_empty() {
            return Redactor::default();
        }
        let mut patterns: Vec<String> = secrets.iter().flat_map(|s| forms(s)).collect();
        patterns.retain(|p| p.len() >= MIN_SECRET_LEN);
        patterns.sort();
        patterns.dedup();
        let automaton = match AhoCorasick::new(&patterns) {
            Ok(automaton) => Some(automaton),
            Err(error) => {
                tracing::warn!(%error, patterns = patterns.len(), "secret patterns searched one by one");
                None
            }
        };
        Redactor {
            inner: Some(Arc::new(Inner {
                secrets: secrets.len(),
                patterns,
                automaton,
            })),
        }
    }

    /// The values of this process's environment variables that name a
    /// credential: `OPENAI_API_KEY` and any name containing `KEY`, `TOKEN`,
    /// `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`.
    pub fn from_env() -> Redactor {
        Redactor::new(std::env::vars_os().filter_map(|(name, value)| {
            let name = name.to_str()?.to_ascii_uppercase();
            let secret = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
                .iter()
                .any(|word| name.contains(word));
            secret.then(|| value.into_string().ok()).flatten()
        }))
    }

    /// True when there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.inner.is_none()
    }

    /// `text` with every secret, in every form the module documentation
    /// lists, replaced. Matches that overlap or touch are replaced whole,
    /// as one `[redacted]`.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.redact_counting(text, &mut Work::default())
    }

    /// [`Redactor::redact`] for an owned text: no copy when nothing matches.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Owned(redacted) => redacted,
            Cow::Borrowed(_) => text,
        }
    }

    /// [`Redactor::redact`], adding the work done to `work`.
    pub(crate) fn redact_counting<'t>(&self, text: &'t str, work: &mut Work) -> Cow<'t, str> {
        let Some(inner) = &self.inner else {
            return Cow::Borrowed(text);
        };
        let view = Stripped::of(text, work);
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut found = |start: usize, end: usize, work: &mut Work| {
            work.matches += 1;
            if end > start {
                spans.push((view.original(start), view.original(end - 1) + 1));
            }
        };
        let haystack = view.bytes();
        let searched = haystack.len() as u64;
        match inner
            .automaton
            .as_ref()
            .map(|a| a.try_find_overlapping_iter(haystack))
        {
            Some(Ok(matches)) => {
                work.searched += searched;
                for m in matches {
                    found(m.start(), m.end(), work);
                }
            }
            // Never expected (the automaton is built for overlapping
            // search); either way each pattern is looked for on its own.
            _ => {
                for pattern in &inner.patterns {
                    work.searched += searched;
                    let pattern = pattern.as_bytes();
                    let mut from = 0;
                    while let Some(at) = find_bytes(&haystack[from..], pattern) {
                        found(from + at, from + at + pattern.len(), work);
                        from += at + 1;
                    }
                }
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        let mut spans = spans.into_iter().peekable();
        while let Some((start, mut end)) = spans.next() {
            // Merge every span that overlaps or touches this one.
            while let Some(&(next_start, next_end)) = spans.peek() {
                if next_start > end {
                    break;
                }
                end = end.max(next_end);
                spans.next();
            }
            let start = text.floor_char_boundary(start.max(done));
            let end = text.ceil_char_boundary(end);
            out.push_str(text.get(done..start).unwrap_or(""));
            out.push_str(REDACTED);
            done = end;
        }
        out.push_str(text.get(done..).unwrap_or(""));
        work.written += out.len() as u64;
        Cow::Owned(out)
    }

    /// `message` with its text, and the arguments of any tool call in it,
    /// redacted.
    pub fn redact_message(&self, message: Message) -> Message {
        if self.is_empty() {
            return message;
        }
        match message {
            Message::System { content } => Message::System {
                content: self.redact_owned(content),
            },
            Message::User { content } => Message::User {
                content: self.redact_owned(content),
            },
            Message::Assistant {
                content,
                tool_calls,
            } => Message::Assistant {
                content: content.map(|c| self.redact_owned(c)),
                tool_calls: tool_calls
                    .into_iter()
                    .map(|c| self.redact_call(c))
                    .collect(),
            },
            Message::Tool {
                tool_call_id,
                content,
            } => Message::Tool {
                tool_call_id,
                content: self.redact_owned(content),
            },
        }
    }

    /// `request` with every message redacted ([`Redactor::redact_message`]).
    pub fn redact_request(&self, request: &ChatRequest) -> ChatRequest {
        let mut redacted = request.clone();
        if !self.is_empty() {
            redacted.messages = redacted
                .messages
                .into_iter()
                .map(|m| self.redact_message(m))
                .collect();
        }
        redacted
    }

    /// `response` with its text and tool-call arguments redacted: a server
    /// that echoes what it was sent (the key of its `Authorization` header)
    /// puts nothing secret in the history or the trajectory.
    pub fn redact_response(&self, mut response: ChatResponse) -> ChatResponse {
        if self.is_empty() {
            return response;
        }
        response.content = response.content.map(|c| self.redact_owned(c));
        response.tool_calls = response
            .tool_calls
            .into_iter()
            .map(|c| self.redact_call(c))
            .collect();
        response
    }

    fn redact_call(&self, mut call: ToolCall) -> ToolCall {
        self.redact_value(&mut call.arguments);
        call
    }

    /// Every string of a JSON value, keys included, redacted in place.
    pub fn redact_value(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        // Iterative: arguments nested thousands deep must not overflow
        // the stack.
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            match value {
                Value::String(text) => {
                    if let Cow::Owned(redacted) = self.redact(text) {
                        *text = redacted;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for key in keys {
                        if let Cow::Owned(redacted) = self.redact(&key)
                            && let Some(inner) = map.remove(&key)
                        {
                            map.insert(redacted, inner);
                        }
                    }
                    stack.extend(map.values_mut());
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
    }
}

/// A [`ChatModel`] that redacts every request before the inner model sees
/// it, and every response before the caller does: the one boundary every
/// model call of a run goes through.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), llm::LlmError> {
/// use agent::{RedactingModel, Redactor};
/// use llm::{ChatModel, ChatRequest, Message, Scripted};
///
/// let inner = Scripted::new().then_text("fine");
/// let model = RedactingModel::new(&inner, Redactor::new(["sk-live-0123456789".to_string()]));
/// model.complete(&ChatRequest::new(vec![Message::user("my key: sk-live-0123456789")])).await?;
/// assert_eq!(inner.requests()[0].messages[0].text(), Some("my key: [redacted]"));
/// # Ok(())
/// # }
/// ```
pub struct RedactingModel<M> {
    inner: M,
    redactor: Redactor,
}

impl<M> std::fmt::Debug for RedactingModel<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactingModel")
            .field("redactor", &self.redactor)
            .finish_non_exhaustive()
    }
}

impl<M: ChatModel> RedactingModel<M> {
    /// `inner`, behind `redactor`.
    pub fn new(inner: M, redactor: Redactor) -> Self {
        RedactingModel { inner, redactor }
    }

    /// The redactor.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }
}

#[async_trait::async_trait]
impl<M: ChatModel> ChatModel for RedactingModel<M> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.redactor.is_empty() {
            return self.inner.complete(request).await;
        }
        let request = self.redactor.redact_request(request);
        let response = self.inner.complete(&request).await?;
        Ok(self.redactor.redact_response(response))
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

/// Every form a secret is searched for in, whitespace removed (the text is
/// searched with whitespace removed too).
fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut forms = vec![
        strip_whitespace(secret),
        strip_whitespace(&secret.chars().rev().collect::<String>()),
        hex(bytes, b"0123456789abcdef"),
        hex(bytes, b"0123456789ABCDEF"),
    ];
    for alphabet in [BASE64_STANDARD, BASE64_URL] {
        for align in 0..3 {
            forms.push(base64_core(bytes, align, alphabet));
        }
    }
    forms
}

fn strip_whitespace(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_whitespace()).collect()
}

fn hex(bytes: &[u8], digits: &[u8; 16]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(digits[usize::from(b >> 4)]));
        out.push(char::from(digits[usize::from(b & 15)]));
    }
    out
}

/// The base64 characters of `bytes` placed `align` bytes after a 3-byte
/// boundary of a longer text, keeping only those whose 6 bits all come
/// from `bytes`: whatever precedes and follows, an encoding of that text
/// contains them in this order. Padding is never part of it, so encodings
/// with and without padding match alike.
fn base64_core(bytes: &[u8], align: usize, alphabet: &[u8; 64]) -> String {
    let bit = |i: usize| -> u8 {
        // Bit `i` of the stream `[0; align] ++ bytes`.
        let Some(byte) = i.checked_sub(8 * align).and_then(|j| bytes.get(j / 8)) else {
            return 0;
        };
        (byte >> (7 - (i % 8))) & 1
    };
    let first = (8 * align).div_ceil(6);
    let end = 8 * (align + bytes.len()) / 6;
    (first..end)
        .map(|c| {
            let value = (0..6).fold(0u8, |v, k| (v << 1) | bit(6 * c + k));
            char::from(alphabet[usize::from(value)])
        })
        .collect()
}

/// The text without ASCII whitespace, and the way back to the original
/// offsets: one entry per run of non-whitespace bytes, so the map costs
/// memory in proportion to the number of gaps, not the text's length.
struct Stripped<'t> {
    bytes: Cow<'t, [u8]>,
    /// `(offset in the stripped text, offset in the original)` of each
    /// run's first byte, in order.
    runs: Vec<(usize, usize)>,
}

impl<'t> Stripped<'t> {
    fn of(text: &'t str, work: &mut Work) -> Self {
        let bytes = text.as_bytes();
        work.scanned += bytes.len() as u64;
        if !bytes.iter().any(u8::is_ascii_whitespace) {
            return Stripped {
                bytes: Cow::Borrowed(bytes),
                runs: vec![(0, 0)],
            };
        }
        let mut stripped = Vec::with_capacity(bytes.len());
        let mut runs = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let start = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i > start {
                runs.push((stripped.len(), start));
                stripped.extend_from_slice(&bytes[start..i]);
            }
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        Stripped {
            bytes: Cow::Owned(stripped),
            runs,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The original offset of the stripped text's byte `at`.
    fn original(&self, at: usize) -> usize {
        let run = self
            .runs
            .partition_point(|&(s, _)| s <= at)
            .saturating_sub(1);
        self.runs
            .get(run)
            .map_or(at, |&(stripped, original)| original + (at - stripped))
    }
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use proptest::prelude::*;

    use super::*;

    const KEY: &str = "sk-proj-Q7vX9k2LmN4pR8tW1yZ3bC6dF0gH5jK";

    fn redactor() -> Redactor {
        Redactor::new([KEY.to_string()])
    }

    /// `text` folded into lines of `width` characters, as `fold -w` does.
    fn fold(text: &str, width: usize) -> String {
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(width.max(1))
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn hex_of(text: &str) -> String {
        text.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// The text is redacted, and nothing is left of the secret's forms.
    fn assert_hidden(text: &str) {
        let redacted = redactor().redact(text).into_owned();
        assert!(redacted.contains(REDACTED), "{text:?} -> {redacted:?}");
        let flat = strip_whitespace(&redacted);
        for form in forms(KEY) {
            assert!(!flat.contains(&form), "{form} left in {redacted:?}");
        }
        assert!(!flat.contains("Q7vX9k2LmN4pR8tW"), "{redacted:?}");
    }

    #[test]
    fn overlapping_and_nested_secrets_are_removed_whole() {
        let redactor = Redactor::new(["abcdefgh1234".to_string(), "1234wxyzqrst".to_string()]);
        assert_eq!(redactor.redact("<abcdefgh1234wxyzqrst>"), "<[redacted]>");
        let nested = Redactor::new(["sk-live-0123456789".to_string(), "0123456789".to_string()]);
        assert_eq!(
            nested.redact("a sk-live-0123456789 b 0123456789"),
            "a [redacted] b [redacted]"
        );
    }

    #[test]
    fn secrets_are_matched_without_surrounding_whitespace() {
        let redactor = Redactor::new(["  sk-live-0123456789\n".to_string(), "short\n".to_string()]);
        assert_eq!(
            redactor.redact("key=sk-live-0123456789;"),
            "key=[redacted];"
        );
        assert_eq!(redactor.redact("short"), "short");
        assert!(Redactor::new(["short".to_string()]).is_empty());
    }

    #[test]
    fn the_reversed_secret_is_redacted() {
        let reversed: String = KEY.chars().rev().collect();
        assert_eq!(
            redactor().redact(&format!("x {reversed} y")),
            "x [redacted] y"
        );
    }

    #[test]
    fn hex_in_either_case_is_redacted() {
        let lower = hex_of(KEY);
        assert_eq!(redactor().redact(&lower), REDACTED);
        assert_eq!(redactor().redact(&lower.to_uppercase()), REDACTED);
        // Inside the hex of a longer text (an environment dump).
        assert_hidden(&hex_of(&format!("PATH=/bin\0OPENAI_API_KEY={KEY}\0HOME=/")));
    }

    #[test]
    fn base64_in_both_alphabets_with_and_without_padding_is_redacted() {
        for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
            assert_hidden(&engine.encode(KEY));
            assert_hidden(&format!("{}\n", engine.encode(format!("{KEY}\n"))));
        }
    }

    #[test]
    fn base64_of_a_longer_text_is_redacted_at_every_alignment() {
        for prefix in ["", "x", "xy", "OPENAI_API_KEY=", "OPENAI_API_KEY=\"", "K="] {
            for suffix in ["", "\n", "\0HOME=/root", "!!"] {
                let text = format!("{prefix}{KEY}{suffix}");
                assert_hidden(&STANDARD.encode(&text));
                assert_hidden(&URL_SAFE_NO_PAD.encode(&text));
            }
        }
    }

    #[test]
    fn split_and_encoded_forms_are_redacted_with_their_line_breaks() {
        // `fold -w 8` of the key, and `base64 -w 20` of the environment line.
        let folded = fold(KEY, 8);
        assert_eq!(
            redactor().redact(&format!("before\n{folded}\nafter")),
            "before\n[redacted]\nafter"
        );
        let wrapped = fold(&STANDARD.encode(format!("OPENAI_API_KEY={KEY}\n")), 20);
        assert_hidden(&wrapped);
        assert_hidden(&fold(&KEY.chars().rev().collect::<String>(), 5));
        assert_hidden(&fold(&hex_of(KEY).to_uppercase(), 7));
        // Spaces and tabs break it as well as newlines do.
        assert_hidden(&KEY.chars().map(|c| format!("{c} \t")).collect::<String>());
    }

    #[test]
    fn text_around_a_match_survives_byte_for_byte() {
        let text = format!("héllo\n{}\n→ done", fold(&hex_of(KEY), 16));
        assert_eq!(redactor().redact(&text), "héllo\n[redacted]\n→ done");
    }

    #[test]
    fn json_arguments_and_messages_are_redacted() {
        let r = redactor();
        let mut value =
            serde_json::json!({"code": format!("print('{KEY}')"), KEY: [1, {"a": KEY}]});
        r.redact_value(&mut value);
        let text = value.to_string();
        assert!(!text.contains(KEY), "{text}");
        let message = r.redact_message(Message::tool("c", format!("found {KEY}")));
        assert_eq!(message.text(), Some("found [redacted]"));
    }

    /// 10 MB of output with secrets in every form: the text is scanned
    /// once and searched once, whatever the number of secrets; the work
    /// counted is linear in its length.
    #[test]
    fn ten_megabytes_are_redacted_in_one_linear_pass() {
        let mut text = String::with_capacity(10 << 20);
        let mut line = 0usize;
        while text.len() < 10 << 20 {
            line += 1;
            match line % 1000 {
                0 => text.push_str(KEY),
                500 => text.push_str(&STANDARD.encode(KEY)),
                _ => text.push_str("ordinary log line 0123456789 with words\n"),
            }
            text.push('\n');
        }
        let many: Vec<String> = (0..50)
            .map(|i| format!("{KEY}-{i:02}-extra"))
            .chain([KEY.to_string()])
            .collect();
        let mut one = Work::default();
        let redacted = redactor().redact_counting(&text, &mut one);
        let mut fifty = Work::default();
        let again = Redactor::new(many).redact_counting(&text, &mut fifty);
        assert_eq!(redacted, again);
        let n = text.len() as u64;
        assert_eq!(one.scanned, n);
        assert!(one.searched <= n, "{one:?}");
        assert!(one.written <= n, "{one:?}");
        // Each hidden copy is found a bounded number of times.
        assert!(one.matches <= 2 * (line as u64 / 500 + 1), "{one:?}");
        // Fifty more secrets cost no more passes over the text.
        assert_eq!((fifty.scanned, fifty.searched), (one.scanned, one.searched));
        assert!(!redacted.contains(KEY));
    }

    #[test]
    fn no_secret_means_no_work_and_no_copy() {
        let mut work = Work::default();
        let text = "some text";
        assert!(matches!(
            Redactor::default().redact_counting(text, &mut work),
            Cow::Borrowed(_)
        ));
        assert_eq!(work, Work::default());
    }

    /// One of the encodings an attacker may print, applied to `text`.
    #[derive(Debug, Clone, Copy)]
    enum Encoding {
        Plain,
        Reversed,
        HexLower,
        HexUpper,
        Base64,
        Base64NoPad,
        Base64Url,
        Base64UrlNoPad,
    }

    fn encode(encoding: Encoding, text: &str) -> String {
        match encoding {
            Encoding::Plain => text.to_owned(),
            Encoding::Reversed => text.chars().rev().collect(),
            Encoding::HexLower => hex_of(text),
            Encoding::HexUpper => hex_of(text).to_uppercase(),
            Encoding::Base64 => STANDARD.encode(text),
            Encoding::Base64NoPad => STANDARD_NO_PAD.encode(text),
            Encoding::Base64Url => URL_SAFE.encode(text),
            Encoding::Base64UrlNoPad => URL_SAFE_NO_PAD.encode(text),
        }
    }

    fn encoding() -> impl Strategy<Value = Encoding> {
        prop_oneof![
            Just(Encoding::Plain),
            Just(Encoding::Reversed),
            Just(Encoding::HexLower),
            Just(Encoding::HexUpper),
            Just(Encoding::Base64),
            Just(Encoding::Base64NoPad),
            Just(Encoding::Base64Url),
            Just(Encoding::Base64UrlNoPad),
        ]
    }

    /// Ordinary text: words, numbers, punctuation and line breaks.
    fn prose() -> impl Strategy<Value = String> {
        proptest::collection::vec("[a-z]{1,9}|[0-9]{1,5}|[.,;:()=/-]|\n| ", 0..60)
            .prop_map(|parts| parts.concat())
    }

    proptest! {
        /// A random secret inside random text, encoded with the text around
        /// it (or alone) and folded at a random width, is always redacted.
        #[test]
        fn an_encoded_split_secret_is_always_redacted(
            secret in "[A-Za-z0-9_-]{8,48}",
            before in prose(),
            after in prose(),
            encoding in encoding(),
            width in 0usize..80,
            whole in any::<bool>(),
        ) {
            let redactor = Redactor::new([secret.clone()]);
            let printed = if whole {
                // The environment line encoded as a whole.
                let shown = encode(encoding, &format!("{before}{secret}{after}"));
                if width == 0 { shown } else { fold(&shown, width) }
            } else {
                let shown = encode(encoding, &secret);
                let shown = if width == 0 { shown } else { fold(&shown, width) };
                format!("{before}{shown}{after}")
            };
            let redacted = redactor.redact(&printed).into_owned();
            let flat = strip_whitespace(&redacted);
            for form in forms(&secret) {
                prop_assert!(!flat.contains(&form), "{form} in {redacted:?}");
            }
            prop_assert!(redacted.contains(REDACTED));
        }

        /// Text without the secret comes back unchanged, and borrowed.
        #[test]
        fn text_without_the_secret_is_unchanged(
            secret in "[A-Za-z0-9]{20,40}",
            text in prose(),
            encoding in encoding(),
        ) {
            let redactor = Redactor::new([secret]);
            let shown = encode(encoding, &text);
            for candidate in [text.as_str(), shown.as_str()] {
                let redacted = redactor.redact(candidate);
                prop_assert!(matches!(redacted, Cow::Borrowed(_)), "{candidate:?} -> {redacted:?}");
            }
        }
    }
}
