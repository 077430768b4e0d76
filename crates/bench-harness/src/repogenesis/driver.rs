//! Starting the service and running the golden tests, as the benchmark's
//! container entrypoint (`eval_harness/scripts/entrypoint.sh`) does, in
//! one sandbox call: the service starts in the background, is probed on
//! the harness's health paths or its port, the tests run against it, and
//! the whole process tree is stopped. In namespace isolation that call has
//! a network namespace of its own with only a loopback interface, so tasks
//! on the same port run side by side and a service reaches nothing else.
//!
//! Differences from the entrypoint, each for a reason: every probe is
//! bounded (`curl --max-time`, a wall-clock guard on the wait loop); the
//! port is probed with bash's `/dev/tcp` where the entrypoint used `nc`;
//! the service runs in a session of its own so its whole group can be
//! stopped, and what survives that (a daemon) is named before it is killed;
//! pytest writes a JUnit report next to its console log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::spec::Language;

/// How the service is started, found as `entrypoint.sh` finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StartCommand {
    /// `bash <script>`: `./start.sh`, `./scripts/start.sh`, `./bin/start.sh`,
    /// else the first `start.sh` at most three levels down.
    Script {
        /// The script, relative to the repository (`./start.sh`).
        path: String,
    },
    /// `python <file>` for the first of `app.py`, `main.py`, `run.py`,
    /// `server.py` (Python fallbacks).
    PythonFile {
        /// The file.
        file: String,
    },
    /// `python manage.py runserver 0.0.0.0:PORT`.
    ManagePy,
    /// `python -m uvicorn M --host 0.0.0.0 --port PORT` for the first of
    /// `main:app`, `app:app`, `server:app`, `api:app` whose module imports
    /// (decided in the sandbox, where the environment is).
    UvicornProbe,
    /// `mvn spring-boot:run -q` (Java fallback with a `pom.xml`).
    MavenSpringBoot,
    /// Nothing to start ("No service entry point found").
    None,
}

impl StartCommand {
    /// The command line, for reports.
    pub fn shown(&self, port: u16) -> String {
        match self {
            StartCommand::Script { path } => format!("bash {path}"),
            StartCommand::PythonFile { file } => format!("python {file}"),
            StartCommand::ManagePy => format!("python manage.py runserver 0.0.0.0:{port}"),
            StartCommand::UvicornProbe => {
                format!("python -m uvicorn <main|app|server|api>:app --host 0.0.0.0 --port {port}")
            }
            StartCommand::MavenSpringBoot => "mvn spring-boot:run -q".to_owned(),
            StartCommand::None => "(none)".to_owned(),
        }
    }

    fn kind_and_arg(&self) -> (&'static str, String) {
        match self {
            StartCommand::Script { path } => ("script", path.clone()),
            StartCommand::PythonFile { file } => ("python", file.clone()),
            StartCommand::ManagePy => ("manage", String::new()),
            StartCommand::UvicornProbe => ("uvicorn", String::new()),
            StartCommand::MavenSpringBoot => ("maven", String::new()),
            StartCommand::None => ("none", String::new()),
        }
    }
}

/// `[ -f path ]`: a regular file, through symbolic links.
fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}

/// `find_start_script` of `entrypoint.sh`. `find`'s order is the
/// directory's; names are sorted here so the choice is reproducible.
pub fn find_start_script(repo: &Path) -> Option<String> {
    for candidate in ["./start.sh", "./scripts/start.sh", "./bin/start.sh"] {
        if is_file(&repo.join(candidate.trim_start_matches("./"))) {
            return Some(candidate.to_owned());
        }
    }
    // find . -maxdepth 3 -name start.sh -type f | head -1: pre-order, a
    // directory's entries visited as they come, links not followed.
    fn walk(dir: &Path, rel: &str, depth: usize) -> Option<String> {
        let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = format!("{rel}/{name}");
            if kind.is_file() && name == "start.sh" {
                return Some(path);
            }
            if kind.is_dir()
                && depth < 3
                && let Some(found) = walk(&entry.path(), &path, depth + 1)
            {
                return Some(found);
            }
        }
        None
    }
    walk(repo, ".", 1)
}

/// The start command of `entrypoint.sh` (`start_python_service`,
/// `start_java_service`).
pub fn start_command(repo: &Path, language: Language) -> StartCommand {
    if let Some(path) = find_start_script(repo) {
        return StartCommand::Script { path };
    }
    match language {
        Language::Python => {
            for file in ["app.py", "main.py", "run.py"] {
                if is_file(&repo.join(file)) {
                    return StartCommand::PythonFile { file: file.into() };
                }
            }
            if is_file(&repo.join("manage.py")) {
                return StartCommand::ManagePy;
            }
            if is_file(&repo.join("server.py")) {
                return StartCommand::PythonFile {
                    file: "server.py".into(),
                };
            }
            StartCommand::UvicornProbe
        }
        Language::Java => {
            if is_file(&repo.join("pom.xml")) {
                StartCommand::MavenSpringBoot
            } else {
                StartCommand::None
            }
        }
    }
}

/// `find_file_recursive(repo, "start.sh", max_depth=5)` of
/// `test_dsr_repos.py`: the root, else anything named `start.sh` at most
/// five directories down.
pub fn legacy_start_script_exists(repo: &Path) -> bool {
    legacy_file_exists(repo, "start.sh")
}

/// `find_file_recursive(repo, name)` of `test_dsr_repos.py` found something.
pub fn legacy_file_exists(repo: &Path, name: &str) -> bool {
    if repo.join(name).exists() {
        return true;
    }
    // `rglob` keeps paths of at most six parts: five directories and the name.
    fn walk(dir: &Path, name: &str, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for entry in entries.flatten() {
            if entry.file_name() == name {
                return true;
            }
            if depth < 6
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && walk(&entry.path(), name, depth + 1)
            {
                return true;
            }
        }
        false
    }
    walk(repo, name, 1)
}

/// The script run in the sandbox. Inputs come through the environment;
/// results go to `$RESULTS/driver.env` (`key=value` lines), the service's
/// output to `$RESULTS/service.log`, the tests' to `$RESULTS/tests.log`
/// and `$RESULTS/junit.xml`.
pub const DRIVER: &str = r#"set -uo pipefail
R="$RESULTS"
: > "$R/driver.env"
emit() { local v="${2//$'\n'/ }"; printf '%s=%s\n' "$1" "${v//$'\r'/ }" >> "$R/driver.env"; }
SERVICE_PID=""
launch() {
  emit start_command "$*"
  echo "Starting service via: $*"
  REPOGENESIS_MARK="$RUN_MARK" setsid "$@" > "$R/service.log" 2>&1 < /dev/null &
  SERVICE_PID=$!
}
start_service() {
  case "$START_KIND" in
    script) launch bash "$START_ARG" ;;
    python) launch python "$START_ARG" ;;
    manage) launch python manage.py runserver "0.0.0.0:$SERVICE_PORT" ;;
    maven) launch mvn -o -B -Dmaven.repo.local="$MAVEN_REPO" spring-boot:run -q ;;
    uvicorn)
      for module in main:app app:app server:app api:app; do
        if timeout -k 2 10 python -c "import ${module%%:*}" > /dev/null 2>&1; then
          launch python -m uvicorn "$module" --host 0.0.0.0 --port "$SERVICE_PORT"
          return
        fi
      done
      echo "WARNING: No Python entry point found" ;;
    *) echo "WARNING: No entry point found" ;;
  esac
}
others() {
  # The service's processes still alive: in a PID namespace of our own,
  # every process but its init and this shell; otherwise those carrying the
  # service's mark in their environment. Builtins only, so the scan sees no
  # processes of its own.
  local d p args envs
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] || [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
    if [ "$NS_SCAN" != 1 ]; then
      envs=()
      mapfile -d '' -t envs < "$d/environ" 2>/dev/null || continue
      [[ " ${envs[*]} " == *" REPOGENESIS_MARK=$RUN_MARK "* ]] || continue
    fi
    args=()
    mapfile -d '' -t args < "$d/cmdline" 2>/dev/null || continue
    [ "${#args[@]}" -eq 0 ] && continue
    printf '%s %s\n' "$p" "${args[*]}"
  done
}
probe_health() {
  command -v curl > /dev/null 2>&1 || return 1
  curl -sf --max-time 1 -o /dev/null "http://localhost:${SERVICE_PORT}$1" 2>/dev/null
}
port_open() {
  timeout -k 1 2 bash -c "exec 3<>/dev/tcp/localhost/$SERVICE_PORT" 2>/dev/null
}
wait_for_service() {
  local i code path guard=$((3 * STARTUP_TIMEOUT + 10))
  echo "Waiting for service on port $SERVICE_PORT (timeout: ${STARTUP_TIMEOUT}s)..."
  for ((i = 1; i <= STARTUP_TIMEOUT && SECONDS <= guard; i++)); do
    if [ -n "$SERVICE_PID" ] && ! kill -0 "$SERVICE_PID" 2>/dev/null; then
      wait "$SERVICE_PID" 2>/dev/null
      code=$?
      echo "Process exited with code $code after ${i}s"
      emit readiness exited; emit exit_code "$code"; emit ready_after "$i"
      # A child the script forked just before it ended may still be between
      # fork and exec; give it a moment so it shows under its own name.
      sleep 0.2
      while IFS= read -r line; do emit survivor "$line"; done < <(others)
      return 1
    fi
    for path in / /health /api/health /api/v1/health /actuator/health; do
      if probe_health "$path"; then
        echo "Service ready after ${i}s (responded on ${path})"
        emit readiness health; emit health_path "$path"; emit ready_after "$i"
        return 0
      fi
    done
    if port_open; then
      echo "Port $SERVICE_PORT is open after ${i}s"
      emit readiness port; emit ready_after "$i"
      return 0
    fi
    sleep 1
  done
  if [ -n "$SERVICE_PID" ] && kill -0 "$SERVICE_PID" 2>/dev/null; then
    if port_open; then
      emit readiness port; emit ready_after "$STARTUP_TIMEOUT"
      return 0
    fi
    echo "Process running but port $SERVICE_PORT not open"
    emit readiness alive; emit ready_after "$STARTUP_TIMEOUT"
    return 0
  fi
  if [ -n "$SERVICE_PID" ]; then
    wait "$SERVICE_PID" 2>/dev/null
    code=$?
    emit readiness exited; emit exit_code "$code"; emit ready_after "$STARTUP_TIMEOUT"
  fi
  return 1
}
cleanup() {
  if [ -n "$SERVICE_PID" ]; then
    kill -0 "$SERVICE_PID" 2>/dev/null && emit service_alive_after_tests 1
    kill -TERM -- "-$SERVICE_PID" 2>/dev/null; kill "$SERVICE_PID" 2>/dev/null
    sleep 1
    kill -KILL -- "-$SERVICE_PID" 2>/dev/null; kill -9 "$SERVICE_PID" 2>/dev/null
    wait "$SERVICE_PID" 2>/dev/null
  fi
  local line
  while IFS= read -r line; do
    emit leftover "$line"
    kill -9 "${line%% *}" 2>/dev/null
  done < <(others)
  emit done 1
}

echo ">>>>> DSR_START"
emit start_kind "$START_KIND"
DSR_SUCCESS=false
start_service
if [ -z "$SERVICE_PID" ]; then
  DSR_MESSAGE="No service entry point found"
  emit readiness none
elif wait_for_service; then
  DSR_SUCCESS=true
  DSR_MESSAGE="Service started successfully"
else
  DSR_MESSAGE="Service failed to start within ${STARTUP_TIMEOUT}s"
fi
emit dsr "$DSR_SUCCESS"; emit dsr_message "$DSR_MESSAGE"
echo "DSR_RESULT=$DSR_SUCCESS"
echo "DSR_MESSAGE=$DSR_MESSAGE"
echo ">>>>> DSR_END"

echo ">>>>> TEST_START"
if [ "$REPO_LANG" = python ]; then
  timeout -k 5 "$TEST_TIMEOUT" python -m pytest tests/ -v --tb=short --junitxml="$R/junit.xml" > "$R/tests.log" 2>&1
  TEST_EXIT=$?
else
  timeout -k 5 "$TEST_TIMEOUT" mvn -o -B -Dmaven.repo.local="$MAVEN_REPO" test > "$R/tests.log" 2>&1
  TEST_EXIT=$?
fi
emit test_exit "$TEST_EXIT"
echo "TEST_EXIT_CODE=$TEST_EXIT"
echo ">>>>> TEST_END"
cleanup
"#;

/// What the driver run needs.
#[derive(Debug, Clone)]
pub struct DriverInputs {
    /// The workspace repository (cwd of the service and tests).
    pub repo: PathBuf,
    /// Where the driver writes its results (created, emptied).
    pub results: PathBuf,
    /// The language.
    pub language: Language,
    /// The service port.
    pub port: u16,
    /// The start command.
    pub start: StartCommand,
    /// Startup wait (the loop's iterations, about one second each).
    pub start_timeout: Duration,
    /// Test run limit.
    pub test_timeout: Duration,
    /// Whether the call has a PID namespace of its own (every process in it
    /// is the service's); otherwise the service's processes are told by a
    /// mark in their environment.
    pub namespace: bool,
    /// Java: the local Maven repository.
    pub maven_repo: Option<PathBuf>,
}

impl DriverInputs {
    /// The environment variables the script reads.
    pub fn env(&self) -> Vec<(String, String)> {
        let (kind, arg) = self.start.kind_and_arg();
        vec![
            ("RESULTS".into(), self.results.display().to_string()),
            ("REPO_LANG".into(), self.language.as_str().into()),
            ("SERVICE_PORT".into(), self.port.to_string()),
            (
                "STARTUP_TIMEOUT".into(),
                self.start_timeout.as_secs().max(1).to_string(),
            ),
            (
                "TEST_TIMEOUT".into(),
                self.test_timeout.as_secs().max(1).to_string(),
            ),
            ("START_KIND".into(), kind.into()),
            ("START_ARG".into(), arg),
            (
                "NS_SCAN".into(),
                if self.namespace { "1" } else { "0" }.into(),
            ),
            ("RUN_MARK".into(), run_mark()),
            (
                "MAVEN_REPO".into(),
                self.maven_repo
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            ),
        ]
    }

    /// The most the whole call may take: the uvicorn import probes (four
    /// of 12 s at most), the startup loop's guard, the tests with their
    /// kill grace, and cleanup.
    pub fn call_limit(&self) -> Duration {
        let start = self.start_timeout.as_secs().max(1);
        Duration::from_secs(48 + (3 * start + 10) + self.test_timeout.as_secs().max(1) + 5 + 30)
    }
}

/// A mark unique to one run, put in the service's environment so that its
/// processes can be found where they share the host's process table.
fn run_mark() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// How the readiness probe ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Readiness {
    /// A health path answered (HTTP status below 400).
    Health {
        /// The path.
        path: String,
    },
    /// The port accepted a connection.
    Port,
    /// Still running at the end of the wait, port closed (the entrypoint
    /// counts this as started).
    AliveNotListening,
    /// The process ended during the wait.
    Exited {
        /// Its exit code.
        code: Option<i32>,
    },
    /// There was nothing to start.
    NoEntryPoint,
    /// The driver did not say (it was killed, or could not run).
    Unknown,
}

impl Readiness {
    /// The service answered: a health path or its port.
    pub fn answered(&self) -> bool {
        matches!(self, Readiness::Health { .. } | Readiness::Port)
    }
}

/// What the driver reported.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DriverReport {
    /// `key=value` pairs in order (keys may repeat).
    pub pairs: Vec<(String, String)>,
}

impl DriverReport {
    /// Parses `driver.env`.
    pub fn parse(text: &str) -> Self {
        DriverReport {
            pairs: text
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        }
    }

    /// The last value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The readiness it reported.
    pub fn readiness(&self) -> Readiness {
        match self.get("readiness") {
            Some("health") => Readiness::Health {
                path: self.get("health_path").unwrap_or("/").to_owned(),
            },
            Some("port") => Readiness::Port,
            Some("alive") => Readiness::AliveNotListening,
            Some("exited") => Readiness::Exited {
                code: self.get("exit_code").and_then(|c| c.parse().ok()),
            },
            Some("none") => Readiness::NoEntryPoint,
            _ => Readiness::Unknown,
        }
    }

    /// The entrypoint's `DSR_RESULT`.
    pub fn dsr(&self) -> bool {
        self.get("dsr") == Some("true")
    }

    /// Whether the driver got to its end.
    pub fn finished(&self) -> bool {
        self.get("done") == Some("1")
    }
}

/// `test_dsr_repos.py`'s success patterns: a process that ended within the
/// window still counts as deployed when its output has one of them.
pub fn legacy_success_pattern(language: Language, output: &str) -> Option<&'static str> {
    const PYTHON: [&str; 6] = [
        "Running on",
        "Started",
        "Uvicorn running",
        "Application startup complete",
        "Listening on",
        "Accepting connections",
    ];
    const JAVA: [&str; 6] = [
        "Started",
        "Javalin started",
        "Server started",
        "Application started",
        "Listening on",
        "Tomcat started",
    ];
    const CONFLICT: [&str; 2] = ["Address already in use", "Port already in use"];
    let patterns: &[&str] = match language {
        Language::Python => &PYTHON,
        Language::Java => &JAVA,
    };
    patterns
        .iter()
        .chain(CONFLICT.iter())
        .find(|p| output.contains(*p))
        .copied()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn start_scripts_are_found_in_the_entrypoints_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::UvicornProbe
        );
        assert_eq!(start_command(root, Language::Java), StartCommand::None);
        std::fs::write(root.join("server.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::PythonFile {
                file: "server.py".into()
            }
        );
        std::fs::write(root.join("manage.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::ManagePy
        );
        std::fs::write(root.join("run.py"), "").unwrap();
        std::fs::write(root.join("main.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::PythonFile {
                file: "main.py".into()
            }
        );
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/start.sh"), "").unwrap();
        // Four levels down: too deep for `find -maxdepth 3`.
        assert!(find_start_script(root).is_none());
        assert!(legacy_start_script_exists(root));
        std::fs::write(root.join("a/b/start.sh"), "").unwrap();
        assert_eq!(find_start_script(root).as_deref(), Some("./a/b/start.sh"));
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/start.sh"), "").unwrap();
        assert_eq!(find_start_script(root).as_deref(), Some("./bin/start.sh"));
        std::fs::write(root.join("start.sh"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::Script {
                path: "./start.sh".into()
            }
        );
    }

    #[test]
    fn reports_are_read_leniently() {
        let report = DriverReport::parse(
            "start_kind=script\nreadiness=exited\nexit_code=3\nsurvivor=12 python app.py\nsurvivor=13 x=y\ndsr=false\ngarbage\n",
        );
        assert_eq!(report.readiness(), Readiness::Exited { code: Some(3) });
        assert_eq!(report.all("survivor"), ["12 python app.py", "13 x=y"]);
        assert!(!report.dsr());
        assert!(!report.finished());
        assert_eq!(DriverReport::parse("").readiness(), Readiness::Unknown);
    }
}
