//! Why tasks failed, read from their trajectories (issue 28, item 5): the
//! signals a trajectory shows (a missing module, a call refused for its
//! arguments, the same call repeated, an API error in a traceback, turns
//! spent only looking, ...) and one primary class per failed task, so a
//! change to the agent can be aimed at the class that costs most and
//! measured by the same reading afterwards. Every report's failures carry
//! their class ([`crate::Failure`]).
//!
//! ```
//! use bench_harness::gittaskbench::failures::{FailureClass, Signals};
//!
//! let mut signals = Signals::default();
//! signals.observe_tool("run_python", "Traceback ...\nModuleNotFoundError: No module named 'x'", false);
//! assert_eq!(signals.primary(false, true), Some(FailureClass::Environment));
//! ```

use agent::trajectory::{ToolOutcome, Trajectory, TrajectoryEvent};
use serde::{Deserialize, Serialize};

use crate::gittaskbench::record::TaskRecord;

/// Why a task failed, most specific first: [`Signals::primary`] picks the
/// first class, in this order, that the trajectory shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// A module or package was missing when code ran.
    Environment,
    /// Code called the repository (or Python) wrongly: an attribute,
    /// name, type or import error in a traceback.
    WrongApi,
    /// Calls refused for their arguments or tool (the model misused the
    /// tools), at least two of them.
    ToolMisuse,
    /// The same call with the same result, at least twice.
    RepeatedActions,
    /// The conversation outgrew the context window.
    ContextOverflow,
    /// Every reply only looked: nothing was written or run.
    NoAction,
    /// Code ran, but no `output*` file was left for the grader.
    OutputMissing,
    /// An output was graded and did not meet the task's criterion (or
    /// could not be read as the task's format).
    WrongOutput,
}

impl FailureClass {
    /// Every class, in the order [`Signals::primary`] tries them.
    pub const ALL: [FailureClass; 8] = [
        FailureClass::Environment,
        FailureClass::WrongApi,
        FailureClass::ToolMisuse,
        FailureClass::RepeatedActions,
        FailureClass::ContextOverflow,
        FailureClass::NoAction,
        FailureClass::OutputMissing,
        FailureClass::WrongOutput,
    ];

    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Environment => "environment",
            FailureClass::WrongApi => "wrong_api",
            FailureClass::ToolMisuse => "tool_misuse",
            FailureClass::RepeatedActions => "repeated_actions",
            FailureClass::ContextOverflow => "context_overflow",
            FailureClass::NoAction => "no_action",
            FailureClass::OutputMissing => "output_missing",
            FailureClass::WrongOutput => "wrong_output",
        }
    }
}

/// What one trajectory shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signals {
    /// Observations naming a missing module.
    pub missing_modules: u32,
    /// Tracebacks ending in an attribute, name, type or import error.
    pub api_errors: u32,
    /// Calls refused before running (bad arguments, unknown tool).
    pub refused_calls: u32,
    /// Calls that repeated an earlier one with the same result.
    pub repeats: u32,
    /// Context overflows and digests.
    pub overflows: u32,
    /// Calls that wrote or ran something.
    pub actions: u32,
    /// Calls that only looked.
    pub looks: u32,
    /// Code runs (`run_python`, `run_shell`).
    pub runs: u32,
}

/// The words a tool's refusal of its arguments starts with
/// (`agent::run::tools`'s argument errors are reported as `Error: ...`).
const REFUSAL: &str = "Error: ";

impl Signals {
    /// Counts one tool call and what it returned.
    pub fn observe_tool(&mut self, name: &str, observation: &str, is_error: bool) {
        let acts = matches!(
            name,
            "write_file" | "edit_file" | "run_python" | "run_shell" | "finish"
        );
        if acts {
            self.actions += 1;
        } else {
            self.looks += 1;
        }
        if matches!(name, "run_python" | "run_shell") && !is_error {
            self.runs += 1;
        }
        if is_error && observation.starts_with(REFUSAL) {
            self.refused_calls += 1;
        }
        if observation.contains("ModuleNotFoundError") || observation.contains("No module named") {
            self.missing_modules += 1;
        } else if [
            "AttributeError:",
            "NameError:",
            "TypeError:",
            "ImportError:",
        ]
        .iter()
        .any(|e| observation.contains(e))
        {
            self.api_errors += 1;
        }
        if observation.contains("this is the same call as in turn") {
            self.repeats += 1;
        }
    }

    /// The class a failed task is counted under: the first of
    /// [`FailureClass::ALL`] this trajectory shows; `None` for a task that
    /// passed. `outputs` says whether an `output*` file was left.
    pub fn primary(&self, passed: bool, outputs: bool) -> Option<FailureClass> {
        if passed {
            return None;
        }
        self.all(outputs).into_iter().next().or(Some(if outputs {
            FailureClass::WrongOutput
        } else {
            FailureClass::OutputMissing
        }))
    }

    /// Every class the trajectory shows, in [`FailureClass::ALL`]'s order.
    pub fn all(&self, outputs: bool) -> Vec<FailureClass> {
        FailureClass::ALL
            .into_iter()
            .filter(|class| match class {
                FailureClass::Environment => self.missing_modules > 0,
                FailureClass::WrongApi => self.api_errors > 0,
                FailureClass::ToolMisuse => self.refused_calls >= 2,
                FailureClass::RepeatedActions => self.repeats >= 2,
                FailureClass::ContextOverflow => self.overflows > 0,
                FailureClass::NoAction => self.actions == 0 && self.looks > 0,
                FailureClass::OutputMissing => !outputs && self.runs > 0,
                FailureClass::WrongOutput => outputs,
            })
            .collect()
    }
}

/// Reads `record`'s trajectory: the signals it shows, with its primary
/// class and every class when the task failed. A missing or unreadable
/// trajectory gives no signals (the class then follows the outputs).
pub fn classify(record: &TaskRecord) -> (Option<FailureClass>, Vec<FailureClass>, Signals) {
    let mut signals = Signals::default();
    let mut outputs = record.output.is_some();
    let events = record
        .trajectory
        .as_deref()
        .and_then(|path| Trajectory::read(path).ok())
        .unwrap_or_default();
    for event in &events {
        match event {
            TrajectoryEvent::Tool(tool) => {
                if let ToolOutcome::Observed {
                    observation,
                    is_error,
                    ..
                } = &tool.outcome
                {
                    signals.observe_tool(&tool.name, observation, *is_error);
                }
            }
            TrajectoryEvent::ContextExceeded(_) | TrajectoryEvent::Digest(_) => {
                signals.overflows += 1;
            }
            TrajectoryEvent::Summary(summary) => outputs |= !summary.outputs.is_empty(),
            _ => {}
        }
    }
    let passed = record.process && record.result;
    let classes = if passed {
        Vec::new()
    } else {
        signals.all(outputs)
    };
    (signals.primary(passed, outputs), classes, signals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_signal_is_the_primary_class() {
        let mut s = Signals::default();
        s.observe_tool("search_code", "Entities ...", false);
        s.observe_tool("find_callers", "no callers", false);
        assert_eq!(s.primary(false, false), Some(FailureClass::NoAction));
        assert_eq!(s.primary(true, false), None, "a pass has no class");
        for _ in 0..2 {
            s.observe_tool(
                "run_python",
                "Error: give either code or path, not both\nNote: this is the same call as in turn 4",
                true,
            );
        }
        assert_eq!(
            s.all(false),
            [FailureClass::ToolMisuse, FailureClass::RepeatedActions]
        );
        s.observe_tool(
            "run_python",
            "[exit code 1]\nAttributeError: 'PdfReader' object has no attribute 'getPage'",
            false,
        );
        assert_eq!(s.primary(false, false), Some(FailureClass::WrongApi));
        assert!(s.all(false).contains(&FailureClass::OutputMissing));
        assert_eq!(
            s.primary(false, true),
            Some(FailureClass::WrongApi),
            "an API error comes before a wrong output"
        );
        let quiet = Signals {
            actions: 3,
            runs: 2,
            ..Signals::default()
        };
        assert_eq!(quiet.primary(false, true), Some(FailureClass::WrongOutput));
        assert_eq!(
            quiet.primary(false, false),
            Some(FailureClass::OutputMissing)
        );
    }
}
