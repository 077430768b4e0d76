//! How a module of a repository's package is run when the model runs it
//! as a script.
//!
//! Measured (GitTaskBench Eparse_01, embedded Qwen 1.5B, tuning half): the
//! model ran `python eparse/cli.py scan ...` five turns running, and each
//! time Python said `attempted relative import with no known parent
//! package`; the note that the call repeated did not help, because the
//! model did not know the fix (`python -m eparse.cli`). And that fix alone
//! would have run nothing: `eparse/cli.py` has no `__main__` block, its
//! command is the console script `eparse = eparse.cli:main`, so the file
//! run any way only defines functions and exits 0. The repository graph
//! knows both facts, so the tool runs what the model meant: the module
//! inside its package, through its entry point when it has one, and the
//! reply says what ran.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use repo_graph::RepoGraph;

/// A module of a package in one of the task's repositories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackageModule {
    /// The dotted name (`eparse.cli`).
    pub(crate) name: String,
    /// The directory its top-level package is in: what `sys.path` needs.
    pub(crate) import_root: PathBuf,
    /// It has an `if __name__ == "__main__":` block.
    has_main_block: bool,
    /// It imports relatively (`from .core import x`).
    imports_relatively: bool,
    /// The first console script that calls into it: (command, attribute).
    entry_point: Option<(String, String)>,
    /// Its public top-level classes and functions, the first few in
    /// source order: what running it as a file only defines.
    defines: Vec<String>,
}

/// Most names [`PackageModule::defines`] keeps.
const MAX_DEFINES_SHOWN: usize = 4;

/// How the tool runs a [`PackageModule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Launch {
    /// As `python -m NAME`: a `__main__` block that imports relatively.
    Module,
    /// Through its console script: `sys.argv[0]` is the command, and the
    /// entry point's attribute is called.
    EntryPoint {
        /// The command's name.
        command: String,
        /// The attribute called (`main`, `Cli.run`).
        attribute: String,
    },
}

impl PackageModule {
    /// The package module whose file is `path` (absolute), if `path` is a
    /// module inside a package (its directory has `__init__.py`) of one of
    /// `graphs`.
    pub(crate) fn of_file(graphs: &[Arc<RepoGraph>], path: &Path) -> Option<PackageModule> {
        if !path.parent()?.join("__init__.py").is_file() {
            return None;
        }
        graphs.iter().find_map(|graph| {
            let root = graph.root().canonicalize().ok()?;
            let relative = path.strip_prefix(&root).ok()?;
            let relative = relative.to_str()?;
            let id = graph.module_by_path(relative)?;
            let module = graph.module(id)?;
            // `pkg/mod.py` is `pkg.mod`: the import root is what is left of
            // the path once the dotted name is taken off its end (a `src/`
            // layout leaves `src`).
            let suffix = format!("{}.py", module.name.replace('.', "/"));
            let prefix = relative.strip_suffix(&suffix)?;
            if !(prefix.is_empty() || prefix.ends_with('/')) || !module.name.contains('.') {
                return None;
            }
            Some(Self::from_graph(graph, id, join_prefix(&root, prefix)))
        })
    }

    /// The package module named `name` (`python -m name`) in one of
    /// `graphs`.
    pub(crate) fn by_name(graphs: &[Arc<RepoGraph>], name: &str) -> Option<PackageModule> {
        graphs.iter().find_map(|graph| {
            let (id, module) = graph
                .module_ids()
                .zip(graph.modules())
                .find(|(_, m)| m.name == name && !m.is_package)?;
            let root = graph.root().canonicalize().ok()?;
            let prefix = module
                .path
                .strip_suffix(&format!("{}.py", name.replace('.', "/")))?;
            Some(Self::from_graph(graph, id, join_prefix(&root, prefix)))
        })
    }

    fn from_graph(graph: &RepoGraph, id: repo_graph::ModuleId, import_root: PathBuf) -> Self {
        let module = graph.module(id);
        let name = module.map(|m| m.name.clone()).unwrap_or_default();
        let usage = graph.usage();
        let has_main_block = usage
            .mains
            .iter()
            .any(|m| m.module == id && matches!(m.kind, repo_graph::MainKind::MainBlock));
        let entry_point = usage
            .entry_points
            .iter()
            .filter(|e| matches!(e.kind, repo_graph::EntryPointKind::Console))
            .find(|e| e.module == name)
            .and_then(|e| Some((e.name.clone(), e.function.clone()?)));
        let imports_relatively = module.is_some_and(|m| m.imports.iter().any(|i| i.level > 0));
        let top = repo_graph::EntityId::Module(id);
        let mut defines: Vec<(u32, String)> = graph
            .classes()
            .iter()
            .filter(|c| c.parent == top)
            .map(|c| (c.span.start_line, c.name.clone()))
            .chain(
                graph
                    .functions()
                    .iter()
                    .filter(|f| f.parent == top)
                    .map(|f| (f.span.start_line, f.name.clone())),
            )
            .filter(|(_, n)| !n.starts_with('_'))
            .collect();
        defines.sort();
        PackageModule {
            name,
            import_root,
            has_main_block,
            imports_relatively,
            entry_point,
            defines: defines
                .into_iter()
                .take(MAX_DEFINES_SHOWN)
                .map(|(_, n)| n)
                .collect(),
        }
    }

    /// Running it does nothing but define things: no `__main__` block and
    /// no console script calls into it. Measured (GitTaskBench PyPDF2_01,
    /// run 8): the model ran `pypdf/_reader.py` for the PDF's text, got
    /// nothing back, and did not see why.
    pub(crate) fn runs_nothing(&self) -> bool {
        !self.has_main_block && self.entry_point.is_none()
    }

    /// What the reply says when it [`runs_nothing`](Self::runs_nothing).
    pub(crate) fn library_note(&self, shown: &str) -> String {
        let defines = if self.defines.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.defines.join(", "))
        };
        let example = self.defines.first().map_or(String::new(), |first| {
            format!(": `from {} import {first}`", self.name)
        });
        format!(
            "{shown} is the library module `{name}`: it has no `__main__` block and no command,              so running it only defines its classes and functions{defines} and prints nothing.              Import what you need in your own `code` instead{example}",
            name = self.name
        )
    }

    /// How to run it, when plain `python FILE` would not do what was
    /// meant: `None` when it would (a script with its own `__main__` block
    /// and absolute imports, or a module with neither a main block nor an
    /// entry point nor relative imports).
    pub(crate) fn launch(&self) -> Option<Launch> {
        if self.has_main_block {
            return self.imports_relatively.then_some(Launch::Module);
        }
        if let Some((command, attribute)) = &self.entry_point {
            return Some(Launch::EntryPoint {
                command: command.clone(),
                attribute: attribute.clone(),
            });
        }
        self.imports_relatively.then_some(Launch::Module)
    }

    /// Python source that runs the module as `launch` says, with the
    /// script's own arguments in `sys.argv[1:]` (as `python -c` leaves
    /// them).
    pub(crate) fn code(&self, launch: &Launch) -> String {
        // JSON strings are valid Python string literals.
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "''".to_owned());
        let root = quote(&self.import_root.to_string_lossy());
        let name = quote(&self.name);
        match launch {
            Launch::Module => format!(
                "import runpy, sys\nsys.path.insert(0, {root})\n\
                 runpy.run_module({name}, run_name='__main__', alter_sys=True)\n"
            ),
            Launch::EntryPoint { command, attribute } => format!(
                "import importlib, operator, sys\nsys.path.insert(0, {root})\n\
                 sys.argv[0] = {command}\n\
                 target = operator.attrgetter({attribute})(importlib.import_module({name}))\n\
                 sys.exit(target())\n",
                command = quote(command),
                attribute = quote(attribute),
            ),
        }
    }

    /// What the reply says about how it ran (`shown` is how the model
    /// named it).
    pub(crate) fn note(&self, launch: &Launch, shown: &str) -> String {
        match launch {
            Launch::Module => format!(
                "{shown} is the module `{name}` of a package and imports relatively, so it ran as \
                 `python -m {name}` from {root} (running the file by path fails with `attempted \
                 relative import with no known parent package`)",
                name = self.name,
                root = self.import_root.display()
            ),
            Launch::EntryPoint { command, attribute } => format!(
                "{shown} has no `__main__` block: its command is the console script `{command} = \
                 {name}:{attribute}`, and it ran as `{command}` with your arguments (run as a file \
                 it would only define functions)",
                name = self.name
            ),
        }
    }
}

/// `root` joined with a relative directory that is empty or ends in `/`.
fn join_prefix(root: &Path, prefix: &str) -> PathBuf {
    match prefix.trim_end_matches('/') {
        "" => root.to_path_buf(),
        dir => root.join(dir),
    }
}

/// Whether `name` is a dotted Python module name (`pkg.mod`).
pub(crate) fn is_module_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            part.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// Python source that runs the module `name` as `python -m name` does
/// (`name` checked by [`is_module_name`]).
pub(crate) fn as_main(name: &str) -> String {
    let name = serde_json::to_string(name).unwrap_or_else(|_| "''".to_owned());
    format!("import runpy\nrunpy.run_module({name}, run_name='__main__', alter_sys=True)\n")
}

/// Most files named in a reply about a missing script.
const MAX_SAME_NAME: usize = 3;

/// The files of `graphs` named as `missing` is (`cli.py`), as absolute
/// paths, with the console script of each that has one; at most
/// [`MAX_SAME_NAME`], shortest path first.
pub(crate) fn same_name_in_repositories(graphs: &[Arc<RepoGraph>], missing: &Path) -> Vec<String> {
    let mut found = same_name_files(graphs, missing);
    found.truncate(MAX_SAME_NAME);
    found
        .into_iter()
        .map(|path| {
            let mut shown = path.display().to_string();
            if let Some(Launch::EntryPoint { command, .. }) =
                PackageModule::of_file(graphs, &path).and_then(|m| m.launch())
            {
                shown.push_str(&format!(" (the console script `{command}`)"));
            }
            shown
        })
        .collect()
}

/// Every file of `graphs` named as `missing` is, as an absolute path,
/// shortest path first.
pub(crate) fn same_name_files(graphs: &[Arc<RepoGraph>], missing: &Path) -> Vec<PathBuf> {
    let Some(name) = missing.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let mut found: Vec<(usize, PathBuf)> = Vec::new();
    for graph in graphs {
        let Ok(root) = graph.root().canonicalize() else {
            continue;
        };
        for module in graph.modules() {
            let file = module.path.rsplit('/').next().unwrap_or(&module.path);
            if file != name {
                continue;
            }
            let path = root.join(&module.path);
            if path != missing {
                found.push((module.path.len(), path));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, path)| path).collect()
}

/// The first line of `content` when it is a shell command line rather
/// than Python (`python x.py ...`, `pip install ...`): a program's name
/// that is no Python keyword followed by its arguments is a syntax error
/// as Python.
pub(crate) fn shell_command_line(content: &str) -> Option<&str> {
    const PROGRAMS: &[&str] = &[
        "python", "python3", "pip", "pip3", "cd", "bash", "sh", "sudo", "conda", "uv", "cat", "ls",
    ];
    let line = content.lines().map(str::trim).find(|l| !l.is_empty())?;
    let (program, rest) = line.split_once(char::is_whitespace)?;
    let program = program.rsplit('/').next().unwrap_or(program);
    let rest = rest.trim_start();
    let argument = rest.chars().next()?;
    (PROGRAMS.contains(&program) && (argument.is_alphanumeric() || "-/.~'\"".contains(argument)))
        .then_some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, RepoGraph) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("tool")).unwrap();
        std::fs::write(root.join("tool/__init__.py"), "").unwrap();
        std::fs::write(root.join("tool/core.py"), "def work(x):\n    return x\n").unwrap();
        std::fs::write(
            root.join("tool/cli.py"),
            "import sys\nfrom .core import work\n\ndef main():\n    print(work(sys.argv[1:]))\n",
        )
        .unwrap();
        std::fs::write(
            root.join("tool/run.py"),
            "from .core import work\nif __name__ == '__main__':\n    print(work(1))\n",
        )
        .unwrap();
        std::fs::write(
            root.join("tool/plain.py"),
            "import sys\nif __name__ == '__main__':\n    print(sys.argv)\n",
        )
        .unwrap();
        std::fs::write(root.join("script.py"), "from tool.core import work\n").unwrap();
        std::fs::write(
            root.join("setup.py"),
            "from setuptools import setup\nsetup(name='tool', entry_points={'console_scripts': ['tool = tool.cli:main']})\n",
        )
        .unwrap();
        let graph = repo_graph::Analyzer::new(root).analyze().unwrap();
        (dir, graph)
    }

    #[test]
    fn a_package_module_runs_through_its_entry_point_or_as_a_module() {
        let (dir, graph) = repo();
        let root = dir.path().canonicalize().unwrap();
        let graphs = [Arc::new(graph)];
        let cli = PackageModule::of_file(&graphs, &root.join("tool/cli.py")).unwrap();
        assert_eq!(cli.name, "tool.cli");
        assert_eq!(cli.import_root, root);
        assert_eq!(
            cli.launch(),
            Some(Launch::EntryPoint {
                command: "tool".into(),
                attribute: "main".into()
            })
        );
        let run = PackageModule::of_file(&graphs, &root.join("tool/run.py")).unwrap();
        assert_eq!(run.launch(), Some(Launch::Module));
        assert_eq!(PackageModule::by_name(&graphs, "tool.run"), Some(run));
        // Runs fine as a file: left alone.
        let plain = PackageModule::of_file(&graphs, &root.join("tool/plain.py")).unwrap();
        assert_eq!(plain.launch(), None);
        let core = PackageModule::of_file(&graphs, &root.join("tool/core.py")).unwrap();
        assert_eq!(core.launch(), None);
        // A library module: running it defines `work` and nothing else.
        assert!(core.runs_nothing() && !cli.runs_nothing() && !plain.runs_nothing());
        let note = core.library_note("`tool/core.py`");
        assert!(
            note.contains("library module `tool.core`")
                && note.contains("(work)")
                && note.ends_with("`from tool.core import work`"),
            "{note}"
        );
        // Not in a package, not in the repository.
        assert!(PackageModule::of_file(&graphs, &root.join("script.py")).is_none());
        assert!(PackageModule::of_file(&graphs, Path::new("/tmp/tool/cli.py")).is_none());
        assert!(PackageModule::by_name(&graphs, "tool").is_none());
        assert!(PackageModule::by_name(&graphs, "other.cli").is_none());
    }

    #[test]
    fn shell_command_lines_are_told_from_python() {
        for line in [
            "python /repo/cli.py scan --file in.xlsx",
            "\n  pip install pandas\nimport x",
            "/usr/bin/python3 -m tool.cli",
            "cd /repo && python run.py",
        ] {
            assert!(shell_command_line(line).is_some(), "{line}");
        }
        for source in [
            "import sys\npython = sys.executable",
            "python = 3",
            "ls = []",
            "print('python x')",
            "",
            "cat(x)",
        ] {
            assert_eq!(shell_command_line(source), None, "{source}");
        }
    }

    #[test]
    fn a_missing_script_names_the_files_of_that_name() {
        let (dir, graph) = repo();
        let root = dir.path().canonicalize().unwrap();
        let graphs = [Arc::new(graph)];
        let found = same_name_in_repositories(&graphs, &root.join("cli.py"));
        assert_eq!(
            found,
            [format!(
                "{} (the console script `tool`)",
                root.join("tool/cli.py").display()
            )]
        );
        assert!(same_name_in_repositories(&graphs, &root.join("nothing.py")).is_empty());
    }

    #[test]
    fn the_launch_code_runs_the_module_with_the_scripts_arguments() {
        let python = which_python().expect("python3 on PATH (the sandbox's tests need it too)");
        let (dir, graph) = repo();
        let root = dir.path().canonicalize().unwrap();
        let graphs = [Arc::new(graph)];
        let elsewhere = tempfile::tempdir().unwrap();
        let run = |module: &PackageModule| {
            let launch = module.launch().unwrap();
            let out = std::process::Command::new(&python)
                .arg("-c")
                .arg(module.code(&launch))
                .args(["a b", "--flag"])
                .current_dir(elsewhere.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        let cli = PackageModule::of_file(&graphs, &root.join("tool/cli.py")).unwrap();
        assert_eq!(run(&cli), "['a b', '--flag']\n");
        let module = PackageModule::of_file(&graphs, &root.join("tool/run.py")).unwrap();
        assert_eq!(run(&module), "1\n");
    }

    fn which_python() -> Result<PathBuf, ()> {
        std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("python3"))
                    .find(|p| p.is_file())
            })
            .ok_or(())
    }
}
