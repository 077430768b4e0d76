//! Drives the real `repo-agent analyze` binary on a fixture repository.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/python/relative_import_reexport")
}

fn analyze(args: &[&str]) -> (String, String, bool) {
    let out = Command::new(env!("CARGO_BIN_EXE_repo-agent"))
        .arg("analyze")
        .args(args)
        .env("REPO_AGENT_HOME", tempfile::tempdir().unwrap().keep())
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn every_format_prints_something_well_formed() {
    let root = fixture();
    let root = root.to_str().unwrap();
    let (stats, _, ok) = analyze(&[root, "--format", "stats"]);
    assert!(ok);
    let stats: serde_json::Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["modules"], 7);
    assert_eq!(stats["files_parsed"], 7);
    let (json, _, ok) = analyze(&[root, "--format", "json", "--no-cache"]);
    assert!(ok);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["schema_version"], 2);
    let (calls, _, ok) = analyze(&[root, "--format", "calls"]);
    assert!(ok);
    let calls: serde_json::Value = serde_json::from_str(&calls).unwrap();
    // `charge(cart, card)` calls the cart it is given, then its own helper.
    assert_eq!(
        calls["calls"]["shop.payments.gateway.charge"],
        serde_json::json!([
            "shop.cart.Cart.total",
            "shop.payments.gateway._send",
            "shop.utils.money.round_cents"
        ])
    );
    // Callees outside the repository, by absolute name, kept apart.
    let external = calls["external"]["checkout.main"].as_array().unwrap();
    assert!(
        external.contains(&serde_json::json!("builtins.print")),
        "{external:?}"
    );
    assert!(calls["calls"].get("builtins.print").is_none());
    let (tree, _, ok) = analyze(&[root, "--format", "tree"]);
    assert!(ok && tree.contains("class Cart  (L7-20)"));
    let (dot, _, ok) = analyze(&[root, "--format", "dot"]);
    assert!(ok && dot.starts_with("digraph modules {"));
}

#[test]
fn output_file_and_cache_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("calls.json");
    let cache = dir.path().join("cache");
    let args = [
        fixture().to_str().unwrap().to_string(),
        "--format".into(),
        "calls".into(),
        "--cache-dir".into(),
        cache.to_str().unwrap().into(),
        "--output".into(),
        out.to_str().unwrap().into(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (stdout, _, ok) = analyze(&args);
    assert!(ok && stdout.is_empty());
    let first = std::fs::read_to_string(&out).unwrap();
    assert!(std::fs::read_dir(&cache).unwrap().count() > 0);
    let (_, _, ok) = analyze(&args);
    assert!(ok);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
}

#[test]
fn a_missing_path_is_a_clear_error() {
    let (_, stderr, ok) = analyze(&["/definitely/not/here", "--no-cache"]);
    assert!(!ok);
    assert!(
        stderr.contains("cannot read the repository root"),
        "{stderr}"
    );
    assert!(stderr.contains("check that the path exists"), "{stderr}");
}

#[test]
fn lang_filters_a_mixed_repository() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tool.py"), "def main():\n    pass\n").unwrap();
    std::fs::write(
        dir.path().join("App.java"),
        "package app;\nclass App {\n  void run() { helper(); }\n  void helper() {}\n}\n",
    )
    .unwrap();
    let root = dir.path().to_str().unwrap();
    let stats = |extra: &[&str]| {
        let mut args = vec![root, "--no-cache", "--format", "stats"];
        args.extend_from_slice(extra);
        let (out, err, ok) = analyze(&args);
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    assert_eq!(stats(&[])["modules"], 2);
    let java = stats(&["--lang", "java"]);
    assert_eq!(java["modules"], 1);
    assert_eq!(java["skipped"]["other_language"], 1);
    assert_eq!(stats(&["--lang", "python,java"])["modules"], 2);
    let (calls, _, ok) = analyze(&[root, "--no-cache", "--lang", "java", "--format", "calls"]);
    assert!(ok);
    let calls: serde_json::Value = serde_json::from_str(&calls).unwrap();
    assert_eq!(calls["calls"]["app.App.run"][0], "app.App.helper");
    let (_, stderr, ok) = analyze(&[root, "--no-cache", "--lang", "cobol"]);
    assert!(!ok && stderr.contains("cobol"), "{stderr}");
}

#[test]
fn routes_format_lists_method_path_and_handler() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/routes/spring_boot");
    let (out, err, ok) = analyze(&[root.to_str().unwrap(), "--no-cache", "--format", "routes"]);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let routes = doc["routes"].as_array().unwrap();
    let get_one = routes
        .iter()
        .find(|r| r["path"] == "/api/users/{id}" && r["method"] == "GET")
        .unwrap();
    assert_eq!(get_one["handler"], "com.example.api.UserController.get");
    assert_eq!(get_one["framework"], "spring");
    assert_eq!(
        get_one["file"],
        "src/main/java/com/example/api/UserController.java"
    );
    assert_eq!(get_one["line"], 17);
}
