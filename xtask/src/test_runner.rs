//! `cargo xtask test`'s runner: builds every test binary once, then runs
//! them `--jobs N` at a time (two by default, see `DEFAULT_TEST_JOBS`; one
//! fewer while the work alongside runs).
//!
//! `cargo test --workspace` runs its test binaries in sequence, and most of
//! this workspace's slow binaries wait rather than compute (sandboxed
//! processes, pip, servers on loopback, model loads), so a 2-core machine
//! sits half idle for most of the run. Here each binary runs as cargo would
//! run it (working directory the package's root, `CARGO_MANIFEST_DIR` and
//! `CARGO_PKG_NAME` set), its output is captured and printed when it ends
//! (whole for a failure, one line for a success), the slowest binaries of
//! the last run start first (durations kept in `target/test-durations.json`),
//! and doctests run afterwards with `cargo test --doc`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::model::{self, Installer};

/// One test binary cargo built.
#[derive(Debug, Clone)]
struct TestBinary {
    /// `package/target` (the target's kind when it is the library).
    name: String,
    package: String,
    executable: PathBuf,
    /// The package's root: where cargo runs its tests.
    manifest_dir: PathBuf,
}

/// How one binary ended.
struct Outcome {
    binary: TestBinary,
    passed: bool,
    took: Duration,
    output: String,
}

/// Where the ignored tests of `llm-local` find the default model.
pub(crate) const QWEN_MODEL_ENV: &str = "REPO_AGENT_QWEN_MODEL";

/// Work that runs on its own thread while the test binaries run (CI's
/// lints: most test binaries wait on pip, servers and sandboxed processes,
/// and leave the cores to it).
pub(crate) type Alongside<'a> = &'a (dyn Fn() -> anyhow::Result<()> + Sync);

/// Builds the workspace's tests, runs the binaries `jobs` at a time, then
/// the doctests. With `include_ignored` the tests marked
/// `#[ignore = "needs ..."]` run too, with [`QWEN_MODEL_ENV`] naming the
/// default model's file. `alongside` runs while the binaries do, and must
/// not need cargo's build lock for long (the doctests wait for it).
/// Fails when anything failed, after running everything.
pub(crate) fn run(
    jobs: usize,
    include_ignored: bool,
    alongside: Option<Alongside<'_>>,
    lint: Lint,
) -> anyhow::Result<()> {
    let Built {
        binaries,
        installer,
    } = build(lint)?;
    let installer = installer.map_or(Installer::CargoRun, Installer::Built);
    // The embedded-model tests use SmolLM2 (98 MB; never the 1.1 GB
    // default); without it they fail and say how to install it.
    if let Err(error) = model::install_with(&installer, &["--model", model::TEST_MODEL]) {
        eprintln!(
            "warning: the tests' model ({}) could not be installed ({error:#}); its tests will fail",
            model::TEST_MODEL
        );
    }
    // `--include-ignored` also runs the tests marked `#[ignore = "needs
    // ..."]`: those of the default model (Qwen2.5-Coder-1.5B, 1.1 GB, which
    // is installed unless `REPO_AGENT_QWEN_MODEL` already names it). CI runs this.
    let ignored = if include_ignored {
        Some(match std::env::var_os(QWEN_MODEL_ENV) {
            Some(path) => PathBuf::from(path),
            None => model::install_with(&installer, &[])
                .context("the ignored tests need the default model")?,
        })
    } else {
        None
    };
    let ignored = ignored.as_deref();
    let durations_file = super::target_dir().join("test-durations.json");
    let previous = read_durations(&durations_file);
    let mut queue = binaries;
    // Longest first (unknown ones count as long): the run ends when the
    // slowest binary does, so it must not start last.
    queue.sort_by(|a, b| {
        let took = |t: &TestBinary| previous.get(&t.name).copied().unwrap_or(f64::MAX);
        took(b)
            .total_cmp(&took(a))
            .then_with(|| a.name.cmp(&b.name))
    });
    let total = queue.len();
    eprintln!("== running {total} test binaries, {jobs} at a time");
    let started = Instant::now();
    let queue = Mutex::new(queue.into_iter());
    let outcomes = Mutex::new(Vec::new());
    // The work alongside takes one core: while it runs, one binary fewer
    // runs at a time (never none), and the last slot opens when it ends.
    let alongside_running = AtomicBool::new(alongside.is_some());
    let alongside_result = std::thread::scope(|scope| {
        let alongside = alongside.map(|work| {
            let running = &alongside_running;
            scope.spawn(move || {
                // Cleared on a panic too, or the last slot would wait forever.
                struct Done<'a>(&'a AtomicBool);
                impl Drop for Done<'_> {
                    fn drop(&mut self) {
                        self.0.store(false, Ordering::Release);
                    }
                }
                let _done = Done(running);
                work()
            })
        });
        for slot in 0..jobs.max(1) {
            let running = &alongside_running;
            let queue = &queue;
            let outcomes = &outcomes;
            scope.spawn(move || {
                // Bounded by the work alongside, which clears the flag
                // however it ends.
                while slot > 0 && slot + 1 == jobs && running.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(200));
                }
                loop {
                    let next = queue.lock().ok().and_then(|mut q| q.next());
                    let Some(binary) = next else { break };
                    let outcome = run_binary(binary, ignored);
                    report(&outcome);
                    if let Ok(mut all) = outcomes.lock() {
                        all.push(outcome);
                    }
                }
            });
        }
        alongside.map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("the work alongside the tests panicked")))
        })
    });
    let outcomes = outcomes.into_inner().unwrap_or_default();
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(|o| o.binary.name.as_str())
        .collect();
    let durations: BTreeMap<&str, f64> = outcomes
        .iter()
        .map(|o| (o.binary.name.as_str(), o.took.as_secs_f64()))
        .collect();
    if let Ok(text) = serde_json::to_string_pretty(&durations) {
        // Only a hint for the next run's order.
        let _ = std::fs::write(&durations_file, text);
    }
    eprintln!(
        "== {} of {total} test binaries passed in {:.0} s",
        total - failed.len(),
        started.elapsed().as_secs_f64()
    );
    eprintln!("== doctests");
    // Under the same wrapper as the build, or cargo would build every
    // library again for the doctests.
    let mut doctests = super::cargo();
    lint.apply(&mut doctests)?;
    let doctests = super::run(doctests.args(["test", "--workspace", "--all-features", "--doc"]));
    if !failed.is_empty() {
        bail!("failed test binaries: {}", failed.join(", "));
    }
    doctests?;
    alongside_result.unwrap_or(Ok(()))
}

/// What the test build produced.
struct Built {
    binaries: Vec<TestBinary>,
    /// llm-local's `install` example, when cargo reported it.
    installer: Option<PathBuf>,
}

/// Whether the test build is also the workspace's clippy run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lint {
    /// A plain build.
    No,
    /// clippy-driver compiles the workspace's own crates (cargo's
    /// `RUSTC_WORKSPACE_WRAPPER`, which is how `cargo clippy` itself runs
    /// it) with `-D warnings`, every target included: the build then fails
    /// on what `cargo clippy --workspace --all-targets --all-features -- -D
    /// warnings` reports, and CI does not check every crate a second time
    /// (about 250 s of CPU on 2 cores).
    WhileBuilding,
}

impl Lint {
    /// Sets `command` up to build under clippy-driver, when asked.
    fn apply(self, command: &mut Command) -> anyhow::Result<()> {
        if self == Lint::WhileBuilding {
            let sysroot = Command::new("rustc")
                .args(["--print", "sysroot"])
                .output()
                .context("cannot run rustc --print sysroot")?;
            let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
            let driver = Path::new(&sysroot).join("bin").join("clippy-driver");
            if !driver.is_file() {
                bail!(
                    "{} not found: install clippy (rustup component add clippy)",
                    driver.display()
                );
            }
            // The separator is clippy-driver's own (cargo-clippy passes
            // lint flags this way).
            command.env("RUSTC_WORKSPACE_WRAPPER", driver).env(
                "CLIPPY_ARGS",
                "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__",
            );
        }
        Ok(())
    }
}

/// `cargo test --workspace --all-features --no-run`, reading the executables from
/// cargo's JSON messages (diagnostics still go to the terminal).
fn build(lint: Lint) -> anyhow::Result<Built> {
    let mut tests = super::cargo();
    lint.apply(&mut tests)?;
    tests.args([
        "test",
        "--workspace",
        // The measuring hooks and the petgraph views are features of
        // repo-graph: their examples, bench and doctests are tested too.
        "--all-features",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    let mut built = Built {
        binaries: Vec::new(),
        installer: None,
    };
    if lint == Lint::WhileBuilding {
        // What `cargo clippy --all-targets` checks, benches included (built,
        // never run here). Not `--all-targets` itself: that builds examples
        // as test harnesses, which are neither tests nor runnable (the
        // model installer among them); they are built as programs below.
        tests.args(["--lib", "--bins", "--tests", "--benches"]);
        collect(&mut tests, &mut built)?;
        let mut examples = super::cargo();
        lint.apply(&mut examples)?;
        examples.args([
            "build",
            "--workspace",
            "--all-features",
            "--examples",
            "--message-format=json-render-diagnostics",
        ]);
        collect(&mut examples, &mut built)?;
    } else {
        collect(&mut tests, &mut built)?;
    }
    if built.binaries.is_empty() {
        bail!("cargo built no test binaries");
    }
    Ok(built)
}

/// Runs one cargo build, adding the test binaries and the model installer
/// its JSON messages announce to `built`.
fn collect(command: &mut Command, built: &mut Built) -> anyhow::Result<()> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run cargo")?;
    let stdout = child.stdout.take().context("cargo's output")?;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if let Some(binary) = test_binary(&message) {
            built.binaries.push(binary);
        } else if is_model_installer(&message) {
            built.installer = message["executable"].as_str().map(PathBuf::from);
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!("building the tests failed ({status})");
    }
    Ok(())
}

/// Whether a `compiler-artifact` message announces llm-local's `install`
/// example.
fn is_model_installer(message: &serde_json::Value) -> bool {
    message["reason"] == "compiler-artifact"
        && message["profile"]["test"] == false
        && message["target"]["kind"][0] == "example"
        && message["target"]["name"] == "install"
        && message["package_id"]
            .as_str()
            .is_some_and(|id| id.contains("llm-local"))
}

/// The test binary a `compiler-artifact` message announces, if it is one.
fn test_binary(message: &serde_json::Value) -> Option<TestBinary> {
    if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
        return None;
    }
    let executable = PathBuf::from(message["executable"].as_str()?);
    let manifest_dir = Path::new(message["manifest_path"].as_str()?)
        .parent()?
        .to_path_buf();
    let target = message["target"]["name"].as_str()?;
    let kind = message["target"]["kind"][0].as_str().unwrap_or("test");
    // Benches are built (and linted), never run as tests; an example built
    // as a test harness (which `--all-targets` would make) is no suite.
    if kind == "bench" || kind == "example" {
        return None;
    }
    // The package's name is the last path component of its id's source
    // part for path packages; the manifest directory names it plainly.
    let package = manifest_dir.file_name()?.to_string_lossy().into_owned();
    let name = match kind {
        "lib" | "bin" => format!("{package}/{kind}:{target}"),
        _ => format!("{package}/{target}"),
    };
    Some(TestBinary {
        name,
        package,
        executable,
        manifest_dir,
    })
}

fn run_binary(binary: TestBinary, ignored: Option<&Path>) -> Outcome {
    let started = Instant::now();
    let mut command = Command::new(&binary.executable);
    if let Some(model) = ignored {
        command.arg("--include-ignored").env(QWEN_MODEL_ENV, model);
    }
    let result = command
        .current_dir(&binary.manifest_dir)
        .env("CARGO_MANIFEST_DIR", &binary.manifest_dir)
        .env("CARGO_PKG_NAME", &binary.package)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let (passed, output) = match result {
        Err(error) => (
            false,
            format!("cannot start {}: {error}", binary.executable.display()),
        ),
        Ok(mut child) => {
            // stderr on a thread, so neither pipe can fill and stall the
            // test while the other is read.
            let stderr = child.stderr.take();
            let reader = std::thread::spawn(move || {
                let mut text = String::new();
                if let Some(mut stderr) = stderr {
                    let _ = stderr.read_to_string(&mut text);
                }
                text
            });
            let mut output = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                let _ = stdout.read_to_string(&mut output);
            }
            let errors = reader.join().unwrap_or_default();
            output.push_str(&errors);
            match child.wait() {
                Ok(status) => (status.success(), output),
                Err(error) => (false, format!("{output}\nwaiting for the test: {error}")),
            }
        }
    };
    Outcome {
        binary,
        passed,
        took: started.elapsed(),
        output,
    }
}

fn report(outcome: &Outcome) {
    let summary = outcome
        .output
        .lines()
        .rev()
        .find(|l| l.starts_with("test result:"))
        .unwrap_or("no summary");
    if outcome.passed {
        eprintln!(
            "ok     {} ({:.1} s): {summary}",
            outcome.binary.name,
            outcome.took.as_secs_f64()
        );
    } else {
        eprintln!(
            "FAILED {} ({:.1} s)\n{}\n-- end of {}",
            outcome.binary.name,
            outcome.took.as_secs_f64(),
            outcome.output,
            outcome.binary.name
        );
    }
}

fn read_durations(path: &Path) -> BTreeMap<String, f64> {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn artifact(kind: &str, name: &str, test: bool) -> serde_json::Value {
        serde_json::json!({
            "reason": "compiler-artifact",
            "package_id": "path+file:///w/crates/llm-local#llm-local@0.1.0",
            "manifest_path": "/w/crates/llm-local/Cargo.toml",
            "target": {"kind": [kind], "name": name},
            "profile": {"test": test},
            "executable": format!("/w/target/debug/{name}"),
        })
    }

    #[test]
    fn only_test_suites_run_and_only_the_built_program_installs() {
        // A test suite and a library's unit tests run.
        assert!(test_binary(&artifact("test", "model", true)).is_some());
        assert!(test_binary(&artifact("lib", "llm_local", true)).is_some());
        // Benches, and examples built as test harnesses (`--all-targets`),
        // are built but never run as tests.
        assert!(test_binary(&artifact("bench", "decode", true)).is_none());
        assert!(test_binary(&artifact("example", "install", true)).is_none());
        // The installer is the example built as a program, not as a harness.
        assert!(is_model_installer(&artifact("example", "install", false)));
        assert!(!is_model_installer(&artifact("example", "install", true)));
        assert!(!is_model_installer(&artifact("example", "measure", false)));
    }
}
