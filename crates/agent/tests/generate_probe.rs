//! `generate::probe` against real services in the sandbox: a tiny JSON
//! service on Python's standard library (`fixtures/probe/service.py`),
//! started by a `start.sh` written for each test, shows one verdict per
//! test. Only the Flask test and the pytest part of the first test need
//! PyPI; they skip that part, saying so, when it cannot be reached.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;

use agent::generate::probe::{self, ProbePlan, ProbeReport, ProbeRequest, Readiness};
use repo_graph::HttpMethod;
use sandbox::{Isolation, PythonEnv, Sandbox, SandboxConfig};
use serde_json::json;

const SERVICE: &str = include_str!("fixtures/probe/service.py");

/// Longest a test may take, pip included.
const TEST_LIMIT: Duration = Duration::from_secs(150);

/// What pip prints when PyPI cannot be reached.
const OFFLINE: [&str; 3] = [
    "Temporary failure in name resolution",
    "Network is unreachable",
    "No matching distribution",
];

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_LIMIT, test)
        .await
        .expect("the test took longer than its limit");
}

/// A port nothing listens on now: the kernel's pick for port 0.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A repository with the fixture service, `start.sh` and `files`.
fn repo(start: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("service.py"), SERVICE).unwrap();
    std::fs::write(dir.path().join("start.sh"), start).unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

async fn sandbox(dir: &Path, isolation: Isolation, registry: bool) -> Sandbox {
    let mut builder = SandboxConfig::builder(dir)
        .isolation(isolation)
        .timeout(Duration::from_secs(120))
        .package_registry(registry);
    if isolation == Isolation::Namespaces {
        builder = builder.read_only_path(shared_env_dir());
    }
    Sandbox::new(builder.build().unwrap()).await.unwrap()
}

fn shared_env_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("generate_probe")
}

/// One virtualenv for the tests that need only the standard library, made
/// by `probe::install` once and reused by later runs (making one costs
/// seconds; these tests install nothing in it).
async fn shared_env() -> PythonEnv {
    static ENV: tokio::sync::OnceCell<PythonEnv> = tokio::sync::OnceCell::const_new();
    ENV.get_or_init(|| async {
        let dir = shared_env_dir();
        std::fs::create_dir_all(&dir).unwrap();
        // Another run of this binary may be making it at the same time.
        let lock = std::fs::File::create(dir.join("venv.lock")).unwrap();
        lock.lock().unwrap();
        let sandbox = sandbox(&dir, Isolation::Process, false).await;
        let (env, outcome) = probe::install(&sandbox, &dir, &dir.join("venv"), false)
            .await
            .unwrap();
        assert!(outcome.ok && outcome.skipped, "{outcome:?}");
        env
    })
    .await
    .clone()
}

fn requests() -> Vec<ProbeRequest> {
    vec![
        ProbeRequest {
            method: HttpMethod::Get,
            path: "/health".into(),
            body: None,
            expect_status: vec![200],
            expect_keys: vec!["status".into()],
            label: "GET /health (success)".into(),
        },
        ProbeRequest {
            method: HttpMethod::Get,
            path: "/items/1".into(),
            body: None,
            expect_status: vec![200],
            expect_keys: vec!["id".into(), "name".into()],
            label: "GET /items/1 (success)".into(),
        },
        ProbeRequest {
            method: HttpMethod::Post,
            path: "/echo".into(),
            body: Some(json!({"text": "hi"})),
            expect_status: Vec::new(),
            expect_keys: vec!["echo".into()],
            label: "POST /echo (valid)".into(),
        },
        ProbeRequest {
            method: HttpMethod::Get,
            path: "/missing?x=1".into(),
            body: None,
            expect_status: vec![404],
            expect_keys: Vec::new(),
            label: "GET /missing (404)".into(),
        },
    ]
}

fn plan(port: u16) -> ProbePlan {
    let mut plan = ProbePlan::new(port, requests());
    plan.startup_timeout = Duration::from_secs(15);
    plan.request_timeout = Duration::from_secs(5);
    plan.test_timeout = Duration::from_secs(60);
    plan
}

async fn probe_stdlib(dir: &Path, plan: &ProbePlan) -> ProbeReport {
    let env = shared_env().await;
    let sandbox = sandbox(dir, Isolation::Process, false).await;
    probe::probe(&sandbox, dir, &env, plan).await.unwrap()
}

fn offline(log: &str) -> bool {
    OFFLINE.iter().any(|s| log.contains(s))
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

#[tokio::test]
async fn a_correct_service_passes_every_probe_and_its_tests() {
    bounded(async {
        let test = "import json, os, urllib.request\n\n\
                    def test_health():\n    \
                    url = 'http://127.0.0.1:%s/health' % os.environ['PORT']\n    \
                    assert json.load(urllib.request.urlopen(url)) == {'status': 'ok'}\n";
        let dir = repo(
            "exec python service.py\n",
            &[("tests/test_service.py", test)],
        );
        let sandbox = sandbox(dir.path(), Isolation::Process, true).await;
        let (env, installed) =
            probe::install(&sandbox, dir.path(), &dir.path().join(".venv"), true)
                .await
                .unwrap();
        assert!(installed.skipped, "there is no requirements.txt");
        let mut plan = plan(free_port());
        if !installed.ok {
            assert!(offline(&installed.log_tail), "{}", installed.log_tail);
            eprintln!("SKIPPED the tests part: PyPI is unreachable, so pytest cannot be installed");
            plan.run_tests = false;
        }
        let report = probe::probe(&sandbox, dir.path(), &env, &plan)
            .await
            .unwrap();
        assert!(report.passed(), "{:#?}", report.failures());
        assert!(
            matches!(report.readiness, Readiness::Listening { .. }),
            "{report:?}"
        );
        assert!(report.foreground);
        assert_eq!(report.responses.len(), 4);
        assert!(
            report
                .responses
                .iter()
                .all(|r| r.passed && r.problem.is_none())
        );
        assert_eq!(report.responses[1].status, Some(200));
        assert!(
            report.responses[2].body_excerpt.contains(r#""text": "hi""#),
            "{report:?}"
        );
        assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
        if plan.run_tests {
            let tests = report.tests.as_ref().expect("the tests ran");
            assert_eq!(
                (tests.passed, tests.failed, tests.errors),
                (1, 0, 0),
                "{tests:?}"
            );
            assert_eq!(tests.exit_code, Some(0));
        }
        assert!(
            report.service_log_tail.contains("GET /items/1"),
            "{report:?}"
        );
        // The verification leaves no bytecode or pytest cache behind.
        assert!(!dir.path().join("__pycache__").exists());
        assert!(!dir.path().join(".pytest_cache").exists());
    })
    .await;
}

#[tokio::test]
async fn a_wrong_status_fails_its_request_with_expected_and_actual() {
    bounded(async {
        let dir = repo("exec python service.py wrong-status\n", &[]);
        let report = probe_stdlib(dir.path(), &plan(free_port())).await;
        let items = &report.responses[1];
        assert!(!items.passed);
        assert_eq!(items.status, Some(500));
        assert_eq!(
            items.problem.as_deref(),
            Some(
                "expected status 200, got 500; missing key(s) \"id\", \"name\" (it has \"error\")"
            )
        );
        assert!(report.responses[0].passed && report.responses[2].passed);
        assert!(!report.passed());
        let failures = report.failures();
        assert_eq!(failures.len(), 1, "{failures:#?}");
        assert!(
            failures[0].starts_with("GET /items/1 (success): expected status 200, got 500")
                && failures[0].ends_with(r#"body: {"error": "boom"}"#),
            "{failures:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_missing_key_is_named() {
    bounded(async {
        let dir = repo("exec python service.py missing-key\n", &[]);
        let report = probe_stdlib(dir.path(), &plan(free_port())).await;
        let items = &report.responses[1];
        assert_eq!(items.status, Some(200));
        assert_eq!(items.missing_keys, ["name"]);
        assert_eq!(
            items.problem.as_deref(),
            Some(r#"missing key(s) "name" (it has "id")"#)
        );
        assert_eq!(report.failures().len(), 1, "{:#?}", report.failures());
    })
    .await;
}

#[tokio::test]
async fn a_start_that_fails_is_exited_with_its_code_and_traceback() {
    bounded(async {
        let dir = repo(
            "exec python broken.py\n",
            &[("broken.py", "import json\n\ndef handler(:\n    pass\n")],
        );
        let report = probe_stdlib(dir.path(), &plan(free_port())).await;
        assert!(
            matches!(report.readiness, Readiness::Exited { code: Some(1), .. }),
            "{report:?}"
        );
        assert!(
            report.service_log_tail.contains("SyntaxError"),
            "{report:?}"
        );
        assert!(report.responses.is_empty());
        let failures = report.failures();
        assert!(
            failures[0].starts_with("start.sh exited with code 1 after")
                && failures[0].contains("SyntaxError"),
            "{failures:#?}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_daemonising_start_is_reported_and_its_daemon_killed() {
    bounded(async {
        let dir = repo("nohup python service.py > daemon.log 2>&1 &\nexit 0\n", &[]);
        let report = probe_stdlib(dir.path(), &plan(free_port())).await;
        assert!(
            matches!(report.readiness, Readiness::Listening { .. }),
            "{report:?}"
        );
        assert!(!report.foreground);
        assert!(report.responses.iter().all(|r| r.passed), "{report:?}");
        assert_eq!(report.leftovers.len(), 1, "{:?}", report.leftovers);
        assert!(
            report.leftovers[0].contains("service.py"),
            "{:?}",
            report.leftovers
        );
        let pid: u32 = report.leftovers[0]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(dead(pid), "the daemon {pid} still runs");
        let failures = report.failures();
        assert_eq!(failures.len(), 2, "{failures:#?}");
        assert!(failures[0].contains("in the background"), "{failures:#?}");
        assert!(failures[1].contains("service.py"), "{failures:#?}");
    })
    .await;
}

#[tokio::test]
async fn a_busy_port_starts_nothing() {
    bounded(async {
        let dir = repo("touch started\nexec python service.py\n", &[]);
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = holder.local_addr().unwrap().port();
        let report = probe_stdlib(dir.path(), &plan(port)).await;
        drop(holder);
        assert_eq!(report.readiness, Readiness::PortBusy);
        assert!(report.responses.is_empty() && report.tests.is_none());
        assert!(!dir.path().join("started").exists(), "start.sh ran");
        assert!(
            report.failures()[0].starts_with(&format!("port {port} already accepted connections")),
            "{:#?}",
            report.failures()
        );
    })
    .await;
}

#[tokio::test]
async fn a_service_that_never_listens_is_given_up_on_after_the_startup_timeout() {
    bounded(async {
        let dir = repo("exec python -c 'import time; time.sleep(60)'\n", &[]);
        let mut plan = plan(free_port());
        plan.startup_timeout = Duration::from_secs(2);
        let started = Instant::now();
        let report = probe_stdlib(dir.path(), &plan).await;
        assert!(
            matches!(report.readiness, Readiness::AliveNotListening { .. }),
            "{report:?}"
        );
        assert!(report.leftovers.is_empty(), "{:?}", report.leftovers);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(report.failures()[0].starts_with("the service did not listen on port"));
    })
    .await;
}

#[tokio::test]
async fn a_missing_start_script_is_reported() {
    bounded(async {
        let dir = repo("", &[]);
        std::fs::remove_file(dir.path().join("start.sh")).unwrap();
        let report = probe_stdlib(dir.path(), &plan(free_port())).await;
        assert_eq!(report.readiness, Readiness::NothingToStart);
        assert_eq!(
            report.failures(),
            ["there is no start.sh: the service cannot be started"]
        );
    })
    .await;
}

#[tokio::test]
async fn a_correct_service_passes_in_namespaces_too() {
    bounded(async {
        if let Err(e) = sandbox::namespaces_available().await {
            eprintln!("SKIPPED: namespaces are unavailable: {e}");
            return;
        }
        let env = shared_env().await;
        let dir = repo("nohup python service.py > daemon.log 2>&1 &\nexit 0\n", &[]);
        let sandbox = sandbox(dir.path(), Isolation::Namespaces, false).await;
        let report = probe::probe(&sandbox, dir.path(), &env, &plan(free_port()))
            .await
            .unwrap();
        // The driver finds its daemon in a PID namespace of its own as well.
        assert!(report.responses.iter().all(|r| r.passed), "{report:?}");
        assert!(!report.foreground);
        assert_eq!(report.leftovers.len(), 1, "{:?}", report.leftovers);
    })
    .await;
}

#[tokio::test]
async fn a_flask_service_from_pypi_passes() {
    bounded(async {
        let app = "import os\nfrom flask import Flask, jsonify, request\n\n\
                   app = Flask(__name__)\n\n\
                   @app.get('/health')\ndef health():\n    return jsonify(status='ok')\n\n\
                   @app.get('/items/<int:item>')\ndef item(item):\n    return jsonify(id=item, name='one')\n\n\
                   @app.post('/echo')\ndef echo():\n    return jsonify(echo=request.get_json())\n\n\
                   if __name__ == '__main__':\n    app.run(host='127.0.0.1', port=int(os.environ['PORT']))\n";
        let dir = repo(
            "exec python app.py\n",
            &[("app.py", app), ("requirements.txt", "flask\n")],
        );
        let sandbox = sandbox(dir.path(), Isolation::Process, true).await;
        let (env, installed) = probe::install(&sandbox, dir.path(), &dir.path().join(".venv"), false)
            .await
            .unwrap();
        assert!(!installed.skipped);
        if !installed.ok {
            assert!(offline(&installed.log_tail), "{}", installed.log_tail);
            eprintln!("SKIPPED: PyPI is unreachable, so Flask cannot be installed");
            return;
        }
        let report = probe::probe(&sandbox, dir.path(), &env, &plan(free_port()))
            .await
            .unwrap();
        assert!(report.passed(), "{:#?}\n{report:?}", report.failures());
        assert!(report.tests.is_none(), "there is no tests/ directory");
    })
    .await;
}

/// Imports the generated code names and no table pins are looked up under
/// their own name (RepoGenesis Multilingual, run 3: `googletrans` left out
/// of `requirements.txt`, the service stopped at start): one that installs
/// and imports is pinned at the version that came, one the index lacks is
/// said so with pip's reason, and a name that is not a plain module name
/// never reaches pip. Here the index is a local directory.
#[tokio::test]
async fn an_unknown_import_is_pinned_when_the_index_has_it() {
    bounded(async {
        let dir = repo("#!/bin/sh\n", &[]);
        let wheels = common::local_wheel(
            dir.path(),
            "tinywheel",
            &[("tinywheel/__init__.py".to_owned(), b"ANSWER = 7\n")],
        );
        let sandbox = sandbox(dir.path(), Isolation::Process, false).await;
        let env = sandbox.create_venv(dir.path().join("venv")).await.unwrap();
        let names = ["tinywheel", "nosuchmodule", "-rrequirements"].map(String::from);
        let find_links = ["--find-links".to_owned(), wheels.display().to_string()];
        let found = probe::look_up_unknown(&sandbox, &env, &names, &find_links)
            .await
            .unwrap();
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(
            found[0].requirement.as_deref(),
            Some("tinywheel==0.1"),
            "{found:?}"
        );
        assert_eq!(found[1].requirement, None);
        assert!(
            found[1].reason.contains("No matching distribution"),
            "{:?}",
            found[1]
        );
        assert_eq!(found[2].requirement, None);
        assert_eq!(found[2].reason, "not a plain module name");
    })
    .await;
}
