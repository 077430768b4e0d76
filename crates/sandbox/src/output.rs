use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

/// Which of the child's output streams a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A piece of output handed to the live-output callback as soon as it was read.
#[derive(Debug, Clone, Copy)]
pub struct OutputChunk<'a> {
    /// The stream the bytes were read from.
    pub stream: OutputStream,
    /// The raw bytes, exactly as the program wrote them (not necessarily whole lines
    /// or whole UTF-8 characters).
    pub bytes: &'a [u8],
}

/// Callback receiving every chunk of output while the program runs.
///
/// It is called from the task that reads the pipe, so it should return quickly
/// (push to a channel, update a progress bar); a slow callback slows the reader and,
/// through the pipe, the program.
pub type OutputCallback = Arc<dyn Fn(OutputChunk<'_>) + Send + Sync>;

/// What a program printed on one stream, bounded in size.
///
/// When the stream fits within the configured cap, everything is in `head`, `tail` is
/// empty and `omitted_bytes` is 0. Otherwise the first half of the cap is kept in
/// `head`, the last half in `tail`, and the bytes in between are only counted, which is
/// what makes a program printing 100 MB cost the caller a few hundred kilobytes.
/// Bytes are decoded lossily as UTF-8; a character split by the cut is dropped and
/// counted as omitted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedOutput {
    /// The beginning of the stream.
    pub head: String,
    /// The end of the stream; empty unless something was omitted.
    pub tail: String,
    /// How many bytes between `head` and `tail` were dropped.
    pub omitted_bytes: u64,
    /// How many bytes the program wrote in total.
    pub total_bytes: u64,
}

impl CapturedOutput {
    /// `true` when part of the stream was dropped.
    pub fn is_truncated(&self) -> bool {
        self.omitted_bytes > 0
    }

    /// `true` when the program wrote nothing on this stream.
    pub fn is_empty(&self) -> bool {
        self.total_bytes == 0
    }

    /// Head and tail joined by a `[... N bytes omitted ...]` marker when something was
    /// dropped; the same as the `Display` rendering.
    pub fn to_string_lossy(&self) -> String {
        self.to_string()
    }

    /// `true` when `needle` occurs in the kept head or tail.
    pub fn contains(&self, needle: &str) -> bool {
        self.head.contains(needle) || self.tail.contains(needle)
    }
}

impl fmt::Display for CapturedOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.head)?;
        if self.omitted_bytes > 0 {
            if !self.head.is_empty() && !self.head.ends_with('\n') {
                f.write_str("\n")?;
            }
            writeln!(f, "[... {} bytes omitted ...]", self.omitted_bytes)?;
        }
        f.write_str(&self.tail)
    }
}

/// Accumulates a stream into a bounded head and tail.
#[derive(Debug)]
pub(crate) struct Capture {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    /// `limit` is the total number of bytes kept; half goes to the head.
    pub(crate) fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        let tail_cap = limit - head_cap;
        Self {
            head: Vec::new(),
            head_cap,
            tail: VecDeque::new(),
            tail_cap,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let room = self.head_cap.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() || self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend(bytes[bytes.len() - self.tail_cap..].iter().copied());
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.tail.extend(bytes.iter().copied());
    }

    pub(crate) fn finish(self) -> CapturedOutput {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut omitted = self.total.saturating_sub(kept);
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if omitted == 0 {
            // Nothing was dropped, so head and tail are contiguous: keep them as one
            // string to avoid splitting a character at the seam.
            head.extend_from_slice(&tail);
            return CapturedOutput {
                head: String::from_utf8_lossy(&head).into_owned(),
                tail: String::new(),
                omitted_bytes: 0,
                total_bytes: self.total,
            };
        }
        let cut_head = incomplete_utf8_suffix(&head);
        head.truncate(head.len() - cut_head);
        let cut_tail = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
            .count();
        tail.drain(..cut_tail);
        omitted += (cut_head + cut_tail) as u64;
        CapturedOutput {
            head: String::from_utf8_lossy(&head).into_owned(),
            tail: String::from_utf8_lossy(&tail).into_owned(),
            omitted_bytes: omitted,
            total_bytes: self.total,
        }
    }
}

/// The last `max` bytes of `text`, cut at a character boundary and marked
/// with a leading `…` when something was cut: the one way logs and
/// outputs are shortened to their end for a report.
///
/// ```
/// assert_eq!(sandbox::text_tail("short", 10), "short");
/// assert_eq!(sandbox::text_tail("päivää", 4), "…ää");
/// ```
pub fn text_tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let start = text.ceil_char_boundary(text.len() - max);
    format!("…{}", &text[start..])
}

/// Length of a UTF-8 sequence that was started at the end of `bytes` but not finished.
fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    let start = bytes.len().saturating_sub(3);
    match std::str::from_utf8(&bytes[start..]) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => bytes.len() - start - e.valid_up_to(),
        Err(_) => 0,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn capture(limit: usize, chunks: &[&[u8]]) -> CapturedOutput {
        let mut c = Capture::new(limit);
        for chunk in chunks {
            c.push(chunk);
        }
        c.finish()
    }

    #[test]
    fn small_output_is_kept_whole() {
        let out = capture(16, &[b"hello ", b"world"]);
        assert_eq!(out.head, "hello world");
        assert_eq!(out.tail, "");
        assert_eq!(out.omitted_bytes, 0);
        assert_eq!(out.total_bytes, 11);
        assert!(!out.is_truncated());
        assert_eq!(out.to_string(), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_middle() {
        let data: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        // Push in uneven chunks so both the in-place and the replacing tail paths run.
        let chunks: Vec<&[u8]> = vec![&data[..3], &data[3..7], &data[7..500], &data[500..]];
        let out = capture(20, &chunks);
        assert_eq!(out.head.as_bytes(), &data[..10]);
        assert_eq!(out.tail.as_bytes(), &data[990..]);
        assert_eq!(out.omitted_bytes, 980);
        assert_eq!(out.total_bytes, 1000);
        let rendered = out.to_string();
        assert!(
            rendered.contains("[... 980 bytes omitted ...]"),
            "{rendered}"
        );
        assert!(rendered.starts_with(&out.head));
        assert!(rendered.ends_with(&out.tail));
    }

    #[test]
    fn byte_by_byte_pushes_match_one_big_push() {
        let data: Vec<u8> = (0..300u32).map(|i| (i % 251) as u8 & 0x7f).collect();
        let whole = capture(64, &[&data]);
        let mut c = Capture::new(64);
        for b in &data {
            c.push(std::slice::from_ref(b));
        }
        assert_eq!(c.finish(), whole);
    }

    #[test]
    fn cut_characters_are_dropped_not_mangled() {
        // 'é' is two bytes; a head of 3 bytes would end in the middle of the second one.
        let text = "éé".repeat(20);
        let out = capture(6, &[text.as_bytes()]);
        assert!(!out.head.contains('\u{FFFD}'), "{:?}", out.head);
        assert!(!out.tail.contains('\u{FFFD}'), "{:?}", out.tail);
        assert_eq!(out.head, "é");
        assert_eq!(out.tail, "é");
        assert_eq!(
            out.omitted_bytes + out.head.len() as u64 + out.tail.len() as u64,
            out.total_bytes
        );
    }
}
