//! Small text helpers every language's extraction and the usage facts
//! share.

/// `text` trimmed and cut to at most `max` bytes (on a character
/// boundary), with `…` when something was cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    format!("{}…", &text[..text.floor_char_boundary(max)])
}

/// Lines of `text`, the last one counted whether or not it ends in a newline.
pub(crate) fn count_lines(text: &str) -> u32 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let lines = if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    };
    u32::try_from(lines).unwrap_or(u32::MAX)
}

/// Removes the common indentation of a docstring, like `inspect.cleandoc`.
pub(crate) fn clean_docstring(raw: &str) -> String {
    let mut lines = raw.lines();
    let first = lines.next().unwrap_or("").trim();
    let rest: Vec<&str> = lines.collect();
    let indent = rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<&str> = Vec::with_capacity(rest.len() + 1);
    out.push(first);
    for line in &rest {
        out.push(
            line.get(indent..)
                .unwrap_or_else(|| line.trim_start())
                .trim_end(),
        );
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_never_splits_a_character() {
        // "é" is two bytes: a cut at 3 lands inside the second one.
        assert_eq!(truncate("éé", 3), "é…");
        assert_eq!(truncate("  short  ", 10), "short");
        for max in 0..12 {
            let cut = truncate("aé€😀b", max);
            assert!(cut.len() <= max + "…".len(), "{max}: {cut}");
        }
    }

    #[test]
    fn lines_count_the_last_one_without_a_newline() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("a\nb\n"), 2);
    }
}
