//! `cargo xtask bench search`: how often the agent's entity search
//! (`search_code`) puts a task's labelled entry point among its first
//! results, on the localization dataset, BM25 beside the substring scores
//! it replaced. Fetches the dataset's libraries (the PyPI sdists the other
//! benches pin) and runs context-pack's `search_hit_rate` example.

use std::collections::BTreeSet;

use anyhow::Context;

use crate::localization::parse_dataset;
use crate::{cargo, fetch_sdists, run, workspace_root};

/// The labelled tasks, relative to the workspace.
const DATASET: &str = "testdata/localization.json";

/// Runs the measurement; `rest` goes to the example (`--k N`, `--verbose`).
pub(crate) fn bench(rest: &[&str]) -> anyhow::Result<()> {
    let dataset = workspace_root().join(DATASET);
    let text = std::fs::read_to_string(&dataset)
        .with_context(|| format!("cannot read {}", dataset.display()))?;
    let tasks = parse_dataset(&text)?;
    let wanted: BTreeSet<String> = tasks.iter().map(|t| t.library.to_lowercase()).collect();
    fetch_sdists(|s| wanted.contains(&s.package.to_lowercase()))?;
    run(cargo()
        .args([
            "run",
            "--release",
            "-p",
            "context-pack",
            "--example",
            "search_hit_rate",
            "--",
            "--dataset",
        ])
        .arg(&dataset)
        .arg("--corpus")
        .arg(workspace_root().join("target/corpus"))
        .args(rest))
}
