//! Drives the real `repo-agent rank` binary on the ranking fixture.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

fn rank(args: &[&str]) -> (String, String, bool) {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/python/ranking_hub");
    let out = Command::new(env!("CARGO_BIN_EXE_repo-agent"))
        .arg("rank")
        .arg(&fixture)
        // The fixture's git history changes with every commit of this project.
        .args(["--max-commits", "0"])
        .args(args)
        .env("REPO_AGENT_HOME", home.path())
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn json_has_the_documented_shape() {
    let (stdout, stderr, ok) = rank(&["--format", "json", "--top", "3", "--classes", "2"]);
    assert!(ok, "{stderr}");
    let value: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let modules = value["modules"].as_array().unwrap();
    assert_eq!(modules.len(), 3);
    assert_eq!(modules[0]["name"], "registry");
    for key in [
        "dependency",
        "complexity",
        "usage",
        "semantic",
        "doc",
        "git",
    ] {
        assert!(modules[0]["features"][key].is_number(), "{key}");
    }
    let scores: Vec<f64> = modules
        .iter()
        .map(|m| m["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]));
    let classes = value["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    assert_eq!(classes[0]["name"], "registry.Registry");
    assert_eq!(classes[0]["methods"], 5);
    assert_eq!(value["functions"].as_array().unwrap().len(), 3);
}

#[test]
fn table_and_weight_presets() {
    let (paper, _, ok) = rank(&[]);
    assert!(ok);
    assert!(paper.lines().next().unwrap().starts_with("module"));
    assert!(paper.contains("registry.Registry"));
    let (published, _, ok) = rank(&["--weights", "published"]);
    assert!(ok);
    assert_ne!(paper, published);
    let (_, stderr, ok) = rank(&["--weights", "/no/such/weights.toml"]);
    assert!(!ok);
    assert!(stderr.contains("weights file"), "{stderr}");
}

/// `--weights /dev/zero` (or any huge file) is refused after a bounded
/// read instead of growing without limit.
#[test]
fn endless_weight_files_are_refused() {
    let (_, stderr, ok) = rank(&["--weights", "/dev/zero"]);
    assert!(!ok);
    assert!(stderr.contains("larger than 64 KiB"), "{stderr}");
}
