//! aider's side of `cargo xtask bench localization`: aider's repo map for
//! the same tasks and budgets, run by a Python helper in its own venv.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde_json::{Value, json};

use super::{AIDER, AIDER_SCRIPT, Measure, Options, Row, Task, hit_points};
use crate::{Sdist, ensure_venv, target_dir, workspace_root};

/// What aider's side reported.
pub(super) struct AiderInfo {
    pub(super) version: String,
    pub(super) token_counter: String,
}

/// Installs aider into `target/aider-venv` if needed and runs the helper
/// once per library; adds aider's measurements, and the token counts of
/// our outputs, to `measures`.
pub(super) fn run_aider(
    tasks: &[Task],
    rows: &[Row],
    options: &Options,
    roots: &[(&'static Sdist, PathBuf)],
    out_dir: &Path,
    measures: &mut Vec<Measure>,
) -> anyhow::Result<AiderInfo> {
    let python = ensure_venv(&target_dir().join("aider-venv"), &[AIDER])?;
    let script = workspace_root().join(AIDER_SCRIPT);
    let o200k = o200k_file();
    if o200k.is_none() {
        eprintln!(
            "note: tiktoken-rs's o200k_base.tiktoken is not in the cargo registry; aider's \
             side counts tokens as len/4 unless tiktoken finds the file in its cache"
        );
    }
    let mut info = AiderInfo {
        version: String::new(),
        token_counter: String::new(),
    };
    let aider_rows: Vec<Row> = rows
        .iter()
        .copied()
        .filter(|r| matches!(r, Row::AiderTask | Row::AiderKeywords))
        .collect();
    for (sdist, dir) in roots {
        let indices: Vec<usize> = (0..tasks.len())
            .filter(|&t| tasks[t].library.eq_ignore_ascii_case(sdist.package))
            .collect();
        if indices.is_empty() {
            continue;
        }
        eprintln!("aider: {} ({} tasks)", sdist.dir, indices.len());
        let queries: Vec<Value> = indices
            .iter()
            .flat_map(|&t| {
                aider_rows.iter().map(move |row| {
                    json!({
                        "id": tasks[t].id,
                        "row": if row.keywords() { "keywords" } else { "task" },
                        "text": tasks[t].request,
                        "keywords": tasks[t].keywords,
                    })
                })
            })
            .collect();
        let count_files: Vec<String> = measures
            .iter()
            .filter(|m| indices.contains(&m.task))
            .map(|m| m.output.to_string_lossy().into_owned())
            .collect();
        let batch = out_dir.join("aider-batch");
        std::fs::create_dir_all(&batch)?;
        let input = batch.join(format!("{}.in.json", sdist.dir));
        let output = batch.join(format!("{}.out.json", sdist.dir));
        let spec = json!({
            "root": dir,
            "budgets": options.budgets,
            "queries": queries,
            "count_files": count_files,
        });
        std::fs::write(&input, serde_json::to_string(&spec)?)
            .with_context(|| format!("cannot write {}", input.display()))?;
        let mut command = Command::new(&python);
        command
            .arg(&script)
            .arg("batch")
            .arg(&input)
            .arg(&output)
            .arg("--cache-dir")
            .arg(out_dir.join("aider-cache").join(sdist.dir))
            .arg("--tiktoken-cache")
            .arg(target_dir().join("aider-venv/tiktoken-cache"));
        if let Some(o200k) = &o200k {
            command.arg("--o200k").arg(o200k);
        }
        // No progress bars from aider's scan in the log. aider's ranking
        // iterates over sets of strings, so its maps change with Python's
        // hash seed (a few tasks either way at small budgets): one fixed
        // seed makes runs repeatable.
        command
            .env("TQDM_DISABLE", "1")
            .env("PYTHONHASHSEED", "0")
            .stdin(Stdio::null());
        crate::run(&mut command).context("aider's repo map failed")?;
        let text = std::fs::read_to_string(&output)
            .with_context(|| format!("cannot read {}", output.display()))?;
        let result: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", output.display()))?;
        info.version = result["aider_version"].as_str().unwrap_or("?").to_string();
        info.token_counter = result["token_counter"].as_str().unwrap_or("?").to_string();
        for item in result["results"]
            .as_array()
            .context("no results from aider")?
        {
            let id = item["id"].as_str().context("result without id")?;
            let t = *indices
                .iter()
                .find(|&&t| tasks[t].id == id)
                .with_context(|| format!("aider returned an unknown task {id}"))?;
            let row = if item["row"] == "keywords" {
                Row::AiderKeywords
            } else {
                Row::AiderTask
            };
            let budget = item["budget"]
                .as_u64()
                .and_then(|b| u32::try_from(b).ok())
                .context("result without budget")?;
            let map = item["map"].as_str().unwrap_or_default();
            let folder = out_dir.join(row.key());
            std::fs::create_dir_all(&folder)?;
            let path = folder.join(format!("{id}.{budget}.txt"));
            std::fs::write(&path, map)
                .with_context(|| format!("cannot write {}", path.display()))?;
            measures.push(Measure {
                task: t,
                row,
                budget,
                hit_points: hit_points(map, &tasks[t]),
                tokens: item["tokens"].as_u64(),
                seconds: item["seconds"].as_f64().unwrap_or_default(),
                output: path,
            });
        }
        if let Some(counts) = result["counts"].as_object() {
            for measure in measures.iter_mut() {
                if let Some(n) = counts
                    .get(measure.output.to_string_lossy().as_ref())
                    .and_then(Value::as_u64)
                {
                    measure.tokens = Some(n);
                }
            }
        }
    }
    Ok(info)
}

/// tiktoken-rs's copy of o200k_base in the cargo registry (the BPE file
/// repo-agent counts with), for the aider helper to load offline.
fn o200k_file() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(cargo_home.join("registry/src"))
        .ok()?
        .filter_map(Result::ok)
        .flat_map(|index| std::fs::read_dir(index.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("tiktoken-rs-"))
        .map(|e| e.path().join("assets/o200k_base.tiktoken"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop()
}
