//! The reading half of a round trip: an example that writes a sample text
//! into a file and reads it back (`lsb.hide(image, "Hello World")`, saved,
//! then `lsb.reveal(saved)`), for a task that gives no text to write, is
//! cut to its reading call on the task's input.
//!
//! Measured (GitTaskBench Stegano_02, run 11, tuning half): asked to
//! extract the watermark hidden in its input image, the 1.5B model ran the
//! README's example as it was, hid "Hello World" in the input, saved the
//! image and called `finish`; the grader wanted the revealed text.

use super::*;

/// `code` cut to the reading half of its round trip, when it writes
/// `output` from a line holding one of `samples` and then reads `output`
/// back: the lines that hold a sample, and those that follow from them
/// until the reading line, are dropped, and the reading line reads the
/// input the dropped lines read. With the reading call's line. `None` when
/// `code` is no such round trip.
pub(super) fn reading_half(
    code: &str,
    output: &Path,
    input: &Path,
    samples: &[String],
) -> Option<(String, String)> {
    let output = output.to_string_lossy();
    let input = input.to_string_lossy();
    let literals = string_literals(code);
    let line_of = |at: usize| code[..at].matches('\n').count();
    let written = literals
        .iter()
        .find(|l| l.content == output && is_written(l))
        .map(|l| line_of(l.span.0))?;
    let read = literals
        .iter()
        .find(|l| l.content == output && !is_written(l) && line_of(l.span.0) > written)?;
    let read_line = line_of(read.span.0);
    let lines: Vec<&str> = code.lines().collect();
    let mut dropped = vec![false; lines.len()];
    let mut names: Vec<&str> = Vec::new();
    let mut reads_input = false;
    for (i, line) in lines.iter().enumerate().take(read_line) {
        let holds_sample = literals
            .iter()
            .any(|l| line_of(l.span.0) == i && samples.iter().any(|s| l.content.trim() == s));
        let follows = names.iter().any(|n| uses_name(line, n));
        if !(holds_sample || follows || i == written) {
            continue;
        }
        if line.starts_with([' ', '\t']) {
            // Inside a block: cutting part of it would break it.
            return None;
        }
        dropped[i] = true;
        reads_input |= line.contains(input.as_ref());
        if let Some((name, _)) = line.split_once('=')
            && is_identifier(name.trim())
        {
            names.push(name.trim());
        }
    }
    // The sample went into the input's file; what reads it back reads
    // the input, and uses nothing the cut lines made.
    if !reads_input || !dropped[written] || names.iter().any(|n| uses_name(lines[read_line], n)) {
        return None;
    }
    let quoted_output = &code[read.span.0..read.span.1];
    let reading = lines[read_line].replacen(quoted_output, &python_string(&input), 1);
    let mut out = String::with_capacity(code.len());
    for (i, line) in lines.iter().enumerate() {
        if dropped[i] {
            continue;
        }
        if i == read_line {
            out.push_str(&reading);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    Some((out, reading.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEGO: &str = "from stegano import lsb\nsecret = lsb.hide(\"/in/a.png\", \"Hello World\")\n\
                         secret.save(\"/o/output.png\")\n\nclear_message = lsb.reveal(\"/o/output.png\")\n";

    #[test]
    fn the_hidden_sample_is_dropped_and_the_input_read_back() {
        let (code, reading) = reading_half(
            STEGO,
            Path::new("/o/output.png"),
            Path::new("/in/a.png"),
            &["Hello World".to_string()],
        )
        .unwrap();
        assert_eq!(
            code,
            "from stegano import lsb\n\nclear_message = lsb.reveal(\"/in/a.png\")\n"
        );
        assert_eq!(reading, "clear_message = lsb.reveal(\"/in/a.png\")");
    }

    #[test]
    fn no_round_trip_no_cut() {
        let samples = ["Hello World".to_string()];
        // Written, never read back.
        let one_way = "from stegano import lsb\nlsb.hide(\"/in/a.png\", \"Hello World\").save(\"/o/output.png\")\n";
        assert!(
            reading_half(
                one_way,
                Path::new("/o/output.png"),
                Path::new("/in/a.png"),
                &samples
            )
            .is_none()
        );
        // The read uses what the cut lines made.
        let uses_cut = "from s import lsb\nsecret = lsb.hide(\"/in/a.png\", \"Hello World\")\n\
                        secret.save(\"/o/output.png\")\nlsb.reveal(\"/o/output.png\", secret.size)\n";
        assert!(
            reading_half(
                uses_cut,
                Path::new("/o/output.png"),
                Path::new("/in/a.png"),
                &samples
            )
            .is_none()
        );
        // The sample never went into the input.
        let other = "from s import lsb\nsecret = lsb.hide(\"/x/b.png\", \"Hello World\")\n\
                     secret.save(\"/o/output.png\")\nm = lsb.reveal(\"/o/output.png\")\n";
        assert!(
            reading_half(
                other,
                Path::new("/o/output.png"),
                Path::new("/in/a.png"),
                &samples
            )
            .is_none()
        );
    }
}
