//! Reading a source file: size and binary checks, lossy UTF-8 decoding, and
//! extraction of the code cells of a Jupyter notebook.

use std::path::Path;

use crate::model::{SkipReason, SourceKind};
use repo_files::{TreeFileError, TreeRoot};

/// Bytes inspected for NUL when deciding that a file is binary.
const BINARY_PROBE: usize = 8 * 1024;

/// A file's text as analysed.
#[derive(Debug, Clone)]
pub(crate) struct SourceText {
    /// The source text (for notebooks, the joined code cells).
    pub text: String,
    /// xxh3-128 of the file's bytes.
    pub hash: u128,
    /// The bytes were not valid UTF-8 and were decoded lossily.
    pub lossy: bool,
}

/// Reads and decodes the source file at `path` (absolute, or relative to
/// `root`) through [`TreeRoot::read`]: only a regular file inside `root`
/// is read, without blocking and at most `max_size` bytes, so a file that
/// changed since the walk saw it (into a named pipe, or a link out of the
/// tree) is refused here too.
pub(crate) fn read(
    root: &TreeRoot,
    path: &Path,
    kind: SourceKind,
    max_size: u64,
) -> Result<SourceText, SkipReason> {
    let bytes = root.read(path, max_size).map_err(|error| {
        let reason = skip_reason(&error);
        tracing::debug!(%error, reason = reason.as_str(), "source file not read");
        reason
    })?;
    decode_owned(bytes, kind, max_size)
}

/// Why the walk's file could not be read, as a skip.
fn skip_reason(error: &TreeFileError) -> SkipReason {
    match error {
        TreeFileError::Outside { .. } => SkipReason::SymlinkOutsideRoot,
        TreeFileError::NotRegular { .. } => SkipReason::NotRegular,
        TreeFileError::TooLarge { .. } => SkipReason::TooLarge,
        TreeFileError::Io { source, .. }
            if source.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
        {
            SkipReason::SymlinkLoop
        }
        _ => SkipReason::Unreadable,
    }
}

#[cfg(test)]
pub(crate) fn decode(
    bytes: &[u8],
    kind: SourceKind,
    max_size: u64,
) -> Result<SourceText, SkipReason> {
    decode_owned(bytes.to_vec(), kind, max_size)
}

/// Takes the file's bytes by value so that valid UTF-8 becomes the text
/// without a copy.
fn decode_owned(bytes: Vec<u8>, kind: SourceKind, max_size: u64) -> Result<SourceText, SkipReason> {
    // The file may have grown since the walk looked at its size.
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_size {
        return Err(SkipReason::TooLarge);
    }
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        return Err(SkipReason::Binary);
    }
    let hash = xxhash_rust::xxh3::xxh3_128(&bytes);
    let (text, lossy) = match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(error) => (String::from_utf8_lossy(error.as_bytes()).into_owned(), true),
    };
    let text = match kind {
        SourceKind::Notebook => notebook_code(&text).ok_or(SkipReason::InvalidNotebook)?,
        SourceKind::Python | SourceKind::Stub | SourceKind::Java => text,
    };
    Ok(SourceText { text, hash, lossy })
}

/// Joins the code cells of a notebook. IPython magics (`%`, `!`) are turned
/// into comments so that they do not read as syntax errors.
fn notebook_code(json: &str) -> Option<String> {
    let notebook: serde_json::Value = serde_json::from_str(json).ok()?;
    let cells = notebook.get("cells")?.as_array()?;
    let mut out = String::new();
    for cell in cells {
        if cell.get("cell_type").and_then(|t| t.as_str()) != Some("code") {
            continue;
        }
        let source = match cell.get("source") {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(lines)) => {
                lines.iter().filter_map(|l| l.as_str()).collect::<String>()
            }
            _ => continue,
        };
        for line in source.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('%') || trimmed.starts_with('!') {
                out.push_str("# ");
            }
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_lossy() {
        assert_eq!(
            decode(b"a\0b", SourceKind::Python, 100).unwrap_err(),
            SkipReason::Binary
        );
        let text = decode(b"x = '\xff'\n", SourceKind::Python, 100).unwrap();
        assert!(text.lossy);
        assert!(text.text.contains('\u{FFFD}'));
        assert_eq!(
            decode(b"0123456789", SourceKind::Python, 5).unwrap_err(),
            SkipReason::TooLarge
        );
    }

    #[test]
    fn notebook_cells() {
        let nb = r##"{"cells":[{"cell_type":"markdown","source":["# T"]},{"cell_type":"code","source":["%matplotlib inline\n","import os\n"]},{"cell_type":"code","source":"def f():\n    return 1"}]}"##;
        let text = decode(nb.as_bytes(), SourceKind::Notebook, 10_000).unwrap();
        assert_eq!(
            text.text,
            "# %matplotlib inline\nimport os\n\ndef f():\n    return 1\n\n"
        );
        assert_eq!(
            decode(b"{not json", SourceKind::Notebook, 100).unwrap_err(),
            SkipReason::InvalidNotebook
        );
    }
}
