//! An MCP server over repo-graph: the agent's exploration tools and the
//! repository's context, for the coding agents people already use (Claude
//! Code, Codex, Cursor, VS Code, DeepCode).
//!
//! ```no_run
//! # async fn serve() -> Result<(), repo_mcp::Error> {
//! let server = repo_mcp::McpServer::new(
//!     repo_mcp::McpConfig::builder()
//!         .repository("path/to/repo")
//!         .build()?,
//! )
//! .await?;
//! // Until the client closes standard input.
//! server.serve_stdio().await
//! # }
//! ```
//!
//! The tools are the agent's own ([`agent::run::tools::ToolName`]): the
//! same names, descriptions, argument structs and JSON Schemas, so a tool
//! cannot be offered here with one shape and run with another. Offered:
//! the exploration tools (directory tree, code and file views, search,
//! callers and callees, module dependencies and import paths), the
//! document reader, and the whole-repository views the agent finds in its
//! prompt (`overview`, `rank`, `routes`, `usage`). `run_python` and
//! `run_shell` are offered only with [`McpConfigBuilder::allow_exec`], and
//! then run in the sandbox; nothing writes to a served repository.
//!
//! Each repository's context blocks are MCP resources
//! (`repo-agent://NAME/context` and `repo-agent://NAME/context/BLOCK`).
//!
//! Analysis is cached and incremental: before each call the server takes
//! the tree's [`repo_graph::TreeStamp`] (a directory walk that opens no
//! file) and analyses again only when it changed, and then only the files
//! whose contents changed are parsed again (the analyzer keeps every
//! file's facts). Paths are confined to the served repositories by the
//! agent's path policy.

#![deny(missing_docs)]

mod config;
mod http;
mod repos;
mod server;

pub use config::{ExecPolicy, McpConfig, McpConfigBuilder};
pub use server::{McpServer, ServerStats};

/// Why the server could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No repository was named.
    #[error("no repository to serve: name one with --repo DIR")]
    NoRepository,
    /// A repository path that is not a readable directory.
    #[error("{path} is not a directory that can be read: {reason}")]
    NotADirectory {
        /// The path as given.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The analysis of a repository failed.
    #[error("cannot analyse {path}: {source}")]
    Analysis {
        /// The repository.
        path: std::path::PathBuf,
        /// The analyzer's error.
        #[source]
        source: repo_graph::Error,
    },
    /// The sandbox for `--allow-exec` could not be made.
    #[error("cannot set up the sandbox for --allow-exec: {0}")]
    Sandbox(#[from] sandbox::SandboxError),
    /// The HTTP transport was asked to listen beyond this machine.
    #[error(
        "{0} is not a loopback address: the MCP server listens on 127.0.0.1 or ::1 only, \
         since anyone who reaches it can read the served repositories"
    )]
    NotLoopback(std::net::SocketAddr),
    /// An I/O error (the listening socket, the working directory).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Something the server needs could not be set up.
    #[error("cannot start the MCP server: {0}")]
    Setup(String),
    /// The MCP session ended with an error.
    #[error("the MCP session failed: {0}")]
    Session(String),
}
