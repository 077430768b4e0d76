//! Saving what an example only shows: the output format a task asks for
//! and the step that writes the shown value there.

use std::path::{Path, PathBuf};

use super::*;

/// Text formats a task may ask its output in; the last one its text
/// names wins (`…按 JSON 行格式逐行写入一个 txt 文件` asks for a `.txt`).
pub(super) const TEXT_FORMATS: &[&str] =
    &["txt", "json", "jsonl", "csv", "tsv", "md", "xml", "yaml"];
/// Formats that are not text: a task naming one of these and no text
/// format wants a file its library writes, not a printed value saved.
pub(super) const BINARY_FORMATS: &[&str] = &[
    "png", "jpg", "jpeg", "bmp", "gif", "pdf", "wav", "mp3", "mp4", "xlsx", "xls", "docx", "zip",
];

/// The output format a task's text asks for, for a starter that only shows
/// its result: the last text format named, `txt` when none is, `None`
/// when the task names only binary formats. A binary format that is an
/// input's type names the input ("decode the watermark in the PNG
/// image"), not the output: a 1.5B model given InvisibleWatermark's
/// printing example for that task never saved the text (GitTaskBench
/// InvisibleWatermark_03, run 11, tuning half).
pub(super) fn asked_text_format(query: &str, inputs: &[&Path]) -> Option<&'static str> {
    let input_types: Vec<String> = inputs.iter().filter_map(|i| input_type(i)).collect();
    let mut text = None;
    let mut binary = false;
    for word in query
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_ascii_lowercase();
        if let Some(format) = TEXT_FORMATS.iter().find(|f| **f == word) {
            text = Some(*format);
        } else if BINARY_FORMATS.contains(&word.as_str()) && !input_types.contains(&word) {
            binary = true;
        }
    }
    match (text, binary) {
        (Some(format), _) => Some(format),
        (None, true) => None,
        (None, false) => Some("txt"),
    }
}

/// A starter that writes nothing but ends by showing its result (`print(x)`
/// or `x = ...`) gets a last step saving that result to the output file, as
/// text in the format the task names. Measured (GitTaskBench Eparse_02,
/// tuning half, run 11): the README's example printed its tables; the
/// model ran it, read "no output file yet", and looked for the file
/// instead of writing it, until the episode ended stuck. The value is
/// written as the format wants it where Python can tell ([`write_step`]):
/// the fields are still the model's to get right, but the script it
/// starts from now ends where the task's output goes.
pub(super) fn save_what_is_shown(
    code: &str,
    query: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<(String, PathBuf)> {
    let format = asked_text_format(query, inputs)?;
    let last = code.lines().rev().find(|l| !l.trim().is_empty())?;
    if last.starts_with([' ', '\t']) {
        return prints_into_the_output(code, output_dir, format);
    }
    let value = if let Some(inner) = last
        .strip_prefix("print(")
        .and_then(|rest| rest.trim_end().strip_suffix(')'))
    {
        // `print(a, b)` and `print(x, file=f)` are not one value to save.
        if has_top_level_comma(inner) {
            return None;
        }
        format!("result = {inner}\nprint(result)\n")
    } else {
        let (name, _) = last.split_once('=')?;
        let name = name.trim();
        if !is_identifier(name) || last.contains("==") {
            return None;
        }
        format!("{last}\nresult = {name}\n")
    };
    let path = output_dir.join(format!("output.{format}"));
    let head = &code[..code.rfind(last)?];
    let script = format!(
        "{head}{value}{}",
        write_step(format, &python_string(&path.to_string_lossy()))
    );
    Some((script, path))
}

/// The step writing `result` to the quoted `path` in `format`: JSON as
/// JSON (what cannot be, as its text), JSON lines one item per line, a
/// table with its own `to_csv` where it has one, anything else as its
/// text. `str()` of a dict is no JSON a grader parses.
fn write_step(format: &str, path: &str) -> String {
    let as_text = |indent: &str| {
        format!(
            "{indent}with open({path}, \"w\", encoding=\"utf-8\") as out:\n\
             {indent}    out.write(str(result))\n"
        )
    };
    match format {
        "json" => format!(
            "import json\nwith open({path}, \"w\", encoding=\"utf-8\") as out:\n    \
             json.dump(result, out, ensure_ascii=False, indent=2, default=str)\n"
        ),
        "jsonl" => format!(
            "import json\nwith open({path}, \"w\", encoding=\"utf-8\") as out:\n    \
             for item in (result if isinstance(result, list) else [result]):\n        \
             out.write(json.dumps(item, ensure_ascii=False, default=str) + \"\\n\")\n"
        ),
        "csv" | "tsv" => {
            let sep = if format == "tsv" { ", sep=\"\\t\"" } else { "" };
            format!(
                "if hasattr(result, \"to_csv\"):\n    result.to_csv({path}, index=False{sep})\n\
                 else:\n{}",
                as_text("    ")
            )
        }
        _ => as_text(""),
    }
}

/// An example that ends printing inside a block (`for row in rows:
/// print(row)`) shows what it prints: each `print(...)` statement also
/// writes its line to the output file, opened before the first and closed
/// at the end. Only for a text format other than JSON, whose lines would
/// not make one document. Measured (GitTaskBench Eparse_01, run 13,
/// tuning half): the README's loop printed its rows, the model ran it,
/// was told no output file existed yet, ran it again and finished.
fn prints_into_the_output(
    code: &str,
    output_dir: &Path,
    format: &str,
) -> Option<(String, PathBuf)> {
    if format == "json" {
        return None;
    }
    let lines: Vec<&str> = code.lines().collect();
    let is_print = |line: &str| {
        let t = line.trim_start();
        t.starts_with("print(") && t.trim_end().ends_with(')') && !t.contains("file=")
    };
    let first = lines.iter().position(|l| is_print(l))?;
    // Opened at the top level, before the statement holding the first print.
    let open_at = (0..=first)
        .rev()
        .find(|&i| !lines[i].starts_with([' ', '\t']))?;
    let path = output_dir.join(format!("output.{format}"));
    let quoted = python_string(&path.to_string_lossy());
    let mut out = String::with_capacity(code.len() + 128);
    for (i, line) in lines.iter().enumerate() {
        if i == open_at {
            out.push_str(&format!(
                "output_file = open({quoted}, \"w\", encoding=\"utf-8\")\n"
            ));
        }
        if i >= open_at && is_print(line) {
            let body = line.trim_end();
            out.push_str(&body[..body.len() - 1]);
            out.push_str(")\n");
            let indent = &line[..line.len() - line.trim_start().len()];
            let args = &body[indent.len() + "print(".len()..body.len() - 1];
            out.push_str(&format!("{indent}print({args}, file=output_file)\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("output_file.close()\n");
    Some((out, path))
}

/// Whether `expr` has a comma outside brackets and string literals.
pub(super) fn has_top_level_comma(expr: &str) -> bool {
    let literals = string_literals(expr);
    let mut depth = 0i32;
    expr.char_indices().any(|(at, c)| {
        if literals.iter().any(|l| l.span.0 <= at && at < l.span.1) {
            return false;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        c == ',' && depth == 0
    })
}
