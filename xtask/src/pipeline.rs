//! `cargo xtask bench pipeline`: runs the workspace's cross-crate criterion
//! benches (`cargo bench -p benches`: analysis -> rank -> context on the
//! fixtures, Django and java.base) and prints criterion's estimates as one
//! table. The corpora are fetched first (`cargo xtask corpus`) so that the
//! real ones are measured, not only the fixtures.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

use crate::{cargo, corpus, run, target_dir};

/// The steps the bench times, in the order of a task's first context.
const STEPS: &[&str] = &["analyze", "rank", "context", "analyze_rank_context"];

/// The corpora the bench knows, as criterion names their groups.
const CORPORA: &[&str] = &["fixtures", "Django-5.1.4", "java.base"];

/// Runs the benches (with `rest` passed to criterion, e.g. a filter or
/// `--quick`) and prints the table.
pub(crate) fn bench(rest: &[&str]) -> anyhow::Result<()> {
    if rest.iter().any(|a| *a == "-h" || *a == "--help") {
        println!(
            "usage: cargo xtask bench pipeline [CRITERION ARGS...]\n\n\
             runs `cargo bench -p benches --bench pipeline -- ARGS` (analysis -> rank -> context\n\
             on the fixtures, Django 5.1.4 and java.base) and prints criterion's mean estimates"
        );
        return Ok(());
    }
    corpus(|sdist| sdist.package == "django").context("fetching the corpora the bench measures")?;
    run(cargo()
        .args(["bench", "-p", "benches", "--bench", "pipeline", "--"])
        .args(rest))?;
    let table = table(&target_dir().join("criterion"))?;
    if table.lines().count() <= 2 {
        bail!("criterion wrote no estimates under target/criterion/pipeline_*");
    }
    println!("{table}");
    Ok(())
}

/// The markdown table of every (corpus, step) estimate criterion wrote
/// under `criterion_dir`: mean and its 95 % interval.
fn table(criterion_dir: &Path) -> anyhow::Result<String> {
    let mut out =
        String::from("| corpus | step | mean | 95 % interval |\n| --- | --- | ---: | ---: |\n");
    for corpus in CORPORA {
        for step in STEPS {
            // Criterion turns the group's `/` into `_` in its directory names.
            let file = criterion_dir
                .join(format!("pipeline_{corpus}"))
                .join(step)
                .join("new/estimates.json");
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let estimates: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not criterion's estimates", file.display()))?;
            let mean = &estimates["mean"];
            let (Some(point), Some(low), Some(high)) = (
                mean["point_estimate"].as_f64(),
                mean["confidence_interval"]["lower_bound"].as_f64(),
                mean["confidence_interval"]["upper_bound"].as_f64(),
            ) else {
                bail!("{} has no mean estimate", file.display());
            };
            out.push_str(&format!(
                "| {corpus} | {step} | {} | {} - {} |\n",
                duration(point),
                duration(low),
                duration(high)
            ));
        }
    }
    Ok(out)
}

/// Nanoseconds as a readable duration.
fn duration(nanos: f64) -> String {
    if nanos >= 1e9 {
        format!("{:.2} s", nanos / 1e9)
    } else if nanos >= 1e6 {
        format!("{:.1} ms", nanos / 1e6)
    } else {
        format!("{:.1} µs", nanos / 1e3)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_criterions_estimates() {
        let dir = tempfile::tempdir().unwrap();
        let step = dir.path().join("pipeline_fixtures/rank/new");
        std::fs::create_dir_all(&step).unwrap();
        std::fs::write(
            step.join("estimates.json"),
            r#"{"mean":{"point_estimate":2500000.0,"confidence_interval":{"lower_bound":2400000.0,"upper_bound":2600000.0}}}"#,
        )
        .unwrap();
        let table = table(dir.path()).unwrap();
        assert!(
            table.contains("| fixtures | rank | 2.5 ms | 2.4 ms - 2.6 ms |"),
            "{table}"
        );
        assert_eq!(table.lines().count(), 3, "{table}");
    }

    #[test]
    fn a_broken_estimates_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let step = dir.path().join("pipeline_java.base/analyze/new");
        std::fs::create_dir_all(&step).unwrap();
        std::fs::write(step.join("estimates.json"), "{}").unwrap();
        assert!(table(dir.path()).is_err());
    }
}
