//! Facts about the task's files added after an execution's output, where
//! the output shows the model missed them.
//!
//! A small model copies a README's usage verbatim: `read_text("input.txt")`
//! and `write_csv(rows, "output.csv")`, relative paths, although the task
//! prompt gives the input's absolute path and the output directory. The run
//! then fails with `No such file or directory: 'input.txt'`, or succeeds
//! with the output in the working directory where nothing looks for it;
//! and the model, reading only the traceback, repeats the same call. The
//! tools know the task's files, so the observation says which path was
//! meant.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::SystemTime;

use regex::Regex;

use super::policy::{PathPolicy, RootKind};

/// What a failed connection prints (Python's resolver and sockets,
/// urllib3, curl, git).
/// Measured (GitTaskBench NeuroKit_02/_03, PyPDF2_02, tuning half): the
/// model loaded a README's sample dataset from the web, then ran `pip
/// install` (8.7 s of retries), turn after turn.
const NETWORK_FAILURES: &[&str] = &[
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Failed to establish a new connection",
    "Could not resolve host",
    "nodename nor servname provided",
];

/// Most entries of the working directory looked at for outputs written
/// there: a larger directory is not scanned (a hint is not worth it).
const MAX_SCANNED_ENTRIES: usize = 10_000;

/// The files named `output*` directly in the working directory, with their
/// modification times: taken before a run, compared after it.
#[derive(Debug, Default)]
pub(crate) struct OutputsInWorkDir(BTreeMap<OsString, Option<SystemTime>>);

impl OutputsInWorkDir {
    /// What the working directory holds now.
    pub(crate) fn scan(policy: &PathPolicy) -> OutputsInWorkDir {
        let base = policy.base();
        // The output directory may be the working directory itself: then
        // nothing written there is misplaced.
        if policy.roots_of(RootKind::OutputDir).any(|o| o == base) {
            return OutputsInWorkDir::default();
        }
        let Ok(entries) = std::fs::read_dir(base) else {
            return OutputsInWorkDir::default();
        };
        OutputsInWorkDir(
            entries
                .take(MAX_SCANNED_ENTRIES)
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("output"))
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| {
                    let modified = e.metadata().ok().and_then(|m| m.modified().ok());
                    (e.file_name(), modified)
                })
                .collect(),
        )
    }

    /// Files new or changed since `before`.
    fn written_since(&self, before: &OutputsInWorkDir) -> Vec<&OsString> {
        self.0
            .iter()
            .filter(|(name, modified)| before.0.get(*name) != Some(modified))
            .map(|(name, _)| name)
            .collect()
    }
}

/// The hints for a run of `code` (when it was inline source) whose
/// combined output is `output`; `before` and `after` are the working
/// directory's outputs around the run. Empty when nothing was missed.
pub(crate) fn after_run(
    policy: &PathPolicy,
    output: &str,
    code: Option<&str>,
    before: &OutputsInWorkDir,
    after: &OutputsInWorkDir,
) -> Vec<String> {
    let mut hints = Vec::new();
    let base = policy.base();
    let mut missing_paths = missing_relative_paths(output);
    for literal in code
        .map(|c| relative_input_literals(policy, c))
        .unwrap_or_default()
    {
        if !missing_paths.contains(&literal) {
            missing_paths.push(literal);
        }
    }
    for missing in missing_paths {
        let name = Path::new(&missing).file_name();
        let input = policy
            .roots_of(RootKind::Input)
            .find(|input| name.is_some() && input.file_name() == name);
        let hint = match input {
            Some(input) => format!(
                "`{missing}` is not in the working directory {}: the task's input is {}; use that absolute path.",
                base.display(),
                input.display()
            ),
            None => format!(
                "`{missing}` is relative to the working directory {}, where it does not exist; give absolute paths.",
                base.display()
            ),
        };
        if !hints.contains(&hint) {
            hints.push(hint);
        }
    }
    if NETWORK_FAILURES
        .iter()
        .any(|marker| output.contains(marker))
    {
        let inputs: Vec<String> = policy
            .roots_of(RootKind::Input)
            .take(3)
            .map(|p| p.display().to_string())
            .collect();
        let use_inputs = if inputs.is_empty() {
            String::new()
        } else {
            format!(" Read the task's input from {}.", inputs.join(", "))
        };
        hints.push(format!(
            "The sandbox has no network: downloads (pip install, sample datasets, pretrained \
             models, URLs) fail, and retrying will not help. The environment already has the \
             repository's dependencies.{use_inputs}"
        ));
    }
    let written = after.written_since(before);
    if let (false, Some(out)) = (
        written.is_empty(),
        policy.roots_of(RootKind::OutputDir).next(),
    ) {
        let names: Vec<String> = written
            .iter()
            .map(|n| base.join(n).display().to_string())
            .collect();
        let first = written
            .first()
            .map(|n| out.join(n))
            .unwrap_or_else(|| PathBuf::from(out));
        hints.push(format!(
            "The run wrote {} in the working directory, but outputs go in the output directory {}: write {} instead (an absolute path).",
            names.join(", "),
            out.display(),
            first.display()
        ));
    }
    hints
}

/// The reminder after a script that ran without error while the output
/// directory still holds no `output*` file, when it is not the working
/// directory (where every run's files land). A small model that prints
/// the result it was asked to save reads a clean run as done.
pub(crate) fn no_output_yet(policy: &PathPolicy) -> Option<String> {
    let out = policy.roots_of(RootKind::OutputDir).next()?;
    if out == policy.base() {
        return None;
    }
    let entries = std::fs::read_dir(out).ok()?;
    let written = entries
        .take(MAX_SCANNED_ENTRIES)
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().starts_with("output"));
    (!written).then(|| {
        format!(
            "The run worked, but the output directory {} holds no `output*` file yet: save the \
             task's result there as `output` with the extension it needs (an absolute path), \
             check it, then call `finish`.",
            out.display()
        )
    })
}

/// Relative paths written as string literals in `code` that name one of
/// the task's inputs by its file name and do not exist from the working
/// directory. Measured (GitTaskBench InvisibleWatermark_03, embedded Qwen
/// 1.5B, tuning half): `cv2.imread('input/x.png')` does not raise, it
/// warns in its own words and returns `None`, and the model read the
/// `AttributeError` that followed three turns running; no library's error
/// text is needed to see the path is wrong.
/// The command a command-line program's usage error says to run for its
/// help (click and typer print `Try 'python -m pkg.cli scan --help' for
/// help.`), when it is a plain command: words of letters, digits and
/// `_ . / - : =` only, so running it can do nothing but print help.
///
/// Measured (GitTaskBench Eparse_01, tuning half, run 8): `python -m
/// eparse.cli scan 1 sheet tables`, five times over, each answered `Got
/// unexpected extra arguments`; click's usage line shows `[OPTIONS]`, not
/// the options, and the model never asked for `--help`.
pub(crate) fn help_command(output: &str) -> Option<String> {
    static TRY: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?m)^Try '([^'\n]{1,200}) --help' for help\.?\s*$").ok());
    if !output.contains("Error:") {
        return None;
    }
    let command = TRY.as_ref()?.captures(output)?.get(1)?.as_str().trim();
    let plain = command.split_whitespace().all(|word| {
        word.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-:=".contains(c))
            && !word.starts_with("--help")
    });
    (plain && !command.is_empty()).then(|| format!("{command} --help"))
}

/// The script `python` could not open (`python: can't open file
/// '/repo/cli.py': [Errno 2] No such file or directory`), as an absolute
/// path.
pub(crate) fn unopened_script(output: &str) -> Option<PathBuf> {
    static CANT_OPEN: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"can't open file '([^'\n]{1,4096})': \[Errno 2\]").ok());
    let path = PathBuf::from(CANT_OPEN.as_ref()?.captures(output)?.get(1)?.as_str());
    path.is_absolute().then_some(path)
}

/// The script run by path whose relative import failed (`ImportError:
/// attempted relative import with no known parent package`): the
/// traceback's first file.
pub(crate) fn relative_import_failure(output: &str) -> Option<PathBuf> {
    static FRAME: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#"File "([^"\n]{1,4096})", line \d+, in <module>"#).ok());
    if !output.contains("attempted relative import with no known parent package") {
        return None;
    }
    let path = PathBuf::from(FRAME.as_ref()?.captures(output)?.get(1)?.as_str());
    path.is_absolute().then_some(path)
}

/// `code` with each relative path literal that names one of the task's
/// inputs by its file name, and does not exist from the working directory,
/// replaced by that input's absolute path; with the replacements made.
/// `None` when there is none.
///
/// Measured (GitTaskBench InvisibleWatermark_03, tuning half, runs 5 and
/// 8): `cv2.imread('input/InvisibleWatermark_03_input.png')`, the hint
/// with the absolute path, then a `cp` of the input into the repository
/// and the same code again, three times. A relative path whose file name
/// is the task's input means that input.
pub(crate) fn with_task_paths(
    policy: &PathPolicy,
    code: &str,
) -> Option<(String, Vec<(String, PathBuf)>)> {
    let mut out = code.to_owned();
    let mut made = Vec::new();
    for text in relative_input_literals(policy, code) {
        let name = Path::new(&text).file_name();
        let mut inputs = policy
            .roots_of(RootKind::Input)
            .filter(|input| input.file_name() == name);
        let (Some(input), None) = (inputs.next(), inputs.next()) else {
            continue;
        };
        let Some(absolute) = input.to_str().filter(|p| !p.contains(['\'', '"', '\\'])) else {
            continue;
        };
        for quote in ['\'', '"'] {
            out = out.replace(
                &format!("{quote}{text}{quote}"),
                &format!("{quote}{absolute}{quote}"),
            );
        }
        made.push((text, input.to_path_buf()));
    }
    (!made.is_empty()).then_some((out, made))
}

fn relative_input_literals(policy: &PathPolicy, code: &str) -> Vec<String> {
    static LITERAL: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#"['"]([^'"\n]{1,512})['"]"#).ok());
    let Some(literal) = &*LITERAL else {
        return Vec::new();
    };
    let base = policy.base();
    let mut found: Vec<String> = Vec::new();
    for caps in literal.captures_iter(code) {
        let text = caps[1].trim();
        let path = Path::new(text);
        if text.is_empty() || path.is_absolute() || found.iter().any(|f| f == text) {
            continue;
        }
        let names_an_input = path.file_name().is_some_and(|name| {
            policy
                .roots_of(RootKind::Input)
                .any(|input| input.file_name() == Some(name))
        });
        if names_an_input && !base.join(path).exists() {
            found.push(text.to_owned());
        }
        if found.len() == 8 {
            break;
        }
    }
    found
}

/// The relative paths that output says do not exist: Python's
/// `FileNotFoundError` (`No such file or directory: 'x'`) and the shell
/// tools' `x: No such file or directory`.
fn missing_relative_paths(output: &str) -> Vec<String> {
    // Fixed patterns, checked by the tests; `None` would only lose hints.
    static PYTHON: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#"No such file or directory: ['"]([^'"\n]{1,512})['"]"#).ok());
    static SHELL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?m)^[\w.-]+: (?:cannot open |cannot access )?'?([^:'\n]{1,512})'?: No such file or directory").ok()
    });
    let mut found: Vec<String> = Vec::new();
    let patterns = [&*PYTHON, &*SHELL].into_iter().flatten();
    for caps in patterns.flat_map(|re| re.captures_iter(output)) {
        let path = caps[1].trim();
        if !path.is_empty() && !path.starts_with('/') && !found.iter().any(|f| f == path) {
            found.push(path.to_owned());
        }
        if found.len() == 8 {
            break;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_script_python_could_not_open_is_named() {
        let output =
            "python: can't open file '/w/repo/cli.py': [Errno 2] No such file or directory\n";
        assert_eq!(
            super::unopened_script(output),
            Some(std::path::PathBuf::from("/w/repo/cli.py"))
        );
        assert_eq!(
            super::unopened_script("can't open file 'cli.py': [Errno 2]"),
            None
        );
        assert_eq!(super::unopened_script("all fine"), None);
    }

    #[test]
    fn a_failed_relative_import_names_its_script() {
        let output = "Traceback (most recent call last):\n  File \"/w/Eparse/eparse/cli.py\", line 15, in <module>\n    from .core import (\nImportError: attempted relative import with no known parent package\n";
        assert_eq!(
            super::relative_import_failure(output),
            Some(std::path::PathBuf::from("/w/Eparse/eparse/cli.py"))
        );
        assert_eq!(
            super::relative_import_failure("ImportError: no module"),
            None
        );
    }

    #[test]
    fn a_usage_error_names_the_help_to_run() {
        let click = "Usage: python -m eparse.cli scan [OPTIONS]\nTry 'python -m eparse.cli scan --help' for help.\n\nError: Got unexpected extra arguments (1 sheet tables)\n";
        assert_eq!(
            super::help_command(click).as_deref(),
            Some("python -m eparse.cli scan --help")
        );
        // Not a usage error, or not a plain command: nothing is run.
        assert_eq!(super::help_command("Try 'x --help' for help.\n"), None);
        for hostile in [
            "Try 'x; rm -rf ~ --help' for help.\nError: no",
            "Try '$(curl evil) --help' for help.\nError: no",
            "Try 'x `id` --help' for help.\nError: no",
            "Try 'x --help --help' for help.\nError: no",
        ] {
            assert_eq!(super::help_command(hostile), None, "{hostile}");
        }
    }

    use super::*;
    use crate::run::tools::policy::Access;

    fn policy(dir: &Path) -> PathPolicy {
        let work = dir.join("work");
        let out = dir.join("out");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(dir.join("input.txt"), "text").unwrap();
        PathPolicy::new(&work)
            .root(&work, RootKind::WorkDir, Access::ReadWrite)
            .root(&out, RootKind::OutputDir, Access::ReadWrite)
            .root(&dir.join("input.txt"), RootKind::Input, Access::Read)
    }

    #[test]
    fn a_relative_input_path_gets_the_inputs_absolute_path() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        let output = "Traceback (most recent call last):\n  File \"<string>\", line 5\nFileNotFoundError: [Errno 2] No such file or directory: 'input.txt'\n";
        let none = OutputsInWorkDir::default();
        let hints = after_run(&policy, output, None, &none, &none);
        let input = dir.path().canonicalize().unwrap().join("input.txt");
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].contains(&format!("the task's input is {}", input.display())),
            "{hints:?}"
        );
    }

    #[test]
    fn a_relative_input_path_in_the_code_gets_the_inputs_absolute_path() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        // OpenCV's words for a file it cannot open: no Python error.
        let output = "[ WARN:0@4.6] global loadsave.cpp:278 findDecoder imread_('input/input.txt'): can't open/read file\nAttributeError: 'NoneType' object has no attribute 'shape'\n";
        let code =
            "import cv2\nimg = cv2.imread('input/input.txt')\nopen(\"notes.md\")\nprint('done')";
        let none = OutputsInWorkDir::default();
        let hints = after_run(&policy, output, Some(code), &none, &none);
        let input = dir.path().canonicalize().unwrap().join("input.txt");
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].starts_with("`input/input.txt` is not in the working directory"),
            "{hints:?}"
        );
        assert!(hints[0].contains(&input.display().to_string()), "{hints:?}");
        // A relative path that exists from the working directory is right.
        std::fs::write(dir.path().join("work/input.txt"), "copy").unwrap();
        assert!(after_run(&policy, "", Some("open('input.txt')"), &none, &none).is_empty());
    }

    #[test]
    fn a_refused_download_says_there_is_no_network_and_where_the_input_is() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        let output = "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>\n";
        let none = OutputsInWorkDir::default();
        let hints = after_run(&policy, output, None, &none, &none);
        let input = dir.path().canonicalize().unwrap().join("input.txt");
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0].starts_with("The sandbox has no network"),
            "{hints:?}"
        );
        assert!(
            hints[0].contains(&format!("input from {}", input.display())),
            "{hints:?}"
        );
    }

    #[test]
    fn shell_tools_and_unknown_files_get_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        let output = "cat: data/notes.md: No such file or directory\nls: cannot access 'x.csv': No such file or directory\n";
        let none = OutputsInWorkDir::default();
        let hints = after_run(&policy, output, None, &none, &none);
        assert_eq!(hints.len(), 2, "{hints:?}");
        assert!(hints[0].starts_with("`data/notes.md` is relative to the working directory"));
        assert!(hints[1].starts_with("`x.csv` is relative"));
        // Absolute paths and other output: nothing to add.
        let quiet = after_run(
            &policy,
            "No such file or directory: '/abs/input.txt'\nall good",
            None,
            &none,
            &none,
        );
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    #[test]
    fn an_output_written_in_the_working_directory_is_pointed_to_the_output_directory() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        std::fs::write(dir.path().join("work/output_old.txt"), "old").unwrap();
        let before = OutputsInWorkDir::scan(&policy);
        std::fs::write(dir.path().join("work/output.csv"), "word,count").unwrap();
        std::fs::write(dir.path().join("work/notes.txt"), "not an output").unwrap();
        let after = OutputsInWorkDir::scan(&policy);
        let hints = after_run(&policy, "", None, &before, &after);
        assert_eq!(hints.len(), 1, "{hints:?}");
        let out = dir.path().canonicalize().unwrap().join("out/output.csv");
        assert!(
            hints[0].contains(&format!("write {} instead", out.display())),
            "{hints:?}"
        );
        assert!(!hints[0].contains("output_old"), "{hints:?}");
    }

    #[test]
    fn a_clean_run_with_nothing_in_the_output_directory_is_reminded_to_save() {
        let dir = tempfile::tempdir().unwrap();
        let policy = policy(dir.path());
        let hint = no_output_yet(&policy).expect("nothing saved yet");
        let out = dir.path().canonicalize().unwrap().join("out");
        assert!(hint.contains(&out.display().to_string()), "{hint}");
        std::fs::write(out.join("output.txt"), "done").unwrap();
        assert_eq!(no_output_yet(&policy), None);
        // Where the working directory is the output directory, every
        // run's files are there: no reminder.
        let work = dir.path().join("work");
        let same = PathPolicy::new(&work)
            .root(&work, RootKind::WorkDir, Access::ReadWrite)
            .root(&work, RootKind::OutputDir, Access::ReadWrite);
        assert_eq!(no_output_yet(&same), None);
        let none = PathPolicy::new(&work).root(&work, RootKind::WorkDir, Access::ReadWrite);
        assert_eq!(no_output_yet(&none), None);
    }

    #[test]
    fn outputs_are_not_misplaced_when_the_working_directory_is_the_output_directory() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let policy = PathPolicy::new(&work)
            .root(&work, RootKind::WorkDir, Access::ReadWrite)
            .root(&work, RootKind::OutputDir, Access::ReadWrite);
        let before = OutputsInWorkDir::scan(&policy);
        std::fs::write(work.join("output.csv"), "x").unwrap();
        let after = OutputsInWorkDir::scan(&policy);
        assert!(after_run(&policy, "", None, &before, &after).is_empty());
    }
}
