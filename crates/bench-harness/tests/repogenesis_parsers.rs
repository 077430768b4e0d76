#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The RepoGenesis readers take text that generated repositories, their
//! tests and their builds produce: any input gives an answer, never a
//! panic, and well-formed input round-trips.

use bench_harness::repogenesis::{
    AcRule, Outcome, extract_endpoints, harness_pytest_counts, harness_surefire_counts,
    missing_from_log, parse_constants, parse_junit, pom_artifacts, python_text,
};
use context_pack::spec::declared_endpoints;
use proptest::prelude::*;

/// Text rich in the characters the readers look for.
fn markupish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[ -~]{0,12}",
            prop::sample::select(vec![
                "<testcase",
                "</testcase>",
                "<failure",
                "<error",
                "<skipped",
                "/>",
                ">",
                "\"",
                "&amp;",
                "&#x41;",
                "&#99999999;",
                "&",
                "name=",
                "message='",
                "<testsuite",
                "GET ",
                "POST /",
                "| PUT |",
                "```",
                "\n",
                "\r\n",
                "Method: ",
                "Path: `/x`",
                "${a}",
                "<dependency>",
                "</dependency>",
                "<version>",
                "<!--",
                "-->",
                "<parent>",
                "<properties>",
                "REPO_SPECS = {",
                "\"x\": {",
                "\"port\": 80",
                "}",
                "passed",
                " failed",
                "3 error",
                "Tests run: 1, Failures: 1, Errors: 0, Skipped: 0",
                "=",
                "é",
                "\u{1c}",
            ])
            .prop_map(str::to_owned),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_reader_panics(text in markupish(), bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse_constants(&text);
        let _ = parse_junit(&text);
        let _ = harness_pytest_counts(&text);
        let _ = harness_surefire_counts(&text);
        let _ = declared_endpoints(&text);
        for rule in AcRule::ALL {
            let _ = extract_endpoints(rule, &text);
        }
        let _ = pom_artifacts(&text);
        let _ = missing_from_log(&text);
        let _ = sandbox::pytest_summary(&text);
        let decoded = python_text(&bytes);
        prop_assert!(!decoded.contains('\r'));
    }

    #[test]
    fn junit_reports_round_trip(outcomes in prop::collection::vec(0u8..4, 0..30), quote in prop::bool::ANY) {
        let q = if quote { '"' } else { '\'' };
        let mut xml = String::from("<?xml version=\"1.0\"?><testsuites><testsuite tests=\"0\">");
        for (i, o) in outcomes.iter().enumerate() {
            let child = match o {
                0 => String::new(),
                1 => format!("<failure message={q}a &lt; b{q}>E</failure>"),
                2 => format!("<error message={q}x{q}/>"),
                _ => format!("<skipped type={q}pytest.skip{q} message={q}s{q}/>"),
            };
            if child.is_empty() && i % 2 == 0 {
                xml.push_str(&format!("<testcase classname={q}t{q} name={q}n{i}{q} />"));
            } else {
                xml.push_str(&format!("<testcase classname={q}t{q} name={q}n{i}{q}>{child}</testcase>"));
            }
        }
        xml.push_str("</testsuite></testsuites>");
        let report = parse_junit(&xml).unwrap();
        let count = |k: u8| outcomes.iter().filter(|o| **o == k).count() as u32;
        prop_assert_eq!(
            (report.counts.passed, report.counts.failed, report.counts.errors, report.counts.skipped),
            (count(0), count(1), count(2), count(3))
        );
        prop_assert_eq!(report.cases.len(), outcomes.len());
        for (case, o) in report.cases.iter().zip(&outcomes) {
            let expected = [Outcome::Passed, Outcome::Failed, Outcome::Error, Outcome::Skipped][usize::from(*o)];
            prop_assert_eq!(case.outcome, expected);
            if *o == 1 {
                prop_assert_eq!(case.message.as_str(), "a < b");
            }
        }
    }

    #[test]
    fn the_last_summary_wins(passed in 0u32..500, failed in 0u32..500, noise in "[a-z ]{0,20}") {
        let log = format!("{noise}\n=== 1 passed, 2 failed in 3s ===\n{noise}\n=== {passed} passed, {failed} failed in 0.1s ===\n");
        let counts = harness_pytest_counts(&log);
        prop_assert_eq!((counts.passed, counts.failed), (passed, failed));
    }
}
