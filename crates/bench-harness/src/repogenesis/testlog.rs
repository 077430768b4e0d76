//! Test outcomes: pytest's JUnit XML report (parsed by the sandbox's
//! [`parse_junit`], one entry per report: a test that fails and then errors
//! in teardown counts once in each column, as pytest's own summary does),
//! and exact ports of the harness's console parsers (`eval_harness/log_parsers.py`), which decide
//! the benchmark's numbers when no report exists and are recorded beside
//! ours so that any difference is visible.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

pub use sandbox::{JunitReport, Outcome, TestCase, TestCounts, parse_junit};

// Python's `\d` also takes non-ASCII digits, which pytest never prints.
static PASSED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([0-9]+)[\s\x1C-\x1F]+passed")
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});
static FAILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([0-9]+)[\s\x1C-\x1F]+failed")
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});
static ERRORS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([0-9]+)[\s\x1C-\x1F]+error")
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

/// A Surefire summary line.
static SUREFIRE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"Tests run:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Failures:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Errors:[\s\x1C-\x1F]*([0-9]+),[\s\x1C-\x1F]*Skipped:[\s\x1C-\x1F]*([0-9]+)",
    )
    .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
});

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
    let mut counts = TestCounts::default();
    if log.trim().is_empty() || log.trim() == "TIMEOUT" {
        return counts;
    }
    let number = |re: &Regex, line: &str| -> Option<u32> {
        let digits = re.captures(line)?.get(1)?.as_str();
        Some(digits.parse().unwrap_or(u32::MAX))
    };
    for line in py_lines(log) {
        let line =
            line.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
        if let Some(n) = number(&PASSED, line) {
            counts.passed = n;
        }
        if let Some(n) = number(&FAILED, line) {
            counts.failed = n;
        }
        if let Some(n) = number(&ERRORS, line) {
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
    let mut counts = SurefireCounts::default();
    if log.trim().is_empty() || log.trim() == "TIMEOUT" {
        return counts;
    }
    for line in py_lines(log) {
        if let Some(m) = SUREFIRE_LINE.captures(line) {
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
    fn the_harness_parser_keeps_its_quirks() {
        // "xfailed" and "xpassed" are not counted; the last line wins.
        let c = harness_pytest_counts("1 failed, 1 passed, 1 xfailed, 1 xpassed, 1 error in 0.02s");
        assert_eq!((c.passed, c.failed, c.errors), (1, 1, 1));
        let c = harness_pytest_counts("=== 5 passed in 1s ===\nassert 2 passed == 3\n");
        assert_eq!(c.passed, 2);
        assert_eq!(harness_pytest_counts("TIMEOUT").total(), 0);
    }
}
