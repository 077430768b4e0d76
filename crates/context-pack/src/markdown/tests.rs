#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// `(level, text, setext)` of each heading.
fn headings(text: &str) -> Vec<(u8, &str, bool)> {
    outline(text)
        .headings
        .iter()
        .map(|h| (h.level, h.text, h.setext))
        .collect()
}

#[test]
fn headings_as_commonmark_reads_them() {
    assert_eq!(
        headings(
            "# Service ##\n\n## `GET /x` *now*\n# C#\n#NoSpace\n####### seven\n    # indented code\n"
        ),
        [
            (1, "Service", false),
            (2, "`GET /x` *now*", false),
            (1, "C#", false)
        ]
    );
    // Setext, of one line or more; a rule after a blank line is no underline.
    assert_eq!(
        headings("Title\n=====\n\nSome text\nwrapped\n---\n\n---\n"),
        [(1, "Title", true), (2, "Some text\nwrapped", true)]
    );
    // Inside a list item or quote a heading is the item's; front matter is
    // metadata; an empty heading is one; CRLF line ends are line ends.
    assert_eq!(
        headings("---\ntitle: x\n---\n- # item\n> # quote\n#\r\nA\r\n---\r\n"),
        [(1, "", false), (2, "A", true)]
    );
    let text = "  ## Part\nbody\n";
    let h = &outline(text).headings[0];
    assert_eq!(&text[h.range.clone()], "## Part\n");
}

#[test]
fn fenced_blocks_with_their_bodies_as_written() {
    let text = "- Run:\n  ```sh\n  pip install x\n  ```\n> ~~~ py `x`\n> print(1)\n> ~~~\n    ```\n    indented code\n";
    let blocks = fenced_blocks(text);
    let got: Vec<(&str, &str, bool)> = blocks
        .iter()
        .map(|b| (b.info, b.body, b.unclosed))
        .collect();
    assert_eq!(
        got,
        [
            ("sh", "  pip install x\n", false),
            ("py `x`", "> print(1)\n", false)
        ]
    );
    assert_eq!(
        &text[blocks[0].range.clone()],
        "```sh\n  pip install x\n  ```"
    );
    // A shorter run, or one with an info string, does not close a fence.
    let blocks = fenced_blocks("````\n```\n```py\n````\n");
    assert_eq!(
        (blocks[0].body, blocks[0].unclosed),
        ("```\n```py\n", false)
    );
    // Unclosed: at the end of the text, or of the quote holding it.
    let blocks = fenced_blocks("> ```\n> code\nplain\n```\n");
    let got: Vec<(&str, bool)> = blocks.iter().map(|b| (b.body, b.unclosed)).collect();
    assert_eq!(got, [("> code\n", true), ("", true)]);
    assert_eq!(fenced_blocks("```\n```")[0].body, "");
    assert!(!fenced_blocks("```\n```")[0].unclosed);
    assert!(fenced_blocks("```")[0].unclosed);
}

#[test]
fn a_cut_text_gets_its_fence_closed() {
    for (cut, closed) in [
        ("```python\nx = 1\n", "```python\nx = 1\n```"),
        ("~~~~\nx", "~~~~\nx\n~~~~"),
        ("```py", "```py\n```"),
        (
            "1. Step:\n   ```sh\n   run",
            "1. Step:\n   ```sh\n   run\n   ```",
        ),
        ("> - ```\n>   x\n", "> - ```\n>   x\n>   ```"),
        // Closed already, or closed by the end of its quote: as it is.
        ("```\nx\n```", "```\nx\n```"),
        ("> ```\n> x\n\nafter\n", "> ```\n> x\n\nafter\n"),
        ("no code", "no code"),
        ("", ""),
    ] {
        assert_eq!(close_fence(cut), closed, "{cut:?}");
        assert!(
            fenced_blocks(&close_fence(cut))
                .iter()
                .all(|b| !b.unclosed || b.range.end < close_fence(cut).len()),
            "{cut:?}"
        );
    }
}

#[test]
fn line_level_definitions() {
    assert_eq!(atx("## Title ##"), Some((2, "Title")));
    assert_eq!(atx("# C#"), Some((1, "C#")));
    assert_eq!(atx("   ###"), Some((3, "")));
    assert_eq!(atx("\t# tab"), None);
    assert_eq!(atx("#hashtag"), None);
    let fence = Fence::open("  ````{.python} x").unwrap();
    assert_eq!(fence.info("  ````{.python} x"), "{.python} x");
    assert!(fence.closes("````` ") && !fence.closes("```") && !fence.closes("```` x"));
    assert_eq!(fence.closing(), "````");
    assert!(Fence::open("``` `inline`").is_none());
    assert!(Fence::open("~~~ `fine`").is_some());
    assert_eq!(indent("\t  x"), 6);
}

#[test]
fn hostile_documents_parse_in_linear_time() {
    const SIZE: usize = 1 << 20;
    let started = Instant::now();
    for unit in [
        ">", "- ", "1. ", "  ", "[", "](", "![", "*", "_", "`", "<", "<a ", "#", "\\", "&#", "|",
        "```\n", "~~~\n", "> - ", "[a]: b\n", "*a", "\n", "\r", "\0", "=\n", "-\n", "a\n===\n",
        "```a\n",
    ] {
        let text = unit.repeat(SIZE / unit.len());
        let at = Instant::now();
        let outline = outline(&text);
        assert!(outline.headings.len() <= text.len());
        let _ = close_fence(&text);
        assert!(
            at.elapsed() < Duration::from_secs(10),
            "{unit:?} took {:?}",
            at.elapsed()
        );
    }
    assert!(started.elapsed() < Duration::from_secs(60));
}

/// Lines of Markdown-ish text, hostile ones included.
fn markdown_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[ >*1.-]{0,4}(#{1,7}|`{2,5}|~{3,4})[ a#`~]{0,8}",
        "[ >-]{0,3}[=-]{1,4}",
        "[ >*-]{0,5}[a-z `*_\\[\\]()<>|\\\\]{0,20}",
        "\\PC{0,12}",
        Just("---".to_owned()),
        Just("\t```".to_owned()),
    ]
}

fn markdown_text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(markdown_line(), 0..24),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        any::<bool>(),
    )
        .prop_map(|(lines, end, last)| {
            let mut text = lines.join(end);
            if last {
                text.push_str(end);
            }
            text
        })
}

/// A single line with at most three spaces of indentation and no tab: where
/// the line-level definitions and the parser must agree.
fn top_level_line() -> impl Strategy<Value = String> {
    "[ ]{0,3}(#{0,7}|`{0,5}|~{0,5})[ a#`~]{0,6}"
        .prop_filter("indented code", |line| indent(line) <= 3)
}

fn within(text: &str, range: &std::ops::Range<usize>) -> bool {
    range.start <= range.end && text.get(range.clone()).is_some()
}

/// Whether `part` is a slice of `text` (by address), on its characters.
fn slice_of(text: &str, part: &str) -> bool {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    text.get(start..start + part.len()) == Some(part)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn outline_ranges_are_in_the_text(text in markdown_text()) {
        let outline = outline(&text);
        let mut previous = 0;
        for h in &outline.headings {
            prop_assert!(within(&text, &h.range), "{h:?}");
            prop_assert!(previous <= h.range.start);
            prop_assert!((1..=6).contains(&h.level));
            prop_assert!(slice_of(&text, h.text));
            previous = h.range.end;
        }
        let mut previous = 0;
        for b in &outline.fenced {
            prop_assert!(within(&text, &b.range), "{b:?}");
            prop_assert!(previous <= b.range.start);
            prop_assert!(slice_of(&text, b.info) && slice_of(&text, b.body));
            prop_assert!(matches!(text.as_bytes()[b.range.start], b'`' | b'~'));
            previous = b.range.end;
        }
    }

    #[test]
    fn a_closed_fence_stays_closed(text in markdown_text()) {
        let closed = close_fence(&text);
        prop_assert!(closed.starts_with(text.as_str()));
        let blocks = fenced_blocks(&closed);
        prop_assert!(
            blocks.last().is_none_or(|b| !b.unclosed || b.range.end < closed.len()),
            "{closed:?}: {blocks:?}"
        );
        prop_assert_eq!(close_fence(&closed), closed.clone());
    }

    #[test]
    fn line_definitions_agree_with_the_parser(line in top_level_line(), other in top_level_line()) {
        let parsed = outline(&line);
        prop_assert_eq!(
            atx(&line).map(|(level, title)| (level, title.to_owned())),
            parsed.headings.first().map(|h| (usize::from(h.level), h.text.to_owned())),
            "{:?}", line
        );
        let fence = Fence::open(&line);
        prop_assert_eq!(fence.is_some(), !parsed.fenced.is_empty(), "{:?}", line);
        if let Some(fence) = fence {
            prop_assert_eq!(fence.info(&line), parsed.fenced[0].info);
            let two = format!("{line}\n{other}");
            let closed = !fenced_blocks(&two)[0].unclosed;
            prop_assert_eq!(fence.closes(&other), closed, "{:?}", two);
        }
    }
}
