//! Descendants that leave their call's process group in process mode: a
//! `setsid` child, or a double-forked daemon whose parent exits at once.
//!
//! The namespace mode catches them with its PID namespace. Process mode
//! makes this process a *child subreaper* (`PR_SET_CHILD_SUBREAPER`): an
//! orphan anywhere below it is reparented here instead of to init. After
//! each call, every child of this process that is not the main process of a
//! running call and has left this process's process group is such an
//! escaped descendant, and is killed and reaped. Killing one can orphan its
//! own children, so this repeats until none is left (bounded).
//!
//! Why the process group tells them apart: a call's main process gets a
//! group of its own, and its descendants that stay in it die with the
//! group. What else this process starts (a probe of the Python
//! interpreter, a child of the embedding program) stays in this process's
//! group. So a child of this process in another group, that is not a
//! running call, left its call by `setsid` or `setpgid`. A daemon that one
//! call starts may be killed when another call ends; no call's descendants
//! are meant to outlive it anyway.
//!
//! An orphan of a call that is still running is that call's own, though:
//! every call's environment carries a mark of its own ([`CALL_MARK`]), and
//! an escaped child whose environment carries a running call's mark is
//! spared until that call ends. Code that scrubs the mark from its
//! environment loses that and dies at the next call's end, which is no
//! loss of containment.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};

/// Rounds of killing: each round may orphan the next generation.
const MAX_ROUNDS: usize = 16;

/// The environment variable naming the call a process belongs to.
pub(crate) const CALL_MARK: &str = "SANDBOX_CALL";

/// Longest an environment is read: a mark sits near its start, since the
/// runner sets the environment from nothing.
const ENVIRON_MAX: usize = 1 << 20;

/// The main processes of calls that are running, with each call's mark;
/// holding the lock across `spawn` keeps a new call's process from being
/// taken for an orphan.
static LIVE: Mutex<BTreeMap<u32, String>> = Mutex::new(BTreeMap::new());

static CALLS: AtomicU64 = AtomicU64::new(0);

static SUBREAPER: OnceLock<bool> = OnceLock::new();

/// Makes this process the subreaper of its descendants (once); whether it is.
pub(crate) fn enable() -> bool {
    *SUBREAPER.get_or_init(|| match rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    )) {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "cannot become a child subreaper: processes that call setsid may outlive their call");
            false
        }
    })
}

/// A mark no other call of this process has had.
pub(crate) fn new_mark() -> String {
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{}-{n}-{nanos:08x}", std::process::id())
}

/// The running calls, locked: hold it across `spawn` and add the pid with
/// the call's mark.
pub(crate) fn live() -> MutexGuard<'static, BTreeMap<u32, String>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The call whose main process is `pid` has ended.
pub(crate) fn finished(pid: u32) {
    live().remove(&pid);
}

/// Kills and reaps every child of this process that is not a running
/// call's main process; returns how many were killed.
pub(crate) async fn kill_escaped() -> usize {
    if !SUBREAPER.get().copied().unwrap_or(false) {
        return 0;
    }
    let mut killed = 0;
    for _ in 0..MAX_ROUNDS {
        let mut escaped = Vec::new();
        for pid in escaped_children() {
            escaped.push((pid, call_of(pid).await));
        }
        let orphans: Vec<Pid> = {
            let live = live();
            let orphans: Vec<Pid> = escaped
                .into_iter()
                .filter(|(pid, mark)| {
                    !live.contains_key(pid)
                        && !mark
                            .as_ref()
                            .is_some_and(|mark| live.values().any(|m| m == mark))
                })
                .filter_map(|(pid, _)| Pid::from_raw(i32::try_from(pid).ok()?))
                .collect();
            for pid in &orphans {
                // ESRCH: it ended on its own meanwhile.
                let _ = kill_process(*pid, Signal::KILL);
            }
            orphans
        };
        if orphans.is_empty() {
            break;
        }
        killed += orphans.len();
        reap(&orphans).await;
    }
    if killed > 0 {
        tracing::debug!(
            killed,
            "killed descendants that escaped their call's process group"
        );
    }
    killed
}

/// Waits (briefly, without blocking the runtime) for killed orphans, so
/// they do not stay zombies.
async fn reap(pids: &[Pid]) {
    let mut left: Vec<Pid> = pids.to_vec();
    for _ in 0..100 {
        left.retain(|pid| {
            !matches!(
                waitpid(Some(*pid), WaitOptions::NOHANG),
                Ok(Some(_)) | Err(rustix::io::Errno::CHILD)
            )
        });
        if left.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The call mark in the environment of `pid`, if it has one. A process in
/// the middle of `exec` shows an empty environment for a moment, so an
/// empty one is read once more.
async fn call_of(pid: u32) -> Option<String> {
    let path = format!("/proc/{pid}/environ");
    for attempt in 0..2 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let environ = read_prefix(&path, ENVIRON_MAX)?;
        if !environ.is_empty() {
            return mark_in(&environ);
        }
    }
    None
}

fn read_prefix(path: &str, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(max as u64).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The value of [`CALL_MARK`] in a `NUL`-separated environment.
fn mark_in(environ: &[u8]) -> Option<String> {
    let key = format!("{CALL_MARK}=");
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(key.as_bytes()))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

/// The pids whose parent is this process and whose process group is not
/// this process's, from `/proc/<pid>/stat`.
fn escaped_children() -> Vec<u32> {
    let own = std::process::id();
    let own_group = u32::try_from(rustix::process::getpgrp().as_raw_nonzero().get()).ok();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        // Processes come and go while we scan: a vanished one is skipped.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((parent, group)) = parent_and_group(&stat)
            && parent == own
            && Some(group) != own_group
        {
            found.push(pid);
        }
    }
    found
}

/// The parent pid and process group in a `/proc/<pid>/stat` line. The
/// command name (in parentheses) may hold spaces and parentheses, so
/// parsing starts after its last `)`.
fn parent_and_group(stat: &str) -> Option<(u32, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((parent, group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_after_the_command_name() {
        assert_eq!(parent_and_group("42 (a) b) c) S 7 40 42 0"), Some((7, 40)));
        assert_eq!(parent_and_group("42 (sleep) S 1 42 42"), Some((1, 42)));
        assert_eq!(parent_and_group("garbage"), None);
    }

    #[test]
    fn the_mark_is_found_among_the_variables() {
        let environ = b"PATH=/bin\0SANDBOX_CALL=7-1-00ff\0HOME=/x\0";
        assert_eq!(mark_in(environ).as_deref(), Some("7-1-00ff"));
        assert_eq!(mark_in(b"SANDBOX_CALLX=1\0PATH=/bin"), None);
        assert_eq!(mark_in(b""), None);
        assert_ne!(new_mark(), new_mark());
    }
}
