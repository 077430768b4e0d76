//! Isolation guarantees of `namespaces` mode. Each test first checks that bwrap works
//! here and otherwise prints why it is skipping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::{builder, marker, namespaces_or_skip, survivors_after, workdir};
use sandbox::{Command, Isolation, Sandbox};

async fn ns_sandbox(dir: &std::path::Path) -> Sandbox {
    let sandbox = Sandbox::new(builder(dir, Isolation::Namespaces).build().unwrap())
        .await
        .unwrap();
    assert_eq!(sandbox.isolation(), Isolation::Namespaces);
    sandbox
}

#[tokio::test]
async fn auto_picks_namespaces_when_they_work() {
    if !namespaces_or_skip("auto_picks_namespaces_when_they_work").await {
        return;
    }
    let dir = workdir();
    let sandbox = Sandbox::new(builder(dir.path(), Isolation::Auto).build().unwrap())
        .await
        .unwrap();
    assert_eq!(sandbox.isolation(), Isolation::Namespaces);
}

#[tokio::test]
async fn writing_outside_the_working_directory_fails() {
    if !namespaces_or_skip("writing_outside_the_working_directory_fails").await {
        return;
    }
    let dir = workdir();
    let elsewhere = workdir();
    let sandbox = ns_sandbox(dir.path()).await;
    let outside = elsewhere.path().join("escaped.txt");
    let script = format!(
        "echo inside > inside.txt && echo ok-inside; \
         echo x > /usr/sandbox-escape.txt || echo usr-refused; \
         echo x > /etc/sandbox-escape.txt || echo etc-refused; \
         mkdir -p {0} 2>/dev/null; echo x > {0}/escaped.txt; echo done",
        elsewhere.path().display()
    );
    let result = sandbox.run_shell(&script).await.unwrap();
    let out = result.stdout.to_string();
    assert!(out.contains("ok-inside"), "{result:?}");
    assert!(out.contains("usr-refused"), "{result:?}");
    assert!(out.contains("etc-refused"), "{result:?}");
    assert!(
        result.stderr.contains("Read-only file system"),
        "{result:?}"
    );
    // Granted: the working directory is shared with the host.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("inside.txt")).unwrap(),
        "inside\n"
    );
    // Not granted: a host directory outside it (under /tmp, which is private inside)
    // is untouched even though the write "succeeded" in the private /tmp.
    assert!(!outside.exists(), "write escaped to {}", outside.display());
    assert!(!std::path::Path::new("/usr/sandbox-escape.txt").exists());
}

#[tokio::test]
async fn the_callers_home_is_not_readable() {
    if !namespaces_or_skip("the_callers_home_is_not_readable").await {
        return;
    }
    let home = std::env::var_os("HOME").expect("HOME is set for the test");
    let secret_dir = tempfile::Builder::new()
        .prefix(".sandbox-test-secret-")
        .tempdir_in(&home)
        .unwrap();
    let secret_file = secret_dir.path().join("credentials");
    std::fs::write(&secret_file, "top-secret-token-93817").unwrap();
    let dir_name = secret_dir
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let command = format!(
        "cat {}; ls -a {}",
        secret_file.display(),
        std::path::Path::new(&home).display()
    );

    // Control: in process mode the same command reads it when the code runs as the
    // caller; a root caller's code runs as nobody, which the home's 0700 keeps out.
    let dir = workdir();
    let process = Sandbox::new(builder(dir.path(), Isolation::Process).build().unwrap())
        .await
        .unwrap();
    let leaked = process.run_shell(&command).await.unwrap();
    let as_caller = process.run_as().is_none();
    assert_eq!(
        leaked.stdout.contains("top-secret-token-93817"),
        as_caller,
        "{leaked:?}"
    );
    assert_eq!(leaked.stdout.contains(&dir_name), as_caller, "{leaked:?}");

    let sandbox = ns_sandbox(dir.path()).await;
    let result = sandbox.run_shell(&command).await.unwrap();
    assert!(
        !result.stdout.contains("top-secret-token-93817"),
        "{result:?}"
    );
    assert!(!result.stdout.contains(&dir_name), "{result:?}");
    assert!(
        result.stderr.contains("No such file or directory"),
        "{result:?}"
    );
}

fn accepted_within(listener: &TcpListener, limit: Duration) -> bool {
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    loop {
        match listener.accept() {
            Ok(_) => return true,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("accept failed: {e}"),
        }
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn network_is_off_unless_enabled() {
    if !namespaces_or_skip("network_is_off_unless_enabled").await {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("echo hello > /dev/tcp/127.0.0.1/{port} && echo connected");
    let dir = workdir();

    let sandbox = ns_sandbox(dir.path()).await;
    let result = sandbox.run_shell(&connect).await.unwrap();
    assert!(!result.success(), "{result:?}");
    assert!(!result.stdout.contains("connected"));
    assert!(!accepted_within(&listener, Duration::from_millis(300)));
    // Loopback still works inside, for programs that talk to themselves.
    let lo = sandbox
        .run_python(
            sandbox::PythonScript::code(
                "import socket\n\
                 s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
                 c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n\
                 c.sendall(b'ping'); print(a.recv(4).decode())",
            ),
            &[] as &[&str],
        )
        .await
        .unwrap();
    assert_eq!(lo.stdout.head, "ping\n", "{lo:?}");

    // Control: with the network switched on the same connection goes through.
    let online = Sandbox::new(
        builder(dir.path(), Isolation::Namespaces)
            .network(true)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let result = online.run_shell(&connect).await.unwrap();
    assert!(result.success(), "{result:?}");
    assert!(accepted_within(&listener, Duration::from_secs(5)));
}

#[tokio::test]
async fn a_background_child_is_gone_after_the_call() {
    if !namespaces_or_skip("a_background_child_is_gone_after_the_call").await {
        return;
    }
    let dir = workdir();
    let mark = marker("nsorphan");
    let sandbox = ns_sandbox(dir.path()).await;
    // setsid takes the child out of every process group and session; only the PID
    // namespace can still catch it.
    let result = sandbox
        .run_shell(&format!(
            "setsid sh -c 'sleep 1000; : {mark}' & echo started"
        ))
        .await
        .unwrap();
    assert!(result.success(), "{result:?}");
    assert!(result.stdout.contains("started"));
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(3)),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_namespace() {
    if !namespaces_or_skip("timeout_kills_the_whole_namespace").await {
        return;
    }
    let dir = workdir();
    let mark = marker("nstimeout");
    let sandbox = Sandbox::new(
        builder(dir.path(), Isolation::Namespaces)
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let result = sandbox
        .exec(Command::new("bash").arg("-c").arg(format!(
            "setsid sh -c 'sleep 1000; : {mark}' & while :; do :; done"
        )))
        .await
        .unwrap();
    assert!(result.timed_out);
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(3)),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn memory_hog_is_reported_in_namespaces_too() {
    if !namespaces_or_skip("memory_hog_is_reported_in_namespaces_too").await {
        return;
    }
    let dir = workdir();
    let sandbox = Sandbox::new(
        builder(dir.path(), Isolation::Namespaces)
            .memory_limit(512u64 << 20)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let result = sandbox
        .run_python(
            sandbox::PythonScript::code("x = []\nwhile True:\n    x.append(bytearray(1 << 26))\n"),
            &[] as &[&str],
        )
        .await
        .unwrap();
    assert!(result.killed_for_memory, "{result:?}");
    assert!(!result.timed_out);
}
