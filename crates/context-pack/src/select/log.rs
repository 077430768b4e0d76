//! Log view (seed 001, section 3.3.3): the head and tail of a long log,
//! every Python traceback in full and the error lines with some context,
//! with markers saying how many lines were left out in between.

use std::fmt::Write as _;
use std::ops::Range;

use super::document::{bounded_view, fitting_tokens, plural, push_normalized, split_point};
use super::{SelectOptions, View};
use crate::TokenCounter;

/// Substrings that make a line an error line.
const ERROR_MARKERS: [&str; 6] = [
    "Error",
    "Exception",
    "FAILED",
    "error:",
    "Killed",
    "Segmentation fault",
];
/// The note the sandbox's capture leaves where it dropped the middle of a
/// huge output (`[... N bytes omitted ...]`): kept with the error lines
/// (not counted as one), or a view of a 1 GB output would count only the
/// lines it saw.
const CAPTURE_NOTE: &str = " bytes omitted ...]";
/// The first line of a Python traceback.
const TRACEBACK: &str = "Traceback (most recent call last):";
/// Lines joining a chained exception's tracebacks into one.
const CHAINED: [&str; 2] = [
    "During handling of the above exception",
    "The above exception was the direct cause",
];
/// Tokens an omission marker line costs, rounded up.
const MARKER_TOKENS: usize = 14;
/// Selections retried with a tighter budget when token estimates were off.
const ATTEMPTS: usize = 4;
/// Candidates of one kind tried in a row without fitting before giving up
/// on that kind: the budget is then as good as spent, and trying all of
/// 50,000 error lines would count the whole log.
const MAX_MISSES: usize = 32;
/// A stretch this many bytes per remaining token is not counted: it cannot
/// plausibly fit (a token is rarely more than a dozen bytes).
const BYTES_PER_TOKEN_BOUND: usize = 64;

/// Log view: the log itself when it fits in `options.max_tokens`,
/// otherwise a reduced view of at most `options.max_tokens` tokens.
///
/// The view keeps the first `options.head_lines` and the last
/// `options.tail_lines` lines, every Python traceback (from
/// `Traceback (most recent call last):` to the exception line), and each
/// line containing `Error`, `Exception`, `FAILED`, `error:`, `Killed`,
/// `Segmentation fault` or the sandbox capture's `[... N bytes omitted ...]`
/// note with `options.context_lines` lines around it, and
/// replaces each gap with `[... N lines omitted ...]`. When that is still
/// too long, error context goes first, then error lines and tracebacks
/// (oldest first, the last traceback is kept), then head and tail. Lines
/// longer than the budget allows are split, and marked gaps inside a line
/// count bytes.
///
/// ```
/// use context_pack::select::{SelectOptions, log};
///
/// let counter = context_pack::TokenCounter::new(context_pack::Encoding::default()).unwrap();
/// let mut text: String = (1..=2_000).map(|i| format!("step {i}: ok\n")).collect();
/// text.push_str("Traceback (most recent call last):\n  File \"run.py\", line 3, in <module>\n    main()\nValueError: bad input\n");
/// text.extend((2_001..=3_000).map(|i| format!("step {i}: ok\n")));
///
/// let view = log(&counter, &text, &SelectOptions::default());
/// assert!(view.reduced && view.tokens <= 8_000);
/// assert!(view.text.contains("    main()\nValueError: bad input\n"));
/// assert!(view.text.contains("[... 1960 lines omitted ...]"));
/// ```
pub fn log(counter: &TokenCounter, text: &str, options: &SelectOptions) -> View {
    let max_tokens = options.max_tokens;
    if let Some(tokens) = fitting_tokens(counter, text, max_tokens) {
        return View {
            text: text.to_owned(),
            tokens,
            reduced: false,
        };
    }
    let layout = Layout::new(text, piece_bytes(max_tokens));
    let tracebacks: Vec<Range<usize>> = layout.tracebacks();
    let errors: Vec<usize> = layout.units_with(&ERROR_MARKERS);
    // What must survive like an error line: errors and the capture's note.
    let mut first: Vec<usize> = errors.clone();
    first.extend(layout.units_with(&[CAPTURE_NOTE]));
    first.sort_unstable();
    first.dedup();

    // The header with everything kept is about as long as any can be.
    let everything = vec![true; layout.units.len()];
    let header_tokens =
        counter.count(&header(&layout, &everything, &tracebacks, &errors, options)) + 8;
    let mut budget = max_tokens.saturating_sub(header_tokens);
    let mut out = String::new();
    for _ in 0..ATTEMPTS {
        let kept = select(counter, &layout, &tracebacks, &first, options, budget);
        out = header(&layout, &kept, &tracebacks, &errors, options);
        render_body(&mut out, &layout, &kept);
        let tokens = counter.count(&out);
        if tokens <= max_tokens {
            return View {
                text: out,
                tokens,
                reduced: true,
            };
        }
        budget = budget.saturating_sub(tokens - max_tokens + 16);
    }
    bounded_view(counter, out, max_tokens)
}

/// Lines longer than this are split into pieces of at most this many bytes
/// (so at most this many tokens), which keeps every unit of the selection
/// small next to the budget: a one-line 1 MB log still shows its start and
/// end.
fn piece_bytes(max_tokens: usize) -> usize {
    (max_tokens / 4).clamp(128, 2_048)
}

/// A line: its span in the text, without the line end.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
}

/// What the selection works on: a line, or a piece of a long line.
#[derive(Debug, Clone, Copy)]
struct Unit {
    line: usize,
    start: usize,
    end: usize,
}

struct Layout<'t> {
    text: &'t str,
    lines: Vec<Line>,
    units: Vec<Unit>,
    /// Index of each line's first unit, and the number of units at the end.
    first_unit: Vec<usize>,
}

impl<'t> Layout<'t> {
    fn new(text: &'t str, piece_bytes: usize) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for segment in text.split('\n') {
            let end = start + segment.strip_suffix('\r').unwrap_or(segment).len();
            lines.push(Line { start, end });
            start += segment.len() + 1;
        }
        // A final line end does not start another line.
        if text.ends_with('\n') {
            lines.pop();
        }
        let mut units = Vec::with_capacity(lines.len());
        let mut first_unit = Vec::with_capacity(lines.len() + 1);
        for (index, line) in lines.iter().enumerate() {
            first_unit.push(units.len());
            let mut start = line.start;
            loop {
                let rest = &text[start..line.end];
                let cut = split_point(rest, piece_bytes);
                units.push(Unit {
                    line: index,
                    start,
                    end: start + cut,
                });
                start += cut;
                if start >= line.end {
                    break;
                }
            }
        }
        first_unit.push(units.len());
        Layout {
            text,
            lines,
            units,
            first_unit,
        }
    }

    fn line_text(&self, line: usize) -> &'t str {
        self.lines
            .get(line)
            .map_or("", |l| &self.text[l.start..l.end])
    }

    fn unit_text(&self, unit: usize) -> &'t str {
        self.units
            .get(unit)
            .map_or("", |u| &self.text[u.start..u.end])
    }

    /// The text of a run of units, line ends between them included.
    fn slice(&self, units: Range<usize>) -> &'t str {
        match (
            self.units.get(units.start),
            units
                .end
                .checked_sub(1)
                .and_then(|last| self.units.get(last)),
        ) {
            (Some(first), Some(last)) if units.start < units.end => {
                &self.text[first.start..last.end]
            }
            _ => "",
        }
    }

    /// The units of a range of lines.
    fn units_of(&self, lines: Range<usize>) -> Range<usize> {
        let unit = |line: usize| {
            self.first_unit
                .get(line)
                .copied()
                .unwrap_or(self.units.len())
        };
        unit(lines.start)..unit(lines.end.max(lines.start))
    }

    /// The unit holding byte `offset` of the text.
    fn unit_at(&self, offset: usize) -> usize {
        self.units
            .partition_point(|unit| unit.start <= offset)
            .saturating_sub(1)
    }

    /// Line ranges of the Python tracebacks, a chained exception's
    /// tracebacks counting as one.
    fn tracebacks(&self) -> Vec<Range<usize>> {
        let mut found: Vec<Range<usize>> = Vec::new();
        let count = self.lines.len();
        // One search of the whole text, not one per line: a searcher is
        // costly to set up, and a log has tens of thousands of lines.
        let headers = self
            .text
            .match_indices(TRACEBACK)
            .filter_map(|(offset, _)| {
                let line = self.units.get(self.unit_at(offset))?.line;
                Some(line)
            });
        let mut next_free = 0;
        for line in headers {
            if line < next_free {
                continue;
            }
            // Frames are indented deeper than the header; the first line
            // that is not is the exception, which ends the traceback.
            let indent = indentation(self.line_text(line));
            let mut end = line + 1;
            while end < count {
                let frame = self.line_text(end);
                if frame.trim().is_empty() || indentation(frame) <= indent {
                    break;
                }
                end += 1;
            }
            if end < count && !self.line_text(end).trim().is_empty() {
                end += 1;
            }
            match found.last_mut() {
                Some(previous) if self.chained(previous.end..line) => previous.end = end,
                _ => found.push(line..end),
            }
            next_free = end;
        }
        found
    }

    /// Whether the lines between two tracebacks say the second was raised
    /// while handling the first.
    fn chained(&self, between: Range<usize>) -> bool {
        between.len() <= 5
            && between
                .clone()
                .any(|line| CHAINED.iter().any(|c| self.line_text(line).starts_with(c)))
            && between.into_iter().all(|line| {
                let text = self.line_text(line);
                text.trim().is_empty() || CHAINED.iter().any(|c| text.starts_with(c))
            })
    }

    /// The units holding one of `markers`, in order.
    fn units_with(&self, markers: &[&str]) -> Vec<usize> {
        let mut units: Vec<usize> = markers
            .iter()
            .flat_map(|marker| self.text.match_indices(marker))
            .map(|(offset, _)| self.unit_at(offset))
            .collect();
        units.sort_unstable();
        units.dedup();
        units
    }
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// Greedy selection of units under a token budget.
struct Selection<'a, 't> {
    counter: &'a TokenCounter,
    layout: &'a Layout<'t>,
    kept: Vec<bool>,
    remaining: usize,
}

impl Selection<'_, '_> {
    /// Tokens the units of `range` not yet kept would add (with a marker
    /// per new stretch), or `None` when that exceeds `limit`.
    fn cost(&self, range: Range<usize>, limit: usize) -> Option<usize> {
        let flags = self.kept.get(range.clone())?;
        let mut total = 0;
        for run in runs(flags, false) {
            let text = self
                .layout
                .slice(range.start + run.start..range.start + run.end);
            if text.len()
                > limit
                    .saturating_mul(BYTES_PER_TOKEN_BOUND)
                    .saturating_add(BYTES_PER_TOKEN_BOUND)
            {
                return None;
            }
            total += self.counter.count(text) + MARKER_TOKENS;
            if total > limit {
                return None;
            }
        }
        Some(total)
    }

    /// Keeps all of `range` if it fits in `cap` (and the budget).
    fn take_all(&mut self, range: Range<usize>, cap: usize) -> Option<usize> {
        let cost = self.cost(range.clone(), cap.min(self.remaining))?;
        self.kept.get_mut(range)?.fill(true);
        self.remaining -= cost;
        Some(cost)
    }

    /// Keeps units in the order given while they fit in `cap` (and the
    /// budget); returns the tokens spent.
    fn take_while_fits(&mut self, units: impl Iterator<Item = usize>, cap: usize) -> usize {
        let limit = cap.min(self.remaining);
        let mut spent = MARKER_TOKENS;
        let mut taken = false;
        for unit in units {
            if self.kept.get(unit).copied().unwrap_or(true) {
                continue;
            }
            let cost = self.counter.count(self.layout.unit_text(unit)) + 1;
            if spent + cost > limit {
                break;
            }
            spent += cost;
            taken = true;
            if let Some(flag) = self.kept.get_mut(unit) {
                *flag = true;
            }
        }
        if !taken {
            return 0;
        }
        self.remaining -= spent;
        spent
    }

    fn spent(&self) -> bool {
        self.remaining <= MARKER_TOKENS + 1
    }
}

/// Maximal stretches of `flags` equal to `value`.
fn runs(flags: &[bool], value: bool) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = flags.get(at..)?;
        let start = at + rest.iter().position(|&f| f == value)?;
        let end = flags
            .get(start..)
            .and_then(|rest| rest.iter().position(|&f| f != value))
            .map_or(flags.len(), |i| start + i);
        at = end;
        Some(start..end)
    })
}

/// The kept units for `budget` tokens, by priority: the last traceback (up
/// to half the budget), head and tail, the other tracebacks newest first,
/// error lines newest first, then their context.
fn select(
    counter: &TokenCounter,
    layout: &Layout<'_>,
    tracebacks: &[Range<usize>],
    errors: &[usize],
    options: &SelectOptions,
    budget: usize,
) -> Vec<bool> {
    let mut selection = Selection {
        counter,
        layout,
        kept: vec![false; layout.units.len()],
        remaining: budget,
    };
    let line_count = layout.lines.len();

    // The last traceback is usually why the run failed; it may crowd out
    // head and tail, but only up to half the budget. One too long for that
    // keeps its first line and its end: the innermost frames and the error.
    if let Some(last) = tracebacks.last() {
        let units = layout.units_of(last.clone());
        let cap = budget / 2;
        if selection.take_all(units.clone(), cap).is_none() {
            let header = layout.units_of(last.start..last.start + 1);
            let spent = selection.take_all(header, cap).unwrap_or(0);
            selection.take_while_fits(units.rev(), cap.saturating_sub(spent));
        }
    }

    let head_lines = options.head_lines.min(line_count);
    let tail_lines = options.tail_lines.min(line_count);
    let head = layout.units_of(0..head_lines);
    let tail = layout.units_of(line_count - tail_lines..line_count);
    let remaining = selection.remaining;
    let head_cost = selection.cost(head.clone(), remaining);
    let tail_cost = selection.cost(tail.clone(), remaining);
    match (head_cost, tail_cost) {
        (Some(h), Some(t)) if h + t <= remaining => {
            selection.take_all(head, usize::MAX);
            selection.take_all(tail, usize::MAX);
        }
        _ => {
            // Split what is left in proportion to the lines asked for.
            let share = remaining.saturating_mul(head_lines) / (head_lines + tail_lines).max(1);
            selection.take_while_fits(head, share);
            selection.take_while_fits(tail.rev(), usize::MAX);
        }
    }

    let earlier_tracebacks = tracebacks
        .iter()
        .rev()
        .skip(1)
        .map(|t| layout.units_of(t.clone()));
    take_each(&mut selection, earlier_tracebacks);
    take_each(
        &mut selection,
        errors.iter().rev().map(|&unit| unit..unit + 1),
    );
    let context = options.context_lines;
    let around = errors.iter().rev().filter_map(|&unit| {
        let line = layout.units.get(unit)?.line;
        let end = line
            .saturating_add(context)
            .saturating_add(1)
            .min(line_count);
        Some(layout.units_of(line.saturating_sub(context)..end))
    });
    take_each(&mut selection, around);
    selection.kept
}

/// Keeps each range that fits whole, until the budget is spent or too many
/// in a row did not fit.
fn take_each(selection: &mut Selection<'_, '_>, ranges: impl Iterator<Item = Range<usize>>) {
    let mut misses = 0;
    for range in ranges {
        if selection.spent() || misses >= MAX_MISSES {
            break;
        }
        if selection.take_all(range, usize::MAX).is_some() {
            misses = 0;
        } else {
            misses += 1;
        }
    }
}

/// The header line: what the view kept.
fn header(
    layout: &Layout<'_>,
    kept: &[bool],
    tracebacks: &[Range<usize>],
    errors: &[usize],
    options: &SelectOptions,
) -> String {
    let all_kept = |units: Range<usize>| {
        kept.get(units)
            .is_some_and(|flags| flags.iter().all(|&f| f))
    };
    let line_count = layout.lines.len();
    let (mut shown, mut partly) = (0, 0);
    for line in 0..line_count {
        let flags = kept
            .get(layout.units_of(line..line + 1))
            .unwrap_or_default();
        if flags.contains(&true) {
            shown += 1;
            partly += usize::from(flags.contains(&false));
        }
    }
    let head = (0..options.head_lines.min(line_count))
        .take_while(|&line| all_kept(layout.units_of(line..line + 1)))
        .count();
    let tail = (line_count.saturating_sub(options.tail_lines)..line_count)
        .rev()
        .take_while(|&line| all_kept(layout.units_of(line..line + 1)))
        .count();
    let mut parts = Vec::new();
    if head > 0 {
        parts.push(format!("the first {head}"));
    }
    if tail > 0 {
        parts.push(format!("the last {tail}"));
    }
    if partly > 0 {
        parts.push(format!("{} in part", plural(partly, "long line")));
    }
    if !tracebacks.is_empty() {
        let whole = tracebacks
            .iter()
            .filter(|t| all_kept(layout.units_of((*t).clone())))
            .count();
        parts.push(format!(
            "{whole} of {} in full",
            plural(tracebacks.len(), "traceback")
        ));
    }
    if !errors.is_empty() {
        let error_lines = errors
            .iter()
            .filter(|&&unit| kept.get(unit).copied().unwrap_or(false))
            .count();
        parts.push(format!(
            "{error_lines} of {}",
            plural(errors.len(), "error line")
        ));
    }
    let mut out = format!("[log view: {shown} of {} shown", plural(line_count, "line"));
    if !parts.is_empty() {
        let _ = write!(out, ": {}", parts.join(", "));
    }
    out.push_str("; search the log for what was omitted]\n");
    out
}

/// Appends the kept units, with a marker for each gap.
fn render_body(out: &mut String, layout: &Layout<'_>, kept: &[bool]) {
    let mut previous = None;
    for run in runs(kept, true) {
        push_gap(out, layout, previous, Some(run.start));
        push_normalized(out, layout.slice(run.clone()));
        out.push('\n');
        previous = run.end.checked_sub(1);
    }
    push_gap(out, layout, previous, None);
}

/// The marker for what lies between the kept units `before` and `after`
/// (`None`: the start or the end of the log).
fn push_gap(out: &mut String, layout: &Layout<'_>, before: Option<usize>, after: Option<usize>) {
    let unit = |index: Option<usize>| index.and_then(|i| layout.units.get(i));
    let line = |index: usize| {
        layout
            .lines
            .get(index)
            .copied()
            .unwrap_or(Line { start: 0, end: 0 })
    };
    let line_count = layout.lines.len();
    let (lines, bytes) = match (unit(before), unit(after)) {
        (None, None) => (line_count, 0),
        (None, Some(next)) => (next.line, next.start - line(next.line).start),
        (Some(last), None) => (line_count - 1 - last.line, line(last.line).end - last.end),
        (Some(last), Some(next)) if last.line == next.line => (0, next.start - last.end),
        (Some(last), Some(next)) => (
            next.line - last.line - 1,
            (line(last.line).end - last.end) + (next.start - line(next.line).start),
        ),
    };
    let _ = match (lines, bytes) {
        (0, 0) => Ok(()),
        (lines, 0) => writeln!(out, "[... {} omitted ...]", plural(lines, "line")),
        (0, bytes) => writeln!(
            out,
            "[... {} of a long line omitted ...]",
            plural(bytes, "byte")
        ),
        (lines, bytes) => writeln!(
            out,
            "[... {} and {} of long lines omitted ...]",
            plural(lines, "line"),
            plural(bytes, "byte")
        ),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_pieces() {
        let layout = Layout::new("a\r\nbb\n\nccccc", 2);
        let lines: Vec<&str> = (0..layout.lines.len())
            .map(|l| layout.line_text(l))
            .collect();
        assert_eq!(lines, ["a", "bb", "", "ccccc"]);
        let pieces: Vec<&str> = layout.units_of(3..4).map(|u| layout.unit_text(u)).collect();
        assert_eq!(pieces, ["cc", "cc", "c"]);
        assert_eq!(layout.slice(0..2), "a\r\nbb");
    }

    #[test]
    fn chained_tracebacks_are_one() {
        let text = "start\nTraceback (most recent call last):\n  File \"a.py\", line 1\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"b.py\", line 2\nValueError: y\nafter\n";
        let layout = Layout::new(text, 1_000);
        assert_eq!(layout.tracebacks(), vec![1..10]);
    }

    #[test]
    fn runs_of_flags() {
        let flags = [true, true, false, true, false, false];
        assert_eq!(runs(&flags, true).collect::<Vec<_>>(), [0..2, 3..4]);
        assert_eq!(runs(&flags, false).collect::<Vec<_>>(), [2..3, 4..6]);
    }

    #[test]
    fn the_capture_note_of_a_huge_output_survives_the_view() {
        let counter =
            TokenCounter::new(crate::Encoding::default()).unwrap_or_else(|e| panic!("{e}"));
        let mut text: String = (1..=3_000).map(|i| format!("row {i}\n")).collect();
        text.push_str("[... 1073741824 bytes omitted ...]\n");
        text.extend((3_001..=6_000).map(|i| format!("row {i}\n")));
        let view = log(&counter, &text, &SelectOptions::default());
        assert!(view.reduced);
        assert!(
            view.text.contains("[... 1073741824 bytes omitted ...]"),
            "{}",
            view.text
        );
        // The note is kept, not reported as an error line.
        assert!(!view.text.contains("error line"), "{}", view.text);
    }
}
