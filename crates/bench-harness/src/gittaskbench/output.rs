//! Which file of an output directory the grader gets (GitTaskBench's rule).

use std::path::{Path, PathBuf};

/// The output the grader is given for a task whose outputs are in `dir`:
/// the first non-empty, non-`.py` file (by name) matching `output.*`, else
/// `output*`, else `output_*`, else the first such file inside a
/// subdirectory named `output*`. With `multi_output`, `dir` itself once any
/// of those exists. `None` when there is nothing to grade.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("output.py"), "print(1)")?;
/// std::fs::write(dir.path().join("output_02.txt"), "b")?;
/// std::fs::write(dir.path().join("output.csv"), "")?; // empty: skipped
/// assert_eq!(
///     bench_harness::find_output(dir.path(), false),
///     Some(dir.path().join("output_02.txt"))
/// );
/// assert_eq!(bench_harness::find_output(dir.path(), true), Some(dir.path().to_path_buf()));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn find_output(dir: &Path, multi_output: bool) -> Option<PathBuf> {
    let entries = sorted_entries(dir);
    let files: Vec<&PathBuf> = entries.iter().filter(|p| usable_file(p)).collect();
    let named = |accept: &dyn Fn(&str) -> bool| {
        files
            .iter()
            .find(|p| p.file_name().is_some_and(|n| accept(&n.to_string_lossy())))
            .map(|p| (*p).clone())
    };
    let found = named(&|n| n.starts_with("output."))
        .or_else(|| named(&|n| n.starts_with("output")))
        .or_else(|| named(&|n| n.starts_with("output_")))
        .or_else(|| {
            entries
                .iter()
                .filter(|p| p.is_dir())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("output"))
                })
                .find_map(|sub| sorted_entries(sub).into_iter().find(|p| usable_file(p)))
        })?;
    Some(if multi_output {
        dir.to_path_buf()
    } else {
        found
    })
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    paths
}

/// A regular file (symlinks followed) with content, not Python source.
fn usable_file(path: &Path) -> bool {
    let is_python = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("py"));
    !is_python && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() > 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(find_output(d, false), None);
        assert_eq!(find_output(&d.join("missing"), true), None);

        std::fs::create_dir(d.join("output_frames")).unwrap();
        std::fs::write(d.join("output_frames/b.png"), "x").unwrap();
        std::fs::write(d.join("output_frames/a.py"), "x").unwrap();
        assert_eq!(find_output(d, false), Some(d.join("output_frames/b.png")));

        std::fs::write(d.join("outputs.txt"), "x").unwrap();
        assert_eq!(find_output(d, false), Some(d.join("outputs.txt")));

        std::fs::write(d.join("output.wav"), "x").unwrap();
        assert_eq!(find_output(d, false), Some(d.join("output.wav")));
        assert_eq!(find_output(d, true), Some(d.to_path_buf()));

        std::fs::write(d.join("result.txt"), "x").unwrap();
        assert_eq!(find_output(d, false), Some(d.join("output.wav")));
    }
}
