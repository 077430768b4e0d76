#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The AC rules against the benchmark's own scripts: generated READMEs and
//! repositories (method spellings, tables, code fences, feature lists,
//! parameters, dashes and colons in paths, `\r\n`, undecodable bytes,
//! Python-only whitespace, test directories) are scored by this crate and
//! by `eval_harness/api_coverage.py`, `calculate_api_coverage.py` and
//! `calculate_api_coverage_agents.py` (copies in `testdata/repogenesis-mini`),
//! and every endpoint and verdict must agree. Plus snapshots of what each
//! reading finds in the mini benchmark's READMEs.

use std::path::{Path, PathBuf};

use bench_harness::repogenesis::{
    AcRule, SourceFiles, extract_endpoints, is_implemented, python_text,
};
use context_pack::spec::declared_endpoints;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/repogenesis-mini")
}

fn method() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "GET", "POST", "PUT", "DELETE", "PATCH", "get", "Post", "dElEtE",
    ])
    .prop_map(str::to_owned)
}

fn path() -> impl Strategy<Value = String> {
    let segment = prop::sample::select(vec![
        "users",
        "api",
        "v1",
        "{id}",
        "<int:pk>",
        ":id",
        "user-profile",
        "sum",
        "items",
        "x",
        "login",
        "héllo",
    ]);
    (
        prop::collection::vec(segment, 0..4),
        prop::sample::select(vec!["", "/", "`", "*", "**", ":"]),
    )
        .prop_map(|(segments, tail)| format!("/{}{tail}", segments.join("/")))
}

fn readme_line() -> impl Strategy<Value = String> {
    let space = prop::sample::select(vec![" ", "  ", "\t", "\u{1c}", "\u{a0}", ""]);
    prop_oneof![
        (
            method(),
            space.clone(),
            path(),
            prop::sample::select(vec![" - list them", ": create", " ", "", " x"])
        )
            .prop_map(|(m, s, p, d)| format!("{m}{s}{p}{d}")),
        (method(), path(), prop::bool::ANY).prop_map(|(m, p, tick)| {
            let t = if tick { "`" } else { "" };
            format!("| {m} | {t}{p}{t} | does things |")
        }),
        (method(), path()).prop_map(|(m, p)| format!("**{m}** `{p}`")),
        (
            prop::sample::select(vec!["", "bash", "http", "py3"]),
            method(),
            path()
        )
            .prop_map(|(lang, m, p)| format!("```{lang}\n{m} {p} - in a block\n```")),
        prop::sample::select(vec![
            "- User Login",
            "- Health Check",
            "* File Upload Service",
            "- Data Export API",
            "- user login",
            "- Search View",
            "- UserCreate",
            "-  Manage  Register",
        ])
        .prop_map(str::to_owned),
        "[ -~]{0,30}".prop_map(|s| s),
    ]
}

fn readme() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(readme_line(), 0..10),
        prop::sample::select(vec!["\n", "\r\n", "\r"]),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(lines, newline, garbage)| {
            let mut bytes = lines.join(newline).into_bytes();
            if garbage {
                bytes.extend_from_slice(b"\xff\xfe GET /bad\xc3(\n");
            }
            bytes
        })
}

fn source_line() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            prop::sample::select(vec![
                "@app",
                "@router",
                "@bp",
                "app",
                "router",
                "@api.route"
            ]),
            method(),
            path()
        )
            .prop_map(|(who, m, p)| format!(
                "{who}.{}(\"{}\")",
                m.to_lowercase(),
                p.trim_end_matches(['`', '*'])
            )),
        (method(), path()).prop_map(|(m, p)| format!("@{}Mapping(\"{p}\")", {
            let mut c = m.to_lowercase();
            if let Some(first) = c.get_mut(0..1) {
                first.make_ascii_uppercase();
            }
            c
        })),
        method().prop_map(|m| format!("@app.route('/x', methods=[\"{}\"])", m.to_uppercase())),
        method().prop_map(|m| format!("@{}", m.to_uppercase())),
        path().prop_map(|p| format!("# see {p}")),
        prop::sample::select(vec![
            "d.get(key)",
            "class UserCreate: pass",
            "user_login = True",
            "def file_upload(): pass",
            "'users'",
            "\"items\"",
            "@RequestMapping(value=\"/a\", method = RequestMethod.GET)",
            "Spark.post(\"/x\", h)",
        ])
        .prop_map(str::to_owned),
    ]
}

fn repo() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let dir = prop::sample::select(vec![
        "", "src/", "tests/", "test/", "build/", "pkg/", "dist/", ".idea/",
    ]);
    let name = prop::sample::select(vec![
        "app.py",
        "Main.java",
        "routes.ts",
        "notes.txt",
        "x.kt",
        ".py",
        "a.py.bak",
    ]);
    let file = (
        dir,
        name,
        prop::collection::vec(source_line(), 0..6),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(dir, name, lines, crlf)| {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            (format!("{dir}{name}"), text.into_bytes())
        });
    prop::collection::vec(file, 0..4)
}

const PYTHON: &str = r#"
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from eval_harness import api_coverage as H
import calculate_api_coverage as L
import calculate_api_coverage_agents as A
out = []
for case in json.load(open(sys.argv[2])):
    readme, repo = case + "/README.md", case + "/repo"
    h = H.extract_api_endpoints_from_readme(Path(readme))
    l = L.extract_api_endpoints_from_readme(readme)
    a = A.extract_api_endpoints_from_readme(readme)
    out.append({
        "harness": [[e["method"], e["path"], H.search_implementation(Path(repo), e)] for e in h],
        "legacy": [[e["method"], e["path"], L.search_implementation(repo, e)] for e in l],
        "paper": [[e["method"], e["path"], A.search_implementation(repo, e)] for e in a],
    })
print(json.dumps(out))
"#;

#[test]
fn every_rule_agrees_with_the_benchmarks_scripts() {
    // python3 runs the benchmark's own scripts; the project needs it anyway
    // (its venvs), so a missing one is a failure, not a skip.
    assert!(
        std::process::Command::new("python3")
            .arg("-V")
            .output()
            .is_ok(),
        "python3 is not installed: this test runs the benchmark's own scripts with it"
    );
    let work = tempfile::tempdir().unwrap();
    let mut runner = TestRunner::new(Config {
        rng_seed: proptest::test_runner::RngSeed::Fixed(2026),
        ..Config::default()
    });
    let strategy = (readme(), repo());
    let mut cases = Vec::new();
    for i in 0..400 {
        let (readme, files) = strategy.new_tree(&mut runner).unwrap().current();
        let dir = work.path().join(format!("case{i}"));
        std::fs::create_dir_all(dir.join("repo")).unwrap();
        std::fs::write(dir.join("README.md"), &readme).unwrap();
        for (name, content) in &files {
            let path = dir.join("repo").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        cases.push(dir);
    }
    let manifest = work.path().join("cases.json");
    let names: Vec<String> = cases.iter().map(|c| c.display().to_string()).collect();
    std::fs::write(&manifest, serde_json::to_string(&names).unwrap()).unwrap();
    let output = std::process::Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(mini())
        .arg(&manifest)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    let mut endpoints_seen = 0;
    for (case, python) in cases.iter().zip(&expected) {
        let readme = python_text(&std::fs::read(case.join("README.md")).unwrap());
        for (rule, key) in [
            (AcRule::Harness, "harness"),
            (AcRule::Legacy, "legacy"),
            (AcRule::Paper, "paper"),
        ] {
            let files = SourceFiles::read(rule, &case.join("repo"));
            let ours: Vec<serde_json::Value> = extract_endpoints(rule, &readme)
                .iter()
                .map(|e| {
                    serde_json::json!([e.method.as_str(), e.path, is_implemented(rule, &files, e)])
                })
                .collect();
            endpoints_seen += ours.len();
            assert_eq!(
                serde_json::Value::Array(ours),
                python[key],
                "{key} differs on {}:\nREADME {:?}",
                case.display(),
                readme
            );
        }
    }
    // The generator must exercise the rules, not just agree on nothing.
    assert!(endpoints_seen > 600, "{endpoints_seen}");
}

#[test]
fn what_each_reading_finds_in_the_mini_readmes() {
    let mut found = Vec::new();
    for task in [
        "SimpleFastPyAPI",
        "flask",
        "javalin-task-manager",
        "rock-paper-scissors-flask",
    ] {
        let readme =
            python_text(&std::fs::read(mini().join("repo").join(task).join("README.md")).unwrap());
        let rule = |rule| -> Vec<String> {
            extract_endpoints(rule, &readme)
                .iter()
                .map(|e| e.label())
                .collect()
        };
        found.push(serde_json::json!({
            "task": task,
            "harness": rule(AcRule::Harness),
            "legacy": rule(AcRule::Legacy),
            "paper": rule(AcRule::Paper),
            "declared": declared_endpoints(&readme).iter().map(|e| e.label()).collect::<Vec<_>>(),
        }));
    }
    insta::assert_json_snapshot!(found);
}
