//! `repo-agent mcp`: the MCP server (`repo-mcp`) for other coding agents.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;

/// `repo-agent mcp`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// A repository to serve (repeat for several; the first is the primary:
    /// relative paths resolve there). Default: the current directory.
    #[arg(long = "repo", value_name = "DIR")]
    repos: Vec<PathBuf>,
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of
    /// standard input and output; loopback addresses only (127.0.0.1:PORT,
    /// [::1]:PORT; port 0 picks one and prints it on stderr).
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Offer run_python and run_shell, run in the sandbox in a working
    /// directory of the server's own; the repositories stay read-only.
    #[arg(long)]
    allow_exec: bool,
    #[command(flatten)]
    sandbox: crate::cmd::SandboxArgs,
    /// Do not read or write the analysis cache (the facts are then kept in
    /// memory only, for the server's life).
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let mut config = repo_mcp::McpConfig::builder();
    if args.repos.is_empty() {
        config = config.repository(std::env::current_dir().context("no current directory")?);
    }
    for repo in &args.repos {
        config = config.repository(repo);
    }
    if !args.no_cache {
        config = config.cache_home(agent::repo_agent_home());
    }
    if args.allow_exec {
        let run_as = args
            .sandbox
            .run_as
            .resolve(rustix::process::geteuid().as_raw())
            .map_err(anyhow::Error::msg)?;
        config = config.allow_exec(repo_mcp::ExecPolicy {
            isolation: args.sandbox.isolation.into(),
            run_as,
            package_registry: !args.sandbox.no_network,
        });
    }
    let config = config.build()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let server = repo_mcp::McpServer::new(config).await?;
        match args.listen {
            None => server.serve_stdio().await?,
            Some(addr) => {
                let shutdown = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                server
                    .serve_http(
                        addr,
                        |bound| eprintln!("repo-agent mcp: listening on http://{bound}/mcp"),
                        shutdown,
                    )
                    .await?
            }
        }
        anyhow::Ok(())
    })
}
