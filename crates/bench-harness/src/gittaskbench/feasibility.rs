//! Which GitTaskBench tasks can run on this machine, with the evidence.
//!
//! Each task gets every reason that applies and a class, the first of:
//!
//! 1. [`Feasibility::DataMissing`]: an input file or the ground truth is
//!    not in the checkout (the snapshot lacked it: `.missing.json` from
//!    `cargo xtask gittaskbench-data`, or it is simply absent);
//! 2. [`Feasibility::NeedsWeights`]: the task's repository fetches model
//!    weights from a hub or URL, or loads a weight file it does not
//!    contain (statically: [`weight_evidence`]);
//! 3. [`Feasibility::NeedsNetwork`]: the task names a web address to read
//!    (in its description or an input file);
//! 4. [`Feasibility::Runnable`].
//!
//! The static weight check reads the repository's Python files and
//! README, outside tests, for hub calls (`from_pretrained(`,
//! `from_hparams(`, `torch.hub.load`, `hf_hub_download(`,
//! `snapshot_download(`, `pretrained=True`, `load_state_dict_from_url(`,
//! `get_checkpoint_url(`, `gdown.download(`, Keras `get_file(... origin`,
//! ModelScope imports, FunASR's `AutoModel(model=`), addresses of weight
//! files, and string literals naming a weight file (`.pth`, `.onnx`,
//! `.ckpt`, `.h5`, `.pb`, `.pt`, `.safetensors`, `.tflite`) that no file of
//! the repository has. Scripts that make weights or data (names starting
//! with train, export, convert, prepare, download_) are not read: they
//! are not how a task uses the repository. It is evidence, not proof: a
//! run confirms it when the sandbox refuses the download.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::gittaskbench::task::{BenchTask, Benchmark};

/// A task's class (the first reason that applies; see the module).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feasibility {
    /// Inputs or ground truth absent from the checkout.
    DataMissing,
    /// Model weights from a hub or the web.
    NeedsWeights,
    /// Other network access (a web page to read).
    NeedsNetwork,
    /// Nothing stands in the way here.
    Runnable,
}

impl Feasibility {
    /// The snake_case name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Feasibility::DataMissing => "data_missing",
            Feasibility::NeedsWeights => "needs_weights",
            Feasibility::NeedsNetwork => "needs_network",
            Feasibility::Runnable => "runnable",
        }
    }
}

/// One piece of evidence: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    /// The reason it supports.
    pub reason: Feasibility,
    /// A file relative to the checkout, or the task's description.
    pub file: String,
    /// 1-based line, 0 when not applicable.
    pub line: usize,
    /// The matching text, cut to 160 characters.
    pub text: String,
}

/// A task's assessment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskFeasibility {
    /// The task ID.
    pub task: String,
    /// Its repository.
    pub repo: String,
    /// The class.
    pub class: Feasibility,
    /// Evidence for every reason found, at most [`MAX_EVIDENCE`] per
    /// reason.
    pub evidence: Vec<Evidence>,
}

/// Pieces of evidence kept per reason.
pub const MAX_EVIDENCE: usize = 3;

/// Files of a repository read by the static check, and their size limit.
const MAX_FILES: usize = 20_000;
const MAX_FILE_BYTES: u64 = 2 << 20;

static HUB_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\bfrom_pretrained\(|\bfrom_hparams\(|\btorch\.hub\.load|\bhf_hub_download\(",
        r"|\bsnapshot_download\(|\bpretrained\s*=\s*True\b|\bload_state_dict_from_url\(",
        r"|\bget_checkpoint_url\(|\bgdown\.download\(|\bget_file\([^)]*\borigin\s*=",
        r"|^\s*(from|import)\s+modelscope\b|\bAutoModel\(\s*model\s*=",
    ))
    .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

static WEIGHT_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(https?://[^/\s'\x22)]+/[^\s'\x22)]+\.(pth|pt|ckpt|onnx|h5|pb|bin|safetensors|tflite|pkl))(?:[\s'\x22)?#]|$)")
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

static WEIGHT_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"['"]([^'"\s%{}*]+\.(pth|onnx|ckpt|h5|pb|pt|safetensors|tflite))['"]"#)
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

static WEB_ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"https?://[A-Za-z0-9\-._~:/?#\[\]@!$&*+,;=%]+")
        .unwrap_or_else(|_| unreachable!("a fixed pattern"))
});

/// Assesses `tasks` of `bench`; repositories are read once each.
pub fn assess(bench: &Benchmark, tasks: &[&BenchTask]) -> Vec<TaskFeasibility> {
    let missing = missing_blobs(bench.root());
    let mut weights: HashMap<String, Vec<Evidence>> = HashMap::new();
    tasks
        .iter()
        .map(|task| {
            // The query, read once for both checks that need it.
            let query = task
                .query
                .as_ref()
                .and_then(|q| fs::read_to_string(q).ok())
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .unwrap_or_default();
            let mut evidence = data_evidence(bench, task, &query, &missing);
            let repo_evidence = weights
                .entry(task.repo.clone())
                .or_insert_with(|| weight_evidence(bench.root(), &bench.code_base(&task.repo)));
            evidence.extend(repo_evidence.iter().cloned());
            evidence.extend(network_evidence(bench, &query));
            let class = evidence
                .iter()
                .map(|e| e.reason)
                .min()
                .unwrap_or(Feasibility::Runnable);
            TaskFeasibility {
                task: task.id.clone(),
                repo: task.repo.clone(),
                class,
                evidence,
            }
        })
        .collect()
}

/// The paths `.missing.json` lists (relative to the checkout).
fn missing_blobs(root: &Path) -> BTreeSet<String> {
    #[derive(Deserialize)]
    struct Missing {
        path: String,
    }
    fs::read_to_string(root.join(".missing.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Vec<Missing>>(&text).ok())
        .map(|list| list.into_iter().map(|m| m.path).collect())
        .unwrap_or_default()
}

/// The task's input files and ground truth that are not in the checkout.
fn data_evidence(
    bench: &Benchmark,
    task: &BenchTask,
    query: &serde_json::Value,
    missing: &BTreeSet<String>,
) -> Vec<Evidence> {
    let mut wanted: Vec<PathBuf> = Vec::new();
    {
        let inputs = query["file_paths"]["input_files"].as_array().cloned();
        for input in inputs.unwrap_or_default() {
            if let Some(path) = input["path"].as_str().filter(|p| !p.trim().is_empty()) {
                wanted.extend(bench.relative(Path::new(path)));
            }
        }
    }
    if let Ok(info) = &task.info
        && let Some(truth) = &info.groundtruth
    {
        wanted.push(truth.clone());
    }
    let mut evidence = Vec::new();
    for rel in wanted {
        let shown = rel.to_string_lossy().replace('\\', "/");
        let absent = missing.contains(&shown)
            || missing.iter().any(|m| m.starts_with(&format!("{shown}/")))
            || !bench.root().join(&rel).exists();
        if absent && evidence.len() < MAX_EVIDENCE {
            let why = match missing.contains(&shown) {
                true => "not in the snapshot (.missing.json)",
                false => "absent from the checkout",
            };
            evidence.push(Evidence {
                reason: Feasibility::DataMissing,
                file: shown,
                line: 0,
                text: why.into(),
            });
        }
    }
    evidence
}

/// Web addresses the task asks to read: in its description, or as the
/// content of a small input text file.
fn network_evidence(bench: &Benchmark, value: &serde_json::Value) -> Vec<Evidence> {
    let mut evidence = Vec::new();
    let description = value["task_description"].as_str().unwrap_or_default();
    if let Some(found) = WEB_ADDRESS.find(description) {
        evidence.push(Evidence {
            reason: Feasibility::NeedsNetwork,
            file: "task_description".into(),
            line: 0,
            text: found.as_str().into(),
        });
    }
    let inputs = value["file_paths"]["input_files"].as_array().cloned();
    for input in inputs.unwrap_or_default() {
        let Some(rel) = input["path"]
            .as_str()
            .and_then(|p| bench.relative(Path::new(p)))
        else {
            continue;
        };
        let path = bench.root().join(&rel);
        let small_text = path.extension().is_some_and(|e| e == "txt")
            && fs::metadata(&path).is_ok_and(|m| m.len() < 4096);
        if let Some(found) = small_text
            .then(|| fs::read_to_string(&path).ok())
            .flatten()
            .and_then(|text| WEB_ADDRESS.find(&text).map(|m| m.as_str().to_owned()))
            && evidence.len() < MAX_EVIDENCE
        {
            evidence.push(Evidence {
                reason: Feasibility::NeedsNetwork,
                file: rel.to_string_lossy().into_owned(),
                line: 1,
                text: found,
            });
        }
    }
    evidence
}

/// Whether a path inside a repository is off a task's usage path: a
/// test, or a script that makes weights or data rather than using them
/// (training, export, conversion, data preparation).
fn off_usage_path(rel: &Path) -> bool {
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let maker = ["train", "export", "convert", "prepare", "download_"]
        .iter()
        .any(|word| name.starts_with(word));
    maker
        || rel.components().any(|c| {
            let part = c.as_os_str().to_string_lossy();
            part == "tests"
                || part == "test"
                || part.starts_with("test_")
                || part.ends_with("_test.py")
        })
}

/// Static evidence that repository `repo` (under `root`) needs weights it
/// does not contain (see the module).
pub fn weight_evidence(root: &Path, repo: &Path) -> Vec<Evidence> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut stack = vec![repo.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if files.len() + names.len() > 4 * MAX_FILES {
                break;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if entry.file_name() != ".git" {
                    stack.push(path);
                }
            } else if kind.is_file() {
                names.insert(entry.file_name().to_string_lossy().into_owned());
                let text_kind = path.extension().is_some_and(|e| e == "py")
                    || entry
                        .file_name()
                        .to_string_lossy()
                        .to_ascii_lowercase()
                        .starts_with("readme");
                if text_kind && files.len() < MAX_FILES {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    let mut evidence = Vec::new();
    let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in files {
        let rel_repo = path.strip_prefix(repo).unwrap_or(&path);
        if off_usage_path(rel_repo) {
            continue;
        }
        let too_big = fs::metadata(&path).map_or(true, |m| m.len() > MAX_FILE_BYTES);
        let Some(text) = (!too_big).then(|| fs::read_to_string(&path).ok()).flatten() else {
            continue;
        };
        let shown = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        for (number, line) in text.lines().enumerate() {
            let found = if let Some(m) = HUB_CALL.find(line) {
                Some(("hub", m.as_str().trim().to_owned()))
            } else if let Some(m) = WEIGHT_URL.captures(line).and_then(|c| c.get(1)) {
                Some(("url", m.as_str().to_owned()))
            } else {
                WEIGHT_FILE.captures(line).and_then(|c| {
                    let literal = c.get(1)?.as_str();
                    let base = literal.rsplit('/').next().unwrap_or(literal);
                    // `.pt` and `.pb` are also country domains
                    // ("sapo.pt"): those count only with a path, an
                    // underscore or a digit.
                    let ambiguous = matches!(c.get(2)?.as_str(), "pt" | "pb")
                        && !literal
                            .contains(|ch: char| ch == '/' || ch == '_' || ch.is_ascii_digit());
                    (!ambiguous && !names.contains(base))
                        .then(|| ("absent file", literal.to_owned()))
                })
            };
            let Some((kind, matched)) = found else {
                continue;
            };
            let count = seen.entry(kind).or_default();
            *count += 1;
            if *count <= MAX_EVIDENCE {
                evidence.push(Evidence {
                    reason: Feasibility::NeedsWeights,
                    file: shown.clone(),
                    line: number + 1,
                    text: format!("{kind}: {}", cut(&matched, 160)),
                });
            }
        }
    }
    evidence
}

/// The held-out third of `runnable` (task IDs): the `round(n / 3)` with
/// the smallest FNV-1a hash of their ID. Fixed by the IDs alone, so the
/// same tasks are held out in every run; never tune on them. IDs that
/// share a repository's prefix rank together, so the third tends to be
/// whole repositories, which tuning then never sees.
pub fn held_out(runnable: &[&str]) -> BTreeSet<String> {
    let hash = |id: &str| crate::gittaskbench::grade::fnv1a(id.as_bytes());
    let mut ranked: Vec<&str> = runnable.to_vec();
    ranked.sort_by_key(|id| (hash(id), id.to_string()));
    ranked.dedup();
    let third = (ranked.len() + 1) / 3;
    ranked.into_iter().take(third).map(str::to_owned).collect()
}

/// Which part of the runnable tasks a run keeps (`--half`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Half {
    /// The two thirds the agent may be tuned on.
    Tuning,
    /// The third set aside ([`held_out`]); never tuned on.
    HeldOut,
}

/// The held-out third of the whole checkout's runnable tasks.
///
/// The split is drawn over every task of `bench`, never over a run's
/// selection: `--tasks A,B,C --half tuning` must keep the tuning tasks
/// among A, B, C, not re-split those three into thirds of their own.
pub fn benchmark_held_out(bench: &Benchmark) -> Result<BTreeSet<String>, crate::Error> {
    let all = bench.select(&crate::gittaskbench::task::Selection::default())?;
    let assessed = assess(bench, &all);
    Ok(held_out_of(&assessed))
}

/// [`held_out`] over the runnable ones of `results`.
fn held_out_of(results: &[TaskFeasibility]) -> BTreeSet<String> {
    let runnable: Vec<&str> = results
        .iter()
        .filter(|r| r.class == Feasibility::Runnable)
        .map(|r| r.task.as_str())
        .collect();
    held_out(&runnable)
}

/// The runnable tasks of `selected` that lie in `half`, given the
/// checkout's held-out third `held` ([`benchmark_held_out`]).
pub fn in_half(selected: &[TaskFeasibility], held: &BTreeSet<String>, half: Half) -> Vec<String> {
    selected
        .iter()
        .filter(|t| t.class == Feasibility::Runnable)
        .filter(|t| held.contains(&t.task) == (half == Half::HeldOut))
        .map(|t| t.task.clone())
        .collect()
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The classes' counts and the tasks of each, as Markdown; the tasks in
/// `held` (the checkout's held-out third, [`benchmark_held_out`]) are
/// marked.
pub fn markdown(results: &[TaskFeasibility], held: &BTreeSet<String>) -> String {
    let mut by_class: BTreeMap<Feasibility, Vec<&TaskFeasibility>> = BTreeMap::new();
    for result in results {
        by_class.entry(result.class).or_default().push(result);
    }
    let mut out = String::from("| class | tasks |\n| --- | ---: |\n");
    for (class, list) in &by_class {
        out.push_str(&format!("| {} | {} |\n", class.as_str(), list.len()));
    }
    out.push_str(&format!("| all | {} |\n", results.len()));
    for (class, list) in &by_class {
        out.push_str(&format!("\n### {}\n\n", class.as_str()));
        for result in list {
            let first = result
                .evidence
                .iter()
                .find(|e| e.reason == *class)
                .map(|e| match e.line {
                    0 => format!(" ({}: {})", e.file, e.text),
                    line => format!(" ({}:{}: {})", e.file, line, e.text),
                })
                .unwrap_or_default();
            let half = match held.contains(&result.task) {
                true => " **held out**",
                false => "",
            };
            out.push_str(&format!("- {}{half}{first}\n", result.task));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn hub_calls_urls_and_absent_weight_files_are_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "code_base/R/run.py",
            concat!(
                "model = Model.from_pretrained('org/model')\n",
                "w = 'checkpoints/generator.pth'\n",
                "x = 'present.onnx'\n",
                "url = 'https://example.org/weights/best.ckpt'\n",
                "s = 'roundown(3)'\n",
                "d = ['sapo.pt', 'http://www.lx.it.pt']\n",
            ),
        );
        write(root, "code_base/R/present.onnx", "");
        write(
            root,
            "code_base/R/tests/test_x.py",
            "torch.hub.load('a', 'b')\n",
        );
        write(
            root,
            "code_base/R/export_onnx.py",
            "torch.load('made_here.pt')\n",
        );
        write(
            root,
            "code_base/R/data/get.py",
            "u = 'https://example.org/data.zip'\n",
        );
        let evidence = weight_evidence(root, &root.join("code_base/R"));
        let texts: Vec<&str> = evidence.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "hub: from_pretrained(",
                "absent file: checkpoints/generator.pth",
                "url: https://example.org/weights/best.ckpt",
            ]
        );
        assert_eq!(evidence[1].line, 2);
        assert_eq!(evidence[0].file, "code_base/R/run.py");
    }

    #[test]
    fn a_repository_without_weights_has_no_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            root,
            "code_base/P/pdf.py",
            "def extract(path):\n    return open(path).read()\n",
        );
        write(
            root,
            "code_base/P/README.md",
            "Run `python pdf.py in.pdf`.\n",
        );
        assert!(weight_evidence(root, &root.join("code_base/P")).is_empty());
    }

    #[test]
    fn a_third_is_held_out_and_stays_held_out() {
        let ids = ["A_01", "A_02", "B_01", "B_02", "C_01", "C_02", "D_01"];
        let held = held_out(&ids);
        assert_eq!(held.len(), 2);
        // The same tasks whatever the order, and a task added elsewhere
        // in the ranking moves at most one.
        let mut reversed = ids;
        reversed.reverse();
        assert_eq!(held_out(&reversed), held);
        assert!(
            held_out(&ids[..6])
                .iter()
                .filter(|t| held.contains(*t))
                .count()
                >= 1
        );
    }

    #[test]
    fn web_addresses_end_where_the_chinese_text_goes_on() {
        let found = WEB_ADDRESS
            .find("提取https://quotes.toscrape.com/tag/humor/的名人名言，存为json")
            .unwrap();
        assert_eq!(found.as_str(), "https://quotes.toscrape.com/tag/humor/");
    }
}
