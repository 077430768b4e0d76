//! Unit tests of the generation pipeline (`Run`), with scripted models.

use super::*;

#[test]
fn agent_files_are_not_written_through_a_symlinked_directory() {
    let out = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), out.path().join(AGENT_DIR)).unwrap();
    let root = std::fs::canonicalize(out.path()).unwrap();
    let policy = PathPolicy::new(&root).root(&root, RootKind::WorkDir, Access::ReadWrite);
    let err = write_inside(&policy, &format!("{AGENT_DIR}/report.json"), b"{}").unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot write .repo-agent/report.json"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    // A file symlinked out of the tree is refused too.
    std::os::unix::fs::symlink(outside.path().join("x"), root.join("app.py")).unwrap();
    assert!(write_inside(&policy, "app.py", b"print(1)\n").is_err());
    assert!(!outside.path().join("x").exists());
    write_inside(&policy, "pkg/mod.py", b"x = 1\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("pkg/mod.py")).unwrap(),
        "x = 1\n"
    );
}

/// An app serving `GET` and `POST /notes`.
const NOTES_APP: &str = "from flask import Flask\napp = Flask(__name__)\n\n@app.get('/notes')\ndef notes():\n    return {'notes': []}\n\n@app.post('/notes')\ndef add():\n    return {}, 201\n";

/// A specification of the notes service (port 8090) declaring
/// `endpoints` (lines like `GET /notes`).
fn notes_spec(dir: &Path, endpoints: &str) -> PathBuf {
    let spec = dir.join("README.md");
    std::fs::write(
        &spec,
        format!("# Notes\n\nListens on port 8090.\n\n## API\n\n{endpoints}"),
    )
    .unwrap();
    spec
}

/// Generates from `spec` into `out` with the facts blueprint and
/// static checks only.
async fn generate_static(
    model: &llm::Scripted,
    spec: &Path,
    out: &Path,
    max_iterations: u32,
) -> (GenerateReport, Trajectory) {
    let config = GenerateConfig {
        dynamic_checks: false,
        max_iterations,
        isolation: Isolation::Process,
        blueprint_source: BlueprintSource::Facts,
        ..GenerateConfig::default()
    };
    let mut trajectory = Trajectory::in_memory();
    let report = generate(
        model,
        &GenerateRequest::new(spec, out),
        &config,
        &mut trajectory,
        &mut |_| {},
    )
    .await
    .unwrap();
    (report, trajectory)
}

#[tokio::test]
async fn a_facts_blueprint_costs_no_model_call_and_the_app_prompt_holds_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = notes_spec(dir.path(), "GET /notes\n\nPOST /notes\n");
    let model = llm::Scripted::new().then_text(format!("```python\n{NOTES_APP}```"));
    let out = dir.path().join("out");
    let (report, trajectory) = generate_static(&model, &spec, &out, 0).await;
    assert_eq!(report.summary.blueprint, Some(BlueprintOrigin::Facts));
    assert_eq!(
        report.summary.status,
        GenerateStatus::Verified,
        "{:#?}",
        report.checks
    );
    // One call, app.py's, with the specification as its contract.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let prompt = requests[0].messages[1].text().unwrap_or("");
    assert!(
        prompt.contains("# Write `app.py`") && prompt.contains("POST /notes"),
        "{prompt}"
    );
    let start = std::fs::read_to_string(out.join("start.sh")).unwrap();
    assert!(
        start.contains("--app app:app run --host 0.0.0.0 --port 8090"),
        "{start}"
    );
    // The blueprint step says where it came from.
    assert!(trajectory.events().iter().any(|e| matches!(e,
        TrajectoryEvent::Step(s) if s.phase == GeneratePhase::Blueprint
            && s.result.starts_with("from the specification's facts: 2 endpoints, port 8090"))));
}

/// Measured (RepoGenesis Chatroom, tuning half, run 2): the first
/// repair overwrote a working app with its own file name.
#[tokio::test]
async fn a_repair_that_leaves_fewer_checks_passing_is_undone() {
    let dir = tempfile::tempdir().unwrap();
    // Serves two of the three endpoints: one check fails.
    let spec = notes_spec(dir.path(), "GET /notes\n\nPOST /notes\n\nGET /health\n");
    let app = NOTES_APP;
    let out = dir.path().join("out");
    let call = |id: &str, name: &str, arguments: serde_json::Value| {
        llm::ChatResponse::with_tool_calls(vec![llm::ToolCall::new(id, name, arguments)])
    };
    let model = llm::Scripted::new()
        .then_text(format!("```python\n{app}```"))
        .then(call(
            "r1",
            "write_file",
            // A wreck that no longer parses.
            serde_json::json!({"path": out.join("app.py"), "content": "app.py ("}),
        ))
        .then(call(
            "r2",
            "write_file",
            serde_json::json!({"path": out.join("extra.py"), "content": "x = 1\n"}),
        ))
        .then(call(
            "r3",
            "finish",
            serde_json::json!({"summary": "rewrote app.py"}),
        ));
    let (report, trajectory) = generate_static(&model, &spec, &out, 1).await;
    assert_eq!(model.remaining(), 0);
    let s = &report.summary;
    assert_eq!(s.rounds.len(), 2);
    assert!(s.rounds[1].passed < s.rounds[0].passed, "{:?}", s.rounds);
    // The run ends with round 0's files and checks.
    assert_eq!(std::fs::read_to_string(out.join("app.py")).unwrap(), app);
    assert!(!out.join("extra.py").exists());
    assert_eq!(s.checks_passed, s.rounds[0].passed);
    assert_eq!(s.status, GenerateStatus::ChecksFailed);
    let restore = trajectory
        .events()
        .iter()
        .find_map(|e| match e {
            TrajectoryEvent::Step(step) if step.phase == GeneratePhase::Restore => {
                Some(step.result.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(
        restore.starts_with("put back the files of round 0 (the last round passed")
            && restore.contains("app.py")
            && restore.contains("extra.py"),
        "{restore}"
    );
}

#[test]
fn file_content_takes_the_block_or_the_answer() {
    // A README whose own code fences sit inside a longer outer fence.
    let readme = "````markdown\n# Run\n```sh\n./start.sh\n```\n````";
    assert_eq!(file_content(readme), "# Run\n```sh\n./start.sh\n```\n");
    assert_eq!(
        file_content("Here:\n```python\nprint(1)\n```\nDone."),
        "print(1)\n"
    );
    assert_eq!(file_content("flask\n"), "flask\n");
    assert_eq!(
        file_content("```\na\n```\n```sh\nlonger one\n```"),
        "longer one\n"
    );
    let huge = "x".repeat(MAX_FILE_BYTES * 2);
    assert!(file_content(&huge).len() <= MAX_FILE_BYTES + 1);
}

#[test]
fn a_hostile_specification_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("spec.bin");
    std::fs::write(&binary, b"\0\x01\x02").unwrap();
    assert!(
        read_spec(&binary)
            .unwrap_err()
            .to_string()
            .contains("binary")
    );
    let empty = dir.path().join("empty.md");
    std::fs::write(&empty, "  \n").unwrap();
    assert!(read_spec(&empty).unwrap_err().to_string().contains("empty"));
    let error = |path: &Path| read_spec(path).unwrap_err().to_string();
    assert!(
        error(dir.path()).contains("it is a directory, not a regular file"),
        "{}",
        error(dir.path())
    );
    assert!(read_spec(&dir.path().join("missing.md")).is_err());
    // A pipe is refused at once, not waited on; a sparse giant by its
    // size, unread.
    let fifo = dir.path().join("spec.md");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert!(
        error(&fifo).contains("it is a named pipe"),
        "{}",
        error(&fifo)
    );
    let giant = dir.path().join("giant.md");
    std::fs::File::create(&giant)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    assert!(
        error(&giant).contains("it is larger than 2 MiB (1099511627776 bytes)"),
        "{}",
        error(&giant)
    );
    // A link the user gave is followed: the path is theirs.
    let real = dir.path().join("real.md");
    std::fs::write(&real, "# Service\n").unwrap();
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(read_spec(&link).unwrap(), "# Service\n");
}
