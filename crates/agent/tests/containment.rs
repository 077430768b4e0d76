//! Every file tool inside the task's roots (issue 17): absolute paths,
//! `..` traversal, symlinks out of a root, `/proc` and device files are
//! refused with a message, and nothing outside the roots is read, listed,
//! created or changed.

mod common;

use std::path::Path;

use agent::{Prepared, ToolOutput};
use llm::ToolCall;
use serde_json::{Value, json};

use common::{Fixture, alive_with, config};

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
    let config = {
        let mut config = config();
        config.isolation = sandbox::Isolation::Namespaces;
        config
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
    let config = {
        let mut config = config();
        config.isolation = sandbox::Isolation::Namespaces;
        config
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

/// What model-written code tries from inside `run_python`, per mode: read
/// a secret outside the task, plant a file outside it, read the agent's
/// environment, reach a server on the host, leave a daemon behind.
const ATTACK: &str = r#"
import os, socket, subprocess, sys
secret, planted, port, mark = sys.argv[1:5]
try:
    print("secret:", open(secret).read().strip())
except Exception as e:
    print("secret unreadable:", type(e).__name__)
try:
    open(planted, "w").write("owned")
    print("planted")
except Exception as e:
    print("plant failed:", type(e).__name__)
try:
    # The agent (this test process) has CARGO_MANIFEST_DIR in its environment.
    env = open("/proc/%d/environ" % os.getppid(), "rb").read()
    print("agent env seen:", b"CARGO_MANIFEST_DIR" in env)
except Exception as e:
    print("agent env unreadable:", type(e).__name__)
try:
    socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
    print("host reached")
except Exception as e:
    print("host unreachable:", type(e).__name__)
subprocess.Popen(["setsid", "sh", "-c", "sleep 1000; : " + mark],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("daemon started")
"#;

async fn attack(
    isolation: sandbox::Isolation,
) -> Result<(String, Setup, String), Box<dyn std::error::Error>> {
    let s = setup().await?;
    let config = {
        let mut config = config();
        config.isolation = isolation;
        config
    };
    let prepared = agent::prepare(&s.fixture.task(), &config).await?;
    let secret = s.outside.path().join("secret.txt");
    let tools = prepared
        .tools
        .with_redactor(agent::Redactor::new(["TOP-SECRET-VALUE".to_string()]));
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port().to_string();
    let mark = format!("redteam-{}-{isolation}", std::process::id());
    let out = tools
        .call(&ToolCall::new(
            "a",
            "run_python",
            json!({"code": ATTACK, "args": [
                secret.display().to_string(),
                s.outside.path().join("planted.txt").display().to_string(),
                port,
                mark,
            ]}),
        ))
        .await;
    drop(listener);
    Ok((out.text, s, mark))
}

#[tokio::test]
async fn red_team_code_in_the_namespace_sandbox_reaches_nothing() -> TestResult {
    if let Err(reason) = sandbox::namespaces_available().await {
        eprintln!("skipping: namespaces unavailable here ({reason})");
        return Ok(());
    }
    let (text, s, mark) = attack(sandbox::Isolation::Namespaces).await?;
    assert!(text.contains("daemon started"), "{text}");
    assert!(text.contains("secret unreadable"), "{text}");
    assert!(text.contains("plant failed"), "{text}");
    assert!(!s.outside.path().join("planted.txt").exists());
    assert!(
        text.contains("agent env unreadable") || text.contains("agent env seen: False"),
        "{text}"
    );
    assert!(text.contains("host unreachable"), "{text}");
    assert_eq!(alive_with(&mark).len(), 0, "the daemon outlived the call");
    Ok(())
}

/// Process mode cannot hide the host's files from code running as the
/// agent's user (issue 17 leaves that open), but what the code finds does
/// not reach the model, and its daemon dies with the call.
#[tokio::test]
async fn red_team_code_in_process_mode_leaks_no_secret_and_leaves_no_daemon() -> TestResult {
    let (text, _s, mark) = attack(sandbox::Isolation::Process).await?;
    assert!(text.contains("daemon started"), "{text}");
    assert!(!text.contains("TOP-SECRET-VALUE"), "{text}");
    assert_eq!(alive_with(&mark).len(), 0, "the daemon outlived the call");
    Ok(())
}
