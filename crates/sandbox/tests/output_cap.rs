//! A program printing 100 MB: its own test binary so that the peak memory of this
//! process measures the sandbox's capture and nothing else.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{builder, workdir};
use sandbox::{Isolation, PythonScript, Sandbox};

const CAP: usize = 64 * 1024;
const LINES: u64 = 100 * 1024;
const LINE_LEN: u64 = 1024;

/// Peak resident set size of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024
}

#[tokio::test]
async fn a_100_mb_print_is_truncated_with_head_and_tail_and_bounded_memory() {
    let dir = workdir();
    let streamed = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&streamed);
    let config = builder(dir.path(), Isolation::Auto)
        .output_limit(CAP)
        .on_output(move |chunk| {
            counter.fetch_add(chunk.bytes.len() as u64, Ordering::Relaxed);
        })
        .build()
        .unwrap();
    let sandbox = Sandbox::new(config).await.unwrap();
    let code = format!(
        "import sys\n\
         out = sys.stdout.buffer\n\
         out.write(b'BEGIN-OF-OUTPUT\\n')\n\
         line = b'x' * {} + b'\\n'\n\
         for _ in range({LINES}):\n    out.write(line)\n\
         out.write(b'END-OF-OUTPUT\\n')\n",
        LINE_LEN - 1
    );
    let before = peak_rss();
    let result = sandbox
        .run_python(PythonScript::code(code), &[] as &[&str])
        .await
        .unwrap();
    let growth = peak_rss().saturating_sub(before);
    println!(
        "captured {} of {} bytes; peak RSS grew by {growth} bytes",
        result.stdout.head.len() + result.stdout.tail.len(),
        result.stdout.total_bytes
    );

    let expected_total = LINES * LINE_LEN + 16 + 14;
    assert!(result.success(), "{}", result.stderr);
    assert!(result.truncated);
    assert_eq!(result.stdout.total_bytes, expected_total);
    assert_eq!(
        streamed.load(Ordering::Relaxed),
        expected_total,
        "callback saw every byte"
    );
    assert!(result.stdout.head.starts_with("BEGIN-OF-OUTPUT\n"));
    assert!(result.stdout.tail.ends_with("END-OF-OUTPUT\n"));
    let kept = (result.stdout.head.len() + result.stdout.tail.len()) as u64;
    assert!(
        kept <= CAP as u64,
        "kept {kept} bytes with a {CAP}-byte cap"
    );
    assert_eq!(kept + result.stdout.omitted_bytes, expected_total);
    let rendered = result.stdout.to_string();
    assert!(
        rendered.contains(&format!(
            "[... {} bytes omitted ...]",
            result.stdout.omitted_bytes
        )),
        "middle count missing"
    );
    // 100 MB went through; holding it would need >100 MB. Allow generous slack for
    // the runtime and allocator, far below the size of the output.
    assert!(growth < 32 << 20, "peak RSS grew by {growth} bytes");
}
