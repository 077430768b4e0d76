//! One memory cap and one process cap for all the processes of a call, with the
//! kernel's memory and pids cgroups.
//!
//! RLIMIT_AS is per process: a call that forks two children of 3 GiB each passes
//! a 4 GiB limit twice. A memory cgroup counts what every process in it holds
//! (resident memory, page cache, tmpfs such as bubblewrap's private `/tmp`), so each
//! call that has a memory limit gets a cgroup of its own below the agent's, named
//! `repo-agent-<agent pid>-<n>`. The child moves itself into it between `fork` and
//! `exec` (`limits.rs`), before bubblewrap or the program runs, so every descendant
//! is in it from its first instruction, `setsid` and double-forked daemons included.
//! When the call ends whatever is left in the cgroup is killed, the OOM killer's
//! count is read, and the cgroup is removed.
//!
//! cgroup v2 is preferred; cgroup v1's `memory` hierarchy is the fallback. v2 can
//! kill the whole cgroup on OOM (`memory.oom.group`) and at the end (`cgroup.kill`);
//! v1 kills only the largest process on OOM, and ending the call kills each listed
//! process in turn (a pid that exits between the listing and the kill could in
//! principle be reused; by then the call's process group or PID namespace is already
//! dead, so little is left to list). Where neither works (no writable hierarchy, or v2's rule that a
//! cgroup holding processes cannot give its children controllers), the sandbox keeps
//! the per-process limit and says why ([`MemoryCap::PerProcessOnly`]).
//!
//! The `pids` controller is found and used the same way (v2 in the same cgroup as
//! memory, v1 in its own hierarchy with a cgroup of its own per call): `pids.max`
//! caps the tasks (processes and threads) of the call whatever user they run as.
//! RLIMIT_NPROC, the fallback, counts per user and is ignored for root.

use std::fmt;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use crate::error::{Result, SandboxError};

/// How the memory limit is enforced for the processes of one call, as
/// [`Sandbox::memory_cap`](crate::Sandbox::memory_cap) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryCap {
    /// A cgroup v2 caps the total of all the call's processes (`memory.max`, with
    /// `memory.swap.max` 0 and the whole cgroup killed on OOM).
    TotalViaCgroupV2,
    /// A cgroup v1 memory hierarchy caps the total of all the call's processes
    /// (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` when swap is
    /// accounted). On OOM the kernel kills the largest process; the call's others
    /// may go on.
    TotalViaCgroupV1,
    /// Only RLIMIT_AS applies, to each process on its own: a call that starts
    /// several processes can use the limit several times over.
    PerProcessOnly {
        /// Why no cgroup could be used.
        reason: String,
    },
    /// No memory limit is configured.
    Unlimited,
}

impl MemoryCap {
    /// `true` when the memory of all of a call's processes is capped together.
    pub fn is_total(&self) -> bool {
        matches!(self, Self::TotalViaCgroupV2 | Self::TotalViaCgroupV1)
    }
}

impl fmt::Display for MemoryCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TotalViaCgroupV2 => f.write_str("total of all processes (cgroup v2)"),
            Self::TotalViaCgroupV1 => f.write_str("total of all processes (cgroup v1)"),
            Self::PerProcessOnly { reason } => write!(
                f,
                "per process only (RLIMIT_AS; several processes together can exceed it): {reason}"
            ),
            Self::Unlimited => f.write_str("no memory limit"),
        }
    }
}

/// How the process limit holds the tasks (processes and threads) of one call, as
/// [`Sandbox::process_cap`](crate::Sandbox::process_cap) reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessCap {
    /// A cgroup v2 `pids.max` caps the call's tasks, whatever user they run as.
    CgroupV2,
    /// A cgroup v1 pids hierarchy caps the call's tasks, whatever user they run as.
    CgroupV1,
    /// Only RLIMIT_NPROC applies: it counts every task of the code's user, so other
    /// processes of that user (another sandbox's) share the allowance.
    PerUser {
        /// The user whose tasks are counted.
        uid: u32,
        /// Why no pids cgroup could be used.
        reason: String,
    },
    /// Nothing caps the tasks.
    NotEnforced {
        /// Why.
        reason: String,
    },
    /// No process limit is configured.
    Unlimited,
}

impl fmt::Display for ProcessCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CgroupV2 => f.write_str("tasks of the call (pids cgroup v2)"),
            Self::CgroupV1 => f.write_str("tasks of the call (pids cgroup v1)"),
            Self::PerUser { uid, reason } => write!(
                f,
                "tasks of uid {uid} (RLIMIT_NPROC; other processes of that user count too): \
                 {reason}"
            ),
            Self::NotEnforced { reason } => write!(f, "not enforced: {reason}"),
            Self::Unlimited => f.write_str("no process limit"),
        }
    }
}

/// Which cgroup interface a usable hierarchy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// A cgroup controller the sandbox uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Controller {
    Memory,
    Pids,
}

impl Controller {
    fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Pids => "pids",
        }
    }

    /// The control file a limit of this controller is written to.
    fn limit_file(self, version: Version) -> &'static str {
        match (self, version) {
            (Self::Memory, Version::V1) => "memory.limit_in_bytes",
            (Self::Memory, Version::V2) => "memory.max",
            (Self::Pids, _) => "pids.max",
        }
    }
}

/// Where calls' cgroups for one controller can be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hierarchy {
    /// Calls' cgroups go below `dir`, this process's cgroup v2.
    V2 { dir: PathBuf },
    /// Calls' cgroups go below `dir`, this process's cgroup in the controller's v1 hierarchy.
    V1 { dir: PathBuf },
    /// Neither works; the reason is for the user.
    Unavailable { reason: String },
}

impl Hierarchy {
    fn parent(&self) -> Option<(Version, &Path)> {
        match self {
            Self::V2 { dir } => Some((Version::V2, dir)),
            Self::V1 { dir } => Some((Version::V1, dir)),
            Self::Unavailable { .. } => None,
        }
    }
}

/// What [`detect`] found: where this process's cgroups for calls can be made, per
/// controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cgroups {
    pub(crate) memory: Hierarchy,
    pub(crate) pids: Hierarchy,
}

impl Cgroups {
    pub(crate) fn memory_cap(&self) -> MemoryCap {
        match &self.memory {
            Hierarchy::V2 { .. } => MemoryCap::TotalViaCgroupV2,
            Hierarchy::V1 { .. } => MemoryCap::TotalViaCgroupV1,
            Hierarchy::Unavailable { reason } => MemoryCap::PerProcessOnly {
                reason: reason.clone(),
            },
        }
    }

    /// Whether a call's tasks can be capped by a pids cgroup, and if not why.
    pub(crate) fn pids_reason(&self) -> std::result::Result<Version, String> {
        match &self.pids {
            Hierarchy::V2 { .. } => Ok(Version::V2),
            Hierarchy::V1 { .. } => Ok(Version::V1),
            Hierarchy::Unavailable { reason } => Err(reason.clone()),
        }
    }

    /// Where a call with these limits should be placed: one cgroup where both
    /// controllers live in one (v2) hierarchy, else one per hierarchy.
    pub(crate) fn placements(&self, memory: Option<u64>, pids: Option<u64>) -> Vec<Placement> {
        let mut placements: Vec<Placement> = Vec::with_capacity(2);
        let wanted = [
            (&self.memory, memory.map(Limit::Memory)),
            (&self.pids, pids.map(Limit::Pids)),
        ];
        for (hierarchy, limit) in wanted {
            let (Some((version, parent)), Some(limit)) = (hierarchy.parent(), limit) else {
                continue;
            };
            if let Some(same) = placements
                .iter_mut()
                .find(|p| p.version == version && p.parent == parent)
            {
                same.limits.push(limit);
            } else {
                placements.push(Placement {
                    version,
                    parent: parent.to_path_buf(),
                    limits: vec![limit],
                    tree: &KERNEL,
                });
            }
        }
        placements
    }
}

/// One limit a call's cgroup carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// Bytes of memory (and swap) for all the call's processes together.
    Memory(u64),
    /// Tasks (processes and threads) alive at once.
    Pids(u64),
}

/// The two operations where a cgroup file system differs from a plain directory:
/// a new cgroup comes with its control files, and removing it takes them along.
/// Everything else (reading and writing control files) is plain file I/O, which is
/// what lets the tests run the real code on a directory of ordinary files.
pub(crate) trait Tree: fmt::Debug + Send + Sync {
    fn create(&self, dir: &Path) -> io::Result<()>;
    fn remove(&self, dir: &Path) -> io::Result<()>;
}

/// The kernel's cgroup file systems.
#[derive(Debug)]
struct Kernel;

static KERNEL: Kernel = Kernel;

impl Tree for Kernel {
    fn create(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir(dir)
    }

    fn remove(&self, dir: &Path) -> io::Result<()> {
        // rmdir, not a recursive removal: cgroupfs removes a cgroup with its control
        // files, and refuses (EBUSY) while a process is still in it.
        std::fs::remove_dir(dir)
    }
}

/// Where one call's cgroup goes and what it is limited to.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    version: Version,
    parent: PathBuf,
    limits: Vec<Limit>,
    tree: &'static dyn Tree,
}

/// Prefix of the cgroups this crate makes; the agent's pid follows, so that those of
/// an agent that was killed can be told apart and removed.
const NAME_PREFIX: &str = "repo-agent-";

/// Rounds of killing what is left in a cgroup, each followed by [`KILL_PAUSE`]: a
/// process can fork between the listing and the kill, and killed processes take a
/// moment to leave.
const KILL_ROUNDS: usize = 50;
const KILL_PAUSE: Duration = Duration::from_millis(10);

/// Attempts at removing an emptied cgroup, [`REMOVE_PAUSE`] apart.
const REMOVE_ATTEMPTS: usize = 20;
const REMOVE_PAUSE: Duration = Duration::from_millis(10);

static NEXT: AtomicU64 = AtomicU64::new(0);

fn next_name() -> String {
    format!(
        "{NAME_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Finds where this process can make memory and pids cgroups (v2 first, then v1),
/// and removes the cgroups that killed agents left there.
pub(crate) fn detect() -> Cgroups {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let own = read("/proc/self/cgroup");
    let mountinfo = read("/proc/self/mountinfo");
    let found = Cgroups {
        memory: detect_from(&own, &mountinfo, &KERNEL, Controller::Memory),
        pids: detect_from(&own, &mountinfo, &KERNEL, Controller::Pids),
    };
    let mut cleaned: Vec<&Path> = Vec::new();
    for hierarchy in [&found.memory, &found.pids] {
        let Some((_, dir)) = hierarchy.parent() else {
            continue;
        };
        if cleaned.contains(&dir) {
            continue;
        }
        cleaned.push(dir);
        let removed = remove_stale(dir, &KERNEL);
        if removed > 0 {
            tracing::info!(
                removed,
                dir = %dir.display(),
                "removed cgroups left by agents that were killed"
            );
        }
    }
    found
}

fn detect_from(
    own_cgroups: &str,
    mountinfo: &str,
    tree: &dyn Tree,
    controller: Controller,
) -> Hierarchy {
    let name = controller.name();
    let own = OwnCgroups::parse(own_cgroups);
    let mounts = parse_mountinfo(mountinfo);
    let v2 = match &own.unified {
        None => "this process has no cgroup v2 (no `0::` line in /proc/self/cgroup)".to_owned(),
        Some(path) => match cgroup_dir(&mounts, |m| m.fstype == "cgroup2", path) {
            Err(reason) => format!("cgroup2 {reason}"),
            Ok(dir) => match usable_v2(&dir, tree, controller) {
                Ok(()) => return Hierarchy::V2 { dir },
                Err(reason) => reason,
            },
        },
    };
    let v1 = match own.v1(controller) {
        None => format!("this process has no cgroup in a v1 `{name}` hierarchy"),
        Some(path) => match cgroup_dir(&mounts, |m| m.is_v1(controller), path) {
            Err(reason) => format!("v1 {name} hierarchy {reason}"),
            Ok(dir) => match probe(&dir, Version::V1, tree, controller) {
                Ok(()) => return Hierarchy::V1 { dir },
                Err(reason) => reason,
            },
        },
    };
    Hierarchy::Unavailable {
        reason: format!("cgroup v2: {v2}; cgroup v1: {v1}"),
    }
}

/// This process's cgroup paths, from `/proc/self/cgroup`.
#[derive(Debug, Default, PartialEq, Eq)]
struct OwnCgroups {
    /// The `0::/path` line (cgroup v2).
    unified: Option<String>,
    /// The `N:...memory...:/path` line (cgroup v1).
    memory: Option<String>,
    /// The `N:...pids...:/path` line (cgroup v1).
    pids: Option<String>,
}

impl OwnCgroups {
    fn parse(text: &str) -> Self {
        let mut own = Self::default();
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if id == "0" && controllers.is_empty() {
                own.unified.get_or_insert_with(|| path.to_owned());
                continue;
            }
            for controller in controllers.split(',') {
                let slot = match controller {
                    "memory" => &mut own.memory,
                    "pids" => &mut own.pids,
                    _ => continue,
                };
                slot.get_or_insert_with(|| path.to_owned());
            }
        }
        own
    }

    fn v1(&self, controller: Controller) -> Option<&String> {
        match controller {
            Controller::Memory => self.memory.as_ref(),
            Controller::Pids => self.pids.as_ref(),
        }
    }
}

/// One line of `/proc/self/mountinfo`, the fields this module needs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// The path inside the file system that is mounted (a cgroup path for cgroupfs).
    root: PathBuf,
    point: PathBuf,
    fstype: String,
    super_options: String,
}

impl Mount {
    fn is_v1(&self, controller: Controller) -> bool {
        self.fstype == "cgroup"
            && self
                .super_options
                .split(',')
                .any(|o| o == controller.name())
    }
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            // Optional fields come between the mount options and the " - " separator.
            let (left, right) = line.split_once(" - ")?;
            let mut left = left.split(' ');
            let root = unescape(left.nth(3)?);
            let point = unescape(left.next()?);
            let mut right = right.split(' ');
            let fstype = right.next()?.to_owned();
            let _source = right.next()?;
            let super_options = right.next().unwrap_or_default().to_owned();
            Some(Mount {
                root,
                point,
                fstype,
                super_options,
            })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space, and so on).
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// The directory of cgroup `path` under the first mount that `wanted` accepts and whose
/// root contains it.
fn cgroup_dir(
    mounts: &[Mount],
    wanted: impl Fn(&Mount) -> bool,
    path: &str,
) -> std::result::Result<PathBuf, String> {
    let path = Path::new(path);
    // A cgroup outside our cgroup namespace shows as `/../..`; it cannot be reached.
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "path `{}` is outside this process's view",
            path.display()
        ));
    }
    let candidates: Vec<&Mount> = mounts.iter().filter(|m| wanted(m)).collect();
    if candidates.is_empty() {
        return Err("is not mounted".to_owned());
    }
    candidates
        .iter()
        .find_map(|m| {
            let inside = path.strip_prefix(&m.root).ok()?;
            // Joining an empty path would leave a trailing slash in messages.
            Some(if inside.as_os_str().is_empty() {
                m.point.clone()
            } else {
                m.point.join(inside)
            })
        })
        .ok_or_else(|| {
            format!(
                "mounts do not include this process's cgroup `{}`",
                path.display()
            )
        })
}

fn usable_v2(
    dir: &Path,
    tree: &dyn Tree,
    controller: Controller,
) -> std::result::Result<(), String> {
    let name = controller.name();
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file))
            .map_err(|e| format!("cannot read {}: {e}", dir.join(file).display()))
    };
    let controllers = read("cgroup.controllers")?;
    if !has_word(&controllers, name) {
        let list = controllers.trim();
        return Err(format!(
            "{} offers no {name} controller (controllers: {})",
            dir.display(),
            if list.is_empty() { "none" } else { list }
        ));
    }
    if !has_word(&read("cgroup.subtree_control")?, name) {
        let control = dir.join("cgroup.subtree_control");
        if let Err(e) = write_control(&control, &format!("+{name}")) {
            return Err(
                if e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error()) {
                    format!(
                        "cannot enable the {name} controller below {}: that cgroup holds processes \
                     (cgroup v2 gives controllers only to cgroups without processes); start the \
                     agent in a leaf of a cgroup delegated to it",
                        dir.display()
                    )
                } else {
                    format!(
                        "cannot enable the {name} controller in {}: {e}",
                        control.display()
                    )
                },
            );
        }
    }
    probe(dir, Version::V2, tree, controller)
}

/// Makes and removes a cgroup below `dir`, checking that its limit and process list
/// can be written.
fn probe(
    dir: &Path,
    version: Version,
    tree: &dyn Tree,
    controller: Controller,
) -> std::result::Result<(), String> {
    let child = dir.join(next_name());
    tree.create(&child)
        .map_err(|e| format!("cannot create a cgroup in {}: {e}", dir.display()))?;
    let check = [controller.limit_file(version), "cgroup.procs"]
        .iter()
        .try_for_each(|name| {
            OpenOptions::new()
                .write(true)
                .open(child.join(name))
                .map(drop)
                .map_err(|e| format!("cannot write {}: {e}", child.join(name).display()))
        });
    if let Err(error) = tree.remove(&child) {
        tracing::warn!(dir = %child.display(), %error, "could not remove the probe cgroup");
    }
    check
}

fn has_word(text: &str, word: &str) -> bool {
    text.split_whitespace().any(|w| w == word)
}

/// Writes `value` to an existing control file (never creates one: cgroupfs cannot).
/// Truncating is what a shell's `>` does; cgroupfs ignores it, a plain file needs it.
fn write_control(path: &Path, value: &str) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// Removes the cgroups in `dir` named after an agent process that is gone (a killed
/// agent cannot clean up after itself); returns how many. What still runs in one is
/// the code of a call whose agent is dead, and is killed. Nothing here waits: a
/// cgroup whose processes are still exiting is left for the next sandbox.
pub(crate) fn remove_stale(dir: &Path, tree: &dyn Tree) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.strip_prefix(NAME_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if pid == own || !is_dir || Path::new("/proc").join(pid.to_string()).exists() {
            continue;
        }
        let path = entry.path();
        kill_listed(&path.join("cgroup.procs"));
        match tree.remove(&path) {
            Ok(()) => removed += 1,
            Err(error) => {
                tracing::debug!(dir = %path.display(), %error, "stale memory cgroup kept for now");
            }
        }
    }
    removed
}

/// The pids listed in a `cgroup.procs` file. Numbers that cannot be a process of a
/// call (0, init, this process) are dropped: `kill(0)` would hit our own group.
fn listed_pids(procs: &Path) -> Vec<Pid> {
    let own = std::process::id();
    std::fs::read_to_string(procs)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse::<u32>().ok())
        .filter(|pid| *pid > 1 && *pid != own)
        .filter_map(|pid| Pid::from_raw(i32::try_from(pid).ok()?))
        .collect()
}

/// SIGKILLs every process listed in `procs`; returns how many were listed.
fn kill_listed(procs: &Path) -> usize {
    let pids = listed_pids(procs);
    for pid in &pids {
        // ESRCH: it exited between the listing and the kill.
        let _ = kill_process(*pid, Signal::KILL);
    }
    pids.len()
}

/// What the end of a call's cgroup found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Finished {
    /// Processes the OOM killer killed.
    pub(crate) oom_kills: u64,
    /// Forks and thread creations refused at the pids limit.
    pub(crate) forks_refused: u64,
}

/// The cgroup of one running call. Dropping it without [`finish`](Self::finish)
/// (a cancelled call, an early return) still kills what is in it and removes it.
#[derive(Debug)]
pub(crate) struct CallCgroup {
    dir: PathBuf,
    version: Version,
    tree: &'static dyn Tree,
    /// `cgroup.procs`, open for the child to move itself in; closed once spawned.
    procs: Option<OwnedFd>,
    finished: bool,
}

impl CallCgroup {
    /// Makes the call's cgroup with its limits set, and opens its process list.
    pub(crate) fn create(placement: &Placement) -> Result<Self> {
        let dir = placement.parent.join(next_name());
        placement.tree.create(&dir).map_err(|e| {
            SandboxError::io(
                format!("creating the call's memory cgroup {}", dir.display()),
                e,
            )
        })?;
        // From here on, dropping `cgroup` removes the directory again.
        let mut cgroup = Self {
            dir,
            version: placement.version,
            tree: placement.tree,
            procs: None,
            finished: false,
        };
        for limit in &placement.limits {
            cgroup.set_limit(*limit)?;
        }
        let procs = cgroup.dir.join("cgroup.procs");
        let file = OpenOptions::new()
            .write(true)
            .open(&procs)
            .map_err(|e| SandboxError::io(format!("opening {}", procs.display()), e))?;
        cgroup.procs = Some(file.into());
        tracing::debug!(dir = %cgroup.dir.display(), limits = ?placement.limits, "call cgroup ready");
        Ok(cgroup)
    }

    fn set_limit(&self, limit: Limit) -> Result<()> {
        let limit = match limit {
            Limit::Memory(bytes) => bytes,
            Limit::Pids(tasks) => {
                let path = self.dir.join("pids.max");
                return write_control(&path, &tasks.to_string()).map_err(|e| {
                    SandboxError::io(format!("writing {tasks} to {}", path.display()), e)
                });
            }
        };
        let value = limit.to_string();
        let required = |name: &str, value: &str| {
            let path = self.dir.join(name);
            write_control(&path, value)
                .map_err(|e| SandboxError::io(format!("writing {value} to {}", path.display()), e))
        };
        // Swap would let the code hold more than the cap, so it is capped too where the
        // kernel accounts it; otherwise only a warning in the log.
        let optional = |name: &str, value: &str| {
            let path = self.dir.join(name);
            if !path.exists() {
                return false;
            }
            match write_control(&path, value) {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!(file = %path.display(), %error, "could not set a memory cgroup option");
                    false
                }
            }
        };
        match self.version {
            Version::V2 => {
                required("memory.max", &value)?;
                optional("memory.swap.max", "0");
                // One OOM kill takes the whole call, as a timeout does, rather than
                // leaving a half-killed program running.
                optional("memory.oom.group", "1");
            }
            Version::V1 => {
                // memsw must stay at or above limit_in_bytes, so it is written second.
                required("memory.limit_in_bytes", &value)?;
                if !optional("memory.memsw.limit_in_bytes", &value) {
                    optional("memory.swappiness", "0");
                }
            }
        }
        Ok(())
    }

    /// The open `cgroup.procs`, for the child to write `0` to before `exec`.
    pub(crate) fn procs_fd(&self) -> Option<RawFd> {
        self.procs.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// The child is spawned (or failed to be): the process list is closed.
    pub(crate) fn spawned(&mut self) {
        self.procs = None;
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ends the call's cgroup: kills what is left in it, reads how many processes the
    /// OOM killer killed and how many forks the pids limit refused, and removes it.
    pub(crate) async fn finish(mut self) -> Finished {
        self.finished = true;
        self.procs = None;
        for _ in 0..KILL_ROUNDS {
            if self.kill_round() == 0 {
                break;
            }
            tokio::time::sleep(KILL_PAUSE).await;
        }
        let finished = Finished {
            oom_kills: self.oom_kills(),
            forks_refused: self.forks_refused(),
        };
        for attempt in 1..=REMOVE_ATTEMPTS {
            match self.try_remove() {
                Ok(()) => break,
                Err(error) if attempt == REMOVE_ATTEMPTS => self.warn_kept(&error),
                Err(_) => tokio::time::sleep(REMOVE_PAUSE).await,
            }
        }
        finished
    }

    /// How many forks and thread creations the pids limit refused (`max` in
    /// `pids.events`; 0 without a pids limit).
    pub(crate) fn forks_refused(&self) -> u64 {
        let text = std::fs::read_to_string(self.dir.join("pids.events")).unwrap_or_default();
        counter(&text, "max").unwrap_or(0)
    }

    /// Kills what the cgroup holds; returns how many processes it listed (0: empty).
    fn kill_round(&self) -> usize {
        let kill_file = self.dir.join("cgroup.kill");
        // cgroup.kill (v2, Linux 5.14) kills atomically, forks in flight included.
        if self.version == Version::V2 && kill_file.exists() {
            if let Err(error) = write_control(&kill_file, "1") {
                tracing::debug!(%error, "cgroup.kill failed; killing processes one by one");
            } else {
                return listed_pids(&self.dir.join("cgroup.procs")).len();
            }
        }
        kill_listed(&self.dir.join("cgroup.procs"))
    }

    /// How many processes of the cgroup the OOM killer killed.
    pub(crate) fn oom_kills(&self) -> u64 {
        let file = match self.version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        counter(&text, "oom_kill").unwrap_or(0)
    }

    fn try_remove(&self) -> io::Result<()> {
        match self.tree.remove(&self.dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn warn_kept(&self, error: &io::Error) {
        tracing::warn!(
            dir = %self.dir.display(),
            %error,
            "could not remove a call's cgroup; the next sandbox removes it"
        );
    }
}

impl Drop for CallCgroup {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.procs = None;
        // Drop cannot wait: one round now, and if killed processes are still leaving,
        // the rest on a thread of its own.
        self.kill_round();
        if self.try_remove().is_ok() {
            return;
        }
        let rest = Self {
            dir: self.dir.clone(),
            version: self.version,
            tree: self.tree,
            procs: None,
            finished: true,
        };
        let spawned = std::thread::Builder::new()
            .name("sandbox-cgroup-cleanup".to_owned())
            .spawn(move || {
                for attempt in 1..=KILL_ROUNDS {
                    rest.kill_round();
                    match rest.try_remove() {
                        Ok(()) => return,
                        Err(error) if attempt == KILL_ROUNDS => rest.warn_kept(&error),
                        Err(_) => std::thread::sleep(KILL_PAUSE),
                    }
                }
            });
        if let Err(error) = spawned {
            self.warn_kept(&error);
        }
    }
}

/// The value of `key` in a flat-keyed control file (`key value` per line).
fn counter(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// A cgroup tree made of ordinary files: a new cgroup gets the control files
    /// listed here, removal takes them along.
    #[derive(Debug)]
    struct Fake {
        files: &'static [(&'static str, &'static str)],
    }

    impl Tree for Fake {
        fn create(&self, dir: &Path) -> io::Result<()> {
            std::fs::create_dir(dir)?;
            for (name, content) in self.files {
                std::fs::write(dir.join(name), content)?;
            }
            Ok(())
        }

        fn remove(&self, dir: &Path) -> io::Result<()> {
            std::fs::remove_dir_all(dir)
        }
    }

    static V1_FILES: Fake = Fake {
        files: &[
            ("cgroup.procs", ""),
            ("memory.limit_in_bytes", "9223372036854771712\n"),
            ("memory.memsw.limit_in_bytes", "9223372036854771712\n"),
            (
                "memory.oom_control",
                "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
            ),
        ],
    };

    static V1_NO_SWAP_ACCOUNTING: Fake = Fake {
        files: &[
            ("cgroup.procs", ""),
            ("memory.limit_in_bytes", "9223372036854771712\n"),
            ("memory.swappiness", "60\n"),
            (
                "memory.oom_control",
                "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
            ),
        ],
    };

    static V2_FILES: Fake = Fake {
        files: &[
            ("cgroup.procs", ""),
            ("cgroup.kill", ""),
            ("memory.max", "max\n"),
            ("memory.swap.max", "max\n"),
            ("memory.oom.group", "0\n"),
            ("memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"),
        ],
    };

    const CGROUP_V1: &str = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/abc\n\
                             3:cpuset:/\n2:cpu,cpuacct:/x\n0::/\n";

    fn tempdir() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    /// A mountinfo whose v1 memory hierarchy and cgroup2 are mounted under `root`.
    fn mountinfo(root: &Path) -> String {
        let r = root.display();
        format!(
            "23 1 0:21 / / rw,relatime - ext4 /dev/vda rw\n\
             31 23 0:28 / {r} rw,relatime - tmpfs tmpfs rw,mode=755\n\
             32 31 0:29 / {r}/cpu rw,relatime - cgroup cgroup rw,cpu\n\
             35 31 0:32 / {r}/memory rw,relatime shared:7 - cgroup cgroup rw,memory\n\
             41 31 0:38 / {r}/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
        )
    }

    #[test]
    fn own_cgroups_are_read_from_the_v1_and_v2_lines() {
        let own = OwnCgroups::parse(CGROUP_V1);
        assert_eq!(own.memory.as_deref(), Some("/process_api/abc"));
        assert_eq!(own.unified.as_deref(), Some("/"));
        let combined = OwnCgroups::parse("5:cpu,memory,pids:/a/b\ngarbage\n1:name=x:/\n");
        assert_eq!(combined.memory.as_deref(), Some("/a/b"));
        assert_eq!(combined.unified, None);
        assert_eq!(OwnCgroups::parse(""), OwnCgroups::default());
    }

    #[test]
    fn mountinfo_fields_are_found_past_optional_fields_and_unescaped() {
        let mounts = parse_mountinfo(
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:7 master:1 - cgroup cgroup rw,memory\n\
             36 31 0:33 /sub /mnt/with\\040space rw - cgroup2 cgroup2 rw\n\
             not a mountinfo line\n",
        );
        assert_eq!(mounts.len(), 2);
        assert!(mounts[0].is_v1(Controller::Memory));
        assert_eq!(mounts[0].point, Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(mounts[1].point, Path::new("/mnt/with space"));
        assert_eq!(mounts[1].root, Path::new("/sub"));
        assert!(!mounts[1].is_v1(Controller::Memory));
    }

    #[test]
    fn the_cgroup_directory_accounts_for_the_mount_root() {
        let mounts = parse_mountinfo(
            "1 0 0:1 /container /cg rw - cgroup2 cgroup2 rw\n\
             2 0 0:1 / /all rw - cgroup2 cgroup2 rw\n",
        );
        let v2 = |m: &Mount| m.fstype == "cgroup2";
        assert_eq!(
            cgroup_dir(&mounts, v2, "/container/job").unwrap(),
            Path::new("/cg/job")
        );
        assert_eq!(
            cgroup_dir(&mounts, v2, "/elsewhere").unwrap(),
            Path::new("/all/elsewhere")
        );
        assert!(cgroup_dir(&mounts, v2, "/../../x").is_err());
        assert!(cgroup_dir(&mounts[..1], v2, "/elsewhere").is_err());
        assert!(cgroup_dir(&mounts, |m| m.is_v1(Controller::Memory), "/").is_err());
    }

    #[test]
    fn v1_is_used_when_v2_has_no_memory_controller() {
        let root = tempdir();
        let unified = root.path().join("unified");
        std::fs::create_dir_all(&unified).unwrap();
        std::fs::write(unified.join("cgroup.controllers"), "hugetlb\n").unwrap();
        let own = root.path().join("memory/process_api/abc");
        std::fs::create_dir_all(&own).unwrap();

        let found = detect_from(
            CGROUP_V1,
            &mountinfo(root.path()),
            &V1_FILES,
            Controller::Memory,
        );
        assert_eq!(found, Hierarchy::V1 { dir: own.clone() });
        let cgroups = Cgroups {
            memory: found,
            pids: Hierarchy::Unavailable {
                reason: "none".into(),
            },
        };
        assert_eq!(cgroups.memory_cap(), MemoryCap::TotalViaCgroupV1);
        // The probe cleaned up after itself.
        assert_eq!(std::fs::read_dir(&own).unwrap().count(), 0);
    }

    #[test]
    fn v2_is_preferred_and_gets_the_memory_controller_enabled() {
        let root = tempdir();
        let own = root.path().join("unified/agent");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        std::fs::write(own.join("cgroup.subtree_control"), "").unwrap();
        let text = "4:memory:/process_api/abc\n0::/agent\n";

        let found = detect_from(text, &mountinfo(root.path()), &V2_FILES, Controller::Memory);
        assert_eq!(found, Hierarchy::V2 { dir: own.clone() });
        assert_eq!(
            std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap(),
            "+memory"
        );
    }

    #[test]
    fn no_usable_hierarchy_gives_both_reasons() {
        let root = tempdir();
        let unified = root.path().join("unified");
        std::fs::create_dir_all(&unified).unwrap();
        std::fs::write(unified.join("cgroup.controllers"), "").unwrap();
        // The v1 cgroup directory does not exist, so no child can be made there.
        let found = detect_from(
            CGROUP_V1,
            &mountinfo(root.path()),
            &V1_FILES,
            Controller::Memory,
        );
        let Hierarchy::Unavailable { reason } = &found else {
            panic!("{found:?}");
        };
        assert!(
            reason.contains("no memory controller (controllers: none)"),
            "{reason}"
        );
        assert!(reason.contains("cannot create a cgroup"), "{reason}");
        let cgroups = Cgroups {
            memory: found.clone(),
            pids: found,
        };
        assert!(matches!(
            cgroups.memory_cap(),
            MemoryCap::PerProcessOnly { .. }
        ));
        assert!(cgroups.pids_reason().is_err());

        let none = detect_from("", "", &V1_FILES, Controller::Pids);
        let Hierarchy::Unavailable { reason } = none else {
            panic!("{none:?}");
        };
        assert!(reason.contains("no `0::` line"), "{reason}");
    }

    #[tokio::test]
    async fn a_v1_call_cgroup_gets_the_limit_on_memory_and_swap_and_is_removed() {
        let root = tempdir();
        let placement = Placement {
            version: Version::V1,
            parent: root.path().to_path_buf(),
            limits: vec![Limit::Memory(400 << 20)],
            tree: &V1_FILES,
        };
        let mut cgroup = CallCgroup::create(&placement).unwrap();
        let dir = cgroup.dir().to_path_buf();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!("repo-agent-{}-", std::process::id())),
            "{name}"
        );
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert_eq!(read("memory.limit_in_bytes"), (400u64 << 20).to_string());
        assert_eq!(
            read("memory.memsw.limit_in_bytes"),
            (400u64 << 20).to_string()
        );
        assert!(cgroup.procs_fd().is_some());
        cgroup.spawned();
        assert!(cgroup.procs_fd().is_none());

        std::fs::write(
            dir.join("memory.oom_control"),
            "oom_kill_disable 0\nunder_oom 1\noom_kill 2\n",
        )
        .unwrap();
        assert_eq!(cgroup.finish().await.oom_kills, 2);
        assert!(!dir.exists());
    }

    #[test]
    fn without_swap_accounting_v1_turns_swapping_off_instead() {
        let root = tempdir();
        let placement = Placement {
            version: Version::V1,
            parent: root.path().to_path_buf(),
            limits: vec![Limit::Memory(1 << 30)],
            tree: &V1_NO_SWAP_ACCOUNTING,
        };
        let cgroup = CallCgroup::create(&placement).unwrap();
        let dir = cgroup.dir().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(dir.join("memory.swappiness")).unwrap(),
            "0"
        );
        assert!(!dir.join("memory.memsw.limit_in_bytes").exists());
        drop(cgroup);
        assert!(!dir.exists(), "dropping the guard removes the cgroup");
    }

    #[tokio::test]
    async fn a_v2_call_cgroup_sets_max_swap_and_group_kill() {
        let root = tempdir();
        let placement = Placement {
            version: Version::V2,
            parent: root.path().to_path_buf(),
            limits: vec![Limit::Memory(123_456_789)],
            tree: &V2_FILES,
        };
        let cgroup = CallCgroup::create(&placement).unwrap();
        let dir = cgroup.dir().to_path_buf();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert_eq!(read("memory.max"), "123456789");
        assert_eq!(read("memory.swap.max"), "0");
        assert_eq!(read("memory.oom.group"), "1");
        assert_eq!(cgroup.oom_kills(), 0);
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 1\n",
        )
        .unwrap();
        assert_eq!(cgroup.finish().await.oom_kills, 1);
        // The end of the call asked the kernel to kill the cgroup.
        assert!(!dir.exists());
    }

    #[test]
    fn a_cgroup_whose_limit_cannot_be_written_is_an_error_and_is_removed() {
        static BROKEN: Fake = Fake {
            files: &[("cgroup.procs", "")],
        };
        let root = tempdir();
        let placement = Placement {
            version: Version::V2,
            parent: root.path().to_path_buf(),
            limits: vec![Limit::Memory(1 << 20)],
            tree: &BROKEN,
        };
        let err = CallCgroup::create(&placement).unwrap_err();
        assert!(err.to_string().contains("memory.max"), "{err}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    }

    #[test]
    fn listed_processes_are_killed_and_impossible_pids_skipped() {
        let dir = tempdir();
        let procs = dir.path().join("cgroup.procs");
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let own = std::process::id();
        std::fs::write(&procs, format!("0\n1\n{own}\nnot-a-pid\n{}\n", child.id())).unwrap();
        assert_eq!(kill_listed(&procs), 1);
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9));
    }

    #[test]
    fn counters_are_read_by_key() {
        let text = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(counter(text, "oom_kill"), Some(3));
        assert_eq!(counter(text, "under_oom"), Some(0));
        assert_eq!(counter("garbage", "oom_kill"), None);
    }

    #[test]
    fn cgroups_of_dead_agents_are_removed_and_live_ones_kept() {
        let dir = tempdir();
        let own = std::process::id();
        // 4,000,000,000 is above any Linux pid_max, so no process has it.
        let names = [
            "repo-agent-4000000000-3".to_string(),
            format!("repo-agent-{own}-0"),
            "repo-agent-1-7".to_string(),
            "repo-agent-x".to_string(),
            "other-4000000000-3".to_string(),
        ];
        for name in &names {
            V1_FILES.create(&dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("repo-agent-4000000001-0"), "a file").unwrap();
        assert_eq!(remove_stale(dir.path(), &V1_FILES), 1);
        assert!(!dir.path().join(&names[0]).exists());
        for name in &names[1..] {
            assert!(dir.path().join(name).exists(), "{name} was removed");
        }
        assert!(dir.path().join("repo-agent-4000000001-0").exists());
    }

    #[test]
    fn the_cap_reads_well() {
        let cap = MemoryCap::PerProcessOnly {
            reason: "no hierarchy".to_owned(),
        };
        assert!(cap.to_string().contains("no hierarchy"));
        assert!(!cap.is_total());
        assert!(MemoryCap::TotalViaCgroupV1.is_total());
    }

    #[test]
    fn the_pids_line_and_mount_are_found_for_v1() {
        let own = OwnCgroups::parse(CGROUP_V1);
        assert_eq!(own.pids.as_deref(), Some("/"));
        let combined = OwnCgroups::parse("5:cpu,memory,pids:/a/b\n");
        assert_eq!(combined.pids.as_deref(), Some("/a/b"));
        let mounts = parse_mountinfo(
            "37 31 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n",
        );
        assert!(mounts[0].is_v1(Controller::Pids));
        assert!(!mounts[0].is_v1(Controller::Memory));
    }

    static V1_PIDS_FILES: Fake = Fake {
        files: &[
            ("cgroup.procs", ""),
            ("pids.max", "max\n"),
            ("pids.events", "max 0\n"),
        ],
    };

    #[test]
    fn v1_pids_is_its_own_hierarchy_with_its_own_call_cgroup() {
        let root = tempdir();
        let own = root.path().join("pids/job");
        std::fs::create_dir_all(&own).unwrap();
        let text = "8:pids:/job\n4:memory:/job\n0::/\n";
        let info = format!(
            "{}37 31 0:34 / {}/pids rw - cgroup cgroup rw,pids\n",
            mountinfo(root.path()),
            root.path().display()
        );
        let found = detect_from(text, &info, &V1_PIDS_FILES, Controller::Pids);
        assert_eq!(found, Hierarchy::V1 { dir: own.clone() });
        let cgroups = Cgroups {
            memory: Hierarchy::V1 {
                dir: root.path().join("memory/job"),
            },
            pids: found,
        };
        let placements = cgroups.placements(Some(1 << 30), Some(300));
        assert_eq!(placements.len(), 2, "one per v1 hierarchy");
        assert_eq!(placements[1].limits, [Limit::Pids(300)]);
        assert_eq!(cgroups.placements(None, Some(300)).len(), 1);
        assert!(cgroups.placements(None, None).is_empty());
    }

    #[test]
    fn v2_puts_memory_and_pids_in_one_call_cgroup() {
        let dir = PathBuf::from("/cg/agent");
        let cgroups = Cgroups {
            memory: Hierarchy::V2 { dir: dir.clone() },
            pids: Hierarchy::V2 { dir },
        };
        let placements = cgroups.placements(Some(1 << 30), Some(300));
        assert_eq!(placements.len(), 1);
        assert_eq!(
            placements[0].limits,
            [Limit::Memory(1 << 30), Limit::Pids(300)]
        );
    }

    #[tokio::test]
    async fn a_pids_call_cgroup_gets_its_limit_and_reports_refused_forks() {
        let root = tempdir();
        let placement = Placement {
            version: Version::V1,
            parent: root.path().to_path_buf(),
            limits: vec![Limit::Pids(42)],
            tree: &V1_PIDS_FILES,
        };
        let cgroup = CallCgroup::create(&placement).unwrap();
        let dir = cgroup.dir().to_path_buf();
        assert_eq!(std::fs::read_to_string(dir.join("pids.max")).unwrap(), "42");
        std::fs::write(dir.join("pids.events"), "max 17\n").unwrap();
        let finished = cgroup.finish().await;
        assert_eq!(finished.forks_refused, 17);
        assert_eq!(finished.oom_kills, 0);
        assert!(!dir.exists());
    }
}
