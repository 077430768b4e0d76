//! The memory limit caps the total of all of a call's processes where a memory cgroup
//! can be made, in both isolation modes; the call's cgroup is gone when it returns.
//!
//! Where no cgroup can be made, the tests check that the sandbox says so
//! (`MemoryCap::PerProcessOnly`) and that this test's own look at the machine agrees,
//! so a detection that misses a usable hierarchy fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{builder, is_root, marker, namespaces_or_skip, processes_with_marker, workdir};
use sandbox::{Isolation, MemoryCap, OutputStream, RunAs, Sandbox};

const MIB: u64 = 1 << 20;

/// Two Python children that each fill 300 MiB and hold it, so that they overlap, then
/// the exit status of each (137: killed by SIGKILL). 300 MiB stays below a 400 MiB
/// address-space limit (Python's peak is about 320 MB), so the per-process RLIMIT_AS,
/// which is the same configured number, does not stop either: only a cap on their
/// total can.
const TWO_CHILDREN: &str = r#"
alloc='import time; b = bytearray(b"\x01") * (300 << 20); print("filled", flush=True); time.sleep(3)'
python3 -c "$alloc" & first=$!
python3 -c "$alloc" & second=$!
wait $first; echo "first=$?"
wait $second; echo "second=$?"
"#;

/// Where this test process's cgroup for `cap` is, found without the crate: the
/// `memory` v1 hierarchy or the cgroup2 mount, from `/proc/self/mountinfo`.
fn own_cgroup_dir(cap: &MemoryCap) -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (path, wanted): (&str, fn(&str, &str) -> bool) = match cap {
        MemoryCap::TotalViaCgroupV1 => (
            own.lines().find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let _id = parts.next()?;
                let controllers = parts.next()?;
                let path = parts.next()?;
                controllers
                    .split(',')
                    .any(|c| c == "memory")
                    .then_some(path)
            })?,
            |fstype, options| fstype == "cgroup" && options.split(',').any(|o| o == "memory"),
        ),
        _ => (
            own.lines().find_map(|l| l.strip_prefix("0::"))?,
            |fstype, _| fstype == "cgroup2",
        ),
    };
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let left: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        if !wanted(right.first()?, right.get(2)?) {
            return None;
        }
        let inside = Path::new(path).strip_prefix(left.get(3)?).ok()?;
        Some(Path::new(left.get(4)?).join(inside))
    })
}

/// Whether this machine offers a memory cgroup this process can use, judged without
/// the crate: a child can be made in the v1 `memory` hierarchy, or our cgroup v2 gives
/// its children the memory controller.
fn machine_offers_memory_cgroups() -> bool {
    if let Some(dir) = own_cgroup_dir(&MemoryCap::TotalViaCgroupV2)
        && std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|w| w == "memory"))
    {
        return true;
    }
    let Some(dir) = own_cgroup_dir(&MemoryCap::TotalViaCgroupV1) else {
        return false;
    };
    let probe = dir.join(format!("sandbox-test-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// `true` when `sandbox` caps the total; otherwise checks that it says why and that
/// the machine indeed offers no memory cgroup, prints the reason and returns `false`.
fn total_cap_or_explain(sandbox: &Sandbox, test: &str) -> bool {
    let cap = sandbox.memory_cap();
    if cap.is_total() {
        println!("[{test}] memory cap: {cap}");
        return true;
    }
    let MemoryCap::PerProcessOnly { reason } = &cap else {
        panic!("a memory limit is configured, yet the cap is {cap:?}");
    };
    assert!(
        !machine_offers_memory_cgroups(),
        "this machine offers a memory cgroup, yet the sandbox says: {reason}"
    );
    println!(
        "no cgroup memory cap here ({reason}); only the per-process limit is checked [{test}]"
    );
    false
}

async fn sandbox_with_limit(
    dir: &Path,
    isolation: Isolation,
    run_as: Option<RunAs>,
    limit: u64,
) -> Sandbox {
    let config = builder(dir, isolation)
        .memory_limit(limit)
        .run_as(run_as)
        .build()
        .unwrap();
    Sandbox::new(config).await.unwrap()
}

async fn two_children_are_capped_in_total(isolation: Isolation, run_as: Option<RunAs>, test: &str) {
    let dir = workdir();
    let tight = sandbox_with_limit(dir.path(), isolation, run_as, 400 * MIB).await;
    assert_eq!(tight.isolation(), isolation);
    if !total_cap_or_explain(&tight, test) {
        return;
    }
    let capped = tight.run_shell(TWO_CHILDREN).await.unwrap();
    let out = capped.stdout.to_string();
    assert!(
        out.contains("first=137") || out.contains("second=137"),
        "neither child was killed under a 400 MiB total: {capped:?}"
    );
    assert!(capped.killed_for_memory, "{capped:?}");
    assert!(!capped.timed_out, "{capped:?}");
    assert!(
        !capped.stderr.contains("MemoryError"),
        "RLIMIT_AS fired, not the total cap: {capped:?}"
    );

    let roomy = sandbox_with_limit(dir.path(), isolation, run_as, 2048 * MIB).await;
    let both = roomy.run_shell(TWO_CHILDREN).await.unwrap();
    let out = both.stdout.to_string();
    assert!(
        out.contains("first=0") && out.contains("second=0"),
        "{both:?}"
    );
    assert!(both.success(), "{both:?}");
    assert!(!both.killed_for_memory, "{both:?}");
}

#[tokio::test]
async fn two_processes_are_capped_in_total_in_process_mode() {
    two_children_are_capped_in_total(Isolation::Process, None, "process mode").await;
}

/// The child joins its cgroup after it has become the other user, through the process
/// list its root parent opened.
#[tokio::test]
async fn two_processes_of_another_user_are_capped_in_total() {
    if !is_root() {
        println!("skipping: run_as needs root [two_processes_of_another_user_are_capped_in_total]");
        return;
    }
    two_children_are_capped_in_total(Isolation::Process, Some(RunAs::NOBODY), "run as nobody")
        .await;
}

#[tokio::test]
async fn two_processes_are_capped_in_total_in_namespaces_mode() {
    if !namespaces_or_skip("two_processes_are_capped_in_total_in_namespaces_mode").await {
        return;
    }
    two_children_are_capped_in_total(Isolation::Namespaces, None, "namespaces mode").await;
}

/// How a call of [`cgroup_dirs_seen_during`] ends.
enum End {
    /// Wait for the call, whose timeout is this.
    Timeout(Duration),
    /// Drop the call's future after this long, as a cancelled caller does.
    Cancel(Duration),
}

/// Runs `start`, then waits (bounded) until the call's cgroup has been read from
/// outside, then runs `end`; returns the directories of the call's cgroup seen and
/// the result (none when the call was cancelled).
async fn cgroup_dirs_seen_during(
    isolation: Isolation,
    how: End,
    (start, end): (&str, &str),
    test: &str,
) -> Option<(Vec<PathBuf>, Option<sandbox::ExecResult>)> {
    let dir = workdir();
    let probe = sandbox_with_limit(dir.path(), isolation, None, 1 << 30).await;
    if !total_cap_or_explain(&probe, test) {
        return None;
    }
    let own = own_cgroup_dir(&probe.memory_cap()).expect("own cgroup directory");
    let mark = marker("cgroup");
    let seen = Arc::new(Mutex::new(Vec::<PathBuf>::new()));
    let (seen_cb, mark_cb, own_cb) = (Arc::clone(&seen), mark.clone(), own.clone());
    let seen_file = dir.path().join("seen");
    let config = builder(dir.path(), isolation)
        .memory_limit(1 << 30)
        .timeout(match how {
            End::Timeout(limit) => limit,
            End::Cancel(_) => Duration::from_secs(1000),
        })
        .on_output(move |chunk| {
            if chunk.stream != OutputStream::Stdout
                || !chunk.bytes.windows(7).any(|w| w == b"started")
            {
                return;
            }
            for pid in processes_with_marker(&mark_cb) {
                let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
                    continue;
                };
                // The call's cgroup is a child of ours, whichever line it is on.
                for name in text
                    .lines()
                    .filter_map(|l| l.rsplit('/').next())
                    .filter(|n| n.starts_with("repo-agent-"))
                {
                    seen_cb.lock().unwrap().push(own_cb.join(name));
                }
            }
            std::fs::write(&seen_file, "").unwrap();
        })
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let script = format!(
        "{start}\necho started\n\
         for i in $(seq 400); do [ -e seen ] && break; sleep 0.05; done\n{end}\n: {mark}"
    );
    let call = sandbox.run_shell(&script);
    let result = match how {
        End::Timeout(_) => Some(call.await.unwrap()),
        End::Cancel(after) => {
            let ended = tokio::time::timeout(after, call).await;
            assert!(ended.is_err(), "the call was to be cancelled: {ended:?}");
            None
        }
    };
    let dirs = seen.lock().unwrap().clone();
    Some((dirs, result))
}

async fn the_cgroup_is_removed(isolation: Isolation, test: &str) {
    let after_exit = cgroup_dirs_seen_during(
        isolation,
        End::Timeout(Duration::from_secs(30)),
        ("setsid sleep 1000 & sleep 1000 &", "true"),
        test,
    )
    .await;
    let Some((dirs, Some(result))) = after_exit else {
        return;
    };
    assert!(result.success(), "{result:?}");
    assert!(
        !dirs.is_empty(),
        "the call's cgroup was not seen: {result:?}"
    );
    for dir in &dirs {
        assert!(!dir.exists(), "{} outlived its call", dir.display());
    }

    let after_timeout = cgroup_dirs_seen_during(
        isolation,
        End::Timeout(Duration::from_secs(1)),
        ("setsid sleep 1000 &", "sleep 1000"),
        test,
    )
    .await;
    let Some((dirs, Some(result))) = after_timeout else {
        return;
    };
    assert!(result.timed_out, "{result:?}");
    assert!(
        !dirs.is_empty(),
        "the call's cgroup was not seen: {result:?}"
    );
    for dir in &dirs {
        assert!(
            !dir.exists(),
            "{} outlived its call's timeout",
            dir.display()
        );
    }

    let cancelled = cgroup_dirs_seen_during(
        isolation,
        End::Cancel(Duration::from_secs(3)),
        ("setsid sleep 1000 &", "sleep 1000"),
        test,
    )
    .await;
    let Some((dirs, None)) = cancelled else {
        panic!("the call was not cancelled");
    };
    assert!(!dirs.is_empty(), "the call's cgroup was not seen");
    // A dropped call cannot wait for its processes to leave: the cgroup may go on a
    // cleanup thread, so this looks a bounded number of times.
    for dir in &dirs {
        let mut left = true;
        for _ in 0..100 {
            left = dir.exists();
            if !left {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!left, "{} outlived its cancelled call", dir.display());
    }
}

#[tokio::test]
async fn a_calls_cgroup_is_removed_after_exit_timeout_and_cancel_in_process_mode() {
    the_cgroup_is_removed(Isolation::Process, "process mode").await;
}

#[tokio::test]
async fn a_calls_cgroup_is_removed_after_exit_timeout_and_cancel_in_namespaces_mode() {
    if !namespaces_or_skip(
        "a_calls_cgroup_is_removed_after_exit_timeout_and_cancel_in_namespaces_mode",
    )
    .await
    {
        return;
    }
    the_cgroup_is_removed(Isolation::Namespaces, "namespaces mode").await;
}

#[tokio::test]
async fn without_a_memory_limit_there_is_no_cap_to_report() {
    let dir = workdir();
    let config = builder(dir.path(), Isolation::Process)
        .memory_limit(None)
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    assert_eq!(sandbox.memory_cap(), MemoryCap::Unlimited);
    let result = sandbox.run_shell("echo fine").await.unwrap();
    assert!(result.success(), "{result:?}");
}
