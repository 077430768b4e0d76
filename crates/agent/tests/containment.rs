//! Every file tool inside the task's roots (issue 17): absolute paths,
//! `..` traversal, symlinks out of a root, `/proc` and device files are
//! refused with a message, and nothing outside the roots is read, listed,
//! created or changed.

mod common;

use std::path::Path;

use agent::{Prepared, ToolOutput};
use llm::ToolCall;
use serde_json::{Value, json};

use common::{Fixture, config};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn call(prepared: &Prepared, name: &str, args: Value) -> ToolOutput {
    prepared.tools.call(&ToolCall::new("t1", name, args)).await
}

/// A fixture, an "outside" directory with a secret next to it, and
/// symlinks inside the work directory (the repository) that point out.
struct Setup {
    fixture: Fixture,
    outside: tempfile::TempDir,
    prepared: Prepared,
}

async fn setup() -> Result<Setup, Box<dyn std::error::Error>> {
    let fixture = Fixture::new()?;
    let outside = tempfile::tempdir()?;
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET-VALUE\n")?;
    std::os::unix::fs::symlink(outside.path(), fixture.repo().join("escape_dir"))?;
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        fixture.repo().join("escape_file"),
    )?;
    std::os::unix::fs::symlink(
        outside.path().join("planted.txt"),
        fixture.repo().join("dangling"),
    )?;
    let prepared = agent::prepare(&fixture.task(), &config()).await?;
    Ok(Setup {
        fixture,
        outside,
        prepared,
    })
}

/// Paths that name something outside every root, in every spelling.
fn hostile_paths(s: &Setup) -> Vec<String> {
    let outside = s.outside.path();
    let depth = s.fixture.repo().components().count();
    vec![
        outside.join("secret.txt").display().to_string(),
        format!(
            "{}{}",
            "../".repeat(depth),
            outside
                .join("secret.txt")
                .display()
                .to_string()
                .trim_start_matches('/')
        ),
        "escape_dir/secret.txt".into(),
        "escape_file".into(),
        "/proc/self/environ".into(),
        "/etc/passwd".into(),
    ]
}

fn refused(out: &ToolOutput, what: &str) {
    assert!(out.is_error, "{what} was allowed: {}", out.text);
    assert!(
        !out.text.contains("TOP-SECRET-VALUE"),
        "{what} leaked: {}",
        out.text
    );
}

#[tokio::test]
async fn reading_tools_refuse_everything_outside_the_roots() -> TestResult {
    let s = setup().await?;
    for path in hostile_paths(&s) {
        for tool in ["view_file", "read_document", "list_directory"] {
            let out = call(&s.prepared, tool, json!({"path": path})).await;
            refused(&out, &format!("{tool} {path}"));
        }
    }
    let out = call(&s.prepared, "list_directory", json!({"path": "/"})).await;
    refused(&out, "list_directory /");
    let out = call(&s.prepared, "list_directory", json!({"path": "escape_dir"})).await;
    refused(&out, "list_directory through a symlink");
    // Devices are refused even where a root would allow them.
    let out = call(&s.prepared, "view_file", json!({"path": "/dev/zero"})).await;
    refused(&out, "view_file /dev/zero");
    Ok(())
}

#[tokio::test]
async fn reading_tools_still_read_the_task_files() -> TestResult {
    let s = setup().await?;
    let input = s.fixture.input().display().to_string();
    let out = call(&s.prepared, "view_file", json!({"path": input})).await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(&s.prepared, "list_directory", json!({"path": "."})).await;
    assert!(!out.is_error, "{}", out.text);
    // A path that climbs out and back in is fine: it names a task file.
    let repo = s.fixture.repo();
    let name = repo.file_name().and_then(|n| n.to_str()).unwrap_or("repo");
    let round_trip = format!("../{name}/README.md");
    if repo.join("README.md").is_file() {
        let out = call(&s.prepared, "view_file", json!({"path": round_trip})).await;
        assert!(!out.is_error, "{}", out.text);
    }
    Ok(())
}

#[tokio::test]
async fn writing_tools_create_and_change_nothing_outside() -> TestResult {
    let s = setup().await?;
    let outside = s.outside.path();
    let depth = s.fixture.repo().components().count();
    let attempts = [
        outside.join("planted.txt").display().to_string(),
        format!(
            "{}{}",
            "../".repeat(depth),
            outside
                .join("planted.txt")
                .display()
                .to_string()
                .trim_start_matches('/')
        ),
        "escape_dir/planted.txt".into(),
        "dangling".into(),
        "escape_file".into(),
        "/proc/self/attr/current".into(),
    ];
    for path in &attempts {
        let out = call(
            &s.prepared,
            "write_file",
            json!({"path": path, "content": "owned"}),
        )
        .await;
        refused(&out, &format!("write_file {path}"));
        let out = call(
            &s.prepared,
            "edit_file",
            json!({"path": path, "old_text": "TOP-SECRET-VALUE", "new_text": "owned"}),
        )
        .await;
        refused(&out, &format!("edit_file {path}"));
    }
    assert!(
        !outside.join("planted.txt").exists(),
        "a file was planted outside"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt"))?,
        "TOP-SECRET-VALUE\n",
        "a file outside was changed"
    );
    // The input file is read-only.
    let input = s.fixture.input().display().to_string();
    let out = call(
        &s.prepared,
        "write_file",
        json!({"path": input, "content": "owned"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("read-only"),
        "{}",
        out.text
    );
    Ok(())
}

#[tokio::test]
async fn writing_tools_work_in_the_work_and_output_directories() -> TestResult {
    let s = setup().await?;
    let out_file = s.fixture.out().join("sub/result.csv");
    let out = call(
        &s.prepared,
        "write_file",
        json!({"path": out_file.display().to_string(), "content": "a,1\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(std::fs::read_to_string(&out_file)?, "a,1\n");
    let out = call(
        &s.prepared,
        "write_file",
        json!({"path": "scratch/helper.py", "content": "x = 1\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(
        &s.prepared,
        "edit_file",
        json!({"path": "scratch/helper.py", "old_text": "x = 1", "new_text": "x = 2"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        std::fs::read_to_string(s.fixture.repo().join("scratch/helper.py"))?,
        "x = 2\n"
    );
    Ok(())
}

#[tokio::test]
async fn run_python_runs_only_scripts_inside_the_roots() -> TestResult {
    let s = setup().await?;
    std::fs::write(s.outside.path().join("evil.py"), "print('ran outside')\n")?;
    let path = s.outside.path().join("evil.py").display().to_string();
    let out = call(&s.prepared, "run_python", json!({"path": path})).await;
    assert!(out.is_error, "{}", out.text);
    assert!(!out.text.contains("ran outside"), "{}", out.text);
    assert!(Path::new(&path).exists());
    Ok(())
}

/// With `--work-dir` elsewhere, the primary repository is still mounted in
/// the namespace sandbox, so its package imports (issue 17).
#[tokio::test]
async fn the_primary_repository_is_importable_from_another_work_dir() -> TestResult {
    if let Err(reason) = sandbox::namespaces_available().await {
        eprintln!("skipping: namespaces unavailable here ({reason})");
        return Ok(());
    }
    let fixture = Fixture::new()?;
    let work = tempfile::tempdir()?;
    let mut task = fixture.task();
    task.work_dir = Some(work.path().to_path_buf());
    // The input's directory holds the repository: mounting it would hide
    // the bug this shows.
    task.inputs.clear();
    let config = agent::AgentConfig {
        isolation: sandbox::Isolation::Namespaces,
        ..config()
    };
    let prepared = agent::prepare(&task, &config).await?;
    let out = call(
        &prepared,
        "run_python",
        json!({"code": "import os, sys\nprint(sys.path)\nprint(os.listdir('/'))\nimport textstats.core\nprint('imported', textstats.core.__name__, textstats.core.__file__)"}),
    )
    .await;
    eprintln!("OUT: {}", out.text.replace('\n', " // "));
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("imported textstats.core"), "{}", out.text);
    Ok(())
}

/// In the namespace sandbox an input file is visible, its siblings are not.
#[tokio::test]
async fn only_the_input_files_are_mounted_not_their_directories() -> TestResult {
    if let Err(reason) = sandbox::namespaces_available().await {
        eprintln!("skipping: namespaces unavailable here ({reason})");
        return Ok(());
    }
    let fixture = Fixture::new()?;
    std::fs::write(fixture.dir.path().join("sibling.txt"), "TOP-SECRET-VALUE\n")?;
    let config = agent::AgentConfig {
        isolation: sandbox::Isolation::Namespaces,
        ..config()
    };
    let prepared = agent::prepare(&fixture.task(), &config).await?;
    let code = format!(
        "import os\nprint(open({input:?}).read()[:20])\nprint('sibling visible:', os.path.exists({sibling:?}))",
        input = fixture.input().display().to_string(),
        sibling = fixture.dir.path().join("sibling.txt").display().to_string(),
    );
    let out = call(&prepared, "run_python", json!({"code": code})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("sibling visible: False"), "{}", out.text);
    Ok(())
}
