//! Limits and cleanup in `process` isolation (these always run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{builder, marker, processes_with_marker, survivors_after, workdir};
use sandbox::{Command, Isolation, OutputStream, PythonScript, RunAs, Sandbox, SandboxError};

/// A process-mode sandbox with the tests' default configuration.
async fn process_sandbox(dir: &std::path::Path) -> Sandbox {
    Sandbox::new(builder(dir, Isolation::Process).build().unwrap())
        .await
        .unwrap()
}

const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;
const SIGXFSZ: i32 = 25;

#[tokio::test]
async fn infinite_loop_is_killed_at_the_timeout_with_its_children() {
    let dir = workdir();
    let mark = marker("timeout");
    // The callback looks for the background child while the loop spins, proving it
    // existed before the timeout fired.
    let seen_running = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&seen_running);
    let mark_cb = mark.clone();
    let config = builder(dir.path(), Isolation::Process)
        .timeout(Duration::from_secs(1))
        .on_output(move |chunk| {
            if chunk.stream == OutputStream::Stdout
                && chunk.bytes.windows(7).any(|w| w == b"started")
            {
                seen.lock().unwrap().extend(processes_with_marker(&mark_cb));
            }
        })
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let script = format!("sh -c 'sleep 1000; : {mark}' & echo started; while :; do :; done");
    let result = sandbox
        .exec(Command::new("bash").arg("-c").arg(&script))
        .await
        .unwrap();

    assert!(result.timed_out, "{result:?}");
    assert!(!result.success());
    assert!(result.stdout.contains("started"));
    assert!(
        !seen_running.lock().unwrap().is_empty(),
        "background child never observed"
    );
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(2)),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn a_program_ignoring_sigterm_is_killed_after_the_grace_period() {
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Process)
        .timeout(Duration::from_millis(500))
        .kill_grace(Duration::from_millis(200))
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let result = sandbox
        .exec(
            Command::new("bash")
                .arg("-c")
                .arg("trap '' TERM; echo armed; while :; do :; done"),
        )
        .await
        .unwrap();
    assert!(result.timed_out);
    assert!(result.stdout.contains("armed"));
    assert_eq!(result.signal, Some(SIGKILL), "{result:?}");
    assert!(
        !result.killed_for_memory,
        "our own SIGKILL is not a memory kill"
    );
}

#[tokio::test]
async fn background_children_do_not_outlive_a_normal_exit() {
    let dir = workdir();
    let mark = marker("orphan");
    let sandbox = process_sandbox(dir.path()).await;
    let result = sandbox
        .run_shell(&format!("sh -c 'sleep 1000; : {mark}' & echo $!"))
        .await
        .unwrap();
    assert!(result.success(), "{result:?}");
    assert!(!result.timed_out);
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(2)),
        Vec::<u32>::new()
    );
}

/// The fork bomb forks children that sleep, up to a hard cap of 2000, and prints how
/// many forks succeeded. The limit must stop it far below the cap. As root the kernel
/// ignores RLIMIT_NPROC, so the code then runs as `nobody`.
const FORK_BOMB: &str = r#"
my $n = 0;
for (1..2000) {
    my $pid = fork;
    if (!defined $pid) { print "fork failed: $!\n"; last }
    if ($pid == 0) { sleep 30; exit 0 }
    $n++;
}
print "forked $n\n";
"#;

fn forked_count(stdout: &str) -> u32 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("forked "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(u32::MAX)
}

async fn fork_bomb_is_contained(isolation: Isolation) {
    let dir = workdir();
    let mark = marker("forkbomb");
    let mut config = builder(dir.path(), isolation).max_processes(40u64);
    if common::is_root() {
        config = config.run_as(RunAs::NOBODY);
    }
    let sandbox = Sandbox::new(config.build().unwrap()).await.unwrap();
    assert!(sandbox.process_limit_enforced());
    let result = sandbox
        .exec(Command::new("perl").arg("-e").arg(FORK_BOMB).arg(&mark))
        .await
        .unwrap();
    let stdout = result.stdout.to_string();
    let forked = forked_count(&stdout);
    println!("{isolation}: {}", stdout.trim());
    assert!(result.success(), "{result:?}");
    assert!(stdout.contains("fork failed"), "{stdout}");
    assert!(forked <= 45, "the limit did not stop the bomb: {stdout}");
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(3)),
        Vec::<u32>::new()
    );
}

#[tokio::test]
async fn fork_bomb_is_contained_by_the_process_limit() {
    // Both isolation levels in one test: they share the per-user process budget, so
    // running them in parallel would make each other's counts meaningless.
    fork_bomb_is_contained(Isolation::Process).await;
    if common::namespaces_or_skip("fork bomb in namespaces").await {
        fork_bomb_is_contained(Isolation::Namespaces).await;
    }
}

#[tokio::test]
async fn memory_hog_is_stopped_and_reported() {
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Process)
        .memory_limit(512u64 << 20)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let hog = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))\n";
    let result = sandbox
        .run_python(PythonScript::code(hog), &[] as &[&str])
        .await
        .unwrap();
    assert!(!result.success());
    assert!(!result.timed_out);
    assert!(result.killed_for_memory, "{result:?}");
    assert!(result.stderr.contains("MemoryError"));
    assert!(result.status_summary().contains("memory limit"));

    // Control: the same sandbox does not blame memory for an ordinary failure.
    let plain = sandbox.run_shell("echo boom >&2; exit 3").await.unwrap();
    assert_eq!(plain.exit_code, Some(3));
    assert!(!plain.killed_for_memory);
}

#[tokio::test]
async fn cpu_time_limit_stops_a_busy_loop() {
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Process)
        .cpu_time_limit(Duration::from_secs(1))
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let result = sandbox
        .exec(Command::new("bash").arg("-c").arg("while :; do :; done"))
        .await
        .unwrap();
    assert!(
        !result.timed_out,
        "the CPU limit, not the timeout, must stop it"
    );
    assert_eq!(result.signal, Some(SIGXCPU), "{result:?}");
}

#[tokio::test]
async fn file_size_limit_stops_a_big_write() {
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Process)
        .max_file_size(1u64 << 20)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let result = sandbox
        .exec(Command::new("head").args(["-c", "4000000", "/dev/zero"]))
        .await
        .unwrap();
    // Writing to the pipe is not limited; writing a file is.
    assert!(result.success(), "{result:?}");
    let result = sandbox
        .exec(
            Command::new("bash")
                .arg("-c")
                .arg("exec head -c 4000000 /dev/zero > big.bin"),
        )
        .await
        .unwrap();
    assert_eq!(result.signal, Some(SIGXFSZ), "{result:?}");
    let size = std::fs::metadata(dir.path().join("big.bin")).unwrap().len();
    assert_eq!(size, 1 << 20);
}

#[tokio::test]
async fn exit_codes_stdin_and_streams_come_back() {
    let dir = workdir();
    let sandbox = process_sandbox(dir.path()).await;
    let result = sandbox
        .exec(
            Command::new("bash")
                .arg("-c")
                .arg("read line; echo \"got $line\"; echo oops >&2; exit 7")
                .stdin("hello\n"),
        )
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(7));
    assert_eq!(result.signal, None);
    assert_eq!(result.stdout.head, "got hello\n");
    assert_eq!(result.stderr.head, "oops\n");
    assert!(!result.truncated);
    assert!(!result.success());

    // Input far larger than a pipe buffer, to a program that never reads it.
    let ignored = sandbox
        .exec(Command::new("true").stdin(vec![b'x'; 8 << 20]))
        .await
        .unwrap();
    assert!(ignored.success(), "{ignored:?}");
}

#[tokio::test]
async fn relative_current_dir_is_taken_from_the_working_directory() {
    let dir = workdir();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let sandbox = process_sandbox(dir.path()).await;
    let result = sandbox
        .exec(Command::new("pwd").current_dir("sub"))
        .await
        .unwrap();
    let expected = std::fs::canonicalize(dir.path().join("sub")).unwrap();
    assert_eq!(result.stdout.head.trim_end(), expected.to_str().unwrap());
}

#[tokio::test]
async fn a_missing_program_is_reported_as_a_spawn_error() {
    let dir = workdir();
    let sandbox = process_sandbox(dir.path()).await;
    let err = sandbox
        .exec(Command::new("no-such-program-xyz"))
        .await
        .unwrap_err();
    assert!(matches!(err, SandboxError::Spawn { .. }), "{err}");
    assert!(err.to_string().contains("no-such-program-xyz"));
}

#[tokio::test]
async fn missing_bwrap_is_an_error_naming_the_package_and_auto_falls_back() {
    let dir = workdir();
    let err = Sandbox::new(
        builder(dir.path(), Isolation::Namespaces)
            .bwrap_program("/nonexistent/bwrap")
            .build()
            .unwrap(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, SandboxError::BwrapMissing { .. }), "{err}");
    assert!(err.to_string().contains("bubblewrap"), "{err}");

    let auto = Sandbox::new(
        builder(dir.path(), Isolation::Auto)
            .bwrap_program("/nonexistent/bwrap")
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(auto.isolation(), Isolation::Process);
}

/// A `setsid` child and a double-forked daemon leave the call's process
/// group; in process mode they are killed when the call ends anyway.
#[tokio::test]
async fn descendants_that_leave_the_group_die_with_the_call() {
    let dir = workdir();
    let setsid_mark = marker("setsid");
    let daemon_mark = marker("daemon");
    let sandbox = process_sandbox(dir.path()).await;
    let script = format!(
        "setsid sh -c 'sleep 1000; : {setsid_mark}' < /dev/null > /dev/null 2>&1 & \
         (sh -c 'sleep 1000; : {daemon_mark}' < /dev/null > /dev/null 2>&1 &) ; \
         sleep 0.3; echo started"
    );
    let result = sandbox
        .exec(Command::new("bash").arg("-c").arg(&script))
        .await
        .unwrap();
    assert!(result.success(), "{result:?}");
    assert!(result.stdout.contains("started"));
    for mark in [&setsid_mark, &daemon_mark] {
        assert_eq!(
            survivors_after(mark, Duration::from_secs(2)),
            Vec::<u32>::new(),
            "{mark} survived its call"
        );
    }
}

/// Code in process mode cannot gain privileges through setuid binaries.
#[tokio::test]
async fn process_mode_sets_no_new_privs() {
    let dir = workdir();
    let sandbox = process_sandbox(dir.path()).await;
    let result = sandbox
        .exec(
            Command::new("grep")
                .arg("NoNewPrivs")
                .arg("/proc/self/status"),
        )
        .await
        .unwrap();
    assert!(
        result.stdout.to_string().contains("NoNewPrivs:\t1"),
        "{result:?}"
    );
}

/// In process mode an orphan is reparented to this process, and the end of
/// any call kills the orphans that left their call. One that left a call
/// still running is that call's own, and lives as long as it does
/// (`generate_probe`'s daemon test failed in CI when another test's call
/// ended while its service started).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_calls_end_spares_the_daemon_of_a_running_call() {
    let long_dir = workdir();
    let short_dir = workdir();
    let mark = marker("running-call-daemon");
    let long = process_sandbox(long_dir.path()).await;
    let short = process_sandbox(short_dir.path()).await;
    // The subshell exits at once, so its setsid child is an orphan outside
    // the call's group; the call reads its state after other calls ended.
    let script = format!(
        "(setsid sh -c 'echo $$ > daemon.pid; sleep 1000; : {mark}' < /dev/null > /dev/null 2>&1 &) ; \
         sleep 2.5; pid=$(cat daemon.pid); \
         echo \"state: $(cut -d' ' -f3 /proc/$pid/stat 2>/dev/null || echo gone)\""
    );
    let running = long.exec(Command::new("sh").arg("-c").arg(&script));
    let others = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        for _ in 0..5 {
            let ended = short.exec(Command::new("true")).await.unwrap();
            assert!(ended.success(), "{ended:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (result, ()) = tokio::join!(running, others);
    let result = result.unwrap();
    assert!(result.success(), "{result:?}");
    let out = result.stdout.to_string();
    assert!(
        out.contains("state: S"),
        "the running call's daemon was killed by another call's end: {out}"
    );
    assert_eq!(
        survivors_after(&mark, Duration::from_secs(2)),
        Vec::<u32>::new(),
        "the daemon outlived its own call"
    );
}
