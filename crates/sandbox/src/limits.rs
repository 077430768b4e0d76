//! Resource limits applied in the child between `fork` and `exec`.
//!
//! This is the only module that needs `unsafe`: `pre_exec` is the one hook std offers
//! to run code in the forked child, and joining the call's memory cgroup, `setrlimit`
//! and `no_new_privs` must happen there so they are in force before the first
//! instruction of the untrusted program (or of `bwrap`) runs.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::time::Duration;

use rustix::process::{Resource, Rlimit, setrlimit};

/// Limits for one child, computed in the parent so the child only makes syscalls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) address_space: Option<u64>,
    pub(crate) cpu_seconds: Option<u64>,
    pub(crate) file_size: Option<u64>,
    /// Absolute RLIMIT_NPROC value (already includes the user's existing tasks).
    pub(crate) processes: Option<u64>,
    /// Set `no_new_privs`: no setuid binary or file capability gives the
    /// code more than it started with. Process mode only: a setuid
    /// bubblewrap needs its privileges to build the namespaces.
    pub(crate) no_new_privs: bool,
    /// The `cgroup.procs` of each of the call's cgroups (memory, pids: one per
    /// hierarchy), opened by the parent (`cgroup.rs`), which keeps them open until
    /// the spawn returns. The child writes `0` to each to move itself in.
    pub(crate) cgroup_procs: [Option<RawFd>; 2],
}

impl Limits {
    pub(crate) fn cpu_seconds_for(limit: Duration) -> u64 {
        // RLIMIT_CPU has whole-second granularity; round up so a 1.5 s budget is not
        // silently cut to 1 s, and never ask for 0 (which would kill at once).
        let secs = limit.as_secs() + u64::from(limit.subsec_nanos() > 0);
        secs.max(1)
    }

    fn apply_in_child(&self) -> io::Result<()> {
        // First, so that everything the child does from here on, and every process
        // it starts, is charged to the call's cgroup. A failure fails the spawn: the
        // caller asked for a total cap and would otherwise run without one.
        for fd in self.cgroup_procs.into_iter().flatten() {
            join_cgroup(fd)?;
        }
        set(Resource::Core, Some(0), 0)?;
        set(Resource::As, self.address_space, 0)?;
        // The soft CPU limit sends SIGXCPU (which a program may catch to report),
        // the hard one a second later SIGKILL; equal limits would skip the SIGXCPU.
        set(Resource::Cpu, self.cpu_seconds, CPU_HARD_MARGIN_SECS)?;
        set(Resource::Fsize, self.file_size, 0)?;
        set(Resource::Nproc, self.processes, 0)?;
        if self.no_new_privs {
            rustix::thread::set_no_new_privs(true)
                .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))?;
        }
        Ok(())
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open as `fd`.
fn join_cgroup(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` was opened by the parent before the fork and is kept open there
    // until the spawn returns, so the forked child inherited it and it is open here.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // "0" means the writing process itself.
    match rustix::io::write(fd, b"0") {
        Ok(1) => Ok(()),
        Ok(_) => Err(io::Error::from_raw_os_error(
            rustix::io::Errno::IO.raw_os_error(),
        )),
        Err(e) => Err(io::Error::from_raw_os_error(e.raw_os_error())),
    }
}

/// Seconds between the soft and the hard CPU limit.
const CPU_HARD_MARGIN_SECS: u64 = 1;

fn set(resource: Resource, value: Option<u64>, hard_margin: u64) -> io::Result<()> {
    let Some(value) = value else {
        return Ok(());
    };
    // The hard limit is set too, so the code cannot raise the soft one again.
    setrlimit(
        resource,
        Rlimit {
            current: Some(value),
            maximum: Some(value.saturating_add(hard_margin)),
        },
    )
    .map_err(|e| io::Error::from_raw_os_error(e.raw_os_error()))
}

/// Arranges for `limits` to be set in the child right before it execs.
pub(crate) fn install(command: &mut tokio::process::Command, limits: Limits) {
    // SAFETY: the closure runs in the forked child of a possibly multi-threaded parent,
    // where only async-signal-safe operations are allowed. It captures a `Copy` value,
    // allocates nothing and only issues raw `write` (of a static buffer), `setrlimit` and
    // `prctl` syscalls (rustix's linux_raw backend); errors are built with
    // `from_raw_os_error`, which does not allocate.
    unsafe {
        command.pre_exec(move || limits.apply_in_child());
    }
}

/// Number of tasks (processes and threads) whose real user id is `uid`, which is what
/// the kernel compares against RLIMIT_NPROC.
pub(crate) fn tasks_of_user(uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut total = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Processes come and go while we scan; a vanished one simply does not count.
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let mut real_uid = None;
        let mut threads = 1u64;
        for line in status.lines() {
            if let Some(rest) = line.strip_prefix("Uid:") {
                real_uid = rest.split_whitespace().next().and_then(|v| v.parse().ok());
            } else if let Some(rest) = line.strip_prefix("Threads:") {
                threads = rest.trim().parse().unwrap_or(1);
            }
        }
        if real_uid == Some(uid) {
            total += threads;
        }
    }
    total
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_round_up_and_never_reach_zero() {
        assert_eq!(Limits::cpu_seconds_for(Duration::from_millis(1500)), 2);
        assert_eq!(Limits::cpu_seconds_for(Duration::from_secs(3)), 3);
        assert_eq!(Limits::cpu_seconds_for(Duration::ZERO), 1);
    }

    #[test]
    fn the_current_user_owns_at_least_this_process() {
        let uid = rustix::process::getuid().as_raw();
        assert!(tasks_of_user(uid) >= 1);
    }
}
