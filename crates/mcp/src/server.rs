//! The MCP handler: tools and resources over the served repositories.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agent::run::tools::policy::{Access, PathPolicy, RootKind};
use agent::run::tools::{ToolGroup, ToolName, ToolOptions, Tools};
use context_pack::{BlockKind, ContextBuilder, TokenCounter};
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};

use crate::repos::{Counters, ServedRepo, unique_names};
use crate::{Error, ExecPolicy, McpConfig};

/// The budget of the context the resources hold, in tokens: what `run`
/// gives the agent.
const RESOURCE_BUDGET: usize = 8_000;

/// The URI scheme of the resources.
const SCHEME: &str = "repo-agent://";

/// The MCP server: cheap to clone (every clone serves the same
/// repositories and shares their analyses), as the HTTP transport makes one
/// handler per session.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    repos: Vec<Arc<ServedRepo>>,
    offered: Vec<ToolName>,
    counter: TokenCounter,
    /// The sandbox and its working directory, with `--allow-exec`.
    exec: Option<(sandbox::Sandbox, tempfile::TempDir)>,
    /// The tools over the current graphs; rebuilt when a graph changes.
    /// The lock also makes concurrent calls wait for one analysis rather
    /// than each run their own.
    tools: tokio::sync::Mutex<Option<Arc<Tools>>>,
    counters: Counters,
    calls: AtomicU64,
}

/// What the server has done so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Tool calls and resource reads answered.
    pub calls: u64,
    /// Analyses run, the first of each repository included: more than one
    /// per repository only when its files changed.
    pub analyses: u64,
    /// Freshness checks (a directory walk each).
    pub checks: u64,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let roots: Vec<_> = self.inner.repos.iter().map(|r| &r.root).collect();
        f.debug_struct("McpServer")
            .field("repositories", &roots)
            .field("offered", &self.inner.offered)
            .finish()
    }
}

impl McpServer {
    /// A server for `config`'s repositories. Nothing is analysed yet: the
    /// first call does it (and a client that lists tools first pays
    /// nothing). With code execution allowed, the sandbox is set up here,
    /// so a sandbox that cannot be had fails the start, not a call.
    pub async fn new(config: McpConfig) -> Result<Self, Error> {
        let names = unique_names(&config.repositories);
        let repos = config
            .repositories
            .iter()
            .zip(names)
            .map(|(root, name)| {
                Arc::new(ServedRepo::new(
                    root.clone(),
                    name,
                    config.cache_home.as_deref(),
                ))
            })
            .collect();
        let exec = match config.exec {
            Some(policy) => Some(exec_sandbox(&config, policy).await?),
            None => None,
        };
        let offered = ToolName::ALL
            .iter()
            .copied()
            .filter(|tool| match tool.group() {
                ToolGroup::Exploration | ToolGroup::Repository => true,
                ToolGroup::Core => match tool {
                    ToolName::ViewFile | ToolName::ReadDocument => true,
                    ToolName::RunPython | ToolName::RunShell => exec.is_some(),
                    // Nothing writes to a served repository, and there is
                    // no episode to finish.
                    _ => false,
                },
            })
            .collect();
        let counter = TokenCounter::new(context_pack::Encoding::default())
            .map_err(|e| Error::Setup(format!("cannot load the token counter: {e}")))?;
        Ok(McpServer {
            inner: Arc::new(Inner {
                repos,
                offered,
                counter,
                exec,
                tools: tokio::sync::Mutex::new(None),
                counters: Counters::default(),
                calls: AtomicU64::new(0),
            }),
        })
    }

    /// The tools offered, in order.
    pub fn offered(&self) -> &[ToolName] {
        &self.inner.offered
    }

    /// What the server has done so far.
    pub fn stats(&self) -> ServerStats {
        ServerStats {
            calls: self.inner.calls.load(Ordering::Relaxed),
            analyses: self.inner.counters.analyses.load(Ordering::Relaxed),
            checks: self.inner.counters.checks.load(Ordering::Relaxed),
        }
    }

    /// Serves one client over standard input and output until it closes
    /// its end (EOF), then returns.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Session(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| Error::Session(e.to_string()))?;
        Ok(())
    }

    /// The tools over the repositories as they are now: each repository's
    /// freshness is checked (a walk), changed ones are analysed again, and
    /// the tools are rebuilt only when a graph changed.
    async fn tools(&self) -> Result<Arc<Tools>, ErrorData> {
        let mut slot = self.inner.tools.lock().await;
        let mut graphs = Vec::with_capacity(self.inner.repos.len());
        let mut changed = slot.is_none();
        for repo in &self.inner.repos {
            let repo = Arc::clone(repo);
            let inner = Arc::clone(&self.inner);
            let (graph, fresh) = tokio::task::spawn_blocking(move || repo.fresh(&inner.counters))
                .await
                .map_err(|e| ErrorData::internal_error(format!("the analysis stopped: {e}"), None))?
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            changed |= fresh;
            graphs.push(graph);
        }
        if let (false, Some(tools)) = (changed, slot.as_ref()) {
            return Ok(Arc::clone(tools));
        }
        let tools = Arc::new(self.build_tools(graphs));
        *slot = Some(Arc::clone(&tools));
        Ok(tools)
    }

    fn build_tools(&self, graphs: Vec<Arc<repo_graph::RepoGraph>>) -> Tools {
        let inner = &self.inner;
        let (base, sandbox) = match &inner.exec {
            Some((sandbox, dir)) => (dir.path().to_path_buf(), Some(sandbox.clone())),
            None => (inner.repos[0].root.clone(), None),
        };
        let mut policy = PathPolicy::new(&base);
        if let Some((_, dir)) = &inner.exec {
            policy = policy.root(dir.path(), RootKind::WorkDir, Access::ReadWrite);
        }
        for repo in &inner.repos {
            policy = policy.root(&repo.root, RootKind::Repository, Access::Read);
        }
        Tools::shared(
            graphs,
            policy,
            sandbox,
            inner.counter.clone(),
            ToolOptions::default(),
        )
        .offering(inner.offered.clone())
    }

    /// The MCP description of one tool, from the agent's declaration.
    fn describe(tool: ToolName) -> Tool {
        let schema = match tool.parameters() {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        Tool::new(tool.as_str(), tool.description(), schema)
    }

    fn resource_uri(repo: &ServedRepo, block: Option<BlockKind>) -> String {
        match block {
            None => format!("{SCHEME}{}/context", repo.name),
            Some(kind) => format!("{SCHEME}{}/context/{}", repo.name, block_name(kind)),
        }
    }

    /// The context of repository `i` at the resources' budget.
    async fn context(&self, i: usize) -> Result<context_pack::RepoContext, ErrorData> {
        let tools = self.tools().await?;
        let graph = tools
            .graphs()
            .get(i)
            .ok_or_else(|| ErrorData::internal_error("no such repository", None))?;
        let ranking = tools
            .ranking(i)
            .ok_or_else(|| ErrorData::internal_error("no ranking", None))?;
        ContextBuilder::new(graph, ranking)
            .budget(RESOURCE_BUDGET)
            .build()
            .map_err(|e| ErrorData::internal_error(format!("cannot build the context: {e}"), None))
    }
}

/// The sandbox for `--allow-exec` and its working directory (a temporary
/// directory of the server's own; the repositories are mounted read-only).
async fn exec_sandbox(
    config: &McpConfig,
    policy: ExecPolicy,
) -> Result<(sandbox::Sandbox, tempfile::TempDir), Error> {
    let dir = tempfile::Builder::new()
        .prefix("repo-agent-mcp-")
        .tempdir()
        .map_err(|source| Error::Io {
            context: "cannot create the working directory for --allow-exec".to_owned(),
            source,
        })?;
    let mut builder = sandbox::SandboxConfig::builder(dir.path())
        .isolation(policy.isolation)
        .run_as(policy.run_as)
        .package_registry(policy.package_registry)
        .read_write_path(dir.path());
    for repo in &config.repositories {
        builder = builder.read_only_path(repo);
    }
    let sandbox = sandbox::Sandbox::new(builder.build()?).await?;
    tracing::info!(isolation = ?sandbox.isolation(), work_dir = %dir.path().display(), "code execution allowed");
    Ok((sandbox, dir))
}

/// The blocks of a context without a task (the task's hits need one).
const BLOCKS: &[BlockKind] = &[
    BlockKind::Readme,
    BlockKind::Usage,
    BlockKind::ModuleSummaries,
    BlockKind::CoreComponents,
    BlockKind::Unread,
    BlockKind::ModulePaths,
];

/// A block's name in resource URIs.
fn block_name(kind: BlockKind) -> &'static str {
    match kind {
        BlockKind::Readme => "readme",
        BlockKind::TaskHits => "task_hits",
        BlockKind::Usage => "usage",
        BlockKind::ModuleSummaries => "module_summaries",
        BlockKind::CoreComponents => "core_components",
        BlockKind::Unread => "unread",
        BlockKind::ModulePaths => "module_paths",
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let roots: Vec<String> = self
            .inner
            .repos
            .iter()
            .map(|r| r.root.display().to_string())
            .collect();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("repo-agent", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "repo-agent's structural model of {}: start with `overview` (pass your task) for \
             the README, usage, the matching code and the most important modules; then \
             `search_code`, `view_code` (files or qualified names), `find_callers`/`find_callees`, \
             `module_dependencies`, `dependency_path`, `routes`, `usage` and `rank`. Paths are \
             relative to the first repository or absolute inside a served one.",
            roots.join(", ")
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner
                .offered
                .iter()
                .map(|t| Self::describe(*t))
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner
            .offered
            .iter()
            .find(|t| t.as_str() == name)
            .map(|t| Self::describe(*t))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let name = request.name.to_string();
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let call = llm::ToolCall::new("mcp", name.as_str(), arguments);
        // Protocol errors (no such tool, arguments that do not fit the
        // schema) before any analysis; what the tool itself refuses (a path
        // outside the repositories, an unknown name) is a tool result with
        // `isError`, which the client's model reads.
        if let Err(error) = agent::run::tools::parse(&call, &self.inner.offered) {
            let offered: Vec<&str> = self.inner.offered.iter().map(|t| t.as_str()).collect();
            return Err(ErrorData::invalid_params(
                format!("{error} (this server's tools: {})", offered.join(", ")),
                None,
            ));
        }
        let tools = self.tools().await?;
        let output = tools.call(&call).await;
        let content = vec![ContentBlock::text(output.text)];
        Ok(if output.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut resources = Vec::new();
        for repo in &self.inner.repos {
            let mut whole = Resource::new(
                Self::resource_uri(repo, None),
                format!("{} context", repo.name),
            );
            whole.description = Some(format!(
                "The initial context of {} ({RESOURCE_BUDGET} tokens): README, usage, module \
                 summaries, core classes and module paths",
                repo.root.display()
            ));
            whole.mime_type = Some("text/markdown".to_owned());
            resources.push(whole);
            for &kind in BLOCKS {
                let mut block = Resource::new(
                    Self::resource_uri(repo, Some(kind)),
                    format!("{} {}", repo.name, block_name(kind)),
                );
                block.mime_type = Some("text/markdown".to_owned());
                resources.push(block);
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let uri = request.uri;
        let not_found = || {
            ErrorData::resource_not_found(
                format!(
                    "no resource {uri}: resources/list names them (repo-agent://NAME/context[/BLOCK])"
                ),
                None,
            )
        };
        let rest = uri.strip_prefix(SCHEME).ok_or_else(not_found)?;
        let (name, path) = rest.split_once('/').ok_or_else(not_found)?;
        let i = self
            .inner
            .repos
            .iter()
            .position(|r| r.name == name)
            .ok_or_else(not_found)?;
        let context = self.context(i).await?;
        let text = match path.strip_prefix("context") {
            Some("") => context.render_markdown(),
            Some(block) => {
                let block = block.strip_prefix('/').ok_or_else(not_found)?;
                if !BLOCKS.iter().any(|kind| block_name(*kind) == block) {
                    return Err(not_found());
                }
                context
                    .blocks
                    .iter()
                    .find(|b| block_name(b.kind) == block)
                    .map(|b| b.text.clone())
                    // A block the budget or the repository left empty.
                    .unwrap_or_default()
            }
            None => return Err(not_found()),
        };
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri.clone())]).into())
    }
}
