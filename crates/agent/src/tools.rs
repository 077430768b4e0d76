//! The agent's tools: their JSON Schemas and their execution against the
//! real repository graph, context-pack's views and the sandbox.
//!
//! Every failure of a tool (a bad path, an unknown name, an edit that does
//! not match exactly once) becomes a [`ToolOutput`] with `is_error` set and a
//! message that tells the model what to do; nothing a model sends ends the
//! run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use context_pack::TokenCounter;
use context_pack::select::{self, SelectOptions};
use llm::{ToolCall, ToolDefinition};
use repo_graph::{EntityId, ModuleId, RepoGraph};
use sandbox::{PythonScript, Sandbox};
use serde_json::{Value, json};

/// Which tools are offered and how observations are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolOptions {
    /// Offer the exploration tools (search, code view, call and import
    /// graphs); off for the `--no-exploration-tools` ablation.
    pub exploration: bool,
    /// Pass observations through context-pack's information selection; off
    /// for the `--no-info-selection` ablation.
    pub info_selection: bool,
    /// The per-interaction limit and view parameters.
    pub select: SelectOptions,
}

impl Default for ToolOptions {
    fn default() -> Self {
        ToolOptions {
            exploration: true,
            info_selection: true,
            select: SelectOptions::default(),
        }
    }
}

/// What a tool call produced, as shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The observation.
    pub text: String,
    /// True when the call failed (the text says why).
    pub is_error: bool,
    /// The summary, when the tool was `finish`.
    pub finish: Option<String>,
    /// Tokens of `text`.
    pub tokens: usize,
    /// Time the tool took, in milliseconds.
    pub ms: u64,
}

/// The names of the exploration tools (removed by `--no-exploration-tools`).
pub const EXPLORATION_TOOLS: [&str; 7] = [
    "list_directory",
    "view_code",
    "search_code",
    "find_callers",
    "find_callees",
    "module_dependencies",
    "dependency_path",
];

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Every tool's definition, in a fixed order.
pub fn all_definitions() -> Vec<ToolDefinition> {
    let depth = json!({"type": "integer", "minimum": 1, "maximum": 5, "description": "How many call edges to follow (default 1)."});
    vec![
        ToolDefinition::new(
            "list_directory",
            "Show the directory tree under a path (ignoring what the repository ignores).",
            schema(
                json!({"path": {"type": "string", "description": "Absolute path, or relative to the working directory."},
                       "depth": {"type": "integer", "minimum": 1, "maximum": 6, "description": "Levels to show (default 2)."}}),
                &["path"],
            ),
        ),
        ToolDefinition::new(
            "view_code",
            "Show a repository file or entity (qualified name like pkg.mod.Class.method) as code: whole when it fits, else imports, signatures with line numbers and the bodies most relevant to the query.",
            schema(
                json!({"target": {"type": "string", "description": "A file path or a qualified name."},
                       "query": {"type": "string", "description": "What you are looking for, to choose which bodies to show."}}),
                &["target"],
            ),
        ),
        ToolDefinition::new(
            "view_file",
            "Show raw lines of any text file, with line numbers.",
            schema(
                json!({"path": {"type": "string"},
                       "start_line": {"type": "integer", "minimum": 1},
                       "end_line": {"type": "integer", "minimum": 1}}),
                &["path"],
            ),
        ),
        ToolDefinition::new(
            "search_code",
            "Search entity names, docstrings and source of the repository for keywords (or a regex); ranked hits with qualified names and locations.",
            schema(
                json!({"query": {"type": "string"},
                       "regex": {"type": "boolean", "description": "Treat the query as a regular expression over source lines (default false)."}}),
                &["query"],
            ),
        ),
        ToolDefinition::new(
            "find_callers",
            "Functions that call the named function or class, from the call graph.",
            schema(
                json!({"name": {"type": "string", "description": "Qualified or short name."}, "depth": depth.clone()}),
                &["name"],
            ),
        ),
        ToolDefinition::new(
            "find_callees",
            "Functions and classes the named function calls, from the call graph.",
            schema(
                json!({"name": {"type": "string", "description": "Qualified or short name."}, "depth": depth}),
                &["name"],
            ),
        ),
        ToolDefinition::new(
            "module_dependencies",
            "Internal modules a module imports, or the modules that import it.",
            schema(
                json!({"module": {"type": "string", "description": "Dotted module name or file path."},
                       "direction": {"type": "string", "enum": ["imports", "imported_by"]}}),
                &["module", "direction"],
            ),
        ),
        ToolDefinition::new(
            "dependency_path",
            "The shortest chain of imports from one module to another.",
            schema(
                json!({"from": {"type": "string"}, "to": {"type": "string"}}),
                &["from", "to"],
            ),
        ),
        ToolDefinition::new(
            "read_document",
            "Read a document, text or CSV/TSV file: whole when it fits, else the chunks most relevant to the query (tables get a preview).",
            schema(
                json!({"path": {"type": "string"}, "query": {"type": "string"}}),
                &["path"],
            ),
        ),
        ToolDefinition::new(
            "write_file",
            "Create or overwrite a file with this content (parent directories are created).",
            schema(
                json!({"path": {"type": "string"}, "content": {"type": "string"}}),
                &["path", "content"],
            ),
        ),
        ToolDefinition::new(
            "edit_file",
            "Replace the only occurrence of old_text in a file with new_text.",
            schema(
                json!({"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}}),
                &["path", "old_text", "new_text"],
            ),
        ),
        ToolDefinition::new(
            "run_python",
            "Run Python code or a script file in the sandbox, in the working directory.",
            schema(
                json!({"code": {"type": "string", "description": "Source to run (python -c)."},
                       "path": {"type": "string", "description": "A script file to run instead."},
                       "args": {"type": "array", "items": {"type": "string"}}}),
                &[],
            ),
        ),
        ToolDefinition::new(
            "run_shell",
            "Run a bash command in the sandbox, in the working directory.",
            schema(json!({"command": {"type": "string"}}), &["command"]),
        ),
        ToolDefinition::new(
            "finish",
            "End the task once the outputs are written and checked.",
            schema(
                json!({"summary": {"type": "string", "description": "What was done and where the outputs are."}}),
                &["summary"],
            ),
        ),
    ]
}

/// A tool failure: a message for the model.
struct Fail(String);

impl From<context_pack::Error> for Fail {
    fn from(e: context_pack::Error) -> Self {
        Fail(e.to_string())
    }
}

type ToolResult = Result<String, Fail>;

/// The tools of one episode, bound to the task's repositories, a working
/// directory and a sandbox.
///
/// Graph queries look through every repository, the first (the task's
/// primary repository) first: a qualified name or path is resolved in the
/// first repository that has it, and searches merge all of them.
pub struct Tools {
    graphs: Vec<RepoGraph>,
    work_dir: PathBuf,
    sandbox: Sandbox,
    counter: TokenCounter,
    options: ToolOptions,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let roots: Vec<&Path> = self.graphs.iter().map(RepoGraph::root).collect();
        f.debug_struct("Tools")
            .field("roots", &roots)
            .field("work_dir", &self.work_dir)
            .field("options", &self.options)
            .finish()
    }
}

impl Tools {
    /// Tools over the graphs of the task's repositories (the primary one
    /// first; at least one), running code in `sandbox` from `work_dir`.
    pub fn new(
        graphs: Vec<RepoGraph>,
        work_dir: impl Into<PathBuf>,
        sandbox: Sandbox,
        counter: TokenCounter,
        options: ToolOptions,
    ) -> Self {
        Tools {
            graphs,
            work_dir: work_dir.into(),
            sandbox,
            counter,
            options,
        }
    }

    /// The graphs of the task's repositories, the primary one first.
    pub fn graphs(&self) -> &[RepoGraph] {
        &self.graphs
    }

    /// The token counter observations are measured with.
    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    /// The options.
    pub fn options(&self) -> &ToolOptions {
        &self.options
    }

    /// The definitions offered to the model under these options.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        all_definitions()
            .into_iter()
            .filter(|d| self.options.exploration || !EXPLORATION_TOOLS.contains(&d.name.as_str()))
            .collect()
    }

    /// Runs one tool call. Never fails: errors are observations.
    pub async fn call(&self, call: &ToolCall) -> ToolOutput {
        let started = Instant::now();
        let offered = self.definitions().iter().any(|d| d.name == call.name);
        let mut finish = None;
        let result = if !offered {
            let names: Vec<String> = self.definitions().into_iter().map(|d| d.name).collect();
            Err(Fail(format!(
                "unknown tool `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            )))
        } else if !call.arguments.is_object() {
            Err(Fail(
                "the arguments must be a JSON object; see the tool's schema".into(),
            ))
        } else {
            let args = &call.arguments;
            match call.name.as_str() {
                "finish" => {
                    let summary = opt_str(args, "summary").unwrap_or("").to_owned();
                    finish = Some(summary);
                    Ok("Finished.".to_owned())
                }
                name => self.dispatch(name, args).await,
            }
        };
        let (mut text, is_error) = match result {
            Ok(text) => (text, false),
            Err(Fail(message)) => (format!("Error: {message}"), true),
        };
        if let Some(repair) = &call.repair {
            text = format!(
                "Note: your arguments were not valid JSON and were repaired ({repair}); check they are complete.\n{text}"
            );
        }
        let text = self.bound(text);
        ToolOutput {
            tokens: self.counter.count(&text),
            text,
            is_error,
            finish,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Keeps any observation under L (head and tail), unless information
    /// selection is off.
    fn bound(&self, text: String) -> String {
        if !self.options.info_selection {
            return text;
        }
        let view = select::log(&self.counter, &text, &self.options.select);
        view.text
    }

    async fn dispatch(&self, name: &str, args: &Value) -> ToolResult {
        match name {
            "list_directory" => self.list_directory(args),
            "view_code" => self.view_code(args),
            "view_file" => self.view_file(args),
            "search_code" => self.search_code(args),
            "find_callers" => self.find_calls(args, true),
            "find_callees" => self.find_calls(args, false),
            "module_dependencies" => self.module_dependencies(args),
            "dependency_path" => self.dependency_path(args),
            "read_document" => self.read_document(args),
            "write_file" => self.write_file(args),
            "edit_file" => self.edit_file(args),
            "run_python" => self.run_python(args).await,
            "run_shell" => self.run_shell(args).await,
            other => Err(Fail(format!("unknown tool `{other}`"))),
        }
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path.trim());
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.work_dir.join(p)
        }
    }

    fn list_directory(&self, args: &Value) -> ToolResult {
        let path = self.resolve(req_str(args, "path")?);
        let depth = opt_u64(args, "depth")?.unwrap_or(2).clamp(1, 6) as usize;
        if !path.is_dir() {
            return Err(Fail(format!(
                "{} is not a directory; list its parent to see what exists",
                path.display()
            )));
        }
        // The same rules as repo-graph's walk: `.gitignore` and `.ignore`
        // files (inside a git repository or not), hidden entries, and the
        // directories of tools and environments.
        let walker = ignore::WalkBuilder::new(&path)
            .max_depth(Some(depth))
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .filter_entry(|e| {
                !(e.depth() > 0
                    && e.file_type().is_some_and(|t| t.is_dir())
                    && e.path().parent().is_some_and(|parent| {
                        repo_graph::is_tool_directory(parent, &e.file_name().to_string_lossy())
                    }))
            })
            .build();
        let mut out = format!("{}/\n", path.display());
        let mut shown = 0usize;
        for entry in walker.filter_map(Result::ok) {
            if entry.depth() == 0 {
                continue;
            }
            shown += 1;
            if shown > 500 {
                out.push_str("[... more entries; list a subdirectory ...]\n");
                break;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let _ = writeln!(
                out,
                "{}{}{}",
                "  ".repeat(entry.depth()),
                entry.file_name().to_string_lossy(),
                if is_dir { "/" } else { "" }
            );
        }
        Ok(out)
    }

    fn view_code(&self, args: &Value) -> ToolResult {
        let target = req_str(args, "target")?;
        let query = opt_str(args, "query");
        let mut first_error = None;
        for graph in &self.graphs {
            let resolved = match select::CodeTarget::resolve(graph, target) {
                Ok(resolved) => resolved,
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            if !self.options.info_selection {
                let entity = match resolved {
                    select::CodeTarget::Module(m) => EntityId::Module(m),
                    select::CodeTarget::Entity(e) => e,
                };
                return Ok(graph.source(entity).unwrap_or("").to_owned());
            }
            let view = select::code(graph, target, query, &self.counter, &self.options.select)?;
            return Ok(view.text);
        }
        let mut message =
            first_error.map_or_else(|| format!("nothing named `{target}`"), |e| e.to_string());
        let names: Vec<String> = self
            .graphs
            .iter()
            .flat_map(|g| g.search(target, 5))
            .take(5)
            .map(|h| h.qualname)
            .collect();
        if !names.is_empty() {
            let _ = write!(message, ". Similar names: {}", names.join(", "));
        }
        Err(Fail(message))
    }

    fn view_file(&self, args: &Value) -> ToolResult {
        let path = self.resolve(req_str(args, "path")?);
        let text = read_text(&path)?;
        let lines: Vec<&str> = text.lines().collect();
        let start = opt_u64(args, "start_line")?.unwrap_or(1).max(1) as usize;
        let end = opt_u64(args, "end_line")?
            .map_or(lines.len(), |e| e as usize)
            .min(lines.len());
        if lines.is_empty() {
            return Ok(format!("{} is empty", path.display()));
        }
        if start > lines.len() {
            return Err(Fail(format!(
                "start_line {start} is past the end: {} has {} lines",
                path.display(),
                lines.len()
            )));
        }
        let mut out = String::new();
        for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
            let _ = writeln!(out, "{:>5} | {line}", i + 1);
        }
        Ok(out)
    }

    fn search_code(&self, args: &Value) -> ToolResult {
        let query = req_str(args, "query")?;
        let use_regex = args.get("regex").and_then(Value::as_bool).unwrap_or(false);
        let mut out = String::new();
        let mut count = 0usize;
        if !use_regex {
            let mut hits: Vec<(&RepoGraph, repo_graph::SearchHit)> = self
                .graphs
                .iter()
                .flat_map(|g| g.search(query, 20).into_iter().map(move |h| (g, h)))
                .collect();
            // Stable: equal scores keep the primary repository first.
            hits.sort_by_key(|h| std::cmp::Reverse(h.1.score));
            hits.truncate(20);
            if !hits.is_empty() {
                out.push_str("Entities (name and docstring matches):\n");
            }
            for (graph, hit) in &hits {
                let _ = writeln!(
                    out,
                    "  {}  [score {}]",
                    self.locate(graph, hit.entity),
                    hit.score
                );
                count += 1;
            }
        }
        let matcher: Box<dyn Fn(&str) -> bool> = if use_regex {
            let re = regex::Regex::new(query).map_err(|e| {
                Fail(format!(
                    "invalid regex: {e}; fix it or search without regex"
                ))
            })?;
            Box::new(move |line: &str| re.is_match(line))
        } else {
            let needle = query.trim().to_lowercase();
            if needle.is_empty() {
                return Err(Fail("the query is empty".into()));
            }
            Box::new(move |line: &str| line.to_lowercase().contains(&needle))
        };
        const SHOWN: usize = 40;
        let mut total = 0usize;
        let mut shown = Vec::with_capacity(SHOWN);
        for graph in &self.graphs {
            for (i, module) in graph.modules().iter().enumerate() {
                let id = ModuleId(i as u32);
                let Some(source) = graph.module_source(id) else {
                    continue;
                };
                for (n, line) in source.lines().enumerate() {
                    if !matcher(line) {
                        continue;
                    }
                    total += 1;
                    if shown.len() < SHOWN {
                        // Only shown hits pay for locating their entity.
                        let line_no = n as u32 + 1;
                        shown.push(format!(
                            "  {}:{}: {}  (in {})",
                            self.display_path(graph, &module.path),
                            line_no,
                            line.trim(),
                            innermost(graph, id, line_no)
                        ));
                    }
                }
            }
        }
        if total > 0 {
            let _ = writeln!(out, "Source lines ({total} matches):");
            for hit in &shown {
                out.push_str(hit);
                out.push('\n');
            }
            if total > shown.len() {
                let _ = writeln!(
                    out,
                    "  [... {} more; refine the query ...]",
                    total - shown.len()
                );
            }
        }
        if count == 0 && total == 0 {
            return Ok(format!(
                "No matches for `{query}`. Try other words, a shorter name, or list_directory."
            ));
        }
        Ok(out)
    }

    /// A module path as the model should use it: relative to the root for
    /// the only repository, absolute when there are several.
    fn display_path(&self, graph: &RepoGraph, path: &str) -> String {
        if self.graphs.len() > 1 {
            graph.root().join(path).display().to_string()
        } else {
            path.to_owned()
        }
    }

    /// `qualname (kind) path:start-end`.
    fn locate(&self, g: &RepoGraph, entity: EntityId) -> String {
        let path = g
            .module_of(entity)
            .and_then(|m| g.module(m))
            .map_or_else(String::new, |m| self.display_path(g, &m.path));
        let (kind, span) = match entity {
            EntityId::Module(_) => ("module", None),
            EntityId::Class(c) => ("class", g.class(c).map(|c| c.span)),
            EntityId::Function(f) => ("function", g.function(f).map(|f| f.span)),
        };
        match span {
            Some(s) => format!(
                "{} ({kind}) {path}:{}-{}",
                g.qualname(entity),
                s.start_line,
                s.end_line
            ),
            None => format!("{} ({kind}) {path}", g.qualname(entity)),
        }
    }

    /// An entity by qualified name (in the first repository that has it),
    /// or by a suffix of one that is unique over all repositories.
    fn find_entity(&self, name: &str) -> Result<(&RepoGraph, EntityId), Fail> {
        let name = name.trim();
        if let Some(found) = self
            .graphs
            .iter()
            .find_map(|g| g.entity(name).map(|e| (g, e)))
        {
            return Ok(found);
        }
        let suffix = format!(".{name}");
        let mut matches: Vec<(&RepoGraph, EntityId)> = Vec::new();
        for g in &self.graphs {
            for (i, f) in g.functions().iter().enumerate() {
                if f.qualname.ends_with(&suffix) {
                    matches.push((g, EntityId::Function(repo_graph::FunctionId(i as u32))));
                }
            }
            for (i, c) in g.classes().iter().enumerate() {
                if c.qualname.ends_with(&suffix) {
                    matches.push((g, EntityId::Class(repo_graph::ClassId(i as u32))));
                }
            }
        }
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(Fail(format!(
                "no function or class named `{name}`; use search_code to find its qualified name"
            ))),
            many => {
                let names: Vec<&str> = many.iter().take(10).map(|(g, e)| g.qualname(*e)).collect();
                Err(Fail(format!(
                    "`{name}` is ambiguous; use one of: {}",
                    names.join(", ")
                )))
            }
        }
    }

    fn find_calls(&self, args: &Value, callers: bool) -> ToolResult {
        let name = req_str(args, "name")?;
        let depth = opt_u64(args, "depth")?.unwrap_or(1).clamp(1, 5) as u32;
        let (graph, entity) = self.find_entity(name)?;
        let reach = if callers {
            graph.callers(entity, depth)
        } else {
            graph.callees(entity, depth)
        };
        let what = if callers { "callers" } else { "callees" };
        let qualname = graph.qualname(entity);
        if reach.is_empty() {
            return Ok(format!(
                "{qualname} has no {what} inside the repository (within depth {depth})."
            ));
        }
        let mut out = format!("{what} of {qualname} (depth {depth}):\n");
        for r in reach.iter().take(100) {
            let _ = writeln!(
                out,
                "  [{}] {}  ({} call sites)",
                r.depth,
                self.locate(graph, r.entity),
                r.call_sites
            );
        }
        Ok(out)
    }

    fn find_module(&self, name: &str) -> Result<(&RepoGraph, ModuleId), Fail> {
        let trimmed = name.trim();
        for g in &self.graphs {
            let found = g.module_by_name(trimmed).or_else(|| {
                match select::CodeTarget::resolve(g, trimmed) {
                    Ok(select::CodeTarget::Module(m)) => Some(m),
                    _ => None,
                }
            });
            if let Some(m) = found {
                return Ok((g, m));
            }
        }
        Err(Fail(format!(
            "no module `{name}`; give a dotted module name (e.g. pkg.mod) or a file path of the repository"
        )))
    }

    fn module_name(&self, g: &RepoGraph, m: ModuleId) -> String {
        g.module(m)
            .map(|m| format!("{} ({})", m.name, self.display_path(g, &m.path)))
            .unwrap_or_default()
    }

    fn module_dependencies(&self, args: &Value) -> ToolResult {
        let (graph, module) = self.find_module(req_str(args, "module")?)?;
        let direction = req_str(args, "direction")?;
        let edges = match direction {
            "imports" => graph.imports_of(module),
            "imported_by" => graph.imported_by(module),
            other => {
                return Err(Fail(format!(
                    "direction must be `imports` or `imported_by`, not `{other}`"
                )));
            }
        };
        let name = self.module_name(graph, module);
        if edges.is_empty() {
            return Ok(format!("{name}: no internal modules ({direction})."));
        }
        let mut out = format!("{name} {direction}:\n");
        for (m, coupling) in edges {
            let _ = writeln!(
                out,
                "  {}  [{} names, {} calls]",
                self.module_name(graph, m),
                coupling.imports,
                coupling.calls
            );
        }
        Ok(out)
    }

    fn dependency_path(&self, args: &Value) -> ToolResult {
        let (graph, from) = self.find_module(req_str(args, "from")?)?;
        let (to_graph, to) = self.find_module(req_str(args, "to")?)?;
        if !std::ptr::eq(graph, to_graph) {
            return Ok(format!(
                "{} and {} are in different repositories; imports are only followed within one.",
                self.module_name(graph, from),
                self.module_name(to_graph, to)
            ));
        }
        match graph.dependency_path(from, to) {
            Some(path) => {
                let names: Vec<String> = path.iter().map(|m| self.module_name(graph, *m)).collect();
                Ok(names.join("\n  -> "))
            }
            None => Ok(format!(
                "{} does not import {}, directly or indirectly.",
                self.module_name(graph, from),
                self.module_name(graph, to)
            )),
        }
    }

    fn read_document(&self, args: &Value) -> ToolResult {
        let path = self.resolve(req_str(args, "path")?);
        let text = read_text(&path)?;
        if !self.options.info_selection {
            return Ok(text);
        }
        let name = path.to_string_lossy();
        let view = select::document(
            &self.counter,
            &name,
            &text,
            opt_str(args, "query"),
            &self.options.select,
        );
        Ok(view.text)
    }

    fn write_file(&self, args: &Value) -> ToolResult {
        let path = self.resolve(req_str(args, "path")?);
        let content = req_str(args, "content")?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Fail(format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::write(&path, content)
            .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))?;
        Ok(format!(
            "Wrote {} ({} bytes, {} lines).",
            path.display(),
            content.len(),
            content.lines().count()
        ))
    }

    fn edit_file(&self, args: &Value) -> ToolResult {
        let path = self.resolve(req_str(args, "path")?);
        let old = req_str(args, "old_text")?;
        let new = req_str(args, "new_text")?;
        if old.is_empty() {
            return Err(Fail(
                "old_text is empty; give the exact text to replace".into(),
            ));
        }
        let text = read_text(&path)?;
        let n = text.matches(old).count();
        match n {
            0 => Err(Fail(format!(
                "old_text does not occur in {}; view the file and copy the text exactly (whitespace included)",
                path.display()
            ))),
            1 => {
                let edited = text.replacen(old, new, 1);
                std::fs::write(&path, &edited)
                    .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))?;
                Ok(format!("Edited {}.", path.display()))
            }
            n => Err(Fail(format!(
                "old_text occurs {n} times in {}; include more surrounding lines so it is unique",
                path.display()
            ))),
        }
    }

    fn exec_report(&self, result: &sandbox::ExecResult) -> String {
        let output = result.combined_output();
        let output = if self.options.info_selection {
            select::log(&self.counter, &output, &self.options.select).text
        } else {
            output
        };
        format!(
            "[{} in {:.1}s]\n{}",
            result.status_summary(),
            result.duration.as_secs_f64(),
            output
        )
    }

    async fn run_python(&self, args: &Value) -> ToolResult {
        let script = match (opt_str(args, "code"), opt_str(args, "path")) {
            (Some(code), None) => PythonScript::code(code),
            (None, Some(path)) => {
                let path = self.resolve(path);
                if !path.is_file() {
                    return Err(Fail(format!(
                        "{} does not exist; write it first with write_file",
                        path.display()
                    )));
                }
                PythonScript::file(path)
            }
            (Some(_), Some(_)) => return Err(Fail("give either code or path, not both".into())),
            (None, None) => return Err(Fail("give code or path".into())),
        };
        let run_args: Vec<String> = match args.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            Some(_) => return Err(Fail("args must be an array of strings".into())),
        };
        let result = self
            .sandbox
            .run_python(script, &run_args)
            .await
            .map_err(|e| Fail(format!("the sandbox could not run Python: {e}")))?;
        Ok(self.exec_report(&result))
    }

    async fn run_shell(&self, args: &Value) -> ToolResult {
        let command = req_str(args, "command")?;
        let result = self
            .sandbox
            .run_shell(command)
            .await
            .map_err(|e| Fail(format!("the sandbox could not run the command: {e}")))?;
        Ok(self.exec_report(&result))
    }
}

/// The qualified name of the smallest entity of `module` containing `line`.
fn innermost(g: &RepoGraph, module: ModuleId, line: u32) -> String {
    let spans = g
        .functions()
        .iter()
        .filter(|f| f.module == module)
        .map(|f| (f.span, f.qualname.as_str()))
        .chain(
            g.classes()
                .iter()
                .filter(|c| c.module == module)
                .map(|c| (c.span, c.qualname.as_str())),
        );
    let mut best: Option<(u32, &str)> = None;
    for (span, name) in spans {
        if span.start_line <= line
            && line <= span.end_line
            && best.is_none_or(|(n, _)| span.line_count() < n)
        {
            best = Some((span.line_count(), name));
        }
    }
    best.map_or_else(
        || g.qualname(EntityId::Module(module)).to_owned(),
        |(_, n)| n.to_owned(),
    )
}

fn read_text(path: &Path) -> Result<String, Fail> {
    let bytes = std::fs::read(path).map_err(|e| {
        Fail(format!(
            "cannot read {}: {e}; check the path with list_directory",
            path.display()
        ))
    })?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(Fail(format!(
            "{} is a binary file ({} bytes); inspect it with run_python instead",
            path.display(),
            bytes.len()
        )));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn opt_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn req_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, Fail> {
    match args.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Fail(format!("`{key}` must be a string, got {other}"))),
        None => Err(Fail(format!("missing required argument `{key}`"))),
    }
}

fn opt_u64(args: &Value, key: &str) -> Result<Option<u64>, Fail> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| Fail(format!("`{key}` must be a positive integer, got {v}"))),
    }
}
