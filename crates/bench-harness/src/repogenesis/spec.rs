//! The benchmark's tasks: what `eval_harness/constants.py` says about each
//! (language, port, framework, phase timeouts) and where the checkout keeps
//! its README and golden tests (`repo/<task>/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;

/// A task's language, as `REPO_SPECS[...]["lang"]` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// Built with pip, started with `start.sh` or a Python entry point, tested with pytest.
    Python,
    /// Built with Maven, started with `start.sh` or `mvn spring-boot:run`, tested with `mvn test`.
    Java,
}

impl Language {
    /// The name `constants.py` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Java => "java",
        }
    }

    /// For headings.
    pub fn label(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Java => "Java",
        }
    }
}

/// The framework hint of a task (`REPO_SPECS[...]["framework"]`); `any`
/// leaves the choice to the generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameworkHint {
    /// No framework required.
    Any,
    /// FastAPI.
    #[serde(rename = "fastapi")]
    FastApi,
    /// Flask.
    Flask,
    /// Django (REST framework).
    Django,
    /// Eve.
    Eve,
    /// Javalin.
    Javalin,
    /// Micronaut.
    Micronaut,
    /// Quarkus.
    Quarkus,
    /// Spark Java.
    Spark,
    /// Spring Boot.
    #[serde(rename = "springboot")]
    SpringBoot,
    /// A value this harness does not know.
    #[serde(other)]
    Other,
}

impl FrameworkHint {
    /// The hint named as in `constants.py`.
    pub fn parse(name: &str) -> Self {
        match name {
            "any" => FrameworkHint::Any,
            "fastapi" => FrameworkHint::FastApi,
            "flask" => FrameworkHint::Flask,
            "django" => FrameworkHint::Django,
            "eve" => FrameworkHint::Eve,
            "javalin" => FrameworkHint::Javalin,
            "micronaut" => FrameworkHint::Micronaut,
            "quarkus" => FrameworkHint::Quarkus,
            "spark" => FrameworkHint::Spark,
            "springboot" => FrameworkHint::SpringBoot,
            _ => FrameworkHint::Other,
        }
    }

    /// The name as in `constants.py`.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameworkHint::Any => "any",
            FrameworkHint::FastApi => "fastapi",
            FrameworkHint::Flask => "flask",
            FrameworkHint::Django => "django",
            FrameworkHint::Eve => "eve",
            FrameworkHint::Javalin => "javalin",
            FrameworkHint::Micronaut => "micronaut",
            FrameworkHint::Quarkus => "quarkus",
            FrameworkHint::Spark => "spark",
            FrameworkHint::SpringBoot => "springboot",
            FrameworkHint::Other => "other",
        }
    }
}

/// One entry of `REPO_SPECS`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// The task (and repository) name.
    pub name: String,
    /// Its language.
    pub language: Language,
    /// The port the service must listen on, which the golden tests call.
    pub port: u16,
    /// The framework hint.
    pub framework: FrameworkHint,
}

/// Time limits of the three phases of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseTimeouts {
    /// Installing dependencies or compiling (`*_BUILD_TIMEOUT`).
    pub build: Duration,
    /// Waiting for the service (`*_STARTUP_TIMEOUT`).
    pub start: Duration,
    /// The golden test run (`*_TEST_TIMEOUT`).
    pub tests: Duration,
}

/// The phase timeouts per language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// Python tasks.
    pub python: PhaseTimeouts,
    /// Java tasks.
    pub java: PhaseTimeouts,
}

impl Timeouts {
    /// The values of `eval_harness/constants.py`: Python 120 s build, 15 s
    /// start, 300 s tests; Java 300 s, 20 s, 600 s.
    pub const BENCHMARK: Timeouts = Timeouts {
        python: PhaseTimeouts {
            build: Duration::from_secs(120),
            start: Duration::from_secs(15),
            tests: Duration::from_secs(300),
        },
        java: PhaseTimeouts {
            build: Duration::from_secs(300),
            start: Duration::from_secs(20),
            tests: Duration::from_secs(600),
        },
    };

    /// The limits of one language.
    pub fn of(&self, language: Language) -> PhaseTimeouts {
        match language {
            Language::Python => self.python,
            Language::Java => self.java,
        }
    }

    /// The same limit for one phase in both languages (a `--*-timeout` flag).
    pub fn set(&mut self, phase: Phase, limit: Duration) {
        for timeouts in [&mut self.python, &mut self.java] {
            match phase {
                Phase::Build => timeouts.build = limit,
                Phase::Start => timeouts.start = limit,
                Phase::Tests => timeouts.tests = limit,
            }
        }
    }
}

/// One of the three timed phases of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Dependencies and compilation.
    Build,
    /// Starting the service and waiting for it.
    Start,
    /// The golden tests.
    Tests,
}

/// The 30 tasks of `REPO_SPECS` in RepoGenesis's `eval_harness/constants.py`
/// (Verified split: 22 Python, 8 Java), used when the checkout has no
/// `constants.py` to read. A test compares it with the file.
pub const VERIFIED_SPECS: [(&str, Language, u16, FrameworkHint); 30] = [
    ("Blog", Language::Python, 8000, FrameworkHint::FastApi),
    ("Chatroom", Language::Python, 8083, FrameworkHint::Any),
    (
        "Customization",
        Language::Python,
        8082,
        FrameworkHint::FastApi,
    ),
    (
        "Data_Rank_Searcher",
        Language::Python,
        8080,
        FrameworkHint::Any,
    ),
    (
        "django-rest-framework-crud",
        Language::Python,
        8000,
        FrameworkHint::Django,
    ),
    ("eve", Language::Python, 5001, FrameworkHint::Eve),
    ("File_Relay", Language::Python, 8085, FrameworkHint::Any),
    ("flask", Language::Python, 5000, FrameworkHint::Flask),
    ("GameBackend", Language::Python, 8080, FrameworkHint::Any),
    ("mail_service", Language::Python, 8080, FrameworkHint::Any),
    ("Multilingual", Language::Python, 5000, FrameworkHint::Flask),
    (
        "rock-paper-scissors-flask",
        Language::Python,
        5000,
        FrameworkHint::Flask,
    ),
    (
        "simple-rbac-service",
        Language::Python,
        8080,
        FrameworkHint::Any,
    ),
    (
        "SimpleFastPyAPI",
        Language::Python,
        8000,
        FrameworkHint::FastApi,
    ),
    (
        "StructuredDataConvertor",
        Language::Python,
        8000,
        FrameworkHint::Any,
    ),
    ("synapse", Language::Python, 8080, FrameworkHint::Any),
    ("TaskManagement", Language::Python, 8080, FrameworkHint::Any),
    ("Tic-Tac-Toe", Language::Python, 8082, FrameworkHint::Any),
    ("Timer4Tasker", Language::Python, 8080, FrameworkHint::Any),
    ("UserManagement", Language::Python, 8081, FrameworkHint::Any),
    (
        "UserManagement_2",
        Language::Python,
        8080,
        FrameworkHint::Any,
    ),
    ("WebPan", Language::Python, 8080, FrameworkHint::Any),
    (
        "javalin-online-judge",
        Language::Java,
        7000,
        FrameworkHint::Javalin,
    ),
    (
        "javalin-task-manager",
        Language::Java,
        7000,
        FrameworkHint::Javalin,
    ),
    (
        "javalin-user-auth-platform",
        Language::Java,
        7070,
        FrameworkHint::Javalin,
    ),
    (
        "micronaut-ci-status",
        Language::Java,
        8080,
        FrameworkHint::Micronaut,
    ),
    (
        "quarkus-blog-cms",
        Language::Java,
        8080,
        FrameworkHint::Quarkus,
    ),
    (
        "spark-dashboard-backend",
        Language::Java,
        4567,
        FrameworkHint::Spark,
    ),
    (
        "spring-boot-course-scheduling",
        Language::Java,
        8080,
        FrameworkHint::SpringBoot,
    ),
    (
        "springboot-chat-gateway",
        Language::Java,
        8080,
        FrameworkHint::SpringBoot,
    ),
];

/// The built-in specs ([`VERIFIED_SPECS`]) as values.
pub fn verified_specs() -> Vec<TaskSpec> {
    VERIFIED_SPECS
        .iter()
        .map(|(name, language, port, framework)| TaskSpec {
            name: (*name).to_owned(),
            language: *language,
            port: *port,
            framework: *framework,
        })
        .collect()
}

/// What [`parse_constants`] found in a `constants.py`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Constants {
    /// The entries of `REPO_SPECS`, in file order.
    pub specs: Vec<TaskSpec>,
    /// Module-level integer constants (`PYTHON_STARTUP_TIMEOUT = 15`).
    pub integers: BTreeMap<String, u64>,
}

impl Constants {
    /// The phase timeouts the file sets, with [`Timeouts::BENCHMARK`] for
    /// any it does not.
    pub fn timeouts(&self) -> Timeouts {
        let mut t = Timeouts::BENCHMARK;
        let get = |name: &str, default: Duration| {
            self.integers
                .get(name)
                .map_or(default, |secs| Duration::from_secs(*secs))
        };
        t.python.build = get("PYTHON_BUILD_TIMEOUT", t.python.build);
        t.python.start = get("PYTHON_STARTUP_TIMEOUT", t.python.start);
        t.python.tests = get("PYTHON_TEST_TIMEOUT", t.python.tests);
        t.java.build = get("JAVA_BUILD_TIMEOUT", t.java.build);
        t.java.start = get("JAVA_STARTUP_TIMEOUT", t.java.start);
        t.java.tests = get("JAVA_TEST_TIMEOUT", t.java.tests);
        t
    }
}

/// Reads `REPO_SPECS` and the integer constants from the text of
/// `eval_harness/constants.py`. It understands the file's own layout (one
/// `"Name": {` per entry, then `"lang"`, `"port"` and `"framework"` lines)
/// rather than Python in general; an entry missing a field is skipped.
///
/// ```
/// let text = "REPO_SPECS = {\n    \"Blog\": {\n        \"lang\": \"python\",\n        \"port\": 8000,\n        \"framework\": \"fastapi\",\n    },\n}\nPYTHON_STARTUP_TIMEOUT = 15\n";
/// let constants = bench_harness::repogenesis::parse_constants(text);
/// assert_eq!(constants.specs[0].name, "Blog");
/// assert_eq!(constants.specs[0].port, 8000);
/// assert_eq!(constants.integers["PYTHON_STARTUP_TIMEOUT"], 15);
/// ```
pub fn parse_constants(text: &str) -> Constants {
    #[derive(Default)]
    struct Draft {
        name: String,
        language: Option<Language>,
        port: Option<u16>,
        framework: Option<FrameworkHint>,
    }
    let mut constants = Constants::default();
    let mut in_specs = false;
    let mut draft: Option<Draft> = None;
    for raw in text.lines() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if !in_specs {
            if line.starts_with("REPO_SPECS") && line.ends_with('{') {
                in_specs = true;
            } else if let Some((name, value)) = line.split_once('=')
                && raw.starts_with(|c: char| c.is_ascii_uppercase())
            {
                // `NAME: int = 15` as well as `NAME = 15`.
                let name = name.split(':').next().unwrap_or("").trim();
                if let Ok(n) = value.trim().parse::<u64>()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                {
                    constants.integers.insert(name.to_owned(), n);
                }
            }
            continue;
        }
        if draft.is_none() {
            if line == "}" {
                in_specs = false;
                continue;
            }
            if let Some(rest) = line.strip_prefix('"')
                && let Some((name, tail)) = rest.split_once('"')
                && tail.trim_start().starts_with(':')
                && tail.trim_end().ends_with('{')
            {
                draft = Some(Draft {
                    name: name.to_owned(),
                    ..Draft::default()
                });
            }
            continue;
        }
        let Some(current) = draft.as_mut() else {
            continue;
        };
        if line.starts_with('}') {
            if let Some(Draft {
                name,
                language: Some(language),
                port: Some(port),
                framework: Some(framework),
            }) = draft.take()
            {
                constants.specs.push(TaskSpec {
                    name,
                    language,
                    port,
                    framework,
                });
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let value = value.trim().trim_end_matches(',').trim();
        let string = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .map(str::to_owned);
        match key {
            "lang" => {
                current.language = match string.as_deref() {
                    Some("python") => Some(Language::Python),
                    Some("java") => Some(Language::Java),
                    _ => None,
                }
            }
            "port" => current.port = value.parse().ok(),
            "framework" => current.framework = string.as_deref().map(FrameworkHint::parse),
            _ => {}
        }
    }
    constants
}

/// Where the task's golden tests are and how they go into a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GoldenTests {
    /// Python: `repo/<task>/tests/`, which becomes the repository's `tests/`.
    PythonTests {
        /// The directory.
        dir: PathBuf,
    },
    /// Java: `repo/<task>/src/test/`, which replaces the repository's
    /// `src/test/` (else `repo/<task>/tests/`, copied to `src/test/java/`).
    JavaSources {
        /// The directory.
        dir: PathBuf,
        /// `true` for the `tests/` fallback layout.
        flat: bool,
    },
    /// The checkout has none for this task.
    Missing,
}

/// One task of the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisTask {
    /// Its specification.
    pub spec: TaskSpec,
    /// `repo/<task>/` in the checkout.
    pub dir: PathBuf,
    /// The requirement document, `repo/<task>/README.md`.
    pub readme: PathBuf,
    /// The golden tests.
    pub golden: GoldenTests,
    /// `repo/<task>/pom.xml` (Java: the build the generator was given).
    pub pom: Option<PathBuf>,
}

impl GenesisTask {
    /// The task's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
}

/// Where the specs came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecSource {
    /// The checkout's `eval_harness/constants.py`.
    ConstantsPy,
    /// [`VERIFIED_SPECS`], as the checkout has no `constants.py`.
    BuiltIn,
}

/// A RepoGenesis checkout: `repo/<task>/` per task plus `eval_harness/`.
#[derive(Debug, Clone)]
pub struct GenesisBenchmark {
    root: PathBuf,
    tasks: Vec<GenesisTask>,
    timeouts: Timeouts,
    source: SpecSource,
}

impl GenesisBenchmark {
    /// Opens the checkout at `root`: the specs of `eval_harness/constants.py`
    /// (else the built-in ones), and every spec whose `repo/<task>/` exists.
    pub fn open(root: &Path) -> Result<Self, Error> {
        let root = std::fs::canonicalize(root).map_err(|source| Error::Io {
            what: "opening the RepoGenesis checkout",
            path: root.to_path_buf(),
            source,
        })?;
        let repo = root.join("repo");
        if !repo.is_dir() {
            return Err(Error::Invalid {
                path: root.clone(),
                message: "not a RepoGenesis checkout: expected repo/<task>/README.md (and eval_harness/constants.py); pass the checkout's root with --root".into(),
            });
        }
        let constants_py = root.join("eval_harness").join("constants.py");
        let (specs, timeouts, source) = match std::fs::read(&constants_py) {
            Ok(bytes) => {
                let constants = parse_constants(&String::from_utf8_lossy(&bytes));
                if constants.specs.is_empty() {
                    return Err(Error::Invalid {
                        path: constants_py,
                        message: "no REPO_SPECS entries found".into(),
                    });
                }
                (
                    constants.specs.clone(),
                    constants.timeouts(),
                    SpecSource::ConstantsPy,
                )
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                (verified_specs(), Timeouts::BENCHMARK, SpecSource::BuiltIn)
            }
            Err(source) => {
                return Err(Error::Io {
                    what: "reading",
                    path: constants_py,
                    source,
                });
            }
        };
        let mut tasks: Vec<GenesisTask> = specs
            .into_iter()
            .filter_map(|spec| {
                let dir = repo.join(&spec.name);
                if !dir.is_dir() {
                    tracing::debug!(task = %spec.name, "not in this checkout");
                    return None;
                }
                let golden = golden_tests(&dir, spec.language);
                let pom = Some(dir.join("pom.xml")).filter(|p| p.is_file());
                Some(GenesisTask {
                    readme: dir.join("README.md"),
                    dir,
                    golden,
                    pom,
                    spec,
                })
            })
            .collect();
        tasks.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        if tasks.is_empty() {
            return Err(Error::Invalid {
                path: repo,
                message: "no task of REPO_SPECS has a directory here".into(),
            });
        }
        Ok(GenesisBenchmark {
            root,
            tasks,
            timeouts,
            source,
        })
    }

    /// The checkout's root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every task, by name.
    pub fn tasks(&self) -> &[GenesisTask] {
        &self.tasks
    }

    /// The benchmark's phase timeouts.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// Where the specs came from.
    pub fn spec_source(&self) -> &SpecSource {
        &self.source
    }

    /// The named tasks (all when `names` is empty), by name.
    pub fn select(&self, names: &[String]) -> Result<Vec<&GenesisTask>, Error> {
        if names.is_empty() {
            return Ok(self.tasks.iter().collect());
        }
        let mut chosen = Vec::new();
        for name in names {
            let task = self
                .tasks
                .iter()
                .find(|t| &t.spec.name == name)
                .ok_or_else(|| Error::UnknownTask(name.clone()))?;
            if !chosen.iter().any(|t: &&GenesisTask| t.spec.name == *name) {
                chosen.push(task);
            }
        }
        chosen.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
        Ok(chosen)
    }
}

/// The golden tests as `make_repo_spec` (test_spec.py) and the Dockerfiles
/// find them.
fn golden_tests(dir: &Path, language: Language) -> GoldenTests {
    match language {
        Language::Python => {
            let tests = dir.join("tests");
            if tests.is_dir() {
                GoldenTests::PythonTests { dir: tests }
            } else {
                GoldenTests::Missing
            }
        }
        Language::Java => {
            let src_test = dir.join("src").join("test");
            let tests = dir.join("tests");
            if src_test.is_dir() {
                GoldenTests::JavaSources {
                    dir: src_test,
                    flat: false,
                }
            } else if tests.is_dir() {
                GoldenTests::JavaSources {
                    dir: tests,
                    flat: true,
                }
            } else {
                GoldenTests::Missing
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_specs_are_the_checkouts() {
        let mini = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/repogenesis-mini/eval_harness/constants.py");
        let constants = parse_constants(&std::fs::read_to_string(mini).unwrap());
        assert_eq!(constants.specs, verified_specs());
        assert_eq!(constants.timeouts(), Timeouts::BENCHMARK);
        let python = constants
            .specs
            .iter()
            .filter(|s| s.language == Language::Python)
            .count();
        assert_eq!((python, constants.specs.len() - python), (22, 8));
    }

    #[test]
    fn odd_entries_are_skipped_not_guessed() {
        let text = "REPO_SPECS: Dict = {\n  \"A\": {\n    \"lang\": \"cobol\",\n    \"port\": 1,\n    \"framework\": \"x\",\n  },\n  \"B\": {\n    \"lang\": \"java\", # comment\n    \"port\": 99999,\n  },\n  \"C\": {\n    \"lang\": \"java\",\n    \"port\": 7000,\n    \"framework\": \"helidon\",\n  },\n}\n";
        let constants = parse_constants(text);
        assert_eq!(constants.specs.len(), 1);
        assert_eq!(constants.specs[0].name, "C");
        assert_eq!(constants.specs[0].framework, FrameworkHint::Other);
    }
}
