//! Python tracebacks cut to what a model can act on.
//!
//! Measured (GitTaskBench NeuroKit_02/_03, embedded Qwen 1.5B, tuning
//! half): one failed call into the library printed a chained traceback of
//! 4,951 characters, thirty frames of pandas and urllib, about 1,500
//! tokens, and every later turn paid for them again in its prompt (on two
//! cores, about half a minute each). The model needs the frames of the
//! code it wrote and of the repository it is using, where the library was
//! entered, and the exception; frames inside installed libraries and the
//! standard library between them are counted, not shown.

use std::path::Path;

/// Frames in a run of library frames that are always shown: the first
/// (where the code entered the library) and the last (where it raised).
const KEPT_AT_EACH_END: usize = 1;

/// A traceback's frame: its `File "...", line N, in f` line and the
/// indented lines under it.
struct Frame<'t> {
    lines: Vec<&'t str>,
    ours: bool,
}

/// `output` with each run of library frames of each traceback cut to its
/// first and last frame and a count. A frame is "ours" when its file is
/// inline code (`<string>`, `<stdin>`), a relative path, or under one of
/// `roots` (the repositories, the working directory). Output without a
/// traceback comes back unchanged.
pub(crate) fn compact(output: &str, roots: &[&Path]) -> String {
    if !output.contains("Traceback (most recent call last):") {
        return output.to_owned();
    }
    let mut out = String::with_capacity(output.len());
    let mut frames: Vec<Frame<'_>> = Vec::new();
    for line in output.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if let Some(file) = frame_file(trimmed) {
            frames.push(Frame {
                lines: vec![line],
                ours: is_ours(file, roots),
            });
        } else if let (Some(frame), true) = (frames.last_mut(), trimmed.starts_with("    ")) {
            frame.lines.push(line);
        } else {
            flush(&mut out, &mut frames);
            out.push_str(line);
        }
    }
    flush(&mut out, &mut frames);
    out
}

/// Writes `frames`, cutting each run of library frames longer than the
/// kept ends, and empties it.
fn flush(out: &mut String, frames: &mut Vec<Frame<'_>>) {
    let mut i = 0;
    while i < frames.len() {
        if frames[i].ours {
            out.extend(frames[i].lines.iter().copied());
            i += 1;
            continue;
        }
        let end = frames[i..]
            .iter()
            .position(|f| f.ours)
            .map_or(frames.len(), |n| i + n);
        let run = &frames[i..end];
        if run.len() <= 2 * KEPT_AT_EACH_END + 1 {
            for frame in run {
                out.extend(frame.lines.iter().copied());
            }
        } else {
            for frame in &run[..KEPT_AT_EACH_END] {
                out.extend(frame.lines.iter().copied());
            }
            let hidden = run.len() - 2 * KEPT_AT_EACH_END;
            out.push_str(&format!(
                "  [... {hidden} frames inside installed libraries omitted ...]\n"
            ));
            for frame in &run[run.len() - KEPT_AT_EACH_END..] {
                out.extend(frame.lines.iter().copied());
            }
        }
        i = end;
    }
    frames.clear();
}

/// The file of a frame line `  File "x.py", line 3, in f`.
fn frame_file(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("  File \"")?;
    let (file, tail) = rest.split_once('"')?;
    tail.starts_with(", line ").then_some(file)
}

fn is_ours(file: &str, roots: &[&Path]) -> bool {
    if file.starts_with('<') {
        return true;
    }
    let path = Path::new(file);
    if !path.is_absolute() {
        return true;
    }
    // A virtualenv inside a root is still installed code.
    if file.contains("/site-packages/") || file.contains("/dist-packages/") {
        return false;
    }
    roots.iter().any(|root| path.starts_with(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(file: &str, n: u32) -> String {
        format!("  File \"{file}\", line {n}, in f{n}\n    call_{n}()\n    ^^^^^^^^\n")
    }

    #[test]
    fn library_frames_between_ours_are_counted_not_shown() {
        let mut text = String::from("before\nTraceback (most recent call last):\n");
        text.push_str(&frame("<string>", 1));
        text.push_str(&frame("/repo/pkg/data.py", 2));
        for n in 3..=9 {
            text.push_str(&frame(
                "/venv/lib/python3.11/site-packages/pandas/io/common.py",
                n,
            ));
        }
        text.push_str(&frame("/usr/lib/python3.11/urllib/request.py", 10));
        text.push_str("urllib.error.URLError: <urlopen error [Errno -3]>\nafter\n");
        let out = compact(&text, &[Path::new("/repo")]);
        assert!(out.starts_with("before\nTraceback"), "{out}");
        for kept in [
            "line 1, in f1",
            "line 2, in f2",
            "line 3, in f3",
            "line 10, in f10",
        ] {
            assert!(out.contains(kept), "{kept}: {out}");
        }
        assert!(out.contains("    call_3()\n"), "{out}");
        assert!(!out.contains("line 4, in f4"), "{out}");
        assert!(
            out.contains(
                "  [... 6 frames inside installed libraries omitted ...]\n  File \"/usr/lib"
            ),
            "{out}"
        );
        assert!(
            out.ends_with("URLError: <urlopen error [Errno -3]>\nafter\n"),
            "{out}"
        );
        assert!(out.len() < text.len() / 2, "{out}");
    }

    #[test]
    fn short_tracebacks_and_other_output_are_unchanged() {
        let plain = "no traceback here\n  File \"x\", line 1, in y\n";
        assert_eq!(compact(plain, &[]), plain);
        let mut text = String::from("Traceback (most recent call last):\n");
        for n in 1..=3 {
            text.push_str(&frame("/usr/lib/python3.11/json/decoder.py", n));
        }
        text.push_str("json.decoder.JSONDecodeError: Expecting value\n");
        assert_eq!(compact(&text, &[]), text);
        // Inline code and relative paths are the model's own.
        assert!(is_ours("<string>", &[]) && is_ours("run.py", &[]));
        assert!(!is_ours(
            "/work/repo/venv/lib/python3.11/site-packages/x.py",
            &[Path::new("/work")]
        ));
    }
}
