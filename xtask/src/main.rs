//! Project automation: `cargo xtask <command>`.
//!
//! - `test`: installs the system packages the tests need, then runs the
//!   whole test suite (the README's test command; CI runs it too).
//! - `corpus`: fetches the real-world corpora the benchmarks read into
//!   `target/corpus/` (PyPI sdists; nothing downloaded is ever committed).
//! - `bench analysis`: measures the repo-graph pipeline on the corpora
//!   against raw tree-sitter parsing (see docs/PERFORMANCE.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The PyPI source distributions the analysis benchmarks use.
const PYTHON_CORPORA: &[(&str, &str, &str)] = &[
    ("django", "5.1.4", "Django-5.1.4"),
    ("sympy", "1.13.3", "sympy-1.13.3"),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["test", rest @ ..] => test(rest),
        ["corpus"] => corpus().map(|_| ()),
        ["bench", "analysis", rest @ ..] => bench_analysis(rest),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 test [ARGS...]         install system needs, then cargo test --workspace [ARGS]\n  \
                 corpus                 fetch benchmark corpora into target/corpus/\n  \
                 bench analysis [--runs N]  measure analysis vs raw parsing on the corpora"
            );
            bail!("unknown or missing command")
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
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
    run(cargo().args(["test", "--workspace"]).args(extra))
}

/// Downloads and unpacks the corpora; returns their directories.
fn corpus() -> anyhow::Result<Vec<PathBuf>> {
    let dir = workspace_root().join("target/corpus");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut roots = Vec::new();
    for (package, version, unpacked) in PYTHON_CORPORA {
        let root = dir.join(unpacked);
        roots.push(root.clone());
        if root.is_dir() {
            eprintln!("{} already present", root.display());
            continue;
        }
        let archive = dir.join(format!("{unpacked}.tar.gz"));
        if !archive.is_file() {
            eprintln!("downloading {package}=={version} from PyPI");
            run(Command::new("python3")
                .args(["-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q", "-d"])
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

fn bench_analysis(rest: &[&str]) -> anyhow::Result<()> {
    let runs = match rest {
        ["--runs", n] => n.parse::<u32>().context("--runs takes a number")?,
        [] => 5,
        _ => bail!("usage: cargo xtask bench analysis [--runs N]"),
    };
    let roots = corpus()?;
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "repo-graph",
        "--example",
        "measure",
    ]))?;
    let measure = workspace_root().join("target/release/examples/measure");
    for root in roots {
        eprintln!("measuring {}", root.display());
        run(Command::new(&measure)
            .arg(&root)
            .args(["--runs", &runs.to_string()]))?;
    }
    Ok(())
}
