//! The agent's tools as data: one [`Tool`] variant per tool, each holding
//! the typed arguments the model sent.
//!
//! The list of tools below is the only place a tool is declared: its name,
//! its description, whether it is an exploration tool (removed by
//! `--no-exploration-tools`) and its arguments struct. The JSON Schema the
//! model is offered is generated from that struct ([`super::schema`]) and the
//! model's call is parsed back into the same struct, so a tool cannot be
//! offered with one shape and parsed with another.
//!
//! The first paragraph of a field's doc comment is the parameter's
//! description in the schema. A field marked `#[schemars(description = "")]`
//! is offered without a description, as it always has been: the prompt the
//! model sees stays the same.

use schemars::JsonSchema;
use serde::Deserialize;

/// Which tools a tool belongs with, for the ablations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolGroup {
    /// Search, code view, call and import graphs (section 3.3.1's
    /// context-aware exploration); `--no-exploration-tools` removes them.
    Exploration,
    /// Files, documents, code execution and `finish`: always offered,
    /// because no task can be done without them.
    Core,
    /// Whole-repository views: the initial context, the ranking, routes
    /// and usage. The agent is never offered them (its prompt holds the
    /// context already); the MCP server offers them to other agents.
    Repository,
}

/// Declares the tools: the [`Tool`] enum and the [`ToolName`] enum with the
/// name, group and description of each, from one list.
macro_rules! tools {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident($args:ty) = $name:literal, $group:ident;
    )*) => {
        /// A call of one of the agent's tools, with its typed arguments.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Tool {
            $(
                $(#[doc = $doc])*
                $variant($args),
            )*
        }

        /// A tool without its arguments: what is offered, and what a call
        /// names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ToolName {
            $(
                #[doc = concat!("`", $name, "`:", $($doc),*)]
                $variant,
            )*
        }

        impl ToolName {
            /// Every tool, in the order they are offered.
            pub const ALL: &[ToolName] = &[$(ToolName::$variant),*];

            /// The name the model calls it by.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $name,)*
                }
            }

            /// What it does, as the model is told.
            pub const fn description(self) -> &'static str {
                match self {
                    $(ToolName::$variant => concat!($($doc),*).trim_ascii(),)*
                }
            }

            /// Which group it belongs with.
            pub const fn group(self) -> ToolGroup {
                match self {
                    $(ToolName::$variant => ToolGroup::$group,)*
                }
            }

            /// The JSON Schema of its arguments, as offered to the model.
            pub fn parameters(self) -> serde_json::Value {
                match self {
                    $(ToolName::$variant => super::schema::parameters::<$args>(),)*
                }
            }

            /// Deserializes arguments already checked against
            /// [`ToolName::parameters`] into the tool's struct.
            pub(crate) fn deserialize(
                self,
                arguments: serde_json::Value,
            ) -> Result<Tool, serde_json::Error> {
                Ok(match self {
                    $(ToolName::$variant => Tool::$variant(serde_json::from_value(arguments)?),)*
                })
            }
        }

        impl Tool {
            /// Which tool this is.
            pub const fn name(&self) -> ToolName {
                match self {
                    $(Tool::$variant(_) => ToolName::$variant,)*
                }
            }
        }
    };
}

tools! {
    /// Show the directory tree under a path (ignoring what the repository ignores).
    ListDirectory(ListDirectoryArgs) = "list_directory", Exploration;
    /// Show a repository file or entity (qualified name like pkg.mod.Class.method) as code:
    /// whole when it fits, else imports, signatures with line numbers and the bodies most
    /// relevant to the query.
    ViewCode(ViewCodeArgs) = "view_code", Exploration;
    /// Show raw lines of any text file, with line numbers.
    ViewFile(ViewFileArgs) = "view_file", Core;
    /// Search entity names, docstrings and source of the repository for keywords (or a
    /// regex); ranked hits with qualified names and locations.
    SearchCode(SearchCodeArgs) = "search_code", Exploration;
    /// Functions that call the named function or class, from the call graph.
    FindCallers(CallGraphArgs) = "find_callers", Exploration;
    /// Functions and classes the named function calls, from the call graph.
    FindCallees(CallGraphArgs) = "find_callees", Exploration;
    /// Internal modules a module imports, or the modules that import it.
    ModuleDependencies(ModuleDependenciesArgs) = "module_dependencies", Exploration;
    /// The shortest chain of imports from one module to another.
    DependencyPath(DependencyPathArgs) = "dependency_path", Exploration;
    /// Read a document, text or CSV/TSV file: whole when it fits, else the chunks most
    /// relevant to the query (tables get a preview).
    ReadDocument(ReadDocumentArgs) = "read_document", Core;
    /// Create or overwrite a file with this content (parent directories are created).
    WriteFile(WriteFileArgs) = "write_file", Core;
    /// Replace the only occurrence of old_text in a file with new_text.
    EditFile(EditFileArgs) = "edit_file", Core;
    /// Run Python code or a script file in the sandbox, in the working directory.
    RunPython(RunPythonArgs) = "run_python", Core;
    /// Run a bash command in the sandbox, in the working directory.
    RunShell(RunShellArgs) = "run_shell", Core;
    /// End the task once the outputs are written and checked.
    Finish(FinishArgs) = "finish", Core;
    /// The repository's initial context within a token budget: README, usage, the code that
    /// matches the task, summaries of the most important modules, core classes and paths.
    Overview(OverviewArgs) = "overview", Repository;
    /// Modules, classes and functions ranked by importance (dependency centrality,
    /// complexity, usage, documentation, git activity).
    Rank(RankArgs) = "rank", Repository;
    /// The web routes the repository serves (Flask, FastAPI, Django...): method, path,
    /// handler and where it is declared.
    Routes(RoutesArgs) = "routes", Repository;
    /// How the repository is used: command-line entry points, the public API with
    /// signatures, example scripts.
    Usage(UsageArgs) = "usage", Repository;
}

/// The names of the exploration tools (removed by `--no-exploration-tools`),
/// taken from the tool list at compile time.
pub const EXPLORATION_TOOLS: [&str; 7] = {
    let mut names = [""; 7];
    let mut found = 0;
    let mut i = 0;
    while i < ToolName::ALL.len() {
        let tool = ToolName::ALL[i];
        if matches!(tool.group(), ToolGroup::Exploration) {
            // A count that does not match the tool list fails the build here.
            names[found] = tool.as_str();
            found += 1;
        }
        i += 1;
    }
    assert!(
        found == names.len(),
        "EXPLORATION_TOOLS has the wrong length"
    );
    names
};

/// `list_directory`: a directory tree, shallow by default so a large
/// repository does not flood the context.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirectoryArgs {
    /// Absolute path, or relative to the working directory.
    pub path: String,
    /// Levels to show (default 2).
    ///
    /// Values past the bounds are clamped rather than refused.
    #[schemars(range(min = 1, max = 6))]
    pub depth: Option<u64>,
}

/// `view_code`: a file or entity through context-pack's code view.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewCodeArgs {
    /// A file path or a qualified name.
    pub target: String,
    /// What you are looking for, to choose which bodies to show.
    pub query: Option<String>,
}

/// `view_file`: raw numbered lines, for files the graph does not cover and
/// for exact text to copy into `edit_file`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewFileArgs {
    /// The file to show (absolute, or relative to the working directory).
    #[schemars(description = "")]
    pub path: String,
    /// First line to show, 1-based (default 1).
    #[schemars(description = "", range(min = 1))]
    pub start_line: Option<u64>,
    /// Last line to show, inclusive (default the last line).
    #[schemars(description = "", range(min = 1))]
    pub end_line: Option<u64>,
}

/// `search_code`: keyword search over the graph's entities and sources.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchCodeArgs {
    /// Keywords, or a regular expression when `regex` is true.
    #[schemars(description = "")]
    pub query: String,
    /// Treat the query as a regular expression over source lines (default false).
    pub regex: Option<bool>,
}

/// `find_callers` and `find_callees`: a walk of the function call graph.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallGraphArgs {
    /// Qualified or short name.
    pub name: String,
    /// How many call edges to follow (default 1).
    ///
    /// Capped at 5: deeper walks list most of a repository.
    #[schemars(range(min = 1, max = 5))]
    pub depth: Option<u64>,
}

/// Which way `module_dependencies` follows the import edges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
// Offered without a description, as it always has been.
#[schemars(description = "")]
pub enum Direction {
    /// The modules this module imports.
    Imports,
    /// The modules that import this module.
    ImportedBy,
}

impl Direction {
    /// The name the model uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            Direction::Imports => "imports",
            Direction::ImportedBy => "imported_by",
        }
    }
}

/// `module_dependencies`: one module's edges in the module dependency graph.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModuleDependenciesArgs {
    /// Dotted module name or file path.
    pub module: String,
    /// Imports of the module, or the modules importing it.
    #[schemars(description = "")]
    pub direction: Direction,
}

/// `dependency_path`: how one module reaches another through imports.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DependencyPathArgs {
    /// The importing module (dotted name or file path).
    #[schemars(description = "")]
    pub from: String,
    /// The imported module (dotted name or file path).
    #[schemars(description = "")]
    pub to: String,
}

/// `read_document`: a document through context-pack's document view.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadDocumentArgs {
    /// The document (absolute, or relative to the working directory).
    #[schemars(description = "")]
    pub path: String,
    /// What to look for, to choose the chunks of a long document.
    #[schemars(description = "")]
    pub query: Option<String>,
}

/// `write_file`: how scripts and outputs come into being.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// The file to write (absolute, or relative to the working directory).
    #[schemars(description = "")]
    pub path: String,
    /// The whole new content.
    #[schemars(description = "")]
    pub content: String,
}

/// `edit_file`: an exact, unique replacement, so an edit never lands in the
/// wrong place.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    /// The file to edit.
    #[schemars(description = "")]
    pub path: String,
    /// The text to replace; it must occur exactly once.
    #[schemars(description = "")]
    pub old_text: String,
    /// Its replacement.
    #[schemars(description = "")]
    pub new_text: String,
}

/// `run_python`: code or a script in the sandbox. Exactly one of `code` and
/// `path` must be given; that is checked when the tool runs, with a message,
/// because the schema offered to the model has always left both optional.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPythonArgs {
    /// Source to run (python -c).
    pub code: Option<String>,
    /// A script file to run instead.
    pub path: Option<String>,
    /// Command-line arguments for the script.
    #[schemars(description = "")]
    pub args: Option<Vec<String>>,
}

/// `run_shell`: a bash command in the sandbox (installing packages, looking
/// at outputs).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunShellArgs {
    /// The command line.
    #[schemars(description = "")]
    pub command: String,
}

/// `overview`: the initial context the agent itself starts from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverviewArgs {
    /// The task, to choose the code and documentation that match it.
    pub task: Option<String>,
    /// The most tokens the overview may hold (default 8000).
    ///
    /// Values past the bounds are clamped rather than refused.
    #[schemars(range(min = 500, max = 64000))]
    pub budget: Option<u64>,
    /// Extra search terms for the task: English words and likely identifiers.
    pub keywords: Option<Vec<String>>,
}

/// `rank`: the importance ranking, top entries of each kind.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RankArgs {
    /// How many modules and functions to list (default 20).
    #[schemars(range(min = 1, max = 200))]
    pub top: Option<u64>,
    /// How many classes to list (default 10).
    #[schemars(range(min = 0, max = 200))]
    pub classes: Option<u64>,
}

/// `routes`: the web routes found in the repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutesArgs {
    /// Only routes whose method, path or handler contains this text.
    pub filter: Option<String>,
}

/// `usage`: the repository's usage facts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UsageArgs {
    /// The task, to list the API and examples that match it first.
    pub task: Option<String>,
    /// The most tokens the answer may hold (default 4000).
    #[schemars(range(min = 200, max = 64000))]
    pub budget: Option<u64>,
}

/// `finish`: the model's own end of the episode.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FinishArgs {
    /// What was done and where the outputs are.
    pub summary: String,
}
