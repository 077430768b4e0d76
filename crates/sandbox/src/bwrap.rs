//! Building `bwrap` command lines and finding out whether `bwrap` works here.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::RunAs;

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

/// Files of `/proc` that reach the host kernel's settings, mounted read-only
/// over the sandbox's own `/proc`. bubblewrap covers them itself only where
/// its `access(W_OK)` check says they are writable, and that check always
/// fails on `/proc/sys` (procfs answers EACCES for the directory), so
/// without this, code running as root wrote the host's sysctls.
const PROC_READ_ONLY: &[&str] = &[
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/irq",
    "/proc/bus",
    "/proc/fs",
];

/// Private temporary directories, each a tmpfs of its own with the sticky
/// world-writable mode of a real `/tmp`.
const PRIVATE_TMP: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Who the code becomes inside the container.
#[derive(Debug, Clone)]
pub(crate) enum UserSwitch {
    /// bubblewrap runs as an unprivileged user and maps it into a user
    /// namespace of its own: the code keeps that (non-root) user.
    Unprivileged,
    /// bubblewrap runs as root, without a user namespace (a user namespace
    /// made by root maps its root to the host's root, which is what let code
    /// write `/proc/sys` and leave setuid-root files), keeping only
    /// `CAP_SETUID`/`CAP_SETGID`; `setpriv` then becomes `user` with no
    /// supplementary groups and no capabilities before the program runs.
    ToUser {
        /// The `setpriv` program (util-linux), under the system directories.
        setpriv: PathBuf,
        /// The unprivileged user the code runs as.
        user: RunAs,
    },
}

/// What to mount and how, for one run.
#[derive(Debug, Clone)]
pub(crate) struct Mounts<'a> {
    pub(crate) read_only: &'a [PathBuf],
    pub(crate) read_write: &'a [PathBuf],
    pub(crate) network: bool,
    pub(crate) cwd: &'a Path,
    /// Size of each private temporary directory (`/tmp`, `/var/tmp`,
    /// `/dev/shm`), when capped.
    pub(crate) tmp_size: Option<u64>,
    pub(crate) user: &'a UserSwitch,
}

/// The `bwrap` arguments (up to and including `--`, and the `setpriv` drop
/// when there is one) for a run with `mounts`.
pub(crate) fn args(mounts: &Mounts<'_>) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::with_capacity(96);
    let mut push = |parts: &[&OsStr]| args.extend(parts.iter().map(|p| p.to_os_string()));

    // ipc, pid, net, uts and cgroup namespaces; a user namespace only when bwrap is
    // unprivileged. --die-with-parent ties the container to us so a crash of the
    // agent cannot leave it running, and the PID namespace means every descendant
    // dies when its init (bwrap) does.
    match mounts.user {
        UserSwitch::Unprivileged => push(&["--unshare-all".as_ref()]),
        UserSwitch::ToUser { .. } => {
            push(&[
                "--unshare-ipc".as_ref(),
                "--unshare-pid".as_ref(),
                "--unshare-uts".as_ref(),
                "--unshare-cgroup-try".as_ref(),
            ]);
            if !mounts.network {
                push(&["--unshare-net".as_ref()]);
            }
        }
    }
    push(&[
        "--die-with-parent".as_ref(),
        "--new-session".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--hostname".as_ref(),
        "sandbox".as_ref(),
    ]);
    if let UserSwitch::ToUser { .. } = mounts.user {
        // Only what setpriv needs to become the user; it loses both with the uid.
        push(&[
            "--cap-add".as_ref(),
            "CAP_SETUID".as_ref(),
            "--cap-add".as_ref(),
            "CAP_SETGID".as_ref(),
        ]);
    }
    if mounts.network && matches!(mounts.user, UserSwitch::Unprivileged) {
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
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    for path in PROC_READ_ONLY {
        push(&["--ro-bind-try".as_ref(), path.as_ref(), path.as_ref()]);
    }
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    let size = mounts.tmp_size.map(|s| s.max(4096).to_string());
    for dir in PRIVATE_TMP {
        push(&["--perms".as_ref(), "1777".as_ref()]);
        if let Some(size) = &size {
            push(&["--size".as_ref(), size.as_ref()]);
        }
        push(&["--tmpfs".as_ref(), dir.as_ref()]);
    }
    // The directories above granted paths exist only in the container's own root,
    // made open (0755) so that an unprivileged user can reach what was granted below
    // a directory it could not enter on the host (a task under `/root`, or in a
    // 0700 temporary directory). They hold nothing but the way to the grants.
    for dir in way_to(mounts.read_only.iter().chain(mounts.read_write)) {
        push(&[
            "--perms".as_ref(),
            "0755".as_ref(),
            "--dir".as_ref(),
            dir.as_os_str(),
        ]);
    }
    // Granted paths come after the tmpfs mounts so that a grant below /tmp (common for
    // temporary working directories) is visible instead of being hidden by the tmpfs.
    for path in mounts.read_only {
        push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    for path in mounts.read_write {
        push(&["--bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    push(&["--chdir".as_ref(), mounts.cwd.as_os_str(), "--".as_ref()]);
    if let UserSwitch::ToUser { setpriv, user } = mounts.user {
        push(&[
            setpriv.as_os_str(),
            "--reuid".as_ref(),
            user.uid.to_string().as_ref(),
            "--regid".as_ref(),
            user.gid.to_string().as_ref(),
            "--clear-groups".as_ref(),
            "--inh-caps=-all".as_ref(),
            "--".as_ref(),
        ]);
    }
    args
}

/// The directories on the way to `paths` that the container must make itself:
/// ancestors that are neither system directories, nor private temporary
/// directories, nor inside another granted path (where the real directory shows
/// through), outermost first, each once.
fn way_to<'p>(paths: impl Iterator<Item = &'p PathBuf> + Clone) -> Vec<PathBuf> {
    let granted: Vec<&PathBuf> = paths.clone().collect();
    let mut way: Vec<PathBuf> = Vec::new();
    for path in paths {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        for dir in ancestors {
            let provided = dir.parent().is_none()
                || is_under_system_dirs(dir)
                || PRIVATE_TMP.iter().any(|t| Path::new(t) == dir)
                || ["/proc", "/dev"].iter().any(|t| dir.starts_with(t))
                || granted.iter().any(|g| dir.starts_with(g));
            if !provided && !way.iter().any(|w| w == dir) {
                way.push(dir.to_path_buf());
            }
        }
    }
    way.sort_by_key(|d| d.components().count());
    way
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
            tmp_size: None,
            user: &UserSwitch::Unprivileged,
        });
        assert!(position(&off, "--unshare-all").is_some());
        assert!(position(&off, "--share-net").is_none());
        let on = args(&Mounts {
            read_only: &[],
            read_write: std::slice::from_ref(&cwd),
            network: true,
            cwd: &cwd,
            tmp_size: None,
            user: &UserSwitch::Unprivileged,
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
            tmp_size: None,
            user: &UserSwitch::Unprivileged,
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

    fn root_mode(network: bool) -> Vec<OsString> {
        let cwd = PathBuf::from("/root/task/work");
        let repo = PathBuf::from("/root/task/repo");
        args(&Mounts {
            read_only: std::slice::from_ref(&repo),
            read_write: std::slice::from_ref(&cwd),
            network,
            cwd: &cwd,
            tmp_size: Some(1 << 30),
            user: &UserSwitch::ToUser {
                setpriv: PathBuf::from("/usr/bin/setpriv"),
                user: RunAs::NOBODY,
            },
        })
    }

    #[test]
    fn as_root_there_is_no_user_namespace_and_setpriv_drops_to_the_user() {
        let a = root_mode(false);
        let text: Vec<String> = a.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert!(position(&a, "--unshare-all").is_none(), "{text:?}");
        assert!(position(&a, "--unshare-user").is_none(), "{text:?}");
        assert!(position(&a, "--unshare-net").is_some(), "{text:?}");
        assert!(position(&root_mode(true), "--unshare-net").is_none());
        let dash = position(&a, "--").unwrap();
        assert_eq!(
            text[dash + 1..],
            [
                "/usr/bin/setpriv",
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "--inh-caps=-all",
                "--"
            ]
        );
        let caps: Vec<&str> = text
            .windows(2)
            .filter(|w| w[0] == "--cap-add")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(caps, ["CAP_SETUID", "CAP_SETGID"]);
    }

    #[test]
    fn proc_sys_is_read_only_and_private_tmp_is_sized_and_open() {
        let a = root_mode(false);
        let text: Vec<String> = a.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        let proc_at = position(&a, "/proc").unwrap();
        let sys = text
            .windows(3)
            .position(|w| w == ["--ro-bind-try", "/proc/sys", "/proc/sys"])
            .unwrap();
        assert!(sys > proc_at);
        for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
            let at = text
                .iter()
                .position(|t| t == dir)
                .unwrap_or_else(|| panic!("{dir} missing: {text:?}"));
            assert_eq!(
                text[at - 5..at],
                ["--perms", "1777", "--size", "1073741824", "--tmpfs"][..]
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()[..],
                "{dir}"
            );
        }
    }

    #[test]
    fn the_way_to_a_grant_is_made_open_before_the_binds() {
        let a = root_mode(false);
        let text: Vec<String> = a.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        let dirs: Vec<&str> = text
            .windows(4)
            .filter(|w| w[0] == "--perms" && w[1] == "0755" && w[2] == "--dir")
            .map(|w| w[3].as_str())
            .collect();
        assert_eq!(dirs, ["/root", "/root/task"]);
        let last_dir = text.iter().rposition(|t| t == "--dir").unwrap();
        let first_bind = text.iter().position(|t| t == "--ro-bind").unwrap();
        // System directories are bound first; the task's binds come after the way.
        let repo_bind = text
            .windows(2)
            .position(|w| w == ["--ro-bind", "/root/task/repo"])
            .unwrap();
        assert!(first_bind < last_dir && last_dir < repo_bind, "{text:?}");
        // Nothing is made inside a grant, or for system and temporary directories.
        let nested = [PathBuf::from("/tmp/x/w"), PathBuf::from("/tmp/x/w/out")];
        assert_eq!(way_to(nested.iter()), [PathBuf::from("/tmp/x")]);
        assert!(way_to([PathBuf::from("/usr/lib/python3")].iter()).is_empty());
    }
}
