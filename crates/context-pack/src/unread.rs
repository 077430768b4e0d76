//! What the context does not show, and why: a repository is content
//! someone else wrote, and its `README.md` may be a symbolic link to
//! `/proc/self/environ`, a named pipe, or a terabyte of zeros. Such a file
//! is never read; the model is told in one line what it is, so that it
//! neither wonders where the README went nor tries to read it another way.

use std::fmt::Write as _;

use repo_files::{FileKind, TreeFileError};
use repo_graph::{ConfigSkipReason, RepoGraph, SkipReason};

use crate::TokenCounter;
use crate::markdown;

/// Most files the "Files not read" block lists; the rest are counted.
const LISTED: usize = 20;

/// Why a file of the repository was not read, as a clause for the model:
/// "it is a symbolic link out of the repository".
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("README.md"))?;
/// let error = repo_files::read_in_tree(dir.path(), "README.md".as_ref(), 1024).unwrap_err();
/// assert_eq!(
///     context_pack::why_not_read(&error),
///     "it is a symbolic link out of the repository"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn why_not_read(error: &TreeFileError) -> String {
    match error {
        TreeFileError::Outside { .. } => "it is a symbolic link out of the repository".into(),
        TreeFileError::NotRegular {
            kind: FileKind::Other,
            ..
        } => "it is not a regular file".into(),
        TreeFileError::NotRegular { kind, .. } => format!("it is {kind}, not a regular file"),
        TreeFileError::TooLarge { size, limit, .. } => {
            format!("it is larger than {} ({size} bytes)", bytes(*limit))
        }
        TreeFileError::Io { source, .. } => format!("it cannot be read ({source})"),
        other => format!("it cannot be read ({other})"),
    }
}

/// A byte count as people write limits: `512 KiB`, `1 MiB`, `100 bytes`.
pub(crate) fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// Why the analysis passed over a file, for the reasons worth telling the
/// model (a file it may look for); `None` for the ordinary ones (not
/// source, ignored, hidden).
fn skip_reason(reason: SkipReason) -> Option<&'static str> {
    match reason {
        SkipReason::SymlinkOutsideRoot => Some("a symbolic link out of the repository"),
        SkipReason::SymlinkLoop => Some("a symbolic link that loops"),
        SkipReason::TooLarge => Some("too large to analyse"),
        SkipReason::Unreadable => Some("not a regular file, or not readable"),
        _ => None,
    }
}

fn config_reason(reason: ConfigSkipReason) -> Option<&'static str> {
    match reason {
        ConfigSkipReason::TooLarge => Some("a packaging file too large to read"),
        ConfigSkipReason::Unreadable => Some(
            "a packaging file that is not a regular file inside the repository, or not readable",
        ),
        _ => None,
    }
}

/// The "Files not read" block: the files the analysis or the context
/// refused for what they are (links out of the tree, pipes, devices, files
/// too large), one line each, within `share` tokens. `noted` are paths a
/// line elsewhere in the context already explains (the README's).
pub(crate) fn unread_block(
    graph: &RepoGraph,
    noted: &[String],
    counter: &TokenCounter,
    share: usize,
) -> String {
    let mut entries: Vec<(&str, &str)> = Vec::new();
    let listed = |path: &str| noted.iter().any(|n| n == path);
    for skipped in graph.skipped() {
        if let Some(reason) = skip_reason(skipped.reason)
            && !listed(&skipped.path)
        {
            entries.push((skipped.path.as_str(), reason));
        }
    }
    for skipped in &graph.usage().skipped {
        if let Some(reason) = config_reason(skipped.reason)
            && !listed(&skipped.path)
            && !entries.iter().any(|(p, _)| *p == skipped.path)
        {
            entries.push((skipped.path.as_str(), reason));
        }
    }
    if entries.is_empty() {
        return String::new();
    }
    let mut text = String::from("## Files not read\n\n");
    let mut shown = 0usize;
    for (path, reason) in &entries {
        if shown == LISTED {
            break;
        }
        let line = format!("- {}: {reason}\n", markdown::code_span(path));
        // Room is kept for the count of the rest.
        if counter.count(&text) + counter.count(&line) + 16 > share {
            break;
        }
        text.push_str(&line);
        shown += 1;
    }
    if shown == 0 {
        return String::new();
    }
    let rest = entries.len() - shown;
    if rest > 0 {
        let _ = write!(text, "[{rest} more files not read]");
    }
    text.trim_end().to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_a_plain_reason() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("big.md"), "x".repeat(100)).unwrap();
        std::fs::create_dir(root.join("docs")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("host.md")).unwrap();
        let reason = |path: &str| {
            why_not_read(&repo_files::read_in_tree(root, path.as_ref(), 10).unwrap_err())
        };
        assert_eq!(reason("big.md"), "it is larger than 10 bytes (100 bytes)");
        assert_eq!(reason("docs"), "it is a directory, not a regular file");
        assert_eq!(
            reason("host.md"),
            "it is a symbolic link out of the repository"
        );
        assert!(reason("missing.md").starts_with("it cannot be read ("));
        assert_eq!(bytes(512 * 1024), "512 KiB");
        assert_eq!(bytes(1 << 20), "1 MiB");
    }
}
