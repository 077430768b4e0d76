//! The published RepoGenesis results (seed 003) that reports show beside a
//! run, exactly as printed. `tests/repogenesis_published.rs` checks every
//! number against the seed text when it is available.
//!
//! What the paper's numbers are, as far as its scripts and tables show:
//! Pass@1 is the mean over repositories of each repository's share of
//! passing tests, averaged over five runs (values such as 0.36 % are not
//! multiples of 1/22); DSR is deployed repositories over all repositories
//! of the language (95.45 % = 21/22); AC is the agents/IDE script's
//! implemented endpoints over declared endpoints summed over repositories
//! (Java: 116 declared endpoints, e.g. 68.10 % = 79/116; Python: multiples
//! of 1/115, e.g. 69.57 % = 80/115).

use serde::{Deserialize, Serialize};

use super::spec::Language;

/// Where the published rows come from.
pub const GENESIS_SOURCE: &str = "Published figures, not measured by this harness: RepoGenesis (seed 003), \
     Tables 3, 4, 5, 7, 8, 11, 12, 16, 17 and 18, RepoGenesis Verified (22 Python and 8 Java repositories), \
     averaged over five runs.";

/// Whether a system is an open-source agent or a commercial IDE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemKind {
    /// Open-source coding agent (Table 16).
    Agent,
    /// Commercial IDE (Table 17).
    Ide,
}

/// A Pass@1 row of Table 18 (Table 4 is its subset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedPass {
    /// The agent or IDE.
    pub method: String,
    /// The model, as printed.
    pub model: String,
    /// Python Pass@1, percent.
    pub python: f64,
    /// Java Pass@1, percent.
    pub java: f64,
    /// Also in Table 4 of the main text.
    pub in_table_4: bool,
}

/// A DSR and AC row of Tables 16 (agents) and 17 (IDEs); Table 5 is their
/// subset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedDsrAc {
    /// Agent or IDE.
    pub kind: SystemKind,
    /// The agent or IDE.
    pub method: String,
    /// The model, as printed.
    pub model: String,
    /// The language.
    pub language: Language,
    /// DSR, percent.
    pub dsr: f64,
    /// AC, percent.
    pub ac: f64,
}

/// A DSR count of Table 7 (by language) or Table 12 (Java by framework).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedDsrCount {
    /// The language or framework.
    pub name: String,
    /// Deployed repositories.
    pub success: u32,
    /// Repositories.
    pub total: u32,
    /// DSR, percent.
    pub dsr: f64,
}

/// A row of Table 8 (GenesisAgent-8B against GPT-5 mini).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedFineTune {
    /// The model.
    pub model: String,
    /// Java DSR, AC, Pass@1 (percent).
    pub java: [f64; 3],
    /// Python DSR, AC, Pass@1 (percent).
    pub python: [f64; 3],
}

/// A task's difficulty (Table 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    /// Score below 4.5.
    Easy,
    /// 4.5 to 7.0.
    Medium,
    /// 7.0 and above.
    Hard,
}

impl Difficulty {
    /// For headings.
    pub fn label(self) -> &'static str {
        match self {
            Difficulty::Easy => "Easy",
            Difficulty::Medium => "Medium",
            Difficulty::Hard => "Hard",
        }
    }
}

/// A task as Tables 3 and 11 describe it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedTask {
    /// The task's name in the checkout.
    pub task: String,
    /// Its name in Table 3.
    pub paper_name: String,
    /// The framework column of Table 3.
    pub framework: String,
    /// Declared APIs (Table 3).
    pub apis: u32,
    /// Test cases (Table 3).
    pub tests: u32,
    /// Difficulty (Table 11).
    pub difficulty: Difficulty,
    /// Composite complexity score (Table 11).
    pub score: f64,
}

/// All published rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedGenesis {
    /// Table 18 (Pass@1).
    pub pass: Vec<PublishedPass>,
    /// Tables 16 and 17 (DSR and AC).
    pub dsr_ac: Vec<PublishedDsrAc>,
    /// Table 7 (DSR by language).
    pub dsr_by_language: Vec<PublishedDsrCount>,
    /// Table 12 (Java DSR by framework).
    pub dsr_by_framework: Vec<PublishedDsrCount>,
    /// Table 8.
    pub fine_tune: Vec<PublishedFineTune>,
    /// Tables 3 and 11, per task.
    pub tasks: Vec<PublishedTask>,
}

impl PublishedGenesis {
    /// The published description of `task`.
    pub fn task(&self, task: &str) -> Option<&PublishedTask> {
        self.tasks.iter().find(|t| t.task == task)
    }
}

/// Table 18, in printed order: method, model, Python, Java, in Table 4.
const PASS: [(&str, &str, f64, f64, bool); 32] = [
    ("DeepCode", "GPT-5 mini", 0.00, 0.00, false),
    ("DeepCode", "GPT-5.1", 0.81, 0.00, true),
    ("DeepCode", "Claude", 1.95, 0.85, true),
    ("DeepCode", "Qwen3-Coder 30B", 0.00, 0.00, false),
    ("DeepCode", "Qwen3", 0.00, 0.00, true),
    ("MS-Agent", "GPT-5 mini", 4.46, 1.71, false),
    ("MS-Agent", "GPT-5.1", 7.83, 4.76, true),
    ("MS-Agent", "Claude", 9.50, 5.95, true),
    ("MS-Agent", "Qwen3-Coder 30B", 4.12, 1.55, false),
    ("MS-Agent", "Qwen3", 3.56, 1.25, true),
    ("MetaGPT", "GPT-5 mini", 0.36, 0.00, false),
    ("MetaGPT", "GPT-5.1", 1.46, 1.14, true),
    ("MetaGPT", "Claude", 2.85, 2.10, true),
    ("MetaGPT", "Qwen3-Coder 30B", 0.28, 0.00, false),
    ("MetaGPT", "Qwen3", 0.15, 0.00, true),
    ("Qwen-Agent", "GPT-5 mini", 0.49, 5.14, false),
    ("Qwen-Agent", "GPT-5.1", 10.89, 6.29, true),
    ("Qwen-Agent", "Claude", 12.65, 7.80, true),
    ("Qwen-Agent", "Qwen3-Coder 30B", 0.42, 4.85, false),
    ("Qwen-Agent", "Qwen3", 0.35, 4.12, true),
    ("Antigravity", "Gemini 3 Pro", 5.70, 5.11, false),
    ("Antigravity", "Gemini 3 Flash", 4.85, 4.60, false),
    ("Antigravity", "GPT-OSS 120B", 3.45, 2.98, false),
    ("Antigravity", "Claude", 19.17, 17.82, true),
    ("Cursor", "Auto", 1.85, 2.29, false),
    ("Cursor", "GPT-4.1", 0.00, 0.00, false),
    ("Cursor", "Gemini 3 Flash", 4.12, 4.05, false),
    ("Cursor", "Claude", 22.15, 20.10, true),
    ("Copilot", "GPT-5 mini", 1.25, 4.57, false),
    ("Copilot", "Grok Code Fast 1", 1.50, 3.12, false),
    ("Copilot", "GPT-5.1-Codex", 1.67, 5.89, false),
    ("Copilot", "Claude", 23.67, 21.45, true),
];

/// Tables 16 and 17 in printed order: kind, method, model, Java DSR, Java
/// AC, Python DSR, Python AC.
const DSR_AC: [(SystemKind, &str, &str, [f64; 4]); 36] = [
    (
        SystemKind::Agent,
        "DeepCode",
        "GPT-5 mini",
        [12.50, 5.17, 0.00, 28.70],
    ),
    (
        SystemKind::Agent,
        "DeepCode",
        "GPT-5.1",
        [0.00, 0.00, 4.55, 26.96],
    ),
    (
        SystemKind::Agent,
        "DeepCode",
        "claude-haiku-4.5",
        [25.00, 6.90, 13.64, 33.04],
    ),
    (
        SystemKind::Agent,
        "DeepCode",
        "claude-sonnet-4.5",
        [28.50, 10.50, 16.50, 36.00],
    ),
    (
        SystemKind::Agent,
        "DeepCode",
        "Qwen3-30B",
        [0.00, 1.50, 0.00, 12.00],
    ),
    (
        SystemKind::Agent,
        "DeepCode",
        "Qwen3-Coder-30B",
        [2.50, 2.80, 2.27, 18.50],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "GPT-5 mini",
        [25.00, 17.24, 4.55, 60.87],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "GPT-5.1",
        [37.50, 47.41, 18.18, 65.22],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "claude-haiku-4.5",
        [12.50, 62.93, 9.09, 66.09],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "claude-sonnet-4.5",
        [16.00, 66.50, 12.00, 69.00],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "Qwen3-30B",
        [10.00, 15.50, 2.27, 55.00],
    ),
    (
        SystemKind::Agent,
        "MS-Agent",
        "Qwen3-Coder-30B",
        [15.00, 25.00, 4.55, 58.00],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "GPT-5 mini",
        [0.00, 44.83, 0.00, 67.82],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "GPT-5.1",
        [62.50, 68.10, 4.55, 70.43],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "claude-haiku-4.5",
        [50.00, 70.69, 9.09, 69.57],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "claude-sonnet-4.5",
        [54.00, 74.14, 13.00, 73.04],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "Qwen3-30B",
        [0.00, 40.00, 0.00, 60.00],
    ),
    (
        SystemKind::Agent,
        "MetaGPT",
        "Qwen3-Coder-30B",
        [0.00, 42.50, 0.00, 65.00],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "GPT-5 mini",
        [12.50, 58.62, 4.55, 60.00],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "GPT-5.1",
        [25.00, 41.38, 13.64, 37.39],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "claude-haiku-4.5",
        [25.00, 56.03, 13.64, 56.52],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "claude-sonnet-4.5",
        [28.00, 60.00, 17.00, 60.50],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "Qwen3-30B",
        [7.50, 35.00, 2.27, 50.00],
    ),
    (
        SystemKind::Agent,
        "Qwen-Agent",
        "Qwen3-Coder-30B",
        [12.50, 45.00, 4.55, 55.00],
    ),
    (
        SystemKind::Ide,
        "Copilot",
        "GPT-5 mini",
        [100.00, 67.24, 90.91, 70.43],
    ),
    (
        SystemKind::Ide,
        "Copilot",
        "GPT-5.1 Codex",
        [37.50, 73.28, 40.91, 71.30],
    ),
    (
        SystemKind::Ide,
        "Copilot",
        "Grok Code Fast 1",
        [12.50, 54.31, 9.09, 66.96],
    ),
    (
        SystemKind::Ide,
        "Copilot",
        "claude-sonnet-4.5",
        [62.50, 68.10, 95.45, 69.57],
    ),
    (
        SystemKind::Ide,
        "Antigravity",
        "Gemini 3 Pro",
        [50.00, 68.10, 0.00, 70.43],
    ),
    (
        SystemKind::Ide,
        "Antigravity",
        "Gemini 3 Flash",
        [37.50, 60.34, 4.55, 65.22],
    ),
    (
        SystemKind::Ide,
        "Antigravity",
        "GPT-OSS 120B",
        [12.50, 34.48, 0.00, 43.48],
    ),
    (
        SystemKind::Ide,
        "Antigravity",
        "claude-sonnet-4.5",
        [50.00, 27.59, 13.64, 60.00],
    ),
    (
        SystemKind::Ide,
        "Cursor",
        "Auto",
        [25.00, 25.86, 9.09, 26.09],
    ),
    (
        SystemKind::Ide,
        "Cursor",
        "GPT-4.1",
        [0.00, 0.00, 0.00, 0.00],
    ),
    (
        SystemKind::Ide,
        "Cursor",
        "Gemini 3 Flash",
        [37.50, 56.03, 9.09, 60.87],
    ),
    (
        SystemKind::Ide,
        "Cursor",
        "claude-sonnet-4.5",
        [75.00, 68.97, 68.18, 73.91],
    ),
];

/// Table 3 and Table 11 per task: checkout name, Table 3 name, framework
/// column, APIs, tests, difficulty, Table 11 score. `UserManagement_2` is
/// Table 3's "UserManagement Lite" (the one remaining user-system task).
const TASKS: [(&str, &str, &str, u32, u32, Difficulty, f64); 30] = [
    (
        "django-rest-framework-crud",
        "django-rest-framework-crud",
        "Django REST",
        10,
        9,
        Difficulty::Easy,
        3.20,
    ),
    ("eve", "eve", "Eve/Flask", 6, 8, Difficulty::Medium, 4.10),
    ("flask", "flask", "Flask", 3, 7, Difficulty::Easy, 2.40),
    (
        "rock-paper-scissors-flask",
        "rock-paper-scissors-flask",
        "Flask",
        3,
        5,
        Difficulty::Easy,
        2.00,
    ),
    (
        "SimpleFastPyAPI",
        "SimpleFastPyAPI",
        "FastAPI",
        5,
        6,
        Difficulty::Easy,
        3.00,
    ),
    (
        "synapse",
        "synapse",
        "Synapse",
        10,
        5,
        Difficulty::Medium,
        4.80,
    ),
    (
        "Blog",
        "Blog",
        "Django/FastAPI",
        11,
        17,
        Difficulty::Medium,
        6.10,
    ),
    (
        "Chatroom",
        "Chatroom",
        "Flask/FastAPI",
        9,
        9,
        Difficulty::Easy,
        2.70,
    ),
    (
        "Customization",
        "Customization",
        "FastAPI",
        10,
        64,
        Difficulty::Hard,
        9.50,
    ),
    (
        "Data_Rank_Searcher",
        "Data Rank Searcher",
        "Flask/FastAPI",
        4,
        33,
        Difficulty::Medium,
        5.10,
    ),
    (
        "File_Relay",
        "File Relay",
        "Flask/FastAPI",
        10,
        46,
        Difficulty::Hard,
        10.00,
    ),
    (
        "GameBackend",
        "GameBackend",
        "Flask/FastAPI",
        10,
        59,
        Difficulty::Hard,
        9.10,
    ),
    (
        "javalin-online-judge",
        "Javalin-online-judge",
        "Javalin",
        19,
        23,
        Difficulty::Medium,
        5.60,
    ),
    (
        "javalin-task-manager",
        "Javalin-task-manager",
        "Javalin",
        24,
        16,
        Difficulty::Medium,
        5.10,
    ),
    (
        "javalin-user-auth-platform",
        "Javalin-user-auth-platform",
        "Javalin",
        13,
        52,
        Difficulty::Hard,
        7.10,
    ),
    (
        "micronaut-ci-status",
        "Micronaut-ci-status",
        "Micronaut",
        8,
        26,
        Difficulty::Medium,
        4.70,
    ),
    (
        "quarkus-blog-cms",
        "Quarkus-blog-cms",
        "Quarkus",
        29,
        16,
        Difficulty::Medium,
        5.60,
    ),
    (
        "spark-dashboard-backend",
        "Spark-dashboard-backend",
        "Spark",
        25,
        16,
        Difficulty::Medium,
        5.60,
    ),
    (
        "spring-boot-course-scheduling",
        "Spring-boot-course-scheduling",
        "Spring Boot",
        45,
        19,
        Difficulty::Medium,
        6.60,
    ),
    (
        "springboot-chat-gateway",
        "Springboot-chat-gateway",
        "Spring Boot",
        15,
        13,
        Difficulty::Medium,
        5.10,
    ),
    (
        "mail_service",
        "Mail Service",
        "Flask/FastAPI",
        4,
        55,
        Difficulty::Hard,
        8.60,
    ),
    (
        "Multilingual",
        "Multilingual",
        "Flask",
        4,
        33,
        Difficulty::Medium,
        5.30,
    ),
    (
        "simple-rbac-service",
        "Simple RBAC Service",
        "Flask/FastAPI",
        4,
        9,
        Difficulty::Easy,
        2.80,
    ),
    (
        "StructuredDataConvertor",
        "StructuredDataConverter",
        "Flask/FastAPI",
        3,
        38,
        Difficulty::Medium,
        6.40,
    ),
    (
        "TaskManagement",
        "TaskManagement",
        "Flask/FastAPI",
        6,
        44,
        Difficulty::Medium,
        6.30,
    ),
    (
        "Tic-Tac-Toe",
        "Tic-Tac-Toe",
        "Flask/FastAPI",
        6,
        7,
        Difficulty::Medium,
        5.70,
    ),
    (
        "Timer4Tasker",
        "Timer4Tasker",
        "Flask/FastAPI",
        9,
        53,
        Difficulty::Hard,
        9.00,
    ),
    (
        "UserManagement",
        "UserManagement",
        "FastAPI",
        8,
        69,
        Difficulty::Hard,
        9.50,
    ),
    (
        "UserManagement_2",
        "UserManagement Lite",
        "Flask/FastAPI",
        5,
        31,
        Difficulty::Medium,
        5.70,
    ),
    (
        "WebPan",
        "WebPan",
        "Flask/FastAPI",
        13,
        22,
        Difficulty::Hard,
        7.10,
    ),
];

/// Every published row, as printed in seed 003.
///
/// ```
/// let published = bench_harness::repogenesis::published_genesis();
/// let copilot = published.pass.iter().find(|r| r.method == "Copilot" && r.model == "Claude").unwrap();
/// assert_eq!((copilot.python, copilot.java), (23.67, 21.45));
/// assert_eq!(published.tasks.len(), 30);
/// ```
pub fn published_genesis() -> PublishedGenesis {
    let count = |name: &str, success: u32, total: u32, dsr: f64| PublishedDsrCount {
        name: name.to_owned(),
        success,
        total,
        dsr,
    };
    PublishedGenesis {
        pass: PASS
            .iter()
            .map(|(method, model, python, java, in_table_4)| PublishedPass {
                method: (*method).to_owned(),
                model: (*model).to_owned(),
                python: *python,
                java: *java,
                in_table_4: *in_table_4,
            })
            .collect(),
        dsr_ac: DSR_AC
            .iter()
            .flat_map(|(kind, method, model, [jd, ja, pd, pa])| {
                [(Language::Java, *jd, *ja), (Language::Python, *pd, *pa)].map(
                    |(language, dsr, ac)| PublishedDsrAc {
                        kind: *kind,
                        method: (*method).to_owned(),
                        model: (*model).to_owned(),
                        language,
                        dsr,
                        ac,
                    },
                )
            })
            .collect(),
        dsr_by_language: vec![
            count("Java", 40, 96, 41.67),
            count("Python", 75, 264, 28.41),
            count("Overall", 115, 360, 31.94),
        ],
        dsr_by_framework: vec![
            count("Spring Boot", 8, 8, 100.00),
            count("Javalin", 15, 16, 93.75),
            count("Micronaut", 2, 4, 50.00),
            count("Quarkus", 1, 4, 25.00),
            count("Spark", 1, 4, 25.00),
        ],
        fine_tune: vec![
            PublishedFineTune {
                model: "Qwen3-8B".into(),
                java: [0.00, 16.38, 0.00],
                python: [4.55, 30.43, 0.00],
            },
            PublishedFineTune {
                model: "GPT-5 mini".into(),
                java: [25.00, 17.24, 1.71],
                python: [4.55, 60.87, 4.46],
            },
            PublishedFineTune {
                model: "GenesisAgent-8B".into(),
                java: [37.12, 46.55, 1.69],
                python: [30.15, 63.42, 4.38],
            },
        ],
        tasks: TASKS
            .iter()
            .map(
                |(task, paper_name, framework, apis, tests, difficulty, score)| PublishedTask {
                    task: (*task).to_owned(),
                    paper_name: (*paper_name).to_owned(),
                    framework: (*framework).to_owned(),
                    apis: *apis,
                    tests: *tests,
                    difficulty: *difficulty,
                    score: *score,
                },
            )
            .collect(),
    }
}
