//! Information selection: compact views of code, documents and logs, so that
//! every observation an agent sees stays under the per-interaction limit L
//! (seed 001, section 3.3.3). Inputs that fit pass through unchanged.

mod code;
mod document;
mod log;

pub use code::{CodeTarget, code};
pub use document::document;
pub use log::log;

use serde::{Deserialize, Serialize};

/// Default per-interaction limit L, in tokens.
pub const DEFAULT_MAX_TOKENS: usize = 8_000;

/// Limits for the views. Defaults: L = 8,000 tokens, chunks of Lc = 1,000
/// tokens, the nc = 4 best chunks, 40 head and 80 tail lines of a log, 3
/// lines of context around an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectOptions {
    /// The most tokens a view may hold (L).
    pub max_tokens: usize,
    /// Size of a document chunk (Lc).
    pub chunk_tokens: usize,
    /// How many chunks a document view keeps (nc).
    pub top_chunks: usize,
    /// Lines always kept from the start of a log.
    pub head_lines: usize,
    /// Lines always kept from the end of a log.
    pub tail_lines: usize,
    /// Lines kept around each error line of a log.
    pub context_lines: usize,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions {
            max_tokens: DEFAULT_MAX_TOKENS,
            chunk_tokens: 1_000,
            top_chunks: 4,
            head_lines: 40,
            tail_lines: 80,
            context_lines: 3,
        }
    }
}

/// What a view shows, and whether anything was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The text to show.
    pub text: String,
    /// Its size in tokens.
    pub tokens: usize,
    /// True when the input was reduced (something was elided).
    pub reduced: bool,
}
