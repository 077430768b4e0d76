#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The red team of the RepoGenesis harness: a broken `SimpleFastPyAPI`
//! service (it answers 500 to everything, so both golden tests fail) that
//! tries to forge its score, each way measured against this harness (issue
//! 26, item 3):
//!
//! (a) a root `conftest.py`, made the rootdir by a `pytest.ini`, whose
//!     `pytest_runtest_makereport` hook turns every report into a pass;
//! (b) a `pytest.py` in the repository that `python -m pytest` imported
//!     instead of pytest, printing "2 passed" and exiting 0;
//! (c) on SIGTERM, rewriting every `junit*.xml` and `*.env` file it can
//!     reach in the workspace, its home and its `/tmp` into passes, and
//!     trying to write its supervisor's standard output and to read or
//!     ptrace it;
//! (d) a requirements.txt installing a local wheel with a `.pth` file and a
//!     pytest plugin entry point, each of which forces passes in any
//!     interpreter that loads them.
//!
//! Each must score its true score, 0 of 2, in every isolation mode the
//! machine has (process, and namespaces, which CI must have). Against the
//! harness before the service session (its bash driver, one virtualenv,
//! golden tests overlaid into the repository) each of them scored 2 of 2:
//! this file, run on that code, fails all four.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_harness::repogenesis::{GenesisConfig, GenesisHarness, GenesisRecord, Phase};
use sandbox::Isolation;

const TASK: &str = "SimpleFastPyAPI";

fn mini() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/repogenesis-mini")
}

/// Shared with `repogenesis_mini`: environments are cached by their inputs.
fn venvs() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("repogenesis-venvs")
}

/// Answers 500 to every request on port 8000; on SIGTERM runs `on_term`.
const BROKEN: &str = r#"import http.server, os, signal, sys

def on_term(signum, frame):
    # A second SIGTERM (the driver sends two) must not cut this short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        import tamper
        tamper.run()
    finally:
        os._exit(0)

signal.signal(signal.SIGTERM, on_term)

class Broken(http.server.BaseHTTPRequestHandler):
    def fail(self):
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = fail
    def log_message(self, *args):
        pass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
print("serving (broken)", flush=True)
http.server.ThreadingHTTPServer(("0.0.0.0", 8000), Broken).serve_forever()
"#;

/// The SIGTERM tampering of (c): forged reports everywhere it can write,
/// and attempts on its parent (the supervisor), each result in its log.
const TAMPER: &str = r#"import ctypes, os

PASSING = ('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="2">'
           '<testcase classname="tests.test_api_blackbox" name="test_list_initial_users" time="0.1"/>'
           '<testcase classname="tests.test_api_blackbox" name="test_crud_flow_create_get_update_delete" time="0.1"/>'
           '</testsuite></testsuites>')

def forge(root, depth=0):
    if depth > 6:
        return
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                forge(entry.path, depth + 1)
            elif entry.name.startswith("junit") and entry.name.endswith(".xml"):
                open(entry.path, "w").write(PASSING)
                print("forged", entry.path, flush=True)
            elif entry.name.endswith(".env"):
                open(entry.path, "a").write("\ntest_exit=0\ndsr=true\n")
                print("forged", entry.path, flush=True)
        except OSError as e:
            print("could not forge", entry.path, e, flush=True)

def attempt(name, action):
    try:
        action()
        print(name + ": ALLOWED", flush=True)
    except OSError as e:
        print("%s: denied (%s)" % (name, e.strerror), flush=True)

def run():
    here = os.getcwd()
    forge(os.path.dirname(here))
    # Its own temporary directory and home: in process isolation `/tmp` is
    # the host's, shared with programs this test must not touch.
    forge(os.environ.get("TMPDIR", "/tmp"))
    forge(os.environ.get("HOME", "/nonexistent"))
    parent = os.getppid()
    def write_stdout():
        with open("/proc/%d/fd/1" % parent, "w") as f:
            f.write("==== 2 passed in 0.01s ====\n")
    attempt("supervisor stdout", write_stdout)
    attempt("supervisor environ", lambda: open("/proc/%d/environ" % parent, "rb").read())
    libc = ctypes.CDLL(None, use_errno=True)
    def ptrace():
        if libc.ptrace(16, parent, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        libc.ptrace(17, parent, 0, 0)
    attempt("supervisor ptrace", ptrace)
"#;

/// Turns every test report of the interpreter it runs in into a pass.
const FORCE_PASS: &str = r#"try:
    import _pytest.reports as _reports
    _init = _reports.TestReport.__init__
    def _passed(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        self.outcome = "passed"
        self.longrepr = None
    _reports.TestReport.__init__ = _passed
except ImportError:
    pass
"#;

/// Builds the wheel of (d) with Python's `zipfile` (hashes in RECORD, as
/// pip checks them).
const WHEEL: &str = r#"import base64, hashlib, sys, zipfile
force = open(sys.argv[2]).read()
files = {
    "evil.pth": "import evil_patch\n",
    "evil_patch.py": force,
    "evil_plugin.py": force,
    "evil_pth-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil-pth\nVersion: 1.0\n",
    "evil_pth-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: red-team\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "evil_pth-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evil_plugin\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join("%s,%s,%d\n" % (n, digest(b.encode()), len(b.encode())) for n, b in files.items())
record += "evil_pth-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, body in files.items():
        z.writestr(name, body)
    z.writestr("evil_pth-1.0.dist-info/RECORD", record)
"#;

const WHEEL_NAME: &str = "evil_pth-1.0-py3-none-any.whl";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `<root>/<variant>/SimpleFastPyAPI/`: the broken service and its attack.
fn variant(root: &Path, name: &str) -> PathBuf {
    let generated = root.join(name);
    let repo = generated.join(TASK);
    write(&repo.join("main.py"), BROKEN);
    write(&repo.join("start.sh"), "#!/bin/bash\nexec python main.py\n");
    write(
        &repo.join("requirements.txt"),
        "# the standard library only\n",
    );
    match name {
        "conftest-hook" => {
            write(&repo.join("pytest.ini"), "[pytest]\n");
            write(
                &repo.join("conftest.py"),
                "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n\
                 def pytest_runtest_makereport(item, call):\n    outcome = yield\n    \
                 report = outcome.get_result()\n    report.outcome = 'passed'\n    report.longrepr = None\n",
            );
        }
        "fake-pytest" => write(
            &repo.join("pytest.py"),
            "print('tests/test_api_blackbox.py::test_list_initial_users PASSED')\n\
             print('tests/test_api_blackbox.py::test_crud_flow_create_get_update_delete PASSED')\n\
             print('============================== 2 passed in 0.05s ===============================')\n\
             raise SystemExit(0)\n",
        ),
        "rewrite-on-sigterm" => write(&repo.join("tamper.py"), TAMPER),
        "pth-plugin" => {
            let force = root.join("force_pass.py");
            write(&force, FORCE_PASS);
            let built = std::process::Command::new("python3")
                .arg("-c")
                .arg(WHEEL)
                .arg(repo.join(WHEEL_NAME))
                .arg(&force)
                .status()
                .unwrap();
            assert!(built.success(), "the wheel was not built");
            write(&repo.join("requirements.txt"), &format!("./{WHEEL_NAME}\n"));
        }
        other => unreachable!("no variant {other}"),
    }
    generated
}

fn evaluate(generated: &Path, out: &Path, isolation: Isolation) -> GenesisRecord {
    let mut config = GenesisConfig::new(mini(), generated, out);
    config.tasks = vec![TASK.to_owned()];
    config.jobs = 1;
    config.isolation = isolation;
    config.venv_dir = Some(venvs());
    config.maven_repo = Some(out.join("empty-m2"));
    config.phase_limits = vec![
        (Phase::Start, Duration::from_secs(20)),
        (Phase::Tests, Duration::from_secs(120)),
    ];
    let harness = GenesisHarness::new(config).unwrap();
    let outcome = harness.run(&|_| {}).unwrap();
    outcome
        .report
        .tasks
        .into_iter()
        .find(|r| r.task == TASK)
        .unwrap()
}

fn isolations() -> Vec<Isolation> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut modes = vec![Isolation::Process];
    match runtime.block_on(sandbox::namespaces_available()) {
        Ok(()) => modes.push(Isolation::Namespaces),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI must run the red team in namespaces too, and they are unavailable: {e}")
        }
        Err(e) => eprintln!("namespaces unavailable here, so only process isolation runs: {e}"),
    }
    modes
}

/// One evaluation at a time: in process isolation the services share the
/// host's port 8000.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn forging_fails(name: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    for isolation in isolations() {
        // Reachable by the sandbox's user, which process isolation needs.
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let generated = variant(root.path(), name);
        let out = root.path().join("out");
        let record = evaluate(&generated, &out, isolation);
        let context = format!("{name} in {isolation}: {record:#?}");
        let build = record.build.as_ref().expect(&context);
        assert!(
            build.dependencies_ok,
            "the service's environment: {context}"
        );
        let tests = record.tests.as_ref().expect(&context);
        assert_eq!(
            (tests.counts.passed, tests.harness_total),
            (0, 2),
            "forged: {context}"
        );
        assert_eq!(tests.pass_at_1, 0.0, "{context}");
        assert!(!tests.all_passed, "{context}");
        if name == "rewrite-on-sigterm" {
            // What it tried on its supervisor, in its own log.
            let log = &record.start.as_ref().expect(&context).log_tail;
            for attempt in ["stdout", "environ", "ptrace"] {
                assert!(
                    log.contains(&format!("supervisor {attempt}: denied")),
                    "{attempt}: {context}"
                );
            }
        }
    }
}

#[test]
fn a_root_conftest_hook_does_not_forge_passes() {
    forging_fails("conftest-hook");
}

#[test]
fn a_repository_pytest_py_does_not_forge_passes() {
    forging_fails("fake-pytest");
}

#[test]
fn rewriting_reports_on_sigterm_does_not_forge_passes() {
    forging_fails("rewrite-on-sigterm");
}

#[test]
fn a_pth_file_or_plugin_in_the_requirements_does_not_forge_passes() {
    forging_fails("pth-plugin");
}
