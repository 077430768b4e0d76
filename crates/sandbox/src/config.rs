use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Result, SandboxError};
use crate::output::{OutputCallback, OutputChunk};

/// How strongly the code is isolated from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Isolation {
    /// Use [`Isolation::Namespaces`] when `bwrap` is installed and the kernel lets it
    /// create namespaces, [`Isolation::Process`] otherwise.
    #[default]
    Auto,
    /// A plain child process in its own process group with `setrlimit` limits. It sees
    /// the whole file system and the network as the sandbox user does; only the
    /// resource limits, `no_new_privs`, the clean environment, the group kill and the
    /// kill of descendants that left the group protect the machine.
    Process,
    /// A `bwrap` (bubblewrap) container: read-only system directories, writable working
    /// directory and private `/tmp`, no home directory, own PID namespace and, unless
    /// enabled, no network. The resource limits of `Process` apply as well.
    Namespaces,
}

impl fmt::Display for Isolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Process => "process",
            Self::Namespaces => "namespaces",
        })
    }
}

/// A numeric user and group the sandboxed code runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

impl RunAs {
    /// The conventional unprivileged `nobody`/`nogroup` identity (65534).
    pub const NOBODY: Self = Self {
        uid: 65534,
        gid: 65534,
    };
}

/// Default wall-clock limit for one command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time between SIGTERM and SIGKILL when a command is stopped.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);
/// Default memory limit (per-process RLIMIT_AS, and total per call where cgroups allow): 4 GiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;
/// Default number of extra processes (and threads) the code may create.
pub const DEFAULT_MAX_PROCESSES: u64 = 256;
/// Default largest file the code may write (RLIMIT_FSIZE): 1 GiB.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 1 << 30;
/// Default disk budget of one call: 8 GiB (see
/// [`SandboxConfigBuilder::disk_limit`]).
pub const DEFAULT_DISK_LIMIT: u64 = 8 << 30;
/// Default number of bytes kept per output stream (half head, half tail).
pub const DEFAULT_OUTPUT_LIMIT: usize = 256 * 1024;
/// Default `PATH` inside the sandbox.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Everything a [`Sandbox`](crate::Sandbox) needs to know; build it with
/// [`SandboxConfig::builder`].
#[derive(Clone)]
pub struct SandboxConfig {
    pub(crate) working_dir: PathBuf,
    pub(crate) isolation: Isolation,
    pub(crate) read_only_paths: Vec<PathBuf>,
    pub(crate) read_write_paths: Vec<PathBuf>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) timeout: Duration,
    pub(crate) kill_grace: Duration,
    pub(crate) memory_limit: Option<u64>,
    pub(crate) cpu_time_limit: Option<Duration>,
    pub(crate) max_processes: Option<u64>,
    pub(crate) max_file_size: Option<u64>,
    pub(crate) disk_limit: Option<u64>,
    pub(crate) output_limit: usize,
    pub(crate) network: bool,
    pub(crate) package_registry: bool,
    pub(crate) pip_cache_dir: Option<PathBuf>,
    pub(crate) python: OsString,
    pub(crate) bwrap: OsString,
    pub(crate) run_as: Option<RunAs>,
    pub(crate) on_output: Option<OutputCallback>,
}

impl fmt::Debug for SandboxConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Environment values may be secrets the caller chose to pass in; list names only.
        let env_names: Vec<_> = self.env.iter().map(|(k, _)| k).collect();
        f.debug_struct("SandboxConfig")
            .field("working_dir", &self.working_dir)
            .field("isolation", &self.isolation)
            .field("read_only_paths", &self.read_only_paths)
            .field("read_write_paths", &self.read_write_paths)
            .field("env", &env_names)
            .field("timeout", &self.timeout)
            .field("kill_grace", &self.kill_grace)
            .field("memory_limit", &self.memory_limit)
            .field("cpu_time_limit", &self.cpu_time_limit)
            .field("max_processes", &self.max_processes)
            .field("max_file_size", &self.max_file_size)
            .field("disk_limit", &self.disk_limit)
            .field("output_limit", &self.output_limit)
            .field("network", &self.network)
            .field("package_registry", &self.package_registry)
            .field("pip_cache_dir", &self.pip_cache_dir)
            .field("python", &self.python)
            .field("bwrap", &self.bwrap)
            .field("run_as", &self.run_as)
            .field("on_output", &self.on_output.is_some())
            .finish()
    }
}

impl SandboxConfig {
    /// Starts a configuration for code that works in `working_dir`, with the defaults
    /// listed on each [`SandboxConfigBuilder`] method.
    pub fn builder(working_dir: impl Into<PathBuf>) -> SandboxConfigBuilder {
        SandboxConfigBuilder {
            working_dir: working_dir.into(),
            isolation: Isolation::Auto,
            read_only_paths: Vec::new(),
            read_write_paths: Vec::new(),
            env: Vec::new(),
            pass_env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            kill_grace: DEFAULT_KILL_GRACE,
            memory_limit: Some(DEFAULT_MEMORY_LIMIT),
            cpu_time_limit: None,
            max_processes: Some(DEFAULT_MAX_PROCESSES),
            max_file_size: Some(DEFAULT_MAX_FILE_SIZE),
            disk_limit: Some(DEFAULT_DISK_LIMIT),
            output_limit: DEFAULT_OUTPUT_LIMIT,
            network: false,
            package_registry: false,
            pip_cache_dir: None,
            python: OsString::from("python3"),
            bwrap: OsString::from("bwrap"),
            run_as: None,
            on_output: None,
        }
    }

    /// The canonical working directory.
    pub fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// The isolation level that was asked for (see
    /// [`Sandbox::isolation`](crate::Sandbox::isolation) for the one in effect).
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Wall-clock limit for one command.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Bytes kept per output stream.
    pub fn output_limit(&self) -> usize {
        self.output_limit
    }

    /// Whether general network access is allowed.
    pub fn network(&self) -> bool {
        self.network
    }

    /// Whether `pip install` may reach the package registry.
    pub fn package_registry(&self) -> bool {
        self.package_registry
    }

    /// The pip cache chosen with
    /// [`SandboxConfigBuilder::pip_cache_dir`], if any (otherwise each sandbox
    /// has a private one in its home).
    pub fn pip_cache_dir(&self) -> Option<&Path> {
        self.pip_cache_dir.as_deref()
    }

    /// The memory limit in bytes: per process (address space) and, where a cgroup is
    /// available, for the total of a call's processes.
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory_limit
    }

    /// The extra process/thread allowance.
    pub fn max_processes(&self) -> Option<u64> {
        self.max_processes
    }

    /// The identity the code should run as, as configured (see
    /// [`Sandbox::run_as`](crate::Sandbox::run_as) for the one in effect: a root
    /// caller's code runs as nobody when none is configured).
    pub fn run_as(&self) -> Option<RunAs> {
        self.run_as
    }
}

/// Chainable construction of a [`SandboxConfig`]; finish with [`build`](Self::build).
pub struct SandboxConfigBuilder {
    working_dir: PathBuf,
    isolation: Isolation,
    read_only_paths: Vec<PathBuf>,
    read_write_paths: Vec<PathBuf>,
    env: Vec<(OsString, OsString)>,
    pass_env: Vec<OsString>,
    timeout: Duration,
    kill_grace: Duration,
    memory_limit: Option<u64>,
    cpu_time_limit: Option<Duration>,
    max_processes: Option<u64>,
    max_file_size: Option<u64>,
    disk_limit: Option<u64>,
    output_limit: usize,
    network: bool,
    package_registry: bool,
    pip_cache_dir: Option<PathBuf>,
    python: OsString,
    bwrap: OsString,
    run_as: Option<RunAs>,
    on_output: Option<OutputCallback>,
}

impl fmt::Debug for SandboxConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxConfigBuilder")
            .field("working_dir", &self.working_dir)
            .field("isolation", &self.isolation)
            .finish_non_exhaustive()
    }
}

impl SandboxConfigBuilder {
    /// Isolation level. Default: [`Isolation::Auto`].
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// Makes `path` visible read-only inside the sandbox (namespaces mode; in process
    /// mode everything the user can read is visible anyway). Default: none.
    pub fn read_only_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only_paths.push(path.into());
        self
    }

    /// Makes `path` writable inside the sandbox, in addition to the working directory.
    /// Default: none.
    pub fn read_write_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_write_paths.push(path.into());
        self
    }

    /// Sets an environment variable for the code. The environment starts clean: only
    /// `PATH` (see [`DEFAULT_PATH`]), `HOME` (a private scratch directory), `LANG=C.UTF-8`
    /// and what is set here or passed with [`pass_env`](Self::pass_env) reach the code.
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Passes the caller's value of `name` through, if it is set. Default: nothing is
    /// passed, so keys such as `OPENAI_API_KEY` never reach the code.
    pub fn pass_env(mut self, name: impl Into<OsString>) -> Self {
        self.pass_env.push(name.into());
        self
    }

    /// Wall-clock limit per command; the whole process tree is killed when it expires.
    /// Default: [`DEFAULT_TIMEOUT`] (60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Time between SIGTERM and SIGKILL when a command is stopped. Default:
    /// [`DEFAULT_KILL_GRACE`] (2 s).
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.kill_grace = grace;
        self
    }

    /// Memory limit in bytes. `None` disables it. Default: [`DEFAULT_MEMORY_LIMIT`]
    /// (4 GiB).
    ///
    /// It is applied twice. Always as each process's address-space limit (RLIMIT_AS:
    /// an allocation past it fails). And, where the kernel lets the sandbox make a
    /// memory cgroup per call, as a cap on the *total* memory charged to all of the
    /// call's processes together (resident memory, page cache and tmpfs files; when it
    /// is reached the kernel's OOM killer kills the call's largest process, or the
    /// whole call on cgroup v2), so that forking does not multiply it. One number serves both because a process's resident memory
    /// never exceeds its address space: a lone process usually meets RLIMIT_AS first
    /// (with an error it can report), and the cgroup adds the bound on the sum.
    /// [`Sandbox::memory_cap`](crate::Sandbox::memory_cap) tells which applies.
    pub fn memory_limit(mut self, bytes: impl Into<Option<u64>>) -> Self {
        self.memory_limit = bytes.into();
        self
    }

    /// CPU-time limit (RLIMIT_CPU, whole seconds, rounded up), per process; the process
    /// gets SIGXCPU when it is reached. Default: none (the wall-clock timeout bounds it).
    pub fn cpu_time_limit(mut self, limit: impl Into<Option<Duration>>) -> Self {
        self.cpu_time_limit = limit.into();
        self
    }

    /// How many processes and threads the code may create on top of those its user
    /// already has (RLIMIT_NPROC counts per user). `None` disables it. Default:
    /// [`DEFAULT_MAX_PROCESSES`] (256).
    ///
    /// Linux does not enforce this limit for root, so when the caller is root the code
    /// must run as another user ([`run_as`](Self::run_as)) for it to bite;
    /// [`Sandbox::process_limit_enforced`](crate::Sandbox::process_limit_enforced) tells.
    pub fn max_processes(mut self, count: impl Into<Option<u64>>) -> Self {
        self.max_processes = count.into();
        self
    }

    /// Largest file the code may write, in bytes (RLIMIT_FSIZE). `None` disables it.
    /// Default: [`DEFAULT_MAX_FILE_SIZE`] (1 GiB).
    pub fn max_file_size(mut self, bytes: impl Into<Option<u64>>) -> Self {
        self.max_file_size = bytes.into();
        self
    }

    /// Disk budget of one call, in bytes. `None` disables it. Default:
    /// [`DEFAULT_DISK_LIMIT`] (8 GiB).
    ///
    /// In namespace isolation the private `/tmp`, `/var/tmp` and `/dev/shm` are
    /// tmpfs mounts of at most this size (and the memory limit, since their pages
    /// are memory charged to the call's cgroup). What the code writes elsewhere
    /// (the working directory, the read-write paths, its home, and in process
    /// isolation also the host's `/tmp`, `/var/tmp` and `/dev/shm`) is watched: a
    /// call that grows one of those file systems by more than the budget is
    /// stopped, and [`ExecResult::killed_for_disk`](crate::ExecResult::killed_for_disk)
    /// says so. The watch reads the file system's use every 100 ms, so it counts
    /// other writers too and a fast writer overshoots by up to what it writes in
    /// that time; per file, [`max_file_size`](Self::max_file_size) holds exactly.
    pub fn disk_limit(mut self, bytes: impl Into<Option<u64>>) -> Self {
        self.disk_limit = bytes.into();
        self
    }

    /// Bytes of output kept per stream (half from the start, half from the end).
    /// Default: [`DEFAULT_OUTPUT_LIMIT`] (256 KiB).
    pub fn output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes;
        self
    }

    /// Allows general network access (namespaces mode; process mode cannot block the
    /// network). Without it only a private loopback interface exists. Default: off.
    pub fn network(mut self, enabled: bool) -> Self {
        self.network = enabled;
        self
    }

    /// Lets `pip install` reach the package registry, independently of
    /// [`network`](Self::network). Without it pip runs with `--no-index` and can only
    /// install local files. Default: off.
    pub fn package_registry(mut self, enabled: bool) -> Self {
        self.package_registry = enabled;
        self
    }

    /// Where pip caches downloads and built wheels. Default: a private directory in
    /// the sandbox's home, gone with the sandbox.
    ///
    /// The code can write the cache (pip runs in the sandbox, and so do the
    /// `setup.py` scripts it builds), so a cache shared with another task is a cache
    /// that task's code could have poisoned: share one only between sandboxes whose
    /// code is equally trusted. The code's user is given write access to it for the
    /// sandbox's life, like a read-write path.
    pub fn pip_cache_dir(mut self, dir: impl Into<Option<PathBuf>>) -> Self {
        self.pip_cache_dir = dir.into();
        self
    }

    /// Python interpreter used by `run_python` and to create virtualenvs, looked up on
    /// the caller's `PATH`. Default: `python3`.
    pub fn python(mut self, interpreter: impl Into<OsString>) -> Self {
        self.python = interpreter.into();
        self
    }

    /// The bubblewrap program, looked up on the caller's `PATH`. Default: `bwrap`.
    pub fn bwrap_program(mut self, program: impl Into<OsString>) -> Self {
        self.bwrap = program.into();
        self
    }

    /// Runs the code as another user and group (requires the caller to be root).
    /// Default: the caller's identity, except for a root caller, whose code runs as
    /// [`RunAs::NOBODY`]: untrusted code never runs as root (uid or gid 0 is refused).
    ///
    /// The user gets write access to the working directory and the read-write paths
    /// through POSIX ACLs for the sandbox's life. In namespace isolation the
    /// directories on the way to the task are the container's own, open to it; in
    /// process isolation the way on the host must be open to it.
    pub fn run_as(mut self, identity: impl Into<Option<RunAs>>) -> Self {
        self.run_as = identity.into();
        self
    }

    /// Receives every chunk of output as it is read, for live progress. Default: none.
    pub fn on_output(mut self, callback: impl Fn(OutputChunk<'_>) + Send + Sync + 'static) -> Self {
        self.on_output = Some(Arc::new(callback));
        self
    }

    /// Checks the configuration and resolves its paths.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Path`] when the working directory or an extra path does not
    /// exist, [`SandboxError::InvalidConfig`] for an unusable value.
    pub fn build(self) -> Result<SandboxConfig> {
        let working_dir = canonical("working directory", &self.working_dir)?;
        if !working_dir.is_dir() {
            return Err(SandboxError::InvalidConfig(format!(
                "working directory `{}` is not a directory",
                working_dir.display()
            )));
        }
        let read_only_paths = self
            .read_only_paths
            .iter()
            .map(|p| canonical("read-only path", p))
            .collect::<Result<Vec<_>>>()?;
        let read_write_paths = self
            .read_write_paths
            .iter()
            .map(|p| canonical("read-write path", p))
            .collect::<Result<Vec<_>>>()?;
        if self.output_limit < 2 {
            return Err(SandboxError::InvalidConfig(
                "output_limit must be at least 2 bytes (one for the head, one for the tail)"
                    .to_owned(),
            ));
        }
        if self.timeout.is_zero() {
            return Err(SandboxError::InvalidConfig(
                "timeout must be greater than zero".to_owned(),
            ));
        }
        if self.max_processes == Some(0) {
            return Err(SandboxError::InvalidConfig(
                "max_processes must be at least 1 (the command itself), or None".to_owned(),
            ));
        }
        if let Some(pip_cache) = &self.pip_cache_dir
            && !pip_cache.is_absolute()
        {
            return Err(SandboxError::InvalidConfig(format!(
                "pip_cache_dir `{}` must be an absolute path",
                pip_cache.display()
            )));
        }
        let mut env = self.env;
        for name in self.pass_env {
            if let Some(value) = std::env::var_os(&name) {
                env.push((name, value));
            }
        }
        for (name, value) in &env {
            check_env_entry(name, value)?;
        }
        Ok(SandboxConfig {
            working_dir,
            isolation: self.isolation,
            read_only_paths,
            read_write_paths,
            env,
            timeout: self.timeout,
            kill_grace: self.kill_grace,
            memory_limit: self.memory_limit,
            cpu_time_limit: self.cpu_time_limit,
            max_processes: self.max_processes,
            max_file_size: self.max_file_size,
            disk_limit: self.disk_limit,
            output_limit: self.output_limit,
            network: self.network,
            package_registry: self.package_registry,
            pip_cache_dir: self.pip_cache_dir,
            python: self.python,
            bwrap: self.bwrap,
            run_as: self.run_as,
            on_output: self.on_output,
        })
    }
}

fn canonical(what: &'static str, path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|source| SandboxError::Path {
        what,
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn check_env_entry(name: &OsStr, value: &OsStr) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bad_name = name.is_empty() || name.as_bytes().iter().any(|b| *b == b'=' || *b == 0);
    if bad_name || value.as_bytes().contains(&0) {
        return Err(SandboxError::InvalidConfig(format!(
            "environment variable {name:?} has an empty name or contains `=` or NUL"
        )));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn build_rejects_a_missing_working_directory_with_a_helpful_message() {
        let err = SandboxConfig::builder("/definitely/not/here")
            .build()
            .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("working directory"), "{msg}");
        assert!(msg.contains("/definitely/not/here"), "{msg}");
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let cfg = SandboxConfig::builder("/").build().unwrap();
        assert_eq!(cfg.timeout, DEFAULT_TIMEOUT);
        assert_eq!(cfg.memory_limit, Some(DEFAULT_MEMORY_LIMIT));
        assert_eq!(cfg.max_processes, Some(DEFAULT_MAX_PROCESSES));
        assert_eq!(cfg.output_limit, DEFAULT_OUTPUT_LIMIT);
        assert!(!cfg.network);
        assert!(!cfg.package_registry);
        assert!(cfg.env.is_empty());
        assert_eq!(cfg.isolation, Isolation::Auto);
    }

    #[test]
    fn env_entries_with_equals_sign_are_rejected() {
        let err = SandboxConfig::builder("/")
            .env("A=B", "c")
            .build()
            .unwrap_err();
        assert!(matches!(err, SandboxError::InvalidConfig(_)), "{err}");
    }

    #[test]
    fn debug_output_does_not_leak_environment_values() {
        let cfg = SandboxConfig::builder("/")
            .env("TOKEN", "s3cr3t-value")
            .build()
            .unwrap();
        let dbg = format!("{cfg:?}");
        assert!(dbg.contains("TOKEN"));
        assert!(!dbg.contains("s3cr3t-value"));
    }
}
