//! The implementation blueprint (seed 004 section 3.1.3): a typed,
//! self-contained plan the model writes from the segmented specification,
//! parsed strictly, repaired by asking again with the validation error, and
//! checked against what the specification states in so many words (its
//! endpoints and port, extracted without a model).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use repo_graph::{Endpoint, HttpMethod};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most files a blueprint may plan: a service of the benchmark's kind has
/// a handful; a plan of thousands is a runaway answer.
pub const MAX_FILES: usize = 200;

/// Most endpoints a blueprint may require.
pub const MAX_ENDPOINTS: usize = 500;

/// The plan every later phase works from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Blueprint {
    /// A short name for the project.
    pub project: String,
    /// What it is, in a few sentences.
    #[serde(default)]
    pub summary: String,
    /// The web service it implements, when it is one.
    #[serde(default)]
    pub service: Option<ServiceSpec>,
    /// Every file to write, with its purpose and interface.
    pub files: Vec<FilePlan>,
    /// Python requirements (`requirements.txt` lines).
    #[serde(default)]
    pub dependencies: Vec<String>,
    /// How the project is started.
    pub start: StartPlan,
    /// What to check once it is written, in plain words.
    #[serde(default)]
    pub verification: Vec<String>,
    /// The order files are written in: a file after those it depends on.
    #[serde(default)]
    pub build_order: Vec<String>,
    /// Where the blueprint came from.
    #[serde(default)]
    pub origin: BlueprintOrigin,
    /// What was added or corrected after the model wrote it, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrections: Vec<String>,
}

/// Who wrote a [`Blueprint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlueprintOrigin {
    /// The model (possibly after repairs).
    #[default]
    Model,
    /// Built from the specification's facts alone, because the model gave
    /// no valid blueprint.
    Facts,
}

/// Where a run's [`Blueprint`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlueprintSource {
    /// The model plans it (checked and corrected against the facts).
    #[default]
    Model,
    /// Built from the specification's facts ([`Blueprint::from_facts`])
    /// when it states endpoints, without a model call; the model's plan
    /// otherwise. For a model whose plan costs more than the run can
    /// spend: a planned blueprint restates every endpoint with examples,
    /// thousands of tokens at the few tokens a second of a CPU model.
    Facts,
}

/// A web service's contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceSpec {
    /// The port it listens on.
    pub port: u16,
    /// Every endpoint it must serve.
    #[serde(default)]
    pub endpoints: Vec<EndpointSpec>,
}

/// One required endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointSpec {
    /// The method.
    pub method: HttpMethod,
    /// The path, parameters in braces (`/users/{id}`).
    pub path: String,
    /// What it does.
    #[serde(default)]
    pub summary: String,
    /// A concrete path to call it with when `path` has parameters.
    #[serde(default)]
    pub example_path: Option<String>,
    /// Example query parameters of a successful call.
    #[serde(default)]
    pub query: Option<BTreeMap<String, Value>>,
    /// Example JSON body of a successful call.
    #[serde(default)]
    pub body: Option<Value>,
    /// Example JSON response of a successful call (its top-level keys are
    /// checked).
    #[serde(default)]
    pub response: Option<Value>,
    /// The status code of a successful call.
    #[serde(default = "ok_status")]
    pub status: u16,
    /// Error cases the specification names.
    #[serde(default)]
    pub errors: Vec<ErrorCase>,
    /// Where the requirement came from.
    #[serde(default)]
    pub source: RequirementSource,
}

fn ok_status() -> u16 {
    200
}

/// A failing call and the status it must get.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorCase {
    /// The status code.
    pub status: u16,
    /// When it happens, in words.
    #[serde(default)]
    pub when: String,
    /// Example query parameters that cause it.
    #[serde(default)]
    pub query: Option<BTreeMap<String, Value>>,
    /// Example JSON body that causes it.
    #[serde(default)]
    pub body: Option<Value>,
}

/// Who stated an endpoint requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequirementSource {
    /// The model's blueprint.
    #[default]
    Model,
    /// The specification, found by the deterministic extraction and missing
    /// from the model's blueprint.
    Specification,
}

/// One planned file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilePlan {
    /// Path relative to the repository root.
    pub path: String,
    /// Its responsibility, in one sentence.
    pub purpose: String,
    /// The classes, functions and constants it offers to other files.
    #[serde(default)]
    pub exports: Vec<String>,
    /// The planned files it imports from.
    #[serde(default)]
    pub depends_on: Vec<String>,
}

/// How the project starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartPlan {
    /// The command `start.sh` runs (in the foreground).
    pub command: String,
    /// Environment variables it needs.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// What the specification states without a model: the checks a blueprint
/// must agree with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecFacts {
    /// Endpoints it declares (`METHOD /path`).
    pub endpoints: Vec<Endpoint>,
    /// The port it names.
    pub port: Option<u16>,
    /// The web framework it names, if any (`flask`, `fastapi`, `django`).
    pub framework: Option<String>,
}

impl SpecFacts {
    /// Reads the facts of a specification.
    ///
    /// ```
    /// let facts = agent::generate::SpecFacts::of("The service listens on port 5000.\n\nGET /health\n\nPOST /echo\n");
    /// assert_eq!(facts.port, Some(5000));
    /// assert_eq!(facts.endpoints.len(), 2);
    /// ```
    pub fn of(spec: &str) -> SpecFacts {
        let lower = spec.to_ascii_lowercase();
        let framework = ["fastapi", "flask", "django"]
            .into_iter()
            .find(|f| lower.contains(f))
            .map(str::to_owned);
        SpecFacts {
            endpoints: context_pack::spec::declared_endpoints(spec),
            port: context_pack::spec::declared_port(spec),
            framework,
        }
    }
}

/// Why a blueprint was refused; shown to the model when it is asked again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlueprintError {
    /// The answer held no JSON object.
    #[error("the answer holds no JSON object; answer with one ```json block holding the blueprint")]
    NoJson,
    /// The JSON does not have the blueprint's shape.
    #[error("the JSON is not a valid blueprint: {0}")]
    Shape(String),
    /// The blueprint's content is inconsistent.
    #[error("the blueprint is inconsistent:\n- {}", .0.join("\n- "))]
    Invalid(Vec<String>),
}

/// Bytes of an answer read for a blueprint; a larger answer is cut there
/// (and then usually fails to parse, which the model is told).
pub const MAX_ANSWER_BYTES: usize = 512 * 1024;

/// Parses and validates a model's answer. Missing build-order entries are
/// filled from the dependencies (recorded in `corrections`); everything
/// else that is wrong is an error for the model to fix.
pub fn parse(answer: &str) -> Result<Blueprint, BlueprintError> {
    let answer = cut(answer, MAX_ANSWER_BYTES);
    let json = json_object(answer).ok_or(BlueprintError::NoJson)?;
    let quoted = quote_placeholders(json);
    let mut blueprint: Blueprint =
        serde_json::from_str(&quoted).map_err(|e| BlueprintError::Shape(e.to_string()))?;
    blueprint.origin = BlueprintOrigin::Model;
    blueprint.corrections.clear();
    if quoted != json {
        blueprint.corrections.push(
            "bare placeholders such as <int> (copied from the specification) were read as strings"
                .to_owned(),
        );
    }
    let replaced = sample_placeholders(&mut blueprint);
    if replaced > 0 {
        blueprint.corrections.push(format!(
            "{replaced} placeholder value(s) in the examples (\"<int>\", \"<string>\", ...) became sample values of their type"
        ));
    }
    validate(&mut blueprint)?;
    Ok(blueprint)
}

/// Most bytes of a bare placeholder (`<int>`, `<user name>`).
const MAX_PLACEHOLDER: usize = 40;

/// `json` with each bare `<...>` outside a string (`"length": <int>`, as
/// specifications write their examples and models copy them) made a JSON
/// string, so the rest of the answer can be read.
fn quote_placeholders(json: &str) -> String {
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len() + 16);
    let (mut in_string, mut escaped, mut copied) = (false, false, 0);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'<'
            && let Some(len) = json[i..]
                .bytes()
                .take(MAX_PLACEHOLDER)
                .position(|c| c == b'>')
            && json[i + 1..i + len]
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b' ' | b'_' | b'-' | b'.' | b'|'))
        {
            out.push_str(&json[copied..i]);
            out.push('"');
            out.push_str(&json[i..=i + len]);
            out.push('"');
            i += len + 1;
            copied = i;
            continue;
        }
        i += 1;
    }
    out.push_str(&json[copied..]);
    out
}

/// A sample value for a placeholder string of the examples (`"<int>"`,
/// `"<string>"`), by the type it names; `None` for any other string.
fn sample_for(text: &str) -> Option<Value> {
    let inner = text.strip_prefix('<')?.strip_suffix('>')?.trim();
    if inner.is_empty() || inner.len() > MAX_PLACEHOLDER {
        return None;
    }
    let lower = inner.to_ascii_lowercase();
    Some(match lower.as_str() {
        "int" | "integer" | "number" | "int64" | "long" => Value::from(2),
        "float" | "double" | "decimal" => Value::from(1.5),
        "bool" | "boolean" => Value::Bool(true),
        _ => Value::String("hello".to_owned()),
    })
}

/// Replaces the placeholder strings of the successful call's examples
/// (query, body, response) with [`sample_for`]'s values: sent as they
/// are, `a=<int>` would make the success call itself a bad request.
/// Returns how many were replaced.
fn sample_placeholders(blueprint: &mut Blueprint) -> usize {
    fn walk(value: &mut Value, count: &mut usize) {
        match value {
            Value::String(text) => {
                if let Some(sample) = sample_for(text) {
                    *value = sample;
                    *count += 1;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, count)),
            Value::Object(map) => map.values_mut().for_each(|v| walk(v, count)),
            _ => {}
        }
    }
    let mut count = 0;
    let Some(service) = blueprint.service.as_mut() else {
        return 0;
    };
    // Only the successful call's examples: an error case's input is meant
    // to be wrong, and a placeholder there is as wrong as any value.
    for e in &mut service.endpoints {
        for query in e.query.iter_mut() {
            query.values_mut().for_each(|v| walk(v, &mut count));
        }
        for value in e.body.iter_mut().chain(e.response.iter_mut()) {
            walk(value, &mut count);
        }
    }
    count
}

/// The longest prefix of `text` of at most `max` bytes on a char boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

/// The JSON object of an answer: a fenced `json` block's (or a block that
/// opens with `{`), else the text from the first `{` to the last `}`.
fn json_object(answer: &str) -> Option<&str> {
    if let Some(block) = context_pack::markdown::fenced_blocks(answer)
        .into_iter()
        .find(|b| b.info.eq_ignore_ascii_case("json") || b.body.trim_start().starts_with('{'))
    {
        return Some(block.body.trim());
    }
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    (end > start).then(|| &answer[start..=end])
}

/// A path a blueprint may plan: relative, normal, inside the repository,
/// not in the agent's own directory.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("an empty path".into());
    }
    if path.len() > 200 {
        return Err(format!(
            "path `{}…` is longer than 200 bytes",
            cut(path, 40)
        ));
    }
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err(format!(
            "path `{path}` must be relative, with `/` separators"
        ));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Err(format!(
            "path `{path}` must not have empty, `.` or `..` parts"
        ));
    }
    if parts[0] == ".repo-agent" || parts[0] == ".git" {
        return Err(format!(
            "path `{path}` is in a directory the agent keeps for itself"
        ));
    }
    if path.chars().any(char::is_control) {
        return Err("a path with control characters".into());
    }
    Ok(())
}

fn validate(blueprint: &mut Blueprint) -> Result<(), BlueprintError> {
    let mut problems = Vec::new();
    if blueprint.files.is_empty() {
        problems.push("`files` is empty: plan every file of the repository".to_owned());
    }
    if blueprint.files.len() > MAX_FILES {
        problems.push(format!(
            "{} files planned; at most {MAX_FILES}",
            blueprint.files.len()
        ));
    }
    let mut paths: BTreeSet<String> = BTreeSet::new();
    for file in &blueprint.files {
        if let Err(e) = check_path(&file.path) {
            problems.push(e);
        }
        if !paths.insert(file.path.clone()) {
            problems.push(format!("`{}` is planned twice", file.path));
        }
    }
    // A `depends_on` that names no planned file (a package such as
    // `flask`, a directory such as `app`) only orders the writing and
    // picks memory entries: it is dropped, and the drop recorded, rather
    // than the whole plan refused.
    let mut corrections = Vec::new();
    for file in &mut blueprint.files {
        let path = file.path.clone();
        file.depends_on.retain(|dep| {
            let known = paths.contains(dep.as_str());
            if !known {
                corrections.push(format!(
                    "`{path}` listed `{dep}` in depends_on, which is not a planned file: dropped"
                ));
            }
            known
        });
    }
    if blueprint.start.command.trim().is_empty() {
        problems.push("`start.command` is empty".into());
    }
    if let Some(service) = &blueprint.service {
        if service.port == 0 {
            problems.push("`service.port` is 0".into());
        }
        if service.endpoints.len() > MAX_ENDPOINTS {
            problems.push(format!("more than {MAX_ENDPOINTS} endpoints"));
        }
        for e in &service.endpoints {
            if !e.path.starts_with('/') {
                problems.push(format!("endpoint path `{}` must start with `/`", e.path));
            }
            if !(100..=599).contains(&e.status)
                || e.errors.iter().any(|c| !(100..=599).contains(&c.status))
            {
                problems.push(format!(
                    "endpoint `{} {}` has a status code outside 100-599",
                    e.method.as_str(),
                    e.path
                ));
            }
        }
    }
    let needs_start = blueprint.service.is_some() && !paths.contains("start.sh");
    let needs_requirements =
        !blueprint.dependencies.is_empty() && !paths.contains("requirements.txt");
    let mut order = Vec::new();
    let mut ordered = BTreeSet::new();
    for path in &blueprint.build_order {
        if !paths.contains(path.as_str()) {
            corrections.push(format!(
                "`build_order` named `{path}`, which is not in `files`: dropped"
            ));
        } else if ordered.insert(path.clone()) {
            order.push(path.clone());
        } else {
            corrections.push(format!("`build_order` named `{path}` twice: once kept"));
        }
    }
    if !problems.is_empty() {
        return Err(BlueprintError::Invalid(problems));
    }
    blueprint.build_order = order;
    if needs_start {
        // Every service is started the same way (verification runs
        // `start.sh`); what it runs is the plan's own start command.
        blueprint.files.push(FilePlan {
            path: "start.sh".to_owned(),
            purpose: format!(
                "Starts the service in the foreground: `exec {}`.",
                blueprint.start.command.trim()
            ),
            exports: Vec::new(),
            depends_on: Vec::new(),
        });
        corrections.push("a service needs `start.sh`: added, running `start.command`".to_owned());
    }
    if needs_requirements {
        // The install check reads `requirements.txt`; without it the
        // planned dependencies are never installed (measured: the embedded
        // Qwen planned `dependencies: ["flask"]` and no such file).
        blueprint.files.insert(
            0,
            FilePlan {
                path: "requirements.txt".to_owned(),
                purpose: format!(
                    "The Python requirements, one per line: {}.",
                    blueprint.dependencies.join(", ")
                ),
                exports: Vec::new(),
                depends_on: Vec::new(),
            },
        );
        corrections
            .push("`dependencies` were planned without `requirements.txt`: added".to_owned());
    }
    blueprint.corrections.extend(corrections);
    let ordered: BTreeSet<String> = blueprint.build_order.iter().cloned().collect();
    let missing: Vec<String> = blueprint
        .files
        .iter()
        .filter(|f| !ordered.contains(f.path.as_str()))
        .map(|f| f.path.clone())
        .collect();
    if !missing.is_empty() {
        blueprint.corrections.push(format!(
            "added to the build order after their dependencies: {}",
            missing.join(", ")
        ));
        blueprint.build_order = complete_order(blueprint);
    }
    Ok(())
}

/// The build order with every planned file: the given order first, then
/// the missing files, each after the files it depends on (cycles broken in
/// plan order). Linear in files plus dependencies.
fn complete_order(blueprint: &Blueprint) -> Vec<String> {
    let index: HashMap<&str, &FilePlan> = blueprint
        .files
        .iter()
        .map(|f| (f.path.as_str(), f))
        .collect();
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut order: Vec<String> = Vec::with_capacity(blueprint.files.len());
    for path in &blueprint.build_order {
        if placed.insert(path.as_str()) {
            order.push(path.clone());
        }
    }
    // Depth-first with an explicit stack: a deep chain cannot overflow.
    for file in &blueprint.files {
        let mut stack: Vec<(&str, usize)> = vec![(file.path.as_str(), 0)];
        let mut visiting: BTreeSet<&str> = BTreeSet::new();
        while let Some((path, next)) = stack.pop() {
            if placed.contains(path) {
                continue;
            }
            visiting.insert(path);
            let deps = index.get(path).map_or(&[][..], |f| f.depends_on.as_slice());
            if let Some(dep) = deps.get(next) {
                stack.push((path, next + 1));
                if !placed.contains(dep.as_str()) && !visiting.contains(dep.as_str()) {
                    stack.push((dep.as_str(), 0));
                }
            } else {
                placed.insert(path);
                order.push(path.to_owned());
            }
        }
    }
    order
}

impl Blueprint {
    /// Makes the blueprint agree with what the specification states: every
    /// declared endpoint the model left out is added back as a requirement,
    /// and the stated port wins over the model's. Each change is recorded
    /// in `corrections`.
    pub fn reconcile(&mut self, facts: &SpecFacts) {
        if facts.endpoints.is_empty() && facts.port.is_none() {
            return;
        }
        let service = self.service.get_or_insert_with(|| ServiceSpec {
            port: facts.port.unwrap_or(8000),
            endpoints: Vec::new(),
        });
        if let Some(port) = facts.port
            && service.port != port
        {
            self.corrections.push(format!(
                "port {} replaced by {port}, the port the specification states",
                service.port
            ));
            service.port = port;
        }
        let mut added = Vec::new();
        for declared in &facts.endpoints {
            let present = service.endpoints.iter().any(|e| {
                e.method == declared.method && repo_graph::same_path(&e.path, &declared.path)
            });
            if !present && service.endpoints.len() < MAX_ENDPOINTS {
                service.endpoints.push(EndpointSpec {
                    method: declared.method,
                    path: declared.path.clone(),
                    summary: String::new(),
                    example_path: None,
                    query: None,
                    body: None,
                    response: None,
                    status: 200,
                    errors: Vec::new(),
                    source: RequirementSource::Specification,
                });
                added.push(declared.label());
            }
        }
        if !added.is_empty() {
            self.corrections.push(format!(
                "endpoints the specification declares and the blueprint left out, added: {}",
                added.join(", ")
            ));
        }
    }

    /// A blueprint from the specification's facts alone, for when the model
    /// gives no valid one: one application module serving every declared
    /// endpoint, its requirements and `start.sh`.
    pub fn from_facts(project: &str, facts: &SpecFacts) -> Blueprint {
        let fastapi = facts.framework.as_deref() == Some("fastapi");
        let port = facts.port.unwrap_or(if fastapi { 8000 } else { 5000 });
        let (dependencies, command) = if fastapi {
            (
                vec!["fastapi".to_owned(), "uvicorn".to_owned()],
                format!("python -m uvicorn app:app --host 0.0.0.0 --port {port}"),
            )
        } else {
            (vec!["flask".to_owned()], "python app.py".to_owned())
        };
        let file = |path: &str, purpose: &str, depends_on: &[&str]| FilePlan {
            path: path.to_owned(),
            purpose: purpose.to_owned(),
            exports: Vec::new(),
            depends_on: depends_on.iter().map(|d| (*d).to_owned()).collect(),
        };
        let mut blueprint = Blueprint {
            project: project.to_owned(),
            summary: String::new(),
            service: Some(ServiceSpec {
                port,
                endpoints: Vec::new(),
            }),
            files: vec![
                file("requirements.txt", "The Python requirements.", &[]),
                file(
                    "app.py",
                    // The plan has this one module: a small model otherwise
                    // imports a package layout it never writes. Measured
                    // (RepoGenesis Customization, tuning half, run 2):
                    // `from app.core import db, models` and `from
                    // app.services import ...` in a one-file plan; the service
                    // never started.
                    &format!(
                        "The whole web application in this one file, serving every endpoint \
                         on port {port}. There is no other module of the project to import: \
                         define every model, store and helper here (keep data in memory unless \
                         the specification names a database)."
                    ),
                    &[],
                ),
                file(
                    "start.sh",
                    "Starts the service in the foreground.",
                    &["app.py"],
                ),
            ],
            dependencies,
            start: StartPlan {
                command,
                env: BTreeMap::new(),
            },
            verification: vec!["every endpoint answers as specified".to_owned()],
            build_order: vec![
                "requirements.txt".into(),
                "app.py".into(),
                "start.sh".into(),
            ],
            origin: BlueprintOrigin::Facts,
            corrections: Vec::new(),
        };
        blueprint.reconcile(facts);
        blueprint
    }

    /// The plan of `path`.
    pub fn file(&self, path: &str) -> Option<&FilePlan> {
        self.files.iter().find(|f| f.path == path)
    }

    /// The files that plan to import `path` (its efferent couplings).
    pub fn dependents(&self, path: &str) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| f.depends_on.iter().any(|d| d == path))
            .map(|f| f.path.as_str())
            .collect()
    }

    /// The blueprint as the code-writing model sees it: compact text, not
    /// the JSON (fewer tokens, same content).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Blueprint: {}", self.project);
        if !self.summary.trim().is_empty() {
            let _ = writeln!(s, "{}", self.summary.trim());
        }
        if let Some(service) = &self.service {
            let _ = writeln!(s, "\n## Service (port {})", service.port);
            for e in &service.endpoints {
                let _ = write!(s, "- {} {}", e.method.as_str(), e.path);
                if !e.summary.is_empty() {
                    let _ = write!(s, ": {}", e.summary);
                }
                let _ = writeln!(s);
                if let Some(query) = &e.query {
                    let _ = writeln!(
                        s,
                        "  query: {}",
                        compact(&serde_json::to_value(query).unwrap_or_default())
                    );
                }
                if let Some(body) = &e.body {
                    let _ = writeln!(s, "  body: {}", compact(body));
                }
                let _ = write!(s, "  -> {}", e.status);
                if let Some(response) = &e.response {
                    let _ = write!(s, " {}", compact(response));
                }
                let _ = writeln!(s);
                for c in &e.errors {
                    let _ = writeln!(s, "  -> {} when {}", c.status, c.when);
                }
            }
        }
        let _ = writeln!(s, "\n## Files (in build order)");
        for path in &self.build_order {
            if let Some(f) = self.file(path) {
                let _ = write!(s, "- {}: {}", f.path, f.purpose);
                if !f.exports.is_empty() {
                    let _ = write!(s, " Exports: {}.", f.exports.join(", "));
                }
                if !f.depends_on.is_empty() {
                    let _ = write!(s, " Uses: {}.", f.depends_on.join(", "));
                }
                let _ = writeln!(s);
            }
        }
        if !self.dependencies.is_empty() {
            let _ = writeln!(s, "\n## Dependencies\n{}", self.dependencies.join(", "));
        }
        let _ = writeln!(
            s,
            "\n## Start\n`{}` (in start.sh, in the foreground)",
            self.start.command
        );
        for (k, v) in &self.start.env {
            let _ = writeln!(s, "- env {k}={v}");
        }
        s
    }
}

/// JSON on one line, cut at 300 characters.
fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        format!("{}…", cut(&text, 300))
    } else {
        text
    }
}

/// The blueprint's shape shown to the model for a specification with
/// these facts: [`SHAPE`] when it declares no endpoint; otherwise the same
/// shape with the specification's own port and endpoints already in it,
/// each to be completed. A small model copies the example it is shown (the
/// embedded Qwen copied `SHAPE`'s `/items/{id}` into RepoGenesis's flask
/// blueprint, three times), so the example it copies is the right one.
pub(super) fn shape_for(facts: &SpecFacts) -> String {
    if facts.endpoints.is_empty() {
        return SHAPE.to_owned();
    }
    let port = facts.port.unwrap_or(5000);
    let endpoints: Vec<String> = facts
        .endpoints
        .iter()
        .map(|e| {
            let method = e.method.as_str();
            let path = Value::String(e.path.clone()).to_string();
            let example_path = if e.path.contains(['{', '<', ':']) {
                ", \"example_path\": \"<the path with example values>\""
            } else {
                ""
            };
            let input = match e.method {
                HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch => {
                    "\"body\": {<an example JSON body of a successful call>}"
                }
                _ => "\"query\": {<example query parameters of a successful call, if any>}",
            };
            format!(
                "      {{\"method\": \"{method}\", \"path\": {path}{example_path}, \"summary\": \"<what it does>\",\n       \
                 {input}, \"response\": {{<the example JSON response>}}, \"status\": 200,\n       \
                 \"errors\": [{{\"status\": 400, \"when\": \"<when>\", \"body\": {{<input that causes it>}}}}]}}"
            )
        })
        .collect();
    format!(
        "{{\n  \"project\": \"short-name\",\n  \"summary\": \"<what the service does, in two sentences>\",\n  \
         \"service\": {{\n    \"port\": {port},\n    \"endpoints\": [\n{}\n    ]\n  }},\n  \
         \"files\": [\n    {{\"path\": \"app.py\", \"purpose\": \"<one sentence>\", \"exports\": [], \"depends_on\": []}}\n  ],\n  \
         \"dependencies\": [\"flask\"],\n  \"start\": {{\"command\": \"python app.py\", \"env\": {{}}}},\n  \
         \"verification\": [\"<what to check>\"],\n  \"build_order\": [\"app.py\"]\n}}",
        endpoints.join(",\n")
    )
}

/// The example of the blueprint's shape shown to the model.
pub const SHAPE: &str = r#"{
  "project": "short-name",
  "summary": "What the service does, in two sentences.",
  "service": {
    "port": 5000,
    "endpoints": [
      {"method": "POST", "path": "/items/{id}", "summary": "what it does",
       "example_path": "/items/1",
       "query": {"verbose": "1"}, "body": {"name": "x"},
       "response": {"id": 1, "name": "x"}, "status": 200,
       "errors": [{"status": 400, "when": "name is missing", "body": {}}]}
    ]
  },
  "files": [
    {"path": "app.py", "purpose": "one sentence", "exports": ["create_app()"], "depends_on": ["store.py"]}
  ],
  "dependencies": ["flask"],
  "start": {"command": "python app.py", "env": {}},
  "verification": ["what to check"],
  "build_order": ["store.py", "app.py"]
}"#;

#[cfg(test)]
mod tests {
    #[test]
    fn the_shape_shown_carries_the_specifications_own_port_and_endpoints() {
        let facts = SpecFacts::of("Port 5000.\n\nGET /health\n\nPOST /echo\n");
        let shape = shape_for(&facts);
        assert!(shape.contains(r#""method": "POST", "path": "/echo""#));
        assert!(shape.contains(r#""port": 5000"#));
        assert!(!shape.contains("/items"));
    }

    use super::*;

    fn minimal(files: &str, order: &str) -> String {
        format!(
            r#"Here it is:
```json
{{"project": "p", "files": {files}, "start": {{"command": "python app.py"}}, "build_order": {order}}}
```"#
        )
    }

    #[test]
    fn a_fenced_blueprint_parses_and_the_order_is_completed() {
        let answer = minimal(
            r#"[{"path": "app.py", "purpose": "app", "depends_on": ["store.py"]},
                {"path": "store.py", "purpose": "store"}]"#,
            "[]",
        );
        let b = parse(&answer).unwrap();
        assert_eq!(b.build_order, ["store.py", "app.py"]);
        assert_eq!(b.corrections.len(), 1);
        assert_eq!(b.origin, BlueprintOrigin::Model);
    }

    #[test]
    fn every_inconsistency_is_named_for_the_model() {
        let answer = minimal(
            r#"[{"path": "../x.py", "purpose": "a"}, {"path": "a.py", "purpose": "a", "depends_on": ["nope.py"]},
                {"path": "a.py", "purpose": "b"}]"#,
            r#"["ghost.py"]"#,
        );
        let err = parse(&answer).unwrap_err().to_string();
        for needle in ["`..`", "planned twice"] {
            assert!(err.contains(needle), "{needle} in {err}");
        }
        // What only orders the writing is corrected, not refused.
        let answer = minimal(
            r#"[{"path": "a.py", "purpose": "a", "depends_on": ["nope.py", "flask"]}]"#,
            r#"["ghost.py", "a.py", "a.py"]"#,
        );
        let b = parse(&answer).unwrap();
        assert!(b.files[0].depends_on.is_empty());
        assert_eq!(b.build_order, ["a.py"]);
        for needle in ["`nope.py`", "`flask`", "`ghost.py`", "twice"] {
            assert!(
                b.corrections.iter().any(|c| c.contains(needle)),
                "{needle} in {:?}",
                b.corrections
            );
        }
    }

    #[test]
    fn planned_paths_stay_inside_the_repository() {
        for bad in [
            "/etc/passwd",
            "../x.py",
            "a/../../x.py",
            "a//b.py",
            "./a.py",
            ".repo-agent/report.json",
            ".git/hooks/pre-commit",
            "a\\b.py",
            "a\0b.py",
            "a\nb.py",
            "",
        ] {
            assert!(check_path(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_path(&"a/".repeat(150)).is_err());
        for good in [
            "app.py",
            "pkg/__init__.py",
            "tests/test_api.py",
            ".env.example",
        ] {
            assert!(check_path(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn shapes_and_garbage_are_errors_not_panics() {
        assert_eq!(parse("no json here"), Err(BlueprintError::NoJson));
        assert!(matches!(
            parse("{\"project\": 3}"),
            Err(BlueprintError::Shape(_))
        ));
        assert_eq!(parse(&"{".repeat(100_000)), Err(BlueprintError::NoJson));
        assert!(matches!(
            parse(&format!("{{\"a\": {}}}", "[".repeat(100_000))),
            Err(BlueprintError::Shape(_))
        ));
        let huge = format!(
            "```json\n{{\"project\": \"{}\"}}\n```",
            "x".repeat(MAX_ANSWER_BYTES)
        );
        assert!(parse(&huge).is_err());
        // An unclosed fence (an answer cut by the output limit) still reads.
        let cut = "```json\n{\"project\": \"p\", \"files\": [{\"path\": \"a.py\", \"purpose\": \"a\"}], \"start\": {\"command\": \"x\"}}";
        assert!(parse(cut).is_ok());
    }

    #[test]
    fn a_service_needs_start_sh_and_sane_statuses() {
        let answer = r#"{"project": "p", "files": [{"path": "app.py", "purpose": "a"}],
            "service": {"port": 5000, "endpoints": [{"method": "GET", "path": "health", "status": 99}]},
            "start": {"command": "python app.py"}}"#;
        let err = parse(answer).unwrap_err().to_string();
        assert!(
            err.contains("must start with `/`") && err.contains("100-599"),
            "{err}"
        );
        // A service without `start.sh` gets one that runs its start command.
        let answer = r#"{"project": "p", "files": [{"path": "app.py", "purpose": "a"}],
            "service": {"port": 5000, "endpoints": [{"method": "GET", "path": "/health"}]},
            "start": {"command": "python app.py"}}"#;
        let b = parse(answer).unwrap();
        let start = b.file("start.sh").unwrap();
        assert!(start.purpose.contains("exec python app.py"), "{start:?}");
        assert_eq!(b.build_order, ["app.py", "start.sh"]);
    }

    #[test]
    fn declared_endpoints_and_port_win_over_the_model() {
        let answer = r#"{"project": "p", "files": [{"path": "app.py", "purpose": "a"}, {"path": "start.sh", "purpose": "s"}],
            "service": {"port": 8080, "endpoints": [{"method": "GET", "path": "/users/<id>"}]},
            "start": {"command": "python app.py"}}"#;
        let mut b = parse(answer).unwrap();
        let facts = SpecFacts::of("Port: 5000\n\nGET /users/{id}\n\nDELETE /users/{id}\n");
        b.reconcile(&facts);
        let service = b.service.as_ref().unwrap();
        assert_eq!(service.port, 5000);
        let labels: Vec<String> = service
            .endpoints
            .iter()
            .map(|e| format!("{} {} {:?}", e.method.as_str(), e.path, e.source))
            .collect();
        assert_eq!(
            labels,
            ["GET /users/<id> Model", "DELETE /users/{id} Specification"]
        );
        // The build order was completed, the port replaced, one endpoint added.
        assert_eq!(b.corrections.len(), 3, "{:?}", b.corrections);
    }

    #[test]
    fn the_facts_blueprint_serves_every_declared_endpoint() {
        let facts = SpecFacts::of("Flask service on port 5000.\n\nGET /health\n\nPOST /echo\n");
        let b = Blueprint::from_facts("svc", &facts);
        assert_eq!(b.origin, BlueprintOrigin::Facts);
        assert_eq!(b.service.as_ref().unwrap().endpoints.len(), 2);
        assert!(b.file("start.sh").is_some());
        let mut again = b.clone();
        assert!(validate(&mut again).is_ok());
    }

    #[test]
    fn a_long_dependency_chain_orders_without_recursion() {
        let n = 5_000;
        let files: Vec<FilePlan> = (0..n)
            .map(|i| FilePlan {
                path: format!("m{i}.py"),
                purpose: String::new(),
                exports: Vec::new(),
                depends_on: if i + 1 < n {
                    vec![format!("m{}.py", i + 1)]
                } else {
                    Vec::new()
                },
            })
            .collect();
        let b = Blueprint {
            project: "p".into(),
            summary: String::new(),
            service: None,
            files,
            dependencies: Vec::new(),
            start: StartPlan {
                command: "x".into(),
                env: BTreeMap::new(),
            },
            verification: Vec::new(),
            build_order: Vec::new(),
            origin: BlueprintOrigin::Model,
            corrections: Vec::new(),
        };
        let order = complete_order(&b);
        assert_eq!(order.len(), n);
        assert_eq!(order[0], format!("m{}.py", n - 1));
        // A cycle is broken, not looped on.
        let mut cyclic = b.clone();
        cyclic.files.truncate(2);
        cyclic.files[1].depends_on = vec!["m0.py".into()];
        assert_eq!(complete_order(&cyclic).len(), 2);
    }

    /// The embedded Qwen's blueprint for RepoGenesis's flask README,
    /// recorded: it copies the specification's `"length": <int>` (not
    /// JSON) and `"a": "<int>"` (a bad request if sent as it is).
    #[test]
    fn placeholders_copied_from_the_specification_become_sample_values() {
        let answer = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/generate/qwen-flask-blueprint-placeholders.md"
        ))
        .unwrap();
        assert!(answer.contains("\"length\": <int>"));
        let b = parse(&answer).unwrap();
        let service = b.service.as_ref().unwrap();
        let echo = &service.endpoints[1];
        assert_eq!(echo.body, Some(serde_json::json!({"message": "hello"})));
        assert_eq!(
            echo.response,
            Some(serde_json::json!({"message": "hello", "length": 2}))
        );
        let sum = &service.endpoints[2];
        let query: Vec<(&str, &Value)> = sum
            .query
            .as_ref()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        assert_eq!(query, [("a", &Value::from(2)), ("b", &Value::from(2))]);
        assert!(
            b.corrections[..2].iter().all(|c| c.contains("placeholder")),
            "{:?}",
            b.corrections
        );
        assert!(b.file("start.sh").is_some());
        let requirements = b.file("requirements.txt").unwrap();
        assert!(requirements.purpose.contains("flask"), "{requirements:?}");
        assert!(b.build_order.iter().any(|p| p == "requirements.txt"));
    }

    #[test]
    fn quoting_placeholders_leaves_strings_and_comparisons_alone() {
        let json =
            r#"{"a": <int>, "s": "x < y > z", "t": "<kept>", "e": "\"<q>\"", "l": [<a b>, 1]}"#;
        let quoted = quote_placeholders(json);
        assert_eq!(
            quoted,
            r#"{"a": "<int>", "s": "x < y > z", "t": "<kept>", "e": "\"<q>\"", "l": ["<a b>", 1]}"#
        );
        let parsed: Value = serde_json::from_str(&quoted).unwrap();
        assert_eq!(parsed["a"], "<int>");
        // Not a placeholder: left as it is (and the JSON stays invalid).
        assert_eq!(quote_placeholders("{\"a\": <{x}>}"), "{\"a\": <{x}>}");
    }
}
