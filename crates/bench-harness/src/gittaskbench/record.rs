//! Per-task records and the results file they are appended to.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::gittaskbench::domains::Domain;
use crate::results::ResultRecord;

/// How a task's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The agent called `finish`.
    Finished,
    /// The agent's turn budget ran out.
    MaxTurns,
    /// The agent's token budget ran out.
    MaxTokens,
    /// The per-task time limit was reached.
    Timeout,
    /// The agent stopped the episode: the model repeated one call with
    /// the same result ([`agent::Status::Stuck`]).
    Stuck,
    /// The model failed, or the task could not be set up.
    Error,
    /// The agent panicked.
    Crashed,
    /// The task's files in the checkout are unusable.
    Invalid,
    /// Grade-only mode: outputs produced elsewhere were graded.
    Graded,
}

impl RunStatus {
    /// The snake_case name (as in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Finished => "finished",
            RunStatus::MaxTurns => "max_turns",
            RunStatus::MaxTokens => "max_tokens",
            RunStatus::Timeout => "timeout",
            RunStatus::Stuck => "stuck",
            RunStatus::Error => "error",
            RunStatus::Crashed => "crashed",
            RunStatus::Invalid => "invalid",
            RunStatus::Graded => "graded",
        }
    }
}

impl From<agent::Status> for RunStatus {
    fn from(status: agent::Status) -> Self {
        match status {
            agent::Status::Finished => RunStatus::Finished,
            agent::Status::MaxTurns => RunStatus::MaxTurns,
            agent::Status::MaxTokens => RunStatus::MaxTokens,
            agent::Status::Timeout => RunStatus::Timeout,
            agent::Status::Stuck => RunStatus::Stuck,
            agent::Status::Error => RunStatus::Error,
            // Read from a trajectory whose agent was killed mid-run.
            agent::Status::Killed => RunStatus::Crashed,
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one task gave: the grader's verdict and the agent's costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task ID.
    pub task: String,
    /// Its repository.
    pub repo: String,
    /// The repository's domain.
    pub domain: Domain,
    /// The grader's `Process`: the output could be read and checked.
    pub process: bool,
    /// The grader's `Result`: the task's criterion is met.
    pub result: bool,
    /// The grader's comments (or why there was nothing to grade).
    pub comments: String,
    /// How the agent's run ended.
    pub status: RunStatus,
    /// Model turns.
    pub turns: u32,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Estimated cost in dollars.
    pub cost: f64,
    /// Wall-clock time of the agent's run, in milliseconds.
    pub wall_ms: u64,
    /// The agent's JSONL trajectory.
    pub trajectory: Option<PathBuf>,
    /// The file (or directory) given to the grader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<PathBuf>,
    /// The agent's final message, or the error that stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// How the repository's environment was prepared (`--prepare-env`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentSummary>,
}

/// A prepared environment, as a task's record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentSummary {
    /// Every declared requirement installed.
    pub complete: bool,
    /// Every import check passed.
    pub imports_ok: bool,
    /// The failing requirements with pip's reasons.
    pub failing: Vec<String>,
    /// Taken from the cache.
    pub reused: bool,
    /// Time to build or find it.
    pub seconds: f64,
}

impl EnvironmentSummary {
    /// The summary of `report`.
    pub fn of(report: &agent::environment::EnvironmentReport) -> Self {
        Self {
            complete: report.complete(),
            imports_ok: report.imports.iter().all(|i| i.ok),
            failing: report
                .failing
                .iter()
                .map(|f| format!("{}: {}", f.requirement, f.reason))
                .collect(),
            reused: report.reused,
            seconds: report.seconds,
        }
    }
}

impl ResultRecord for TaskRecord {
    fn task_id(&self) -> &str {
        &self.task
    }
}

impl TaskRecord {
    /// A record for a task that got no agent run (grade-only, invalid).
    pub fn empty(task: &str, repo: &str, domain: Domain, status: RunStatus) -> Self {
        TaskRecord {
            task: task.to_owned(),
            repo: repo.to_owned(),
            domain,
            process: false,
            result: false,
            comments: String::new(),
            status,
            turns: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost: 0.0,
            wall_ms: 0,
            trajectory: None,
            output: None,
            message: None,
            environment: None,
        }
    }

    /// Prompt plus completion tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::results::{ResultsFile, latest_per_task};

    #[test]
    fn the_latest_record_wins_and_bad_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let file = ResultsFile::new(&path);
        let mut a = TaskRecord::empty("A_01", "A", Domain::Other, RunStatus::Error);
        file.append(&a).unwrap();
        // A torn line (hand edit) without a newline.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"task\": \"broken\"");
        std::fs::write(&path, text).unwrap();
        a.result = true;
        a.status = RunStatus::Finished;
        file.append(&a).unwrap();
        let records = file.load().unwrap();
        assert_eq!(records.len(), 2);
        let latest = latest_per_task(&records);
        assert_eq!(latest.len(), 1);
        assert!(latest[0].result);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file is left behind"
        );
    }
}
