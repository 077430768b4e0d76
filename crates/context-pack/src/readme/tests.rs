#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::fit::Category;
use super::parse::list_items;
use super::*;
use crate::markdown::Fence;

fn counter() -> TokenCounter {
    TokenCounter::new(Default::default()).unwrap()
}

/// The cleaned README, as it would go in whole.
fn cleaned(text: &str, flavor: Flavor) -> String {
    let doc = Document::new(text, flavor);
    doc.render(&vec![true; doc.blocks.len()], &FxHashMap::default())
}

/// Code fences balance, read the way CommonMark does (a fence closes
/// only with its own character and at least its length).
fn fences_balanced(text: &str) -> bool {
    let mut open: Option<Fence> = None;
    for line in text.lines() {
        match &open {
            Some(f) if f.closes(line) => open = None,
            Some(_) => {}
            None => open = Fence::open(line),
        }
    }
    open.is_none()
}

#[test]
fn badges_logos_and_comments_go_code_stays() {
    let text = "# Tool\n\n<p align=\"center\">\n  <a href=\"https://x.org\"><img src=\"logo.png\" width=\"200\"/></a>\n</p>\n<br>\n\n[![CI](https://github.com/o/r/actions/workflows/ci.yml/badge.svg)](https://github.com/o/r/actions)\n[![PyPI](https://img.shields.io/pypi/v/tool.svg)](https://pypi.org/project/tool)\n\n<!-- a note\nfor maintainers -->\nTool converts things. ![build](https://travis-ci.org/o/r.svg) Fast.\n\n```html\n<img src=\"kept.png\">\n[![x](https://img.shields.io/x)](y)\n<!-- kept -->\n```\n";
    let out = cleaned(text, Flavor::Markdown);
    assert_eq!(
        out,
        "# Tool\n\nTool converts things.  Fast.\n\n```html\n<img src=\"kept.png\">\n[![x](https://img.shields.io/x)](y)\n<!-- kept -->\n```"
    );
}

#[test]
fn link_only_lines_and_items_go_items_with_text_stay() {
    let text = "## Links\n\n[Docs](https://d.org) | [Blog](https://b.org) · <https://c.org>\n\n- [Home](https://h.org)\n- **[API](https://a.org)**\n- Usage: [CLI](https://u.org/cli), [Python](https://u.org/py)\n- See [the guide](https://g.org) first.\n\nRead the [docs](https://d.org).\n\n[docs]: https://d.org\n[badge]: https://img.shields.io/b.svg\n\nhttps://bare.example.org/path\n";
    let out = cleaned(text, Flavor::Markdown);
    assert_eq!(
        out,
        "## Links\n\n- Usage: [CLI](https://u.org/cli), [Python](https://u.org/py)\n- See [the guide](https://g.org) first.\n\nRead the [docs](https://d.org).\n\n[docs]: https://d.org"
    );
}

#[test]
fn a_lead_in_goes_with_its_links() {
    let text = "Intro.\n\nVideo tutorials in several languages:\n\n- [English](https://y.org/en)\n- [German](https://y.org/de)\n\nSee also:\n- [Blog](https://b.org)\n\nKept because its list stays:\n- [A](https://a.org): the A tool\n";
    assert_eq!(
        cleaned(text, Flavor::Markdown),
        "Intro.\n\nKept because its list stays:\n- [A](https://a.org): the A tool"
    );
}

#[test]
fn a_section_left_empty_loses_its_heading() {
    let text =
        "# P\n\nIntro.\n\n## Badges\n\n[![a](https://img.shields.io/a)](b)\n\n## Use\n\nCall it.\n";
    assert_eq!(
        cleaned(text, Flavor::Markdown),
        "# P\n\nIntro.\n\n## Use\n\nCall it."
    );
}

#[test]
fn inline_code_is_not_cleaned() {
    let text = "Write `<br>` or `![x](https://img.shields.io/x)` to break.\n";
    assert_eq!(cleaned(text, Flavor::Markdown), text.trim_end());
}

#[test]
fn an_unclosed_comment_is_text() {
    let text = "Intro <!-- not closed\n\n## Usage\n\nrun\n";
    assert_eq!(cleaned(text, Flavor::Markdown), text.trim_end());
}

#[test]
fn rst_images_substitutions_and_literals() {
    let text = "=====\nTitle\n=====\n\n|pypi| |ci|\n\n.. |pypi| image:: https://img.shields.io/pypi/v/t.svg\n   :target: https://pypi.org/project/t\n.. |ci| image:: https://github.com/o/t/workflows/ci/badge.svg\n\n.. image:: docs/logo.png\n   :width: 200\n\nIntro text |pypi|.\n\nUsage\n-----\n\nCall it::\n\n    >>> import t\n    >>> t.run()  # |ci| stays\n\n.. code-block:: python\n\n   t.run(fast=True)\n\n.. note::\n\n   Be careful.\n\nSee `the docs <https://t.org>`_ and `PyPI <https://pypi.org>`_.\n\n`Docs <https://t.org>`_ | `Code <https://github.com/o/t>`__\n";
    let out = cleaned(text, Flavor::Rst);
    assert_eq!(
        out,
        "=====\nTitle\n=====\n\nIntro text .\n\nUsage\n-----\n\nCall it::\n\n    >>> import t\n    >>> t.run()  # |ci| stays\n\n.. code-block:: python\n\n   t.run(fast=True)\n\n.. note::\n\n   Be careful.\n\nSee `the docs <https://t.org>`_ and `PyPI <https://pypi.org>`_."
    );
}

#[test]
fn headings_of_every_kind_make_sections() {
    let md = "Title\n=====\n\nintro\n\nSub\n---\n\ntext\n\n### Deep ###\n\nmore\n\n```\n# not a heading\n```\n";
    let doc = Document::new(md, Flavor::Markdown);
    let titles: Vec<(&str, usize, Option<usize>)> = doc
        .sections
        .iter()
        .map(|s| (s.title.as_str(), s.level, s.parent))
        .collect();
    assert_eq!(
        titles,
        [
            ("introduction", 0, None),
            ("Sub", 2, None),
            ("Deep", 3, Some(1))
        ]
    );
    let rst = "Project\n#######\n\nintro\n\nInstall\n=======\n\npip\n\nFrom source\n-----------\n\nmake\n\nLicense\n=======\n\nMIT\n";
    let doc = Document::new(rst, Flavor::Rst);
    let titles: Vec<(&str, usize, Option<usize>)> = doc
        .sections
        .iter()
        .map(|s| (s.title.as_str(), s.level, s.parent))
        .collect();
    assert_eq!(
        titles,
        [
            ("introduction", 0, None),
            ("Install", 2, None),
            ("From source", 3, Some(1)),
            ("License", 2, None)
        ]
    );
}

#[test]
fn a_fence_is_never_a_title() {
    // Found by the property test: an overline and underline around a fence.
    let text = "```python\n```\n======\n```python\n======";
    let doc = Document::new(text, Flavor::Plain);
    assert!(doc.blocks.iter().all(|b| !b.is_heading()), "{doc:?}");
    let out = render("README", text, None, &counter(), 23);
    assert!(fences_balanced(&out), "{out}");
}

#[test]
fn categories_by_title() {
    for (title, expected) in [
        ("Installation", Category::Usage),
        ("Quick start", Category::Usage),
        ("Basic extraction example", Category::Usage),
        ("How to use", Category::Usage),
        ("Command line", Category::Usage),
        ("API reference", Category::Usage),
        ("Evaluation and alternatives", Category::Low),
        ("Licence", Category::Low),
        ("Acknowledgements", Category::Low),
        ("Citing Trafilatura", Category::Low),
        ("Introduction", Category::Intro),
        ("Features", Category::Neutral),
        ("Rapid capital", Category::Neutral),
    ] {
        assert_eq!(Category::of(title), expected, "{title}");
    }
}

#[test]
fn a_subsection_inherits_its_parents_kind_and_brings_its_heading() {
    let mut text = String::from("# P\n\nShort intro.\n\n## Features\n\n");
    for i in 0..40 {
        text.push_str(&format!("- Feature number {i} does a thing well\n"));
    }
    text.push_str("\n## Installation\n\n### From source\n\n```sh\nmake install\n```\n");
    let out = render("README.md", &text, None, &counter(), 120);
    assert!(
        out.contains("## Installation\n\n### From source\n\n```sh\nmake install\n```"),
        "{out}"
    );
    assert!(!out.contains("Feature number 39"), "{out}");
    assert!(out.contains("Feature number 0 does"), "{out}");
    assert!(out.contains("omitted: Features (rest);"), "{out}");
}

#[test]
fn a_long_section_is_cut_between_paragraphs() {
    let mut text = String::from("# P\n\n## Usage\n\n");
    for i in 0..30 {
        text.push_str(&format!(
            "Paragraph {i} explains one more option of the tool.\n\n"
        ));
    }
    let out = render("README.md", &text, None, &counter(), 150);
    assert!(out.contains("Paragraph 0 explains"), "{out}");
    assert!(!out.contains("Paragraph 29"), "{out}");
    assert!(out.contains("Usage (rest)"), "{out}");
    assert!(
        out.lines().all(|l| l.is_empty()
            || l.starts_with('#')
            || l.starts_with('[')
            || l.ends_with("tool.")),
        "{out}"
    );
}

#[test]
fn a_long_introduction_keeps_its_first_paragraphs() {
    let mut text = String::from("# P\n\n");
    for i in 0..30 {
        text.push_str(&format!(
            "Intro paragraph {i} tells the story of the project.\n\n"
        ));
    }
    text.push_str("## Usage\n\n```python\nimport p\n```\n");
    let out = render("README.md", &text, None, &counter(), 200);
    assert!(out.contains("Intro paragraph 0 tells"), "{out}");
    assert!(!out.contains("Intro paragraph 29"), "{out}");
    assert!(out.contains("```python\nimport p\n```"), "{out}");
    assert!(out.contains("introduction (rest)"), "{out}");
}

#[test]
fn a_list_is_cut_between_its_top_level_items() {
    let text = "Lead in:\n- one\n  - one.a\n- two\n  continued\n- three";
    assert_eq!(
        list_items(text),
        [
            "Lead in:",
            "- one\n  - one.a",
            "- two\n  continued",
            "- three"
        ]
    );
    assert_eq!(
        list_items("Just a paragraph\nof prose."),
        ["Just a paragraph\nof prose."]
    );
}

#[test]
fn definitions_left_without_a_use_go() {
    let text = "[![PyPI][pypi-badge]][pypi]\n\nSee the [guide][g].\n\n[pypi-badge]: https://img.shields.io/pypi/v/x.svg\n[pypi]: https://pypi.org/project/x\n[g]: https://x.org/guide\n";
    assert_eq!(
        cleaned(text, Flavor::Markdown),
        "See the [guide][g].\n\n[g]: https://x.org/guide"
    );
}

#[test]
fn a_huge_first_paragraph_is_cut_once() {
    let text = format!("# P\n\n{}\n\n## Usage\n\nrun it\n", "word ".repeat(2_000));
    let c = counter();
    let out = render("README.md", &text, None, &c, 200);
    assert!(c.count(&out) <= 200, "{out}");
    assert_eq!(out.matches(" …").count(), 1, "{out}");
    assert!(out.contains("## Usage\n\nrun it"), "{out}");
    assert!(out.contains("omitted: introduction (rest);"), "{out}");
}

#[test]
fn nothing_but_badges_is_no_block() {
    let text = "[![a](https://img.shields.io/a)](b)\n<img src=\"logo.png\">\n";
    assert_eq!(render("README.md", text, None, &counter(), 500), "");
}

#[test]
fn the_note_is_bounded() {
    let mut text = String::from("# P\n\nIntro.\n\n");
    for i in 0..50 {
        text.push_str(&format!("## Section {i}\n\n{}\n\n", "word ".repeat(40)));
    }
    let c = counter();
    let out = render("README.md", &text, None, &c, 300);
    assert!(c.count(&out) <= 300);
    assert!(out.contains("; and "), "{out}");
    assert!(
        out.ends_with("; read_document README.md shows it whole]"),
        "{out}"
    );
}

#[test]
fn a_half_megabyte_readme_is_handled_in_bounded_time() {
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 512 * 1024 {
        text.push_str(&format!(
            "## Part {i}\n\nSome [link](https://x.org/{i}) text `code` <br> and more text.\n\n```\nexample {i}\n```\n\n"
        ));
        i += 1;
    }
    // Long lines of what the scanners look ahead for.
    text.push_str(&"[`<|".repeat(20_000));
    text.push('\n');
    let c = counter();
    let start = std::time::Instant::now();
    for share in [500, 5_000] {
        let out = render("README.md", &text, Some("example part"), &c, share);
        assert!(c.count(&out) <= share);
    }
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
}

fn markdownish() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("# Title".to_string()),
        Just("## Usage".to_string()),
        Just("## License".to_string()),
        Just("### Example".to_string()),
        Just("Setext".to_string()),
        Just("======".to_string()),
        Just("------".to_string()),
        Just("```python".to_string()),
        Just("```".to_string()),
        Just("~~~~".to_string()),
        Just("".to_string()),
        Just("".to_string()),
        Just("[![b](https://img.shields.io/x)](y)".to_string()),
        Just("<p align=\"center\"><img src=\"a.png\"></p>".to_string()),
        Just("<!-- c".to_string()),
        Just("-->".to_string()),
        Just("- [link](https://x.org)".to_string()),
        Just(".. image:: x.png".to_string()),
        Just("Literal::".to_string()),
        Just("    indented code".to_string()),
        Just(">>> run()".to_string()),
        "[a-z ]{0,60}",
        "[ -~]{0,80}",
        "\\PC{0,40}",
    ];
    proptest::collection::vec(line, 0..80).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn never_over_the_share_and_fences_balance(
        text in markdownish(),
        share in 0usize..1_500,
        name in prop_oneof![Just("README.md"), Just("README.rst"), Just("README")],
        task in proptest::option::of("[a-z ]{0,30}"),
    ) {
        let c = counter();
        let out = render(name, &text, task.as_deref(), &c, share);
        prop_assert!(c.count(&out) <= share, "{} > {share}:\n{out}", c.count(&out));
        prop_assert!(fences_balanced(&out), "{out}");
    }
}
