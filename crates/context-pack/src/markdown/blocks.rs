//! Where a Markdown document's headings and fenced code blocks are, read
//! by pulldown-cmark (CommonMark, plus YAML front matter), in one linear
//! pass over the text.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A heading of a Markdown document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading<'a> {
    /// 1 to 6.
    pub level: u8,
    /// The heading as written, inline markup kept (`**Setup**`,
    /// `` `run` ``), without its `#` marks, closing `#` run or setext
    /// underline; empty for an empty heading. A setext heading of several
    /// lines keeps its line breaks.
    pub text: &'a str,
    /// From the heading's first character (after any indentation) to the
    /// end of its last line, line end included.
    pub range: Range<usize>,
    /// Written as text underlined with `===` or `---`, not with `#`.
    pub setext: bool,
}

/// A fenced code block of a Markdown text (a model's answer, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedBlock<'a> {
    /// The info string after the opening fence (`json`, `python`, or
    /// empty), as written.
    pub info: &'a str,
    /// The lines between the fences, each with its line break, as written
    /// (the indentation or `>` of an enclosing list item or quote kept).
    pub body: &'a str,
    /// True when no fence closed it: the text ended inside the block (an
    /// answer cut by the output limit), or the list item or quote holding
    /// it did.
    pub unclosed: bool,
    /// From the opening fence (after any indentation) to the end of the
    /// closing fence, or of the block's last line when it is unclosed.
    pub range: Range<usize>,
}

/// The headings and fenced code blocks of a Markdown document, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline<'a> {
    /// The section headings: those at the document's top level. A heading
    /// inside a list item or a quote belongs to that item, not to the
    /// document's outline, and is left out.
    pub headings: Vec<Heading<'a>>,
    /// Every fenced code block, nested in a list item or quote or not.
    pub fenced: Vec<FencedBlock<'a>>,
}

/// The headings and fenced code blocks of `text`, read as CommonMark by
/// pulldown-cmark (YAML front matter is metadata, not a rule and a
/// heading). A fence that nothing closes runs to the end of its list item,
/// quote or document, as CommonMark says; a `#` line inside a code block
/// is code. Linear in the text; never fails.
///
/// ```
/// use context_pack::markdown::outline;
///
/// let text = "# Setup\n\n```sh\n# not a heading\npip install x\n```\n\nUsage\n-----\n";
/// let outline = outline(text);
/// let headings: Vec<(u8, &str, bool)> =
///     outline.headings.iter().map(|h| (h.level, h.text, h.setext)).collect();
/// assert_eq!(headings, [(1, "Setup", false), (2, "Usage", true)]);
/// let block = &outline.fenced[0];
/// assert_eq!((block.info, block.body, block.unclosed), ("sh", "# not a heading\npip install x\n", false));
/// assert_eq!(&text[block.range.clone()], "```sh\n# not a heading\npip install x\n```");
/// ```
pub fn outline(text: &str) -> Outline<'_> {
    let mut outline = Outline::default();
    // Open tags around the current event: a heading at depth 0 is at the
    // document's top level.
    let mut depth = 0usize;
    // The open heading: level, range, and the extent of what is inside it.
    let mut heading: Option<(u8, Range<usize>, Option<Range<usize>>)> = None;
    // The open fenced block: its range, and where its content ends so far.
    let mut block: Option<(Range<usize>, usize)> = None;
    let options = Options::ENABLE_YAML_STYLE_METADATA_BLOCKS;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                if depth == 0 {
                    heading = Some((level as u8, range, None));
                }
                depth += 1;
            }
            Event::End(TagEnd::Heading(_)) => {
                depth = depth.saturating_sub(1);
                if let Some((level, range, inner)) = heading.take() {
                    outline
                        .headings
                        .push(finish_heading(text, level, range, inner));
                }
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                let content = line_end(text, range.start).min(range.end);
                block = Some((range, content));
                depth += 1;
            }
            Event::End(TagEnd::CodeBlock) => {
                depth = depth.saturating_sub(1);
                if let Some((range, content)) = block.take() {
                    outline.fenced.push(finish_block(text, range, content));
                }
            }
            // Inside a heading, inline tags (emphasis, links) only widen
            // its text, below.
            Event::Start(_) if heading.is_none() => depth += 1,
            Event::End(_) if heading.is_none() => depth = depth.saturating_sub(1),
            _ => {
                if let Some((_, _, inner)) = &mut heading {
                    *inner = Some(match inner.take() {
                        Some(seen) => seen.start.min(range.start)..seen.end.max(range.end),
                        None => range,
                    });
                } else if let Some((_, content)) = &mut block {
                    *content = (*content).max(range.end);
                }
            }
        }
    }
    outline
}

/// The fenced code blocks of `text`, in order: [`outline`]'s.
///
/// ```
/// use context_pack::markdown::fenced_blocks;
/// let answer = "Here:\n````markdown\n```sh\nrun\n```\n````\nDone.\n```json\n{\"a\": 1}";
/// let blocks = fenced_blocks(answer);
/// assert_eq!((blocks[0].info, blocks[0].body), ("markdown", "```sh\nrun\n```\n"));
/// assert_eq!((blocks[1].info, blocks[1].body, blocks[1].unclosed), ("json", "{\"a\": 1}", true));
/// ```
pub fn fenced_blocks(text: &str) -> Vec<FencedBlock<'_>> {
    outline(text).fenced
}

/// `text` with a closing fence appended when it ends inside a fenced code
/// block (a text cut to fit a budget), so that what follows it is not
/// read as code. The fence repeats the opening one's character and length,
/// under the same quote marks and indentation. Otherwise `text` as it is.
///
/// ```
/// use context_pack::markdown::close_fence;
/// assert_eq!(close_fence("Run:\n````python\nprint(1)"), "Run:\n````python\nprint(1)\n````");
/// assert_eq!(close_fence("> ~~~\n> x\n"), "> ~~~\n> x\n> ~~~");
/// assert_eq!(close_fence("```\nx\n```\n"), "```\nx\n```\n");
/// ```
pub fn close_fence(text: &str) -> Cow<'_, str> {
    let Some(block) = fenced_blocks(text)
        .pop()
        .filter(|b| b.unclosed && b.range.end == text.len())
    else {
        return Cow::Borrowed(text);
    };
    // A bare CR ends a line in CommonMark.
    let line_start = text[..block.range.start]
        .rfind(['\n', '\r'])
        .map_or(0, |i| i + 1);
    // Quote marks stay; a list item's marker becomes spaces, so the fence
    // is inside the item without starting another. A quote mark takes one
    // space after it as its own: where the item's marker followed it
    // directly (`>- ```), one more space keeps the fence in the item.
    let mut prefix = String::new();
    let mut chars = text[line_start..block.range.start].chars().peekable();
    while let Some(c) = chars.next() {
        if c == '>' {
            prefix.push('>');
            if chars
                .peek()
                .is_some_and(|&next| !matches!(next, ' ' | '\t' | '>'))
            {
                prefix.push(' ');
            }
        } else {
            prefix.push(if c == '\t' { '\t' } else { ' ' });
        }
    }
    let opening = &text[block.range.start..];
    let ch = opening.as_bytes().first().copied().unwrap_or(b'`');
    let run = opening.bytes().take_while(|&b| b == ch).count();
    let mut out = String::with_capacity(text.len() + prefix.len() + run + 1);
    out.push_str(text);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&prefix);
    out.extend(std::iter::repeat_n(char::from(ch), run));
    Cow::Owned(out)
}

/// The offset after the line end that ends the line holding `at`, or the
/// text's end.
fn line_end(text: &str, at: usize) -> usize {
    text.get(at..)
        .and_then(|rest| rest.find('\n'))
        .map_or(text.len(), |i| at + i + 1)
}

fn finish_heading(
    text: &str,
    level: u8,
    range: Range<usize>,
    inner: Option<Range<usize>>,
) -> Heading<'_> {
    // Empty, a heading's text is still a slice of the document, at its start.
    let empty = text.get(range.start..range.start).unwrap_or_default();
    let title = inner.and_then(|r| text.get(r)).unwrap_or(empty);
    let lines = text.get(range.clone()).unwrap_or_default().trim_end();
    Heading {
        level,
        text: title,
        setext: lines.contains(['\n', '\r']),
        range,
    }
}

/// A fenced block from its range and where its content ends (the end of
/// its opening line when it has none).
fn finish_block(text: &str, range: Range<usize>, content: usize) -> FencedBlock<'_> {
    let opening = text.get(range.start..).unwrap_or_default().as_bytes();
    let run = opening
        .iter()
        .take_while(|&&b| Some(&b) == opening.first())
        .count();
    let info_start = range.start + run;
    let body_start = line_end(text, range.start).min(range.end);
    let info = text.get(info_start..body_start).unwrap_or_default().trim();
    // A closing fence is the only thing after the content that holds a
    // fence character; an unclosed block ends with its content, or with
    // blank lines and quote marks.
    let unclosed = !text
        .get(content..range.end)
        .is_some_and(|rest| rest.contains(['`', '~']));
    let body_end = if unclosed {
        range.end
    } else {
        text[..range.end]
            .rfind('\n')
            .map_or(body_start, |i| i + 1)
            .max(body_start)
    };
    FencedBlock {
        info,
        body: text
            .get(body_start..body_end)
            .unwrap_or(&text[body_start..body_start]),
        unclosed,
        range,
    }
}
