//! API Coverage (AC) exactly as the benchmark's scripts compute it: the
//! endpoints a README declares, found by regular expressions, and for each
//! whether the source files (test directories excluded) hold a routing
//! signature and the path. There are three variants of the rule in the
//! RepoGenesis repository, and each is reproduced:
//!
//! - `eval_harness/api_coverage.py` ([`AcRule::Harness`]:
//!   `extract_api_endpoints_from_readme`, `_build_search_patterns`,
//!   `search_implementation`, `calculate_repo_api_coverage`), the Docker
//!   harness's metric;
//! - `calculate_api_coverage.py` ([`AcRule::Legacy`]: the same three
//!   functions by name; substring search, a feature list fallback that
//!   keeps only the first feature);
//! - `calculate_api_coverage_agents.py` and `calculate_api_coverage_ide.py`
//!   ([`AcRule::Paper`]; identical rules: no feature fallback,
//!   no Express patterns), which produced the paper's AC tables; the paper
//!   aggregates them as implemented over declared endpoints summed over
//!   repositories (`calculate_ac_for_agents`).
//!
//! Python semantics that matter for exactness are reproduced: files are
//! decoded as UTF-8 with undecodable bytes dropped (`errors="ignore"`) and
//! universal newlines; `\s` and `str.strip()` include `\x1c`–`\x1f` as
//! Python's do; `Path.suffix` and `str.endswith` select files as each
//! script does. Two deliberate differences: only regular files are read
//! (a FIFO would block the Python scripts forever), and reading stops at
//! [`MAX_FILES`] files or [`MAX_FILE_BYTES`] bytes per file, which the
//! coverage result reports.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Files read per repository at most.
pub const MAX_FILES: usize = 20_000;
/// Bytes read per file at most.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// Which of the benchmark's AC scripts to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcRule {
    /// `eval_harness/api_coverage.py`.
    Harness,
    /// `calculate_api_coverage.py`.
    Legacy,
    /// `calculate_api_coverage_agents.py` / `calculate_api_coverage_ide.py`.
    Paper,
}

impl AcRule {
    /// Every rule.
    pub const ALL: [AcRule; 3] = [AcRule::Harness, AcRule::Legacy, AcRule::Paper];

    /// The script that defines the rule.
    pub fn source(self) -> &'static str {
        match self {
            AcRule::Harness => "eval_harness/api_coverage.py",
            AcRule::Legacy => "calculate_api_coverage.py",
            AcRule::Paper => "calculate_api_coverage_agents.py (= _ide.py)",
        }
    }
}

/// The method of a declared endpoint, or `FEATURE` for a feature-list item
/// taken when a README declares no endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ApiMethod {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
    /// PATCH.
    Patch,
    /// A feature name, not an HTTP endpoint.
    Feature,
}

impl ApiMethod {
    fn from_upper(text: &str) -> Option<Self> {
        Some(match text.to_ascii_uppercase().as_str() {
            "GET" => ApiMethod::Get,
            "POST" => ApiMethod::Post,
            "PUT" => ApiMethod::Put,
            "DELETE" => ApiMethod::Delete,
            "PATCH" => ApiMethod::Patch,
            _ => return None,
        })
    }

    /// `GET`, …, `FEATURE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiMethod::Get => "GET",
            ApiMethod::Post => "POST",
            ApiMethod::Put => "PUT",
            ApiMethod::Delete => "DELETE",
            ApiMethod::Patch => "PATCH",
            ApiMethod::Feature => "FEATURE",
        }
    }

    fn lower(self) -> &'static str {
        match self {
            ApiMethod::Get => "get",
            ApiMethod::Post => "post",
            ApiMethod::Put => "put",
            ApiMethod::Delete => "delete",
            ApiMethod::Patch => "patch",
            ApiMethod::Feature => "feature",
        }
    }

    /// Python's `str.capitalize()` / `str.title()` of the method.
    fn capitalized(self) -> &'static str {
        match self {
            ApiMethod::Get => "Get",
            ApiMethod::Post => "Post",
            ApiMethod::Put => "Put",
            ApiMethod::Delete => "Delete",
            ApiMethod::Patch => "Patch",
            ApiMethod::Feature => "Feature",
        }
    }
}

/// An endpoint a README declares, as a rule extracts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Endpoint {
    /// The method.
    pub method: ApiMethod,
    /// The path (or the feature's name).
    pub path: String,
    /// The text after the path on its line (pattern 1), else empty.
    pub description: String,
}

impl Endpoint {
    /// `GET /users` or `FEATURE User Login`.
    pub fn label(&self) -> String {
        format!("{} {}", self.method.as_str(), self.path)
    }
}

/// One rule's verdict on one repository.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The rule.
    pub rule: AcRule,
    /// Endpoints the README declares (`total_apis`).
    pub total: usize,
    /// Those found implemented (`implemented_apis`).
    pub implemented: usize,
    /// `implemented / total` rounded to four places as the harness stores
    /// it; 0 when the README declares nothing.
    pub score: f64,
    /// The endpoints not found, as labels.
    pub missing: Vec<String>,
    /// Why the numbers may not be the script's (file limits reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Python's `round(x, 4)` for the values AC takes (non-negative, small).
pub(crate) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// Text as Python's `open(..., encoding="utf-8", errors="ignore").read()`
/// gives it: undecodable bytes dropped, `\r\n` and `\r` turned into `\n`.
///
/// ```
/// let text = bench_harness::repogenesis::python_text(b"a\r\nb\rc\xff\xfed");
/// assert_eq!(text, "a\nb\ncd");
/// ```
pub fn python_text(bytes: &[u8]) -> String {
    let mut decoded = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                decoded.push_str(valid);
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                decoded.push_str(std::str::from_utf8(valid).unwrap_or_default());
                // Python's decoder skips the same maximal invalid prefix.
                let skip = e.error_len().unwrap_or(after.len());
                rest = &after[skip.min(after.len())..];
            }
        }
    }
    if !decoded.contains('\r') {
        return decoded;
    }
    let mut out = String::with_capacity(decoded.len());
    let mut chars = decoded.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// Python's `str.isspace()`: Unicode `White_Space` plus `\x1c`–`\x1f`.
fn py_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// Python's `\s` in a `str` pattern.
const WS: &str = r"[\s\x1C-\x1F]";

/// `pattern1` of both scripts: `METHOD /path - description`.
fn explicit_pattern(rule: AcRule) -> &'static Regex {
    // api_coverage.py: r"(GET|POST|PUT|DELETE|PATCH)\s+(/[^\s\-:]+)\s*[-:]?\s*(.+?)(?:\n|$)", re.IGNORECASE
    static HARNESS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)(GET|POST|PUT|DELETE|PATCH){WS}+(/[^\s\x1C-\x1F\-:]+){WS}*[-:]?{WS}*(.+?)(?:\n|$)"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    // calculate_api_coverage*.py: r'(GET|POST|PUT|DELETE|PATCH)\s+(/[^\s\-]+)\s*[-:]?\s*(.+?)(?:\n|$)', re.IGNORECASE
    static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)(GET|POST|PUT|DELETE|PATCH){WS}+(/[^\s\x1C-\x1F\-]+){WS}*[-:]?{WS}*(.+?)(?:\n|$)"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    match rule {
        AcRule::Harness => &HARNESS,
        AcRule::Legacy | AcRule::Paper => &LEGACY,
    }
}

fn table_pattern(rule: AcRule) -> &'static Regex {
    // api_coverage.py: r"\|\s*(GET|POST|PUT|DELETE|PATCH)\s*\|\s*`?(/[^|`]+?)`?\s*\|", re.IGNORECASE
    static HARNESS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\|{WS}*(GET|POST|PUT|DELETE|PATCH){WS}*\|{WS}*`?(/[^|`]+?)`?{WS}*\|"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    // calculate_api_coverage*.py: r'\|\s*(GET|POST|PUT|DELETE|PATCH)\s*\|\s*([^\|]+?)\s*\|', re.IGNORECASE
    static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"(?i)\|{WS}*(GET|POST|PUT|DELETE|PATCH){WS}*\|{WS}*([^|]+?){WS}*\|"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    match rule {
        AcRule::Harness => &HARNESS,
        AcRule::Legacy | AcRule::Paper => &LEGACY,
    }
}

fn code_block_pattern(rule: AcRule) -> &'static Regex {
    // api_coverage.py: r"```[^\n]*\n(.*?)```", re.DOTALL
    static HARNESS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)```[^\n]*\n(.*?)```")
            .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    // calculate_api_coverage*.py: r'```[\w]*\n(.*?)```', re.DOTALL; Python's
    // `\w` is letters, numbers and `_`.
    static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?s)```[\p{L}\p{N}_]*\n(.*?)```")
            .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    match rule {
        AcRule::Harness => &HARNESS,
        AcRule::Legacy | AcRule::Paper => &LEGACY,
    }
}

fn feature_pattern(rule: AcRule) -> Option<&'static Regex> {
    // api_coverage.py (no flags).
    static HARNESS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"[-*]{WS}+([A-Z][A-Za-z\s\x1C-\x1F]+(?:Check|Login|Register|Create|Update|Delete|Search|List|View|Get|Add|Remove|Edit|Manage|Upload|Download|Send|Receive))"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    // calculate_api_coverage.py (re.MULTILINE, which changes nothing here).
    static LEGACY: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(
            r"[-*]{WS}+([A-Z][A-Za-z\s\x1C-\x1F]+(?:Check|Login|Register|Create|Update|Delete|Get|List|Manage|Service|API))"
        ))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
    });
    match rule {
        AcRule::Harness => Some(&HARNESS),
        AcRule::Legacy => Some(&LEGACY),
        // The agents/IDE scripts have no feature fallback.
        AcRule::Paper => None,
    }
}

/// The endpoints `readme` (its text) declares under `rule`, in the
/// script's order, without duplicates (`METHOD:path` keys).
///
/// ```
/// use bench_harness::repogenesis::{AcRule, extract_endpoints};
///
/// let readme = "GET /health - liveness\n| POST | `/users` | create |\n- User Login\n";
/// let found = extract_endpoints(AcRule::Harness, readme);
/// let labels: Vec<String> = found.iter().map(|e| e.label()).collect();
/// assert_eq!(labels, ["GET /health", "POST /users"]);
/// ```
pub fn extract_endpoints(rule: AcRule, readme: &str) -> Vec<Endpoint> {
    let explicit = explicit_pattern(rule);
    let mut endpoints: Vec<Endpoint> = Vec::new();
    let from_explicit = |m: &regex::Captures<'_>| -> Option<Endpoint> {
        let method = ApiMethod::from_upper(m.get(1)?.as_str())?;
        let raw = py_strip(m.get(2)?.as_str());
        let path = match rule {
            // `.strip().rstrip("`").rstrip("*")`
            AcRule::Harness => raw.trim_end_matches('`').trim_end_matches('*'),
            AcRule::Legacy | AcRule::Paper => raw,
        };
        Some(Endpoint {
            method,
            path: path.to_owned(),
            description: py_strip(m.get(3).map_or("", |d| d.as_str())).to_owned(),
        })
    };
    for m in explicit.captures_iter(readme) {
        endpoints.extend(from_explicit(&m));
    }
    for m in table_pattern(rule).captures_iter(readme) {
        let (Some(method), Some(path)) = (
            m.get(1).and_then(|g| ApiMethod::from_upper(g.as_str())),
            m.get(2),
        ) else {
            continue;
        };
        let path = py_strip(path.as_str());
        let path = match rule {
            AcRule::Harness => path.to_owned(),
            AcRule::Legacy | AcRule::Paper => {
                if !(path.starts_with('/') || path.starts_with("`/")) {
                    continue;
                }
                py_strip(path.trim_matches('`')).to_owned()
            }
        };
        endpoints.push(Endpoint {
            method,
            path,
            description: String::new(),
        });
    }
    for block in code_block_pattern(rule).captures_iter(readme) {
        let Some(body) = block.get(1) else { continue };
        for m in explicit.captures_iter(body.as_str()) {
            endpoints.extend(from_explicit(&m));
        }
    }
    let mut unique = dedupe(endpoints);
    if let Some(features) = feature_pattern(rule) {
        // The harness adds every feature when no endpoint was found; the
        // legacy script checks `len(endpoints) == 0` inside its loop, so
        // only the first feature gets in.
        if unique.is_empty() {
            let mut found = Vec::new();
            for m in features.captures_iter(readme) {
                let Some(feature) = m.get(1) else { continue };
                let feature = py_strip(feature.as_str()).to_owned();
                found.push(Endpoint {
                    method: ApiMethod::Feature,
                    path: feature.clone(),
                    description: feature,
                });
                if rule == AcRule::Legacy {
                    break;
                }
            }
            unique = dedupe(found);
        }
    }
    unique
}

fn dedupe(endpoints: Vec<Endpoint>) -> Vec<Endpoint> {
    let mut seen = std::collections::HashSet::new();
    endpoints
        .into_iter()
        .filter(|e| seen.insert((e.method, e.path.clone())))
        .collect()
}

/// The source files a rule searches, read once.
#[derive(Debug, Clone, Default)]
pub struct SourceFiles {
    texts: Vec<String>,
    note: Option<String>,
}

/// `EXCLUDED_DIRS` of `eval_harness/constants.py` (route coverage prunes
/// the same).
pub(super) const HARNESS_EXCLUDED: [&str; 14] = [
    ".git",
    "__pycache__",
    "node_modules",
    "venv",
    ".venv",
    "target",
    "build",
    ".pytest_cache",
    "dist",
    "egg-info",
    "test",
    "tests",
    ".idea",
    ".vscode",
];
/// The directories `calculate_api_coverage*.py` prune.
const LEGACY_EXCLUDED: [&str; 10] = [
    ".git",
    "__pycache__",
    "node_modules",
    "venv",
    ".venv",
    "target",
    "build",
    "test",
    "tests",
    ".pytest_cache",
];
/// `SOURCE_EXTENSIONS`, and the scripts' `extensions`.
const EXTENSIONS: [&str; 5] = [".py", ".java", ".js", ".ts", ".kt"];

/// pathlib's `PurePath.suffix` (Python 3.11).
fn path_suffix(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[i..],
        _ => "",
    }
}

impl SourceFiles {
    /// Walks `repo` as the rule's `os.walk` does (directories pruned by
    /// name, symbolic links to directories not followed) and reads the
    /// files it selects.
    pub fn read(rule: AcRule, repo: &Path) -> Self {
        let excluded: &[&str] = match rule {
            AcRule::Harness => &HARNESS_EXCLUDED,
            AcRule::Legacy | AcRule::Paper => &LEGACY_EXCLUDED,
        };
        let selected = |name: &str| match rule {
            AcRule::Harness => EXTENSIONS.contains(&path_suffix(name)),
            AcRule::Legacy | AcRule::Paper => EXTENSIONS.iter().any(|ext| name.ends_with(ext)),
        };
        let mut files = SourceFiles::default();
        let mut stack = vec![repo.to_path_buf()];
        let mut truncated = Vec::new();
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if !excluded.contains(&name.as_str()) {
                        stack.push(entry.path());
                    }
                    continue;
                }
                if !selected(&name) {
                    continue;
                }
                // Regular files, and links to them (os.walk lists links as files
                // and the scripts read through them).
                let path = entry.path();
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if !meta.is_file() {
                    continue;
                }
                if files.texts.len() >= MAX_FILES {
                    files.note = Some(format!("only the first {MAX_FILES} source files were read"));
                    return files;
                }
                let bytes = match read_capped(&path) {
                    Ok(bytes) => bytes,
                    Err(_) => continue,
                };
                if meta.len() > MAX_FILE_BYTES {
                    truncated.push(name);
                }
                files.texts.push(python_text(&bytes));
            }
        }
        if !truncated.is_empty() {
            files.note = Some(format!(
                "read only the first {} MiB of {}",
                MAX_FILE_BYTES >> 20,
                truncated.join(", ")
            ));
        }
        files
    }

    /// How many files were read.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// No file was read.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `_build_search_patterns` of `eval_harness/api_coverage.py`, as one
/// regex (the patterns are tried with `any`, so their union is the same test).
fn harness_signature(method: ApiMethod) -> Regex {
    let m = method.lower();
    let up = method.as_str();
    let cap = method.capitalized();
    let patterns = [
        format!(r"@app\.{m}{WS}*\("),
        format!(r"@router\.{m}{WS}*\("),
        format!(r"@bp\.{m}{WS}*\("),
        format!(r"@.*\.{m}{WS}*\("),
        format!(r#"methods{WS}*={WS}*\[.*?"{up}""#),
        format!(r"app\.{m}{WS}*\("),
        format!(r"router\.{m}{WS}*\("),
        format!(r"@{cap}Mapping"),
        format!(r"@RequestMapping.*method{WS}*={WS}*RequestMethod\.{up}"),
        format!(r"\.{m}{WS}*\("),
        format!(r"Spark\.{m}{WS}*\("),
        format!(r"@{cap}{WS}*\("),
        format!(r"@{up}{WS}*$"),
    ];
    let joined = patterns
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!("(?i){joined}"))
        .unwrap_or_else(|e| unreachable!("invalid built-in pattern: {e}"))
}

/// Python's `re.sub(r"(?<=[a-z])(?=[A-Z])", "_", feature)`.
fn underscore_camel_humps(feature: &str) -> String {
    let mut out = String::with_capacity(feature.len() + 4);
    let mut previous: Option<char> = None;
    for c in feature.chars() {
        if previous.is_some_and(|p| p.is_ascii_lowercase()) && c.is_ascii_uppercase() {
            out.push('_');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// Replaces each run of Python whitespace with `_` (`re.sub(r"\s+", "_", s)`).
fn underscore_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in text.chars() {
        if py_isspace(c) {
            if !in_space {
                out.push('_');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// Whether `rule` finds `endpoint` implemented in `files`.
pub fn is_implemented(rule: AcRule, files: &SourceFiles, endpoint: &Endpoint) -> bool {
    match rule {
        AcRule::Harness => harness_implemented(files, endpoint),
        AcRule::Legacy | AcRule::Paper => legacy_implemented(rule, files, endpoint),
    }
}

/// `search_implementation` of `eval_harness/api_coverage.py`.
fn harness_implemented(files: &SourceFiles, endpoint: &Endpoint) -> bool {
    let path = endpoint.path.as_str();
    if endpoint.method == ApiMethod::Feature {
        let snake = underscore_spaces(&underscore_camel_humps(path).to_lowercase());
        let concatenated = path.replace(' ', "").to_lowercase();
        let lower = path.to_lowercase();
        let literals = [snake, concatenated, lower];
        let joined = literals
            .iter()
            .map(|l| regex::escape(l))
            .collect::<Vec<_>>()
            .join("|");
        let Ok(pattern) = Regex::new(&format!("(?i){joined}")) else {
            return false;
        };
        return files.texts.iter().any(|text| pattern.is_match(text));
    }
    let signature = harness_signature(endpoint.method);
    let parts: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|p| p.chars().count() > 3 && !p.starts_with('{') && !p.starts_with('<'))
        .collect();
    files.texts.iter().any(|text| {
        signature.is_match(text)
            && (text.contains(path) || parts.iter().any(|part| text.contains(part)))
    })
}

/// `search_implementation` of `calculate_api_coverage.py` (`Legacy`) and
/// of `calculate_api_coverage_agents.py` / `_ide.py` (`Paper`).
fn legacy_implemented(rule: AcRule, files: &SourceFiles, endpoint: &Endpoint) -> bool {
    let path = endpoint.path.as_str();
    let method = endpoint.method;
    let clean: String = path
        .chars()
        .filter(|c| !matches!(c, '{' | '}' | '<' | '>' | ':'))
        .collect();
    let parts: Vec<&str> = clean
        .split('/')
        .filter(|p| !p.is_empty() && !p.starts_with(':'))
        .collect();
    let mut patterns: Vec<String> = Vec::new();
    if method == ApiMethod::Feature && rule == AcRule::Legacy {
        let lower = path.to_lowercase();
        patterns.push(lower.replace(' ', "_"));
        patterns.push(lower.replace(' ', ""));
    } else {
        let m = method.lower();
        let up = method.as_str();
        patterns.push(format!("@app.{m}"));
        patterns.push(format!("@router.{m}"));
        patterns.push(format!("@bp.{m}"));
        patterns.push(format!("methods=[\"{up}\""));
        patterns.push(format!("methods=['{up}'"));
        for part in &parts {
            patterns.push(format!("'{part}'"));
            patterns.push(format!("\"{part}\""));
        }
        if rule == AcRule::Legacy {
            patterns.push(format!("app.{m}"));
            patterns.push(format!("router.{m}"));
        }
        patterns.push(format!("@{}Mapping", method.capitalized()));
        patterns.extend(parts.iter().map(|p| (*p).to_owned()));
    }
    let feature = method == ApiMethod::Feature && rule == AcRule::Legacy;
    files.texts.iter().any(|text| {
        let signature = patterns
            .iter()
            .any(|p| !p.is_empty() && text.contains(p.as_str()));
        signature
            && (feature
                || text.contains(path)
                || parts
                    .iter()
                    .any(|part| part.chars().count() > 3 && text.contains(part)))
    })
}

/// `calculate_repo_api_coverage` under `rule`: the README at `readme`
/// (a missing one declares nothing) against the repository at `repo`.
pub fn api_coverage(rule: AcRule, readme: &Path, repo: &Path) -> Coverage {
    let text = std::fs::read(readme)
        .map(|b| python_text(&b))
        .unwrap_or_default();
    let endpoints = extract_endpoints(rule, &text);
    let files = SourceFiles::read(rule, repo);
    coverage_of(rule, &endpoints, &files)
}

/// The coverage of `endpoints` in `files`.
pub fn coverage_of(rule: AcRule, endpoints: &[Endpoint], files: &SourceFiles) -> Coverage {
    let mut missing = Vec::new();
    let mut implemented = 0;
    for endpoint in endpoints {
        if is_implemented(rule, files, endpoint) {
            implemented += 1;
        } else {
            missing.push(endpoint.label());
        }
    }
    let total = endpoints.len();
    Coverage {
        rule,
        total,
        implemented,
        score: if total == 0 {
            0.0
        } else {
            round4(implemented as f64 / total as f64)
        },
        missing,
        note: files.note.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn files(texts: &[&str]) -> SourceFiles {
        SourceFiles {
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
            note: None,
        }
    }

    #[test]
    fn python_text_drops_bad_bytes_and_normalises_newlines() {
        assert_eq!(python_text(b"x\r\r\ny"), "x\n\ny");
        assert_eq!(python_text(b"\xe2\x82A"), "A");
        assert_eq!(python_text("caf\u{e9}".as_bytes()), "caf\u{e9}");
    }

    #[test]
    fn suffixes_follow_pathlib() {
        assert_eq!(path_suffix("a.py"), ".py");
        assert_eq!(path_suffix(".py"), "");
        assert_eq!(path_suffix("a.tar.py"), ".py");
        assert_eq!(path_suffix("a."), "");
    }

    #[test]
    fn harness_paths_stop_at_colons_and_dashes() {
        let found = extract_endpoints(AcRule::Harness, "GET /api/items/:id\nPOST /a-b\n");
        let labels: Vec<String> = found.iter().map(Endpoint::label).collect();
        assert_eq!(labels, ["GET /api/items/", "POST /a"]);
        let legacy = extract_endpoints(AcRule::Legacy, "GET /api/items/:id - one\n");
        assert_eq!(legacy[0].path, "/api/items/:id");
        // The description needs a character: Python's backtracking takes it
        // from the path when the line has nothing after it, and so does this.
        let bare = extract_endpoints(AcRule::Legacy, "GET /api/items/:id\n");
        assert_eq!(
            (bare[0].path.as_str(), bare[0].description.as_str()),
            ("/api/items/:i", "d")
        );
    }

    #[test]
    fn legacy_keeps_only_the_first_feature() {
        let readme = "- User Login\n- File Upload Service\n";
        let legacy = extract_endpoints(AcRule::Legacy, readme);
        assert_eq!(legacy.len(), 1);
        assert_eq!(legacy[0].path, "User Login");
        let harness = extract_endpoints(AcRule::Harness, readme);
        let labels: Vec<String> = harness.iter().map(Endpoint::label).collect();
        assert_eq!(labels, ["FEATURE User Login", "FEATURE File Upload"]);
        assert!(extract_endpoints(AcRule::Paper, readme).is_empty());
    }

    #[test]
    fn harness_needs_a_signature_and_the_path_in_one_file() {
        let get = Endpoint {
            method: ApiMethod::Get,
            path: "/users/{id}".into(),
            description: String::new(),
        };
        assert!(is_implemented(
            AcRule::Harness,
            &files(&["@app.get('/users/{id}')"]),
            &get
        ));
        // Signature in one file, path in another.
        assert!(!is_implemented(
            AcRule::Harness,
            &files(&["@app.get('/x')", "users"]),
            &get
        ));
        // Any `.get(` call counts as a signature: the rule is that loose.
        assert!(is_implemented(
            AcRule::Harness,
            &files(&["d.get(k)  # see /users"]),
            &get
        ));
    }

    #[test]
    fn features_match_case_insensitively_in_the_harness() {
        let feature = Endpoint {
            method: ApiMethod::Feature,
            path: "UserCreate".into(),
            description: String::new(),
        };
        assert!(is_implemented(
            AcRule::Harness,
            &files(&["class USER_CREATE: pass"]),
            &feature
        ));
        assert!(!is_implemented(
            AcRule::Legacy,
            &files(&["class USER_CREATE: pass"]),
            &feature
        ));
        assert!(is_implemented(
            AcRule::Legacy,
            &files(&["class usercreate: pass"]),
            &feature
        ));
    }
}
