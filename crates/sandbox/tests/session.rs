//! Shell sessions keep `cd` and `export` between commands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{builder, workdir};
use sandbox::{BlockingSandbox, Isolation, Sandbox};

async fn session_keeps_cd_and_export(isolation: Isolation) {
    let dir = workdir();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let sandbox = Sandbox::new(builder(dir.path(), isolation).build().unwrap())
        .await
        .unwrap();
    let mut shell = sandbox.shell_session().unwrap();
    assert_eq!(shell.cwd(), root);

    let first = shell
        .run("mkdir -p sub/deeper && cd sub && export GREETING='hello world' && LOCAL_ONLY=1")
        .await
        .unwrap();
    assert!(first.success(), "{isolation}: {first:?}");
    assert_eq!(shell.cwd(), root.join("sub"));

    let second = shell
        .run("pwd; echo \"$GREETING\"; echo \"[${LOCAL_ONLY-}]\"")
        .await
        .unwrap();
    let sub = root.join("sub");
    assert_eq!(
        second.stdout.head,
        format!("{}\nhello world\n[]\n", sub.display()),
        "{isolation}"
    );

    // A failing command still saves its state, and keeps its exit status.
    let third = shell
        .run("unset GREETING; cd deeper; exit 3")
        .await
        .unwrap();
    assert_eq!(third.exit_code, Some(3), "{isolation}: {third:?}");
    let fourth = shell
        .run("pwd; echo \"[${GREETING-unset}]\"")
        .await
        .unwrap();
    assert_eq!(
        fourth.stdout.head,
        format!("{}\n[unset]\n", root.join("sub/deeper").display()),
        "{isolation}"
    );

    // Another session on the same sandbox starts fresh.
    let mut other = sandbox.shell_session().unwrap();
    let fresh = other
        .run("pwd; echo \"[${GREETING-unset}]\"")
        .await
        .unwrap();
    assert_eq!(fresh.stdout.head, format!("{}\n[unset]\n", root.display()));
}

#[tokio::test]
async fn session_keeps_cd_and_export_in_process_mode() {
    session_keeps_cd_and_export(Isolation::Process).await;
}

#[tokio::test]
async fn session_keeps_cd_and_export_in_namespaces_mode() {
    if !common::namespaces_or_skip("session_keeps_cd_and_export_in_namespaces_mode").await {
        return;
    }
    session_keeps_cd_and_export(Isolation::Namespaces).await;
}

#[test]
fn blocking_sandbox_runs_commands_and_sessions() {
    let dir = workdir();
    let sandbox =
        BlockingSandbox::new(builder(dir.path(), Isolation::Process).build().unwrap()).unwrap();
    let result = sandbox.run_shell("echo blocking; exit 4").unwrap();
    assert_eq!(result.exit_code, Some(4));
    assert_eq!(result.stdout.head, "blocking\n");

    let mut shell = sandbox.shell_session().unwrap();
    shell.run("export N=5; mkdir -p d; cd d").unwrap();
    let again = shell.run("echo $N").unwrap();
    assert_eq!(again.stdout.head, "5\n");
    assert!(shell.cwd().ends_with("d"));
}

#[tokio::test]
async fn blocking_sandbox_refuses_to_block_inside_a_runtime() {
    let dir = workdir();
    let err =
        BlockingSandbox::new(builder(dir.path(), Isolation::Process).build().unwrap()).unwrap_err();
    assert!(
        matches!(err, sandbox::SandboxError::BlockingInsideRuntime),
        "{err}"
    );
}
