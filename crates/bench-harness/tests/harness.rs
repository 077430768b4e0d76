#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The harness end to end on `testdata/gittaskbench-mini`, with scripted
//! models against the real agent, sandbox and test scripts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::AgentConfig;
use bench_harness::{
    Benchmark, Domain, DomainMap, Event, GradingConfig, GradingPython, Harness, HarnessConfig,
    Models, RunStatus, Selection, TaskContext, TaskRecord,
};
use llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Scripted, TokenUsage, ToolCall};
use serde_json::{Value, json};

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/gittaskbench-mini")
}

fn domains() -> DomainMap {
    DomainMap::gittaskbench()
        .extend_from_file(&mini().join("domains.json"))
        .unwrap()
}

fn config(out: &Path, tasks: &[&str]) -> HarnessConfig {
    let mut config = HarnessConfig::new(mini(), out);
    config.selection = Selection {
        tasks: tasks.iter().map(|t| (*t).to_owned()).collect(),
        ..Selection::default()
    };
    config.jobs = 2;
    config.timeout_per_task = Duration::from_secs(120);
    config.agent = AgentConfig::builder()
        .isolation(sandbox::Isolation::Process)
        .exec_timeout(Duration::from_secs(60))
        .package_registry(false)
        .build();
    config.grading = GradingConfig {
        python: GradingPython::System,
        isolation: sandbox::Isolation::Process,
        timeout: Duration::from_secs(60),
        package_registry: false,
    };
    config.domains = domains();
    config
}

fn call(id: &str, name: &str, args: Value, prompt: u64) -> ChatResponse {
    ChatResponse::with_tool_calls(vec![ToolCall::new(id, name, args)])
        .with_usage(TokenUsage::new(prompt, 10))
}

/// A model that does nothing: its first `finish` (no output file) is
/// refused, the second ends the episode.
fn finish_only() -> Scripted {
    Scripted::new()
        .then(call("f", "finish", json!({"summary": "nothing done"}), 100))
        .then(call(
            "f2",
            "finish",
            json!({"summary": "nothing done"}),
            100,
        ))
}

const WORDCOUNT_SOLUTION: &str = "import sys\nfrom wordcount import count_words, top_words, write_csv\n\nwith open(sys.argv[1], encoding='utf-8') as f:\n    counts = count_words(f.read())\nwrite_csv(top_words(counts, 3), sys.argv[2])\nprint('top words written')\n";

/// Uses the repository to solve WordCount_01: write a script, run it.
fn wordcount_solution(spec: &agent::TaskSpec) -> Scripted {
    let script = spec.repositories[0].path.join("solve.py");
    let output = spec.output_dir.join("output.csv");
    Scripted::new()
        .then(call(
            "c1",
            "search_code",
            json!({"query": "count words"}),
            1000,
        ))
        .then(call(
            "c2",
            "write_file",
            json!({"path": script, "content": WORDCOUNT_SOLUTION}),
            1200,
        ))
        .then(call(
            "c3",
            "run_python",
            json!({"path": script, "args": [spec.inputs[0].path, output]}),
            1400,
        ))
        .then(call(
            "c4",
            "finish",
            json!({"summary": "output.csv written"}),
            1600,
        ))
}

fn per_task(
    f: impl Fn(&TaskContext<'_>) -> Result<Box<dyn ChatModel>, String> + Send + Sync + 'static,
) -> Models {
    Models::PerTask(Box::new(f))
}

fn by_task(records: &[TaskRecord], id: &str) -> TaskRecord {
    records
        .iter()
        .find(|r| r.task == id)
        .unwrap_or_else(|| panic!("no record of {id}"))
        .clone()
}

#[test]
fn scripted_runs_pass_fail_and_produce_nothing_and_the_report_counts_them() {
    let out = tempfile::tempdir().unwrap();
    let harness = Harness::new(config(
        out.path(),
        &["WordCount_01", "LogFilter_01", "CsvSplit_01"],
    ))
    .unwrap();
    let prompts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&prompts);
    let models = per_task(move |ctx| {
        let model: Scripted = match ctx.task.id.as_str() {
            "WordCount_01" => wordcount_solution(ctx.spec),
            "LogFilter_01" => Scripted::new()
                .then(call(
                    "w",
                    "write_file",
                    json!({"path": ctx.spec.output_dir.join("output.txt"), "content": "2025-01-03 10:00:01 INFO  server started\n"}),
                    500,
                ))
                .then(call("f", "finish", json!({"summary": "done"}), 500)),
            _ => finish_only(),
        };
        seen.lock()
            .unwrap()
            .push((ctx.task.id.clone(), ctx.spec.clone()));
        Ok(Box::new(model))
    });
    let events = Mutex::new(Vec::new());
    let outcome = harness
        .run(&models, &|e| events.lock().unwrap().push(e.clone()))
        .unwrap();
    let records = &outcome.report.tasks;
    assert_eq!(records.len(), 3);
    assert_eq!(
        (outcome.ran, outcome.skipped, outcome.interrupted),
        (3, 0, false)
    );

    let pass = by_task(records, "WordCount_01");
    assert!(pass.process && pass.result, "{pass:?}");
    assert_eq!(pass.status, RunStatus::Finished);
    assert_eq!(pass.turns, 4);
    assert_eq!((pass.prompt_tokens, pass.completion_tokens), (5200, 40));
    assert_eq!(pass.comments, "all 3 rows match");
    assert_eq!(pass.repo, "WordCount");
    assert_eq!(pass.domain, Domain::OfficeDocuments);
    assert!(
        pass.output
            .as_ref()
            .unwrap()
            .ends_with("outputs/WordCount_01/output.csv")
    );
    let trajectory = std::fs::read_to_string(pass.trajectory.as_ref().unwrap()).unwrap();
    assert!(trajectory.lines().last().unwrap().contains("\"summary\""));
    assert!(trajectory.contains("top words written"));

    let wrong = by_task(records, "LogFilter_01");
    assert!(wrong.process && !wrong.result, "{wrong:?}");
    assert!(
        wrong.comments.contains("without 'ERROR'"),
        "{}",
        wrong.comments
    );

    let nothing = by_task(records, "CsvSplit_01");
    assert!(!nothing.process && !nothing.result, "{nothing:?}");
    assert_eq!(nothing.status, RunStatus::Finished);
    assert!(
        nothing.comments.contains("No valid output"),
        "{}",
        nothing.comments
    );

    // The agent saw its own workspace, never the checkout or /GitTaskBench.
    for (id, spec) in prompts.lock().unwrap().iter() {
        let work = harness.config().out_dir.join("work").join(id);
        assert!(spec.repositories[0].path.starts_with(&work), "{spec:?}");
        assert!(
            spec.inputs.iter().all(|i| i.path.starts_with(&work)),
            "{spec:?}"
        );
        assert!(spec.inputs.iter().all(|i| i.path.is_absolute()));
        assert_eq!(spec.output_dir, harness.outputs_dir(id));
        assert!(!work.exists(), "workspaces are removed after grading");
    }
    assert!(!mini().join("code_base/WordCount/solve.py").exists());
    assert!(!mini().join("output").exists());

    // The report's numbers are the counts.
    let s = &outcome.report.summary;
    assert_eq!((s.tasks, s.process, s.result), (3, 2, 1));
    assert!((s.ecr - 200.0 / 3.0).abs() < 1e-9 && (s.tpr - 100.0 / 3.0).abs() < 1e-9);
    // The finish-only task's two `finish` calls: 2 x 110.
    assert_eq!(s.total_tokens, 5240 + 1020 + 220);
    assert_eq!(s.prompt_tokens, 5200 + 1000 + 200);
    assert!((s.tokens_per_task - 6480.0 / 3.0).abs() < 1e-9);
    assert_eq!(outcome.report.failures.len(), 2);
    // Each failure's class, read from its trajectory: a graded output
    // that missed, and a run that only called `finish`.
    let class = |task: &str| {
        outcome
            .report
            .failures
            .iter()
            .find(|f| f.task == task)
            .and_then(|f| f.class)
    };
    use bench_harness::gittaskbench::failures::FailureClass;
    assert_eq!(class("LogFilter_01"), Some(FailureClass::WrongOutput));
    assert_eq!(class("CsvSplit_01"), Some(FailureClass::OutputMissing));
    let office = outcome
        .report
        .by_domain
        .iter()
        .find(|g| g.name == "Office Document Processing")
        .unwrap();
    assert_eq!(
        (
            office.metrics.tasks,
            office.metrics.process,
            office.metrics.result
        ),
        (2, 1, 1)
    );
    let repos: Vec<(&str, usize)> = outcome
        .report
        .by_repo
        .iter()
        .map(|g| (g.name.as_str(), g.metrics.result))
        .collect();
    assert_eq!(repos, [("CsvSplit", 0), ("LogFilter", 0), ("WordCount", 1)]);
    assert_eq!(outcome.report.statuses.get("finished"), Some(&3));
    assert_eq!(outcome.report.published.len(), 9);

    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.files.json).unwrap()).unwrap();
    assert_eq!(json["summary"]["process"], 2);
    assert_eq!(json["summary"]["result"], 1);
    let md = std::fs::read_to_string(&outcome.files.markdown).unwrap();
    assert!(
        md.contains("| 3 | 66.67 % (2/3) | 33.33 % (1/3) | 6,480 | 2,160 |"),
        "{md}"
    );
    assert!(md.contains("| RepoMaster | Claude 3.5 | 75.92 % | 62.96 % | 154,913 |"));
    assert!(md.contains("| LogFilter_01 | LogFilter | finished | true |"));
    let html = std::fs::read_to_string(&outcome.files.html).unwrap();
    assert!(html.contains("<svg") && html.contains("Published: RepoMaster · Claude 3.5"));
    assert!(!html.contains("<script") && !html.contains("https://"));

    // Progress: one start and one finish per task, running counts at the end.
    let events = events.into_inner().unwrap();
    assert_eq!(
        events[0],
        Event::Planned {
            to_run: 3,
            skipped: 0
        }
    );
    let last = events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Finished {
                done,
                total,
                process,
                result,
                ..
            } => Some((*done, *total, *process, *result)),
            _ => None,
        })
        .unwrap();
    assert_eq!(last, (3, 3, 2, 1));
    // The records on disk are the report's.
    let lines = std::fs::read_to_string(&outcome.results).unwrap();
    assert_eq!(lines.lines().count(), 3);
}

#[test]
fn multi_output_and_parameters_are_graded_in_the_virtualenv_their_scripts_need() {
    let out = tempfile::tempdir().unwrap();
    let mut config = config(out.path(), &["LogFilter_01", "CsvSplit_01"]);
    let venvs = out.path().join("venvs");
    config.grading.python = GradingPython::Venvs(venvs.clone());
    let harness = Harness::new(config).unwrap();
    let models = per_task(|ctx| {
        let input = &ctx.spec.inputs[0].path;
        let code = match ctx.task.id.as_str() {
            "LogFilter_01" => format!(
                "from logfilter import read_log, by_level, save_lines\nsave_lines(by_level(read_log({input:?}), 'ERROR'), {:?})\n",
                ctx.spec.output_dir.join("output.txt")
            ),
            _ => format!(
                "from csvsplit import split_by\nprint(split_by({input:?}, 'region', {:?}, prefix='output_'))\n",
                ctx.spec.output_dir
            ),
        };
        Ok(Box::new(
            Scripted::new()
                .then(call("r", "run_python", json!({ "code": code }), 300))
                .then(call("f", "finish", json!({"summary": "done"}), 300)),
        ))
    });
    let outcome = harness.run(&models, &|_| {}).unwrap();
    for record in &outcome.report.tasks {
        assert!(record.process && record.result, "{record:?}");
    }
    let split = by_task(&outcome.report.tasks, "CsvSplit_01");
    assert_eq!(
        split.output.as_deref(),
        Some(harness.outputs_dir("CsvSplit_01").as_path())
    );
    assert_eq!(split.comments, "3 region files match");
    // Both test scripts import only the standard library: one virtualenv
    // serves both, made offline.
    let stamp = std::fs::read_to_string(venvs.join("stdlib").join(".bench-harness-stamp")).unwrap();
    assert_eq!(stamp, "no packages");
    assert!(venvs.join("stdlib").join("bin/python").exists());
    let made: Vec<_> = std::fs::read_dir(&venvs).unwrap().collect();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(outcome.report.summary.tpr, 100.0);
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let out = tempfile::tempdir().unwrap();
    let mut first = config(out.path(), &[]);
    first.jobs = 1;
    let harness = Harness::new(first.clone()).unwrap();
    let stop = harness.stop_handle();
    let models = per_task(|_| Ok(Box::new(finish_only())));
    let outcome = harness
        .run(&models, &|e| {
            if matches!(e, Event::Finished { .. }) {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    assert!(outcome.interrupted);
    assert_eq!((outcome.ran, outcome.report.tasks.len()), (1, 1));
    let done_first = outcome.report.tasks[0].clone();
    assert_eq!(done_first.task, "CsvSplit_01", "tasks run in ID order");
    // A crash during an append leaves at most a temporary file, never a torn line.
    std::fs::write(
        out.path().join(".results.jsonl.99999.tmp"),
        "{\"task\": \"Wo",
    )
    .unwrap();

    let mut resumed = first.clone();
    resumed.resume = true;
    resumed.jobs = 2;
    let harness = Harness::new(resumed.clone()).unwrap();
    let started = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&started);
    let models = per_task(move |ctx| {
        log.lock().unwrap().push(ctx.task.id.clone());
        Ok(Box::new(finish_only()))
    });
    let outcome = harness.run(&models, &|_| {}).unwrap();
    assert!(!outcome.interrupted);
    assert_eq!((outcome.ran, outcome.skipped), (3, 1));
    let mut ran = started.lock().unwrap().clone();
    ran.sort();
    assert_eq!(ran, ["LogFilter_01", "WordCount_01", "WordCount_02"]);
    assert_eq!(outcome.report.tasks.len(), 4);
    assert_eq!(by_task(&outcome.report.tasks, "CsvSplit_01"), done_first);
    assert_eq!(
        std::fs::read_to_string(&outcome.results)
            .unwrap()
            .lines()
            .count(),
        4
    );

    // Nothing left to do.
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let models = per_task(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(finish_only()))
    });
    let outcome = Harness::new(resumed)
        .unwrap()
        .run(&models, &|_| {})
        .unwrap();
    assert_eq!((outcome.ran, outcome.skipped), (0, 4));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(outcome.report.summary.tasks, 4);

    // Without --resume the old results are kept aside, not overwritten.
    let mut fresh = first;
    fresh.selection.tasks = vec!["WordCount_02".into()];
    let outcome = Harness::new(fresh)
        .unwrap()
        .run(&per_task(|_| Ok(Box::new(finish_only()))), &|_| {})
        .unwrap();
    assert_eq!(outcome.report.tasks.len(), 1);
    let aside: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".bak"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read_to_string(aside[0].path())
            .unwrap()
            .lines()
            .count(),
        4
    );
}

#[test]
fn grade_only_scores_prepared_outputs() {
    let out = tempfile::tempdir().unwrap();
    let outputs = tempfile::tempdir().unwrap();
    let o = outputs.path();
    std::fs::create_dir_all(o.join("WordCount_01")).unwrap();
    std::fs::write(
        o.join("WordCount_01/output.csv"),
        "word,count\nthe,5\ncat,3\nsat,2\n",
    )
    .unwrap();
    std::fs::write(
        o.join("WordCount_01/output_helper.py"),
        "print('ignored')\n",
    )
    .unwrap();
    std::fs::create_dir_all(o.join("WordCount_02")).unwrap();
    std::fs::write(o.join("WordCount_02/output.txt"), "7\n").unwrap();
    // LogFilter_01 produced nothing at all.
    std::fs::create_dir_all(o.join("CsvSplit_01/output")).unwrap();
    for (name, rows) in [
        ("a.csv", "east,pears,7\neast,apples,4\n"),
        ("b.csv", "north,apples,12\nnorth,plums,3\nnorth,pears,8\n"),
        ("c.csv", "west,apples,9\nwest,cherries,15\n"),
    ] {
        std::fs::write(
            o.join("CsvSplit_01/output").join(name),
            format!("region,item,amount\n{rows}"),
        )
        .unwrap();
    }
    let harness = Harness::new(config(out.path(), &[])).unwrap();
    let outcome = harness.grade_only(o, &|_| {}).unwrap();
    let verdicts: Vec<(String, bool, bool)> = outcome
        .report
        .tasks
        .iter()
        .map(|r| (r.task.clone(), r.process, r.result))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("CsvSplit_01".into(), true, true),
            ("LogFilter_01".into(), false, false),
            ("WordCount_01".into(), true, true),
            ("WordCount_02".into(), true, false),
        ]
    );
    assert!(
        outcome
            .report
            .tasks
            .iter()
            .all(|r| r.status == RunStatus::Graded
                && r.total_tokens() == 0
                && r.trajectory.is_none())
    );
    let s = &outcome.report.summary;
    assert_eq!(
        (s.tasks, s.process, s.result, s.ecr, s.tpr),
        (4, 3, 2, 75.0, 50.0)
    );
    assert_eq!(outcome.report.meta.mode, "grade-only");
    assert!(
        by_task(&outcome.report.tasks, "WordCount_02")
            .comments
            .contains("expected 8")
    );
}

/// A model that panics.
struct Panics;

#[async_trait::async_trait]
impl ChatModel for Panics {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        panic!("model exploded")
    }

    fn model_name(&self) -> &str {
        "panics"
    }
}

/// A model that never answers in time.
struct Hangs;

#[async_trait::async_trait]
impl ChatModel for Hangs {
    async fn complete(&self, _request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        tokio::time::sleep(Duration::from_secs(600)).await;
        Ok(ChatResponse::text("too late"))
    }

    fn model_name(&self) -> &str {
        "hangs"
    }
}

#[test]
fn crashes_hangs_and_failing_models_are_recorded_and_the_run_goes_on() {
    let out = tempfile::tempdir().unwrap();
    let mut config = config(out.path(), &[]);
    // Long enough for a task's setup (analysis, context, sandbox) on a
    // loaded 2-core machine, short enough to keep the hang cheap.
    config.timeout_per_task = Duration::from_secs(8);
    let harness = Harness::new(config).unwrap();
    let models = per_task(|ctx| match ctx.task.id.as_str() {
        "WordCount_01" => Ok(Box::new(Panics)),
        "WordCount_02" => Ok(Box::new(Hangs)),
        "LogFilter_01" => Err("no such model".to_owned()),
        _ => Ok(Box::new(Scripted::new())),
    });
    let outcome = harness.run(&models, &|_| {}).unwrap();
    let statuses: Vec<(String, RunStatus)> = outcome
        .report
        .tasks
        .iter()
        .map(|r| (r.task.clone(), r.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("CsvSplit_01".into(), RunStatus::Error),
            ("LogFilter_01".into(), RunStatus::Error),
            ("WordCount_01".into(), RunStatus::Crashed),
            ("WordCount_02".into(), RunStatus::Timeout),
        ]
    );
    assert!(outcome.report.tasks.iter().all(|r| !r.process && !r.result));
    let crashed = by_task(&outcome.report.tasks, "WordCount_01");
    assert!(crashed.message.unwrap().contains("model exploded"));
    let hung = by_task(&outcome.report.tasks, "WordCount_02");
    assert!(hung.wall_ms < 30_000, "{}", hung.wall_ms);
    assert!(
        by_task(&outcome.report.tasks, "LogFilter_01")
            .message
            .unwrap()
            .contains("no such model")
    );
    assert_eq!(outcome.report.summary.ecr, 0.0);
    assert_eq!(outcome.report.failures.len(), 4);
}

#[test]
fn selections_and_paths_of_the_checkout() {
    let bench = Benchmark::open(&mini(), &domains()).unwrap();
    let ids = |s: Selection| -> Vec<String> {
        bench
            .select(&s)
            .unwrap()
            .iter()
            .map(|t| t.id.clone())
            .collect()
    };
    assert_eq!(bench.tasks().len(), 4);
    assert_eq!(
        ids(Selection {
            repo: Some("wordcount".into()),
            ..Selection::default()
        }),
        ["WordCount_01", "WordCount_02"]
    );
    assert_eq!(
        ids(Selection {
            domain: Some("Security & Privacy".into()),
            ..Selection::default()
        }),
        ["LogFilter_01"]
    );
    assert!(
        bench
            .select(&Selection {
                tasks: vec!["Nope_01".into()],
                ..Selection::default()
            })
            .is_err()
    );
    assert!(
        bench
            .select(&Selection {
                domain: Some("astrology".into()),
                ..Selection::default()
            })
            .is_err()
    );
    assert!(
        bench
            .select(&Selection {
                repo: Some("DeOldify".into()),
                ..Selection::default()
            })
            .is_err()
    );

    let log = bench.task("LogFilter_01").unwrap();
    let info = log.info.as_ref().unwrap();
    assert_eq!(info.parameters["keyword"], "ERROR");
    assert!(
        bench
            .task("CsvSplit_01")
            .unwrap()
            .info
            .as_ref()
            .unwrap()
            .multi_output
    );
    assert_eq!(
        bench.map_path(Path::new("/GitTaskBench/code_base/LogFilter")),
        bench.root().join("code_base/LogFilter")
    );
    assert_eq!(
        bench.map_path(Path::new("/elsewhere/x")),
        PathBuf::from("/elsewhere/x")
    );
    assert!(Benchmark::open(&mini().join("config"), &domains()).is_err());
}

#[test]
fn a_selection_keeps_each_task_in_its_checkout_half() {
    // The halves are thirds of the whole checkout. Selecting a few tasks
    // (`--tasks`) must not re-split them: a lone held-out task stays held
    // out, a lone tuning task stays tuning.
    use bench_harness::gittaskbench::feasibility::{self, Half};
    let bench = Benchmark::open(&mini(), &domains()).unwrap();
    let held = feasibility::benchmark_held_out(&bench).unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    let mut seen_held = Vec::new();
    for task in bench.tasks() {
        let one = bench
            .select(&Selection {
                tasks: vec![task.id.clone()],
                ..Selection::default()
            })
            .unwrap();
        let assessed = feasibility::assess(&bench, &one);
        let out = feasibility::in_half(&assessed, &held, Half::HeldOut);
        let tuning = feasibility::in_half(&assessed, &held, Half::Tuning);
        assert_eq!(out.len() + tuning.len(), 1, "{}", task.id);
        seen_held.extend(out);
    }
    assert_eq!(
        seen_held
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>(),
        held
    );
}

#[test]
fn automatic_isolation_runs_and_grades_the_same_way() {
    // Namespaces (bubblewrap) when the machine has them, else process mode.
    let out = tempfile::tempdir().unwrap();
    let mut config = config(out.path(), &["WordCount_01"]);
    config.agent.isolation = sandbox::Isolation::Auto;
    config.grading.isolation = sandbox::Isolation::Auto;
    config.grading.python = GradingPython::Venvs(out.path().join("venvs"));
    let harness = Harness::new(config).unwrap();
    let models = per_task(|ctx| Ok(Box::new(wordcount_solution(ctx.spec))));
    let outcome = harness.run(&models, &|_| {}).unwrap();
    let record = &outcome.report.tasks[0];
    assert!(record.process && record.result, "{record:?}");
}

/// Relative directories are made absolute when the configuration is made:
/// the grading sandbox reads a relative path against its own working
/// directory, and a relative `--out` made the grading virtualenv where the
/// grader did not look (an output graded "cannot use virtualenv
/// interpreter", GitTaskBench held-out run of 2026-11-27).
#[test]
fn relative_directories_are_made_absolute() {
    let config = bench_harness::HarnessConfig::new("data", "target/out");
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(config.root, cwd.join("data"));
    assert_eq!(config.out_dir, cwd.join("target/out"));
    match &config.grading.python {
        bench_harness::GradingPython::Venvs(dir) => {
            assert_eq!(dir, &cwd.join("target/out/venvs"));
        }
        other => panic!("{other:?}"),
    }
}
