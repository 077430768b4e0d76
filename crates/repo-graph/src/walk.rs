//! Discovery of source files under a root directory.
//!
//! The walk is our own depth-first traversal rather than `ignore::Walk`
//! because every file or directory it passes over must be counted with its
//! reason, which `ignore::Walk` does not report. Ignore rules still come from
//! the `ignore` crate's gitignore matcher: `.gitignore` and `.ignore` files at
//! every level, plus the root's `.git/info/exclude`. There is no depth or
//! files-per-directory limit; symbolic links are followed unless they lead
//! outside the root or back to a directory already walked.
//!
//! The walk only lists directories and looks at file types and sizes: it
//! opens no file but the ignore files, and those through
//! [`repo_files::read_in_tree`], so a named pipe or a device in the tree can make
//! nothing wait. Such files are skipped as `not_regular`.
//!
//! Whether a directory is a virtualenv and which ignore files it has are
//! read from its own listing, which the walk makes anyway, rather than by
//! a `stat` for each name in each directory.

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::model::{Language, SkipReason, Skipped, SourceKind};
use repo_files::{
    FileKind, VIRTUALENV_MARKER, is_tool_directory, is_tool_directory_by_name, read_in_tree,
};

/// Largest ignore file read (256 KiB): real ones are a few KiB, and each
/// line becomes a glob to compile.
const MAX_IGNORE_FILE_BYTES: u64 = 256 * 1024;

/// A source file found by the walk.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    /// Path relative to the root with `/` separators.
    pub rel_path: String,
    pub abs_path: PathBuf,
    pub kind: SourceKind,
    /// What the file's metadata said when it was walked.
    pub seen: FileSeen,
}

/// A source file's size, change times and inode when walked: any edit,
/// replacement or rename changes one of them ([`crate::TreeStamp`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct FileSeen {
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub ino: u64,
}

impl FileSeen {
    fn of(meta: &fs::Metadata) -> Self {
        FileSeen {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }
}

/// What the walk found.
#[derive(Debug, Default)]
pub(crate) struct WalkOutput {
    pub files: Vec<SourceFile>,
    pub skipped: Vec<Skipped>,
    /// Every regular file met, analysed or not.
    pub files_seen: u64,
}

pub(crate) struct WalkOptions {
    pub max_file_size: u64,
    pub include_hidden: bool,
    pub respect_ignore_files: bool,
    /// Source files of other languages are skipped as `other_language`.
    pub languages: Vec<Language>,
}

struct DirToWalk {
    path: PathBuf,
    rel: String,
    /// Index into the matcher stack: matchers `0..depth` apply.
    matchers: usize,
}

pub(crate) fn walk(root: &Path, options: &WalkOptions) -> Result<WalkOutput, crate::Error> {
    let canonical_root = fs::canonicalize(root).map_err(|source| crate::Error::Root {
        path: root.to_path_buf(),
        source,
    })?;
    if !canonical_root.is_dir() {
        return Err(crate::Error::NotADirectory(root.to_path_buf()));
    }
    let mut out = WalkOutput::default();
    let mut visited_dirs: HashSet<(u64, u64)> = HashSet::new();
    if let Ok(meta) = fs::metadata(&canonical_root) {
        visited_dirs.insert((meta.dev(), meta.ino()));
    }
    // Matchers apply from the root down; each entry is the matcher of one
    // directory. Each DirToWalk records how many of them apply to it.
    let mut matchers: Vec<(String, Gitignore)> = Vec::new();
    if options.respect_ignore_files {
        let exclude = canonical_root.join(".git/info/exclude");
        if exclude.is_file() {
            let mut builder = GitignoreBuilder::new(&canonical_root);
            add_ignore_file(&mut builder, &canonical_root, &exclude);
            if let Ok(matcher) = builder.build() {
                matchers.push((String::new(), matcher));
            }
        }
    }
    let mut stack = vec![DirToWalk {
        path: canonical_root.clone(),
        rel: String::new(),
        matchers: matchers.len(),
    }];
    while let Some(dir) = stack.pop() {
        matchers.truncate(dir.matchers);
        let entries = match fs::read_dir(&dir.path) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(path = %dir.path.display(), %error, "cannot read directory");
                out.skipped.push(Skipped {
                    path: dir.rel.clone(),
                    reason: SkipReason::Unreadable,
                });
                continue;
            }
        };
        // Each name is copied out of its entry once: sorting and looking up
        // by `DirEntry::file_name` would allocate at every comparison.
        let mut entries: Vec<(std::ffi::OsString, fs::DirEntry)> = entries
            .filter_map(Result::ok)
            .map(|e| (e.file_name(), e))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // The listing answers what a `stat` per directory used to: whether
        // it is a virtualenv (not entered; the root always is) and which
        // ignore files it has.
        if !dir.rel.is_empty() && lists_file(&entries, VIRTUALENV_MARKER) {
            out.skipped.push(Skipped {
                path: dir.rel.clone(),
                reason: SkipReason::ToolDirectory,
            });
            continue;
        }
        if options.respect_ignore_files
            && let Some(matcher) = dir_matcher(&canonical_root, &dir.path, &entries)
        {
            matchers.push((dir.rel.clone(), matcher));
        }
        let mut subdirs = Vec::new();
        for (name, entry) in entries {
            let name = name.to_string_lossy();
            let rel = if dir.rel.is_empty() {
                name.to_string()
            } else {
                format!("{}/{}", dir.rel, name)
            };
            let skip = |out: &mut WalkOutput, reason| {
                out.skipped.push(Skipped {
                    path: rel.clone(),
                    reason,
                })
            };
            let Ok(file_type) = entry.file_type() else {
                skip(&mut out, SkipReason::Unreadable);
                continue;
            };
            let path = entry.path();
            let (is_dir, meta) = if file_type.is_symlink() {
                match symlink_target(&path, &canonical_root) {
                    Ok(meta) => (meta.is_dir(), Some(meta)),
                    Err(reason) => {
                        if !file_type.is_dir() {
                            out.files_seen += 1;
                        }
                        skip(&mut out, reason);
                        continue;
                    }
                }
            } else {
                (file_type.is_dir(), None)
            };
            if !is_dir {
                out.files_seen += 1;
            }
            if !options.include_hidden && name.starts_with('.') {
                let reason = if is_dir && is_tool_directory(&dir.path, &name) {
                    SkipReason::ToolDirectory
                } else {
                    SkipReason::Hidden
                };
                skip(&mut out, reason);
                continue;
            }
            if is_ignored(&matchers, &path, is_dir) {
                skip(&mut out, SkipReason::Ignored);
                continue;
            }
            let file_kind = match &meta {
                Some(target) => FileKind::of(target.file_type()),
                None => FileKind::of(file_type),
            };
            // Reading a named pipe would wait for a writer, a device might
            // never end: neither is ever opened.
            if !is_dir && let Some(kind) = file_kind {
                tracing::warn!(path = %rel, %kind, "not a regular file; skipped");
                skip(&mut out, SkipReason::NotRegular);
                continue;
            }
            if is_dir {
                // A directory's own listing shows whether it is a
                // virtualenv; a link to one is looked into here, before the
                // directory it reaches counts as walked.
                let tool = if meta.is_some() {
                    is_tool_directory(&dir.path, &name)
                } else {
                    is_tool_directory_by_name(&dir.path, &name)
                };
                if tool {
                    skip(&mut out, SkipReason::ToolDirectory);
                    continue;
                }
                let meta = match meta {
                    Some(m) => m,
                    None => match fs::metadata(&path) {
                        Ok(m) => m,
                        Err(_) => {
                            skip(&mut out, SkipReason::Unreadable);
                            continue;
                        }
                    },
                };
                if !visited_dirs.insert((meta.dev(), meta.ino())) {
                    skip(&mut out, SkipReason::SymlinkLoop);
                    continue;
                }
                subdirs.push(DirToWalk {
                    path,
                    rel,
                    matchers: matchers.len(),
                });
                continue;
            }
            let kind = match Path::new(name.as_ref())
                .extension()
                .and_then(|e| e.to_str())
            {
                Some("py") => SourceKind::Python,
                Some("pyi") => SourceKind::Stub,
                Some("ipynb") => SourceKind::Notebook,
                Some("java") => SourceKind::Java,
                _ => {
                    skip(&mut out, SkipReason::NotSource);
                    continue;
                }
            };
            if !options.languages.contains(&kind.language()) {
                skip(&mut out, SkipReason::OtherLanguage);
                continue;
            }
            let seen = match meta {
                Some(m) => FileSeen::of(&m),
                None => match entry.metadata() {
                    Ok(m) => FileSeen::of(&m),
                    Err(_) => {
                        skip(&mut out, SkipReason::Unreadable);
                        continue;
                    }
                },
            };
            if seen.size > options.max_file_size {
                skip(&mut out, SkipReason::TooLarge);
                continue;
            }
            out.files.push(SourceFile {
                rel_path: rel,
                abs_path: path,
                kind,
                seen,
            });
        }
        // Reverse so that the stack pops directories in name order.
        stack.extend(subdirs.into_iter().rev());
    }
    out.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    out.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Follows a symbolic link; refuses targets outside the root and broken links.
fn symlink_target(path: &Path, canonical_root: &Path) -> Result<fs::Metadata, SkipReason> {
    let target = match fs::canonicalize(path) {
        Ok(t) => t,
        Err(error) => {
            // ELOOP: the link chain itself loops.
            return Err(if error.raw_os_error() == Some(40) {
                SkipReason::SymlinkLoop
            } else {
                SkipReason::Unreadable
            });
        }
    };
    if !target.starts_with(canonical_root) {
        return Err(SkipReason::SymlinkOutsideRoot);
    }
    fs::metadata(&target).map_err(|_| SkipReason::Unreadable)
}

/// Whether `entries` (one directory's listing, sorted by name) hold a
/// regular file `name`, directly or through a link; only a link costs a
/// `stat`.
fn lists_file(entries: &[(std::ffi::OsString, fs::DirEntry)], name: &str) -> bool {
    let Ok(at) = entries.binary_search_by(|(n, _)| n.as_os_str().cmp(name.as_ref())) else {
        return false;
    };
    let Some((_, entry)) = entries.get(at) else {
        return false;
    };
    match entry.file_type() {
        Ok(t) if t.is_symlink() => entry.path().is_file(),
        Ok(t) => t.is_file(),
        Err(_) => false,
    }
}

/// The ignore rules of `dir`, whose listing is `entries`.
fn dir_matcher(
    root: &Path,
    dir: &Path,
    entries: &[(std::ffi::OsString, fs::DirEntry)],
) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(dir);
    let mut any = false;
    for name in [".gitignore", ".ignore"] {
        if lists_file(entries, name) {
            let file = dir.join(name);
            add_ignore_file(&mut builder, root, &file);
            any = true;
        }
    }
    if !any {
        return None;
    }
    match builder.build() {
        Ok(matcher) => Some(matcher),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "ignore rules could not be built");
            None
        }
    }
}

/// Adds the rules of the ignore file at `path` (inside `root`), read as
/// every repository file is ([`repo_files::read_in_tree`]: no link out, no pipe,
/// at most [`MAX_IGNORE_FILE_BYTES`]). One that cannot be read is logged
/// and adds nothing.
fn add_ignore_file(builder: &mut GitignoreBuilder, root: &Path, path: &Path) {
    let bytes = match read_in_tree(root, path, MAX_IGNORE_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(error) => {
            tracing::warn!(%error, "ignore file not read; its rules do not apply");
            return;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    // As git does, a leading byte order mark is not part of the first rule.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut misunderstood = 0usize;
    for line in text.lines() {
        if builder.add_line(Some(path.to_path_buf()), line).is_err() {
            misunderstood += 1;
        }
    }
    if misunderstood > 0 {
        tracing::warn!(path = %path.display(), lines = misunderstood, "part of an ignore file was not understood");
    }
}

/// The nearest directory's rule decides, as in git; `.git/info/exclude` comes last.
fn is_ignored(matchers: &[(String, Gitignore)], path: &Path, is_dir: bool) -> bool {
    for (_, matcher) in matchers.iter().rev() {
        match matcher.matched(path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}
