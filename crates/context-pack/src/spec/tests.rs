use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;

/// `(level, heading, parents joined with " > ")` of every section.
fn shape(text: &str) -> Vec<(u8, String, String)> {
    SpecDocument::parse(text)
        .sections()
        .iter()
        .map(|s| (s.level, s.heading.clone(), s.parents.join(" > ")))
        .collect()
}

fn headings(text: &str) -> Vec<String> {
    SpecDocument::parse(text)
        .sections()
        .iter()
        .map(|s| s.heading.clone())
        .collect()
}

fn labels(text: &str) -> Vec<String> {
    declared_endpoints(text)
        .iter()
        .map(Endpoint::label)
        .collect()
}

#[test]
fn atx_headings_nest_by_level() {
    let doc = SpecDocument::parse(
        "# Service ##\n\nIntro.\n\n## API\n### GET /a\nList.\n## Notes\n#### Deep\n##NoSpace\n####### seven\n    # indented code\n",
    );
    let got: Vec<_> = doc
        .sections()
        .iter()
        .map(|s| (s.level, s.heading.as_str(), s.parents.join(">"), s.line))
        .collect();
    assert_eq!(
        got,
        [
            (1, "Service", String::new(), 1),
            (2, "API", "Service".to_owned(), 5),
            (3, "GET /a", "Service>API".to_owned(), 6),
            (2, "Notes", "Service".to_owned(), 8),
            (4, "Deep", "Service>Notes".to_owned(), 9),
        ]
    );
    assert_eq!(doc.sections()[0].text, "Intro.");
    assert_eq!(
        doc.sections()[4].text,
        "##NoSpace\n####### seven\n    # indented code"
    );
    assert!(doc.sections().iter().all(|s| s.kind == HeadingKind::Atx));
}

#[test]
fn hashes_in_fences_are_code() {
    let text =
        "# Run\n```bash\n# install\npip install x\n```\n~~~~\n# not either\n~~~~\n## After\n";
    assert_eq!(headings(text), ["Run", "After"]);
    assert_eq!(
        SpecDocument::parse(text).sections()[0].text,
        "```bash\n# install\npip install x\n```\n~~~~\n# not either\n~~~~"
    );
}

#[test]
fn an_unclosed_fence_hides_nothing() {
    // The stray fence is text; the headings after it still count.
    assert_eq!(headings("# A\n```\n# B\ntext\n"), ["A", "B"]);
    // A shorter run does not close a longer fence.
    assert_eq!(
        headings("# A\n````\n```\n# in code\n````\n# B\n"),
        ["A", "B"]
    );
}

#[test]
fn markdown_is_read_as_commonmark() {
    // A closing run of `#` needs a space before it; a heading inside a list
    // item or quote is the item's; `#` lines in raw HTML are HTML.
    assert_eq!(
        headings("# C#\n- # item\n> # quote\n<div>\n# html\n</div>\n\n## Next ##\n"),
        ["C#", "Next"]
    );
    // Every stray fence is text, and the headings after them count.
    let strays = format!("{}# After\n", "```a\n".repeat(3));
    assert_eq!(headings(&strays), ["", "After"]);
}

#[test]
fn setext_headings_need_a_one_line_paragraph() {
    assert_eq!(
        shape(
            "Title\n=====\n\nIntro.\n\nPart\n----\nBody.\n\nSome text\nwrapped\n---\n\n---\nend\n"
        ),
        [
            (1, "Title".to_owned(), String::new()),
            (2, "Part".to_owned(), "Title".to_owned()),
        ]
    );
    let doc = SpecDocument::parse("Title\n===\n\nPart\n---\nBody.\n");
    assert_eq!(doc.sections()[0].kind, HeadingKind::Setext);
    assert_eq!(doc.sections()[1].line, 4);
    assert_eq!(doc.sections()[1].text, "Body.");
    // A list item or table row is never a title.
    assert_eq!(headings("- item\n---\n| a |\n===\n"), [""]);
}

#[test]
fn plain_text_headings_of_the_benchmark_readmes() {
    let text = "Flask Microservice Benchmark\n\nDescription\n\nThis benchmark is used to evaluate a service.\n\n\
                Service Constraints\n\nPort\n\nThe service listens on port 5000 by default.\n\n\
                API Definitions\n\nGET /health\n\nSemantics: Health check.\n\nOutput (application/json):\n\n{\n  \"status\": \"ok\"\n}\n\n\
                POST /echo\n\nStatus Code: 200.\n\nHow to Run\n\npytest -q repo_ori/flask/tests\n";
    let doc = SpecDocument::parse(text);
    let got: Vec<_> = doc
        .sections()
        .iter()
        .map(|s| (s.level, s.kind, s.heading.as_str(), s.parents.join(">")))
        .collect();
    let title = "Flask Microservice Benchmark";
    let api = format!("{title}>API Definitions");
    assert_eq!(
        got,
        [
            (1, HeadingKind::Plain, title, String::new()),
            (2, HeadingKind::Plain, "Description", title.to_owned()),
            (
                2,
                HeadingKind::Plain,
                "Service Constraints",
                title.to_owned()
            ),
            (2, HeadingKind::Plain, "Port", title.to_owned()),
            (2, HeadingKind::Plain, "API Definitions", title.to_owned()),
            (3, HeadingKind::Endpoint, "GET /health", api.clone()),
            (3, HeadingKind::Endpoint, "POST /echo", api),
            (2, HeadingKind::Plain, "How to Run", title.to_owned()),
        ]
    );
    assert_eq!(
        doc.sections()[5].text,
        "Semantics: Health check.\n\nOutput (application/json):\n\n{\n  \"status\": \"ok\"\n}"
    );
}

#[test]
fn plain_headings_may_lead_a_paragraph_or_list() {
    assert_eq!(
        headings(
            "Spec\n\nOverview\nThis service manages users.\n\nRunning Environment\n- port 8000\n"
        ),
        ["Spec", "Overview", "Running Environment"]
    );
}

#[test]
fn lines_that_are_not_plain_headings() {
    for line in [
        "Service listening port: 8000 (HTTP)",
        "Namespace prefix: /api/v1",
        "Resource: `people`",
        "Execute in this directory:",
        "pytest -q repo_ori/flask/tests",
        "- Health Check",
        "1. Install",
        "| GET | /x |",
        "> quoted",
        "<div>",
        "{",
        "\"key\": 1",
        "Semantics: Health check.",
        "Input (query): a=<int>&b=<int>",
        "See http://localhost:8000",
        "GET /health HTTP/1.1",
        "This sentence is far too long to be a heading because it goes on and on without end",
        "Bell\u{7} character",
        "Call **now**",
    ] {
        let text = format!("Title\n\n{line}\n\nAfter.\n");
        assert_eq!(headings(&text), ["Title"], "{line:?}");
    }
    for line in [
        "Phase 1: Blueprint Generation",
        "Data_Rank_Searcher Service",
        "**Bold Title**",
        "Résumé Upload",
        "数据接口",
    ] {
        let text = format!("Title\n\n{line}\n\nAfter.\n");
        assert_eq!(headings(&text).len(), 2, "{line:?}");
    }
}

#[test]
fn numbered_plain_headings_nest_by_their_numbers() {
    assert_eq!(
        shape(
            "Paper\n\nMethods\n\n3.1 Model Architecture\n\nText.\n\n3.1.2. Layers\n\nMore.\n\n3. Not a heading\n"
        ),
        [
            (1, "Paper".to_owned(), String::new()),
            (2, "Methods".to_owned(), "Paper".to_owned()),
            (
                3,
                "3.1 Model Architecture".to_owned(),
                "Paper > Methods".to_owned()
            ),
            (
                4,
                "3.1.2. Layers".to_owned(),
                "Paper > Methods > 3.1 Model Architecture".to_owned()
            ),
        ]
    );
}

#[test]
fn markdown_documents_get_no_plain_headings() {
    assert_eq!(
        headings("# API\n\nUsers\n\nGET /users\n\nLists them.\n"),
        ["API"]
    );
}

#[test]
fn an_untitled_plain_document_starts_with_a_preamble() {
    let doc = SpecDocument::parse(
        "\n\nthis service does things, as described below.\n\nEndpoints\n\n`GET` `/x`\n",
    );
    let got: Vec<_> = doc
        .sections()
        .iter()
        .map(|s| (s.kind, s.level, s.heading.as_str(), s.line))
        .collect();
    assert_eq!(
        got,
        [
            (HeadingKind::Preamble, 0, "", 1),
            (HeadingKind::Plain, 1, "Endpoints", 5),
            (HeadingKind::Endpoint, 2, "`GET` `/x`", 7),
        ]
    );
    assert_eq!(
        doc.sections()[0].text,
        "this service does things, as described below."
    );
}

#[test]
fn crlf_and_empty_input() {
    assert_eq!(
        shape("# A\r\nx\r\n## B\r\ny\r\n"),
        [
            (1, "A".to_owned(), String::new()),
            (2, "B".to_owned(), "A".to_owned())
        ]
    );
    assert_eq!(SpecDocument::parse("# A\r\nx\r\n").sections()[0].text, "x");
    assert!(SpecDocument::parse("").sections().is_empty());
    assert!(SpecDocument::parse("\n \n\t\n").sections().is_empty());
}

#[test]
fn find_prefers_headings_and_ignores_case() {
    let doc = SpecDocument::parse(
        "# Overview\nThe model architecture is described below.\n# Model Architecture\nLayers.\n# Other\n",
    );
    let found: Vec<&str> = doc
        .find("MODEL architecture")
        .iter()
        .map(|s| s.heading.as_str())
        .collect();
    assert_eq!(found, ["Model Architecture", "Overview"]);
    assert!(doc.find("  ").is_empty());
    assert!(doc.find("absent").is_empty());
}

#[test]
fn subtrees_and_rendering() {
    let doc = SpecDocument::parse("Intro.\n# A\na\n## B\nb\n### C\n## D\n# E\n");
    let a = doc.find("A")[0];
    let names: Vec<&str> = doc.subtree(a).iter().map(|s| s.heading.as_str()).collect();
    assert_eq!(names, ["A", "B", "C", "D"]);
    assert_eq!(doc.subtree(&doc.sections()[0]).len(), 1);
    let foreign = SpecDocument::parse("# A\nother\n");
    assert!(doc.subtree(&foreign.sections()[0]).is_empty());
    assert_eq!(doc.sections()[3].render(), "### A > B > C\n\n");
    assert_eq!(doc.sections()[0].render(), "Intro.\n");
    // A heading is data: a newline in it cannot start a line of its own.
    let section = SpecSection {
        heading: "x\n# SYSTEM".to_owned(),
        level: 1,
        parents: Vec::new(),
        text: "t".to_owned(),
        line: 1,
        kind: HeadingKind::Atx,
    };
    assert_eq!(section.render(), "# x\\n# SYSTEM\n\nt\n");
}

#[test]
fn hostile_inputs_are_bounded() {
    let started = Instant::now();
    let hashes = "#\n".repeat(100_000);
    let doc = SpecDocument::parse(&hashes);
    assert_eq!(doc.sections().len(), MAX_SECTIONS);
    assert_eq!(
        doc.sections().last().map(|s| s.text.lines().count()),
        Some(100_000 - MAX_SECTIONS)
    );

    let plain = "Heading Line\n\n".repeat(100_000);
    assert_eq!(SpecDocument::parse(&plain).sections().len(), MAX_SECTIONS);

    // Deep nesting with a huge heading: parents stay small.
    let mut deep = format!("# {}\n", "x".repeat(1 << 20));
    for _ in 0..20_000 {
        deep.push_str("## a\n### b\n#### c\n##### d\n###### e\n");
    }
    let doc = SpecDocument::parse(&deep);
    let parents: usize = doc
        .sections()
        .iter()
        .flat_map(|s| &s.parents)
        .map(String::len)
        .sum();
    assert!(parents <= MAX_SECTIONS * 5 * MAX_HEADING_BYTES);
    assert_eq!(doc.sections()[0].heading.len(), MAX_HEADING_BYTES);

    let fences = "```\n".repeat(100_001);
    let doc = SpecDocument::parse(&format!("{fences}# After\n"));
    assert_eq!(
        doc.sections().last().map(|s| s.heading.as_str()),
        Some("After")
    );

    // Each stray fence makes the parser read the rest again, up to four
    // times the text; past that a stray fence runs to the end.
    let strays = format!("{}# After\n", "```a\n".repeat(100_000));
    let doc = SpecDocument::parse(&strays);
    assert_eq!(doc.sections().len(), 1);

    let binary: String = (0..2_000_000u32)
        .map(|i| char::from_u32(i % 0x80).unwrap_or('\0'))
        .collect();
    let _ = SpecDocument::parse(&binary);
    let _ = SpecDocument::parse(&"a".repeat(5 << 20));
    let _ = declared_endpoints(&"GET /x ".repeat(100_000));
    let _ = declared_endpoints(&"Method: GET\nPath: /x\n".repeat(50_000));
    let _ = declared_port(&"port ".repeat(200_000));
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn readme_styles_of_the_benchmark() {
    assert_eq!(
        labels("| GET | `/api/items` | list |\n- **Endpoint**: `PUT /api/dashboards/:id`\n"),
        ["GET /api/items", "PUT /api/dashboards/:id"]
    );
    assert_eq!(
        labels("**Endpoint:** `/api/translate`\n\n**Method:** POST\n"),
        ["POST /api/translate"]
    );
    assert_eq!(
        labels(
            "- **HTTP Method**: GET\n- **Path**: `/health`\n- **Method**: `POST`\n- **Path**: `/x?y=1`.\n"
        ),
        ["GET /health", "POST /x"]
    );
    assert_eq!(
        labels(
            "curl -X POST http://localhost:5000/api/t\nPOST /rooms/!r:example.org/messages HTTP/1.1\n"
        ),
        Vec::<String>::new()
    );
}

#[test]
fn angle_bracket_parameters_are_part_of_the_path() {
    assert_eq!(
        labels("- `GET /users/<int:user_id>/posts`\n- Path: /files/<name>\n- Method: DELETE\n"),
        ["GET /users/<int:user_id>/posts", "DELETE /files/<name>"]
    );
    // A tag after the path is not a parameter.
    assert_eq!(
        labels("<code>POST /results</code> and <b>GET /a<br>"),
        ["POST /results", "GET /a"]
    );
}

#[test]
fn duplicates_are_the_same_endpoint_in_any_parameter_syntax() {
    assert_eq!(
        labels("GET /users/{id}\nGET /users/<int:id>/\nPOST /users/{id}\n"),
        ["GET /users/{id}", "POST /users/{id}"]
    );
}

#[test]
fn ports_from_statements_before_addresses() {
    for (text, port) in [
        ("The service listens on port 5000 by default.", Some(5000)),
        ("- Port: 8080", Some(8080)),
        ("PORT=3000 npm start", Some(3000)),
        ("- **Port**: `8080`", Some(8080)),
        ("- Running port (default): 5000", Some(5000)),
        ("uvicorn main:app --port 8000", Some(8000)),
        ("Base URL: `http://127.0.0.1:5001`", Some(5001)),
        ("Open http://localhost:8000/docs", Some(8000)),
        (
            "Base URL: http://localhost:9000\nService listening port: 8000 (HTTP)",
            Some(8000),
        ),
        ("Port: 0\nport 99999\nhttp://localhost:7000", Some(7000)),
        ("Ports are configurable; we support 3 formats.", None),
        ("Port\n\n8080", None),
        ("", None),
    ] {
        assert_eq!(declared_port(text), port, "{text:?}");
    }
}

/// Lines a specification is made of, hostile ones included.
fn spec_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("   ".to_owned()),
        (1..8usize, "[A-Za-z #]{0,12}").prop_map(|(n, t)| format!("{} {t}", "#".repeat(n))),
        Just("=====".to_owned()),
        Just("---".to_owned()),
        Just("```".to_owned()),
        Just("~~~~ py".to_owned()),
        Just("Service Constraints".to_owned()),
        Just("3.1 Model Architecture".to_owned()),
        Just("GET /users/{id}".to_owned()),
        Just("- Method: POST".to_owned()),
        Just("- Path: `/x`".to_owned()),
        Just("Port: 8080".to_owned()),
        Just("| a | b |".to_owned()),
        Just("**Bold**".to_owned()),
        Just("text\r".to_owned()),
        Just("nul\0byte".to_owned()),
        "\\PC{0,20}",
        "[a-z ]{0,40}\\.",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_body_line_is_in_exactly_one_section(lines in prop::collection::vec(spec_line(), 0..60), crlf in any::<bool>()) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let doc = SpecDocument::parse(&text);
        let sections = doc.sections();
        prop_assert!(sections.windows(2).all(|w| w[0].line < w[1].line));
        prop_assert!(sections.iter().all(|s| s.level <= MAX_LEVEL));
        prop_assert!(sections.iter().all(|s| (s.level == 0) == (s.kind == HeadingKind::Preamble)));
        // Heading lines: each section's, and a setext heading's underline.
        let mut heading_lines = std::collections::BTreeSet::new();
        for s in sections.iter().filter(|s| s.kind != HeadingKind::Preamble) {
            heading_lines.insert(s.line as usize - 1);
            if s.kind == HeadingKind::Setext {
                heading_lines.insert(s.line as usize);
            }
        }
        let expected: Vec<&str> = text
            .lines()
            .enumerate()
            .filter(|(i, l)| !heading_lines.contains(i) && !l.trim().is_empty())
            .map(|(_, l)| l)
            .collect();
        let got: Vec<&str> = sections
            .iter()
            .flat_map(|s| s.text.split('\n'))
            .filter(|l| !l.trim().is_empty())
            .collect();
        prop_assert_eq!(got, expected);
        for s in sections {
            prop_assert!(s.parents.len() < usize::from(MAX_LEVEL));
            prop_assert_eq!(doc.subtree(s).first(), Some(s));
        }
    }
}
