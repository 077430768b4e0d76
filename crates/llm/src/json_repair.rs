//! Lenient JSON for tool-call arguments.
//!
//! Models cut off by the output limit, or small models writing JSON by hand,
//! produce almost-JSON. Repairs are made only where exactly one reading is
//! possible: closing a cut-off string and its open containers, dropping
//! trailing commas, turning single-quoted strings into double-quoted ones,
//! escaping raw control characters inside strings. Anything else (a key
//! without a value, a cut-off literal, unbalanced brackets, trailing text) is
//! an error carrying the parser's message.

use serde_json::{Map, Value};

/// A parsed value and, when it had to be repaired, what was done.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Repaired {
    pub(crate) value: Value,
    pub(crate) note: Option<String>,
}

/// Parses tool-call arguments: a JSON object, repaired where unambiguous.
/// Empty text and `null` mean "no arguments"; an object encoded as a JSON
/// string is unwrapped.
pub(crate) fn parse_tool_arguments(raw: &str) -> Result<Repaired, String> {
    if raw.trim().is_empty() {
        return Ok(Repaired {
            value: Value::Object(Map::new()),
            note: None,
        });
    }
    let mut parsed = parse_lenient(raw)?;
    if let Value::String(inner) = &parsed.value {
        let inner = parse_lenient(inner)?;
        let mut notes: Vec<String> = parsed.note.into_iter().collect();
        notes.push("arguments were a JSON string holding the object".to_owned());
        notes.extend(inner.note);
        parsed = Repaired {
            value: inner.value,
            note: Some(notes.join("; ")),
        };
    }
    match parsed.value {
        Value::Object(_) => Ok(parsed),
        Value::Null => Ok(Repaired {
            value: Value::Object(Map::new()),
            note: parsed.note,
        }),
        other => Err(format!(
            "arguments must be a JSON object, got {}",
            type_name(&other)
        )),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses JSON, repairing it where only one reading is possible.
pub(crate) fn parse_lenient(raw: &str) -> Result<Repaired, String> {
    let text = raw.trim();
    let first_error = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(Repaired { value, note: None }),
        Err(e) => e.to_string(),
    };
    let mut notes = Notes::default();
    let text = strip_code_fence(text, &mut notes);
    let repaired = repair(text, &mut notes).map_err(|why| format!("{why} ({first_error})"))?;
    match serde_json::from_str::<Value>(&repaired) {
        Ok(value) => Ok(Repaired {
            value,
            note: Some(notes.finish()),
        }),
        Err(_) => Err(first_error),
    }
}

#[derive(Default)]
struct Notes(Vec<&'static str>);

impl Notes {
    fn add(&mut self, note: &'static str) {
        if !self.0.contains(&note) {
            self.0.push(note);
        }
    }

    fn finish(self) -> String {
        if self.0.is_empty() {
            "reformatted".to_owned()
        } else {
            self.0.join(", ")
        }
    }
}

fn strip_code_fence<'a>(text: &'a str, notes: &mut Notes) -> &'a str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let body = match rest.find('\n') {
        Some(newline) => &rest[newline + 1..],
        None => rest,
    };
    notes.add("removed a code fence");
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

fn repair(text: &str, notes: &mut Notes) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 8);
    let mut open: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;

    for c in text.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
                if q == '\'' && c == '\'' {
                    // `\'` is valid in a single-quoted string but not in JSON.
                    out.pop();
                }
                out.push(c);
                continue;
            }
            match c {
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                _ if c == q => {
                    out.push('"');
                    quote = None;
                }
                '"' => out.push_str("\\\""),
                '\n' => {
                    notes.add("escaped raw control characters in a string");
                    out.push_str("\\n");
                }
                '\r' => {
                    notes.add("escaped raw control characters in a string");
                    out.push_str("\\r");
                }
                '\t' => {
                    notes.add("escaped raw control characters in a string");
                    out.push_str("\\t");
                }
                c if u32::from(c) < 0x20 => {
                    notes.add("escaped raw control characters in a string");
                    out.push_str(&format!("\\u{:04x}", u32::from(c)));
                }
                c => out.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                quote = Some('"');
                out.push(c);
            }
            '\'' => {
                notes.add("replaced single quotes with double quotes");
                quote = Some('\'');
                out.push('"');
            }
            '{' | '[' => {
                open.push(c);
                out.push(c);
            }
            '}' | ']' => {
                let opener = if c == '}' { '{' } else { '[' };
                if open.pop() != Some(opener) {
                    return Err(format!("unbalanced `{c}`"));
                }
                drop_trailing_comma(&mut out, notes);
                out.push(c);
            }
            c => out.push(c),
        }
    }

    if quote.is_some() {
        if escaped {
            out.pop();
        }
        drop_partial_unicode_escape(&mut out);
        out.push('"');
        notes.add("closed a cut-off string");
    }
    drop_trailing_comma(&mut out, notes);
    if out.trim_end().ends_with(':') {
        return Err("cut off before a value".to_owned());
    }
    if !open.is_empty() {
        notes.add("closed cut-off objects or arrays");
    }
    while let Some(opener) = open.pop() {
        out.push(if opener == '{' { '}' } else { ']' });
    }
    Ok(out)
}

fn drop_trailing_comma(out: &mut String, notes: &mut Notes) {
    let kept = out.trim_end().len();
    if out[..kept].ends_with(',') {
        out.truncate(kept - 1);
        notes.add("dropped a trailing comma");
    }
}

/// A string cut inside `\uXXXX` would otherwise be an invalid escape.
fn drop_partial_unicode_escape(out: &mut String) {
    let bytes = out.as_bytes();
    let digits = bytes
        .iter()
        .rev()
        .take(4)
        .take_while(|b| b.is_ascii_hexdigit())
        .count();
    let start = bytes.len() - digits;
    if digits < 4 && start >= 2 && &bytes[start - 2..start] == b"\\u" {
        // Backslashes before `\u` decide whether it is an escape at all.
        let backslashes = bytes[..start - 1]
            .iter()
            .rev()
            .take_while(|b| **b == b'\\')
            .count();
        if backslashes % 2 == 1 {
            out.truncate(start - 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ok(raw: &str) -> (Value, Option<String>) {
        let repaired = parse_lenient(raw).unwrap();
        (repaired.value, repaired.note)
    }

    #[test]
    fn valid_json_is_untouched() {
        assert_eq!(ok(r#" {"a": [1, 2]} "#), (json!({"a": [1, 2]}), None));
    }

    #[test]
    fn truncated_string_and_object_are_closed() {
        let (value, note) = ok(r#"{"path": "a.py", "content": "x"#);
        assert_eq!(value, json!({"path": "a.py", "content": "x"}));
        let note = note.unwrap();
        assert!(note.contains("closed a cut-off string"), "{note}");
        assert!(note.contains("closed cut-off objects"), "{note}");
    }

    #[test]
    fn truncation_inside_nested_containers_closes_all() {
        let (value, _) = ok(r#"{"edits": [{"line": 3, "text": "print(\"hi"#);
        assert_eq!(value, json!({"edits": [{"line": 3, "text": "print(\"hi"}]}));
    }

    #[test]
    fn dangling_escapes_are_dropped() {
        assert_eq!(ok(r#"{"a": "x\"#).0, json!({"a": "x"}));
        assert_eq!(ok(r#"{"a": "x\u00"#).0, json!({"a": "x"}));
        assert_eq!(ok(r#"{"a": "x\\u00"#).0, json!({"a": "x\\u00"}));
    }

    #[test]
    fn trailing_commas_are_dropped() {
        assert_eq!(
            ok(r#"{"a": [1, 2,], "b": 3,}"#).0,
            json!({"a": [1, 2], "b": 3})
        );
        assert_eq!(ok(r#"{"a": 1,"#).0, json!({"a": 1}));
    }

    #[test]
    fn single_quotes_become_double_quotes() {
        let (value, note) = ok(r#"{'path': 'it\'s "here"'}"#);
        assert_eq!(value, json!({"path": "it's \"here\""}));
        assert!(note.unwrap().contains("single quotes"));
    }

    #[test]
    fn raw_newlines_in_strings_are_escaped() {
        assert_eq!(ok("{\"code\": \"a\n\tb\"}").0, json!({"code": "a\n\tb"}));
    }

    #[test]
    fn code_fences_are_removed() {
        assert_eq!(ok("```json\n{\"a\": 1,}\n```").0, json!({"a": 1}));
    }

    #[test]
    fn ambiguous_input_is_an_error() {
        for raw in [
            r#"{"path": "#,
            r#"{"path""#,
            r#"{"pa"#,
            r#"{"flag": tr"#,
            r#"{"a": 1}}"#,
            r#"{"a": 1} trailing"#,
            r#"{"a": 1] "#,
            "not json at all",
        ] {
            assert!(parse_lenient(raw).is_err(), "{raw} should not be repaired");
        }
    }

    #[test]
    fn tool_arguments_accept_empty_null_and_string_encoded_objects() {
        assert_eq!(parse_tool_arguments("").unwrap().value, json!({}));
        assert_eq!(parse_tool_arguments("null").unwrap().value, json!({}));
        let nested = parse_tool_arguments(r#""{\"a\": 1}""#).unwrap();
        assert_eq!(nested.value, json!({"a": 1}));
        assert!(nested.note.unwrap().contains("JSON string"));
        let err = parse_tool_arguments("[1, 2]").unwrap_err();
        assert!(err.contains("must be a JSON object"), "{err}");
    }

    #[test]
    fn errors_carry_the_parser_message() {
        let err = parse_tool_arguments(r#"{"path": "#).unwrap_err();
        assert!(err.contains("EOF"), "{err}");
    }

    #[test]
    fn arbitrary_prefixes_never_panic() {
        let text = r#"{"a": ["x\"y", {'b': "\u00e9\n"}, 1.5e3, null,], "c": "été"}"#;
        for end in (0..=text.len()).filter(|i| text.is_char_boundary(*i)) {
            let _ = parse_tool_arguments(&text[..end]);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Whatever a model sends as arguments, parsing ends with an
        /// object or an error message, never a panic or another shape.
        #[test]
        fn any_text_is_an_object_or_an_error(raw in "\\PC{0,200}") {
            if let Ok(repaired) = parse_tool_arguments(&raw) {
                proptest::prop_assert!(repaired.value.is_object(), "{raw:?} -> {:?}", repaired.value);
            }
        }

        /// Text shaped like JSON (brackets, quotes, escapes, truncation)
        /// reaches the repair paths; the same holds there.
        #[test]
        fn json_shaped_text_is_an_object_or_an_error(raw in r#"[{}\[\]",:\\a-z0-9 ntrufl.\-]{0,80}"#) {
            if let Ok(repaired) = parse_tool_arguments(&raw) {
                proptest::prop_assert!(repaired.value.is_object(), "{raw:?} -> {:?}", repaired.value);
            }
        }
    }
}
