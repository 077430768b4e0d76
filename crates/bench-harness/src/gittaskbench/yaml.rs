//! The small subset of YAML that GitTaskBench's `task_info.yaml` files use:
//! `key: value` lines with plain, single- or double-quoted scalars,
//! comments, and one level of nested mappings (`parameters:` followed by
//! indented `key: value` lines).
//!
//! A full YAML parser would be a large dependency for eight keys; this one
//! accepts what the benchmark ships and reports anything else with its line
//! number instead of guessing.

use std::collections::BTreeMap;

/// A value in a task file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// A scalar, with quotes removed.
    Scalar(String),
    /// A nested mapping, in file order of keys (sorted).
    Map(BTreeMap<String, String>),
    /// A key with no value and no nested lines.
    Null,
}

impl Value {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Scalar(s) => Some(s),
            _ => None,
        }
    }
}

/// What in a task file is outside the subset this reader accepts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// A line that is not `key: value`.
    #[error("line {line}: expected `key: value`, got {raw:?}")]
    NotAPair {
        /// 1-based.
        line: usize,
        /// The line as written.
        raw: String,
    },
    /// An indented line before any key that could hold it.
    #[error("line {line}: indented line without a parent key: {raw:?}")]
    NoParent {
        /// 1-based.
        line: usize,
        /// The line as written.
        raw: String,
    },
    /// A mapping nested two levels deep.
    #[error("line {line}: nested mappings deeper than one level are not supported")]
    TooDeep {
        /// 1-based.
        line: usize,
    },
    /// A key with both a value and nested lines.
    #[error("line {line}: {parent:?} has a value and nested lines")]
    ValueAndNested {
        /// 1-based.
        line: usize,
        /// The key.
        parent: String,
    },
}

/// Parses `text` into its top-level mapping. The error names the line.
pub(crate) fn parse(text: &str) -> Result<BTreeMap<String, Value>, YamlError> {
    let mut top: BTreeMap<String, Value> = BTreeMap::new();
    // The top-level key whose nested lines are being read.
    let mut open: Option<String> = None;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = strip_comment(raw.trim_end_matches('\r'));
        if line.trim().is_empty() || line.trim() == "---" {
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let (key, value) = split_pair(line.trim()).ok_or_else(|| YamlError::NotAPair {
            line: number,
            raw: raw.to_owned(),
        })?;
        if indented {
            let Some(parent) = open.as_ref() else {
                return Err(YamlError::NoParent {
                    line: number,
                    raw: raw.to_owned(),
                });
            };
            let Some(value) = value else {
                return Err(YamlError::TooDeep { line: number });
            };
            match top.get_mut(parent) {
                Some(Value::Map(map)) => {
                    map.insert(key, value);
                }
                Some(slot @ Value::Null) => {
                    let mut map = BTreeMap::new();
                    map.insert(key, value);
                    *slot = Value::Map(map);
                }
                _ => {
                    return Err(YamlError::ValueAndNested {
                        line: number,
                        parent: parent.clone(),
                    });
                }
            }
        } else {
            match value {
                Some(value) => {
                    top.insert(key, Value::Scalar(value));
                    open = None;
                }
                None => {
                    top.insert(key.clone(), Value::Null);
                    open = Some(key);
                }
            }
        }
    }
    Ok(top)
}

/// Drops a `#` comment that is not inside quotes.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && previous.is_whitespace() => return &line[..i],
            None => {}
        }
        previous = c;
    }
    line
}

/// Splits `key: value`; `None` as the value when nothing follows the colon.
fn split_pair(line: &str) -> Option<(String, Option<String>)> {
    let (key, rest) = match line.split_once(": ") {
        Some(pair) => pair,
        None => (line.strip_suffix(':')?, ""),
    };
    let key = unquote(key.trim());
    if key.is_empty() {
        return None;
    }
    let rest = rest.trim();
    if rest.is_empty() || rest == "~" || rest == "null" {
        return Some((key, None));
    }
    Some((key, Some(unquote(rest))))
}

fn unquote(text: &str) -> String {
    let bytes = text.as_bytes();
    if bytes.len() >= 2 {
        let (first, last) = (bytes[0], bytes[bytes.len() - 1]);
        if first == b'\'' && last == b'\'' {
            return text[1..text.len() - 1].replace("''", "'");
        }
        if first == b'"' && last == b'"' {
            return text[1..text.len() - 1]
                .replace("\\\"", "\"")
                .replace("\\\\", "\\");
        }
    }
    text.to_owned()
}

/// YAML 1.1 and 1.2 spellings of booleans.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" => Some(true),
        "false" | "no" | "off" | "n" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_benchmark_forms() -> Result<(), Box<dyn std::error::Error>> {
        let text = "taskid: Stegano_01\nresult: test_results/Stegano_01/results.jsonl\n\
                    output_dir: output/Stegano_01/   # where outputs go\n\
                    groundtruth: groundtruth/Stegano_01/gt.png\nmulti_output: false\n\
                    parameters:\n watermark: 'stegano'\n  level: \"a # b\"\n";
        let map = parse(text)?;
        assert_eq!(map["taskid"], Value::Scalar("Stegano_01".into()));
        assert_eq!(
            map["output_dir"],
            Value::Scalar("output/Stegano_01/".into())
        );
        assert_eq!(
            parse_bool(map["multi_output"].as_str().unwrap_or("")),
            Some(false)
        );
        let Value::Map(params) = &map["parameters"] else {
            return Err("parameters is not a map".into());
        };
        assert_eq!(params["watermark"], "stegano");
        assert_eq!(params["level"], "a # b");
        Ok(())
    }

    #[test]
    fn empty_and_bad_inputs() {
        assert!(parse("").is_ok_and(|m| m.is_empty()));
        assert!(parse("parameters:\n").is_ok_and(|m| m["parameters"] == Value::Null));
        assert!(parse("  orphan: 1").is_err());
        assert!(parse("no colon here").is_err());
        assert!(parse("a:\n b:\n").is_err());
        assert!(parse("a: 1\n b: 2\n").is_err());
    }
}
