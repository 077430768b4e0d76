//! Multi-file fixtures: the sources of a small repository written as one
//! text, in the manner of rust-analyzer's test fixtures. Included by the
//! tests that need it with
//! `#[path = "support/fixture.rs"] mod fixture;`.
//!
//! A line `//- path/to/file.py` starts a file; the lines after it, up to
//! the next `//-` line, are its contents:
//!
//! ```text
//! let dir = fixture::write(
//!     r#"
//!     //- pkg/__init__.py
//!     //- pkg/mod.py
//!     def f():
//!         pass
//!
//!     //- main.py
//!     from pkg.mod import f
//!     f()
//!     "#,
//! );
//! ```
//!
//! writes an empty `pkg/__init__.py`, `pkg/mod.py` holding
//! `"def f():\n    pass\n"` and `main.py` holding
//! `"from pkg.mod import f\nf()\n"`. Precisely:
//!
//! - The whole text is first de-indented by the longest run of spaces and
//!   tabs that starts every line not made only of spaces and tabs (a
//!   *blank* line). A blank line loses as much of that run as it starts
//!   with, so it can be written indented or empty.
//! - Leading blank lines are dropped; the first line left must be a `//-`
//!   line.
//! - The path is the rest of the `//-` line, trimmed. It must be relative,
//!   non-empty, without a `..` component, and not repeat an earlier path.
//! - A file's trailing blank lines are dropped (so files can be separated
//!   by blank lines, and the line of the closing `"#` does not count); what
//!   is left ends with exactly one newline, and a file with nothing left is
//!   empty.
//!
//! A file the format cannot express (no final newline, trailing blank
//! lines, a line starting with `//-`, `\r`, invalid UTF-8) is written with
//! [`write_files`] from explicit `(path, contents)` pairs instead.

// Each test binary includes this module and uses only part of it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::{Component, Path};

/// The marker that starts a file.
const MARKER: &str = "//-";

fn is_blank(line: &str) -> bool {
    line.chars().all(|c| c == ' ' || c == '\t')
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Panics unless `path` is a non-empty relative path without `..`.
fn check_path(path: &Path) {
    assert!(
        !path.as_os_str().is_empty(),
        "fixture: a file has an empty path"
    );
    assert!(
        !path.is_absolute() && !path.has_root(),
        "fixture: absolute path {path:?}"
    );
    assert!(
        !path.components().any(|c| c == Component::ParentDir),
        "fixture: path {path:?} has a `..` component"
    );
}

/// The files of `fixture` as `(path, contents)`, in order; see the module
/// documentation for the format. Panics on a text not in it.
pub fn parse(fixture: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = fixture.split('\n').collect();
    // The common indentation of the non-blank lines.
    let mut indent: Option<&str> = None;
    for line in lines.iter().filter(|l| !is_blank(l)) {
        let own = indentation(line);
        indent = Some(match indent {
            None => own,
            Some(common) => {
                let shared = common
                    .bytes()
                    .zip(own.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                &common[..shared]
            }
        });
    }
    let indent = indent.unwrap_or("");
    let lines = lines.iter().map(|line| {
        line.strip_prefix(indent)
            .unwrap_or_else(|| line.trim_start_matches([' ', '\t']))
    });

    let mut files: Vec<(String, Vec<&str>)> = Vec::new();
    let mut seen = HashSet::new();
    for line in lines.skip_while(|l| is_blank(l)) {
        if let Some(path) = line.strip_prefix(MARKER) {
            let path = path.trim();
            check_path(Path::new(path));
            assert!(
                seen.insert(path.to_string()),
                "fixture: duplicate path {path:?}"
            );
            files.push((path.to_string(), Vec::new()));
        } else {
            let Some((_, body)) = files.last_mut() else {
                panic!("fixture: the text must start with a `//- path` line, not {line:?}")
            };
            body.push(line);
        }
    }
    files
        .into_iter()
        .map(|(path, mut body)| {
            while body.last().is_some_and(|l| is_blank(l)) {
                body.pop();
            }
            let mut text = body.join("\n");
            if !body.is_empty() {
                text.push('\n');
            }
            (path, text)
        })
        .collect()
}

/// Writes the files of `fixture` (see [`parse`]) into a new temporary
/// directory, creating their parent directories.
pub fn write(fixture: &str) -> tempfile::TempDir {
    write_files(&parse(fixture))
}

/// Writes `files`, given as `(path, contents)` with the contents' exact
/// bytes, into a new temporary directory, creating their parent
/// directories: for contents the fixture format cannot express, and for
/// generated repositories. The paths follow the rules of [`parse`].
pub fn write_files<P: AsRef<Path>, C: AsRef<[u8]>>(files: &[(P, C)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut seen = HashSet::new();
    for (path, contents) in files {
        let path = path.as_ref();
        check_path(path);
        assert!(seen.insert(path), "fixture: duplicate path {path:?}");
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("fixture: writing {}: {e}", path.display()));
    }
    dir
}
