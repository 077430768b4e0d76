//! An example that makes up its data (`eda = nk.eda_simulate(...)`,
//! `data = nk.data("bio_eventrelated_100hz")`) for a task that gives a
//! table of it: the made-up data is replaced by reading the task's table.
//!
//! Measured (GitTaskBench NeuroKit_01..03, run 11, tuning half): no README
//! example reads a CSV, so the model got no starter and wrote
//! `nk.read_csv(...)` (no such function) or processed NeuroKit's bundled
//! sample instead of the task's recording. The README's own EDA example,
//! with its simulated signal swapped for the task's `EDA` column, is the
//! script the task needs, but for the values it asks.

use std::path::{Path, PathBuf};

use super::*;

/// Words of a call's name that make up data rather than read it.
const MAKERS: &[&str] = &[
    "simulate",
    "simulated",
    "data",
    "dataset",
    "load",
    "sample",
    "example",
    "generate",
    "synthetic",
    "random",
    "make",
];
/// Bytes of a table read for its header line.
const HEADER_MAX: u64 = 64 * 1024;

/// The made-up data an example had and what reads the task's table instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeUpData {
    /// The call as the example wrote it (`nk.eda_simulate(duration=10)`).
    pub written: String,
    /// The task's table now read in its place.
    pub input: PathBuf,
    /// The column taken, when the variable names one of the table's
    /// columns (`eda` for `EDA`) or the table has one.
    pub column: Option<String>,
}

/// `code` with its first made-up data replaced by reading `input`, when
/// `input` is a table (CSV, TSV, Excel) and a top-level line assigns the
/// result of a call whose name makes up data ([`MAKERS`]) and that names
/// no file.
pub(super) fn read_input_instead(code: &str, input: &Path) -> Option<(String, MadeUpData)> {
    let ext = input_type(input)?;
    let reader = match ext.as_str() {
        "csv" | "tsv" => "read_csv",
        "xlsx" | "xls" => "read_excel",
        _ => return None,
    };
    let lines: Vec<&str> = code.lines().collect();
    let (at, name, call) = lines.iter().enumerate().find_map(|(i, line)| {
        let (name, call) = made_up_assignment(line)?;
        Some((i, name, call))
    })?;
    let column = (reader == "read_csv")
        .then(|| column_for(name, &header(input, &ext)?))
        .flatten();
    let path = python_string(&input.to_string_lossy());
    let sep = if ext == "tsv" { ", sep=\"\\t\"" } else { "" };
    let read = match &column {
        Some(c) => format!("pd.{reader}({path}{sep})[{}]", python_string(c)),
        None => format!("pd.{reader}({path}{sep})"),
    };
    let mut out = String::with_capacity(code.len() + 64);
    if !lines.iter().any(|l| l.trim() == "import pandas as pd") {
        out.push_str("import pandas as pd\n");
    }
    for (i, line) in lines.iter().enumerate() {
        if i == at {
            out.push_str(&format!("{name} = {read}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    Some((
        out,
        MadeUpData {
            written: call.to_string(),
            input: input.to_path_buf(),
            column,
        },
    ))
}

/// `name = call(...)` on one top-level line, the call's name making up
/// data and no literal naming a file: the name and the call.
fn made_up_assignment(line: &str) -> Option<(&str, &str)> {
    let (name, call) = plain_assignment(line)?;
    let open = call.find('(')?;
    if !call.ends_with(')') || balance(call) != 0 {
        return None;
    }
    let callee = &call[..open];
    if callee.is_empty()
        || !callee
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return None;
    }
    let last = callee
        .rsplit('.')
        .next()
        .unwrap_or(callee)
        .to_ascii_lowercase();
    if !last.split('_').any(|word| MAKERS.contains(&word)) {
        return None;
    }
    if string_literals(call)
        .iter()
        .any(|l| file_type(&l.content).is_some())
    {
        return None;
    }
    Some((name, call))
}

/// Open minus closed brackets, outside string literals.
fn balance(text: &str) -> i32 {
    let literals = string_literals(text);
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        if literals.iter().any(|l| l.span.0 <= at && at < l.span.1) {
            continue;
        }
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The column names of a CSV or TSV file's first line.
fn header(input: &Path, ext: &str) -> Option<Vec<String>> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(input).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file.take(HEADER_MAX))
        .read_line(&mut first)
        .ok()?;
    let sep = if ext == "tsv" { '\t' } else { ',' };
    let columns: Vec<String> = first
        .trim_end_matches(['\r', '\n'])
        .split(sep)
        .map(|c| c.trim().trim_matches('"').to_string())
        .collect();
    (!columns.iter().all(String::is_empty)).then_some(columns)
}

/// The column a variable stands for: the one its name names (`eda` for
/// `EDA`, `eog_signal` for `EOG`), or the table's only one.
fn column_for(name: &str, columns: &[String]) -> Option<String> {
    let name = name.to_ascii_lowercase();
    let first_word = name.split('_').next().unwrap_or_default();
    let named = columns.iter().find(|c| {
        let c = c.to_ascii_lowercase();
        !c.is_empty() && (c == name || c == first_word)
    });
    match (named, columns) {
        (Some(c), _) | (None, [c]) => Some(c.clone()),
        (None, _) => None,
    }
}
