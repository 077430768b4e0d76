#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The document and log views: pass-through of small inputs, chunk
//! selection, table previews, log head/tail/traceback selection, and the
//! hard token limit on any input.

use std::fmt::Write as _;
use std::sync::OnceLock;

use context_pack::select::{SelectOptions, View, document, log};
use context_pack::{Encoding, TokenCounter};
use proptest::prelude::*;

fn counter() -> &'static TokenCounter {
    static COUNTER: OnceLock<TokenCounter> = OnceLock::new();
    COUNTER.get_or_init(|| TokenCounter::new(Encoding::default()).unwrap())
}

fn assert_bounded(view: &View, options: &SelectOptions) {
    assert!(
        view.tokens <= options.max_tokens,
        "{} tokens over the limit of {}",
        view.tokens,
        options.max_tokens
    );
    assert_eq!(
        view.tokens,
        counter().count(&view.text),
        "View.tokens must be the count of View.text"
    );
}

/// Numbers in `[... N <unit> omitted ...]` markers.
fn omitted(text: &str, unit: &str) -> Vec<usize> {
    text.lines()
        .filter_map(|line| line.strip_prefix("[... ")?.strip_suffix(" omitted ...]"))
        .filter_map(|inner| {
            let (number, rest) = inner.split_once(' ')?;
            rest.starts_with(unit).then(|| number.parse().ok())?
        })
        .collect()
}

/// A section of about 450 tokens about nothing in particular.
fn filler_section(i: usize) -> String {
    let mut section = format!("## Section {i}\n\n");
    for paragraph in 0..4 {
        for sentence in 0..6 {
            let _ = write!(
                section,
                "Paragraph {paragraph} sentence {sentence} of section {i} describes generic behaviour of the widget framework. "
            );
        }
        section.push_str("\n\n");
    }
    section
}

fn long_document() -> String {
    (1..=30)
        .map(|i| {
            if i == 17 {
                let mut section = filler_section(i);
                section.push_str(
                    "To rotate the encryption keys, run `keyctl rotate --vault` and restart the daemon; \
                     rotation of encryption keys invalidates cached sessions.\n\n",
                );
                section
            } else {
                filler_section(i)
            }
        })
        .collect()
}

/// Section numbers in the order they appear in a view.
fn section_numbers(text: &str) -> Vec<usize> {
    text.lines()
        .filter_map(|line| line.strip_prefix("## Section ")?.trim().parse().ok())
        .collect()
}

#[test]
fn small_inputs_pass_through_unchanged() {
    let options = SelectOptions::default();
    let text = "# Title\r\n\r\nA short README.\r\nTraceback (most recent call last):\n  File \"x.py\"\nValueError: no\n";
    for name in ["README.md", "notes.txt", "data.csv", "table.tsv"] {
        let view = document(counter(), name, text, Some("readme"), &options);
        assert_eq!(view.text, text);
        assert!(!view.reduced);
        assert_bounded(&view, &options);
    }
    let view = log(counter(), text, &options);
    assert_eq!(view.text, text);
    assert!(!view.reduced);
    assert_bounded(&view, &options);
}

#[test]
fn empty_input_passes_through() {
    let options = SelectOptions::default();
    for view in [
        document(counter(), "a.md", "", None, &options),
        log(counter(), "", &options),
    ] {
        assert_eq!(
            view,
            View {
                text: String::new(),
                tokens: 0,
                reduced: false
            }
        );
    }
    let tight = SelectOptions {
        max_tokens: 0,
        ..SelectOptions::default()
    };
    for view in [
        document(counter(), "a.md", "", None, &tight),
        log(counter(), "", &tight),
    ] {
        assert_eq!(view.tokens, 0);
    }
}

#[test]
fn long_document_keeps_the_chunk_about_the_query() {
    let options = SelectOptions::default();
    let text = long_document();
    assert!(
        counter().count(&text) > options.max_tokens * 3 / 2,
        "the fixture must need reducing"
    );

    let view = document(
        counter(),
        "guide.md",
        &text,
        Some("rotate encryption keys"),
        &options,
    );
    assert!(view.reduced);
    assert_bounded(&view, &options);
    assert!(
        view.text.contains("`keyctl rotate --vault`"),
        "the chunk mentioning the query is kept:\n{}",
        view.text
    );
    assert!(view.text.starts_with("[document view: "));
    assert!(
        view.text
            .lines()
            .next()
            .unwrap()
            .contains("\"rotate encryption keys\"")
    );
    assert!(
        !omitted(&view.text, "chunk").is_empty(),
        "dropped chunks are marked"
    );
    let sections = section_numbers(&view.text);
    assert!(sections.contains(&17));
    assert!(
        sections.windows(2).all(|w| w[0] < w[1]),
        "document order is kept: {sections:?}"
    );
    // Fewer sections than the whole, and the omitted chunks add up with the kept ones.
    assert!(sections.len() < 30);
    let chunk_total: usize = view
        .text
        .lines()
        .next()
        .unwrap()
        .split(" of ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let kept: usize = view.text.lines().next().unwrap()["[document view: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(kept, options.top_chunks);
    assert_eq!(
        omitted(&view.text, "chunk").iter().sum::<usize>() + kept,
        chunk_total
    );
}

#[test]
fn without_a_query_a_long_document_keeps_its_beginning() {
    let options = SelectOptions::default();
    let text = long_document();
    for query in [None, Some("   "), Some("the of and")] {
        let view = document(counter(), "guide.md", &text, query, &options);
        assert!(view.reduced);
        assert_bounded(&view, &options);
        let body = view.text.split_once('\n').unwrap().1;
        assert!(
            body.starts_with("## Section 1\n"),
            "the view starts with the document:\n{}",
            &view.text[..200]
        );
        let sections = section_numbers(&view.text);
        assert!(
            sections.windows(2).all(|w| w[1] == w[0] + 1),
            "a contiguous beginning: {sections:?}"
        );
        assert_eq!(
            omitted(&view.text, "chunk").len(),
            1,
            "one marker, at the end"
        );
        assert!(view.text.trim_end().ends_with("chunks omitted ...]"));
    }
}

#[test]
fn unmatched_query_falls_back_to_the_beginning() {
    let options = SelectOptions::default();
    let view = document(
        counter(),
        "guide.md",
        &long_document(),
        Some("kubernetes"),
        &options,
    );
    assert_bounded(&view, &options);
    assert!(
        view.text
            .lines()
            .next()
            .unwrap()
            .contains("none mentions \"kubernetes\"")
    );
    assert_eq!(section_numbers(&view.text).first(), Some(&1));
}

#[test]
fn a_tight_budget_still_shows_the_relevant_chunk() {
    let options = SelectOptions {
        max_tokens: 600,
        ..SelectOptions::default()
    };
    let view = document(
        counter(),
        "guide.md",
        &long_document(),
        Some("keyctl rotate vault"),
        &options,
    );
    assert_bounded(&view, &options);
    assert!(view.text.contains("keyctl rotate"), "{}", view.text);
}

fn large_csv() -> String {
    let mut csv = String::from("id,name,price,in_stock,added,notes\n");
    for i in 1..=5_000 {
        if i == 2_500 {
            // Malformed: a missing column.
            csv.push_str("2500,\"Broken, Row\",1.5,true\n");
            continue;
        }
        let name = match i % 3 {
            0 => format!("\"Smith, John {i}\""),
            1 => format!("\"the \"\"quoted\"\" {i}\""),
            _ => format!("plain{i}"),
        };
        let price = if i % 100 == 0 {
            String::new()
        } else {
            format!("{}.25", i % 1_000)
        };
        let stock = if i % 2 == 0 { "true" } else { "false" };
        let _ = writeln!(
            csv,
            "{i},{name},{price},{stock},2024-{:02}-{:02},",
            1 + i % 12,
            1 + i % 28
        );
    }
    csv
}

#[test]
fn large_csv_gets_a_table_preview() {
    let options = SelectOptions::default();
    let csv = large_csv();
    assert!(counter().count(&csv) > options.max_tokens);
    let view = document(counter(), "data/Products.CSV", &csv, None, &options);
    assert!(view.reduced);
    assert_bounded(&view, &options);
    let text = &view.text;
    assert!(
        text.starts_with(
            "[table preview of data/Products.CSV: 5000 rows, 6 columns, comma-separated;"
        ),
        "{text}"
    );
    let mut lines = text.lines().skip(1);
    assert_eq!(lines.next(), Some("id,name,price,in_stock,added,notes"));
    assert_eq!(
        lines.next(),
        Some("1,\"the \"\"quoted\"\" 1\",1.25,false,2024-02-02,")
    );
    assert!(text.contains(
        "\n10,\"the \"\"quoted\"\" 10\",10.25,true,2024-11-11,\n[... 4990 rows omitted ...]\n"
    ));
    assert!(text.contains("- id: integer, 1..5000\n"), "{text}");
    assert!(
        text.contains("- price: float, 1.25..999.25, 49 empty\n"),
        "{text}"
    );
    assert!(
        text.contains("- in_stock: bool, 2500 true, 2500 false\n"),
        "{text}"
    );
    assert!(
        text.contains("- added: date-like, 2024-01-01..2024-12-28"),
        "{text}"
    );
    // The malformed row has no `added` and `notes` cells: 4999 rows reach them.
    assert!(text.contains("- notes: empty, 4999 empty\n"), "{text}");
    let name = text.lines().find(|l| l.starts_with("- name: ")).unwrap();
    assert!(name.starts_with("- name: text, "), "{name}");
    assert!(
        name.contains("distinct, e.g. \"the \\\"quoted\\\" 1\", \"plain2\", \"Smith, John 3\""),
        "{name}"
    );
    assert!(
        text.contains(
            "[1 row has a different number of columns than the header (the first at line 2501)]"
        ),
        "{text}"
    );
}

#[test]
fn large_tsv_and_a_tight_budget() {
    let tsv: String = std::iter::once("a\tb\n".to_owned())
        .chain((0..20_000).map(|i| format!("{i}\tvalue {}\n", i % 7)))
        .collect();
    let options = SelectOptions::default();
    let view = document(counter(), "t.tsv", &tsv, None, &options);
    assert_bounded(&view, &options);
    assert!(view.text.contains("20000 rows, 2 columns, tab-separated"));
    assert!(
        view.text
            .contains("- b: text, 7..7 chars, 7 distinct: \"value 0\" (2858)"),
        "{}",
        view.text
    );

    let wide: String = (0..3)
        .map(|row| {
            (0..400)
                .map(|c| format!("c{c}r{row}"))
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    let tight = SelectOptions {
        max_tokens: 300,
        ..SelectOptions::default()
    };
    let view = document(counter(), "wide.csv", &wide, None, &tight);
    assert_bounded(&view, &tight);
    assert!(view.text.contains("2 rows, 400 columns"), "{}", view.text);
    assert!(view.text.contains("more columns ...]"), "{}", view.text);
}

#[test]
fn table_previews_of_unusual_files() {
    let options = SelectOptions::default();
    // A quote opened on line 5,002 and never closed: the rest of the file
    // is that one field, and the preview says so.
    let mut csv = large_csv();
    csv.push_str("5001,\"never closed,1.0,true,2024-01-01,\n5002,x,2.0,false,2024-01-02,\n");
    let view = document(counter(), "data.csv", &csv, None, &options);
    assert_bounded(&view, &options);
    assert!(view.text.contains("5001 rows, 6 columns"), "{}", view.text);
    assert!(
        view.text.contains(
            "[a quoted field opened at line 5002 is never closed: the rest of the file was read as that one field]"
        ),
        "{}",
        view.text
    );
    // Old Mac line ends, blank lines, a byte order mark and no final line end.
    let mac: String = std::iter::once("\u{feff}id,label\r\r".to_owned())
        .chain((1..=3_000).map(|i| format!("{i},item {i}\r")))
        .collect::<String>()
        .trim_end()
        .to_owned();
    let view = document(counter(), "mac.csv", &mac, None, &options);
    assert_bounded(&view, &options);
    let mut lines = view.text.lines();
    assert!(
        lines
            .next()
            .is_some_and(|l| l.contains("3000 rows, 2 columns")),
        "{}",
        view.text
    );
    assert_eq!(lines.next(), Some("id,label"));
    assert_eq!(lines.next(), Some("1,item 1"));
    assert!(
        view.text.contains("- id: integer, 1..3000\n"),
        "{}",
        view.text
    );
}

/// 50,000 numbered log lines with a traceback at line 25,001.
fn long_log() -> (String, &'static str) {
    const TRACEBACK: &str = "Traceback (most recent call last):\n  File \"/app/train.py\", line 88, in <module>\n    main()\n  File \"/app/train.py\", line 80, in main\n    step(batch)\n  File \"/app/model.py\", line 12, in step\n    raise ValueError(\"bad batch shape (3, 224)\")\nValueError: bad batch shape (3, 224)\n";
    let mut text = String::with_capacity(3_000_000);
    for i in 1..=50_000 {
        if i == 25_001 {
            text.push_str(TRACEBACK);
        }
        let _ = writeln!(
            text,
            "2024-05-01 12:00:00 INFO worker-{} line {i}: processed batch {} in 0.{}s",
            i % 8,
            i * 3,
            i % 97
        );
    }
    (text, TRACEBACK)
}

/// The number in a log line "... line N: ...".
fn log_line_number(line: &str) -> Option<usize> {
    line.split_once(" line ")?.1.split(':').next()?.parse().ok()
}

#[test]
fn long_log_keeps_head_tail_and_the_traceback() {
    let options = SelectOptions::default();
    let (text, traceback) = long_log();
    let counter = counter();
    let started = std::time::Instant::now();
    let view = log(counter, &text, &options);
    let elapsed = started.elapsed();
    eprintln!("log view of a {} byte log: {elapsed:?}", text.len());
    assert!(view.reduced);
    assert_bounded(&view, &options);
    assert!(
        view.text.contains(traceback),
        "the traceback survives intact:\n{}",
        view.text
    );
    let lines: Vec<&str> = view.text.lines().collect();
    assert!(lines[0].starts_with("[log view: "), "{}", lines[0]);
    assert!(
        lines[0].contains("the first 40, the last 80, 1 of 1 traceback in full"),
        "{}",
        lines[0]
    );
    // Head and tail.
    let numbers: Vec<usize> = lines.iter().filter_map(|l| log_line_number(l)).collect();
    assert_eq!(&numbers[..40], (1..=40).collect::<Vec<_>>());
    assert_eq!(
        &numbers[numbers.len() - 80..],
        (49_921..=50_000).collect::<Vec<_>>()
    );
    // Every gap marker says exactly how many lines lie between its neighbours.
    let mut gaps = 0;
    for window in lines.windows(3) {
        let [before, marker, after] = window else {
            unreachable!()
        };
        let Some(&omitted) = omitted(marker, "line").first() else {
            continue;
        };
        let before_line =
            log_line_number(before).or_else(|| before.starts_with("ValueError").then_some(25_000));
        let after_line =
            log_line_number(after).or_else(|| after.starts_with("Traceback").then_some(25_001));
        if let (Some(b), Some(a)) = (before_line, after_line) {
            // Log line numbers do not count the 8 traceback lines.
            let traceback_between =
                usize::from(b <= 25_000 && a > 25_000 && !after.starts_with("Traceback")) * 8;
            assert_eq!(
                omitted,
                a - b - 1 + traceback_between,
                "{before} / {marker} / {after}"
            );
            gaps += 1;
        }
    }
    assert!(gaps >= 2, "{}", view.text);
    // The lines around the error are there too.
    assert!(view.text.contains(
        "ValueError: bad batch shape (3, 224)\n2024-05-01 12:00:00 INFO worker-1 line 25001:"
    ));
}

#[test]
fn many_errors_stay_under_the_limit_and_keep_the_last_traceback() {
    let options = SelectOptions::default();
    let mut text = String::new();
    for i in 0..3_000 {
        let _ = writeln!(
            text,
            "epoch {i}: RuntimeError: CUDA error: device-side assert triggered (retrying)"
        );
        if i % 10 == 0 {
            let _ = write!(
                text,
                "Traceback (most recent call last):\n  File \"loop.py\", line {i}, in run\n    trainer.fit()\n  File \"trainer.py\", line 7, in fit\n    raise RuntimeError(\"attempt {i}\")\nRuntimeError: attempt {i}\n"
            );
        }
    }
    text.push_str("Traceback (most recent call last):\n  File \"loop.py\", line 1, in <module>\n    run()\nSystemExit: FinalError giving up after 3000 attempts\n");
    text.push_str("cleanup done\n");

    let view = log(counter(), &text, &options);
    assert!(view.reduced);
    assert_bounded(&view, &options);
    assert!(view.text.contains(
        "Traceback (most recent call last):\n  File \"loop.py\", line 1, in <module>\n    run()\nSystemExit: FinalError giving up after 3000 attempts\ncleanup done\n"
    ));
    assert!(
        view.text.contains("RuntimeError: attempt 2990\n"),
        "newer tracebacks are preferred"
    );
    assert!(
        !view.text.contains("RuntimeError: attempt 1500\n"),
        "older ones in the middle give way:\n{}",
        view.text
    );
    assert!(view.text.contains("[... "));

    // The same with a budget too small for head and tail: still bounded, last traceback first.
    let tight = SelectOptions {
        max_tokens: 400,
        ..SelectOptions::default()
    };
    let view = log(counter(), &text, &tight);
    assert_bounded(&view, &tight);
    assert!(
        view.text
            .contains("SystemExit: FinalError giving up after 3000 attempts\n"),
        "{}",
        view.text
    );
}

#[test]
fn huge_single_line_and_crlf() {
    let options = SelectOptions::default();
    let line: String = (0..250_000)
        .map(|i| format!("w{} ", i % 1_000))
        .collect::<String>()
        + "END-MARK";
    assert!(line.len() >= 1_000_000);

    let view = log(counter(), &line, &options);
    assert!(view.reduced);
    assert_bounded(&view, &options);
    assert!(view.text.contains("w0 w1 w2 "), "the start of the line");
    assert!(view.text.contains("END-MARK"), "the end of the line");
    assert!(
        view.text.contains("bytes of a long line omitted ...]"),
        "{}",
        &view.text[..300]
    );

    let view = document(counter(), "blob.txt", &line, None, &options);
    assert!(view.reduced);
    assert_bounded(&view, &options);
    assert!(view.text.contains("w0 w1 w2 "));

    let view = document(counter(), "blob.txt", &line, Some("END-MARK"), &options);
    assert_bounded(&view, &options);
    assert!(view.text.contains("END-MARK"));

    // No newline at all and no spaces either: still split, still bounded.
    let solid = "x".repeat(1_000_000);
    for view in [
        log(counter(), &solid, &options),
        document(counter(), "x.csv", &solid, None, &options),
    ] {
        assert!(view.reduced);
        assert_bounded(&view, &options);
    }

    let crlf: String = (0..5_000).map(|i| format!("line {i}: fine\r\n")).collect();
    let view = log(counter(), &crlf, &options);
    assert_bounded(&view, &options);
    assert!(
        !view.text.contains('\r'),
        "CRLF becomes LF in a reduced view"
    );
    assert!(view.text.contains("line 4999: fine\n"));
    assert_eq!(omitted(&view.text, "line"), [5_000 - 120]);
}

#[test]
fn tiny_budgets_are_respected() {
    let (log_text, _) = long_log();
    let document_text = long_document();
    let csv = large_csv();
    for max_tokens in [0, 1, 5, 30, 90] {
        let options = SelectOptions {
            max_tokens,
            ..SelectOptions::default()
        };
        for view in [
            log(counter(), &log_text, &options),
            document(
                counter(),
                "guide.md",
                &document_text,
                Some("rotate keys"),
                &options,
            ),
            document(counter(), "data.csv", &csv, None, &options),
        ] {
            assert!(view.reduced);
            assert_bounded(&view, &options);
        }
    }
}

#[test]
fn unusual_options_do_not_panic() {
    let (log_text, _) = long_log();
    let document_text = long_document();
    let csv = large_csv();
    let none = SelectOptions {
        max_tokens: 2_000,
        chunk_tokens: 0,
        top_chunks: 0,
        head_lines: 0,
        tail_lines: 0,
        context_lines: 0,
    };
    let all = SelectOptions {
        max_tokens: 3_000,
        chunk_tokens: usize::MAX,
        top_chunks: usize::MAX,
        head_lines: usize::MAX,
        tail_lines: usize::MAX,
        context_lines: usize::MAX,
    };
    for options in [none, all] {
        for view in [
            log(counter(), &log_text, &options),
            document(
                counter(),
                "guide.md",
                &document_text,
                Some("rotate"),
                &options,
            ),
            document(counter(), "data.tsv", &csv, None, &options),
        ] {
            assert!(view.reduced);
            assert_bounded(&view, &options);
        }
    }
    // Without head and tail, the traceback is what a log view shows.
    let view = log(counter(), &log_text, &none);
    assert!(view.text.contains("ValueError: bad batch shape (3, 224)\n"));
}

fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ -~]{0,100}",
        1 => "[a-zé中 ,\"\t]{0,300}",
        1 => Just("Traceback (most recent call last):".to_owned()),
        1 => Just("  File \"x.py\", line 1".to_owned()),
        1 => Just("ValueError: boom".to_owned()),
        1 => Just("# Heading".to_owned()),
        1 => Just(String::new()),
        1 => "[a-z]{500,3000}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn views_never_exceed_the_limit(
        lines in prop::collection::vec(line_strategy(), 0..600),
        crlf in any::<bool>(),
        max_tokens in 200usize..4_000,
        query in prop::option::of("[a-z ]{0,20}"),
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let options = SelectOptions { max_tokens, ..SelectOptions::default() };
        for name in ["doc.md", "data.csv", "data.tsv"] {
            let view = document(counter(), name, &text, query.as_deref(), &options);
            prop_assert!(view.tokens <= max_tokens, "{} > {max_tokens} for {name}", view.tokens);
            prop_assert_eq!(view.tokens, counter().count(&view.text));
            prop_assert_eq!(view.reduced, view.text != text);
        }
        let view = log(counter(), &text, &options);
        prop_assert!(view.tokens <= max_tokens, "{} > {max_tokens} for the log", view.tokens);
        prop_assert_eq!(view.tokens, counter().count(&view.text));
        prop_assert_eq!(view.reduced, view.text != text);
    }
}
