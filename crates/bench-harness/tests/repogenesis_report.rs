#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The RepoGenesis report of a fixed set of records: its tables, as a
//! snapshot, and its averages, by hand.

use std::path::PathBuf;

use bench_harness::repogenesis::{
    AcResults, AcRule, BuildOutcome, CountSource, Coverage, FaultKind, FrameworkHint, GenesisMeta,
    GenesisRecord, GenesisReport, GenesisStatus, Language, Readiness, RouteCoverage, StartCommand,
    StartOutcome, TestCounts, TestOutcome, Timeouts,
};

fn coverage(rule: AcRule, implemented: usize, total: usize) -> Coverage {
    Coverage {
        rule,
        total,
        implemented,
        score: if total == 0 {
            0.0
        } else {
            ((implemented as f64 / total as f64) * 10_000.0).round() / 10_000.0
        },
        missing: Vec::new(),
        note: None,
    }
}

fn evaluated(
    task: &str,
    pass: (u32, u32, u32, u32),
    dsr: bool,
    ac: (usize, usize),
) -> GenesisRecord {
    let mut r = GenesisRecord::new(
        task,
        Language::Python,
        FrameworkHint::Flask,
        5000,
        GenesisStatus::Evaluated,
    );
    r.ac = Some(AcResults {
        harness: coverage(AcRule::Harness, ac.0, ac.1),
        legacy: coverage(AcRule::Legacy, ac.0, ac.1),
        paper: coverage(AcRule::Paper, ac.0, ac.1),
    });
    r.routes = Some(RouteCoverage {
        declared: ac.1,
        matched: ac.0,
        missing: Vec::new(),
        routes: ac.0,
        frameworks: vec![repo_graph::Framework::Flask],
        note: None,
    });
    r.build = Some(BuildOutcome {
        ok: true,
        dependencies_ok: true,
        ..BuildOutcome::default()
    });
    r.start = Some(StartOutcome {
        command: StartCommand::Script {
            path: "./start.sh".into(),
        },
        shown: "bash ./start.sh".into(),
        readiness: if dsr {
            Readiness::Health {
                path: "/".into(),
                after_ms: 1200,
            }
        } else {
            Readiness::Exited {
                code: Some(1),
                after_ms: 1800,
            }
        },
        ready_after_s: 2,
        dsr,
        dsr_message: String::new(),
        dsr_legacy: dsr,
        dsr_legacy_message: String::new(),
        answered: dsr,
        survivors: Vec::new(),
        leftovers: Vec::new(),
        log_tail: String::new(),
    });
    let counts = TestCounts {
        passed: pass.0,
        failed: pass.1,
        errors: pass.2,
        skipped: pass.3,
    };
    let total = counts.total();
    r.tests = Some(TestOutcome {
        counts,
        source: CountSource::Junit,
        harness_total: total,
        pass_at_1: if total == 0 {
            0.0
        } else {
            ((f64::from(pass.0) / f64::from(total)) * 10_000.0).round() / 10_000.0
        },
        counted: total > 0,
        all_passed: pass.0 > 0 && pass.1 == 0 && pass.2 == 0 && pass.3 == 0,
        harness_console: None,
        timed_out: false,
        exit_code: Some(0),
        not_passed: Vec::new(),
    });
    r
}

#[test]
fn the_report_of_fixed_records() {
    let mut broken = evaluated("rock-paper-scissors-flask", (0, 9, 0, 0), false, (0, 0));
    broken.fault(
        FaultKind::ServiceExited,
        "`bash ./start.sh` ended with exit code 1 after 1 s",
    );
    let mut java = GenesisRecord::new(
        "javalin-task-manager",
        Language::Java,
        FrameworkHint::Javalin,
        7000,
        GenesisStatus::BuildUnavailable,
    );
    java.ac = Some(AcResults {
        harness: coverage(AcRule::Harness, 9, 15),
        legacy: coverage(AcRule::Legacy, 7, 15),
        paper: coverage(AcRule::Paper, 7, 15),
    });
    java.fault(
        FaultKind::BuildUnavailable,
        "6 artifacts missing: io.javalin:javalin:6.1.3, …",
    );
    let missing = GenesisRecord::new(
        "Blog",
        Language::Python,
        FrameworkHint::FastApi,
        8000,
        GenesisStatus::NoRepository,
    );
    let records = vec![
        evaluated("flask", (7, 0, 0, 0), true, (3, 3)),
        evaluated("SimpleFastPyAPI", (1, 1, 0, 0), true, (2, 2)),
        evaluated("skipper", (0, 0, 0, 9), true, (1, 2)),
        broken,
        java,
        missing,
    ];
    let meta = GenesisMeta {
        root: PathBuf::from("/data/RepoGenesis"),
        generated: PathBuf::from("/data/generated"),
        selection: "all tasks".into(),
        benchmark_tasks: 30,
        isolation: "namespaces (bubblewrap)".into(),
        jobs: 2,
        timeouts: Timeouts::BENCHMARK,
        run_wall_ms: 12_345,
        generated_unix: 1_767_225_600,
    };
    let report = GenesisReport::new(meta, &records);
    let s = &report.summary.all;
    // DSR over the four evaluated; Pass@1 over the three with a total
    // (1, 0.5, 0); harness AC over the four declaring endpoints (1, 1,
    // 0.5, 0.6).
    assert_eq!((s.dsr.num, s.dsr.den), (3, 4));
    assert_eq!((s.pass_at_1.mean, s.pass_at_1.n), (0.5, 3));
    assert_eq!((s.pass_strict.num, s.pass_strict.den), (1, 4));
    assert_eq!((s.ac_harness.mean, s.ac_harness.n), (0.775, 4));
    assert_eq!((s.ac_paper.num, s.ac_paper.den), (13, 22));
    let markdown = report.to_markdown();
    let ours = markdown
        .split("## Published results")
        .next()
        .unwrap_or_default();
    insta::assert_snapshot!(ours);
    assert!(markdown.contains("| Copilot | Claude | 23.67 % | 21.45 % | yes |"));
}
