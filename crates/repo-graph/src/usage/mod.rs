//! How a repository is meant to be used, as typed facts: console scripts
//! declared by its packaging, `__main__` modules and `if __name__ ==
//! "__main__":` blocks, Java `main` methods, command-line interfaces
//! (argparse, click, typer) with their options, the public API of its
//! top-level packages, and its example scripts.
//!
//! The Python parts that need syntax (CLI declarations, main blocks,
//! `setup(entry_points=...)`) are per-file facts extracted in the one
//! cursor walk (`lang/python/usage.rs`); this module is
//! the cross-file pass that reads the packaging files at the root
//! (`pyproject.toml`, `setup.cfg`, also one directory below for
//! monorepos, each bounded in size), resolves every name to an entity of
//! the graph and links console scripts to the commands they run.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("tool"))?;
//! std::fs::write(
//!     dir.path().join("pyproject.toml"),
//!     "[project]\nname = \"tool\"\n[project.scripts]\ntool = \"tool.cli:main\"\n",
//! )?;
//! std::fs::write(dir.path().join("tool/__init__.py"), "from .core import run\n")?;
//! std::fs::write(dir.path().join("tool/core.py"), "def run(path, *, fast=False):\n    pass\n")?;
//! std::fs::write(
//!     dir.path().join("tool/cli.py"),
//!     "import argparse\nfrom .core import run\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"path\", help=\"what to read\")\n    run(parser.parse_args().path)\n",
//! )?;
//! let graph = repo_graph::Analyzer::new(dir.path()).analyze()?;
//! let usage = graph.usage();
//! let script = &usage.entry_points[0];
//! assert_eq!((script.name.as_str(), script.module.as_str()), ("tool", "tool.cli"));
//! assert_eq!(script.entity, graph.entity("tool.cli.main"));
//! let command = &usage.commands[script.commands[0] as usize];
//! assert_eq!(command.framework, repo_graph::CliFramework::Argparse);
//! assert_eq!(command.options[0].flags, ["path"]);
//! assert_eq!(usage.public_api[0].signature.as_deref(), Some("run(path, *, fast=False)"));
//! # Ok(())
//! # }
//! ```

mod build;
mod config;

use serde::{Deserialize, Serialize};

use crate::model::{EntityId, ModuleId, Span};

pub(crate) use build::build;

/// Everything the analysis knows about how the repository is used
/// ([`crate::RepoGraph::usage`]; `usage` in the JSON document).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UsageFacts {
    /// Distributions the packaging declares (`[project] name`, setup.py's
    /// `name=`), in the order their files were read.
    #[serde(default)]
    pub distributions: Vec<Distribution>,
    /// Console and GUI scripts, by file and then as declared.
    #[serde(default)]
    pub entry_points: Vec<EntryPoint>,
    /// Programs that start in a module or a `main` method.
    #[serde(default)]
    pub mains: Vec<MainEntry>,
    /// Command-line commands; a subcommand refers to its parent by index.
    #[serde(default)]
    pub commands: Vec<CliCommand>,
    /// The public API of the top-level packages.
    #[serde(default)]
    pub public_api: Vec<ApiEntry>,
    /// Example and demo scripts.
    #[serde(default)]
    pub examples: Vec<ExampleScript>,
    /// Packaging files that were found but not read.
    #[serde(default)]
    pub skipped: Vec<ConfigSkip>,
}

impl UsageFacts {
    /// True when nothing about usage was found.
    pub fn is_empty(&self) -> bool {
        self.distributions.is_empty()
            && self.entry_points.is_empty()
            && self.mains.is_empty()
            && self.commands.is_empty()
            && self.public_api.is_empty()
            && self.examples.is_empty()
            && self.skipped.is_empty()
    }

    /// The command at `index` (an index from [`EntryPoint::commands`],
    /// [`MainEntry::commands`] or [`CliCommand::parent`]).
    pub fn command(&self, index: u32) -> Option<&CliCommand> {
        self.commands.get(index as usize)
    }

    /// Indices of the direct subcommands of the command at `index`.
    pub fn subcommands(&self, index: u32) -> impl Iterator<Item = u32> + '_ {
        self.commands
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.parent == Some(index))
            .map(|(i, _)| i as u32)
    }
}

/// A distribution named by a packaging file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Distribution {
    /// The name as declared (`trafilatura`, `scikit-learn`).
    pub name: String,
    /// The file that declares it, relative to the root.
    pub file: String,
}

/// Whether a script runs in a terminal or as a GUI program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryPointKind {
    /// `[project.scripts]`, `console_scripts`.
    Console,
    /// `[project.gui-scripts]`, `gui_scripts`.
    Gui,
}

/// Where an [`EntryPoint`] is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryPointSource {
    /// `[project.scripts]` or `[project.gui-scripts]` of `pyproject.toml`.
    Pyproject,
    /// `[tool.poetry.scripts]` of `pyproject.toml`.
    Poetry,
    /// `[tool.flit.scripts]` of `pyproject.toml`.
    Flit,
    /// `[options.entry_points]` of `setup.cfg`.
    SetupCfg,
    /// `setup(entry_points=...)` in `setup.py`.
    SetupPy,
}

/// A command installed with the distribution: `name = module:function`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct EntryPoint {
    /// The command's name.
    pub name: String,
    /// Console or GUI.
    pub kind: EntryPointKind,
    /// The kind of file that declares it.
    pub source: EntryPointSource,
    /// That file, relative to the root.
    pub file: String,
    /// The dotted module the command imports.
    pub module: String,
    /// The attribute it calls in that module (`main`, `Cli.run`); `None`
    /// when the reference names only a module.
    pub function: Option<String>,
    /// The function (or class, module) the reference resolves to, when it
    /// is in the repository.
    pub entity: Option<EntityId>,
    /// The command-line commands the script runs (indices into
    /// [`UsageFacts::commands`]): commands declared on the entity, else
    /// found within two call edges of it.
    pub commands: Vec<u32>,
}

/// How a program starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MainKind {
    /// A package's `__main__.py` (`python -m package`).
    PackageMain,
    /// A module with an `if __name__ == "__main__":` block.
    MainBlock,
    /// A Java `public static void main(String[])` method.
    JavaMain,
}

/// A program's starting point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MainEntry {
    /// Which kind of start.
    pub kind: MainKind,
    /// The module that holds it.
    pub module: ModuleId,
    /// That module's path.
    pub file: String,
    /// The module (Python) or the `main` method (Java).
    pub entity: EntityId,
    /// The `if __name__ == "__main__":` block (the first, if several), or
    /// the `main` method; `None` for a `__main__.py` without such a block.
    pub span: Option<Span>,
    /// Internal functions and classes it calls: for a block, the calls
    /// written in it; otherwise the module's (or method's) calls. At most
    /// 32, in the order first called.
    pub calls: Vec<EntityId>,
    /// Commands it runs (indices into [`UsageFacts::commands`]).
    pub commands: Vec<u32>,
}

/// The library a command-line interface is declared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CliFramework {
    /// `argparse.ArgumentParser`, `add_argument`, `add_subparsers`/`add_parser`.
    Argparse,
    /// `@click.command`, `@click.group`, `@<group>.command`, `@click.option`.
    Click,
    /// `typer.Typer()`, `@app.command()`, `typer.Option`, `typer.run`.
    Typer,
}

impl CliFramework {
    /// The library's import name (also the JSON name).
    pub fn as_str(self) -> &'static str {
        match self {
            CliFramework::Argparse => "argparse",
            CliFramework::Click => "click",
            CliFramework::Typer => "typer",
        }
    }
}

/// One command of a command-line interface (a parser, a click command or
/// group, a typer command).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CliCommand {
    /// The library.
    pub framework: CliFramework,
    /// The name it is invoked by: `prog=`, the subparser's or command's
    /// name (click and typer derive it from the function: `run_all` →
    /// `run-all`), or for a top-level parser without `prog` the console
    /// script that runs it. `None` when nothing names it.
    pub name: Option<String>,
    /// The group or parser it is a subcommand of (an index into
    /// [`UsageFacts::commands`]).
    pub parent: Option<u32>,
    /// It has subcommands of its own (a click group, a parser with
    /// `add_subparsers`, a typer callback).
    pub is_group: bool,
    /// typer: the `Typer()` object it is registered on, as written (`app`);
    /// a console script `pkg.cli:app` runs that object's commands.
    pub app: Option<String>,
    /// The function that runs it: the decorated function (click, typer),
    /// the `set_defaults(func=...)` handler, or the function that builds
    /// the parser (argparse).
    pub entity: Option<EntityId>,
    /// The module that declares it.
    pub module: ModuleId,
    /// That module's path.
    pub file: String,
    /// Its help text (`help=`, `description=`, the docstring's first
    /// paragraph), at most 200 characters.
    pub help: Option<String>,
    /// Its options and arguments, in declaration order (at most 128).
    pub options: Vec<CliOption>,
    /// The decorated definition, or the parser's construction.
    pub span: Span,
}

/// An option or positional argument of a [`CliCommand`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CliOption {
    /// `["--count", "-c"]`; a positional argument's name (`["path"]`).
    pub flags: Vec<String>,
    /// A positional argument rather than an option.
    pub positional: bool,
    /// It takes a value (false for `store_true`, `is_flag`, `bool` options).
    pub takes_value: bool,
    /// It must be given.
    pub required: bool,
    /// The default, when it is a literal, as written.
    pub default: Option<String>,
    /// Its help text, at most 200 characters.
    pub help: Option<String>,
}

/// Why a name is part of a package's public API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ApiOrigin {
    /// Listed in the package's `__all__`.
    All,
    /// Imported into the package's `__init__` from inside the package
    /// (`from .core import extract`), and not listed in `__all__`.
    ReExport,
    /// Defined in the `__init__` of a package without `__all__`.
    Defined,
}

/// One name of a top-level package's public API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ApiEntry {
    /// The package (`trafilatura`).
    pub package: String,
    /// The name it exports (`extract`).
    pub name: String,
    /// Why it is public.
    pub origin: ApiOrigin,
    /// The package's `__init__` module.
    pub module: ModuleId,
    /// What the name is, when it resolves into the repository.
    pub entity: Option<EntityId>,
    /// How it is called under its public name, for a function or class:
    /// `extract(filecontent, url=None)` (a class shows its `__init__`'s
    /// parameters; see [`crate::RepoGraph::call_signature`]).
    pub signature: Option<String>,
    /// The file that defines the entity.
    pub file: Option<String>,
}

/// A script under `examples/`, `demo/`, `scripts/`, `tools/`, `samples/`,
/// `tutorials/` (and their singular or plural forms, at any depth).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ExampleScript {
    /// The script's module.
    pub module: ModuleId,
    /// Its path.
    pub file: String,
    /// The first paragraph of its docstring or, without one, of its
    /// leading comment, at most 300 characters.
    pub description: Option<String>,
    /// Functions and classes of other modules it calls (at most 32).
    pub calls: Vec<EntityId>,
    /// Modules, functions and classes of other modules it imports (at
    /// most 32).
    pub imports: Vec<EntityId>,
}

/// Why a packaging file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConfigSkipReason {
    /// Larger than 1 MiB.
    TooLarge,
    /// Not valid UTF-8.
    NotUtf8,
    /// Not valid TOML.
    Invalid,
    /// Not a regular file, or it could not be read.
    Unreadable,
}

/// A packaging file that was passed over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ConfigSkip {
    /// The file, relative to the root.
    pub path: String,
    /// Why.
    pub reason: ConfigSkipReason,
    /// The parser's message, first line, for invalid files.
    pub detail: Option<String>,
}

/// Largest packaging file read (1 MiB); larger ones are skipped.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Longest help text kept, in characters.
pub(crate) const MAX_HELP: usize = 200;
/// Longest example description kept, in characters.
pub(crate) const MAX_DESCRIPTION: usize = 300;
/// Most calls or imports listed for one script or main entry.
pub(crate) const MAX_LISTED: usize = 32;
