//! The trajectory of an episode: one JSON object per line for every step,
//! and the final [`Summary`].

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Error;

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The model called `finish`.
    Finished,
    /// The turn budget ran out.
    MaxTurns,
    /// The token budget ran out.
    MaxTokens,
    /// The wall-clock limit was reached.
    Timeout,
    /// The model failed in a way that retrying cannot fix.
    Error,
}

/// The final summary of an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How it ended.
    pub status: Status,
    /// Model turns taken.
    pub turns: u32,
    /// Prompt tokens over all calls.
    pub prompt_tokens: u64,
    /// Completion tokens over all calls.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
    /// Estimated cost in dollars (0 for unpriced models).
    pub cost: f64,
    /// Wall-clock time in milliseconds.
    pub wall_ms: u64,
    /// The output files found in the output directory.
    pub outputs: Vec<PathBuf>,
    /// The model's summary from `finish`, or the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Writes trajectory events as JSON lines (or keeps them in memory).
#[derive(Debug, Default)]
pub struct Trajectory {
    file: Option<std::io::BufWriter<std::fs::File>>,
    path: Option<PathBuf>,
    events: Vec<Value>,
}

impl Trajectory {
    /// A trajectory kept in memory only.
    pub fn in_memory() -> Self {
        Trajectory::default()
    }

    /// A trajectory written to `path` (and kept in memory).
    pub fn to_file(path: &Path) -> Result<Self, Error> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| Error::Trajectory(e.to_string()))?;
        }
        let file = std::fs::File::create(path)
            .map_err(|e| Error::Trajectory(format!("cannot create {}: {e}", path.display())))?;
        Ok(Trajectory {
            file: Some(std::io::BufWriter::new(file)),
            path: Some(path.to_path_buf()),
            events: Vec::new(),
        })
    }

    /// Where it is written, if anywhere.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Records an event: an object with a `type` field.
    pub fn record(&mut self, kind: &str, mut event: Value) -> Result<(), Error> {
        if let Some(object) = event.as_object_mut() {
            object.insert("type".into(), Value::String(kind.to_owned()));
        }
        if let Some(file) = &mut self.file {
            serde_json::to_writer(&mut *file, &event)
                .map_err(|e| Error::Trajectory(e.to_string()))?;
            file.write_all(b"\n")
                .and_then(|()| file.flush())
                .map_err(|e| Error::Trajectory(e.to_string()))?;
        }
        self.events.push(event);
        Ok(())
    }

    /// The events recorded so far.
    pub fn events(&self) -> &[Value] {
        &self.events
    }
}
