//! Building `bwrap` command lines and finding out whether `bwrap` works here.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// System directories exposed read-only. Merged-`/usr` systems have symlinks for the
/// top-level ones, which are recreated as symlinks rather than bound.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Files under `/etc` that hold secrets and are replaced by an empty file.
const MASKED_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
];

/// What to mount and how, for one run.
#[derive(Debug, Clone)]
pub(crate) struct Mounts<'a> {
    pub(crate) read_only: &'a [PathBuf],
    pub(crate) read_write: &'a [PathBuf],
    pub(crate) network: bool,
    pub(crate) cwd: &'a Path,
}

/// The `bwrap` arguments (up to and including `--`) for a run with `mounts`.
pub(crate) fn args(mounts: &Mounts<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::with_capacity(64);
    let mut push = |parts: &[&OsStr]| args.extend(parts.iter().map(|p| p.to_os_string()));

    // --unshare-all: user, ipc, pid, net, uts and cgroup namespaces. --die-with-parent
    // ties the container to us so a crash of the agent cannot leave it running, and the
    // PID namespace means every descendant dies when its init (bwrap) does.
    push(&[
        "--unshare-all".as_ref(),
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--hostname".as_ref(),
        "sandbox".as_ref(),
    ]);
    if mounts.network {
        push(&["--share-net".as_ref()]);
    }

    for dir in SYSTEM_DIRS {
        let path = Path::new(dir);
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(path) {
                push(&["--symlink".as_ref(), target.as_os_str(), path.as_os_str()]);
            }
        } else if meta.is_dir() {
            push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
        }
    }
    for file in MASKED_FILES
        .iter()
        .copied()
        .chain(ssh_host_keys().iter().map(String::as_str))
    {
        if Path::new(file).exists() {
            push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), file.as_ref()]);
        }
    }
    push(&[
        "--proc".as_ref(),
        "/proc".as_ref(),
        "--dev".as_ref(),
        "/dev".as_ref(),
        "--tmpfs".as_ref(),
        "/tmp".as_ref(),
        "--tmpfs".as_ref(),
        "/var/tmp".as_ref(),
    ]);
    // Granted paths come after the tmpfs mounts so that a grant below /tmp (common for
    // temporary working directories) is visible instead of being hidden by the tmpfs.
    for path in mounts.read_only {
        push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    for path in mounts.read_write {
        push(&["--bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    push(&["--chdir".as_ref(), mounts.cwd.as_os_str(), "--".as_ref()]);
    args
}

fn ssh_host_keys() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/etc/ssh") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let name = name.to_str()?;
            (name.starts_with("ssh_host_") && name.ends_with("_key"))
                .then(|| format!("/etc/ssh/{name}"))
        })
        .collect()
}

/// Resolves `program` the way a shell would: as given when it contains a slash,
/// otherwise on the caller's `PATH`.
pub(crate) fn find_program(program: &OsStr) -> Option<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// True when `path` is already visible through the read-only system directories.
pub(crate) fn is_under_system_dirs(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn position(args: &[OsString], needle: &str) -> Option<usize> {
        args.iter().position(|a| a == needle)
    }

    #[test]
    fn network_is_unshared_unless_enabled() {
        let cwd = PathBuf::from("/tmp/work");
        let off = args(&Mounts {
            read_only: &[],
            read_write: std::slice::from_ref(&cwd),
            network: false,
            cwd: &cwd,
        });
        assert!(position(&off, "--unshare-all").is_some());
        assert!(position(&off, "--share-net").is_none());
        let on = args(&Mounts {
            read_only: &[],
            read_write: std::slice::from_ref(&cwd),
            network: true,
            cwd: &cwd,
        });
        assert!(position(&on, "--share-net").is_some());
    }

    #[test]
    fn grants_are_mounted_after_the_private_tmp() {
        let cwd = PathBuf::from("/tmp/work");
        let a = args(&Mounts {
            read_only: &[],
            read_write: std::slice::from_ref(&cwd),
            network: false,
            cwd: &cwd,
        });
        let tmpfs = position(&a, "/tmp").unwrap_or(usize::MAX);
        let bind = position(&a, "--bind").unwrap_or(0);
        assert!(bind > tmpfs, "{a:?}");
        assert_eq!(a.last().map(|s| s.as_os_str()), Some(OsStr::new("--")));
    }

    #[test]
    fn programs_with_a_slash_are_not_searched_on_path() {
        assert_eq!(find_program(OsStr::new("/no/such/bwrap")), None);
        assert_eq!(
            find_program(OsStr::new("/bin/sh")),
            Some(PathBuf::from("/bin/sh"))
        );
    }
}
