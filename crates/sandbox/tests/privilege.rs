//! Code run as root broke out in four ways (issue 26): it wrote the host's
//! sysctls, left a setuid-root program on the host, raised the host's task count
//! by 12,000 threads, and filled the host's `/dev/shm` and disk. Each test here
//! runs one of those attacks in every isolation mode this machine offers and
//! asserts the host is unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use common::{builder, is_root, workdir};
use sandbox::{Isolation, ProcessCap, RunAs, Sandbox, SandboxError};

/// The isolation modes to attack: process always, namespaces where bubblewrap
/// works. In CI (`CI` set) namespaces must work: a CI machine that cannot run
/// them would otherwise pass this suite having tested half of it.
/// One test of this file at a time: they share the code's user
/// (`nobody`), and the clean-up after a process-mode call waits until no
/// call of that user runs, so a concurrent test's call would keep another
/// test's leftovers in place past its assertions, and its grants would
/// show in another test's directory modes.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn modes() -> Vec<Isolation> {
    let mut modes = vec![Isolation::Process];
    match sandbox::namespaces_available().await {
        Ok(()) => modes.push(Isolation::Namespaces),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI must run the namespace attacks, but namespaces are unavailable: {e}")
        }
        Err(e) => eprintln!("namespaces unavailable here, process mode only: {e}"),
    }
    modes
}

async fn sandbox_in(dir: &Path, isolation: Isolation) -> Sandbox {
    Sandbox::new(builder(dir, isolation).build().unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn code_never_runs_as_root_or_with_capabilities() {
    let _serial = SERIAL.lock().await;
    for mode in modes().await {
        let dir = workdir();
        let sandbox = sandbox_in(dir.path(), mode).await;
        let result = sandbox
            .run_shell("id -u; id -g; id -G; grep -E '^Cap(Eff|Prm|Amb)' /proc/self/status")
            .await
            .unwrap();
        assert!(result.success(), "{mode}: {result:?}");
        let out = result.stdout.to_string();
        let mut lines = out.lines();
        let uid: u32 = lines.next().unwrap().parse().unwrap();
        let gid: u32 = lines.next().unwrap().parse().unwrap();
        let groups = lines.next().unwrap();
        if is_root() {
            assert_eq!((uid, gid), (65534, 65534), "{mode}: {out}");
            assert_eq!(sandbox.run_as(), Some(RunAs::NOBODY));
        }
        assert_ne!(uid, 0, "{mode}");
        assert!(
            !groups.split_whitespace().any(|g| g == "0"),
            "{mode}: {groups}"
        );
        for line in lines {
            assert!(
                line.ends_with("0000000000000000"),
                "{mode}: capabilities left: {line}"
            );
        }
    }
}

#[tokio::test]
async fn root_and_roots_group_are_refused_as_the_code_user() {
    let _serial = SERIAL.lock().await;
    let dir = workdir();
    for user in [RunAs { uid: 0, gid: 0 }, RunAs { uid: 1000, gid: 0 }] {
        let config = builder(dir.path(), Isolation::Process)
            .run_as(user)
            .build()
            .unwrap();
        let err = Sandbox::new(config).await.unwrap_err();
        assert!(matches!(err, SandboxError::InvalidConfig(_)), "{err}");
        if is_root() {
            assert!(err.to_string().contains("never runs code as root"), "{err}");
        }
    }
}

const RATELIMIT: &str = "/proc/sys/kernel/printk_ratelimit";

#[tokio::test]
async fn host_sysctls_and_sysrq_cannot_be_written() {
    let _serial = SERIAL.lock().await;
    let before = std::fs::read_to_string(RATELIMIT).unwrap();
    let attempt = format!(
        "v=$(( $(cat {RATELIMIT}) + 3 )); echo $v > {RATELIMIT} && echo sysctl-written; \
         echo h > /proc/sysrq-trigger && echo sysrq-written; echo done"
    );
    for mode in modes().await {
        let dir = workdir();
        let sandbox = sandbox_in(dir.path(), mode).await;
        let result = sandbox.run_shell(&attempt).await.unwrap();
        let after = std::fs::read_to_string(RATELIMIT).unwrap();
        if after != before {
            // Put the host back before failing.
            let _ = std::fs::write(RATELIMIT, &before);
        }
        let out = result.stdout.to_string();
        assert!(out.contains("done"), "{mode}: {result:?}");
        assert!(!out.contains("sysctl-written"), "{mode}: {out}");
        assert!(!out.contains("sysrq-written"), "{mode}: {out}");
        assert_eq!(after, before, "{mode}: the host's sysctl changed");
    }
}

#[tokio::test]
async fn no_setuid_or_setgid_file_survives_a_call() {
    let _serial = SERIAL.lock().await;
    for mode in modes().await {
        let dir = workdir();
        let sandbox = sandbox_in(dir.path(), mode).await;
        let result = sandbox
            .run_shell(
                "mkdir -p deep/er && cp /bin/true deep/er/x && chmod 4755 deep/er/x && \
                 cp /bin/true y && chmod 2755 y && cp /bin/true \"$HOME/z\" && \
                 chmod 6755 \"$HOME/z\" && ls -l deep/er/x y",
            )
            .await
            .unwrap();
        assert!(result.success(), "{mode}: {result:?}");
        assert!(result.stdout.contains("rws"), "{mode}: {result:?}");
        assert_eq!(result.setid_cleared, 3, "{mode}: {result:?}");
        for file in [
            dir.path().join("deep/er/x"),
            dir.path().join("y"),
            sandbox.home_dir().join("z"),
        ] {
            let mode_bits = std::fs::metadata(&file).unwrap().mode();
            assert_eq!(
                mode_bits & 0o6000,
                0,
                "{mode}: {} {mode_bits:o}",
                file.display()
            );
        }
    }
}

#[tokio::test]
async fn threads_and_processes_are_capped_for_the_call() {
    let _serial = SERIAL.lock().await;
    const CAP: u64 = 48;
    let code = "import threading, time\n\
                n = 0\n\
                ev = threading.Event()\n\
                try:\n    \
                    for _ in range(3000):\n        \
                        t = threading.Thread(target=ev.wait, daemon=True)\n        \
                        t.start()\n        \
                        n += 1\n\
                except RuntimeError as e:\n    \
                    print('refused', e)\n\
                print('threads', n)\n\
                ev.set()\n";
    for mode in modes().await {
        let dir = workdir();
        let config = builder(dir.path(), mode)
            .max_processes(CAP)
            .build()
            .unwrap();
        let sandbox = Sandbox::new(config).await.unwrap();
        assert!(
            sandbox.process_limit_enforced(),
            "{mode}: {}",
            sandbox.process_cap()
        );
        let result = sandbox
            .run_python(sandbox::PythonScript::code(code), &[] as &[&str])
            .await
            .unwrap();
        let out = result.stdout.to_string();
        let threads: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("threads "))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{mode}: {result:?}"));
        assert!(out.contains("refused"), "{mode}: {out}");
        assert!(threads < CAP + 2, "{mode}: {threads} threads");
        if matches!(
            sandbox.process_cap(),
            ProcessCap::CgroupV1 | ProcessCap::CgroupV2
        ) {
            assert!(result.forks_refused > 0, "{mode}: {result:?}");
        }
    }
}

#[tokio::test]
async fn a_task_below_a_directory_nobody_may_enter_runs_in_a_container() {
    let _serial = SERIAL.lock().await;
    if !modes().await.contains(&Isolation::Namespaces) || !is_root() {
        return;
    }
    let outer = tempfile::tempdir().unwrap();
    std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let work = outer.path().join("work");
    let repo = outer.path().join("repo");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("data.txt"), "repository data\n").unwrap();
    let config = builder(&work, Isolation::Namespaces)
        .read_only_path(&repo)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let script = format!("cat {}/data.txt > out.txt && id -u", repo.display());
    let result = sandbox.run_shell(&script).await.unwrap();
    assert!(result.success(), "{result:?}");
    assert_eq!(result.stdout.head.trim(), "65534");
    assert_eq!(
        std::fs::read_to_string(work.join("out.txt")).unwrap(),
        "repository data\n"
    );
    // The host's directory keeps its mode: the way was the container's own.
    let mode = std::fs::metadata(outer.path()).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    // And in process isolation the same task is a clear error, said once.
    let err = Sandbox::new(builder(&work, Isolation::Process).build().unwrap())
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("cannot enter"), "{message}");
    assert_eq!(message.matches("cannot enter").count(), 1, "{message}");
}

#[tokio::test]
async fn shared_memory_and_tmp_are_private_and_sized_in_a_container() {
    let _serial = SERIAL.lock().await;
    if !modes().await.contains(&Isolation::Namespaces) {
        return;
    }
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Namespaces)
        .memory_limit(512 << 20)
        .disk_limit(64 << 20)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let marker = format!("repo-agent-shm-test-{}", std::process::id());
    let script = format!(
        "df -B1 --output=size /dev/shm /tmp | tail -n 2; \
         dd if=/dev/zero of=/dev/shm/{marker} bs=1M count=200 2>/dev/null; \
         ls -l /dev/shm/{marker} | cut -d' ' -f5"
    );
    let result = sandbox.run_shell(&script).await.unwrap();
    let out = result.stdout.to_string();
    let mut lines = out.lines();
    for what in ["/dev/shm", "/tmp"] {
        let size: u64 = lines.next().unwrap().trim().parse().unwrap();
        assert!(size <= 64 << 20, "{what} is {size} bytes: {out}");
    }
    let written: u64 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(
        written <= 64 << 20,
        "200 MiB asked, {written} bytes written: {out}"
    );
    assert!(
        !Path::new("/dev/shm").join(&marker).exists(),
        "not the host's"
    );
}

#[tokio::test]
async fn what_code_leaves_in_the_hosts_shared_memory_is_removed_in_process_mode() {
    let _serial = SERIAL.lock().await;
    if !is_root() {
        // Code running as the caller cannot be told apart from the caller's own
        // programs; only a user of its own is cleaned after.
        return;
    }
    let dir = workdir();
    let sandbox = sandbox_in(dir.path(), Isolation::Process).await;
    let marker = format!("repo-agent-shm-{}", std::process::id());
    let script = format!(
        "dd if=/dev/zero of=/dev/shm/{marker} bs=1M count=8 2>/dev/null; \
         mkdir -p /tmp/{marker}.d && echo x > /tmp/{marker}.d/f; \
         echo tmpdir=$TMPDIR; ls /dev/shm/{marker}"
    );
    let result = sandbox.run_shell(&script).await.unwrap();
    assert!(result.success(), "{result:?}");
    let out = result.stdout.to_string();
    assert!(
        out.contains(&format!(
            "tmpdir={}",
            sandbox.home_dir().join("tmp").display()
        )),
        "{out}"
    );
    assert!(!Path::new("/dev/shm").join(&marker).exists());
    assert!(!Path::new("/tmp").join(format!("{marker}.d")).exists());
}

/// A contained call is not stopped for what others write on its file
/// system meanwhile (a `pip install` was, beside a compiler writing a
/// gigabyte): growth past the budget is confirmed by what its writable
/// roots hold. In process isolation the code could write anywhere, so the
/// file system's growth still decides there.
#[tokio::test]
async fn a_contained_call_is_not_stopped_for_what_others_write_beside_it() {
    let _serial = SERIAL.lock().await;
    if !modes().await.contains(&Isolation::Namespaces) {
        return;
    }
    const BUDGET: u64 = 32 << 20;
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Namespaces)
        .disk_limit(BUDGET)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let others = workdir();
    let writer = {
        let others = others.path().to_path_buf();
        std::thread::spawn(move || {
            // 256 MiB beside the call, on the same file system, while it runs.
            for i in 0..32 {
                std::fs::write(others.join(format!("other{i}")), vec![1u8; 8 << 20]).unwrap();
                std::thread::sleep(Duration::from_millis(40));
            }
        })
    };
    let result = sandbox
        .run_shell("sleep 3; echo small > mine.txt; echo done")
        .await
        .unwrap();
    writer.join().unwrap();
    assert!(!result.killed_for_disk, "{result:?}");
    assert!(
        result.success() && result.stdout.contains("done"),
        "{result:?}"
    );
}

#[tokio::test]
async fn a_call_that_writes_past_its_disk_budget_is_stopped() {
    let _serial = SERIAL.lock().await;
    const BUDGET: u64 = 96 << 20;
    for mode in modes().await {
        let dir = workdir();
        let config = builder(dir.path(), mode)
            .disk_limit(BUDGET)
            .max_file_size(16 << 20)
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let sandbox = Sandbox::new(config).await.unwrap();
        // Many files, each under the per-file limit: 1 GiB in all if nothing stops it.
        let script = "for i in $(seq 1 128); do \
                      dd if=/dev/zero of=part$i bs=1M count=8 conv=fsync 2>/dev/null || exit 3; \
                      done; echo wrote-everything";
        let result = sandbox.run_shell(script).await.unwrap();
        let written: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum();
        assert!(result.killed_for_disk, "{mode}: {result:?}");
        assert!(!result.stdout.contains("wrote-everything"), "{mode}");
        assert!(
            written < 4 * BUDGET,
            "{mode}: {written} bytes written past a budget of {BUDGET}"
        );
    }
}
