//! The README block of the initial context: cleaned of badges and link
//! farms, and, when it does not fit, its most useful sections first.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use context_pack::{BlockKind, ContextBuilder, RepoContext};
use importance::Ranker;
use repo_graph::Analyzer;

/// A small package with `readme` as its README (named `name`).
fn repo(name: &str, readme: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), readme).unwrap();
    std::fs::create_dir_all(dir.path().join("webtext")).unwrap();
    std::fs::write(
        dir.path().join("webtext/__init__.py"),
        "\"\"\"Extract the main text of web pages.\"\"\"\nfrom webtext.core import extract\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("webtext/core.py"),
        "\"\"\"The extractor.\"\"\"\n\n\ndef extract(html, output_format=\"txt\"):\n    \"\"\"The main text of an HTML page.\"\"\"\n    return html\n",
    )
    .unwrap();
    dir
}

/// The context of `dir` within `budget`, checked to fit and to have
/// balanced fences.
fn context(dir: &tempfile::TempDir, budget: usize, task: Option<&str>) -> RepoContext {
    let graph = Analyzer::new(dir.path()).analyze().unwrap();
    let ranking = Ranker::new().git(false).rank(&graph);
    let mut builder = ContextBuilder::new(&graph, &ranking).budget(budget);
    if let Some(task) = task {
        builder = builder.task(task);
    }
    let context = builder.build().unwrap();
    assert!(context.total_tokens <= budget);
    for block in &context.blocks {
        let fences = block
            .text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "{}", block.text);
    }
    context
}

fn readme_block(dir: &tempfile::TempDir, budget: usize, task: Option<&str>) -> String {
    context(dir, budget, task)
        .blocks
        .into_iter()
        .find(|b| b.kind == BlockKind::Readme)
        .map(|b| b.text)
        .unwrap_or_default()
}

/// Shaped like trafilatura's: logo, badges, a feature list and a long
/// evaluation before the one section a user needs, which comes last.
const USAGE_LAST: &str = r#"# Webtext: Extract Text from Web Pages

<br/>

<p align="center">
  <img alt="Webtext logo" src="https://raw.githubusercontent.com/o/webtext/main/docs/logo.png" width="60%"/>
</p>

<br/>

[![PyPI](https://img.shields.io/pypi/v/webtext.svg)](https://pypi.org/project/webtext)
[![Python versions](https://img.shields.io/pypi/pyversions/webtext.svg)](https://pypi.org/project/webtext)
[![Docs](https://readthedocs.org/projects/webtext/badge/?version=latest)](https://webtext.readthedocs.io)
[![Coverage](https://img.shields.io/codecov/c/github/o/webtext.svg)](https://codecov.io/gh/o/webtext)

Webtext turns raw HTML into clean, structured text. It focuses on the
actual content and avoids the noise of menus, headers and footers.

## Features

- Web crawling and text discovery:
  - Support for sitemaps (TXT, XML) and feeds (ATOM, JSON, RSS)
  - Smart crawling and URL management (filtering and deduplication)
- Parallel processing of online and offline input:
  - Live URLs, efficient and polite processing of download queues
  - Previously downloaded HTML files and parsed HTML trees
- Robust extraction of key elements:
  - Main text, with fallbacks for difficult pages
  - Metadata (title, author, date, site name, categories and tags)
  - Formatting and structure: paragraphs, titles, lists, quotes, code
  - Optional elements: comments, links, images, tables
- Output formats: TXT, Markdown, CSV, JSON, HTML, XML and XML-TEI

## Evaluation and alternatives

Webtext consistently outperforms other open-source libraries in text
extraction benchmarks, showcasing its efficiency and accuracy in extracting
web content. The extractor tries to strike a balance between limiting noise
and including all valid parts.

| Package | Precision | Recall | Accuracy | F-Score | Speed |
|---------|-----------|--------|----------|---------|-------|
| html_text 0.5.2 | 0.529 | 0.958 | 0.554 | 0.682 | 2.2x |
| inscriptis 2.2.0 | 0.534 | 0.959 | 0.563 | 0.686 | 3.5x |
| newspaper3k 0.2.8 | 0.895 | 0.593 | 0.762 | 0.713 | 12x |
| justext 3.0.0 | 0.865 | 0.650 | 0.775 | 0.742 | 5.2x |
| boilerpy3 1.0.6 | 0.814 | 0.744 | 0.787 | 0.777 | 4.1x |
| goose3 3.1.9 | 0.934 | 0.690 | 0.821 | 0.793 | 22x |
| readability-lxml 0.8.1 | 0.891 | 0.729 | 0.820 | 0.801 | 5.8x |
| news-please 1.5.22 | 0.898 | 0.734 | 0.826 | 0.808 | 61x |
| webtext 1.2.2 | 0.914 | 0.904 | 0.910 | 0.909 | 7.1x |

Other evaluations:

- [ScrapingHub's article extraction benchmark](https://github.com/scrapinghub/article-extraction-benchmark)
- [An Empirical Comparison of Web Content Extraction Algorithms](https://webis.de/publications)

## License

Apache 2.0. Versions before 1.8.0 are under the GPLv3+.

## Basic extraction example

```python
>>> from webtext import fetch_url, extract
>>> downloaded = fetch_url("https://example.org/article")
>>> extract(downloaded)
'The main text of the article ...'
```
"#;

#[test]
fn usage_section_last_is_kept_over_the_feature_list() {
    let dir = repo("README.md", USAGE_LAST);
    let block = readme_block(&dir, 1_000, None);
    assert!(
        block.contains(
            "## Basic extraction example\n\n```python\n>>> from webtext import fetch_url, extract\n"
        ),
        "{block}"
    );
    assert!(
        !block.contains("shields.io") && !block.contains("<img"),
        "{block}"
    );
    assert!(
        block.contains("omitted: Features (rest); Evaluation and alternatives; License;"),
        "{block}"
    );
    insta::assert_snapshot!(block);
}

#[test]
fn badges_and_link_farms_are_stripped() {
    let readme = r#"<div align="center">
  <a href="https://webtext.org"><img src="docs/logo.svg" alt="logo" height="120"></a>
  <br>
</div>

# Webtext [![Build](https://github.com/o/webtext/actions/workflows/ci.yml/badge.svg)](https://github.com/o/webtext/actions)

[![PyPI][pypi-badge]][pypi] [![Downloads](https://static.pepy.tech/badge/webtext/month)](https://pepy.tech/project/webtext)

<!-- Keep the badges in sync with the docs. -->

**[Documentation](https://webtext.readthedocs.io)** | [Changelog](CHANGELOG.md) | [Discord](https://discord.gg/webtext)

Webtext turns raw HTML into clean text.

## Links

- [Homepage](https://webtext.org)
- [Issue tracker](https://github.com/o/webtext/issues)
- [PyPI](https://pypi.org/project/webtext)

## Usage

See the [quickstart](https://webtext.readthedocs.io/quickstart) for more.

```bash
pip install webtext  # [![not a badge here](https://img.shields.io/x)](y)
```

[pypi-badge]: https://img.shields.io/pypi/v/webtext.svg
[pypi]: https://pypi.org/project/webtext
"#;
    let dir = repo("README.md", readme);
    let block = readme_block(&dir, 8_000, None);
    assert!(!block.contains("README trimmed"), "{block}");
    assert!(!block.contains("## Links"), "{block}");
    assert!(block.contains("# not a badge here") || block.contains("[![not a badge here]"));
    insta::assert_snapshot!(block);
}

#[test]
fn a_code_block_is_never_cut() {
    let mut readme = String::from(
        "# Webtext\n\nWebtext turns raw HTML into clean text.\n\n## Usage\n\nThe whole pipeline, from download to output:\n\n```python\n",
    );
    for i in 0..60 {
        readme.push_str(&format!(
            "result_{i} = webtext.extract(pages[{i}], output_format=\"json\", with_metadata=True)\n"
        ));
    }
    readme.push_str("```\n\n## Command line\n\n```sh\nwebtext -u https://example.org\n```\n\n## Design\n\nThe extractor scores every node of the tree and keeps the best subtree.\n");
    let dir = repo("README.md", &readme);
    let block = readme_block(&dir, 2_000, None);
    // The big example does not fit: the section goes whole, not its first lines.
    assert!(!block.contains("result_0 ="), "{block}");
    assert!(!block.contains("The whole pipeline"), "{block}");
    assert!(
        block.contains("```sh\nwebtext -u https://example.org\n```"),
        "{block}"
    );
    assert!(block.contains("Usage"), "the note names it: {block}");
    insta::assert_snapshot!(block);
}

const THREE_TOPICS: &str = r#"# minipdf

A small PDF toolkit.

## Reading

Open a file with `PdfReader`, then walk its pages. Each page knows its size,
its rotation and its fonts, and can render itself to an image at any
resolution. Pages can be iterated lazily, so very large documents stay
cheap to open, and the outline (bookmarks) can be walked as a tree.

## Writing

`PdfWriter` collects pages and writes a new file. Pages can be rotated,
merged, scaled and cropped before they are written; metadata such as the
title and the author can be set, and streams are compressed on request,
so the output stays small even for scanned documents.

## Encryption

Documents protected with a password can be opened with
`reader.decrypt(password)`. RC4 and AES keys are supported, and a writer can
encrypt its output with a user and an owner password, restricting printing
or copying of the decrypted text.

## License

BSD-3-Clause.
"#;

#[test]
fn task_matching_section_is_preferred() {
    let dir = repo("README.md", THREE_TOPICS);
    let task = "decrypt a PDF protected with a password";
    let block = readme_block(&dir, 800, Some(task));
    assert!(block.contains("## Encryption"), "{block}");
    assert!(!block.contains("## Writing"), "{block}");
    // Without the task, document order decides between equals.
    let plain = readme_block(&dir, 800, None);
    assert!(plain.contains("## Reading"), "{plain}");
    assert!(!plain.contains("## Encryption"), "{plain}");
    insta::assert_snapshot!(block);
}

#[test]
fn rst_readme_ranked_too() {
    let readme = r#"=======
Webtext
=======

|pypi| |ci|

.. |pypi| image:: https://img.shields.io/pypi/v/webtext.svg
   :target: https://pypi.org/project/webtext
.. |ci| image:: https://github.com/o/webtext/workflows/ci/badge.svg
   :target: https://github.com/o/webtext/actions

.. image:: docs/logo.png
   :width: 200

Webtext turns raw HTML into clean text.

Features
========

* Sitemaps and feeds, crawling and URL management (filtering, deduplication)
* Parallel processing of download queues, of local files and parsed trees
* Main text, metadata, comments; formatting, lists, quotes, code, tables
* Output as TXT, Markdown, CSV, JSON, HTML, XML and XML-TEI
* Language detection and speed optimisations as optional add-ons

Benchmarks
==========

On 750 documents the extractor reaches an F-score of 0.909 against 0.801 for
readability-lxml and 0.793 for goose3, at a seventh of the time of the
slowest alternatives; see the evaluation page for the method and the data,
and for results on other benchmarks and other languages.

Installation
============

.. code-block:: bash

   pip install webtext

Usage
=====

Extract the main text of a downloaded page::

    >>> import webtext
    >>> webtext.extract(webtext.fetch_url("https://example.org"))

Links
=====

`Documentation <https://webtext.readthedocs.io>`_ | `Source <https://github.com/o/webtext>`_

License
=======

Apache 2.0.
"#;
    let dir = repo("README.rst", readme);
    let block = readme_block(&dir, 800, None);
    assert!(block.contains("   pip install webtext"), "{block}");
    assert!(block.contains(">>> webtext.extract("), "{block}");
    assert!(
        !block.contains("image::") && !block.contains("|pypi|"),
        "{block}"
    );
    assert!(!block.contains("F-score"), "{block}");
    insta::assert_snapshot!(block);
}

#[test]
fn whole_readme_kept_when_it_fits() {
    let readme = "# minipdf\n\n[![CI](https://github.com/o/minipdf/actions/workflows/ci.yml/badge.svg)](https://github.com/o/minipdf/actions)\n\nA tiny PDF toolkit.\n\n\n\n## Installation\n\n```sh\npip install minipdf\n\n\n# twice the blank lines, kept inside code\n```\n\n## License\n\nBSD-3-Clause.\n";
    let dir = repo("README.md", readme);
    let block = readme_block(&dir, 8_000, None);
    assert_eq!(
        block,
        "## README (README.md)\n\n# minipdf\n\nA tiny PDF toolkit.\n\n## Installation\n\n```sh\npip install minipdf\n\n\n# twice the blank lines, kept inside code\n```\n\n## License\n\nBSD-3-Clause."
    );
    insta::assert_snapshot!(block);
}
