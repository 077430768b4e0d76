//! `Sandbox::run_service` against real services: each readiness kind,
//! daemons found and killed, a supervisor the service cannot read or
//! write through `/proc`, and pytest results that a repository's
//! `conftest.py`, `pytest.py`, `.pth` files, plugins and shadowing modules
//! cannot forge. Every case runs in process isolation and, where bwrap
//! works, in namespaces (which CI must have: with `CI` set, missing
//! namespaces fail the test instead of skipping it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{builder, workdir};
use sandbox::{
    Agreement, HttpRequest, Isolation, JsonKind, PythonEnv, Readiness, Sandbox, ServiceCommand,
    ServicePlan, TestCounts, TestRun,
};

/// A JSON service on the standard library: `/health` and `/` answer 200,
/// anything else 404; each request is logged.
const SERVE: &str = r#"
import http.server, json, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if self.path in ("/", "/health") else 404
        body = json.dumps({"path": self.path}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        print("request", self.path, flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
"#;

/// What a service of the same user tries against its supervisor before it
/// serves: read its environment, write its standard output, ptrace it; and
/// which pipes it holds itself.
const SNOOP: &str = r#"
import ctypes, os
parent = os.getppid()
def attempt(name, action):
    try:
        action()
        print(name + ": ALLOWED", flush=True)
    except OSError as e:
        print("%s: denied (%s)" % (name, e.strerror), flush=True)
attempt("environ", lambda: open("/proc/%d/environ" % parent, "rb").read())
def write_stdout():
    with open("/proc/%d/fd/1" % parent, "w") as f:
        f.write("\n=====SANDBOX-SERVICE-REPORT=====\n{}\n")
attempt("stdout", write_stdout)
libc = ctypes.CDLL(None, use_errno=True)
def ptrace():
    if libc.ptrace(16, parent, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    libc.ptrace(17, parent, 0, 0)
attempt("ptrace", ptrace)
def pipe(fd):
    try:
        return os.readlink("/proc/self/fd/" + fd).startswith("pipe:")
    except OSError:
        return False
print("pipes held:", sum(pipe(fd) for fd in os.listdir("/proc/self/fd")), flush=True)
os.execvp("python3", ["python3", "serve.py"])
"#;

/// Held by each test for its whole run: the daemons these tests look for
/// are found by process scans that another test's services would crowd.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn isolations_or_skip(test: &str) -> Vec<Isolation> {
    let mut modes = vec![Isolation::Process];
    let runtime = tokio::runtime::Handle::current();
    let available =
        tokio::task::block_in_place(|| runtime.block_on(sandbox::namespaces_available()));
    match available {
        Ok(()) => modes.push(Isolation::Namespaces),
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI must run {test} in namespaces too, and they are unavailable: {e}")
        }
        Err(e) => println!("skipping the namespaces half of {test}: {e}"),
    }
    modes
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn service(dir: &Path, argv: &[&str]) -> Option<ServiceCommand> {
    Some(ServiceCommand {
        argv: argv.iter().map(|a| (*a).to_owned()).collect(),
        cwd: dir.to_path_buf(),
        env: Vec::new(),
    })
}

async fn sandbox_for(dir: &Path, isolation: Isolation, read_only: &[&Path]) -> Sandbox {
    let mut b = builder(dir, isolation).timeout(Duration::from_secs(120));
    for path in read_only {
        b = b.read_only_path(path);
    }
    Sandbox::new(b.build().unwrap()).await.unwrap()
}

fn get(path: &str) -> HttpRequest {
    HttpRequest {
        method: "GET".into(),
        path: path.into(),
        body: None,
        timeout: Duration::from_secs(5),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ready_service_answers_and_a_daemon_is_listed_and_killed() {
    let _one = ONE_AT_A_TIME.lock().await;
    for isolation in isolations_or_skip("a_ready_service_answers") {
        let dir = workdir();
        std::fs::write(dir.path().join("serve.py"), SERVE).unwrap();
        let sandbox = sandbox_for(dir.path(), isolation, &[]).await;

        let mut plan = ServicePlan::new(service(dir.path(), &["python3", "serve.py"]), free_port());
        plan.health_paths = vec!["/nope".into(), "/health".into()];
        plan.requests = vec![get("/health"), get("/missing")];
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(&report.readiness, Readiness::Health { path, .. } if path == "/health"),
            "{isolation}: {report:#?}"
        );
        assert!(
            report.foreground && report.leftovers.is_empty(),
            "{report:#?}"
        );
        assert_eq!(report.observations.len(), 2);
        assert_eq!(report.observations[0].status, Some(200));
        assert_eq!(report.observations[0].json, JsonKind::Object);
        assert_eq!(report.observations[0].keys, ["path"]);
        assert_eq!(report.observations[1].status, Some(404));
        assert!(
            report.service_log_tail.contains("request /missing"),
            "{report:#?}"
        );

        // A start script that daemonises: waited for, listed and killed.
        let mut plan = ServicePlan::new(
            service(
                dir.path(),
                &[
                    "sh",
                    "-c",
                    "setsid python3 serve.py > daemon.log 2>&1 & exit 0",
                ],
            ),
            free_port(),
        );
        plan.requests = vec![get("/")];
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::Listening { .. }),
            "{isolation}: {report:#?}"
        );
        assert!(!report.foreground);
        assert_eq!(report.observations[0].status, Some(200));
        assert_eq!(report.leftovers.len(), 1, "{report:#?}");
        assert!(report.leftovers[0].contains("serve.py"), "{report:#?}");
        let pid: u32 = report.leftovers[0]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if isolation == Isolation::Process {
            assert!(
                !Path::new(&format!("/proc/{pid}/cmdline")).exists()
                    || !std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                        .unwrap_or_default()
                        .contains("serve.py"),
                "the daemon {pid} still runs"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_readiness_kind_is_told_apart() {
    let _one = ONE_AT_A_TIME.lock().await;
    for isolation in isolations_or_skip("every_readiness_kind_is_told_apart") {
        let dir = workdir();
        let sandbox = sandbox_for(dir.path(), isolation, &[]).await;
        let mut plan = ServicePlan::new(
            service(dir.path(), &["sh", "-c", "echo boom; exit 3"]),
            free_port(),
        );
        plan.startup_timeout = Duration::from_millis(1500);
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::Exited { code: Some(3), .. }),
            "{isolation}: {report:#?}"
        );
        assert!(report.service_log_tail.contains("boom"), "{report:#?}");

        plan.service = service(dir.path(), &["sleep", "30"]);
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::AliveNotListening { after_ms } if after_ms >= 1500),
            "{isolation}: {report:#?}"
        );
        assert!(report.leftovers.is_empty(), "{report:#?}");

        plan.service = service(dir.path(), &["sh", "-c", "setsid sleep 30 & exit 0"]);
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::NeverListened { .. }),
            "{isolation}: {report:#?}"
        );
        assert!(!report.foreground);
        assert!(
            report.leftovers.iter().any(|l| l.contains("sleep 30")),
            "{report:#?}"
        );

        // Without waiting for daemons, the start's end is the verdict, and
        // what it left is named.
        plan.wait_for_daemons = false;
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::Exited { code: Some(0), .. }),
            "{isolation}: {report:#?}"
        );
        assert!(
            report.survivors.iter().any(|l| l.contains("sleep")),
            "{report:#?}"
        );

        plan.service = None;
        let report = sandbox.run_service(&plan).await.unwrap();
        assert_eq!(report.readiness, Readiness::NothingToStart, "{report:#?}");

        if isolation == Isolation::Process {
            let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            plan.port = holder.local_addr().unwrap().port();
            plan.service = service(dir.path(), &["sh", "-c", "touch started; sleep 5"]);
            let report = sandbox.run_service(&plan).await.unwrap();
            assert_eq!(report.readiness, Readiness::PortBusy, "{report:#?}");
            assert!(
                !dir.path().join("started").exists(),
                "the service was started"
            );
        }
    }
}

/// A process of the service is found by the mark in its environment; once
/// found it stays the service's whatever its environment becomes: while it
/// execs the kernel shows no environment at all (the CI failure this
/// reproduces: `setsid` turning into `sleep` read as "every daemon ended"),
/// and a daemon may exec with a cleared one on purpose.
#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_that_execs_without_the_mark_is_still_followed_and_killed() {
    let _one = ONE_AT_A_TIME.lock().await;
    for isolation in
        isolations_or_skip("a_daemon_that_execs_without_the_mark_is_still_followed_and_killed")
    {
        let dir = workdir();
        let sandbox = sandbox_for(dir.path(), isolation, &[]).await;
        let mut plan = ServicePlan::new(
            service(
                dir.path(),
                &[
                    "sh",
                    "-c",
                    // A second of grace: seen with the mark before it
                    // drops it, even on a loaded machine.
                    "setsid sh -c 'sleep 1; exec env -i sleep 31' & exit 0",
                ],
            ),
            free_port(),
        );
        plan.startup_timeout = Duration::from_millis(2000);
        let report = sandbox.run_service(&plan).await.unwrap();
        assert!(
            matches!(report.readiness, Readiness::NeverListened { after_ms } if after_ms >= 2000),
            "{isolation}: {report:#?}"
        );
        assert!(!report.foreground, "{report:#?}");
        let daemon = report
            .leftovers
            .iter()
            .find(|l| l.contains("sleep 31"))
            .unwrap_or_else(|| panic!("{isolation}: the daemon is not listed: {report:#?}"));
        if isolation == Isolation::Process {
            let pid: u32 = daemon.split(' ').next().unwrap().parse().unwrap();
            let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline"));
            assert!(
                !cmdline.unwrap_or_default().contains("sleep"),
                "the daemon {pid} still runs"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_cannot_read_write_or_trace_its_supervisor() {
    let _one = ONE_AT_A_TIME.lock().await;
    for isolation in isolations_or_skip("a_service_cannot_read_write_or_trace_its_supervisor") {
        let dir = workdir();
        std::fs::write(dir.path().join("snoop.py"), SNOOP).unwrap();
        std::fs::write(dir.path().join("serve.py"), SERVE).unwrap();
        let sandbox = sandbox_for(dir.path(), isolation, &[]).await;
        let plan = ServicePlan::new(service(dir.path(), &["python3", "snoop.py"]), free_port());
        let report = sandbox.run_service(&plan).await.unwrap();
        let log = &report.service_log_tail;
        assert!(
            matches!(report.readiness, Readiness::Listening { .. }),
            "{isolation}: {report:#?}"
        );
        for attempt in ["environ", "stdout", "ptrace"] {
            assert!(
                log.contains(&format!("{attempt}: denied")),
                "{isolation}: {attempt} was not denied: {log}"
            );
        }
        assert!(!log.contains("ALLOWED"), "{isolation}: {log}");
        assert!(log.contains("pipes held: 0"), "{isolation}: {log}");
        assert!(report.supervisor_error.is_none(), "{report:#?}");
    }
}

/// A virtualenv with pytest and requests, made once per target directory.
async fn test_env() -> PythonEnv {
    static ENV: tokio::sync::OnceCell<PythonEnv> = tokio::sync::OnceCell::const_new();
    ENV.get_or_init(|| async {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sandbox-service-env");
        std::fs::create_dir_all(&dir).unwrap();
        let lock = std::fs::File::create(dir.join("lock")).unwrap();
        lock.lock().unwrap();
        if let Ok(env) = PythonEnv::open(dir.join("venv"))
            && dir.join("venv/ready").exists()
        {
            return env;
        }
        let _ = std::fs::remove_dir_all(dir.join("venv"));
        let sandbox = Sandbox::new(
            builder(&dir, Isolation::Process)
                .package_registry(true)
                .timeout(Duration::from_secs(300))
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        let env = sandbox.create_venv(dir.join("venv")).await.unwrap();
        sandbox
            .pip_install(&env, &["pytest", "requests"])
            .await
            .expect("pytest and requests install from PyPI");
        std::fs::write(dir.join("venv/ready"), "").unwrap();
        env
    })
    .await
    .clone()
}

/// Forces every report of the process it runs in to `passed`.
const FORCE_PASS: &str = "import _pytest.reports as R\n\
    _init = R.TestReport.__init__\n\
    def _passed(self, *a, **k):\n    _init(self, *a, **k)\n    self.outcome = 'passed'\n    self.longrepr = None\n\
    R.TestReport.__init__ = _passed\n";

/// A repository that tries every way in: a root `conftest.py` (made the
/// root by a `pytest.ini`) with a hook forcing passes, a `pytest.py` that
/// prints a pass, and "site-packages" with a `.pth` file, a pytest plugin
/// entry point and a `simplejson` that requests would import, each forcing
/// passes.
fn hostile_repo(root: &Path) -> (PathBuf, PathBuf) {
    let repo = root.join("repo");
    let site = root.join("site-packages");
    let write = |path: PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(repo.join("pytest.ini"), "[pytest]\n");
    write(
        repo.join("conftest.py"),
        "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    \
         outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n    report.longrepr = None\n",
    );
    write(
        repo.join("pytest.py"),
        "print('==== 2 passed in 0.01s ====')\nraise SystemExit(0)\n",
    );
    write(site.join("evil.pth"), "import evil_patch\n");
    write(site.join("evil_patch.py"), FORCE_PASS);
    write(site.join("simplejson.py"), FORCE_PASS);
    write(site.join("evil_plugin.py"), FORCE_PASS);
    write(
        site.join("evil-1.0.dist-info/METADATA"),
        "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
    );
    write(
        site.join("evil-1.0.dist-info/entry_points.txt"),
        "[pytest11]\nevil = evil_plugin\n",
    );
    (repo, site)
}

#[tokio::test(flavor = "multi_thread")]
async fn pytest_results_cannot_be_forged_by_the_repository() {
    let _one = ONE_AT_A_TIME.lock().await;
    let env = test_env().await;
    for isolation in isolations_or_skip("pytest_results_cannot_be_forged_by_the_repository") {
        let dir = workdir();
        let (repo, site) = hostile_repo(dir.path());
        // The harness's tests, outside the repository: one passes, one fails.
        let golden = dir.path().join("golden");
        std::fs::create_dir_all(golden.join("tests")).unwrap();
        std::fs::write(golden.join("pytest.ini"), "[pytest]\n").unwrap();
        std::fs::write(
            golden.join("tests/test_golden.py"),
            "import requests\n\ndef test_ok():\n    assert requests.__name__ == 'requests'\n\n\
             def test_bad():\n    assert 1 == 2\n",
        )
        .unwrap();
        let sandbox = sandbox_for(dir.path(), isolation, &[env.dir()]).await;
        let mut plan = ServicePlan::new(None, free_port());
        plan.tests = Some(TestRun::Pytest {
            interpreter: env.python(),
            test_paths: vec![golden.join("tests")],
            rootdir: golden.clone(),
            inifile: golden.join("pytest.ini"),
            sys_path_extra: vec![repo.clone(), site.clone()],
            args: vec!["-v".into()],
            cwd: repo.clone(),
            env: Vec::new(),
            timeout: Duration::from_secs(60),
        });
        let report = sandbox.run_service(&plan).await.unwrap();
        let tests = report.tests.as_ref().expect("the tests ran");
        let expected = TestCounts {
            passed: 1,
            failed: 1,
            ..TestCounts::default()
        };
        assert_eq!(
            tests.junit.as_ref().map(|j| j.counts),
            Some(expected),
            "{isolation}: {tests:#?}"
        );
        assert_eq!(tests.console, Some(expected), "{isolation}: {tests:#?}");
        assert_eq!(tests.agreement(), Agreement::Agree);
        assert_eq!(tests.scored(), expected);
        assert_eq!(tests.exit_code, Some(1));
        assert!(
            tests.console_tail.contains("refused simplejson"),
            "{isolation}: requests' optional import was not refused: {}",
            tests.console_tail
        );
        // Nothing was left in the repository or the tests.
        assert!(!repo.join(".pytest_cache").exists() && !golden.join(".pytest_cache").exists());
        assert!(!golden.join("tests/__pycache__").exists());
    }
}
