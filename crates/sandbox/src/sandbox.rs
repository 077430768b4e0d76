use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;

use crate::access;
use crate::bwrap::{self, UserSwitch};
use crate::cgroup::{self, Cgroups, MemoryCap, ProcessCap};
use crate::command::Command;
use crate::config::{DEFAULT_PATH, Isolation, RunAs, SandboxConfig};
use crate::error::{Result, SandboxError};
use crate::hygiene;
use crate::limits::{self, Limits};
use crate::python::{self, PythonEnv, PythonInfo, PythonScript};
use crate::registry;
use crate::runner::{self, ExecResult, Spec};
use crate::session::ShellSession;

/// Tasks `bwrap` itself keeps alive (its monitor and the namespace's init), which
/// count against RLIMIT_NPROC like the code's own processes.
const BWRAP_TASKS: u64 = 2;

/// The program that drops from root to the code's user inside a container
/// (util-linux).
const SETPRIV: &str = "setpriv";

/// How long the namespace probe may take before it counts as a failure.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs commands under one [`SandboxConfig`].
///
/// Cheap to clone (clones share the configuration and the private home directory) and
/// safe to use from several tasks at once; each call runs in a fresh process tree.
#[derive(Clone, Debug)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: SandboxConfig,
    isolation: Isolation,
    bwrap: Option<PathBuf>,
    python: std::result::Result<PythonInfo, String>,
    /// Private `HOME` for the code, removed when the last clone is dropped.
    home: TempDir,
    /// The user the code runs as when it is not the caller's own. Always set when
    /// the caller is root: untrusted code never runs as uid 0.
    run_as: Option<RunAs>,
    /// Real uid the code runs as, which is what RLIMIT_NPROC counts against.
    child_uid: u32,
    /// Where calls' memory and pids cgroups go, found once here.
    cgroups: Cgroups,
    /// How the container becomes the code's user (namespaces mode); the error
    /// says why it cannot when the caller is root and `setpriv` is missing.
    switch: std::result::Result<UserSwitch, String>,
    /// Write access granted to `run_as` on the working directory and the
    /// read-write paths, taken back when the sandbox goes.
    grants: Vec<access::Granted>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        hygiene::home_gone(self.home.path());
    }
}

/// Per-call extras that only the crate's own helpers use.
#[derive(Debug, Default)]
pub(crate) struct Extra {
    pub(crate) network: Option<bool>,
    pub(crate) read_write: Vec<PathBuf>,
    /// Bytes kept per output stream, replacing the configured limit (the
    /// service supervisor's report must arrive whole).
    pub(crate) output_limit: Option<usize>,
}

impl Sandbox {
    /// Prepares a sandbox: settles who the code runs as, picks the isolation level
    /// (probing `bwrap` for `Auto` and `Namespaces`), creates the private home
    /// directory and locates Python.
    ///
    /// When the caller is root the code runs as [`run_as`](crate::SandboxConfigBuilder::run_as),
    /// by default [`RunAs::NOBODY`], in either isolation mode; it never runs as root.
    ///
    /// # Errors
    ///
    /// [`SandboxError::BwrapMissing`] or [`SandboxError::NamespacesUnavailable`] when
    /// `Namespaces` was asked for and cannot be had, [`SandboxError::InvalidConfig`]
    /// when `run_as` is root, or another user without the caller being root, or when
    /// the code's user cannot reach the working directory in process isolation,
    /// [`SandboxError::Io`] when the home directory cannot be created.
    pub async fn new(config: SandboxConfig) -> Result<Self> {
        let caller_uid = rustix::process::geteuid().as_raw();
        let run_as = code_user(caller_uid, config.run_as)?;
        let child_uid = run_as.map_or_else(|| rustix::process::getuid().as_raw(), |r| r.uid);

        let home = make_home(run_as)?;
        let cgroups = cgroup::detect();
        let switch = match run_as {
            Some(user) => match bwrap::find_program(OsStr::new(SETPRIV)) {
                Some(setpriv) if bwrap::is_under_system_dirs(&setpriv) => {
                    Ok(UserSwitch::ToUser { setpriv, user })
                }
                found => Err(format!(
                    "running code as uid {} in a container needs `{SETPRIV}` (util-linux) in \
                     the system directories; found {found:?}",
                    user.uid
                )),
            },
            None => Ok(UserSwitch::Unprivileged),
        };
        let mut inner = Inner {
            config,
            isolation: Isolation::Process,
            bwrap: None,
            python: Err("not resolved yet".to_owned()),
            home,
            run_as,
            child_uid,
            cgroups,
            switch,
            grants: Vec::new(),
        };
        // Resolved once without the code's user in mind, for the probe to mount;
        // in process isolation the user's reach decides again below.
        inner.python = python::resolve(&inner.config.python).await;
        let requested = inner.config.isolation;
        if requested != Isolation::Process {
            match probe(&mut inner).await {
                Ok(()) => inner.isolation = Isolation::Namespaces,
                Err(e) if requested == Isolation::Namespaces => return Err(e),
                Err(e) => tracing::warn!(
                    reason = %e,
                    "namespace isolation unavailable; falling back to process isolation"
                ),
            }
        }
        if inner.isolation == Isolation::Process {
            let found = std::mem::replace(&mut inner.python, Err(String::new()));
            inner.python = python::resolve_for(&inner.config.python, found, run_as).await;
        }
        if let Err(reason) = &inner.python {
            tracing::debug!(%reason, "no Python interpreter; run_python will fail");
        }
        if let Some(identity) = run_as {
            inner.grants = open_to(&inner.config, identity, inner.isolation)?;
        }

        if inner.isolation == Isolation::Process {
            let tmp = inner.home.path().join("tmp");
            std::fs::create_dir_all(&tmp)
                .and_then(|()| match run_as {
                    Some(user) => std::os::unix::fs::lchown(&tmp, Some(user.uid), Some(user.gid)),
                    None => Ok(()),
                })
                .map_err(|e| SandboxError::io("creating the code's temporary directory", e))?;
        }
        if inner.isolation == Isolation::Process {
            // Descendants that leave their call's process group come back
            // here to be killed (`reaper.rs`); namespaces have a PID
            // namespace for that.
            crate::reaper::enable();
        }
        if inner.isolation == Isolation::Process && !inner.config.network {
            tracing::warn!(
                "process isolation cannot block network access; the code will have the \
                 caller's network (use bwrap/namespaces isolation to cut it off)"
            );
        }
        let sandbox = Self {
            inner: Arc::new(inner),
        };
        if let ProcessCap::NotEnforced { reason } = sandbox.process_cap() {
            tracing::warn!("max_processes is not enforced: {reason}");
        }
        tracing::debug!(
            isolation = %sandbox.isolation(),
            memory = %sandbox.memory_cap(),
            processes = %sandbox.process_cap(),
            run_as = ?sandbox.inner.run_as,
            "sandbox ready"
        );
        Ok(sandbox)
    }

    /// The isolation level in effect (never `Auto`).
    pub fn isolation(&self) -> Isolation {
        self.inner.isolation
    }

    /// The configuration this sandbox was made from.
    pub fn config(&self) -> &SandboxConfig {
        &self.inner.config
    }

    /// The code's private `HOME`, which persists across calls on this sandbox and is
    /// deleted with it.
    pub fn home_dir(&self) -> &Path {
        self.inner.home.path()
    }

    /// Whether `max_processes` is really enforced: it is set, and a pids cgroup caps
    /// each call, or the code does not run as root (the kernel never applies
    /// RLIMIT_NPROC to root).
    pub fn process_limit_enforced(&self) -> bool {
        !matches!(
            self.process_cap(),
            ProcessCap::NotEnforced { .. } | ProcessCap::Unlimited
        )
    }

    /// How [`max_processes`](crate::SandboxConfigBuilder::max_processes) holds the
    /// tasks (processes and threads) of one call.
    pub fn process_cap(&self) -> ProcessCap {
        if self.inner.config.max_processes.is_none() {
            return ProcessCap::Unlimited;
        }
        match self.inner.cgroups.pids_reason() {
            Ok(cgroup::Version::V2) => ProcessCap::CgroupV2,
            Ok(cgroup::Version::V1) => ProcessCap::CgroupV1,
            Err(reason) if self.inner.child_uid != 0 => ProcessCap::PerUser {
                uid: self.inner.child_uid,
                reason,
            },
            Err(reason) => ProcessCap::NotEnforced {
                reason: format!(
                    "no pids cgroup ({reason}), and the code runs as root, for which Linux \
                     ignores RLIMIT_NPROC"
                ),
            },
        }
    }

    /// The user the code runs as when it is not the caller's own (always set when the
    /// caller is root).
    pub fn run_as(&self) -> Option<RunAs> {
        self.inner.run_as
    }

    /// How the memory limit holds the processes of one call, in either isolation mode.
    ///
    /// With a cgroup ([`MemoryCap::TotalViaCgroupV2`] or [`MemoryCap::TotalViaCgroupV1`])
    /// the configured [`memory_limit`](crate::SandboxConfigBuilder::memory_limit) is
    /// also a cap on the total memory charged to all of a call's processes together
    /// (resident memory, page cache, files in a private `/tmp`): when it is reached the
    /// kernel's OOM killer kills the whole call (v2) or its largest process (v1). [`MemoryCap::PerProcessOnly`] says why no
    /// cgroup could be used: then each process may use the limit on its own, and a
    /// call that starts several can use more in total.
    pub fn memory_cap(&self) -> MemoryCap {
        if self.inner.config.memory_limit.is_none() {
            return MemoryCap::Unlimited;
        }
        self.inner.cgroups.memory_cap()
    }

    /// Runs `command` and waits for it (or for its timeout).
    ///
    /// # Errors
    ///
    /// Only when the sandbox could not run the command at all (see [`SandboxError`]);
    /// a failing program is reported through the [`ExecResult`].
    pub async fn exec(&self, command: Command) -> Result<ExecResult> {
        self.exec_with(command, Extra::default()).await
    }

    /// Runs a `bash` script (`bash -c script`; `sh` when bash is not installed).
    ///
    /// # Errors
    ///
    /// As for [`exec`](Self::exec).
    pub async fn run_shell(&self, script: &str) -> Result<ExecResult> {
        self.exec(Command::new(shell_program()).arg("-c").arg(script))
            .await
    }

    /// Runs Python code or a script file with the configured interpreter.
    ///
    /// # Errors
    ///
    /// [`SandboxError::PythonUnavailable`] when no interpreter was found,
    /// [`SandboxError::CodeTooLarge`] for oversized inline code, otherwise as for
    /// [`exec`](Self::exec).
    pub async fn run_python<S: AsRef<OsStr>>(
        &self,
        script: PythonScript,
        args: &[S],
    ) -> Result<ExecResult> {
        let info = self.python_info()?;
        let command = Command::new(&info.executable)
            .args(script.interpreter_args()?)
            .args(args)
            .env("PYTHONUNBUFFERED", "1");
        self.exec(command).await
    }

    /// Runs Python code or a script file with the interpreter of virtualenv `env`.
    ///
    /// # Errors
    ///
    /// As for [`run_python`](Self::run_python).
    pub async fn run_python_in<S: AsRef<OsStr>>(
        &self,
        env: &PythonEnv,
        script: PythonScript,
        args: &[S],
    ) -> Result<ExecResult> {
        let command = self
            .venv_command(env)
            .args(script.interpreter_args()?)
            .args(args);
        self.exec(command).await
    }

    /// Creates a virtualenv at `dir` with `python -m venv` (pip included, from the
    /// interpreter's bundled wheel, so no network is needed). `dir` must be writable in
    /// the sandbox: inside the working directory, a read-write path or
    /// [`home_dir`](Self::home_dir).
    ///
    /// # Errors
    ///
    /// [`SandboxError::PythonUnavailable`] without an interpreter,
    /// [`SandboxError::VenvFailed`] when `venv` fails.
    pub async fn create_venv(&self, dir: impl AsRef<Path>) -> Result<PythonEnv> {
        let info = self.python_info()?;
        let dir = self.absolute(dir.as_ref());
        let result = self
            .exec(Command::new(&info.executable).args([
                OsStr::new("-m"),
                OsStr::new("venv"),
                dir.as_os_str(),
            ]))
            .await?;
        let env = PythonEnv { dir };
        if !result.success() || std::fs::symlink_metadata(env.python()).is_err() {
            return Err(SandboxError::VenvFailed {
                path: env.dir,
                status: result.status_summary(),
                output: result.combined_output(),
            });
        }
        tracing::info!(dir = %env.dir.display(), "created virtualenv");
        Ok(env)
    }

    /// Runs `pip ARGS` in virtualenv `env` (for example `["list"]` or
    /// `["cache", "dir"]`) and returns how it went, successful or not.
    ///
    /// pip gets network access exactly when
    /// [`package_registry`](crate::SandboxConfigBuilder::package_registry) is on,
    /// regardless of the general network switch. The shared pip cache is writable and
    /// announced to pip through `PIP_CACHE_DIR`.
    ///
    /// # Errors
    ///
    /// As for [`exec`](Self::exec).
    pub async fn pip<S: AsRef<OsStr>>(&self, env: &PythonEnv, args: &[S]) -> Result<ExecResult> {
        let command = self
            .venv_command(env)
            .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
            .args(args);
        self.installer(env, command, "PIP_CACHE_DIR", self.pip_cache())
            .await
    }

    /// Runs `uv pip install ARGS` into virtualenv `env` with the `uv`
    /// binary at `uv` (the `uv` wheel from PyPI: a resolver and installer
    /// written in Rust that downloads in parallel), with the same network
    /// rule as [`pip`](Self::pip): the registry only, and only when
    /// [`package_registry`](crate::SandboxConfigBuilder::package_registry)
    /// is on (else `--no-index`). Its cache sits beside pip's
    /// (`UV_CACHE_DIR`); no uv configuration file is read (`UV_NO_CONFIG`:
    /// a repository's `uv.toml` must not choose the index); certificates
    /// come from the system's store, as pip's do.
    ///
    /// # Errors
    ///
    /// [`SandboxError::PipFailed`] when uv exits unsuccessfully, or as for
    /// [`exec`](Self::exec).
    pub async fn uv_pip_install<S: AsRef<OsStr>>(
        &self,
        uv: &Path,
        env: &PythonEnv,
        args: &[S],
    ) -> Result<ExecResult> {
        let mut path = env.bin_dir().into_os_string();
        path.push(":");
        path.push(self.base_path());
        let mut command = Command::new(uv)
            .args(["pip", "install", "--no-progress", "--python"])
            .arg(env.python())
            .env("VIRTUAL_ENV", env.dir())
            .env("PATH", path)
            .env("UV_NO_CONFIG", "1")
            .env("UV_LINK_MODE", "copy")
            // The certificates pip trusts: the system's store, not the
            // roots built into uv (measured: behind a TLS-inspecting
            // egress, uv's own roots failed every download).
            .env("UV_SYSTEM_CERTS", "1");
        if !self.inner.config.package_registry {
            command = command.arg("--no-index");
        }
        command = command.args(args);
        let cache = self
            .pip_cache()
            .parent()
            .map_or_else(|| self.inner.home.path().join(".cache"), Path::to_path_buf)
            .join("uv");
        let result = self.installer(env, command, "UV_CACHE_DIR", cache).await?;
        if !result.success() {
            return Err(SandboxError::PipFailed {
                status: result.status_summary(),
                output: result.combined_output(),
            });
        }
        Ok(result)
    }

    /// Runs a package installer's `command` for `env`: with a writable
    /// cache at `cache` (announced in `cache_variable`), and the network
    /// only when the registry is allowed, and then only to the registry.
    async fn installer(
        &self,
        env: &PythonEnv,
        mut command: Command,
        cache_variable: &str,
        cache: PathBuf,
    ) -> Result<ExecResult> {
        let registry = self.inner.config.package_registry;
        let mut extra = Extra {
            network: Some(registry),
            read_write: Vec::new(),
            output_limit: None,
        };
        match std::fs::create_dir_all(&cache).and_then(|()| self.hand_to_code(&cache)) {
            Ok(()) => {
                command = command.env(cache_variable, &cache);
                extra.read_write.push(cache);
            }
            // A missing cache only costs download time; say so and go on.
            Err(e) => tracing::warn!(
                dir = %cache.display(),
                error = %e,
                "cannot create the installer's cache; running without it"
            ),
        }
        if !(registry && self.inner.isolation == Isolation::Namespaces) {
            return self.exec_with(command, extra).await;
        }
        // In a container the call keeps its own network namespace and reaches
        // only the registry, through the relays of `registry.rs`.
        extra.network = Some(false);
        let (relayed, _proxy) = self.through_registry_relay(env, command)?;
        self.exec_with(relayed, extra).await
    }

    /// `command` wrapped to reach the registry through a relay in the container
    /// and a [`RegistryProxy`] on a socket in the home, which lives as long as the
    /// returned guard.
    fn through_registry_relay(
        &self,
        env: &PythonEnv,
        command: Command,
    ) -> Result<(Command, registry::RegistryProxy)> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self.inner.home.path().join(".registry");
        let io = |e| SandboxError::io("preparing the registry relay", e);
        std::fs::create_dir_all(&dir).map_err(io)?;
        self.hand_to_code(&dir).map_err(io)?;
        let forwarder = dir.join("forwarder.py");
        std::fs::write(&forwarder, registry::FORWARDER).map_err(io)?;
        let socket = dir.join(format!("proxy-{n}.sock"));
        let port_file = dir.join(format!("port-{n}"));
        let _ = std::fs::remove_file(&port_file);
        let proxy = registry::RegistryProxy::start(
            socket.clone(),
            registry::registry_hosts(),
            self.inner.run_as,
        )
        .map_err(io)?;
        let mut relayed = Command::new(shell_program())
            .arg("-c")
            .arg(registry::WRAPPER)
            .arg("registry-relay")
            .arg(env.python())
            .arg(&forwarder)
            .arg(&socket)
            .arg(&port_file)
            .arg(&command.program)
            .args(&command.args);
        relayed.env = command.env;
        relayed.stdin = command.stdin;
        relayed.current_dir = command.current_dir;
        relayed.timeout = command.timeout;
        Ok((relayed, proxy))
    }

    /// Runs `pip install ARGS` in virtualenv `env`, e.g. `["-r", "requirements.txt"]`
    /// or `["numpy==2.1"]`.
    ///
    /// Network access follows [`pip`](Self::pip). Without
    /// [`package_registry`](crate::SandboxConfigBuilder::package_registry), pip runs
    /// with `--no-index` and can only install local files (wheels, directories,
    /// `--find-links` folders).
    ///
    /// # Errors
    ///
    /// [`SandboxError::PipFailed`] when pip exits unsuccessfully, or as for
    /// [`exec`](Self::exec).
    pub async fn pip_install<S: AsRef<OsStr>>(
        &self,
        env: &PythonEnv,
        args: &[S],
    ) -> Result<ExecResult> {
        let mut full: Vec<OsString> = vec!["install".into(), "--progress-bar".into(), "off".into()];
        if !self.inner.config.package_registry {
            full.push("--no-index".into());
        }
        full.extend(args.iter().map(|a| a.as_ref().to_os_string()));
        let result = self.pip(env, &full).await?;
        if !result.success() {
            return Err(SandboxError::PipFailed {
                status: result.status_summary(),
                output: result.combined_output(),
            });
        }
        Ok(result)
    }

    /// Starts a shell session that keeps the working directory and exported variables
    /// from one command to the next.
    ///
    /// # Errors
    ///
    /// [`SandboxError::Io`] when the session's state directory cannot be created.
    pub fn shell_session(&self) -> Result<ShellSession> {
        ShellSession::new(self.clone())
    }

    /// The code's own temporary directory in process isolation, `HOME/tmp`.
    fn private_tmp(&self) -> PathBuf {
        self.inner.home.path().join("tmp")
    }

    /// The pip cache: the configured one, else a private one in the home.
    fn pip_cache(&self) -> PathBuf {
        self.inner
            .config
            .pip_cache_dir
            .clone()
            .unwrap_or_else(|| self.inner.home.path().join(".cache").join("pip"))
    }

    /// Makes a directory the sandbox created in the code's home the code's
    /// own (a root caller's code runs as another user).
    fn hand_to_code(&self, dir: &Path) -> std::io::Result<()> {
        let Some(user) = self.inner.run_as else {
            return Ok(());
        };
        if !dir.starts_with(self.inner.home.path()) {
            return Ok(());
        }
        for path in dir.ancestors().take_while(|p| *p != self.inner.home.path()) {
            std::os::unix::fs::lchown(path, Some(user.uid), Some(user.gid))?;
        }
        Ok(())
    }

    /// The interpreter `run_python` uses: the configured one, or (in
    /// process isolation, when the code's user cannot reach it) a system
    /// interpreter it can.
    ///
    /// # Errors
    ///
    /// [`SandboxError::PythonUnavailable`] when there is none.
    pub fn python_executable(&self) -> Result<PathBuf> {
        self.python_info().map(|info| info.executable.clone())
    }

    fn python_info(&self) -> Result<&PythonInfo> {
        self.inner
            .python
            .as_ref()
            .map_err(|reason| SandboxError::PythonUnavailable {
                reason: reason.clone(),
            })
    }

    fn venv_command(&self, env: &PythonEnv) -> Command {
        let mut path = env.bin_dir().into_os_string();
        path.push(":");
        path.push(self.base_path());
        Command::new(env.python())
            .env("VIRTUAL_ENV", env.dir())
            .env("PATH", path)
            .env("PYTHONUNBUFFERED", "1")
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.inner.config.working_dir.join(path)
        }
    }

    /// `PATH` for the code: the configured interpreter's directory first, so that
    /// `python3` in a shell command is the same interpreter `run_python` uses.
    fn base_path(&self) -> OsString {
        let mut path = OsString::new();
        if let Ok(info) = &self.inner.python
            && let Some(dir) = info.executable.parent()
            && !DEFAULT_PATH.split(':').any(|d| Path::new(d) == dir)
        {
            path.push(dir);
            path.push(":");
        }
        path.push(DEFAULT_PATH);
        path
    }

    pub(crate) fn state_parent(&self) -> &Path {
        self.inner.home.path()
    }

    pub(crate) async fn exec_with(&self, command: Command, extra: Extra) -> Result<ExecResult> {
        let mut sweep = self.writable_roots(&extra);
        sweep.retain(|root| {
            !hygiene::SHARED_TMP
                .iter()
                .any(|shared| Path::new(shared) == root)
        });
        // Opened before the spawn, closed (and the shared temporary directories
        // cleaned) when the call is over or its future is dropped.
        let window = match (self.inner.isolation, self.inner.run_as) {
            (Isolation::Process, Some(user)) => Some(hygiene::CallWindow::open(
                user.uid,
                vec![self.inner.home.path().to_path_buf()],
            )),
            _ => None,
        };
        let spec = self.spec(command, extra)?;
        let result = runner::run(spec).await;
        let cleared = hygiene::strip_setid(&sweep);
        drop(window);
        let mut result = result?;
        result.setid_cleared = cleared;
        Ok(result)
    }

    fn spec(&self, command: Command, extra: Extra) -> Result<Spec> {
        let inner = &*self.inner;
        let config = &inner.config;
        let cwd = match &command.current_dir {
            Some(dir) => self.absolute(dir),
            None => config.working_dir.clone(),
        };
        let mut env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), self.base_path()),
            ("HOME".into(), inner.home.path().into()),
            ("LANG".into(), "C.UTF-8".into()),
        ];
        if inner.isolation == Isolation::Process {
            // Programs that honour TMPDIR keep their files in the home, which goes
            // with the sandbox, instead of the host's shared /tmp.
            env.push(("TMPDIR".into(), self.private_tmp().into()));
        }
        for (name, value) in config.env.iter().chain(command.env.iter()) {
            crate::config::check_env_entry(name, value)?;
            env.retain(|(existing, _)| existing != name);
            env.push((name.clone(), value.clone()));
        }
        let display_name = command.program.to_string_lossy().into_owned();
        let (program, args, spawn_cwd, bwrap_tasks, spawn_as) =
            match (inner.isolation, &inner.bwrap, &inner.switch) {
                (Isolation::Namespaces, Some(bwrap_path), Ok(switch)) => {
                    let mut args = bwrap_args_for(inner, switch, &cwd, &extra);
                    args.push(command.program);
                    args.extend(command.args);
                    // bwrap changes into the working directory itself; starting it from
                    // `/` keeps it independent of the caller's access to cwd. As root,
                    // bwrap itself stays root (it needs to be, to mount what the code's
                    // user could not reach) and setpriv drops to that user inside.
                    let spawn_as = match switch {
                        UserSwitch::ToUser { .. } => None,
                        UserSwitch::Unprivileged => inner.run_as,
                    };
                    (
                        bwrap_path.clone().into_os_string(),
                        args,
                        PathBuf::from("/"),
                        BWRAP_TASKS,
                        spawn_as,
                    )
                }
                _ => (command.program, command.args, cwd, 0, inner.run_as),
            };
        // The pids cgroup counts the call alone; RLIMIT_NPROC counts every task of
        // the user, so it is only the fallback where there is no pids cgroup.
        let pids_limit = config.max_processes.map(|n| n + 1 + bwrap_tasks);
        let pids_cgroup = inner.cgroups.pids_reason().is_ok();
        let limits = Limits {
            address_space: config.memory_limit,
            cpu_seconds: config.cpu_time_limit.map(Limits::cpu_seconds_for),
            file_size: config.max_file_size,
            processes: config
                .max_processes
                .filter(|_| !pids_cgroup)
                .map(|n| limits::tasks_of_user(inner.child_uid) + n + bwrap_tasks),
            no_new_privs: inner.isolation == Isolation::Process,
            cgroup_procs: [None, None],
        };
        Ok(Spec {
            program,
            args,
            env,
            cwd: spawn_cwd,
            stdin: command.stdin,
            limits,
            cgroups: inner.cgroups.placements(config.memory_limit, pids_limit),
            run_as: spawn_as,
            timeout: command.timeout.unwrap_or(config.timeout),
            kill_grace: config.kill_grace,
            output_limit: extra.output_limit.unwrap_or(config.output_limit),
            on_output: config.on_output.clone(),
            display_name,
            disk: config.disk_limit.map(|limit| {
                let writes = if self.inner.isolation == Isolation::Process {
                    crate::disk::Writes::Anywhere
                } else {
                    crate::disk::Writes::ConfinedToRoots
                };
                (limit, self.writable_roots(&extra), writes)
            }),
        })
    }

    /// Every directory the code can write on the host: its home, the working
    /// directory, the read-write paths and the call's extras, and in process
    /// isolation the host's shared temporary directories.
    fn writable_roots(&self, extra: &Extra) -> Vec<PathBuf> {
        let inner = &*self.inner;
        let mut roots = vec![
            inner.home.path().to_path_buf(),
            inner.config.working_dir.clone(),
        ];
        roots.extend(inner.config.read_write_paths.iter().cloned());
        roots.extend(extra.read_write.iter().cloned());
        if inner.isolation == Isolation::Process {
            roots.extend(hygiene::SHARED_TMP.iter().map(PathBuf::from));
        }
        roots
    }
}

/// The user untrusted code runs as, given the caller's effective uid and the
/// configured `run_as`: never root. A root caller hands the code to `run_as`,
/// [`RunAs::NOBODY`] by default; another caller can only run it as itself.
fn code_user(caller_uid: u32, configured: Option<RunAs>) -> Result<Option<RunAs>> {
    if caller_uid != 0 {
        return match configured {
            Some(identity) if identity.uid != caller_uid => {
                Err(SandboxError::InvalidConfig(format!(
                    "run_as uid {} needs the caller to be root (it is uid {caller_uid}); drop \
                     `run_as` or start the agent as root",
                    identity.uid
                )))
            }
            _ => Ok(None),
        };
    }
    let identity = configured.unwrap_or(RunAs::NOBODY);
    if identity.uid == 0 || identity.gid == 0 {
        return Err(SandboxError::InvalidConfig(format!(
            "refusing to run untrusted code as uid {} gid {}: the sandbox never runs code as \
             root or in root's group; choose an unprivileged user (the default is nobody, \
             65534)",
            identity.uid, identity.gid
        )));
    }
    Ok(Some(identity))
}

fn bwrap_args_for(inner: &Inner, switch: &UserSwitch, cwd: &Path, extra: &Extra) -> Vec<OsString> {
    let config = &inner.config;
    let mut read_only = config.read_only_paths.clone();
    let mut read_write = vec![inner.home.path().to_path_buf(), config.working_dir.clone()];
    read_write.extend(config.read_write_paths.iter().cloned());
    read_write.extend(extra.read_write.iter().cloned());
    if let Ok(info) = &inner.python {
        for path in [&info.base_prefix, &info.executable] {
            // A virtualenv's interpreter lies in the virtualenv, which is
            // granted whole: binding the file again, over the symlink it
            // is there, fails the container ("Can't create file"), and
            // the code then ran with another interpreter.
            let granted = read_only
                .iter()
                .chain(&read_write)
                .any(|g| path.starts_with(g));
            if bwrap::is_under_system_dirs(path) || !path.exists() || granted {
                continue;
            }
            read_only.push(path.clone());
        }
    }
    bwrap::args(&bwrap::Mounts {
        read_only: &read_only,
        read_write: &read_write,
        network: extra.network.unwrap_or(config.network),
        cwd,
        tmp_size: match (config.memory_limit, config.disk_limit) {
            (Some(memory), Some(disk)) => Some(memory.min(disk)),
            (one, other) => one.or(other),
        },
        user: switch,
    })
}

/// Lets `identity` write the working directory and the granted read-write
/// paths (see `access.rs`), until the sandbox goes. In process isolation the
/// way to each must also be open to it on the host (in a container the way
/// is the container's own, made open); the working directory must be
/// reachable: code that cannot enter it cannot do anything.
fn open_to(
    config: &SandboxConfig,
    identity: RunAs,
    isolation: Isolation,
) -> Result<Vec<access::Granted>> {
    let mut grants = Vec::new();
    if let Some(cache) = &config.pip_cache_dir
        && let Err(e) = std::fs::create_dir_all(cache)
    {
        tracing::warn!(dir = %cache.display(), error = %e, "cannot create the pip cache");
    }
    let dirs = std::iter::once(&config.working_dir)
        .chain(&config.read_write_paths)
        .chain(config.pip_cache_dir.iter().filter(|c| c.is_dir()));
    for (i, dir) in dirs.enumerate() {
        let is_work_dir = i == 0;
        let way = dir.parent().unwrap_or(dir);
        if isolation == Isolation::Process
            && let Some(closed) = access::first_closed_ancestor(way, identity)
        {
            let message = format!(
                "in process isolation the code runs as uid {} on the host's file system, and \
                 that user cannot enter {}, on the way to {}: move the task below a directory \
                 others may enter, or install bubblewrap for namespace isolation (which makes \
                 the way itself)",
                identity.uid,
                closed.display(),
                dir.display()
            );
            if is_work_dir {
                return Err(SandboxError::InvalidConfig(message));
            }
            tracing::warn!("{message}");
            continue;
        }
        if let Some(reason) = access::shared_directory(dir) {
            let message = format!(
                "refusing to give uid {} write access to {}: {reason}; give the code a \
                 directory of its own",
                identity.uid,
                dir.display()
            );
            if is_work_dir {
                return Err(SandboxError::InvalidConfig(message));
            }
            tracing::warn!("{message}");
            continue;
        }
        match access::grant_write(dir, identity) {
            Ok(granted) => {
                let grant = granted.grant();
                tracing::info!(dir = %dir.display(), uid = identity.uid, ?grant, "granted write access through ACLs");
                if grant.truncated {
                    tracing::warn!(dir = %dir.display(), "more than {} entries: the rest keep their permissions", access::MAX_GRANT_ENTRIES);
                }
                if grant.too_deep > 0 {
                    tracing::warn!(dir = %dir.display(), directories = grant.too_deep, "directories deeper than {} levels keep their permissions", access::MAX_GRANT_DEPTH);
                }
                grants.push(granted);
            }
            Err(e) if is_work_dir => {
                return Err(SandboxError::io(
                    format!(
                        "giving uid {} write access to {} (POSIX ACLs)",
                        identity.uid,
                        dir.display()
                    ),
                    e,
                ));
            }
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "cannot grant write access"),
        }
    }
    Ok(grants)
}

/// Checks that `bwrap` exists and can build the exact container this sandbox uses.
async fn probe(inner: &mut Inner) -> Result<()> {
    let program = &inner.config.bwrap;
    let Some(path) = bwrap::find_program(program) else {
        return Err(SandboxError::BwrapMissing {
            program: PathBuf::from(program),
        });
    };
    let switch = inner
        .switch
        .as_ref()
        .map_err(|reason| SandboxError::NamespacesUnavailable {
            reason: reason.clone(),
        })?;
    let mut args = bwrap_args_for(inner, switch, &inner.config.working_dir, &Extra::default());
    args.push("true".into());
    let spawn_as = match switch {
        UserSwitch::ToUser { .. } => None,
        UserSwitch::Unprivileged => inner.run_as,
    };
    let spec = Spec {
        program: path.clone().into_os_string(),
        args,
        env: vec![("PATH".into(), DEFAULT_PATH.into())],
        cwd: PathBuf::from("/"),
        stdin: None,
        limits: Limits::default(),
        cgroups: Vec::new(),
        run_as: spawn_as,
        timeout: PROBE_TIMEOUT,
        kill_grace: Duration::from_millis(100),
        output_limit: 8 * 1024,
        on_output: None,
        display_name: "bwrap (probe)".to_owned(),
        disk: None,
    };
    let result = runner::run(spec).await?;
    if result.success() {
        inner.bwrap = Some(path);
        return Ok(());
    }
    let reason = if result.stderr.is_empty() {
        result.status_summary()
    } else {
        result.stderr.to_string().trim().to_owned()
    };
    Err(SandboxError::NamespacesUnavailable { reason })
}

/// Removes the sandbox homes in `dir` whose process is gone (a killed
/// agent cannot clean up after itself); returns how many. A home whose
/// process lives (or whose name has no process id) is left alone.
/// The process that made the sandbox home named `name`, if it is one.
pub(crate) fn home_pid(name: &std::ffi::OsStr) -> Option<u32> {
    name.to_str()
        .and_then(|n| n.strip_prefix(HOME_PREFIX))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok())
}

/// Whether process `pid` is running (on this machine's PID namespace).
pub(crate) fn process_is_alive(pid: u32) -> bool {
    std::path::Path::new("/proc").join(pid.to_string()).exists()
}

pub(crate) fn remove_stale_homes(dir: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = home_pid(&entry.file_name()) else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if pid == own || !is_dir || process_is_alive(pid) {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(error) => {
                tracing::debug!(path = %entry.path().display(), %error, "stale sandbox home kept");
            }
        }
    }
    removed
}

/// Checks whether namespace isolation works on this machine, with a default
/// configuration rooted at a fresh directory of its own. Tests and diagnostics use it to decide whether to
/// run namespace-specific checks.
///
/// # Errors
///
/// [`SandboxError::BwrapMissing`] or [`SandboxError::NamespacesUnavailable`] explaining
/// what is missing.
pub async fn namespaces_available() -> Result<()> {
    // A directory of the probe's own: a sandbox opens its working directory
    // to the code's user, and the shared temporary directory is everyone's.
    let work = tempfile::Builder::new()
        .prefix("sandbox-probe-")
        .tempdir()
        .map_err(|e| SandboxError::io("creating the probe's working directory", e))?;
    let config = SandboxConfig::builder(work.path())
        .isolation(Isolation::Namespaces)
        .build()?;
    Sandbox::new(config).await.map(drop)
}

/// Sandbox homes are named `sandbox-home-<pid>-<random>` after the process
/// that made them, so that homes left by a killed agent can be told apart
/// from live ones and removed by the next sandbox.
const HOME_PREFIX: &str = "sandbox-home-";

fn make_home(run_as: Option<RunAs>) -> Result<TempDir> {
    let removed = remove_stale_homes(&std::env::temp_dir());
    if removed > 0 {
        tracing::info!(
            removed,
            "removed sandbox homes left by agents that were killed"
        );
    }
    let revoked = access::revoke_stale();
    if revoked > 0 {
        tracing::info!(
            revoked,
            "took back write access that agents which were killed had granted"
        );
    }
    let home = tempfile::Builder::new()
        .prefix(&format!("{HOME_PREFIX}{}-", std::process::id()))
        .tempdir()
        .map_err(|e| SandboxError::io("creating the sandbox home directory", e))?;
    hygiene::home_made(home.path());
    if let Some(identity) = run_as {
        std::os::unix::fs::chown(home.path(), Some(identity.uid), Some(identity.gid)).map_err(
            |e| {
                SandboxError::io(
                    format!(
                        "handing the sandbox home directory to uid {} gid {}",
                        identity.uid, identity.gid
                    ),
                    e,
                )
            },
        )?;
    }
    Ok(home)
}

/// `bash` when it exists (sessions and most agents' commands assume it), else `sh`.
pub(crate) fn shell_program() -> &'static str {
    if Path::new("/bin/bash").exists() || Path::new("/usr/bin/bash").exists() {
        "bash"
    } else {
        "sh"
    }
}

/// Compile-time check that the futures can be handed to `tokio::spawn`.
#[cfg(test)]
#[allow(dead_code)]
fn futures_are_send(sandbox: &Sandbox, session: &mut ShellSession, env: &PythonEnv) {
    fn is_send<T: Send>(_: &T) {}
    is_send(&sandbox.exec(Command::new("true")));
    is_send(&sandbox.run_shell("true"));
    is_send(&sandbox.run_python(PythonScript::code(""), &[] as &[&str]));
    is_send(&sandbox.pip_install(env, &["x"]));
    is_send(&sandbox.create_venv("v"));
    is_send(&session.run("true"));
    is_send(&Sandbox::new(sandbox.config().clone()));
}

#[cfg(test)]
mod stale_home_tests {
    use super::*;

    #[test]
    fn homes_of_dead_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let own = std::process::id();
        // 4,000,000,000 is above any Linux pid_max, so no process has it.
        let names = [
            "sandbox-home-4000000000-abc".to_string(),
            format!("sandbox-home-{own}-def"),
            "sandbox-home-1-ghi".to_string(),
            "sandbox-home-xyz".to_string(),
            "unrelated-4000000000-abc".to_string(),
        ];
        for name in &names {
            std::fs::create_dir_all(dir.path().join(name).join("inner"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(remove_stale_homes(dir.path()), 1);
        assert!(!dir.path().join(&names[0]).exists());
        for name in &names[1..] {
            assert!(dir.path().join(name).exists(), "{name} was removed");
        }
    }
}
