//! What a task's test script needs installed to run, the way the
//! benchmark's own environment has it.
//!
//! GitTaskBench grades every task in one environment, its top-level
//! `requirements.txt` (torch with CUDA, OpenCV, scikit-image, pypdf,
//! stegano...: many gigabytes). The test scripts import a few of those
//! each (`cv2`, `skimage` and `stegano` for Stegano_01; nothing but the
//! standard library for Faker_01). So a grading environment here holds the
//! distributions that provide the third-party modules the script (and the
//! Python files beside it) imports, at the benchmark's pinned versions,
//! with every pin of that file as a constraint so that what they pull in
//! is pinned too. Measured (GitTaskBench run 9, tuning half): graded in
//! the task repository's own requirements instead, Stegano_01's output was
//! judged by a script that could not start, `No module named 'cv2'`; nine
//! of the nineteen runnable tasks' scripts import a module their
//! repository does not declare.

use std::path::Path;
use std::sync::LazyLock;

use agent::environment::{is_stdlib, pip_name, provides, requirement_name};
use regex::Regex;

/// Python files of a test script's directory read for imports.
const MAX_FILES: usize = 64;
/// Bytes of one file (or of the benchmark's requirements) read.
const MAX_BYTES: u64 = 1 << 20;

/// The packages a test script needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ScriptPackages {
    /// What to install: the benchmark's pinned line for each needed
    /// distribution (`opencv-python==4.11.0.86`), or the distribution's
    /// name when the benchmark does not pin it. Sorted; empty when the
    /// script needs only the standard library.
    pub(crate) requirements: Vec<String>,
    /// Every `name==version` line of the benchmark's requirements, as
    /// constraints for what the requirements pull in; empty without that
    /// file.
    pub(crate) constraints: Vec<String>,
}

impl ScriptPackages {
    /// The packages the test script at `script` needs, pinned from
    /// `benchmark_requirements` (the benchmark's `requirements.txt`) when
    /// that file exists.
    pub(crate) fn for_script(script: &Path, benchmark_requirements: &Path) -> ScriptPackages {
        let modules = third_party_imports(script);
        if modules.is_empty() {
            return ScriptPackages::default();
        }
        let pins = read_limited(benchmark_requirements)
            .map(|text| pinned_lines(&text))
            .unwrap_or_default();
        let mut requirements: Vec<String> = modules
            .iter()
            .map(|module| {
                pins.iter()
                    .find(|(name, _)| provides(name, module))
                    .map_or_else(|| pip_name(module), |(_, line)| line.clone())
            })
            .collect();
        requirements.sort();
        requirements.dedup();
        ScriptPackages {
            requirements,
            constraints: pins.into_iter().map(|(_, line)| line).collect(),
        }
    }

    /// The requirements without their versions: what is installed when
    /// the benchmark's pins cannot be (no wheel for this Python).
    pub(crate) fn unpinned(&self) -> Vec<String> {
        self.requirements
            .iter()
            .map(|line| line.split("==").next().unwrap_or(line).trim().to_owned())
            .collect()
    }

    /// A name for the environment these packages make: `stdlib`, or
    /// `packages-<hash>` of the requirements and constraints.
    pub(crate) fn key(&self) -> String {
        if self.requirements.is_empty() {
            return "stdlib".to_owned();
        }
        let text = format!(
            "{}\n--\n{}",
            self.requirements.join("\n"),
            self.constraints.join("\n")
        );
        format!(
            "packages-{:016x}",
            crate::gittaskbench::grade::fnv1a(text.as_bytes())
        )
    }
}

/// The file's text, at most [`MAX_BYTES`] of it, when it is a regular file.
fn read_limited(path: &Path) -> Option<String> {
    use std::io::Read as _;
    // Checked before opening: opening a named pipe would block.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The `name==version` lines of a requirements file, by normalized name
/// (options such as `--extra-index-url`, comments and unpinned lines are
/// left out).
fn pinned_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next().unwrap_or("").trim();
            let name = requirement_name(line)?;
            line.contains("==").then(|| {
                (
                    name,
                    line.split(';').next().unwrap_or(line).trim().to_owned(),
                )
            })
        })
        .collect()
}

/// The top-level modules outside the standard library that the script
/// and the Python files beside it import, less the modules those files
/// are themselves. Sorted, without repeats.
fn third_party_imports(script: &Path) -> Vec<String> {
    let dir = script.parent().unwrap_or(Path::new("."));
    let mut files = vec![script.to_path_buf()];
    let mut local: Vec<String> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok).take(MAX_FILES * 4) {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
                local.push(stem.to_owned());
            }
            if !is_dir
                && path.extension().is_some_and(|e| e == "py")
                && path != script
                && files.len() < MAX_FILES
            {
                files.push(path);
            }
        }
    }
    let mut modules: Vec<String> = files
        .iter()
        .filter_map(|f| read_limited(f))
        .flat_map(|text| imported_modules(&text))
        .filter(|m| !is_stdlib(m) && !local.contains(m))
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

/// The top-level modules a Python source imports (`import a.b, c as d`,
/// `from e.f import g`); relative imports are local, so left out.
fn imported_modules(text: &str) -> Vec<String> {
    static IMPORT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"(?m)^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b|import[ \t]+([^#;\n]+))",
        )
        .ok()
    });
    let Some(import) = IMPORT.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for captures in import.captures_iter(text) {
        if let Some(from) = captures.get(1) {
            out.push(from.as_str().to_owned());
        } else if let Some(list) = captures.get(2) {
            for item in list.as_str().split(',') {
                let name = item.split_whitespace().next().unwrap_or("");
                let top = name.split('.').next().unwrap_or("");
                if !top.is_empty() && top.chars().all(|c| c.is_alphanumeric() || c == '_') {
                    out.push(top.to_owned());
                }
            }
        }
    }
    out
}

/// The normalized names of requirement lines.
#[cfg(test)]
fn names(requirements: &[String]) -> Vec<String> {
    requirements
        .iter()
        .filter_map(|r| requirement_name(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BENCHMARK: &str = "--extra-index-url https://download.pytorch.org/whl/cu113\n\
        numpy==1.24.4\nopencv-python==4.11.0.86\nscikit-image==0.24.0\nstegano==0.11.3\n\
        # a comment\npandas>=2\nLevenshtein==0.27.1\n";

    fn task(dir: &Path, script: &str, helpers: &[(&str, &str)]) -> std::path::PathBuf {
        let path = dir.join("test_script.py");
        std::fs::write(&path, script).unwrap();
        for (name, text) in helpers {
            std::fs::write(dir.join(name), text).unwrap();
        }
        path
    }

    #[test]
    fn the_benchmarks_pins_serve_the_modules_the_script_imports() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("requirements.txt"), BENCHMARK).unwrap();
        let script = task(
            dir.path(),
            "import argparse, os\nimport cv2\nfrom datetime import datetime\nfrom stegano import lsb\n\
             from skimage.metrics import peak_signal_noise_ratio as psnr\nfrom . import sibling\n\
             import helper\n    import Levenshtein  # inside a try\n",
            &[(
                "helper.py",
                "import numpy as np\nfrom pandas import read_csv\n",
            )],
        );
        let packages = ScriptPackages::for_script(&script, &dir.path().join("requirements.txt"));
        assert_eq!(
            packages.requirements,
            [
                "Levenshtein==0.27.1",
                "numpy==1.24.4",
                "opencv-python==4.11.0.86",
                "pandas",
                "scikit-image==0.24.0",
                "stegano==0.11.3"
            ]
        );
        // Pinned lines only, options left out.
        assert_eq!(packages.constraints.len(), 5);
        assert!(!packages.constraints.iter().any(|c| c.starts_with('-')));
        assert_eq!(
            names(&packages.unpinned()),
            [
                "levenshtein",
                "numpy",
                "opencv-python",
                "pandas",
                "scikit-image",
                "stegano"
            ]
        );
        assert!(packages.key().starts_with("packages-"));
    }

    #[test]
    fn a_script_of_the_standard_library_needs_nothing_and_no_file_means_no_pins() {
        let dir = tempfile::tempdir().unwrap();
        let script = task(
            dir.path(),
            "import argparse\nimport json, csv\nfrom datetime import datetime\n",
            &[],
        );
        let packages = ScriptPackages::for_script(&script, &dir.path().join("requirements.txt"));
        assert_eq!(packages, ScriptPackages::default());
        assert_eq!(packages.key(), "stdlib");
        let script = task(dir.path(), "import cv2\nimport fitz\n", &[]);
        let packages = ScriptPackages::for_script(&script, &dir.path().join("absent.txt"));
        assert_eq!(packages.requirements, ["opencv-python-headless", "pymupdf"]);
        assert!(packages.constraints.is_empty());
    }

    #[test]
    fn a_named_pipe_beside_the_script_is_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let script = task(dir.path(), "import cv2\n", &[]);
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("helper.py"))
            .status()
            .unwrap();
        assert!(made.success());
        // Opening the pipe would wait for a writer forever.
        let packages = ScriptPackages::for_script(&script, &dir.path().join("pipe-free.txt"));
        assert_eq!(packages.requirements, ["opencv-python-headless"]);
    }

    #[test]
    fn import_statements_in_their_shapes() {
        assert_eq!(
            imported_modules(
                "import a.b, c as d\nfrom e.f import g\nfrom .h import i\n  import j; import k\nx = 'import l'\n"
            ),
            ["a", "c", "e", "j"]
        );
    }
}
