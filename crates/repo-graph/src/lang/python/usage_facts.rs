//! The usage facts of one Python file, as cached with its other facts
//! (main blocks, command-line interfaces, `setup()` entry points), and the
//! text rules the cross-file usage build shares with their extraction.

use serde::{Deserialize, Serialize};

use crate::model::Span;
use crate::text::{clean_docstring, truncate};
use crate::usage::{CliFramework, CliOption, EntryPointKind, MAX_HELP};

/// Entry points kept per file.
pub(crate) const MAX_ENTRY_POINTS: usize = 1000;

/// An `if __name__ == "__main__":` block at module level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MainBlockFacts {
    pub span: Span,
    /// The call sites written in the block: `first_call..end_call` of
    /// [`PythonFacts::calls`].
    pub first_call: u32,
    pub end_call: u32,
}

/// The command a subcommand belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum CliParentFacts {
    /// A command of this file, by index into [`UsageFileFacts::clis`].
    Local(u32),
    /// A click group named as written (`@cli.command()` with `cli` from
    /// another module).
    Named(String),
}

/// One command as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CliFacts {
    pub framework: CliFramework,
    pub name: Option<String>,
    /// The decorated function, or the function building the parser (local index).
    pub function: Option<u32>,
    /// `set_defaults(func=handler)`, `typer.run(handler)`: as written.
    pub handler: Option<String>,
    /// typer: the `Typer()` object's name the command is registered on.
    pub app: Option<String>,
    pub parent: Option<CliParentFacts>,
    pub is_group: bool,
    pub help: Option<String>,
    pub options: Vec<CliOption>,
    pub span: Span,
    /// argparse: arguments added to a parser the function receives as a
    /// parameter (`def add_args(parser): parser.add_argument(...)`), not
    /// a command of its own; merged into the parsers passed to it.
    pub fragment: bool,
    /// argparse: the functions the parser is passed to, as written
    /// (`add_args(parser)`), whose fragments add to it.
    pub includes: Vec<String>,
}

/// A `setup(...)` call's packaging facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SetupFacts {
    /// `name="..."`.
    pub name: Option<String>,
    /// `console_scripts` / `gui_scripts` entries as written (`"name = mod:func"`).
    pub entry_points: Vec<(EntryPointKind, String)>,
}

/// The usage facts of one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UsageFileFacts {
    pub main_blocks: Vec<MainBlockFacts>,
    pub clis: Vec<CliFacts>,
    pub setup: Option<SetupFacts>,
}

impl UsageFileFacts {
    #[cfg(feature = "python")]
    pub(crate) fn shrink(&mut self) {
        self.main_blocks.shrink_to_fit();
        self.clis.shrink_to_fit();
    }
}

/// The first paragraph of a help text or docstring, on one line, bounded.
pub(crate) fn help_text(text: &str) -> String {
    let cleaned = clean_docstring(text);
    let paragraph = cleaned.split("\n\n").next().unwrap_or("");
    let joined: Vec<&str> = paragraph.split_whitespace().collect();
    truncate(&joined.join(" "), MAX_HELP)
}
