//! Test outcomes: pytest's JUnit XML report (machine-readable, one entry
//! per report: a test that fails and then errors in teardown counts once in
//! each column, as pytest's own summary does), and exact ports of the
//! harness's console parsers (`eval_harness/log_parsers.py`), which decide
//! the benchmark's numbers when no report exists and are recorded beside
//! ours so that any difference is visible.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Counts of test outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    /// Passed.
    pub passed: u32,
    /// Failed (assertion or error in the test body).
    pub failed: u32,
    /// Errors (collection, setup or teardown).
    pub errors: u32,
    /// Skipped (and expected failures).
    pub skipped: u32,
}

impl TestCounts {
    /// `passed + failed + errors`: the harness's total for Python
    /// (`parse_pytest_output`); skipped tests are left out.
    pub fn total(&self) -> u32 {
        self.passed
            .saturating_add(self.failed)
            .saturating_add(self.errors)
    }

    /// Every reported outcome.
    pub fn reported(&self) -> u32 {
        self.total().saturating_add(self.skipped)
    }
}

/// What happened to one test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Failed.
    Failed,
    /// Errored.
    Error,
    /// Skipped (`pytest.skip` or `xfail`).
    Skipped,
}

/// One `<testcase>` of a JUnit report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCase {
    /// `classname::name`.
    pub id: String,
    /// Its outcome.
    pub outcome: Outcome,
    /// The failure, error or skip message (first 300 characters).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// A parsed JUnit XML report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JunitReport {
    /// The counts.
    pub counts: TestCounts,
    /// Every test case, in report order.
    pub cases: Vec<TestCase>,
}

/// Reads the `<testcase>` elements of a JUnit XML document (pytest's
/// `--junitxml`, Maven Surefire's `TEST-*.xml`). A test case with a
/// `<failure>` child failed, with `<error>` errored, with `<skipped>` was
/// skipped, and passed otherwise. Anything that is not a well-formed test
/// case is ignored; `None` when the text has no `<testsuite` at all.
///
/// ```
/// use bench_harness::repogenesis::parse_junit;
///
/// let xml = r#"<testsuites><testsuite tests="3"><testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="assert 1 == 2">E</failure></testcase><testcase classname="t" name="c"><skipped message="no"/></testcase></testsuite></testsuites>"#;
/// let report = parse_junit(xml).unwrap();
/// assert_eq!((report.counts.passed, report.counts.failed, report.counts.skipped), (1, 1, 1));
/// assert_eq!(report.cases[1].message, "assert 1 == 2");
/// ```
pub fn parse_junit(xml: &str) -> Option<JunitReport> {
    if !xml.contains("<testsuite") {
        return None;
    }
    let mut report = JunitReport::default();
    let mut rest = xml;
    while let Some(start) = rest.find("<testcase") {
        let after = &rest[start + "<testcase".len()..];
        // `<testcases` or similar: not our element.
        if !after.starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/') {
            rest = after;
            continue;
        }
        let Some(tag_end) = after.find('>') else {
            break;
        };
        let tag = &after[..tag_end];
        let self_closing = tag.ends_with('/');
        let (body, next) = if self_closing {
            ("", &after[tag_end + 1..])
        } else {
            let content = &after[tag_end + 1..];
            match content.find("</testcase>") {
                Some(end) => (&content[..end], &content[end + "</testcase>".len()..]),
                None => (content, ""),
            }
        };
        let name = attribute(tag, "name").unwrap_or_default();
        let class = attribute(tag, "classname").unwrap_or_default();
        let id = if class.is_empty() {
            name
        } else {
            format!("{class}::{name}")
        };
        let child = |element: &str| -> Option<String> {
            let open = format!("<{element}");
            let at = body.find(&open)?;
            let after = &body[at + open.len()..];
            if !after.starts_with(|c: char| c.is_whitespace() || c == '>' || c == '/') {
                return None;
            }
            let end = after.find('>').unwrap_or(after.len());
            Some(attribute(&after[..end], "message").unwrap_or_default())
        };
        let (outcome, message) = if let Some(m) = child("failure") {
            (Outcome::Failed, m)
        } else if let Some(m) = child("error") {
            (Outcome::Error, m)
        } else if let Some(m) = child("skipped") {
            (Outcome::Skipped, m)
        } else {
            (Outcome::Passed, String::new())
        };
        let counts = &mut report.counts;
        match outcome {
            Outcome::Passed => counts.passed += 1,
            Outcome::Failed => counts.failed += 1,
            Outcome::Error => counts.errors += 1,
            Outcome::Skipped => counts.skipped += 1,
        }
        report.cases.push(TestCase {
            id,
            outcome,
            message: message.chars().take(300).collect(),
        });
        rest = next;
    }
    Some(report)
}

/// The value of attribute `name` in the inside of a start tag, unescaped.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let mut rest = tag;
    loop {
        let at = rest.find(name)?;
        let before_ok = at == 0
            || rest[..at]
                .chars()
                .next_back()
                .is_some_and(char::is_whitespace);
        let after = rest[at + name.len()..].trim_start();
        if before_ok && let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let quote = value.chars().next()?;
            if quote != '"' && quote != '\'' {
                return None;
            }
            let inner = &value[1..];
            let end = inner.find(quote)?;
            return Some(unescape(&inner[..end]));
        }
        rest = &rest[at + name.len()..];
    }
}

fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let entity_end = rest[at..].find(';').map(|e| at + e);
        let decoded = entity_end.and_then(|end| {
            let entity = &rest[at + 1..end];
            let c = match entity {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "amp" => Some('&'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn compiled(cell: &'static OnceLock<Regex>, pattern: &'static str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(pattern).unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    })
}

/// `parse_pytest_output` of `eval_harness/log_parsers.py`: every line is
/// searched for `N passed`, `N failed` and `N error`, and the last value of
/// each wins (each independently, so a test printing "3 passed" can change
/// the count). `TIMEOUT` or an empty log is nothing.
///
/// ```
/// use bench_harness::repogenesis::harness_pytest_counts;
///
/// let log = "tests/t.py::a PASSED\n==== 3 passed, 1 failed, 2 errors in 0.5s ====\n";
/// let c = harness_pytest_counts(log);
/// assert_eq!((c.passed, c.failed, c.errors, c.total()), (3, 1, 2, 6));
/// ```
pub fn harness_pytest_counts(log: &str) -> TestCounts {
    static PASSED: OnceLock<Regex> = OnceLock::new();
    static FAILED: OnceLock<Regex> = OnceLock::new();
    static ERRORS: OnceLock<Regex> = OnceLock::new();
    let mut counts = TestCounts::default();
    if log.trim().is_empty() || log.trim() == "TIMEOUT" {
        return counts;
    }
    // Python's `\d` also takes non-ASCII digits, which pytest never prints.
    let passed = compiled(&PASSED, r"([0-9]+)[\s\x1C-\x1F]+passed");
    let failed = compiled(&FAILED, r"([0-9]+)[\s\x1C-\x1F]+failed");
    let errors = compiled(&ERRORS, r"([0-9]+)[\s\x1C-\x1F]+error");
    let number = |re: &Regex, line: &str| -> Option<u32> {
        let digits = re.captures(line)?.get(1)?.as_str();
        Some(digits.parse().unwrap_or(u32::MAX))
    };
    for line in py_lines(log) {
        let line =
            line.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
        if let Some(n) = number(passed, line) {
            counts.passed = n;
        }
        if let Some(n) = number(failed, line) {
            counts.failed = n;
        }
        if let Some(n) = number(errors, line) {
            counts.errors = n;
        }
    }
    counts
}

/// Python's `str.splitlines()` boundaries.
fn py_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split([
        '\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}',
        '\u{2029}',
    ])
}

/// Maven Surefire's console counts as `parse_maven_surefire_output`
/// (`eval_harness/log_parsers.py`) reads them: every `Tests run: R,
/// Failures: F, Errors: E, Skipped: S` line is summed; passed is `R - F -
/// E - S` (at least 0). Unlike Python, the total (`R`) includes skipped
/// tests, and the harness's score divides by it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SurefireCounts {
    /// `R`, summed.
    pub run: u32,
    /// `F`, summed.
    pub failures: u32,
    /// `E`, summed.
    pub errors: u32,
    /// `S`, summed.
    pub skipped: u32,
}

impl SurefireCounts {
    /// `max(R - F - E - S, 0)`.
    pub fn passed(&self) -> u32 {
        self.run
            .saturating_sub(self.failures)
            .saturating_sub(self.errors)
            .saturating_sub(self.skipped)
    }

    /// As [`TestCounts`] (skipped kept apart).
    pub fn counts(&self) -> TestCounts {
        TestCounts {
            passed: self.passed(),
            failed: self.failures,
            errors: self.errors,
            skipped: self.skipped,
        }
    }
}

/// Sums the Surefire summary lines of a Maven log.
///
/// ```
/// let log = "Tests run: 4, Failures: 1, Errors: 0, Skipped: 1, Time elapsed: 0.2 s\nTests run: 4, Failures: 1, Errors: 0, Skipped: 1\n";
/// let c = bench_harness::repogenesis::harness_surefire_counts(log);
/// assert_eq!((c.run, c.passed()), (8, 4));
/// ```
pub fn harness_surefire_counts(log: &str) -> SurefireCounts {
    static LINE: OnceLock<Regex> = OnceLock::new();
    let pattern = compiled(
        &LINE,
        r"Tests run:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Failures:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Errors:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Skipped:[\s\x1C-\x1F]*([0-9]+)",
    );
    let mut counts = SurefireCounts::default();
    if log.trim().is_empty() || log.trim() == "TIMEOUT" {
        return counts;
    }
    for line in py_lines(log) {
        if let Some(m) = pattern.captures(line) {
            let n =
                |i: usize| -> u32 { m.get(i).and_then(|g| g.as_str().parse().ok()).unwrap_or(0) };
            counts.run = counts.run.saturating_add(n(1));
            counts.failures = counts.failures.saturating_add(n(2));
            counts.errors = counts.errors.saturating_add(n(3));
            counts.skipped = counts.skipped.saturating_add(n(4));
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytest_reports_count_each_report() {
        let xml = r#"<?xml version="1.0"?><testsuites><testsuite errors="1" failures="1" skipped="2" tests="6"><testcase classname="t" name="f"><failure message="assert False">E</failure></testcase><testcase classname="t" name="f"><error message="failed on teardown with &quot;RuntimeError&quot;">E</error></testcase><testcase classname="t" name="ok" time="0" /><testcase classname="t" name="s"><skipped type="pytest.skip" message="x">why</skipped></testcase><testcase classname="t" name="xf"><skipped type="pytest.xfail" message="" /></testcase></testsuite></testsuites>"#;
        let report = parse_junit(xml).unwrap_or_default();
        assert_eq!(
            report.counts,
            TestCounts {
                passed: 1,
                failed: 1,
                errors: 1,
                skipped: 2
            }
        );
        assert_eq!(
            report.cases[1].message,
            "failed on teardown with \"RuntimeError\""
        );
        assert_eq!(report.cases[0].id, "t::f");
    }

    #[test]
    fn collection_errors_are_errors() {
        let xml = r#"<testsuites><testsuite errors="1" tests="1"><testcase classname="" name="tests.test_b" time="0.000"><error message="collection failure">ImportError</error></testcase></testsuite></testsuites>"#;
        let report = parse_junit(xml).unwrap_or_default();
        assert_eq!(report.counts.errors, 1);
        assert_eq!(report.cases[0].id, "tests.test_b");
        assert_eq!(parse_junit("no xml here"), None);
    }

    #[test]
    fn the_harness_parser_keeps_its_quirks() {
        // "xfailed" and "xpassed" are not counted; the last line wins.
        let c = harness_pytest_counts("1 failed, 1 passed, 1 xfailed, 1 xpassed, 1 error in 0.02s");
        assert_eq!((c.passed, c.failed, c.errors), (1, 1, 1));
        let c = harness_pytest_counts("=== 5 passed in 1s ===\nassert 2 passed == 3\n");
        assert_eq!(c.passed, 2);
        assert_eq!(harness_pytest_counts("TIMEOUT").total(), 0);
    }
}
