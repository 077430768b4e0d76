//! `cargo xtask gittaskbench-data`: lays GitTaskBench's own data out
//! under `target/gittaskbench-data/` from a snapshot of its public
//! repository (QuantaAlpha/GitTaskBench) as a bare git directory, for
//! `cargo xtask bench gittaskbench --root target/gittaskbench-data`.
//!
//! Only what a run reads is extracted (`config/`, `queries/`,
//! `code_base/`, `groundtruth/`, `test_scripts/`, the README, the
//! success criteria and the grading environment's `requirements.txt`),
//! not the three agent frameworks the repository also
//! vendors. Blobs the snapshot lacks (snapshots drop files of 4 MiB and
//! more, and Git LFS content) are listed in `.missing.json` with their
//! paths, so the harness reports the tasks whose inputs or ground truth
//! are absent instead of running them blind. `.source.json` records the
//! commit and the counts; a second run with the same commit does nothing.
//!
//! Paths are checked before anything is written: no absolute paths, no
//! `..`, no component that is `.git`; symbolic links are recreated only
//! when their target stays inside the tree (others are listed as
//! skipped). The tree is written to a temporary directory and renamed
//! into place, so an interrupted run leaves the previous layout whole.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

const USAGE: &str = "usage: cargo xtask gittaskbench-data [--git-dir DIR] [--rev REV] [--out DIR]\n\n  \
    --git-dir DIR  a bare git directory of github.com/QuantaAlpha/GitTaskBench\n                 \
    (default: $GITTASKBENCH_GIT_DIR, else /work/.mirror/QuantaAlpha+GitTaskBench/repo;\n                 \
    elsewhere: git clone --bare https://github.com/QuantaAlpha/GitTaskBench)\n  \
    --rev REV      the commit to lay out (default HEAD)\n  \
    --out DIR      where (default target/gittaskbench-data)";

/// The top-level entries a run reads. `requirements.txt` is the
/// benchmark's grading environment: its pins are the versions the test
/// scripts' imports are installed at.
const KEPT: [&str; 8] = [
    "config",
    "queries",
    "code_base",
    "groundtruth",
    "test_scripts",
    "README.md",
    "Task_Success_Criteria.xlsx",
    "requirements.txt",
];

/// Bumped when what is laid out changes, so a layout of the same commit
/// made by an older xtask is made again.
const LAYOUT: u64 = 2;

/// Where the search tool's `fetch` puts the snapshot on these machines.
const MIRROR: &str = "/work/.mirror/QuantaAlpha+GitTaskBench/repo";

/// One file of the tree.
struct Entry {
    mode: String,
    sha: String,
    path: String,
}

pub(crate) fn run(args: &[&str]) -> anyhow::Result<()> {
    let mut git_dir = std::env::var_os("GITTASKBENCH_GIT_DIR").map(PathBuf::from);
    let mut rev = "HEAD".to_owned();
    let mut out = crate::workspace_root().join("target/gittaskbench-data");
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = || {
            rest.next()
                .map(|v| (*v).to_owned())
                .with_context(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match *arg {
            "--git-dir" => git_dir = Some(PathBuf::from(value()?)),
            "--rev" => rev = value()?,
            "--out" => out = PathBuf::from(value()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    let git_dir = git_dir
        .or_else(|| Path::new(MIRROR).is_dir().then(|| PathBuf::from(MIRROR)))
        .with_context(|| format!("no snapshot of GitTaskBench found\n{USAGE}"))?;
    let summary = lay_out(&git_dir, &rev, &out)?;
    println!("{summary}");
    Ok(())
}

/// Lays out `rev` of `git_dir` at `out`; a one-line summary.
fn lay_out(git_dir: &Path, rev: &str, out: &Path) -> anyhow::Result<String> {
    let commit = git(
        git_dir,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )?
    .trim()
    .to_owned();
    if let Ok(text) = fs::read_to_string(out.join(".source.json"))
        && let Ok(source) = serde_json::from_str::<serde_json::Value>(&text)
        && source["commit"] == commit.as_str()
        && source["layout"] == LAYOUT
    {
        return Ok(format!(
            "{} is already commit {commit} ({} files, {} missing)",
            out.display(),
            source["files"],
            source["missing"]
        ));
    }
    let listing = git(git_dir, &["ls-tree", "-r", "-z", "--full-tree", &commit])?;
    let mut entries = Vec::new();
    for record in listing.split('\0').filter(|r| !r.is_empty()) {
        let (meta, path) = record
            .split_once('\t')
            .with_context(|| format!("unexpected ls-tree line {record:?}"))?;
        let mut meta = meta.split(' ');
        let (Some(mode), Some(kind), Some(sha)) = (meta.next(), meta.next(), meta.next()) else {
            bail!("unexpected ls-tree line {record:?}");
        };
        let top = path.split('/').next().unwrap_or_default();
        if kind != "blob" || !KEPT.contains(&top) {
            continue;
        }
        entries.push(Entry {
            mode: mode.to_owned(),
            sha: sha.to_owned(),
            path: path.to_owned(),
        });
    }
    let parent = out.parent().unwrap_or_else(|| Path::new("."));
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = parent.join(format!(
        ".{}.partial-{}",
        out.file_name().and_then(|n| n.to_str()).unwrap_or("data"),
        std::process::id()
    ));
    if staging.exists() {
        fs::remove_dir_all(&staging)?;
    }
    fs::create_dir_all(&staging)?;
    let written = extract(git_dir, &entries, &staging);
    let (files, bytes, missing, skipped) = match written {
        Ok(counts) => counts,
        Err(error) => {
            let _ = fs::remove_dir_all(&staging);
            return Err(error);
        }
    };
    let source = serde_json::json!({
        "repository": "https://github.com/QuantaAlpha/GitTaskBench",
        "commit": commit,
        "layout": LAYOUT,
        "files": files,
        "bytes": bytes,
        "missing": missing.len(),
        "skipped": skipped,
    });
    let missing_json: Vec<serde_json::Value> = missing
        .iter()
        .map(|(path, sha)| serde_json::json!({"path": path, "sha": sha}))
        .collect();
    fs::write(
        staging.join(".missing.json"),
        serde_json::to_string_pretty(&missing_json)?,
    )?;
    fs::write(
        staging.join(".source.json"),
        serde_json::to_string_pretty(&source)?,
    )?;
    if out.exists() {
        fs::remove_dir_all(out).with_context(|| format!("cannot replace {}", out.display()))?;
    }
    fs::rename(&staging, out)?;
    Ok(format!(
        "laid out GitTaskBench {commit} at {}: {files} files, {:.1} MB, {} absent from the snapshot \
         (listed in .missing.json), {} symbolic links skipped",
        out.display(),
        bytes as f64 / 1e6,
        missing.len(),
        skipped.len()
    ))
}

/// Writes every entry's blob under `root` with one `git cat-file --batch`;
/// files written, bytes, missing (path, sha), skipped links.
#[allow(clippy::type_complexity)]
fn extract(
    git_dir: &Path,
    entries: &[Entry],
    root: &Path,
) -> anyhow::Result<(usize, u64, BTreeMap<String, String>, Vec<String>)> {
    let mut child = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start git cat-file")?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let shas: Vec<String> = entries.iter().map(|e| e.sha.clone()).collect();
    // Fed from a thread: git answers while it reads, and a full pipe
    // either way would stop both.
    let feeder = std::thread::spawn(move || -> std::io::Result<()> {
        for sha in shas {
            writeln!(stdin, "{sha}")?;
        }
        Ok(())
    });
    let mut answers = BufReader::new(child.stdout.take().context("no stdout")?);
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut missing = BTreeMap::new();
    let mut skipped = Vec::new();
    let mut header = String::new();
    for entry in entries {
        header.clear();
        answers.read_line(&mut header)?;
        let fields: Vec<&str> = header.split_whitespace().collect();
        if fields.get(1) == Some(&"missing") {
            missing.insert(entry.path.clone(), entry.sha.clone());
            continue;
        }
        let size: usize = match fields.as_slice() {
            [_, "blob", size] => size.parse()?,
            _ => bail!("unexpected answer {header:?} for {}", entry.path),
        };
        let mut content = vec![0u8; size + 1];
        answers.read_exact(&mut content)?;
        content.pop();
        let relative = safe_relative(&entry.path)
            .with_context(|| format!("refusing the path {:?}", entry.path))?;
        let dest = root.join(&relative);
        if let Some(dir) = dest.parent() {
            fs::create_dir_all(dir)?;
        }
        if entry.mode == "120000" {
            let target = String::from_utf8_lossy(&content).into_owned();
            if link_stays_inside(&relative, &target) {
                std::os::unix::fs::symlink(&target, &dest)?;
            } else {
                skipped.push(entry.path.clone());
            }
            continue;
        }
        fs::write(&dest, &content).with_context(|| format!("cannot write {}", dest.display()))?;
        if entry.mode == "100755" {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&dest, fs::Permissions::from_mode(0o755))?;
        }
        files += 1;
        bytes += size as u64;
    }
    feeder
        .join()
        .map_err(|_| anyhow::anyhow!("the feeding thread panicked"))??;
    let status = child.wait()?;
    if !status.success() {
        bail!("git cat-file failed with {status}");
    }
    Ok((files, bytes, missing, skipped))
}

/// `path` as a relative path with only normal components and no `.git`.
fn safe_relative(path: &str) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) if part != ".git" => out.push(part),
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Whether a link at `link` (relative to the root) to `target` resolves
/// inside the root, by its components alone.
fn link_stays_inside(link: &Path, target: &str) -> bool {
    if target.starts_with('/') {
        return false;
    }
    let mut depth = link.components().count().saturating_sub(1) as i64;
    for component in Path::new(target).components() {
        match component {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            _ => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// `git --git-dir DIR ARGS...`, its standard output.
pub(crate) fn git(git_dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .output()
        .context("cannot run git")?;
    if !output.status.success() {
        bail!(
            "git {args:?} in {} failed: {}",
            git_dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_written() {
        assert_eq!(safe_relative("a/b.txt"), Some(PathBuf::from("a/b.txt")));
        for bad in ["/etc/passwd", "../x", "a/../../x", "a/.git/config", ""] {
            assert_eq!(safe_relative(bad), None, "{bad}");
        }
    }

    #[test]
    fn links_out_of_the_tree_are_refused() {
        let link = Path::new("code_base/Repo/docs/link");
        assert!(link_stays_inside(link, "../README.md"));
        assert!(link_stays_inside(link, "../../../config/x"));
        assert!(!link_stays_inside(link, "../../../../etc/passwd"));
        assert!(!link_stays_inside(link, "/etc/passwd"));
    }

    /// A bare repository with a kept file, a dropped top-level directory,
    /// a link inside and one outside, laid out twice.
    #[test]
    fn a_snapshot_is_laid_out_with_its_missing_blobs_listed() {
        let dir = std::env::temp_dir().join(format!("gtb-data-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let work = dir.join("work");
        fs::create_dir_all(work.join("queries/T_01/input")).unwrap();
        fs::create_dir_all(work.join("Aider")).unwrap();
        fs::write(work.join("queries/T_01/query.json"), "{}").unwrap();
        fs::write(work.join("queries/T_01/input/in.txt"), "input").unwrap();
        fs::write(work.join("Aider/big.py"), "not kept").unwrap();
        std::os::unix::fs::symlink("query.json", work.join("queries/T_01/inside")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", work.join("queries/T_01/outside")).unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .current_dir(&work)
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .status()
                .unwrap();
            assert!(status.success(), "{args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "c"]);
        // Drop one blob from the object store, as snapshots drop large files.
        let sha = String::from_utf8(
            Command::new("git")
                .current_dir(&work)
                .args(["rev-parse", "HEAD:queries/T_01/input/in.txt"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let sha = sha.trim();
        fs::remove_file(work.join(".git/objects").join(&sha[..2]).join(&sha[2..])).unwrap();
        let out = dir.join("out");
        let summary = lay_out(&work.join(".git"), "HEAD", &out).unwrap();
        assert!(summary.contains("1 absent"), "{summary}");
        assert_eq!(
            fs::read_to_string(out.join("queries/T_01/query.json")).unwrap(),
            "{}"
        );
        assert!(!out.join("Aider").exists());
        assert!(!out.join("queries/T_01/input/in.txt").exists());
        assert!(out.join("queries/T_01/inside").is_symlink());
        assert!(!out.join("queries/T_01/outside").exists());
        let missing = fs::read_to_string(out.join(".missing.json")).unwrap();
        assert!(missing.contains("queries/T_01/input/in.txt"), "{missing}");
        let again = lay_out(&work.join(".git"), "HEAD", &out).unwrap();
        assert!(again.contains("already"), "{again}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
