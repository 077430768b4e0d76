#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `bench-harness` binary that `cargo xtask bench gittaskbench` runs:
//! its flags are the ones xtask passes through, and bad ones fail with the
//! usage before anything is run.

use std::process::Command;

fn harness(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bench-harness"))
        .args(args)
        .env("REPO_AGENT_HOME", tempfile::tempdir().unwrap().keep())
        .output()
        .unwrap()
}

#[test]
fn help_prints_the_usage() {
    let out = harness(&["gittaskbench", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("bench-harness gittaskbench --root <CHECKOUT>"),
        "{text}"
    );
    assert!(text.contains("--grade-only --outputs <DIR>"), "{text}");
}

#[test]
fn bad_arguments_fail_before_anything_runs() {
    let usage = "usage: bench-harness gittaskbench";
    for (args, says) in [
        (&["gittaskbench"][..], usage),
        (&["gittaskbench", "--root"], usage),
        (&["gittaskbench", "--frobnicate"], usage),
        (&["swebench"], usage),
        (&[], usage),
        (
            &["gittaskbench", "--root", "x", "--jobs", "many"],
            "--jobs takes a number",
        ),
    ] {
        let out = harness(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

#[test]
fn grade_only_needs_the_outputs() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/gittaskbench-mini");
    let out = tempfile::tempdir().unwrap();
    let result = harness(&[
        "gittaskbench",
        "--root",
        root.to_str().unwrap(),
        "--grade-only",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(!result.status.success());
    let text = String::from_utf8_lossy(&result.stderr);
    assert!(text.contains("--grade-only needs --outputs"), "{text}");
}
