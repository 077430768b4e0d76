//! One module per subcommand, and the flags `run` and `generate` share.

pub mod analyze;
pub mod context;
pub mod find;
pub mod generate;
pub mod mcp;
pub mod rank;
pub mod run;

pub use repo_agent_cli::{ModelArgs, SandboxArgs};

/// Starts the guard that writes a `killed` summary if this process dies
/// before writing its own (`agent::guard`). A guard that cannot start is
/// a warning, not a failure: it is a safety net under the run.
pub fn start_guard(trajectory: &agent::Trajectory, run: agent::GuardedRun) -> Option<agent::Guard> {
    let started = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|exe| agent::Guard::start(&exe, trajectory, run).map_err(|e| e.to_string()));
    match started {
        Ok(guard) => guard,
        Err(error) => {
            tracing::warn!(%error, "no trajectory guard: a killed run will leave no summary");
            None
        }
    }
}
