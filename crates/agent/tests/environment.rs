//! `prepare_environment` on small repositories, offline (`--no-index`):
//! a requirement that cannot install is named with pip's reason, the
//! repository's package imports, and a second call reuses the cache.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

mod common;

use agent::environment::{EnvironmentRequest, prepare_environment};
use common::local_wheel;

fn repo(dir: &Path, requirements: &str) {
    fs::create_dir_all(dir.join("pkg")).unwrap();
    fs::write(dir.join("pkg/__init__.py"), "VALUE = 42\n").unwrap();
    fs::write(dir.join("requirements.txt"), requirements).unwrap();
    fs::write(
        dir.join("pyproject.toml"),
        "[project]\nname = \"pkg\"\ndependencies = [\"pip\"]\n",
    )
    .unwrap();
}

fn request(repo: &Path, cache: &Path) -> EnvironmentRequest {
    let mut request = EnvironmentRequest::new(repo, cache);
    // Offline: only what is already installed can be satisfied.
    request.package_registry = false;
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_requirement_is_named_and_the_package_still_imports() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Repo"), dir.path().join("envs"));
    repo(&code, "# needed\npip\ndefinitely-not-a-package-xyz==9.9\n");
    let report = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert!(!report.reused);
    // uv cannot be installed offline: pip did the work, and says so.
    assert_eq!(report.installer, agent::environment::Installer::Pip);
    // Nor was it tried: with no registry and no --find-links, there is
    // nothing for pip to install it from.
    assert!(!cache.join(".tools").exists(), "uv was tried offline");
    // pyproject.toml's, then requirements.txt's (files in name order).
    assert_eq!(
        report.requirements,
        ["pip", "pip", "definitely-not-a-package-xyz==9.9"]
    );
    assert!(!report.complete());
    assert_eq!(report.failing.len(), 1, "{:?}", report.failing);
    assert_eq!(
        report.failing[0].requirement,
        "definitely-not-a-package-xyz==9.9"
    );
    assert!(
        report.failing[0]
            .reason
            .contains("definitely-not-a-package-xyz"),
        "{}",
        report.failing[0].reason
    );
    // requirements.txt failed, pyproject.toml's dependencies installed.
    let steps: Vec<(&str, bool)> = report
        .steps
        .iter()
        .map(|s| (s.source.as_str(), s.ok))
        .collect();
    assert_eq!(
        steps,
        [("pyproject.toml", true), ("requirements.txt", false)]
    );
    // How the installer ended is kept last, where the tail keeps it.
    let failed = &report.steps[1].log_tail;
    assert!(
        failed
            .trim_end()
            .ends_with("[the installer ended: exit code 1]"),
        "{failed}"
    );
    assert_eq!(report.imports.len(), 1);
    assert!(report.imports[0].ok, "{:?}", report.imports);
    assert!(report.python().exists());
    let note = report.prompt_note();
    assert!(
        note.contains("Not installed: definitely-not-a-package-xyz==9.9"),
        "{note}"
    );
    assert!(
        note.contains(&report.python().display().to_string()),
        "{note}"
    );

    let again = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert!(again.reused);
    assert_eq!(again.venv, report.venv);
    // A changed requirements file is another environment.
    fs::write(code.join("requirements.txt"), "pip\n").unwrap();
    let changed = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert!(!changed.reused);
    assert_ne!(changed.venv, report.venv);
    assert!(changed.complete(), "{}", changed.summary());
    // The stale one is gone; another repository's whose name starts the
    // same is not.
    assert!(!report.venv.exists());
    let other = cache.join("Repository-0123456789abcdef");
    fs::create_dir_all(&other).unwrap();
    fs::write(code.join("requirements.txt"), "pip\n# again\n").unwrap();
    let third = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert!(!changed.venv.exists() && third.venv.exists());
    assert!(other.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_package_that_does_not_import_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Broken"), dir.path().join("envs"));
    repo(&code, "");
    fs::write(
        code.join("pkg/__init__.py"),
        "import definitely_missing_module\n",
    )
    .unwrap();
    let report = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert_eq!(report.imports.len(), 1);
    assert!(!report.imports[0].ok);
    let error = report.imports[0].error.as_deref().unwrap();
    assert!(error.contains("definitely_missing_module"), "{error}");
    assert!(
        report.summary().contains("import pkg failed"),
        "{}",
        report.summary()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_dependency_file_is_reported_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Huge"), dir.path().join("envs"));
    repo(&code, "");
    // 2 MiB of requirement lines: past the 1 MiB a dependency file may have.
    fs::write(code.join("requirements.txt"), "pip\n".repeat(512 * 1024)).unwrap();
    let report = prepare_environment(&request(&code, &cache)).await.unwrap();
    let step = report
        .steps
        .iter()
        .find(|s| s.source == "requirements.txt")
        .unwrap();
    assert!(!step.ok && step.log_tail.contains("not read"), "{step:?}");
    assert!(!report.complete());
    assert_eq!(
        report.requirements,
        ["pip"],
        "only pyproject.toml's were read"
    );
}

/// uv comes from its pinned PyPI wheel: offline it cannot be installed, and
/// the preparation says so instead of falling back to something else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uv_offline_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Repo"), dir.path().join("envs"));
    repo(&code, "pip\n");
    let mut request = request(&code, &cache);
    request.installer = agent::environment::Installer::Uv;
    let error = prepare_environment(&request).await.unwrap_err().to_string();
    assert!(
        error.contains("cannot install uv 0.13.9 from PyPI"),
        "{error}"
    );
    assert!(
        !cache.join(".tools/uv-0.13.9/bin/uv").exists(),
        "nothing half-made is taken for uv"
    );
    assert_eq!("uv".parse(), Ok(agent::environment::Installer::Uv));
    assert!("conda".parse::<agent::environment::Installer>().is_err());
}

/// The episode's code runs in the prepared environment: `run_python`'s
/// interpreter is the virtualenv's (its packages are importable) and so is
/// `pip` in a shell, as the code's user (`nobody` for a root agent), in the
/// isolation the episode gets. Measured: GitTaskBench episodes whose
/// environment was complete got `ModuleNotFoundError` for its packages, and
/// `pip` failed with "bad interpreter: Permission denied".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_episode_runs_code_in_the_prepared_environment() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache, out) = (
        dir.path().join("Repo"),
        dir.path().join("envs"),
        dir.path().join("out"),
    );
    repo(&code, "pip\n");
    let report = prepare_environment(&request(&code, &cache)).await.unwrap();
    assert!(report.complete(), "{}", report.summary());
    let task = agent::TaskSpec::new("Print the prefix.", &code, &out);
    let config = agent::AgentConfig::builder()
        .environment(Some(report.clone()))
        .build();
    let prepared = agent::prepare(&task, &config).await.unwrap();
    let run = |name: &str, arguments: serde_json::Value| {
        let call = llm::ToolCall::new("c", name, arguments);
        let tools = &prepared.tools;
        async move { tools.call(&call).await }
    };
    let out = run(
        "run_python",
        serde_json::json!({"code": "import sys, pkg; print(sys.prefix, pkg.VALUE)"}),
    )
    .await;
    let venv = report.venv.display().to_string();
    assert!(
        out.text.contains(&format!("{venv} 42")),
        "run_python is not the environment's interpreter: {}",
        out.text
    );
    let out = run("run_shell", serde_json::json!({"command": "pip --version"})).await;
    assert!(
        out.text.contains(&venv) && out.text.starts_with("[exit code 0"),
        "pip is not the environment's: {}",
        out.text
    );
}

/// An installer stopped half-way leaves a distribution whose files are not
/// all there, and every later install of it takes it for installed
/// (GitTaskBench run 9: torch's `libcublas.so.13` missing, the
/// one-by-one retries "succeeded"). A cached environment is checked when
/// it is reused, and what is damaged is reinstalled at its version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_distribution_is_found_and_reinstalled() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Repo"), dir.path().join("envs"));
    repo(&code, "tinywheel==0.1\n");
    let wheels = local_wheel(
        &code,
        "tinywheel",
        &[("tinywheel/__init__.py".to_owned(), b"ANSWER = 7\n")],
    );
    let mut request = request(&code, &cache);
    request.pip_args = vec!["--find-links".into(), wheels.display().to_string()];
    let first = prepare_environment(&request).await.unwrap();
    assert!(first.sound(), "{}", first.summary());
    assert!(first.installed.iter().any(|p| p == "tinywheel==0.1"));
    assert!(first.repaired.is_empty() && first.damaged.is_empty());
    let module = glob_one(&first.venv, "tinywheel/__init__.py");
    fs::remove_file(&module).unwrap();

    let second = prepare_environment(&request).await.unwrap();
    assert!(second.reused);
    assert_eq!(second.repaired, ["tinywheel==0.1"], "{}", second.summary());
    assert!(second.damaged.is_empty(), "{:?}", second.damaged);
    assert_eq!(fs::read_to_string(&module).unwrap(), "ANSWER = 7\n");
    assert!(
        second
            .summary()
            .contains("reinstalled with files missing: tinywheel==0.1")
    );
    // Written back: a third preparation finds nothing to repair.
    let third = prepare_environment(&request).await.unwrap();
    assert!(third.reused && third.repaired == ["tinywheel==0.1"] && third.damaged.is_empty());
}

/// An install step is stopped when it grows a file system past the
/// preparation's disk budget, and the step's log says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_install_past_its_disk_budget_is_stopped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let (code, cache) = (dir.path().join("Repo"), dir.path().join("envs"));
    repo(&code, "bigwheel==0.1\n");
    // 24 files of 16 MiB (zeros: a small wheel, 384 MiB installed). The
    // budget leaves room for the virtualenv itself (pip, about 20 MB).
    let zeros = vec![0u8; 16 << 20];
    let files: Vec<(String, &[u8])> = (0..24)
        .map(|i| (format!("bigwheel/data{i}.bin"), zeros.as_slice()))
        .collect();
    let wheels = local_wheel(&code, "bigwheel", &files);
    let mut request = request(&code, &cache);
    request.pip_args = vec!["--find-links".into(), wheels.display().to_string()];
    request.disk_budget = Some(64 << 20);
    let report = prepare_environment(&request).await.unwrap();
    let step = report
        .steps
        .iter()
        .find(|s| s.source == "requirements.txt")
        .unwrap();
    assert!(!step.ok, "{step:?}");
    assert!(
        step.log_tail
            .contains("stopped for writing more than its disk budget"),
        "{}",
        step.log_tail
    );
    assert!(!report.sound());
    assert!(
        report.prompt_note().contains("INCOMPLETE"),
        "{}",
        report.prompt_note()
    );
}

/// The one file under `venv`'s site-packages that ends with `suffix`.
fn glob_one(venv: &Path, suffix: &str) -> std::path::PathBuf {
    let lib = venv.join("lib");
    for python in fs::read_dir(&lib).unwrap() {
        let path = python.unwrap().path().join("site-packages").join(suffix);
        if path.exists() {
            return path;
        }
    }
    panic!("{suffix} is not under {}", lib.display());
}
