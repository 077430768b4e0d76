//! The agent's tools: their declaration ([`Tool`], in `args.rs`), the JSON
//! Schemas offered to the model and the parsing of its calls (`schema.rs`),
//! and their execution (here) against the real repository graph,
//! context-pack's views and the sandbox.
//!
//! Every failure of a tool (a bad path, an unknown name, an edit that does
//! not match exactly once) becomes a [`ToolOutput`] with `is_error` set and a
//! message that tells the model what to do; nothing a model sends ends the
//! run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use context_pack::TokenCounter;
use context_pack::select::{self, SelectOptions};
use llm::{ToolCall, ToolDefinition};
use repo_graph::{EntityId, ModuleId, RepoGraph};
use sandbox::{PythonScript, Sandbox};

mod args;
mod hints;
mod launch;
mod oneliner;
pub mod policy;
mod repository;
mod schema;
mod traceback;

pub use args::{
    CallGraphArgs, DependencyPathArgs, Direction, EXPLORATION_TOOLS, EditFileArgs, FinishArgs,
    ListDirectoryArgs, ModuleDependenciesArgs, OverviewArgs, RankArgs, ReadDocumentArgs,
    RoutesArgs, RunPythonArgs, RunShellArgs, SearchCodeArgs, Tool, ToolGroup, ToolName, UsageArgs,
    ViewCodeArgs, ViewFileArgs, WriteFileArgs,
};
pub use schema::{ToolCallError, parse};

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

/// Every tool's definition, in a fixed order, generated from [`ToolName`].
pub fn all_definitions() -> Vec<ToolDefinition> {
    ToolName::ALL.iter().map(|t| definition(*t)).collect()
}

/// The definition offered to the model for one tool.
pub fn definition(tool: ToolName) -> ToolDefinition {
    ToolDefinition::new(tool.as_str(), tool.description(), tool.parameters())
}

/// A tool failure: a message for the model.
pub(crate) struct Fail(String);

/// A tool's successful observation, and the summary when it was `finish`.
pub(crate) struct Done {
    text: String,
    finish: Option<String>,
}

impl From<policy::PathError> for Fail {
    fn from(e: policy::PathError) -> Self {
        Fail(e.to_string())
    }
}

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
    /// Shared, so that a long-lived server can keep the graph of an
    /// unchanged repository while another is analysed again.
    graphs: Vec<Arc<RepoGraph>>,
    /// One entity-search index per graph, built on the first search.
    search_indexes: Vec<OnceLock<context_pack::search::EntitySearch>>,
    /// One importance ranking per graph, made on first use (`overview`,
    /// `rank`).
    rankings: Vec<OnceLock<importance::Ranking>>,
    /// One task-search index per graph, made on the first `overview`.
    task_indexes: Vec<OnceLock<context_pack::TaskIndex>>,
    /// The tools offered, when not the agent's own set ([`Tools::offering`]).
    offer: Option<Vec<ToolName>>,
    /// None where code execution is off (the MCP server without
    /// `--allow-exec`): the run tools then refuse.
    sandbox: Option<Sandbox>,
    counter: TokenCounter,
    options: ToolOptions,
    policy: policy::PathPolicy,
    redactor: crate::redact::Redactor,
    /// The task's text and input files, for the save step a clean run that
    /// saved nothing is offered ([`Tools::with_task`]).
    task: Option<(String, Vec<PathBuf>)>,
    /// The first lines of the last [`KEPT_ERRORS`] error replies, which
    /// `write_file` refuses to write out as a result.
    recent_errors: std::sync::Mutex<std::collections::VecDeque<String>>,
}

/// Longest script offered back with a save step, in bytes.
const MAX_OFFERED_SCRIPT: usize = 6_000;

/// Error replies remembered for `write_file`'s check.
const KEPT_ERRORS: usize = 16;

/// Lines of a program's `--help` added after its usage error: the options
/// of a command fit, a manual does not.
const USAGE_HELP_LINES: usize = 40;

/// Shortest error line looked for in written content: a short one could
/// be a real result's words.
const MIN_ERROR_LINE: usize = 24;

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let roots: Vec<&Path> = self.graphs.iter().map(|g| g.root()).collect();
        f.debug_struct("Tools")
            .field("roots", &roots)
            .field("policy", &self.policy)
            .field("options", &self.options)
            .finish()
    }
}

impl Tools {
    /// Tools over the graphs of the task's repositories (the primary one
    /// first; at least one), touching only the files `policy` allows and
    /// running code in `sandbox`.
    pub fn new(
        graphs: Vec<RepoGraph>,
        policy: policy::PathPolicy,
        sandbox: Sandbox,
        counter: TokenCounter,
        options: ToolOptions,
    ) -> Self {
        let graphs = graphs.into_iter().map(Arc::new).collect();
        Tools::shared(graphs, policy, Some(sandbox), counter, options)
    }

    /// [`Tools::new`] over graphs another owner keeps too, and without a
    /// sandbox where no code may run (`run_python` and `run_shell` then
    /// answer that execution is off).
    pub fn shared(
        graphs: Vec<Arc<RepoGraph>>,
        policy: policy::PathPolicy,
        sandbox: Option<Sandbox>,
        counter: TokenCounter,
        options: ToolOptions,
    ) -> Self {
        Tools {
            search_indexes: graphs.iter().map(|_| OnceLock::new()).collect(),
            rankings: graphs.iter().map(|_| OnceLock::new()).collect(),
            task_indexes: graphs.iter().map(|_| OnceLock::new()).collect(),
            offer: None,
            graphs,
            sandbox,
            counter,
            options,
            policy,
            redactor: crate::redact::Redactor::default(),
            task: None,
            recent_errors: std::sync::Mutex::default(),
        }
    }

    /// The entities of graph `i` that match `query` best
    /// ([`context_pack::search`], the context's BM25), its index built on
    /// the first search.
    fn entity_search(
        &self,
        i: usize,
        query: &str,
        limit: usize,
    ) -> Vec<context_pack::search::EntityHit> {
        let (Some(graph), Some(cell)) = (self.graphs.get(i), self.search_indexes.get(i)) else {
            return Vec::new();
        };
        cell.get_or_init(|| context_pack::search::EntitySearch::new(graph))
            .search(query, limit)
    }

    /// Redacts these secrets from every observation (by default none;
    /// `prepare` passes the agent's own credentials).
    pub fn with_redactor(mut self, redactor: crate::redact::Redactor) -> Self {
        self.redactor = redactor;
        self
    }

    /// The task's text and input files: a script that runs cleanly while
    /// the output directory stays empty is then answered with itself plus
    /// a step that saves what it shows, in the format the task names
    /// ([`context_pack::starter::with_save_step`]).
    pub fn with_task(mut self, description: &str, inputs: Vec<PathBuf>) -> Self {
        self.task = Some((description.to_owned(), inputs));
        self
    }

    /// The sandbox, or why code cannot run.
    fn sandbox(&self) -> Result<&Sandbox, Fail> {
        self.sandbox.as_ref().ok_or_else(|| {
            Fail(
                "code execution is off here: the MCP server runs code only when started with \
                 --allow-exec, and then in the sandbox"
                    .to_owned(),
            )
        })
    }

    /// The importance ranking of the `i`th graph (in [`Tools::graphs`]'s
    /// order), made on first use and kept.
    pub fn ranking(&self, i: usize) -> Option<&importance::Ranking> {
        let (graph, cell) = (self.graphs.get(i)?, self.rankings.get(i)?);
        Some(cell.get_or_init(|| importance::Ranker::new().rank(graph)))
    }

    /// The redactor every observation passes: the run's one, which the
    /// conversation and the model's requests use too.
    pub fn redactor(&self) -> &crate::redact::Redactor {
        &self.redactor
    }

    /// The graphs of the task's repositories, the primary one first.
    pub fn graphs(&self) -> &[Arc<RepoGraph>] {
        &self.graphs
    }

    /// Offers exactly these tools, whatever their group (the MCP server's
    /// set: the exploration tools plus the [`ToolGroup::Repository`] views,
    /// and code execution only when allowed). A call of any other tool is
    /// refused as unknown.
    pub fn offering(mut self, tools: Vec<ToolName>) -> Self {
        self.offer = Some(tools);
        self
    }

    /// The token counter observations are measured with.
    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    /// The options.
    pub fn options(&self) -> &ToolOptions {
        &self.options
    }

    /// The tools offered under these options, in their fixed order.
    pub fn offered(&self) -> Vec<ToolName> {
        if let Some(offer) = &self.offer {
            return offer.clone();
        }
        ToolName::ALL
            .iter()
            .copied()
            .filter(|t| match t.group() {
                ToolGroup::Exploration => self.options.exploration,
                ToolGroup::Core => true,
                ToolGroup::Repository => false,
            })
            .collect()
    }

    /// The definitions offered to the model under these options.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.offered().into_iter().map(definition).collect()
    }

    /// Runs one tool call. Never fails: a call that does not parse and a
    /// tool that fails are both observations the model can act on.
    pub async fn call(&self, call: &ToolCall) -> ToolOutput {
        let started = Instant::now();
        let result = match parse(call, &self.offered()) {
            Ok(tool) => self.run(&tool).await,
            Err(e) => Err(Fail(e.to_string())),
        };
        let (mut text, is_error, finish) = match result {
            Ok(Done { text, finish }) => (text, false, finish),
            Err(Fail(message)) => {
                self.remember_error(&message);
                (format!("Error: {message}"), true, None)
            }
        };
        if let Some(repair) = &call.repair {
            text = format!(
                "Note: your arguments were not valid JSON and were repaired ({repair}); check they are complete.\n{text}"
            );
        }
        // Before anything keeps or shows the text: a secret that model-run
        // code found never reaches the history or the trajectory.
        let text = self.redactor.redact_owned(text);
        let text = self.bound(text);
        ToolOutput {
            tokens: self.counter.count(&text),
            text,
            is_error,
            finish,
            ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn remember_error(&self, message: &str) {
        let line = message.lines().next().unwrap_or("").trim();
        if line.len() < MIN_ERROR_LINE {
            return;
        }
        let mut kept = self
            .recent_errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.push_back(line.to_owned());
        if kept.len() > KEPT_ERRORS {
            kept.pop_front();
        }
    }

    /// The remembered error line `content` repeats, if any.
    fn repeated_error(&self, content: &str) -> Option<String> {
        let kept = self
            .recent_errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.iter()
            .find(|line| content.contains(line.as_str()))
            .cloned()
    }

    /// Runs a parsed tool.
    pub(crate) async fn run(&self, tool: &Tool) -> Result<Done, Fail> {
        let text = match tool {
            Tool::ListDirectory(args) => self.list_directory(args),
            Tool::ViewCode(args) => self.view_code(args),
            Tool::ViewFile(args) => self.view_file(args),
            Tool::SearchCode(args) => self.search_code(args),
            Tool::FindCallers(args) => self.find_calls(args, true),
            Tool::FindCallees(args) => self.find_calls(args, false),
            Tool::ModuleDependencies(args) => self.module_dependencies(args),
            Tool::DependencyPath(args) => self.dependency_path(args),
            Tool::ReadDocument(args) => self.read_document(args),
            Tool::WriteFile(args) => self.write_file(args),
            Tool::EditFile(args) => self.edit_file(args),
            Tool::RunPython(args) => self.run_python(args).await,
            Tool::RunShell(args) => self.run_shell(args).await,
            Tool::Overview(args) => self.overview(args),
            Tool::Rank(args) => self.rank(args),
            Tool::Routes(args) => self.routes(args),
            Tool::Usage(args) => self.usage(args),
            Tool::Finish(args) => {
                return Ok(Done {
                    text: "Finished.".to_owned(),
                    finish: Some(args.summary.clone()),
                });
            }
        }?;
        Ok(Done { text, finish: None })
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

    fn list_directory(&self, args: &ListDirectoryArgs) -> ToolResult {
        let path = self.policy.read(&args.path)?;
        let depth = args.depth.unwrap_or(2).clamp(1, 6) as usize;
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
                        repo_files::is_tool_directory(parent, &e.file_name().to_string_lossy())
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
                // A name is one line: a newline in it cannot fake entries.
                context_pack::markdown::one_line(&entry.file_name().to_string_lossy()),
                if is_dir { "/" } else { "" }
            );
        }
        Ok(out)
    }

    fn view_code(&self, args: &ViewCodeArgs) -> ToolResult {
        let target = args.target.as_str();
        let query = args.query.as_deref();
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
            .enumerate()
            .flat_map(|(i, _)| self.entity_search(i, target, 5))
            .take(5)
            .map(|h| h.qualname)
            .collect();
        if !names.is_empty() {
            let _ = write!(message, ". Similar names: {}", names.join(", "));
        }
        Err(Fail(message))
    }

    fn view_file(&self, args: &ViewFileArgs) -> ToolResult {
        let path = self.policy.read(&args.path)?;
        let text = self.read_text(&path)?;
        let lines: Vec<&str> = text.lines().collect();
        let start = args.start_line.unwrap_or(1).max(1) as usize;
        let end = args
            .end_line
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

    fn search_code(&self, args: &SearchCodeArgs) -> ToolResult {
        let query = args.query.as_str();
        let use_regex = args.regex.unwrap_or(false);
        let mut out = String::new();
        let mut count = 0usize;
        if !use_regex {
            let mut hits: Vec<(&RepoGraph, context_pack::search::EntityHit)> = self
                .graphs
                .iter()
                .enumerate()
                .flat_map(|(i, g)| {
                    self.entity_search(i, query, 20)
                        .into_iter()
                        .map(move |h| (&**g, h))
                })
                .collect();
            // Stable: equal scores keep the primary repository first.
            hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score));
            hits.truncate(20);
            if !hits.is_empty() {
                out.push_str("Entities (name and docstring matches):\n");
            }
            for (graph, hit) in &hits {
                let _ = writeln!(
                    out,
                    "  {}  [score {:.1}]",
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
            for (id, module) in graph.module_ids().zip(graph.modules()) {
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
        // One of the agent's own tools, written nowhere in the source: the
        // entity hits can only be matches on its parts (`run`, `python`).
        if total == 0
            && let Some(note) = tool_not_code(query)
        {
            return Ok(format!("No matches for `{query}`. {note}"));
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
                g.qualname(entity).unwrap_or_default(),
                s.start_line,
                s.end_line
            ),
            None => format!("{} ({kind}) {path}", g.qualname(entity).unwrap_or_default()),
        }
    }

    /// An entity by qualified name (in the first repository that has it),
    /// or by a suffix of one that is unique over all repositories.
    fn find_entity(&self, name: &str) -> Result<(&RepoGraph, EntityId), Fail> {
        let name = name.trim();
        if let Some(found) = self
            .graphs
            .iter()
            .find_map(|g| g.entity(name).map(|e| (&**g, e)))
        {
            return Ok(found);
        }
        let suffix = format!(".{name}");
        let mut matches: Vec<(&RepoGraph, EntityId)> = Vec::new();
        for g in &self.graphs {
            for (id, f) in g.function_ids().zip(g.functions()) {
                if f.qualname.ends_with(&suffix) {
                    matches.push((g, EntityId::Function(id)));
                }
            }
            for (id, c) in g.class_ids().zip(g.classes()) {
                if c.qualname.ends_with(&suffix) {
                    matches.push((g, EntityId::Class(id)));
                }
            }
        }
        match matches.as_slice() {
            [one] => Ok(*one),
            [] => Err(Fail(match tool_not_code(name) {
                Some(note) => format!("no function or class named `{name}`. {note}"),
                None => format!(
                    "no function or class named `{name}`; use search_code to find its qualified name"
                ),
            })),
            many => {
                let names: Vec<&str> = many
                    .iter()
                    .take(10)
                    .filter_map(|(g, e)| g.qualname(*e))
                    .collect();
                Err(Fail(format!(
                    "`{name}` is ambiguous; use one of: {}",
                    names.join(", ")
                )))
            }
        }
    }

    fn find_calls(&self, args: &CallGraphArgs, callers: bool) -> ToolResult {
        let name = args.name.as_str();
        let depth = args.depth.unwrap_or(1).clamp(1, 5) as u32;
        let (graph, entity) = self.find_entity(name)?;
        let reach = if callers {
            graph.callers(entity, depth)
        } else {
            graph.callees(entity, depth)
        };
        let what = if callers { "callers" } else { "callees" };
        let qualname = graph.qualname(entity).unwrap_or(name);
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

    fn module_dependencies(&self, args: &ModuleDependenciesArgs) -> ToolResult {
        let (graph, module) = self.find_module(&args.module)?;
        let direction = args.direction.as_str();
        let edges = match args.direction {
            Direction::Imports => graph.imports_of(module),
            Direction::ImportedBy => graph.imported_by(module),
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

    fn dependency_path(&self, args: &DependencyPathArgs) -> ToolResult {
        let (graph, from) = self.find_module(&args.from)?;
        let (to_graph, to) = self.find_module(&args.to)?;
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

    fn read_document(&self, args: &ReadDocumentArgs) -> ToolResult {
        let path = self.policy.read(&args.path)?;
        let text = self.read_text(&path)?;
        if !self.options.info_selection {
            return Ok(text);
        }
        let name = path.to_string_lossy();
        let view = select::document(
            &self.counter,
            &name,
            &text,
            args.query.as_deref(),
            &self.options.select,
        );
        Ok(view.text)
    }

    fn write_file(&self, args: &WriteFileArgs) -> ToolResult {
        let path = self.policy.write(&args.path)?;
        let content = args.content.as_str();
        // Measured (GitTaskBench Eparse_02, PyPDF2_01, tuning half): the
        // model wrote the error reply it had just been given into the
        // output file and called `finish`.
        if let Some(error) = self.repeated_error(content) {
            return Err(Fail(format!(
                "not written: the content repeats the error an earlier call returned (`{error}`); \
                 a result is what the task asks for: fix what the error says and run it again"
            )));
        }
        // Measured (GitTaskBench Eparse_03, embedded Qwen 1.5B): told that
        // the script it ran did not exist, the model wrote its own shell
        // command line into that .py file, then ran it, twice.
        if path.extension().is_some_and(|e| e == "py")
            && let Some(command) = launch::shell_command_line(content)
        {
            return Err(Fail(format!(
                "not written: the content is a shell command line (`{command}`), not Python \
                 source; run a command with run_shell, or run an existing script with run_python \
                 (`path` and `args`)"
            )));
        }
        // Measured (RepoGenesis Chatroom and Multilingual, repair rounds,
        // run 2): a working app of 90-140 lines overwritten with `app.py`
        // or `pytz`, a word from the error, in place of the file.
        if let Some(lines) = self.fragment_over_source(&path, content) {
            return Err(Fail(format!(
                "not written: `{}` would replace {} lines of source with `{}`; write the file's \
                 whole new content, or change part of it with edit_file",
                path.display(),
                lines,
                content.trim()
            )));
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Fail(format!("cannot create {}: {e}", parent.display())))?;
        }
        write_no_follow(&path, content.as_bytes())?;
        Ok(format!(
            "Wrote {} ({} bytes, {} lines).",
            path.display(),
            content.len(),
            content.lines().count()
        ))
    }

    /// The line count of the source file at `path` when `content` is a
    /// fragment of one line (a word, a file name) that would replace ten
    /// or more lines of it.
    fn fragment_over_source(&self, path: &Path, content: &str) -> Option<usize> {
        const SOURCE: &[&str] = &["py", "java", "js", "ts", "rs", "go", "rb", "sh"];
        let source = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCE.contains(&e));
        if !source || content.trim().lines().count() > 1 || content.trim().len() > 80 {
            return None;
        }
        let existing = self.read_text(path).ok()?;
        let lines = existing.lines().filter(|l| !l.trim().is_empty()).count();
        (lines >= 10).then_some(lines)
    }

    fn edit_file(&self, args: &EditFileArgs) -> ToolResult {
        let path = self.policy.write(&args.path)?;
        let old = args.old_text.as_str();
        let new = args.new_text.as_str();
        if old.is_empty() {
            return Err(Fail(
                "old_text is empty; give the exact text to replace".into(),
            ));
        }
        // Measured (RepoGenesis Blog, repair rounds, run 2): the same
        // import line as old_text and new_text, "edited" turn after turn.
        if old == new {
            return Err(Fail(
                "new_text is the same as old_text: nothing would change; put the corrected \
                 text in new_text"
                    .into(),
            ));
        }
        let text = self.read_text(&path)?;
        let n = text.matches(old).count();
        match n {
            0 => Err(Fail(format!(
                "old_text does not occur in {}; view the file and copy the text exactly (whitespace included)",
                path.display()
            ))),
            1 => {
                let edited = text.replacen(old, new, 1);
                write_no_follow(&path, edited.as_bytes())?;
                Ok(format!("Edited {}.", path.display()))
            }
            n => Err(Fail(format!(
                "old_text occurs {n} times in {}; include more surrounding lines so it is unique",
                path.display()
            ))),
        }
    }

    /// The observation of a run: its status, its output (reduced by
    /// information selection) and the [hints](hints) its output calls
    /// for; `code` is the inline source run, if it was; `before` is the
    /// working directory's outputs before the run.
    /// `code` with a step saving what it shows, as the reply after a clean
    /// run that saved nothing offers it. Measured (GitTaskBench run 13,
    /// tuning half): told only that the output directory was still empty,
    /// the 1.5B model answered 5 of 8 such replies by running the same
    /// script again, until the stuck stop; given a script, it mostly runs
    /// what it is given.
    fn save_step(&self, code: &str) -> Option<String> {
        let (task, inputs) = self.task.as_ref()?;
        let out = self.policy.roots_of(policy::RootKind::OutputDir).next()?;
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        let (script, path) = context_pack::starter::with_save_step(code, task, &inputs, out)?;
        (script.len() <= MAX_OFFERED_SCRIPT).then(|| {
            format!(
                "Your script with a last step that saves what it shows in {} (make what it \
                 writes match what the task asks; then run it):\n```python\n{script}```",
                path.display()
            )
        })
    }

    fn exec_report(
        &self,
        result: &sandbox::ExecResult,
        code: Option<&str>,
        before: &hints::OutputsInWorkDir,
    ) -> String {
        let output = result.combined_output();
        let after = hints::OutputsInWorkDir::scan(&self.policy);
        let mut hints = hints::after_run(&self.policy, &output, code, before, &after);
        // After a script (not a shell command: `ls`, `pip list`) that ran
        // cleanly and saved nothing.
        if hints.is_empty()
            && code.is_some()
            && result.success()
            && let Some(hint) = hints::no_output_yet(&self.policy)
        {
            hints.push(hint);
            if let Some(step) = self.save_step(code.unwrap_or_default()) {
                hints.push(step);
            }
        }
        let mut roots: Vec<&Path> = self.graphs.iter().map(|g| g.root()).collect();
        roots.push(self.policy.base());
        let output = traceback::compact(&output, &roots);
        let output = if self.options.info_selection {
            select::log(&self.counter, &output, &self.options.select).text
        } else {
            output
        };
        let mut report = format!(
            "[{} in {:.1}s]\n{}",
            result.status_summary(),
            result.duration.as_secs_f64(),
            output
        );
        for hint in hints {
            if !report.ends_with('\n') {
                report.push('\n');
            }
            let _ = writeln!(report, "Hint: {hint}");
        }
        report
    }

    async fn run_python(&self, args: &RunPythonArgs) -> ToolResult {
        // Measured (GitTaskBench Eparse_01, embedded Qwen 1.5B): a whole
        // command line in `args` (`["python", "-c", "import x"]`) and no
        // code, sent turn after turn. Its meaning is plain: run it.
        // What the reply says was done differently from the call, in order.
        let mut notes: Vec<String> = Vec::new();
        // With `path` naming a directory (where to run it, Eparse_02) too.
        let no_script = match (args.code.as_deref(), args.path.as_deref()) {
            (None, None) => true,
            (None, Some(path)) => self.policy.read(path).is_ok_and(|p| p.is_dir()),
            _ => false,
        };
        let rewritten = no_script
            .then(|| command_line_script(args.args.as_deref().unwrap_or_default(), &self.graphs))
            .flatten();
        let args = match rewritten {
            Some(args) => {
                notes.push(
                    "`args` held a whole Python command line, and it ran as one; `args` is only \
                     for the script's own arguments: put code in `code` or a .py file in `path`"
                        .to_owned(),
                );
                std::borrow::Cow::Owned(args)
            }
            None => std::borrow::Cow::Borrowed(args),
        };
        let split = args
            .code
            .as_deref()
            .and_then(oneliner::split_compound_statements);
        let code = split.as_deref().or(args.code.as_deref());
        let balanced = code.and_then(oneliner::close_mismatched_brackets);
        if let Some((_, closed)) = &balanced {
            let shown: Vec<String> = closed
                .iter()
                .map(|c| format!("`{}` before `{}` on line {}", c.closer, c.before, c.line))
                .collect();
            notes.push(format!(
                "a bracket was left open where an outer one closed (a SyntaxError), so the code \
                 ran with {} put in; check that it reads as you meant",
                shown.join(", ")
            ));
        }
        let code = balanced.as_ref().map(|(c, _)| c.as_str()).or(code);
        let with_inputs = code.and_then(|c| hints::with_task_paths(&self.policy, c));
        if let Some((_, made)) = &with_inputs {
            let shown: Vec<String> = made
                .iter()
                .map(|(text, input)| format!("`{text}` ran as {}", input.display()))
                .collect();
            notes.push(format!(
                "relative paths naming the task's inputs were made absolute (the code runs in \
                 {}): {}; write absolute paths",
                self.policy.base().display(),
                shown.join(", ")
            ));
        }
        let code = with_inputs.as_ref().map(|(c, _)| c.as_str()).or(code);
        let script = match (code, args.path.as_deref()) {
            (Some(code), None) => PythonScript::code(code),
            // Measured (GitTaskBench Eparse_03, embedded Qwen 1.5B): code
            // with `path` naming the repository's directory, meant as
            // where to run it, refused six turns running. A directory
            // cannot be the script, so the code runs and the reply says
            // what was ignored.
            (Some(code), Some(path)) if self.policy.read(path).is_ok_and(|p| p.is_dir()) => {
                notes.push(format!(
                    "`path` ({path}) is a directory, not a script: it was ignored and `code` ran \
                     in the working directory (the repositories are importable from anywhere); \
                     give `path` only to run a .py file"
                ));
                PythonScript::code(code)
            }
            // Measured (GitTaskBench NeuroKit_01, tuning half): code with
            // `path` naming a module of the repository, refused four turns
            // running until the time ran out. The code is what was written
            // this turn: it runs, and the reply says what was ignored.
            (Some(code), Some(path)) => {
                notes.push(format!(
                    "both `code` and `path` ({path}) were given: `code` ran and `path` was \
                     ignored; give `path` without `code` only to run a .py file"
                ));
                PythonScript::code(code)
            }
            (None, Some(path)) => {
                let path = match self.policy.read(path) {
                    Ok(path) => path,
                    // Measured (GitTaskBench Eparse_02/_03): the model
                    // guessed `<repo>/cli.py` for `<repo>/eparse/cli.py`,
                    // and "write it first" made it write one; told the
                    // right path (run 8, Eparse_02), it sent the guess
                    // again, turn after turn. With one file of that name
                    // the meaning is plain: that file runs.
                    Err(policy::PathError::Missing(p)) => {
                        let missing = Path::new(&p);
                        match launch::same_name_files(&self.graphs, missing).as_slice() {
                            [only] => {
                                let only = self.policy.read(&only.display().to_string())?;
                                notes.push(format!(
                                    "{p} does not exist; the repository's only file of that \
                                     name, {}, ran instead",
                                    only.display()
                                ));
                                only
                            }
                            [] => {
                                return Err(Fail(format!(
                                    "{p} does not exist; give the path of an existing script, \
                                     or write your own script first with write_file"
                                )));
                            }
                            _ => {
                                return Err(Fail(format!(
                                    "{p} does not exist; the repository has {}: run that (`path`)",
                                    launch::same_name_in_repositories(&self.graphs, missing)
                                        .join(", ")
                                )));
                            }
                        }
                    }
                    Err(other) => return Err(Fail::from(other)),
                };
                if !path.is_file() {
                    return Err(Fail(format!("{} is not a file", path.display())));
                }
                let package = launch::PackageModule::of_file(&self.graphs, &path);
                match package.as_ref().and_then(|m| Some((m, m.launch()?))) {
                    Some((module, how)) => {
                        let shown = format!("`{}`", path.display());
                        notes.push(if module.runs_nothing() {
                            module.library_note(&shown)
                        } else {
                            module.note(&how, &shown)
                        });
                        PythonScript::code(module.code(&how))
                    }
                    None => {
                        if let Some(module) = package.as_ref().filter(|m| m.runs_nothing()) {
                            notes.push(module.library_note(&format!("`{}`", path.display())));
                        }
                        PythonScript::file(path)
                    }
                }
            }
            (None, None) => {
                return Err(Fail(
                    "give `code` (Python source to run) or `path` (a .py file to run); `args` \
                     are only the script's own command-line arguments (run other commands with \
                     run_shell)"
                        .into(),
                ));
            }
        };
        let run_args = args.args.as_deref().unwrap_or_default();
        let before = hints::OutputsInWorkDir::scan(&self.policy);
        let result = self
            .sandbox()?
            .run_python(script, run_args)
            .await
            .map_err(|e| Fail(format!("the sandbox could not run Python: {e}")))?;
        let mut report = self.exec_report(&result, code, &before);
        self.add_usage_help(&mut report, &result.combined_output(), result.exit_code)
            .await;
        if split.is_some() {
            let split_note = "a compound statement (`for`, `if`, `with`, ...) cannot follow `;`: \
                              it ran on a line of its own; write code on separate lines";
            notes.push(split_note.to_owned());
        }
        for note in notes {
            if !report.ends_with('\n') {
                report.push('\n');
            }
            report.push_str("Note: ");
            report.push_str(&note);
        }
        Ok(report)
    }

    async fn run_shell(&self, args: &RunShellArgs) -> ToolResult {
        let command = args.command.as_str();
        let before = hints::OutputsInWorkDir::scan(&self.policy);
        let result = self
            .sandbox()?
            .run_shell(command)
            .await
            .map_err(|e| Fail(format!("the sandbox could not run the command: {e}")))?;
        let mut report = self.exec_report(&result, None, &before);
        let output = result.combined_output();
        self.add_usage_help(&mut report, &output, result.exit_code)
            .await;
        // Measured (GitTaskBench Eparse_03, run 8): `cd <repo> && python
        // eparse/cli.py ...`, a relative import's ImportError.
        if let Some(script) = hints::relative_import_failure(&output)
            && let Some(module) = launch::PackageModule::of_file(&self.graphs, &script)
        {
            if !report.ends_with('\n') {
                report.push('\n');
            }
            let _ = writeln!(
                report,
                "Hint: {} is the module `{}` of a package and cannot run by its path: run it \
                 with run_python (`path`, and its arguments in `args`), which runs it as its \
                 package means, or as `python -m {}`",
                script.display(),
                module.name,
                module.name
            );
        }
        // Measured (GitTaskBench Eparse_02, run 8): `cd <repo> && python
        // cli.py ...` for `<repo>/eparse/cli.py`, three times.
        if let Some(missing) = hints::unopened_script(&output) {
            let found = launch::same_name_in_repositories(&self.graphs, &missing);
            if !found.is_empty() {
                if !report.ends_with('\n') {
                    report.push('\n');
                }
                let _ = writeln!(
                    report,
                    "Hint: {} does not exist; the repository has {}: run it with run_python \
                     (`path`), which runs a package's module as its package means",
                    missing.display(),
                    found.join(", ")
                );
            }
        }
        Ok(report)
    }

    /// After a command-line program's usage error, its help, run in the
    /// sandbox like any other command ([`hints::help_command`]).
    async fn add_usage_help(&self, report: &mut String, output: &str, exit_code: Option<i32>) {
        if exit_code == Some(0) {
            return;
        }
        let Some(command) = hints::help_command(output) else {
            return;
        };
        let Some(sandbox) = &self.sandbox else {
            return;
        };
        let Ok(help) = sandbox.run_shell(&command).await else {
            return;
        };
        let text = help.combined_output();
        let lines: Vec<&str> = text.lines().take(USAGE_HELP_LINES).collect();
        if help.exit_code != Some(0) || lines.is_empty() {
            return;
        }
        if !report.ends_with('\n') {
            report.push('\n');
        }
        let _ = writeln!(
            report,
            "The usage error's help, `{command}` (run for you):\n{}",
            lines.join("\n")
        );
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
        || {
            g.qualname(EntityId::Module(module))
                .unwrap_or_default()
                .to_owned()
        },
        |(_, n)| n.to_owned(),
    )
}

/// Writes `bytes` to `path` (checked by the policy), refusing to follow a
/// symlink put in its place since the check.
fn write_no_follow(path: &Path, bytes: &[u8]) -> Result<(), Fail> {
    write_file_no_follow(path, bytes)
        .map_err(|e| Fail(format!("cannot write {}: {e}", path.display())))
}

/// Writes `bytes` to `path`, refusing to follow a symlink at `path`
/// (`O_NOFOLLOW`): the one way the agent writes files a model chose.
pub(crate) fn write_file_no_follow(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    file.write_all(bytes)
}

/// Largest file `view_file`, `read_document` and `edit_file` read: a view
/// shows a few thousand tokens of it, and a file of gigabytes (a sparse
/// notebook, a dataset) must not be loaded to show them.
const MAX_READ_BYTES: u64 = 32 << 20;

impl Tools {
    /// The text of `path`, a file the policy allowed: opened inside its
    /// root without following a link out of it, only if it is a regular
    /// file (checked on the open descriptor, never blocking on a pipe), at
    /// most [`MAX_READ_BYTES`], and not binary.
    fn read_text(&self, path: &Path) -> Result<String, Fail> {
        let tree = self.policy.tree_of(path).ok_or_else(|| {
            Fail(format!(
                "{} is outside the task's files; list a directory of the task to see what is there",
                path.display()
            ))
        })?;
        let bytes = repo_files::read_in_tree(&tree, path, MAX_READ_BYTES).map_err(|e| {
            let advice = match e {
                repo_files::TreeFileError::TooLarge { .. } => {
                    "read parts of it with run_shell (head, tail, grep) or run_python"
                }
                _ => "check the path with list_directory",
            };
            Fail(format!(
                "{} not read: {}; {advice}",
                path.display(),
                context_pack::why_not_read(&e)
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
}

/// The script a Python command line in `run_python`'s `args` means:
/// `python -c CODE ARGS...`, `python FILE.py ARGS...`, `python -m MODULE
/// ARGS...` (a module of `graphs` through its console script when it has
/// no `__main__` block, see [`launch`]) or the same without the
/// interpreter; `None` for anything else.
fn command_line_script(args: &[String], graphs: &[Arc<RepoGraph>]) -> Option<RunPythonArgs> {
    let is_python = |word: &str| {
        let name = word.rsplit('/').next().unwrap_or(word);
        name == "python"
            || name
                .strip_prefix("python")
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
    };
    let rest = match args.first() {
        Some(first) if is_python(first) => &args[1..],
        _ => args,
    };
    match rest {
        [flag, code, more @ ..] if flag == "-c" && !code.trim().is_empty() => Some(RunPythonArgs {
            code: Some(code.clone()),
            path: None,
            args: Some(more.to_vec()),
        }),
        [file, more @ ..] if file.ends_with(".py") => Some(RunPythonArgs {
            code: None,
            path: Some(file.clone()),
            args: Some(more.to_vec()),
        }),
        [flag, name, more @ ..] if flag == "-m" && launch::is_module_name(name) => {
            // Known: from its import root, and through its console script
            // when it has no `__main__` block.
            let code = match launch::PackageModule::by_name(graphs, name) {
                Some(module) => module.code(&module.launch().unwrap_or(launch::Launch::Module)),
                None => launch::as_main(name),
            };
            Some(RunPythonArgs {
                code: Some(code),
                path: None,
                args: Some(more.to_vec()),
            })
        }
        _ => None,
    }
}

/// When a name looked up in the repository is one of the agent's own tools
/// (a small model, after a failed run, searches the code for `run_python`),
/// what to tell it instead of "try other words".
fn tool_not_code(name: &str) -> Option<String> {
    let name = name.trim().trim_end_matches("()").trim_matches('`');
    let tool = ToolName::ALL.iter().find(|t| t.as_str() == name)?;
    let how = match tool {
        ToolName::RunPython | ToolName::RunShell => {
            " with the code or command itself, and read its reply"
        }
        _ => "",
    };
    Some(format!(
        "`{name}` is one of your tools, not code of the repository: call it directly{how}. \
         To look into the repository, search for the names of its functions, classes or files."
    ))
}
