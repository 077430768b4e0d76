//! `repo-agent`: use an existing code repository to solve a task.
//!
//! The binary is glue: argument parsing, wiring and printing. Every
//! capability lives in a library crate (`repo-graph` for analysis, `importance` for ranking, `context-pack` for what the model sees, `agent`'s library for the loop).

// The one unsafe call of the binary: installing tree-sitter's allocator.
#![allow(unsafe_code)]

mod cmd;
mod output;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "repo-agent",
    version,
    about = "Understand and use an existing code repository to solve a task"
)]
struct Cli {
    /// Log verbosity for diagnostics on stderr (error, warn, info, debug, trace).
    #[arg(long, global = true, default_value = "warn", env = "REPO_AGENT_LOG")]
    log: String,
    #[command(subcommand)]
    command: Command,
}

/// Routes tree-sitter's C allocations to mimalloc. tree-sitter allocates
/// and frees parse stacks and tree nodes one at a time; with glibc's malloc
/// on rayon's worker threads that made a cold analysis of Django 17 % slower
/// (docs/PERFORMANCE.md). Rust's own allocations stay with the system
/// allocator, which gave a lower peak memory.
fn parse_with_mimalloc() {
    // SAFETY: called first in `main`, on the only thread, before any
    // tree-sitter object exists; the functions are mimalloc's C malloc
    // family, which have tree-sitter's signatures and are thread-safe.
    unsafe {
        tree_sitter::set_allocator(Some(tree_sitter::Allocator {
            malloc: libmimalloc_sys::mi_malloc,
            calloc: libmimalloc_sys::mi_calloc,
            realloc: libmimalloc_sys::mi_realloc,
            free: libmimalloc_sys::mi_free,
        }));
    }
}

/// `repo-agent run`'s exit codes (also in the README).
const EXIT_CODES: &str = "Exit codes:\n  \
    0  the model finished the task (called `finish`)\n  \
    1  an error: the task, the model or the sandbox could not be set up, or the model failed\n  \
    2  a usage error (bad flags)\n  \
    3  the wall-clock limit (--timeout) was reached\n  \
    4  a budget ran out (--max-turns or --max-tokens)\n  \
    5  the model finished without writing an output file";

/// `repo-agent generate`'s exit codes (also in the README).
const GENERATE_EXIT_CODES: &str = "Exit codes:\n  \
    0  every check passed (verified)\n  \
    1  an error, or no blueprint could be made, or the model failed\n  \
    2  a usage error (bad flags)\n  \
    3  the wall-clock limit (--timeout) was reached\n  \
    4  the token budget (--max-tokens) ran out\n  \
    5  checks still fail after the last repair round";

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Build the structural model of a repository (HCT, FCG, MDG) and print it.
    Analyze(cmd::analyze::Args),
    /// Rank modules, classes and functions by importance (RepoMaster's scores).
    Rank(cmd::rank::Args),
    /// Print the initial repository context an agent starts from.
    Context(cmd::context::ContextArgs),
    /// Print the structure-preserving code view of a file or entity.
    View(cmd::context::ViewArgs),
    /// Solve a task with a repository: explore it, write and run code, produce the outputs.
    #[command(after_help = EXIT_CODES)]
    Run(cmd::run::Args),
    /// Build a repository from a specification: blueprint, code with memory, checks and repair.
    #[command(after_help = GENERATE_EXIT_CODES)]
    Generate(cmd::generate::Args),
    /// Find the repository for a task on GitHub: search, rank by README, optionally clone it.
    Find(cmd::find::Args),
    /// Serve the repository's structural model to other coding agents over MCP (stdio or HTTP).
    Mcp(cmd::mcp::Args),
    /// Internal: writes the summary of a run whose agent was killed.
    #[command(name = agent::GUARD_SUBCOMMAND, hide = true)]
    Guard(GuardArgs),
}

/// The hidden mode the agent re-executes itself in to guard its
/// trajectory (`agent::guard`).
#[derive(clap::Args)]
struct GuardArgs {
    /// The agent's process id (the guard's parent).
    #[arg(long)]
    agent_pid: u32,
    /// `run` or `generate`.
    #[arg(long)]
    kind: String,
}

fn main() -> ExitCode {
    parse_with_mimalloc();
    // Before anything else: every mode, the guard's too.
    agent::not_dumpable();
    let cli = Cli::parse();
    if let Command::Guard(args) = &cli.command {
        return match agent::GuardedRun::from_name(&args.kind) {
            Some(run) => agent::run_guard(args.agent_pid, run),
            None => ExitCode::from(2),
        };
    }
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Analyze(args) => cmd::analyze::run(args).map(|()| 0),
        Command::Rank(args) => cmd::rank::run(args).map(|()| 0),
        Command::Context(args) => cmd::context::run_context(args).map(|()| 0),
        Command::View(args) => cmd::context::run_view(args).map(|()| 0),
        Command::Run(args) => cmd::run::run(args),
        Command::Generate(args) => cmd::generate::run(args),
        Command::Find(args) => cmd::find::run(args).map(|()| 0),
        Command::Mcp(args) => cmd::mcp::run(args).map(|()| 0),
        Command::Guard(_) => Ok(2),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
