//! How RepoGenesis's container entrypoint (`eval_harness/scripts/entrypoint.sh`)
//! starts a service ([`start_command`]) and how `test_dsr_repos.py` looks
//! for one ([`legacy_start_script_exists`], [`legacy_success_pattern`]).
//! Running it is the sandbox's service session (`Sandbox::run_service`,
//! see `run.rs`), whose [`Readiness`](sandbox::Readiness) is the one
//! vocabulary of how a start went.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::spec::Language;

/// How the service is started, found as `entrypoint.sh` finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StartCommand {
    /// `bash <script>`: `./start.sh`, `./scripts/start.sh`, `./bin/start.sh`,
    /// else the first `start.sh` at most three levels down.
    Script {
        /// The script, relative to the repository (`./start.sh`).
        path: String,
    },
    /// `python <file>` for the first of `app.py`, `main.py`, `run.py`,
    /// `server.py` (Python fallbacks).
    PythonFile {
        /// The file.
        file: String,
    },
    /// `python manage.py runserver 0.0.0.0:PORT`.
    ManagePy,
    /// `python -m uvicorn M --host 0.0.0.0 --port PORT` for the first of
    /// `main:app`, `app:app`, `server:app`, `api:app` whose module imports
    /// (decided in the sandbox, where the environment is).
    UvicornProbe,
    /// `mvn spring-boot:run -q` (Java fallback with a `pom.xml`).
    MavenSpringBoot,
    /// Nothing to start ("No service entry point found").
    None,
}

impl StartCommand {
    /// The command line, for reports.
    pub fn shown(&self, port: u16) -> String {
        match self {
            StartCommand::Script { path } => format!("bash {path}"),
            StartCommand::PythonFile { file } => format!("python {file}"),
            StartCommand::ManagePy => format!("python manage.py runserver 0.0.0.0:{port}"),
            StartCommand::UvicornProbe => {
                format!("python -m uvicorn <main|app|server|api>:app --host 0.0.0.0 --port {port}")
            }
            StartCommand::MavenSpringBoot => "mvn spring-boot:run -q".to_owned(),
            StartCommand::None => "(none)".to_owned(),
        }
    }
}

/// `[ -f path ]`: a regular file, through symbolic links.
fn is_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|m| m.is_file())
}

/// `find_start_script` of `entrypoint.sh`. `find`'s order is the
/// directory's; names are sorted here so the choice is reproducible.
pub fn find_start_script(repo: &Path) -> Option<String> {
    for candidate in ["./start.sh", "./scripts/start.sh", "./bin/start.sh"] {
        if is_file(&repo.join(candidate.trim_start_matches("./"))) {
            return Some(candidate.to_owned());
        }
    }
    // find . -maxdepth 3 -name start.sh -type f | head -1: pre-order, a
    // directory's entries visited as they come, links not followed.
    fn walk(dir: &Path, rel: &str, depth: usize) -> Option<String> {
        let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = format!("{rel}/{name}");
            if kind.is_file() && name == "start.sh" {
                return Some(path);
            }
            if kind.is_dir()
                && depth < 3
                && let Some(found) = walk(&entry.path(), &path, depth + 1)
            {
                return Some(found);
            }
        }
        None
    }
    walk(repo, ".", 1)
}

/// The start command of `entrypoint.sh` (`start_python_service`,
/// `start_java_service`).
pub fn start_command(repo: &Path, language: Language) -> StartCommand {
    if let Some(path) = find_start_script(repo) {
        return StartCommand::Script { path };
    }
    match language {
        Language::Python => {
            for file in ["app.py", "main.py", "run.py"] {
                if is_file(&repo.join(file)) {
                    return StartCommand::PythonFile { file: file.into() };
                }
            }
            if is_file(&repo.join("manage.py")) {
                return StartCommand::ManagePy;
            }
            if is_file(&repo.join("server.py")) {
                return StartCommand::PythonFile {
                    file: "server.py".into(),
                };
            }
            StartCommand::UvicornProbe
        }
        Language::Java => {
            if is_file(&repo.join("pom.xml")) {
                StartCommand::MavenSpringBoot
            } else {
                StartCommand::None
            }
        }
    }
}

/// `find_file_recursive(repo, "start.sh", max_depth=5)` of
/// `test_dsr_repos.py`: the root, else anything named `start.sh` at most
/// five directories down.
pub fn legacy_start_script_exists(repo: &Path) -> bool {
    legacy_file_exists(repo, "start.sh")
}

/// `find_file_recursive(repo, name)` of `test_dsr_repos.py` found something.
pub fn legacy_file_exists(repo: &Path, name: &str) -> bool {
    if repo.join(name).exists() {
        return true;
    }
    // `rglob` keeps paths of at most six parts: five directories and the name.
    fn walk(dir: &Path, name: &str, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return false;
        };
        for entry in entries.flatten() {
            if entry.file_name() == name {
                return true;
            }
            if depth < 6
                && entry.file_type().is_ok_and(|t| t.is_dir())
                && walk(&entry.path(), name, depth + 1)
            {
                return true;
            }
        }
        false
    }
    walk(repo, name, 1)
}

/// `test_dsr_repos.py`'s success patterns: a process that ended within the
/// window still counts as deployed when its output has one of them.
pub fn legacy_success_pattern(language: Language, output: &str) -> Option<&'static str> {
    const PYTHON: [&str; 6] = [
        "Running on",
        "Started",
        "Uvicorn running",
        "Application startup complete",
        "Listening on",
        "Accepting connections",
    ];
    const JAVA: [&str; 6] = [
        "Started",
        "Javalin started",
        "Server started",
        "Application started",
        "Listening on",
        "Tomcat started",
    ];
    const CONFLICT: [&str; 2] = ["Address already in use", "Port already in use"];
    let patterns: &[&str] = match language {
        Language::Python => &PYTHON,
        Language::Java => &JAVA,
    };
    patterns
        .iter()
        .chain(CONFLICT.iter())
        .find(|p| output.contains(*p))
        .copied()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn start_scripts_are_found_in_the_entrypoints_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::UvicornProbe
        );
        assert_eq!(start_command(root, Language::Java), StartCommand::None);
        std::fs::write(root.join("server.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::PythonFile {
                file: "server.py".into()
            }
        );
        std::fs::write(root.join("manage.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::ManagePy
        );
        std::fs::write(root.join("run.py"), "").unwrap();
        std::fs::write(root.join("main.py"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::PythonFile {
                file: "main.py".into()
            }
        );
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/start.sh"), "").unwrap();
        // Four levels down: too deep for `find -maxdepth 3`.
        assert!(find_start_script(root).is_none());
        assert!(legacy_start_script_exists(root));
        std::fs::write(root.join("a/b/start.sh"), "").unwrap();
        assert_eq!(find_start_script(root).as_deref(), Some("./a/b/start.sh"));
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/start.sh"), "").unwrap();
        assert_eq!(find_start_script(root).as_deref(), Some("./bin/start.sh"));
        std::fs::write(root.join("start.sh"), "").unwrap();
        assert_eq!(
            start_command(root, Language::Python),
            StartCommand::Script {
                path: "./start.sh".into()
            }
        );
    }
}
