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
        text.contains("Usage: bench-harness gittaskbench [OPTIONS] --root <CHECKOUT>"),
        "{text}"
    );
    for flag in [
        "--grade-only",
        "--outputs <DIR>",
        "--model-path",
        "--isolation",
    ] {
        assert!(text.contains(flag), "{flag}: {text}");
    }
    let out = harness(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gittaskbench") && text.contains("repogenesis"),
        "{text}"
    );
}

/// `cargo xtask bench repogenesis --generate` checks the flags it passes on
/// against this help, by name.
#[test]
fn repogenesis_help_names_its_flags() {
    let out = harness(&["repogenesis", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--root <REPOGENESIS>",
        "--generated <DIR>",
        "--tasks",
        "--jobs",
        "--resume",
        "--out",
        "--build-timeout",
        "--start-timeout",
        "--test-timeout",
        "--isolation",
        "--no-registry",
        "--venvs",
        "--maven-repo",
        "--keep-workspaces",
    ] {
        assert!(text.contains(flag), "{flag}: {text}");
    }
}

#[test]
fn bad_arguments_fail_before_anything_runs() {
    for (args, says) in [
        (&["gittaskbench"][..], "--root <CHECKOUT>"),
        (&["gittaskbench", "--root"], "--root <CHECKOUT>"),
        (
            &["gittaskbench", "--root", "x", "--frobnicate"],
            "--frobnicate",
        ),
        (&["swebench"], "Usage: bench-harness <COMMAND>"),
        (&[], "Usage: bench-harness <COMMAND>"),
        (
            &["gittaskbench", "--root", "x", "--jobs", "many"],
            "invalid value 'many' for '--jobs <N>'",
        ),
        (&["repogenesis", "--root", "x"], "--generated <DIR>"),
        (
            &[
                "repogenesis",
                "--root",
                "x",
                "--generated",
                "g",
                "--model",
                "m",
            ],
            "--model",
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
    assert!(
        text.contains("required arguments were not provided") && text.contains("--outputs <DIR>"),
        "{text}"
    );
}
