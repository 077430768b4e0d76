//! Reading one file of a repository that may be hostile.
//!
//! A repository is content someone else wrote: its `README.md` may be a
//! symbolic link to `/proc/self/environ`, its `x.py` a FIFO that blocks
//! the first reader forever, its notebook a 1 TB sparse file. Every file
//! this workspace reads *from a repository* (sources, README, configs,
//! notebooks, views) goes through [`read_in_tree`], which opens it only
//! if it stays inside the repository's root (symbolic links inside the
//! tree are followed, never out of it), only if it is a regular file, and
//! never reads more than the caller's limit.
//!
//! Where the kernel has `openat2` (Linux 5.6 and later) the whole path is
//! resolved with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` relative to the
//! root, so a symbolic link swapped in between a check and the open cannot
//! lead outside. Elsewhere the path is canonicalized, checked to be under
//! the canonical root, and its last component opened with `O_NOFOLLOW`.
//! Either way the file is opened non-blocking (a FIFO or a device returns
//! at once instead of waiting for a writer) and its type is checked on the
//! open descriptor, so a file replaced after the walk looked at it is
//! still caught.

use std::fs::File;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};

/// Why a file of a repository was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeFileError {
    /// The path leads outside the root: it climbs with `..`, is absolute
    /// elsewhere, or passes through a symbolic link that points out.
    #[error("{path} is outside {root}")]
    Outside {
        /// The path as asked for.
        path: PathBuf,
        /// The root it had to stay in.
        root: PathBuf,
    },
    /// The path names something other than a regular file.
    #[error("{path} is not a regular file (it is {kind})")]
    NotRegular {
        /// The path as asked for.
        path: PathBuf,
        /// What it is instead.
        kind: FileKind,
    },
    /// The file is larger than the caller's limit.
    #[error("{path} is larger than {limit} bytes ({size} bytes)")]
    TooLarge {
        /// The path as asked for.
        path: PathBuf,
        /// Its size as far as it was read (at least `limit + 1`).
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as asked for.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

/// What a path that is not a regular file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A symbolic link (only seen where links are not followed).
    Symlink,
    /// Anything else.
    Other,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a named pipe",
            FileKind::Socket => "a socket",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Symlink => "a symbolic link",
            FileKind::Other => "not a regular file",
        })
    }
}

impl FileKind {
    /// The kind of a file type that is not a regular file, `None` for a
    /// regular file.
    pub fn of(file_type: std::fs::FileType) -> Option<FileKind> {
        use std::os::unix::fs::FileTypeExt as _;
        Some(if file_type.is_file() {
            return None;
        } else if file_type.is_dir() {
            FileKind::Directory
        } else if file_type.is_fifo() {
            FileKind::Fifo
        } else if file_type.is_socket() {
            FileKind::Socket
        } else if file_type.is_char_device() {
            FileKind::CharDevice
        } else if file_type.is_block_device() {
            FileKind::BlockDevice
        } else if file_type.is_symlink() {
            FileKind::Symlink
        } else {
            FileKind::Other
        })
    }
}

/// An open regular file inside a root, with its size when opened.
#[derive(Debug)]
pub struct TreeFile {
    /// The open file (read-only; non-blocking, which regular files ignore).
    pub file: File,
    /// Its size in bytes when it was opened.
    pub len: u64,
}

/// Opens `path` for reading if it is a regular file inside `root`.
///
/// `path` may be relative (to `root`) or absolute; either way it must
/// resolve, through any symbolic links, to a place inside `root`. See the
/// [module documentation](self) for how. To open many files of one root,
/// open the root once with [`TreeRoot::new`].
///
/// # Errors
///
/// [`TreeFileError::Outside`], [`TreeFileError::NotRegular`] or
/// [`TreeFileError::Io`] (also when `root` itself cannot be opened).
pub fn open_in_tree(root: &Path, path: &Path) -> Result<TreeFile, TreeFileError> {
    TreeRoot::open_root(root)
        .map_err(|source| TreeFileError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .open(path)
}

/// Reads `path`, a regular file inside `root`, whole, if it holds at most
/// `max_bytes` bytes.
///
/// ```
/// use repo_files::{TreeFileError, read_in_tree};
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("README.md"), "# Demo\n")?;
/// assert_eq!(read_in_tree(dir.path(), "README.md".as_ref(), 1024)?, b"# Demo\n");
///
/// // A link out of the tree is refused, whatever it points at.
/// std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("env.md"))?;
/// let error = read_in_tree(dir.path(), "env.md".as_ref(), 1024).unwrap_err();
/// assert!(matches!(error, TreeFileError::Outside { .. }), "{error}");
///
/// // So is climbing out, and a file over the limit.
/// assert!(matches!(
///     read_in_tree(dir.path(), "../x".as_ref(), 1024),
///     Err(TreeFileError::Outside { .. })
/// ));
/// assert!(matches!(
///     read_in_tree(dir.path(), "README.md".as_ref(), 3),
///     Err(TreeFileError::TooLarge { limit: 3, .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`open_in_tree`], and [`TreeFileError::TooLarge`] when the file holds
/// more than `max_bytes` (also when it grows while being read).
pub fn read_in_tree(root: &Path, path: &Path, max_bytes: u64) -> Result<Vec<u8>, TreeFileError> {
    TreeRoot::open_root(root)
        .map_err(|source| TreeFileError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .read(path, max_bytes)
}

/// A repository root opened once, for reading many of its files: the root
/// is canonicalized and opened (`O_PATH`) when this is made, and every
/// file is then resolved beneath that open directory, instead of the root
/// being resolved again for each file (seven system calls a file: on
/// Django's 2,786 sources about 19,500 of them). It can be shared between
/// threads.
///
/// The open directory is what files are read beneath: if the root's path
/// is renamed or replaced afterwards, files are still read from the
/// directory that was opened.
///
/// ```
/// use repo_files::{TreeFileError, TreeRoot};
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.py"), "a = 1\n")?;
/// let root = TreeRoot::new(dir.path())?;
/// assert_eq!(root.read("a.py".as_ref(), 1024)?, b"a = 1\n");
/// assert!(matches!(
///     root.read("../a.py".as_ref(), 1024),
///     Err(TreeFileError::Outside { .. })
/// ));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TreeRoot {
    /// The root as given, for absolute paths written with it.
    given: PathBuf,
    canonical: PathBuf,
    dir: rustix::fd::OwnedFd,
    /// `openat2` was refused once (an old kernel, a seccomp filter): every
    /// later file takes the fallback at once.
    no_openat2: AtomicBool,
}

impl TreeRoot {
    /// Opens the directory `root`.
    ///
    /// # Errors
    ///
    /// [`TreeFileError::Io`] when it cannot be canonicalized or opened (it
    /// does not exist, is not a directory, is not readable).
    pub fn new(root: &Path) -> Result<TreeRoot, TreeFileError> {
        TreeRoot::open_root(root).map_err(|source| TreeFileError::Io {
            path: root.to_path_buf(),
            source,
        })
    }

    fn open_root(root: &Path) -> std::io::Result<TreeRoot> {
        let canonical = std::fs::canonicalize(root)?;
        let dir = rustix::fs::open(
            &canonical,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(TreeRoot {
            given: root.to_path_buf(),
            canonical,
            dir,
            no_openat2: AtomicBool::new(false),
        })
    }

    /// The root's canonical path.
    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// Opens `path` (relative to the root, or absolute under it) as
    /// [`open_in_tree`] does.
    ///
    /// # Errors
    ///
    /// As [`open_in_tree`].
    pub fn open(&self, path: &Path) -> Result<TreeFile, TreeFileError> {
        let io = |source| TreeFileError::Io {
            path: path.to_path_buf(),
            source,
        };
        let outside = || TreeFileError::Outside {
            path: path.to_path_buf(),
            root: self.given.clone(),
        };
        let relative = relative_to(&self.canonical, &self.given, path).ok_or_else(outside)?;
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let beneath = if self.no_openat2.load(Ordering::Relaxed) {
            Ok(None)
        } else {
            open_beneath(&self.dir, &relative, flags)
        };
        let file = match beneath {
            Ok(Some(fd)) => File::from(fd),
            Ok(None) => {
                self.no_openat2.store(true, Ordering::Relaxed);
                open_checked(&self.canonical, &relative, flags).map_err(|e| match e {
                    Checked::Outside => outside(),
                    Checked::Io(e) => io(e),
                })?
            }
            Err(e) if e.raw_os_error() == Some(libc_exdev()) => return Err(outside()),
            Err(e) => return Err(io(e)),
        };
        let meta = file.metadata().map_err(io)?;
        if let Some(kind) = FileKind::of(meta.file_type()) {
            return Err(TreeFileError::NotRegular {
                path: path.to_path_buf(),
                kind,
            });
        }
        Ok(TreeFile {
            file,
            len: meta.len(),
        })
    }

    /// Reads `path` whole as [`read_in_tree`] does.
    ///
    /// # Errors
    ///
    /// As [`read_in_tree`].
    pub fn read(&self, path: &Path, max_bytes: u64) -> Result<Vec<u8>, TreeFileError> {
        let opened = self.open(path)?;
        let too_large = |size| TreeFileError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit: max_bytes,
        };
        if opened.len > max_bytes {
            return Err(too_large(opened.len));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(opened.len).unwrap_or(0));
        opened
            .file
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| TreeFileError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if read > max_bytes {
            return Err(too_large(read));
        }
        Ok(bytes)
    }
}

/// `path` relative to the root, lexically: an absolute path must start
/// with the root as given or as canonicalized; `..` may not climb above
/// the root. `None` when it leaves.
fn relative_to(canonical_root: &Path, root: &Path, path: &Path) -> Option<PathBuf> {
    let rest = if path.is_absolute() {
        path.strip_prefix(canonical_root)
            .or_else(|_| path.strip_prefix(root))
            .ok()?
    } else {
        path
    };
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(if parts.is_empty() {
        PathBuf::from(".")
    } else {
        parts.iter().collect()
    })
}

/// `openat2` with `RESOLVE_BENEATH` beneath the open directory `dir`;
/// `Ok(None)` when the kernel (or a seccomp filter) does not offer it.
fn open_beneath(
    dir: &rustix::fd::OwnedFd,
    relative: &Path,
    flags: OFlags,
) -> std::io::Result<Option<rustix::fd::OwnedFd>> {
    match rustix::fs::openat2(
        dir,
        relative,
        flags,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if e == rustix::io::Errno::NOSYS || e == rustix::io::Errno::PERM => Ok(None),
        Err(e) => Err(e.into()),
    }
}

enum Checked {
    Outside,
    Io(std::io::Error),
}

/// The fallback without `openat2`: canonicalize, check, open the last
/// component without following a link.
fn open_checked(root: &Path, relative: &Path, flags: OFlags) -> Result<File, Checked> {
    let joined = root.join(relative);
    let canonical = std::fs::canonicalize(&joined).map_err(Checked::Io)?;
    if !canonical.starts_with(root) {
        return Err(Checked::Outside);
    }
    let fd = rustix::fs::open(&canonical, flags | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| Checked::Io(e.into()))?;
    Ok(File::from(fd))
}

fn libc_exdev() -> i32 {
    rustix::io::Errno::XDEV.raw_os_error()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pkg/sub")).unwrap();
        std::fs::write(dir.path().join("pkg/a.py"), "a = 1\n").unwrap();
        std::fs::write(dir.path().join("top.txt"), "top\n").unwrap();
        dir
    }

    #[test]
    fn links_inside_the_tree_are_followed_and_links_out_refused() {
        let dir = tree();
        let root = dir.path();
        std::os::unix::fs::symlink("../top.txt", root.join("pkg/up.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("host")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("pkg/sub/out")).unwrap();

        assert_eq!(
            read_in_tree(root, "pkg/up.txt".as_ref(), 100).unwrap(),
            b"top\n"
        );
        for escape in ["host", "pkg/sub/out/secret", "pkg/../../x", "/etc/hostname"] {
            let error = read_in_tree(root, escape.as_ref(), 100).unwrap_err();
            assert!(
                matches!(error, TreeFileError::Outside { .. }),
                "{escape}: {error}"
            );
        }
        // Absolute paths inside the root are fine, through the root as given.
        assert_eq!(
            read_in_tree(root, &root.join("pkg/a.py"), 100).unwrap(),
            b"a = 1\n"
        );
    }

    /// The root is resolved once: files are read beneath the directory
    /// that was opened, even after its path names another directory, and
    /// the same escapes are refused through it.
    #[test]
    fn a_tree_root_reads_beneath_the_directory_it_opened() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("repo");
        std::fs::create_dir(&first).unwrap();
        std::fs::write(first.join("a.py"), "first\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", first.join("host")).unwrap();
        let root = TreeRoot::new(&first).unwrap();
        std::fs::rename(&first, dir.path().join("moved")).unwrap();
        std::fs::create_dir(&first).unwrap();
        std::fs::write(first.join("a.py"), "second\n").unwrap();

        assert_eq!(root.read("a.py".as_ref(), 100).unwrap(), b"first\n");
        assert_eq!(
            read_in_tree(&first, "a.py".as_ref(), 100).unwrap(),
            b"second\n"
        );
        for escape in ["host", "../repo/a.py", "/etc/hostname"] {
            let error = root.read(escape.as_ref(), 100).unwrap_err();
            assert!(
                matches!(error, TreeFileError::Outside { .. }),
                "{escape}: {error}"
            );
        }
        assert!(matches!(
            TreeRoot::new(&dir.path().join("missing")),
            Err(TreeFileError::Io { .. })
        ));
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tree();
        let fifo = dir.path().join("x.py");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let error = read_in_tree(dir.path(), "x.py".as_ref(), 100).unwrap_err();
        assert!(
            matches!(
                error,
                TreeFileError::NotRegular {
                    kind: FileKind::Fifo,
                    ..
                }
            ),
            "{error}"
        );
        let error = read_in_tree(dir.path(), "pkg".as_ref(), 100).unwrap_err();
        assert!(
            matches!(
                error,
                TreeFileError::NotRegular {
                    kind: FileKind::Directory,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_sparse_giant_is_refused_by_its_size_without_reading_it() {
        let dir = tree();
        let file = std::fs::File::create(dir.path().join("big.ipynb")).unwrap();
        file.set_len(1 << 40).unwrap();
        let error = read_in_tree(dir.path(), "big.ipynb".as_ref(), 1 << 20).unwrap_err();
        assert!(
            matches!(error, TreeFileError::TooLarge { size, .. } if size == 1 << 40),
            "{error}"
        );
    }

    #[test]
    fn the_fallback_refuses_the_same_escapes() {
        let dir = tree();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("host")).unwrap();
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        assert!(matches!(
            open_checked(&root, Path::new("host"), flags),
            Err(Checked::Outside)
        ));
        assert!(open_checked(&root, Path::new("pkg/a.py"), flags).is_ok());
    }

    #[test]
    fn relative_paths_never_climb_above_the_root() {
        let root = Path::new("/r");
        assert_eq!(
            relative_to(root, root, Path::new("a/../b")),
            Some(PathBuf::from("b"))
        );
        assert_eq!(relative_to(root, root, Path::new("a/../../b")), None);
        assert_eq!(
            relative_to(root, root, Path::new("/r/x")),
            Some(PathBuf::from("x"))
        );
        assert_eq!(relative_to(root, root, Path::new("/rx/y")), None);
        assert_eq!(
            relative_to(root, root, Path::new(".")),
            Some(PathBuf::from("."))
        );
    }
}
