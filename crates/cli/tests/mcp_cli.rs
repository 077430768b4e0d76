//! `repo-agent mcp` as a client starts it: over standard input and output,
//! driven by a raw JSON-RPC exchange (exit on EOF) and by the official MCP
//! Python SDK (every tool, the path policy, an edit, the resources).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The MCP SDK the end-to-end test installs (pinned: its client API moved
/// between major versions).
const MCP_SDK: &str = "mcp==2.3.0";

fn fixture() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mcp_shop");
    agent::copy_tree(&source, dir.path(), &agent::CopyLimits::default(), &[])?;
    Ok(dir)
}

#[test]
fn the_stdio_server_answers_and_exits_cleanly_when_its_client_closes_input() -> TestResult {
    let repo = fixture()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_repo-agent"))
        .args(["mcp", "--no-cache", "--repo"])
        .arg(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_callers","arguments":{"name":"price_of"}}}"#,
    ] {
        writeln!(stdin, "{line}")?;
    }
    stdin.flush()?;
    let mut lines = BufReader::new(stdout).lines();
    let mut answers = Vec::new();
    // Both answers, and nothing but JSON-RPC on standard output.
    for _ in 0..2 {
        let line = lines.next().ok_or("the server closed its output")??;
        let value: serde_json::Value = serde_json::from_str(&line)?;
        answers.push(value);
    }
    assert_eq!(answers[0]["result"]["serverInfo"]["name"], "repo-agent");
    let text = answers[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("shop.basket.Basket.total"), "{}", answers[1]);
    drop(stdin);
    // EOF ends the session: the process exits by itself, successfully.
    let mut status = None;
    for _ in 0..200 {
        if let Some(s) = child.try_wait()? {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = status else {
        let _ = child.kill();
        return Err("the server did not exit within 10 s of EOF".into());
    };
    assert!(status.success(), "{status}");
    Ok(())
}

/// A virtualenv under the target directory with the MCP SDK, made once.
fn sdk_python() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-sdk-venv");
    let python = venv.join("bin/python");
    let has_sdk = |python: &Path| {
        Command::new(python)
            .args(["-c", "import mcp.client.stdio"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if has_sdk(&python) {
        return Ok(python);
    }
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()?;
    assert!(made.success(), "python3 -m venv failed");
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", MCP_SDK])
        .status()?;
    assert!(installed.success(), "pip install {MCP_SDK} failed");
    assert!(has_sdk(&python), "the SDK does not import after installing");
    Ok(python)
}

#[test]
#[ignore = "needs PyPI: installs the MCP Python SDK into a virtualenv under target/"]
fn the_official_python_sdk_drives_every_tool() -> TestResult {
    let python = sdk_python()?;
    let repo = fixture()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_repo-agent"))
        .arg(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Bounded: the script's checks take seconds.
    let mut waited = 0;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if waited >= 1_200 {
            let _ = child.kill();
            return Err("the SDK client did not finish within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(100));
        waited += 1;
    };
    let output = child.wait_with_output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success() && stdout.contains("\ndone"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.matches("ok: ").count() >= 40, "{stdout}");
    Ok(())
}
