//! From argument structs to the JSON Schemas offered to the model, and from
//! the model's arguments back to the structs.
//!
//! schemars generates each struct's schema; [`parameters`] reduces it to the
//! subset every OpenAI-compatible server (and the embedded model's grammar)
//! accepts: an object with `properties`, `required` and
//! `additionalProperties: false`, each property a plain `type` with an
//! optional description, bounds, `enum` or `items`. Nothing else (no
//! `$schema`, titles, formats, `$defs` or nullable type lists) is sent.
//!
//! [`parse`] checks a call against that same reduced schema before serde
//! reads it, so every mistake comes back to the model as a sentence that
//! names the argument and says what it must be.

use std::fmt::Write as _;

use llm::ToolCall;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use super::args::{Tool, ToolName};

/// Why a tool call could not be turned into a [`Tool`]: a message for the
/// model, which can fix its call and try again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolCallError {
    /// The name is not one of the offered tools.
    #[error("unknown tool `{name}`; the tools are: {offered}")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The offered tools' names, comma-separated.
        offered: String,
    },
    /// The arguments are valid JSON but not an object.
    #[error("the arguments must be a JSON object; see the tool's schema")]
    NotAnObject,
    /// A required argument is missing.
    #[error("missing required argument `{0}`")]
    Missing(String),
    /// An argument the tool does not take.
    #[error("unknown argument `{argument}`; {tool} takes: {expected}")]
    UnknownArgument {
        /// The tool.
        tool: &'static str,
        /// The argument the model sent.
        argument: String,
        /// The tool's arguments, comma-separated.
        expected: String,
    },
    /// An argument of the wrong type or value.
    #[error("`{argument}` must be {expected}, got {got}")]
    Invalid {
        /// The argument.
        argument: String,
        /// What it must be.
        expected: String,
        /// What the model sent.
        got: String,
    },
    /// Arguments the schema accepts but the struct does not (a bug in the
    /// tool's declaration, reported rather than panicking).
    #[error("invalid arguments for {tool}: {message}")]
    Deserialize {
        /// The tool.
        tool: &'static str,
        /// serde's message.
        message: String,
    },
}

/// The JSON Schema of `T` as offered to the model.
pub(crate) fn parameters<T: JsonSchema>() -> Value {
    let generated = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let properties: Map<String, Value> = generated
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), property(v))).collect())
        .unwrap_or_default();
    let required = generated
        .get("required")
        .cloned()
        .unwrap_or_else(|| Value::Array(Vec::new()));
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// One property reduced to the keys servers accept.
fn property(schema: &Value) -> Value {
    let mut out = Map::new();
    let Some(schema) = schema.as_object() else {
        return Value::Object(out);
    };
    if let Some(ty) = schema.get("type") {
        // `Option<T>` is `["T", "null"]`; an absent argument says the same.
        let ty = match ty {
            Value::Array(types) => {
                let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                match kept.as_slice() {
                    [one] => (*one).clone(),
                    _ => Value::Array(kept.into_iter().cloned().collect()),
                }
            }
            other => other.clone(),
        };
        out.insert("type".into(), ty);
    }
    if let Some(values) = schema.get("enum") {
        out.insert("enum".into(), values.clone());
    } else if let Some(Value::Array(variants)) = schema.get("oneOf") {
        // A Rust enum of unit variants, one `const` per variant: a plain
        // string enum says the same without the variants' doc comments.
        let values: Option<Vec<Value>> = variants.iter().map(|v| v.get("const").cloned()).collect();
        if let Some(values) = values {
            out.insert("type".into(), Value::String("string".into()));
            out.insert("enum".into(), Value::Array(values));
        }
    }
    for bound in ["minimum", "maximum"] {
        if let Some(value) = schema.get(bound) {
            out.insert(bound.into(), value.clone());
        }
    }
    if let Some(items) = schema.get("items") {
        out.insert("items".into(), property(items));
    }
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        out.insert(
            "description".into(),
            Value::String(first_paragraph(description)),
        );
    }
    Value::Object(out)
}

/// The first paragraph of a doc comment, on one line: the rest is for
/// readers of the code.
fn first_paragraph(doc: &str) -> String {
    let paragraph = doc.split("\n\n").next().unwrap_or("");
    paragraph.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Turns a call into a [`Tool`], if it names one of `offered` with arguments
/// that fit its schema.
///
/// Where the model's intent is unambiguous the arguments are coerced to the
/// schema rather than refused, as they always were: a number given as a
/// string (`"2"`), `"true"`/`"false"` for a boolean, a number among a list
/// of strings, and `null` or an empty string for an optional argument
/// (treated as absent: a model decoding under a grammar that lists every
/// property writes `"code": "", "path": ""` for the ones it does not mean,
/// and was refused as if it had given both).
pub fn parse(call: &ToolCall, offered: &[ToolName]) -> Result<Tool, ToolCallError> {
    let Some(name) = offered.iter().copied().find(|t| t.as_str() == call.name) else {
        return Err(ToolCallError::UnknownTool {
            name: call.name.clone(),
            offered: offered
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    let Value::Object(arguments) = &call.arguments else {
        return Err(ToolCallError::NotAnObject);
    };
    let schema = name.parameters();
    let arguments = conform(name, &schema, arguments)?;
    name.deserialize(Value::Object(arguments))
        .map_err(|e| ToolCallError::Deserialize {
            tool: name.as_str(),
            message: e.to_string(),
        })
}

/// Checks `arguments` against the tool's schema, coercing where that is
/// unambiguous.
fn conform(
    tool: ToolName,
    schema: &Value,
    arguments: &Map<String, Value>,
) -> Result<Map<String, Value>, ToolCallError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out = Map::new();
    for (key, value) in arguments {
        let Some(property) = properties.get(key) else {
            return Err(ToolCallError::UnknownArgument {
                tool: tool.as_str(),
                argument: key.clone(),
                expected: properties.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        };
        let optional = !required.contains(&key.as_str());
        if value.is_null() || (optional && value.as_str().is_some_and(|s| s.trim().is_empty())) {
            continue;
        }
        out.insert(key.clone(), coerce(key, property, value)?);
    }
    for key in required {
        if !out.contains_key(key) {
            return Err(ToolCallError::Missing(key.to_owned()));
        }
    }
    Ok(out)
}

/// One argument checked against its property schema.
fn coerce(key: &str, property: &Value, value: &Value) -> Result<Value, ToolCallError> {
    let invalid = |expected: &str| ToolCallError::Invalid {
        argument: key.to_owned(),
        expected: expected.to_owned(),
        got: value.to_string(),
    };
    let coerced = match property.get("type").and_then(Value::as_str) {
        Some("string") => match value {
            Value::String(_) => value.clone(),
            _ => return Err(invalid("a string")),
        },
        Some("integer") => value
            .as_u64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Value::from)
            .ok_or_else(|| invalid("a positive integer"))?,
        Some("boolean") => match value {
            Value::Bool(_) => value.clone(),
            Value::String(s) if s.trim() == "true" => Value::Bool(true),
            Value::String(s) if s.trim() == "false" => Value::Bool(false),
            _ => return Err(invalid("true or false")),
        },
        Some("array") if property["items"]["type"] == "string" => match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| match item {
                        Value::String(_) => item.clone(),
                        other => Value::String(other.to_string()),
                    })
                    .collect(),
            ),
            _ => return Err(invalid("an array of strings")),
        },
        _ => value.clone(),
    };
    if let Some(Value::Array(allowed)) = property.get("enum")
        && !allowed.contains(&coerced)
    {
        let mut expected = String::from("one of");
        for (i, v) in allowed.iter().enumerate() {
            let _ = write!(expected, "{} {v}", if i == 0 { "" } else { "," });
        }
        return Err(invalid(&expected));
    }
    Ok(coerced)
}
