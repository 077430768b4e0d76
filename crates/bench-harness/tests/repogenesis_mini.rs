#![allow(clippy::unwrap_used, clippy::expect_used)]
//! RepoGenesis end to end on `testdata/repogenesis-mini`: reference
//! implementations and broken variants through the real sandbox, pip, the
//! services and the golden tests, with the exact scores each must get.
//!
//! Virtualenvs are cached under the test target directory, keyed by their
//! requirements, so after the first run (which installs Flask, FastAPI and
//! the test tools from PyPI) each evaluation takes a few seconds. Without
//! PyPI the tests say so and skip.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bench_harness::repogenesis::{
    FaultKind, GenesisConfig, GenesisEvent, GenesisHarness, GenesisOutcome, GenesisRecord,
    GenesisReport, GenesisStatus, Phase, Readiness, Scores,
};

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/repogenesis-mini")
}

fn venvs() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("repogenesis-venvs")
}

/// Phase limits of one evaluation, in seconds.
type Limits = &'static [(Phase, u64)];

struct Run {
    outcome: GenesisOutcome,
    events: Vec<GenesisEvent>,
    _out: tempfile::TempDir,
}

impl Run {
    fn record(&self, task: &str) -> &GenesisRecord {
        self.outcome
            .report
            .tasks
            .iter()
            .find(|r| r.task == task)
            .unwrap_or_else(|| panic!("no record of {task}"))
    }
}

fn config(variant: &str, tasks: &[&str], out: &Path) -> GenesisConfig {
    let mut config = GenesisConfig::new(mini(), mini().join("generated").join(variant), out);
    config.tasks = tasks.iter().map(|t| (*t).to_owned()).collect();
    config.jobs = 2;
    config.venv_dir = Some(venvs());
    config.maven_repo = Some(out.join("empty-m2"));
    config.phase_limits = vec![(Phase::Tests, Duration::from_secs(120))];
    config
}

fn run_with(
    config: GenesisConfig,
    stop_after: Option<usize>,
) -> (GenesisOutcome, Vec<GenesisEvent>) {
    let harness = GenesisHarness::new(config).unwrap();
    let stop = harness.stop_handle();
    let events = Mutex::new(Vec::new());
    let outcome = harness
        .run(&|event: &GenesisEvent| {
            let mut seen = events.lock().unwrap();
            seen.push(event.clone());
            if let (Some(n), GenesisEvent::Finished { done, .. }) = (stop_after, event)
                && *done >= n
            {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    (outcome, events.into_inner().unwrap())
}

fn evaluate(variant: &str, tasks: &[&str], limits: Limits) -> Run {
    let out = tempfile::tempdir().unwrap();
    let mut config = config(variant, tasks, out.path());
    config
        .phase_limits
        .extend(limits.iter().map(|(p, s)| (*p, Duration::from_secs(*s))));
    let (outcome, events) = run_with(config, None);
    Run {
        outcome,
        events,
        _out: out,
    }
}

/// Fails the test when PyPI is out of reach: the environments could not
/// be built, so the scores would say nothing about the harness. The tests
/// that call this are `#[ignore = "needs PyPI ..."]`: `cargo xtask test
/// --include-ignored` (CI) runs them.
fn assert_online(run: &Run) {
    let problems: Vec<&String> = run
        .outcome
        .report
        .tasks
        .iter()
        .filter_map(|r| r.build.as_ref())
        .flat_map(|b| &b.problems)
        .collect();
    let offline = problems.iter().any(|p| {
        [
            "Failed to establish a new connection",
            "Temporary failure in name resolution",
            "No matching distribution found for flask",
            "No matching distribution found for fastapi",
            "No matching distribution found for pytest",
            "Network is unreachable",
        ]
        .iter()
        .any(|needle| p.contains(needle))
    });
    assert!(
        !offline,
        "PyPI is unreachable, so the test environments cannot be built: {problems:?}"
    );
}

/// What a task must score: DSR by the harness and by test_dsr_repos.py,
/// whether it answered, passed/total (the harness's), all passed, AC
/// (harness, paper rule, legacy) and routes as implemented/total, faults.
struct Expected {
    dsr: bool,
    dsr_legacy: bool,
    answered: bool,
    pass: (u32, u32),
    all_passed: bool,
    ac: [(usize, usize); 3],
    routes: (usize, usize),
    faults: &'static [FaultKind],
}

fn check(record: &GenesisRecord, e: &Expected) {
    let name = format!(
        "{} ({})",
        record.task,
        record.message.as_deref().unwrap_or("")
    );
    assert_eq!(
        record.status,
        GenesisStatus::Evaluated,
        "{name}: {record:#?}"
    );
    let start = record.start.as_ref().unwrap();
    assert_eq!(
        (start.dsr, start.dsr_legacy, start.answered),
        (e.dsr, e.dsr_legacy, e.answered),
        "{name}: {start:#?}"
    );
    let tests = record.tests.as_ref().unwrap();
    assert_eq!(
        (tests.counts.passed, tests.harness_total, tests.all_passed),
        (e.pass.0, e.pass.1, e.all_passed),
        "{name}: {tests:#?}"
    );
    let expected_score = if e.pass.1 == 0 {
        0.0
    } else {
        (f64::from(e.pass.0) / f64::from(e.pass.1) * 10_000.0).round() / 10_000.0
    };
    assert_eq!(tests.pass_at_1, expected_score, "{name}");
    assert_eq!(tests.counted, e.pass.1 > 0, "{name}");
    let ac = record.ac.as_ref().unwrap();
    assert_eq!(
        [
            (ac.harness.implemented, ac.harness.total),
            (ac.paper.implemented, ac.paper.total),
            (ac.legacy.implemented, ac.legacy.total),
        ],
        e.ac,
        "{name}: {ac:#?}"
    );
    let routes = record.routes.as_ref().unwrap();
    assert_eq!(
        (routes.matched, routes.declared),
        e.routes,
        "{name}: {routes:#?}"
    );
    let mut kinds: Vec<FaultKind> = record.faults.iter().map(|f| f.kind).collect();
    kinds.dedup();
    assert_eq!(kinds, e.faults, "{name}: {:#?}", record.faults);
}

const FULL: Expected = Expected {
    dsr: true,
    dsr_legacy: true,
    answered: true,
    pass: (0, 0),
    all_passed: true,
    ac: [(0, 0); 3],
    routes: (0, 0),
    faults: &[],
};

#[test]
#[ignore = "needs PyPI: pip builds the tasks' environments (cargo xtask test --include-ignored)"]
fn reference_implementations_on_one_port_pass_everything_side_by_side() {
    // flask and rock-paper-scissors-flask both listen on 5000; with two jobs
    // they run at once, each on a loopback of its own.
    let run = evaluate("reference", &["flask", "rock-paper-scissors-flask"], &[]);
    assert_online(&run);
    check(
        run.record("flask"),
        &Expected {
            pass: (7, 7),
            ac: [(3, 3); 3],
            routes: (3, 3),
            ..FULL
        },
    );
    check(
        run.record("rock-paper-scissors-flask"),
        &Expected {
            pass: (9, 9),
            routes: (3, 3),
            ..FULL
        },
    );
    if run.record("flask").isolation == "namespaces" {
        let first_finish = run
            .events
            .iter()
            .position(|e| matches!(e, GenesisEvent::Finished { .. }))
            .unwrap();
        let started_before = run.events[..first_finish]
            .iter()
            .filter(|e| matches!(e, GenesisEvent::Started { .. }))
            .count();
        assert_eq!(
            started_before, 2,
            "both tasks were in flight together: {:?}",
            run.events
        );
    } else {
        eprintln!("namespaces unavailable: the two tasks ran one after the other");
    }
    // The report's numbers are the records' counts, in every format.
    let report = &run.outcome.report;
    let records: Vec<&GenesisRecord> = report.tasks.iter().collect();
    assert_eq!(report.summary.all, Scores::of(records.iter().copied()));
    let s = &report.summary.all;
    assert_eq!((s.dsr.num, s.dsr.den, s.pass_strict.num), (2, 2, 2));
    assert_eq!((s.pass_at_1.mean, s.pass_at_1.n), (1.0, 2));
    assert_eq!((s.ac_harness.mean, s.ac_harness.n), (1.0, 1));
    assert_eq!((s.ac_paper.num, s.ac_paper.den), (3, 3));
    assert_eq!((s.routes.num, s.routes.den), (6, 6));
    assert_eq!((s.tests.passed, s.tests.failed), (16, 0));
    let markdown = std::fs::read_to_string(&run.outcome.files.markdown).unwrap();
    assert!(
        markdown.contains("| All | 2 | 2 | 100.00 % (2/2) | 100.00 % (2/2) | 100.00 % (2/2) | 100.00 % (n=2) | 100.00 % (2/2) | 100.00 % (n=1) | 100.00 % (3/3) | 100.00 % (3/3) | 100.00 % (6/6) |"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&run.outcome.files.json).unwrap()).unwrap();
    assert_eq!(
        json["summary"]["all"]["dsr"],
        serde_json::json!({"num": 2, "den": 2})
    );
    let html = std::fs::read_to_string(&run.outcome.files.html).unwrap();
    assert!(html.contains("100.00 % (6/6)") && !html.contains("<script"));
}

#[test]
#[ignore = "needs PyPI: pip builds the tasks' environments (cargo xtask test --include-ignored)"]
fn variants_score_exactly() {
    let cases: [(&str, &str, Limits, Expected); 6] = [
        (
            "reference",
            "SimpleFastPyAPI",
            &[],
            Expected {
                pass: (2, 2),
                ac: [(2, 2), (0, 0), (0, 1)],
                routes: (5, 5),
                ..FULL
            },
        ),
        (
            "wrong-status",
            "SimpleFastPyAPI",
            &[],
            Expected {
                pass: (1, 2),
                all_passed: false,
                ac: [(2, 2), (0, 0), (0, 1)],
                routes: (5, 5),
                ..FULL
            },
        ),
        (
            // The flask task's golden tests test their own app, so a missing
            // endpoint costs AC and routes, not Pass@1.
            "missing-endpoint",
            "flask",
            &[],
            Expected {
                pass: (7, 7),
                ac: [(2, 3); 3],
                routes: (2, 3),
                ..FULL
            },
        ),
        (
            // "/sum" in a comment satisfies every AC rule, not the routes.
            "comment-path",
            "flask",
            &[],
            Expected {
                pass: (7, 7),
                ac: [(3, 3); 3],
                routes: (2, 3),
                ..FULL
            },
        ),
        (
            "never-starts",
            "rock-paper-scissors-flask",
            &[],
            Expected {
                dsr: false,
                dsr_legacy: false,
                answered: false,
                pass: (0, 9),
                all_passed: false,
                routes: (3, 3),
                faults: &[FaultKind::ServiceExited],
                ..FULL
            },
        ),
        (
            // A build that fails goes on, as the Dockerfile's `|| true` does.
            "no-build",
            "rock-paper-scissors-flask",
            &[],
            Expected {
                dsr: false,
                dsr_legacy: false,
                answered: false,
                pass: (0, 9),
                all_passed: false,
                routes: (3, 3),
                faults: &[FaultKind::BuildFailed, FaultKind::ServiceExited],
                ..FULL
            },
        ),
    ];
    let mut records = Vec::new();
    for (variant, task, limits, expected) in &cases {
        let run = evaluate(variant, &[task], limits);
        assert_online(&run);
        check(run.record(task), expected);
        records.push(run.record(task).clone());
    }
    let never = &records[4];
    assert!(matches!(
        never.start.as_ref().unwrap().readiness,
        Readiness::Exited { code: Some(1), .. }
    ));
    assert!(
        never.faults[0].detail.contains("RPS_SECRET is not set"),
        "{:?}",
        never.faults
    );
    let no_build = &records[5];
    assert!(
        no_build.faults[0].detail.contains("flask=<2"),
        "{:?}",
        no_build.faults
    );
    assert_eq!(
        no_build.start.as_ref().unwrap().dsr_legacy_message,
        "Pip install failed"
    );

    // The report over these six: counts by hand.
    let meta = bench_harness::repogenesis::GenesisMeta {
        root: mini(),
        generated: mini().join("generated"),
        selection: "variants".into(),
        benchmark_tasks: 4,
        isolation: String::new(),
        jobs: 1,
        timeouts: bench_harness::repogenesis::Timeouts::BENCHMARK,
        run_wall_ms: 0,
        generated_unix: 0,
    };
    // Six records of three tasks: name them apart so none replaces another.
    for (r, (variant, ..)) in records.iter_mut().zip(&cases) {
        r.task = format!("{}/{variant}", r.task);
    }
    let s = GenesisReport::new(meta, &records).summary.all;
    assert_eq!((s.dsr.num, s.dsr.den), (4, 6));
    assert_eq!((s.pass_strict.num, s.pass_strict.den), (3, 6));
    // (1 + 0.5 + 1 + 1 + 0 + 0) / 6
    assert_eq!((s.pass_at_1.mean, s.pass_at_1.n), (0.5833, 6));
    // Harness AC over the four with endpoints: (1 + 1 + 0.6667 + 1) / 4.
    assert_eq!((s.ac_harness.mean, s.ac_harness.n), (0.9167, 4));
    assert_eq!((s.ac_paper.num, s.ac_paper.den), (5, 6));
    assert_eq!((s.routes.num, s.routes.den), (20, 22));
}

#[test]
#[ignore = "needs PyPI: pip builds the tasks' environments (cargo xtask test --include-ignored)"]
fn services_that_hang_daemonise_or_skip_are_recorded_not_fatal() {
    let cases: [(&str, Limits, Expected); 3] = [
        (
            // The harness counts a process still running after the wait as
            // deployed; it never answered.
            "start-hangs",
            &[(Phase::Start, 4)],
            Expected {
                answered: false,
                pass: (0, 9),
                all_passed: false,
                routes: (3, 3),
                faults: &[FaultKind::NeverListened],
                ..FULL
            },
        ),
        (
            // start.sh forks the server into a session of its own and exits:
            // not deployed for the harness, but the daemon serves the tests.
            "daemon",
            &[],
            Expected {
                dsr: false,
                answered: false,
                pass: (9, 9),
                routes: (3, 3),
                faults: &[FaultKind::ServiceExited, FaultKind::LeftDaemon],
                ..FULL
            },
        ),
        (
            // A root conftest.py that skips everything (made the root by a
            // pytest.ini): the golden tests run outside the repository with
            // the harness's rootdir and ini, so it never loads, and the
            // (correct) service scores what it earns.
            "skips-everything",
            &[],
            Expected {
                pass: (9, 9),
                routes: (3, 3),
                ..FULL
            },
        ),
    ];
    for (variant, limits, expected) in &cases {
        let run = evaluate(variant, &["rock-paper-scissors-flask"], limits);
        assert_online(&run);
        let record = run.record("rock-paper-scissors-flask");
        check(record, expected);
        let start = record.start.as_ref().unwrap();
        match *variant {
            "start-hangs" => {
                assert!(
                    matches!(start.readiness, Readiness::AliveNotListening { .. }),
                    "{start:#?}"
                );
                assert_eq!(start.ready_after_s, 4);
            }
            "daemon" => {
                // Caught while the script's child may still be between fork
                // and exec, the survivor can show under its parent's name.
                assert!(!start.survivors.is_empty(), "{start:#?}");
                assert!(
                    start
                        .leftovers
                        .iter()
                        .any(|s| s.contains("python web_app.py")),
                    "the daemon outlived its group and was killed: {start:#?}"
                );
            }
            _ => assert_eq!(record.tests.as_ref().unwrap().counts.skipped, 0),
        }
    }
}

#[test]
#[ignore = "needs PyPI: pip builds the tasks' environments (cargo xtask test --include-ignored)"]
fn a_hung_test_is_killed_at_its_limit() {
    let run = evaluate(
        "test-hangs",
        &["rock-paper-scissors-flask"],
        &[(Phase::Tests, 12)],
    );
    assert_online(&run);
    let record = run.record("rock-paper-scissors-flask");
    check(
        record,
        &Expected {
            pass: (0, 0),
            all_passed: false,
            routes: (3, 3),
            faults: &[FaultKind::TestsTimedOut],
            ..FULL
        },
    );
    let tests = record.tests.as_ref().unwrap();
    assert!(tests.timed_out);
    assert_eq!(tests.exit_code, Some(124));
    assert!(
        record.faults[0].detail.contains("within 12 s")
            && record.faults[0].detail.contains("1 passed"),
        "{:?}",
        record.faults
    );
}

#[test]
#[ignore = "needs PyPI: pip builds the tasks' environments (cargo xtask test --include-ignored)"]
fn an_interrupted_run_resumes_where_it_stopped() {
    let out = tempfile::tempdir().unwrap();
    let tasks = ["flask", "rock-paper-scissors-flask"];
    let mut first = config("reference", &tasks, out.path());
    first.jobs = 1;
    let (outcome, _) = run_with(first, Some(1));
    assert!(outcome.interrupted);
    assert_eq!((outcome.ran, outcome.report.tasks.len()), (1, 1));
    let done = outcome.report.tasks[0].task.clone();

    let mut second = config("reference", &tasks, out.path());
    second.resume = true;
    let (outcome, events) = run_with(second, None);
    assert!(!outcome.interrupted);
    assert!(matches!(
        events[0],
        GenesisEvent::Planned {
            to_run: 1,
            skipped: 1,
            ..
        }
    ));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, GenesisEvent::Started { task } if *task == done))
    );
    assert_eq!(outcome.report.tasks.len(), 2);
    let lines = std::fs::read_to_string(&outcome.results).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");
    let unbuilt: Vec<_> = outcome
        .report
        .tasks
        .iter()
        .filter_map(|r| r.build.as_ref().filter(|b| !b.ok))
        .collect();
    assert!(
        unbuilt.is_empty(),
        "environments not built (is PyPI reachable?): {unbuilt:?}"
    );
    assert_eq!(outcome.report.summary.all.pass_strict.num, 2);
}

#[test]
fn java_without_its_artifacts_is_scored_statically_and_named() {
    let run = evaluate("java-partial", &["javalin-task-manager"], &[]);
    let record = run.record("javalin-task-manager");
    assert_eq!(
        record.status,
        GenesisStatus::BuildUnavailable,
        "{record:#?}"
    );
    let build = record.build.as_ref().unwrap();
    if std::process::Command::new("mvn")
        .arg("-v")
        .output()
        .is_err()
    {
        assert!(
            record.faults[0].detail.contains("mvn"),
            "{:?}",
            record.faults
        );
        eprintln!("Maven is not installed: the artifact check was not reached");
        return;
    }
    assert_eq!(build.missing_artifacts.len(), 6);
    assert_eq!(build.missing_artifacts[0], "io.javalin:javalin:6.1.3");
    assert_eq!(record.faults[0].kind, FaultKind::BuildUnavailable);
    assert!(record.faults[0].detail.contains("io.javalin:javalin:6.1.3"));
    // The loose AC rules credit every endpoint whose path shares a word with
    // a file holding any `.get(`/`.post(` call; the routes are three.
    let ac = record.ac.as_ref().unwrap();
    assert_eq!((ac.harness.implemented, ac.harness.total), (9, 15));
    assert_eq!((ac.paper.implemented, ac.paper.total), (7, 15));
    assert_eq!((ac.legacy.implemented, ac.legacy.total), (7, 15));
    let routes = record.routes.as_ref().unwrap();
    assert_eq!((routes.matched, routes.declared), (3, 15));
    assert_eq!(routes.frameworks, [repo_graph::Framework::Javalin]);
    // Not measurable here, so not in DSR or Pass@1; still in AC.
    let s = &run.outcome.report.summary.all;
    assert_eq!((s.build_unavailable, s.dsr.den, s.pass_at_1.n), (1, 0, 0));
    assert_eq!((s.ac_harness.n, s.ac_paper.den), (1, 15));
    assert_eq!(record.facts.golden_test_functions, 15);
}

#[test]
fn tasks_without_a_repository_are_recorded_as_such() {
    let run = evaluate("java-partial", &["flask", "SimpleFastPyAPI"], &[]);
    for task in ["flask", "SimpleFastPyAPI"] {
        let record = run.record(task);
        assert_eq!(record.status, GenesisStatus::NoRepository);
        assert!(record.ac.is_none() && record.tests.is_none());
    }
    assert_eq!(run.record("flask").facts.endpoints_harness, 3);
    assert_eq!(run.outcome.report.summary.all.no_repository, 2);
}

#[test]
fn without_namespaces_tasks_run_one_at_a_time() {
    let out = tempfile::tempdir().unwrap();
    let mut config = config("reference", &[], out.path());
    config.isolation = sandbox::Isolation::Process;
    config.jobs = 4;
    let harness = GenesisHarness::new(config).unwrap();
    assert_eq!(harness.config().jobs, 1);
    let (isolation, note) = harness.isolation();
    assert_eq!(isolation, sandbox::Isolation::Process);
    assert!(note.contains("one task at a time"), "{note}");
}
