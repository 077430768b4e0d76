//! Code run as another user (`run_as`) in process mode: it can work in a
//! private working directory the caller owns, start Python, and cannot read
//! or signal the caller.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;

use sandbox::{Isolation, PythonScript, RunAs, Sandbox, SandboxError};

const PROBE: &str = r#"
import os, sys
caller = int(sys.argv[1])
print("uid", os.getuid())
open("written.txt", "w").write("ok")
print("wrote")
try:
    open("/proc/%d/environ" % caller, "rb").read()
    print("caller env read")
except OSError as e:
    print("caller env refused", e.errno)
try:
    os.kill(caller, 0)
    print("caller signalled")
except OSError as e:
    print("caller signal refused", e.errno)
"#;

#[tokio::test]
async fn code_as_nobody_works_in_a_private_dir_and_cannot_touch_the_caller() {
    if !common::is_root() {
        println!("skipping: only root can run code as another user");
        return;
    }
    // A private (0700) working directory below a private parent, as
    // `tempfile` makes them: the sandbox must open it to the code's user.
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(work.join("existing.txt"), "x").unwrap();

    let config = common::builder(&work, Isolation::Process)
        .run_as(RunAs::NOBODY)
        .build()
        .unwrap();
    let sandbox = match Sandbox::new(config).await {
        Ok(s) => s,
        Err(SandboxError::Io { context, source }) if context.contains("ACL") => {
            println!("skipping: no POSIX ACLs on this file system ({source})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let result = sandbox
        .run_python(PythonScript::code(PROBE), &[std::process::id().to_string()])
        .await
        .unwrap();
    let out = result.stdout.to_string();
    assert!(result.success(), "{result:?}");
    assert!(out.contains("uid 65534"), "{out}");
    assert!(out.contains("wrote"), "{out}");
    assert!(out.contains("caller env refused"), "{out}");
    assert!(out.contains("caller signal refused"), "{out}");
    assert_eq!(
        std::fs::read_to_string(work.join("written.txt")).unwrap(),
        "ok"
    );

    // A file written later by the caller (the agent's own write tools) is
    // writable by the code too, through the directory's default ACL.
    std::fs::write(work.join("later.txt"), "caller").unwrap();
    let append = sandbox
        .run_shell("echo code >> later.txt && echo appended")
        .await
        .unwrap();
    assert!(append.stdout.contains("appended"), "{append:?}");
}

#[tokio::test]
async fn a_working_dir_the_user_cannot_enter_is_a_clear_error() {
    if !common::is_root() {
        println!("skipping: only root can run code as another user");
        return;
    }
    let parent = tempfile::tempdir().unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let work = parent.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let config = common::builder(&work, Isolation::Process)
        .run_as(RunAs::NOBODY)
        .build()
        .unwrap();
    let err = Sandbox::new(config).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("cannot enter"), "{message}");
    assert!(
        message.contains(&parent.path().display().to_string()),
        "{message}"
    );
}
