//! Document view (seed 001, section 3.3.3): a long text is cut into chunks of
//! about Lc tokens at paragraph boundaries, and only the nc chunks most
//! relevant to the query (or the first ones) are shown, in document order,
//! with markers where chunks were left out. CSV and TSV files get a table
//! preview instead: header, first rows, row count and a profile of every
//! column.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

use super::{SelectOptions, View};
use crate::TokenCounter;
use crate::bm25::{self, Bm25};
use crate::markdown;

/// Tokens an omission marker line costs, rounded up.
const MARKER_TOKENS: usize = 12;
/// Below this many tokens a chunk cut short is not worth showing.
const MIN_PARTIAL_TOKENS: usize = 24;
/// Chunks are not made smaller than this to fit nc of them: under a tight
/// limit one readable chunk beats four fragments.
const MIN_CHUNK_TOKENS: usize = 64;
/// Selections retried with a tighter budget when token estimates were off.
const ATTEMPTS: usize = 4;
/// Characters of the query quoted in the header.
const QUERY_CHARS: usize = 80;
/// A block or line more than this many bytes per allowed token is split
/// without being counted first: counting a megabyte line is the expensive
/// part, and splitting a line that would have fitted changes nothing
/// because the pieces are merged back into chunks.
const SPLIT_WITHOUT_COUNTING: usize = 64;

/// Document view: the text itself when it fits in `options.max_tokens`,
/// otherwise a reduced view of at most `options.max_tokens` tokens.
///
/// Text is cut into chunks of about `options.chunk_tokens` tokens at
/// Markdown headings, blank lines or line ends (a line longer than a chunk
/// is split hard). With a query, the `options.top_chunks` chunks that BM25
/// ranks highest are kept; without one (or for chunks the query does not
/// mention), the first chunks are. Kept chunks appear in document order,
/// with `[... N chunks omitted ...]` where chunks were dropped, after a
/// header line saying what was selected. A `.csv` or `.tsv` `name` gets a
/// table preview instead: the header, the first rows, the row count and
/// each column's type, range and empty cells.
///
/// ```
/// use context_pack::select::{SelectOptions, document};
///
/// let counter = context_pack::TokenCounter::new(context_pack::Encoding::default()).unwrap();
/// let options = SelectOptions { max_tokens: 300, chunk_tokens: 60, top_chunks: 2, ..SelectOptions::default() };
/// let mut text: String = (1..=40)
///     .map(|i| format!("## Part {i}\n\nFiller paragraph {i}, about nothing in particular.\n\n"))
///     .collect();
/// text.push_str("## Setup\n\nRun `pip install pdfminer` first.\n");
///
/// let view = document(&counter, "README.md", &text, Some("install pdfminer"), &options);
/// assert!(view.reduced && view.tokens <= 300);
/// assert!(view.text.contains("pip install pdfminer"));
/// assert!(view.text.contains("chunks omitted"));
///
/// let small = document(&counter, "notes.txt", "short", None, &options);
/// assert_eq!((small.text.as_str(), small.reduced), ("short", false));
/// ```
pub fn document(
    counter: &TokenCounter,
    name: &str,
    text: &str,
    query: Option<&str>,
    options: &SelectOptions,
) -> View {
    if let Some(tokens) = fitting_tokens(counter, text, options.max_tokens) {
        return View {
            text: text.to_owned(),
            tokens,
            reduced: false,
        };
    }
    if let Some(delimiter) = table_delimiter(name)
        && let Some(view) = table::preview(counter, name, text, delimiter, options)
    {
        return view;
    }
    chunked(counter, text, query, options)
}

/// The token count of `text` when it is at most `max_tokens`, `None` when
/// it is larger. A large text is judged on growing prefixes, so rejecting a
/// 50 MB log costs about as much as counting a few times the budget.
pub(super) fn fitting_tokens(
    counter: &TokenCounter,
    text: &str,
    max_tokens: usize,
) -> Option<usize> {
    // A prefix can tokenize a token or two differently from the whole text
    // at the cut, so it must exceed the limit clearly to decide.
    const MARGIN: usize = 16;
    let limit = max_tokens.saturating_add(MARGIN);
    let mut probe = limit.saturating_mul(8).max(4_096);
    while probe < text.len() {
        let cut = prefix_cut(text, probe);
        if counter.count(&text[..cut]) > limit {
            return None;
        }
        probe = probe.saturating_mul(4);
    }
    let tokens = counter.count(text);
    (tokens <= max_tokens).then_some(tokens)
}

/// Where to end a prefix of about `at` bytes: after the next newline or
/// space nearby, so no word is split, else at a character boundary.
fn prefix_cut(text: &str, at: usize) -> usize {
    let at = text.floor_char_boundary(at);
    let window = &text.as_bytes()[at..text.len().min(at + 4_096)];
    window
        .iter()
        .position(|&b| b == b'\n')
        .or_else(|| window.iter().position(|&b| b == b' '))
        .map_or(at, |i| at + i + 1)
}

/// Where to hard-split `text` so the first piece has at most `max_bytes`
/// bytes (hence at most `max_bytes` tokens: a token is at least one byte),
/// preferring to cut after whitespace in the last quarter. Always at least
/// one character, so splitting makes progress.
pub(super) fn split_point(text: &str, max_bytes: usize) -> usize {
    if text.len() <= max_bytes {
        return text.len();
    }
    let end = text.floor_char_boundary(max_bytes);
    if end == 0 {
        return text.chars().next().map_or(text.len(), char::len_utf8);
    }
    let floor = end - end / 4;
    text[..end]
        .char_indices()
        .rev()
        .take_while(|&(i, _)| i >= floor)
        .find(|&(_, c)| c.is_whitespace())
        .map_or(end, |(i, c)| i + c.len_utf8())
}

/// A view of `text`, cut to `max_tokens` as a last resort when budgeting
/// could not bring it under the limit.
pub(super) fn bounded_view(counter: &TokenCounter, text: String, max_tokens: usize) -> View {
    let tokens = counter.count(&text);
    if tokens <= max_tokens {
        return View {
            text,
            tokens,
            reduced: true,
        };
    }
    // Cutting at a line end can, rarely, re-tokenize into more tokens than
    // the prefix it came from; aim lower until it fits.
    let mut limit = max_tokens;
    loop {
        let cut = counter.truncate(&text, limit);
        let tokens = counter.count(cut);
        if tokens <= max_tokens || limit == 0 {
            return View {
                text: cut.to_owned(),
                tokens,
                reduced: true,
            };
        }
        limit = limit.saturating_sub(tokens - max_tokens).min(limit - 1);
    }
}

/// Appends `text` with CRLF line ends turned into LF, so a reduced view has
/// one line ending whatever the input mixed.
pub(super) fn push_normalized(out: &mut String, text: &str) {
    if text.contains('\r') {
        out.push_str(&text.replace("\r\n", "\n"));
    } else {
        out.push_str(text);
    }
}

/// "1 chunk", "2 chunks".
pub(super) fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn table_delimiter(name: &str) -> Option<u8> {
    let extension = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "csv" => Some(b','),
        "tsv" | "tab" => Some(b'\t'),
        _ => None,
    }
}

/// A span of the text with its (estimated) size in tokens.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    tokens: usize,
    /// Starts with a Markdown heading: a good place to start a chunk.
    heading: bool,
}

fn chunked(
    counter: &TokenCounter,
    text: &str,
    query: Option<&str>,
    options: &SelectOptions,
) -> View {
    let max_tokens = options.max_tokens;
    let query = query.map(str::trim).filter(|q| !bm25::terms(q).is_empty());
    // The longest header this view can get, with generous numbers.
    let header_tokens = counter.count(&chunk_header(2, 99_999, 9_999, query, 1)) + 2;
    let room = max_tokens.saturating_sub(header_tokens);
    // When L is too small for nc chunks of Lc tokens, chunks shrink so the
    // view still shows several places of the document, down to a size
    // below which fewer chunks are kept instead.
    let top = options
        .top_chunks
        .clamp(1, (room / MIN_CHUNK_TOKENS).max(1));
    let room = room.saturating_sub(MARKER_TOKENS * (top + 1));
    let chunk_tokens = options.chunk_tokens.min(room / top).max(MIN_CHUNK_TOKENS);
    let chunks = chunks(counter, text, chunk_tokens);
    let (order, matched) = rank(text, &chunks, query, top);

    let mut budget = room;
    let mut out = String::new();
    for _ in 0..ATTEMPTS {
        let (body, kept) = render_chunks(counter, text, &chunks, &order, budget);
        let kept_matched = kept.iter().filter(|&&rank| rank < matched).count();
        let header = chunk_header(kept.len(), chunks.len(), chunk_tokens, query, kept_matched);
        out = format!("{header}\n{body}");
        let tokens = counter.count(&out);
        if tokens <= max_tokens {
            return View {
                text: out,
                tokens,
                reduced: true,
            };
        }
        budget = budget.saturating_sub(tokens - max_tokens + 8);
    }
    bounded_view(counter, out, max_tokens)
}

/// Cuts `text` into chunks of at most about `chunk_tokens` tokens.
fn chunks(counter: &TokenCounter, text: &str, chunk_tokens: usize) -> Vec<Span> {
    let mut chunks: Vec<Span> = Vec::new();
    for unit in units(counter, text, chunk_tokens) {
        match chunks.last_mut() {
            // A heading starts a new chunk once the current one is half full,
            // so sections stay together when they can.
            Some(last)
                if last.tokens + unit.tokens <= chunk_tokens
                    && !(unit.heading && last.tokens >= chunk_tokens / 2) =>
            {
                last.end = unit.end;
                last.tokens += unit.tokens;
            }
            _ => chunks.push(unit),
        }
    }
    chunks
}

/// Paragraphs when they fit in a chunk, else their lines, else pieces of
/// lines: the units chunks are assembled from.
fn units(counter: &TokenCounter, text: &str, chunk_tokens: usize) -> Vec<Span> {
    let too_long = chunk_tokens.saturating_mul(SPLIT_WITHOUT_COUNTING);
    let mut units = Vec::new();
    for block in blocks(text) {
        let block_text = &text[block.start..block.end];
        if block_text.len() <= too_long {
            let tokens = counter.count(block_text);
            if tokens <= chunk_tokens {
                units.push(Span { tokens, ..block });
                continue;
            }
        }
        let mut line_start = block.start;
        for line in block_text.split_inclusive('\n') {
            let heading = block.heading && line_start == block.start;
            let tokens = (line.len() <= too_long).then(|| counter.count(line));
            match tokens {
                Some(tokens) if tokens <= chunk_tokens => units.push(Span {
                    start: line_start,
                    end: line_start + line.len(),
                    tokens,
                    heading,
                }),
                _ => {
                    let mut rest = line;
                    let mut start = line_start;
                    while !rest.is_empty() {
                        let cut = split_point(rest, chunk_tokens);
                        units.push(Span {
                            start,
                            end: start + cut,
                            tokens: counter.count(&rest[..cut]),
                            heading: heading && start == line_start,
                        });
                        rest = &rest[cut..];
                        start += cut;
                    }
                }
            }
            line_start += line.len();
        }
    }
    units
}

/// Paragraphs: a block starts at a Markdown heading (ATX or setext, at the
/// document's top level, so never in a code block) or at the first
/// non-blank line after blank lines, and keeps the blank lines that follow
/// it.
fn blocks(text: &str) -> Vec<Span> {
    let mut headings = markdown::outline(text)
        .headings
        .into_iter()
        .map(|h| h.range.start)
        .peekable();
    let mut blocks = Vec::new();
    let mut current = Span {
        start: 0,
        end: 0,
        tokens: 0,
        heading: false,
    };
    let mut after_blank = false;
    for line in text.split_inclusive('\n') {
        let blank = line.trim().is_empty();
        let mut heading = false;
        while headings
            .next_if(|&start| start < current.end + line.len())
            .is_some()
        {
            heading = true;
        }
        if current.end > current.start && (heading || (after_blank && !blank)) {
            blocks.push(current);
            current = Span {
                start: current.end,
                end: current.end,
                tokens: 0,
                heading,
            };
        } else if current.end == current.start {
            current.heading = heading;
        }
        after_blank = blank;
        current.end += line.len();
    }
    if current.end > current.start {
        blocks.push(current);
    }
    blocks
}

/// The chunks to show, best first, and how many of them (a prefix of the
/// list) the query matched. Slots the query leaves empty go to the first
/// chunks, which usually say what the document is.
fn rank(text: &str, chunks: &[Span], query: Option<&str>, top: usize) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = Vec::with_capacity(top);
    if let Some(query) = query {
        let index = Bm25::new(chunks.iter().map(|c| &text[c.start..c.end]));
        let mut scored: Vec<(usize, f64)> = index
            .scores(query)
            .into_iter()
            .enumerate()
            .filter(|&(_, score)| score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        order.extend(scored.into_iter().take(top).map(|(i, _)| i));
    }
    let matched = order.len();
    let mut first = 0..chunks.len();
    while order.len() < top.min(chunks.len()) {
        match first.next() {
            Some(i) if !order.contains(&i) => order.push(i),
            Some(_) => {}
            None => break,
        }
    }
    (order, matched)
}

/// The kept chunks in document order with omission markers, and the ranks
/// (positions in `order`) of the chunks kept. Chunks are admitted best
/// first; the first that does not fit is cut short when enough room is
/// left, and nothing after it is admitted.
fn render_chunks(
    counter: &TokenCounter,
    text: &str,
    chunks: &[Span],
    order: &[usize],
    budget: usize,
) -> (String, Vec<usize>) {
    let mut kept: Vec<(usize, usize, &str, bool)> = Vec::with_capacity(order.len());
    let mut remaining = budget;
    for (rank, &index) in order.iter().enumerate() {
        let Some(chunk) = chunks.get(index) else {
            continue;
        };
        let body = &text[chunk.start..chunk.end];
        if chunk.tokens <= remaining {
            remaining -= chunk.tokens;
            kept.push((index, rank, body, false));
        } else {
            if remaining >= MIN_PARTIAL_TOKENS {
                let cut = counter.truncate(body, remaining - MARKER_TOKENS.min(remaining));
                kept.push((index, rank, cut, true));
            }
            break;
        }
    }
    kept.sort_by_key(|&(index, ..)| index);

    // Adjacent chunks are joined as they were (a hard-split line must not
    // gain line breaks); a marker always gets a line of its own.
    let mut out = String::new();
    let mut next = 0;
    for &(index, _, body, cut) in &kept {
        if index > next {
            end_line(&mut out);
            let _ = writeln!(out, "[... {} omitted ...]", plural(index - next, "chunk"));
        }
        push_normalized(&mut out, body);
        if cut {
            end_line(&mut out);
            out.push_str("[... rest of this chunk cut to fit ...]\n");
        }
        next = index + 1;
    }
    end_line(&mut out);
    if next < chunks.len() {
        let _ = writeln!(
            out,
            "[... {} omitted ...]",
            plural(chunks.len() - next, "chunk")
        );
    }
    (out, kept.into_iter().map(|(_, rank, ..)| rank).collect())
}

fn end_line(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn chunk_header(
    kept: usize,
    total: usize,
    chunk_tokens: usize,
    query: Option<&str>,
    matched: usize,
) -> String {
    if kept == 0 {
        return format!(
            "[document view: {total} chunks of ~{chunk_tokens} tokens, none of which fits in the limit]"
        );
    }
    let what = format!("{kept} of {total} chunks (~{chunk_tokens} tokens each)");
    let Some(query) = query else {
        return format!(
            "[document view: the first {what}; pass a query to see the most relevant parts]"
        );
    };
    let mut quoted: String = query
        .chars()
        .take(QUERY_CHARS)
        .map(|c| if c == '"' { '\'' } else { c })
        .collect();
    if quoted.len() < query.len() {
        quoted.push('…');
    }
    let quoted = quoted.replace(['\n', '\r'], " ");
    if matched == 0 {
        format!("[document view: the first {what}; none mentions \"{quoted}\"; try other words]")
    } else if matched == kept {
        format!(
            "[document view: {what} most relevant to \"{quoted}\", in document order; use another query to see other parts]"
        )
    } else {
        format!(
            "[document view: {what}: {matched} mentioning \"{quoted}\" and the first {}, in document order; use another query to see other parts]",
            kept - matched
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each block's first line and whether it starts with a heading.
    fn firsts(text: &str) -> Vec<(&str, bool)> {
        blocks(text)
            .iter()
            .map(|b| (text[b.start..b.end].lines().next().unwrap_or(""), b.heading))
            .collect()
    }

    #[test]
    fn blocks_start_at_headings_outside_code() {
        assert_eq!(
            firsts("Title\n=====\nIntro.\n```\n# code\n\n## code\n```\n## Real\ntext\n\nMore.\n"),
            [
                ("Title", true),
                ("## code", false),
                ("## Real", true),
                ("More.", false)
            ]
        );
    }
}

/// CSV and TSV previews.
mod table {
    use super::*;

    use rustc_hash::FxHashMap;

    /// Rows shown at most, then fewer while the preview is over budget.
    const SHOWN_ROWS: usize = 10;
    /// Bytes of a shown row (or header) before it is clipped.
    const ROW_BYTES: usize = 400;
    /// The same when even the header row alone is too wide for the budget.
    const NARROW_ROW_BYTES: usize = 100;
    /// Characters of a column name or value quoted in the profile.
    const VALUE_CHARS: usize = 40;
    /// Distinct values tracked per column; more are counted as "over".
    const DISTINCT_CAP: usize = 1_000;
    /// A text column with at most this many distinct values lists them all.
    const LISTED_VALUES: usize = 8;
    /// Example values shown for a column with many distinct values.
    const EXAMPLES: usize = 4;

    /// A table preview of `text`, or `None` when it has no records at all.
    pub(super) fn preview(
        counter: &TokenCounter,
        name: &str,
        text: &str,
        delimiter: u8,
        options: &SelectOptions,
    ) -> Option<View> {
        let mut records = Records::new(text, delimiter);
        let header = records.next()?;
        let names: Vec<String> = records
            .fields()
            .enumerate()
            .map(|(i, field)| {
                // The reader drops a byte order mark from the first field.
                let field = field.trim();
                if field.is_empty() {
                    format!("column {}", i + 1)
                } else {
                    clip_chars(field, VALUE_CHARS)
                }
            })
            .collect();
        let mut columns: Vec<Column> = names.iter().map(|_| Column::default()).collect();
        let mut first_rows: Vec<(usize, usize)> = Vec::with_capacity(SHOWN_ROWS);
        let mut rows = 0usize;
        let mut ragged = 0usize;
        let mut first_ragged_line = None;
        while let Some(record) = records.next() {
            rows += 1;
            if first_rows.len() < SHOWN_ROWS {
                first_rows.push((record.start, record.end));
            }
            if records.field_count() != names.len() {
                ragged += 1;
                first_ragged_line.get_or_insert(record.line);
            }
            for (column, field) in columns.iter_mut().zip(records.fields()) {
                column.add(&field);
            }
        }
        let table = Table {
            name,
            text,
            delimiter,
            header: (header.start, header.end),
            names,
            columns,
            first_rows,
            rows,
            ragged,
            first_ragged_line,
            unterminated_line: records.unterminated_line(),
        };

        let max_tokens = options.max_tokens;
        let mut shown_rows = table.first_rows.len();
        let mut shown_columns = table.names.len();
        let mut row_bytes = ROW_BYTES;
        loop {
            let out = table.render(shown_rows, shown_columns, row_bytes);
            let tokens = counter.count(&out);
            if tokens <= max_tokens {
                return Some(View {
                    text: out,
                    tokens,
                    reduced: true,
                });
            }
            if shown_rows > 0 {
                shown_rows = match shown_rows {
                    6.. => 5,
                    3..=5 => 2,
                    _ => 0,
                };
            } else if row_bytes > NARROW_ROW_BYTES {
                row_bytes = NARROW_ROW_BYTES;
            } else if shown_columns > 1 {
                // Scale the column list to the budget at once rather than
                // re-rendering thousands of columns many times.
                let scaled = shown_columns.saturating_mul(max_tokens) / tokens * 9 / 10;
                shown_columns = scaled.clamp(1, shown_columns - 1);
            } else {
                return Some(bounded_view(counter, out, max_tokens));
            }
        }
    }

    struct Table<'t> {
        name: &'t str,
        text: &'t str,
        delimiter: u8,
        header: (usize, usize),
        names: Vec<String>,
        columns: Vec<Column>,
        first_rows: Vec<(usize, usize)>,
        rows: usize,
        ragged: usize,
        first_ragged_line: Option<usize>,
        unterminated_line: Option<usize>,
    }

    impl Table<'_> {
        fn render(&self, shown_rows: usize, shown_columns: usize, row_bytes: usize) -> String {
            let separated = if self.delimiter == b'\t' {
                "tab-separated"
            } else {
                "comma-separated"
            };
            let shown_rows = shown_rows.min(self.first_rows.len());
            let rows = match shown_rows {
                0 => String::new(),
                1 => ", the first row".to_owned(),
                n => format!(", the first {n} rows"),
            };
            let profile = if shown_columns == 1 && self.names.len() > 1 {
                "the first column".to_owned()
            } else if shown_columns < self.names.len() {
                format!("the first {shown_columns} columns")
            } else {
                "each column".to_owned()
            };
            let mut out = format!(
                "[table preview of {}: {} rows, {} columns, {separated}; the header{rows} and a profile of {profile}]\n",
                self.name,
                self.rows,
                self.names.len(),
            );
            let (start, end) = self.header;
            push_row(
                &mut out,
                self.text[start..end].trim_start_matches('\u{feff}'),
                row_bytes,
            );
            for &(start, end) in self.first_rows.iter().take(shown_rows) {
                push_row(&mut out, &self.text[start..end], row_bytes);
            }
            let omitted = self.rows - shown_rows;
            if omitted > 0 {
                let _ = writeln!(out, "[... {} omitted ...]", plural(omitted, "row"));
            }
            out.push_str("\nColumns (type, range, empty cells):\n");
            for (name, column) in self.names.iter().zip(&self.columns).take(shown_columns) {
                let _ = writeln!(out, "- {name}: {}", column.describe());
            }
            if shown_columns < self.names.len() {
                let more = self.names.len() - shown_columns;
                let _ = writeln!(
                    out,
                    "[... {more} more {} ...]",
                    if more == 1 { "column" } else { "columns" }
                );
            }
            if let Some(line) = self.first_ragged_line {
                let _ = writeln!(
                    out,
                    "[{} a different number of columns than the header (the first at line {line})]",
                    if self.ragged == 1 {
                        "1 row has".to_owned()
                    } else {
                        format!("{} rows have", self.ragged)
                    },
                );
            }
            if let Some(line) = self.unterminated_line {
                let _ = writeln!(
                    out,
                    "[a quoted field opened at line {line} is never closed: the rest of the file was read as that one field]"
                );
            }
            out
        }
    }

    fn push_row(out: &mut String, row: &str, max_bytes: usize) {
        if row.len() > max_bytes {
            push_normalized(out, &row[..row.floor_char_boundary(max_bytes)]);
            out.push_str(" [...]\n");
        } else {
            push_normalized(out, row);
            out.push('\n');
        }
    }

    fn clip_chars(value: &str, max_chars: usize) -> String {
        match value.char_indices().nth(max_chars) {
            Some((end, _)) => format!("{}…", &value[..end]),
            None => value.to_owned(),
        }
    }

    /// What the cells of one column look like.
    #[derive(Default)]
    struct Column {
        empty: usize,
        values: usize,
        integers: usize,
        floats: usize,
        bools: usize,
        trues: usize,
        dates: usize,
        /// Some date is not year-first, so text order is not time order.
        dates_not_iso: bool,
        integer_range: Option<(i64, i64)>,
        number_range: Option<(f64, f64)>,
        date_range: Option<(String, String)>,
        length_range: Option<(usize, usize)>,
        distinct: FxHashMap<String, usize>,
        distinct_overflow: bool,
        examples: Vec<String>,
    }

    impl Column {
        fn add(&mut self, cell: &str) {
            let value = cell.trim();
            if value.is_empty() {
                self.empty += 1;
                return;
            }
            self.values += 1;
            let length = value.chars().count();
            self.length_range = Some(widen(self.length_range, length, length));
            if let Ok(integer) = value.parse::<i64>() {
                self.integers += 1;
                self.integer_range = Some(widen(self.integer_range, integer, integer));
                #[allow(clippy::cast_precision_loss)]
                let number = integer as f64;
                self.number_range = Some(widen_f64(self.number_range, number));
            } else if let Some(number) = parse_float(value) {
                self.floats += 1;
                self.number_range = Some(widen_f64(self.number_range, number));
            } else if let Some(truth) = parse_bool(value) {
                self.bools += 1;
                self.trues += usize::from(truth);
            } else if let Some(year_first) = date_like(value) {
                self.dates += 1;
                self.dates_not_iso |= !year_first;
                self.date_range = Some(match self.date_range.take() {
                    None => (value.to_owned(), value.to_owned()),
                    Some((low, high)) if value < low.as_str() => (value.to_owned(), high),
                    Some((low, high)) if value > high.as_str() => (low, value.to_owned()),
                    Some(range) => range,
                });
            }
            if let Some(count) = self.distinct.get_mut(value) {
                *count += 1;
            } else if self.distinct.len() < DISTINCT_CAP {
                self.distinct.insert(value.to_owned(), 1);
                if self.examples.len() < EXAMPLES {
                    self.examples.push(value.to_owned());
                }
            } else {
                self.distinct_overflow = true;
            }
        }

        fn describe(&self) -> String {
            let mut out = match (self.integer_range, self.number_range, &self.date_range) {
                _ if self.values == 0 => "empty".to_owned(),
                (Some((low, high)), ..) if self.integers == self.values => {
                    format!("integer, {low}..{high}")
                }
                (_, Some((low, high)), _) if self.integers + self.floats == self.values => {
                    format!("float, {low}..{high}")
                }
                _ if self.bools == self.values => {
                    format!(
                        "bool, {} true, {} false",
                        self.trues,
                        self.bools - self.trues
                    )
                }
                (.., Some((low, high))) if self.dates == self.values && !self.dates_not_iso => {
                    format!("date-like, {low}..{high}")
                }
                _ if self.dates == self.values => {
                    format!("date-like, e.g. {}", self.example_list())
                }
                _ => self.describe_text(),
            };
            if self.empty > 0 {
                let _ = write!(out, ", {} empty", self.empty);
            }
            out
        }

        fn describe_text(&self) -> String {
            let (shortest, longest) = self.length_range.unwrap_or_default();
            let mut out = format!("text, {shortest}..{longest} chars");
            let numbers = self.integers + self.floats;
            if numbers > 0 {
                let _ = write!(out, ", {numbers} of {} values numeric", self.values);
            }
            if !self.distinct_overflow && self.distinct.len() <= LISTED_VALUES {
                let mut values: Vec<(&String, &usize)> = self.distinct.iter().collect();
                values.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let listed: Vec<String> = values
                    .into_iter()
                    .map(|(value, count)| format!("{:?} ({count})", clip_chars(value, VALUE_CHARS)))
                    .collect();
                let _ = write!(
                    out,
                    ", {} distinct: {}",
                    self.distinct.len(),
                    listed.join(", ")
                );
            } else {
                let over = if self.distinct_overflow { "over " } else { "" };
                let _ = write!(
                    out,
                    ", {over}{} distinct, e.g. {}",
                    self.distinct.len(),
                    self.example_list()
                );
            }
            out
        }

        fn example_list(&self) -> String {
            let examples: Vec<String> = self
                .examples
                .iter()
                .map(|value| format!("{:?}", clip_chars(value, VALUE_CHARS)))
                .collect();
            examples.join(", ")
        }
    }

    fn widen<T: PartialOrd + Copy>(range: Option<(T, T)>, low: T, high: T) -> (T, T) {
        match range {
            None => (low, high),
            Some((a, b)) => (
                if low < a { low } else { a },
                if high > b { high } else { b },
            ),
        }
    }

    fn widen_f64(range: Option<(f64, f64)>, value: f64) -> (f64, f64) {
        widen(range, value, value)
    }

    /// A finite decimal number; `inf` and `NaN`, which Rust would parse,
    /// are words in a table, not numbers.
    fn parse_float(value: &str) -> Option<f64> {
        let numeric = value
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
            && value.bytes().any(|b| b.is_ascii_digit());
        numeric
            .then(|| value.parse::<f64>().ok())
            .flatten()
            .filter(|f| f.is_finite())
    }

    fn parse_bool(value: &str) -> Option<bool> {
        match value.to_ascii_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        }
    }

    /// Whether `value` looks like a date (`2024-05-01`, `2024/05/01`,
    /// `1.5.2024`, optionally followed by a time), and if so whether it is
    /// year-first.
    fn date_like(value: &str) -> Option<bool> {
        let (date, time) = match value.find(['T', ' ']) {
            Some(i) => (&value[..i], &value[i + 1..]),
            None => (value, ""),
        };
        if !(time.is_empty() || time.starts_with(|c: char| c.is_ascii_digit())) {
            return None;
        }
        let separator = date.chars().find(|c| matches!(c, '-' | '/' | '.'))?;
        let parts: Vec<&str> = date.split(separator).collect();
        let [a, b, c] = parts.as_slice() else {
            return None;
        };
        if !parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return None;
        }
        let number = |p: &str| p.parse::<u32>().unwrap_or(0);
        if a.len() == 4 && b.len() <= 2 && c.len() <= 2 {
            ((1..=12).contains(&number(b)) && (1..=31).contains(&number(c))).then_some(true)
        } else if a.len() <= 2 && b.len() <= 2 && c.len() == 4 {
            let (a, b) = (number(a), number(b));
            ((1..=31).contains(&a) && (1..=31).contains(&b) && (a <= 12 || b <= 12))
                .then_some(false)
        } else {
            None
        }
    }

    /// Where one record sits: its span in the text (without the line end)
    /// and the line it starts on (1-based).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Record {
        start: usize,
        end: usize,
        line: usize,
    }

    /// The records of a CSV or TSV text, read by the `csv` crate: RFC 4180
    /// quoting (delimiters, line ends and doubled quotes in quoted fields,
    /// text after a closing quote kept), any number of fields per record,
    /// blank lines skipped, LF, CRLF or CR line ends. Reading never fails:
    /// a quote that is never closed runs to the end of the text, as one
    /// field, and [`Records::unterminated_line`] says where it opened.
    ///
    /// Not an `Iterator`: the fields of the current record live in one
    /// reused buffer, so a file of a million rows costs no allocation per
    /// row.
    struct Records<'t> {
        text: &'t str,
        delimiter: u8,
        reader: csv::Reader<&'t [u8]>,
        /// The fields of the record [`Records::next`] returned last.
        current: csv::ByteRecord,
        spare: csv::ByteRecord,
        last: Option<Record>,
    }

    fn csv_reader<R: std::io::Read>(input: R, delimiter: u8) -> csv::Reader<R> {
        csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(input)
    }

    /// A byte offset of the csv reader as an index into a text of `len`
    /// bytes.
    fn offset(position: &csv::Position, len: usize) -> usize {
        usize::try_from(position.byte()).map_or(len, |b| b.min(len))
    }

    impl<'t> Records<'t> {
        fn new(text: &'t str, delimiter: u8) -> Self {
            Records {
                text,
                delimiter,
                reader: csv_reader(text.as_bytes(), delimiter),
                current: csv::ByteRecord::new(),
                spare: csv::ByteRecord::new(),
                last: None,
            }
        }

        /// The next record's place; its fields are then [`Records::fields`].
        fn next(&mut self) -> Option<Record> {
            // Reading from memory cannot fail on I/O, the record is
            // flexible and bytes are not checked for UTF-8: an error is
            // not expected, and ends the records if it comes.
            if !matches!(self.reader.read_byte_record(&mut self.spare), Ok(true)) {
                return None;
            }
            std::mem::swap(&mut self.current, &mut self.spare);
            let bytes = self.text.as_bytes();
            let (from, line) = self
                .current
                .position()
                .map_or((0, 1), |p| (offset(p, bytes.len()), p.line()));
            // The reader's position is where it stood before the record:
            // before the blank lines it skipped, or before the LF of the
            // previous record's CRLF.
            let skipped = bytes[from..]
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            let start = from + skipped;
            let line = usize::try_from(line)
                .unwrap_or(usize::MAX)
                .saturating_add(bytes[from..start].iter().filter(|&&b| b == b'\n').count());
            let after = offset(self.reader.position(), bytes.len()).max(start);
            let ends = bytes[start..after]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            let record = Record {
                start,
                end: after - ends,
                line,
            };
            self.last = Some(record);
            Some(record)
        }

        /// The fields of the record [`Records::next`] returned last. The
        /// text was a `str` and fields are cut at ASCII bytes, so they are
        /// UTF-8 and borrowed.
        fn fields(&self) -> impl Iterator<Item = Cow<'_, str>> {
            self.current.iter().map(String::from_utf8_lossy)
        }

        fn field_count(&self) -> usize {
            self.current.len()
        }

        /// Once every record was read: the line a quoted field opened on
        /// that no quote closes, if there is one. Such a field runs to the
        /// end of the text, so it is the last record's last field, and the
        /// reader would have taken a line end appended to the text into it:
        /// that is the test, on the last record alone.
        fn unterminated_line(&self) -> Option<usize> {
            let last = self.last?;
            let field = self.current.get(self.current.len().checked_sub(1)?)?;
            let rest = self.text.as_bytes().get(last.start..)?;
            let mut probe = csv_reader(std::io::Read::chain(rest, &b"\n"[..]), self.delimiter);
            let mut record = csv::ByteRecord::new();
            // Exactly one byte more: the probe also drops a byte order mark
            // that starts it (csv does at the start of its input), which
            // shortens a closed first field, never lengthens a field by one.
            if !matches!(probe.read_byte_record(&mut record), Ok(true))
                || record.get(record.len().checked_sub(1)?)?.len() != field.len() + 1
            {
                return None;
            }
            // An open field is its quote, then its value with every quote
            // doubled, up to the end of the text.
            let quotes = field.iter().filter(|&&b| b == b'"').count();
            let open = self.text.len().checked_sub(field.len() + quotes + 1)?;
            let before = self.text.as_bytes().get(last.start..open)?;
            Some(last.line + before.iter().filter(|&&b| b == b'\n').count())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn parse(text: &str) -> Vec<Vec<String>> {
            parse_with(text, b',')
        }

        fn parse_with(text: &str, delimiter: u8) -> Vec<Vec<String>> {
            let mut records = Records::new(text, delimiter);
            let mut rows = Vec::new();
            while records.next().is_some() {
                rows.push(records.fields().map(Cow::into_owned).collect());
            }
            rows
        }

        /// Each record's text (its span) and line.
        fn spans(text: &str) -> Vec<(&str, usize)> {
            let mut records = Records::new(text, b',');
            let mut out = Vec::new();
            while let Some(r) = records.next() {
                out.push((&text[r.start..r.end], r.line));
            }
            out
        }

        fn unterminated(text: &str) -> Option<usize> {
            let mut records = Records::new(text, b',');
            while records.next().is_some() {}
            records.unterminated_line()
        }

        #[test]
        fn quoted_fields() {
            assert_eq!(
                parse("a,\"b, c\",\"say \"\"hi\"\"\"\r\n1,,\"multi\nline\"\n"),
                [
                    vec!["a", "b, c", "say \"hi\""],
                    vec!["1", "", "multi\nline"]
                ]
            );
            assert_eq!(parse("x,\"open\n"), [vec!["x", "open\n"]]);
            assert_eq!(parse("a,b,"), [vec!["a", "b", ""]]);
            assert_eq!(parse("\"q\"tail,z"), [vec!["qtail", "z"]]);
            assert_eq!(parse("\u{feff}id,name\n"), [vec!["id", "name"]]);
            assert_eq!(
                parse_with("a\t\"b\tc\"\t\nd\r\n", b'\t'),
                [vec!["a", "b\tc", ""], vec!["d"]]
            );
            // Old Mac line ends are line ends too.
            assert_eq!(parse("a,b\rc,d\r"), [vec!["a", "b"], vec!["c", "d"]]);
        }

        #[test]
        fn spans_skip_blank_lines_and_line_ends() {
            assert_eq!(
                spans("\n\nh1,h2\n\n\n1,2\r\n\r\n3,4"),
                [("h1,h2", 3), ("1,2", 6), ("3,4", 8)]
            );
            // A record spanning lines: the next one's line counts them.
            assert_eq!(spans("a,\"x\ny\"\r\nb\n"), [("a,\"x\ny\"", 1), ("b", 3)]);
            assert_eq!(spans(""), []);
            assert_eq!(spans("\r\n\n"), []);
        }

        #[test]
        fn an_unclosed_quote_is_found_where_it_opened() {
            assert_eq!(unterminated("x,\"open\n"), Some(1));
            assert_eq!(unterminated("a,b\nc,\"d\ne\n"), Some(2));
            // After a closed multi-line field of the same record, and with
            // doubled quotes inside.
            assert_eq!(unterminated("h\na,\"x\ny\",b,\"op\"\"en\nmore"), Some(3));
            // Three quotes open a field holding one; four close it.
            assert_eq!(unterminated("\"\"\""), Some(1));
            for closed in [
                "",
                "\n\u{feff} \r",
                "a\n\u{feff}\"x",
                "a,b",
                "a,\"b\"",
                "a,\"b\"\n",
                "\"\"\"\"",
                "\"q\"tail",
                "a,\"x\"\"\"\r\n",
                "\"a\nb\"\n\n",
            ] {
                assert_eq!(unterminated(closed), None, "{closed:?}");
            }
        }

        #[test]
        fn hostile_tables_are_read_in_bounded_time() {
            let started = std::time::Instant::now();
            // A field of 8 MB, without a line end; binary bytes; a quote
            // opened on the first line of 200,000.
            let huge = format!("a,{}", "x".repeat(8 << 20));
            assert_eq!(spans(&huge).len(), 1);
            let binary: String = (0..1_000_000u32)
                .map(|i| char::from_u32(i % 0x100).unwrap_or('\0'))
                .collect();
            let _ = spans(&binary);
            let _ = unterminated(&binary);
            let open = format!("\"{}", "row,1\n".repeat(200_000));
            assert_eq!(spans(&open).len(), 1);
            assert_eq!(unterminated(&open), Some(1));
            assert!(started.elapsed() < std::time::Duration::from_secs(30));
        }

        proptest::proptest! {
            #[test]
            fn spans_and_lines_match_the_text(text in "[a\",\t\r\n é\u{feff}\0]{0,80}") {
                let mut records = Records::new(&text, b',');
                let mut previous_end = 0;
                while let Some(r) = records.next() {
                    proptest::prop_assert!(previous_end <= r.start && r.start <= r.end);
                    proptest::prop_assert!(r.end <= text.len());
                    let span = text.get(r.start..r.end);
                    proptest::prop_assert!(span.is_some(), "{r:?} not on characters");
                    proptest::prop_assert_eq!(r.line, text[..r.start].matches('\n').count() + 1);
                    proptest::prop_assert!(records.field_count() >= 1);
                    previous_end = r.end;
                }
                if let Some(line) = records.unterminated_line() {
                    proptest::prop_assert!(line <= text.matches('\n').count() + 1);
                    proptest::prop_assert!(text.contains('"'));
                }
            }
        }

        #[test]
        fn cell_kinds() {
            assert_eq!(parse_float("1e3"), Some(1000.0));
            assert_eq!(parse_float("inf"), None);
            assert_eq!(date_like("2024-05-01T10:00:00"), Some(true));
            assert_eq!(date_like("31/12/2023"), Some(false));
            assert_eq!(date_like("1.2.3"), None);
            assert_eq!(date_like("2024-13-01"), None);
        }
    }
}
