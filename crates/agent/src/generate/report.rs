//! What a generation run records: its trajectory events (one per step,
//! with the tokens of every model call) and the final report written to
//! `DIR/.repo-agent/report.json`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::blueprint::BlueprintOrigin;
use super::verify::{Check, CheckKind};

/// The phases of a generation run, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GeneratePhase {
    /// The specification turned into a blueprint (seed 004 section 3.1).
    Blueprint,
    /// One file written from the blueprint and the code memory (3.2.1).
    WriteFile,
    /// Reference code retrieved for a file (3.2.2).
    Retrieve,
    /// The static checks (3.3.1).
    StaticChecks,
    /// Install, start, call and test in the sandbox (3.3.2).
    DynamicChecks,
    /// A repair round with the edit tools (its turns are the episode
    /// events that follow).
    Repair,
    /// The files of the round that passed the most checks put back,
    /// because a later repair left fewer passing (or was stopped before
    /// its checks ran).
    Restore,
}

impl GeneratePhase {
    /// The name shown on stderr and in the trajectory.
    pub fn as_str(self) -> &'static str {
        match self {
            GeneratePhase::Blueprint => "blueprint",
            GeneratePhase::WriteFile => "write_file",
            GeneratePhase::Retrieve => "retrieve",
            GeneratePhase::StaticChecks => "static_checks",
            GeneratePhase::DynamicChecks => "dynamic_checks",
            GeneratePhase::Repair => "repair",
            GeneratePhase::Restore => "restore",
        }
    }
}

/// `generate_start`: what a generation run was asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateStartEvent {
    /// The specification file.
    pub spec: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// Reference repositories.
    pub references: Vec<PathBuf>,
    /// The model's name.
    pub model: String,
    /// Most repair rounds.
    pub max_iterations: u32,
    /// Sections the specification was segmented into.
    pub sections: usize,
    /// Endpoints it declares (deterministic extraction).
    pub declared_endpoints: Vec<String>,
    /// The port it states.
    pub declared_port: Option<u16>,
}

/// `step`: one step of a phase (a model call, a retrieval, a check pass).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEvent {
    /// The phase.
    pub phase: GeneratePhase,
    /// The file the step is about, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Model usage of the step (zero for steps without a model call).
    pub usage: llm::Usage,
    /// Wall-clock time of the step.
    pub ms: u64,
    /// What came of it, in short.
    pub result: String,
    /// The checks it ran, for check steps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

/// How a generation run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GenerateStatus {
    /// Every check passed.
    Verified,
    /// Some checks still fail after the last repair round.
    ChecksFailed,
    /// No blueprint could be made (the model gave none, and the
    /// specification states no endpoint to build one from).
    NoBlueprint,
    /// The model failed in a way retrying cannot fix.
    ModelError,
    /// The token budget ran out.
    MaxTokens,
    /// The wall-clock limit was reached.
    Timeout,
}

impl GenerateStatus {
    /// The exit code of `repo-agent generate`: 0 when verified.
    pub fn exit_code(self) -> u8 {
        match self {
            GenerateStatus::Verified => 0,
            GenerateStatus::ModelError | GenerateStatus::NoBlueprint => 1,
            GenerateStatus::Timeout => 3,
            GenerateStatus::MaxTokens => 4,
            GenerateStatus::ChecksFailed => 5,
        }
    }
}

/// Wall-clock time per phase, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseTimes {
    /// Blueprint.
    pub blueprint_ms: u64,
    /// Writing files (retrieval included).
    pub write_ms: u64,
    /// Static checks, all rounds.
    pub static_ms: u64,
    /// Dynamic checks, all rounds.
    pub dynamic_ms: u64,
    /// Repair rounds.
    pub repair_ms: u64,
}

/// One verification round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    /// 0 for the verification of the first draft, then one per repair.
    pub iteration: u32,
    /// Checks that passed.
    pub passed: usize,
    /// The checks that failed: kind and the first line of the evidence.
    pub failed: Vec<String>,
}

/// `generated`: the end of a generation run; always the last line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateSummary {
    /// How it ended.
    pub status: GenerateStatus,
    /// The output directory.
    pub out: PathBuf,
    /// Who wrote the blueprint.
    pub blueprint: Option<BlueprintOrigin>,
    /// Files written.
    pub files: Vec<String>,
    /// Checks of the last round that passed.
    pub checks_passed: usize,
    /// Checks of the last round that failed.
    pub checks_failed: usize,
    /// Repair rounds run.
    pub iterations: u32,
    /// Every verification round.
    pub rounds: Vec<Round>,
    /// Model calls.
    pub model_calls: u64,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// Estimated cost in dollars.
    pub cost: f64,
    /// Wall-clock time.
    pub wall_ms: u64,
    /// Time per phase.
    pub phases: PhaseTimes,
    /// Why it ended this way, when it is not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The final report: the summary, the last round's checks and what the
/// blueprint phase corrected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateReport {
    /// The summary.
    pub summary: GenerateSummary,
    /// Every check of the last round.
    pub checks: Vec<Check>,
    /// Corrections made to the model's blueprint.
    pub corrections: Vec<String>,
    /// Endpoints that could not be called (parameters without an example).
    pub not_probed: Vec<String>,
    /// Reference files offered per target file.
    pub retrieved: Vec<(String, String)>,
}

impl GenerateReport {
    /// The report as Markdown: what passed and what did not.
    pub fn to_markdown(&self) -> String {
        use std::fmt::Write as _;
        let s = &self.summary;
        let mut out = format!(
            "# Generation report\n\nStatus: **{:?}** after {} repair rounds; {} checks passed, {} failed; {} model calls, {} tokens, {:.1} s.\n\n",
            s.status,
            s.iterations,
            s.checks_passed,
            s.checks_failed,
            s.model_calls,
            s.total_tokens,
            s.wall_ms as f64 / 1000.0
        );
        out.push_str("| check | result | detail |\n|---|---|---|\n");
        for c in &self.checks {
            let first = c.detail.lines().next().unwrap_or("");
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                kind_name(c.kind),
                if c.passed { "pass" } else { "FAIL" },
                context_pack::markdown::one_line(first).replace('|', "\\|")
            );
        }
        if !self.not_probed.is_empty() {
            let _ = writeln!(out, "\nNot called: {}", self.not_probed.join("; "));
        }
        if !self.corrections.is_empty() {
            let _ = writeln!(
                out,
                "\nBlueprint corrections: {}",
                self.corrections.join("; ")
            );
        }
        out
    }
}

/// A check kind's name as written in JSON.
pub fn kind_name(kind: CheckKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
