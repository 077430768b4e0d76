//! The tools' schemas are generated from their argument structs, and a call
//! is parsed back into the same structs: every tool's schema is what an
//! OpenAI-compatible server accepts (and exactly what was offered before
//! the tools were typed), parses its own example, and every malformed call
//! is a message for the model.

use agent::run::tools::{
    CallGraphArgs, Direction, EXPLORATION_TOOLS, RunPythonArgs, Tool, ToolCallError, ToolGroup,
    ToolName, all_definitions, parse,
};
use llm::ToolCall;
use serde_json::{Value, json};

/// One valid call per tool.
fn example(tool: ToolName) -> Value {
    match tool {
        ToolName::ListDirectory => json!({"path": "src", "depth": 3}),
        ToolName::ViewCode => json!({"target": "pkg.mod.Class.method", "query": "parse"}),
        ToolName::ViewFile => json!({"path": "a.py", "start_line": 1, "end_line": 20}),
        ToolName::SearchCode => json!({"query": "def main", "regex": false}),
        ToolName::FindCallers | ToolName::FindCallees => json!({"name": "main", "depth": 2}),
        ToolName::ModuleDependencies => json!({"module": "pkg.mod", "direction": "imported_by"}),
        ToolName::DependencyPath => json!({"from": "pkg.a", "to": "pkg.b"}),
        ToolName::ReadDocument => json!({"path": "README.md", "query": "install"}),
        ToolName::WriteFile => json!({"path": "run.py", "content": "print(1)\n"}),
        ToolName::EditFile => json!({"path": "run.py", "old_text": "1", "new_text": "2"}),
        ToolName::RunPython => json!({"path": "run.py", "args": ["in.txt", "out.txt"]}),
        ToolName::RunShell => json!({"command": "ls"}),
        ToolName::Finish => json!({"summary": "done"}),
        ToolName::Overview => {
            json!({"task": "parse a file", "budget": 4000, "keywords": ["parse"]})
        }
        ToolName::Rank => json!({"top": 10, "classes": 5}),
        ToolName::Routes => json!({"filter": "/users"}),
        ToolName::Usage => json!({"task": "parse a file", "budget": 1000}),
    }
}

fn call(name: &str, arguments: Value) -> Result<Tool, ToolCallError> {
    parse(&ToolCall::new("c1", name, arguments), ToolName::ALL)
}

/// The schemas as they were written by hand before the tools were typed:
/// the generated ones must be the same, so the model's prompt is unchanged.
fn legacy_parameters(name: &str) -> Value {
    fn schema(properties: Value, required: &[&str]) -> Value {
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }
    let depth = json!({"type": "integer", "minimum": 1, "maximum": 5, "description": "How many call edges to follow (default 1)."});
    match name {
        "list_directory" => schema(
            json!({"path": {"type": "string", "description": "Absolute path, or relative to the working directory."},
                   "depth": {"type": "integer", "minimum": 1, "maximum": 6, "description": "Levels to show (default 2)."}}),
            &["path"],
        ),
        "view_code" => schema(
            json!({"target": {"type": "string", "description": "A file path or a qualified name."},
                   "query": {"type": "string", "description": "What you are looking for, to choose which bodies to show."}}),
            &["target"],
        ),
        "view_file" => schema(
            json!({"path": {"type": "string"},
                   "start_line": {"type": "integer", "minimum": 1},
                   "end_line": {"type": "integer", "minimum": 1}}),
            &["path"],
        ),
        "search_code" => schema(
            json!({"query": {"type": "string"},
                   "regex": {"type": "boolean", "description": "Treat the query as a regular expression over source lines (default false)."}}),
            &["query"],
        ),
        "find_callers" | "find_callees" => schema(
            json!({"name": {"type": "string", "description": "Qualified or short name."}, "depth": depth}),
            &["name"],
        ),
        "module_dependencies" => schema(
            json!({"module": {"type": "string", "description": "Dotted module name or file path."},
                   "direction": {"type": "string", "enum": ["imports", "imported_by"]}}),
            &["module", "direction"],
        ),
        "dependency_path" => schema(
            json!({"from": {"type": "string"}, "to": {"type": "string"}}),
            &["from", "to"],
        ),
        "read_document" => schema(
            json!({"path": {"type": "string"}, "query": {"type": "string"}}),
            &["path"],
        ),
        "write_file" => schema(
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        "edit_file" => schema(
            json!({"path": {"type": "string"}, "old_text": {"type": "string"}, "new_text": {"type": "string"}}),
            &["path", "old_text", "new_text"],
        ),
        "run_python" => schema(
            json!({"code": {"type": "string", "description": "Source to run (python -c)."},
                   "path": {"type": "string", "description": "A script file to run instead."},
                   "args": {"type": "array", "items": {"type": "string"}}}),
            &[],
        ),
        "run_shell" => schema(json!({"command": {"type": "string"}}), &["command"]),
        "finish" => schema(
            json!({"summary": {"type": "string", "description": "What was done and where the outputs are."}}),
            &["summary"],
        ),
        _ => Value::Null,
    }
}

const LEGACY_DESCRIPTIONS: [&str; 14] = [
    "Show the directory tree under a path (ignoring what the repository ignores).",
    "Show a repository file or entity (qualified name like pkg.mod.Class.method) as code: whole when it fits, else imports, signatures with line numbers and the bodies most relevant to the query.",
    "Show raw lines of any text file, with line numbers.",
    "Search entity names, docstrings and source of the repository for keywords (or a regex); ranked hits with qualified names and locations.",
    "Functions that call the named function or class, from the call graph.",
    "Functions and classes the named function calls, from the call graph.",
    "Internal modules a module imports, or the modules that import it.",
    "The shortest chain of imports from one module to another.",
    "Read a document, text or CSV/TSV file: whole when it fits, else the chunks most relevant to the query (tables get a preview).",
    "Create or overwrite a file with this content (parent directories are created).",
    "Replace the only occurrence of old_text in a file with new_text.",
    "Run Python code or a script file in the sandbox, in the working directory.",
    "Run a bash command in the sandbox, in the working directory.",
    "End the task once the outputs are written and checked.",
];

#[test]
fn generated_schemas_are_the_offered_ones_and_servers_accept_them() {
    let definitions = all_definitions();
    assert_eq!(definitions.len(), ToolName::ALL.len());
    for ((definition, tool), description) in definitions
        .iter()
        .zip(ToolName::ALL)
        .zip(LEGACY_DESCRIPTIONS)
    {
        assert_eq!(definition.name, tool.as_str());
        assert_eq!(definition.description, description, "{}", tool.as_str());
        assert_eq!(
            definition.parameters,
            legacy_parameters(tool.as_str()),
            "{}",
            tool.as_str()
        );
        let text = definition.parameters.to_string();
        for noise in ["$schema", "title", "$defs", "definitions", "format", "null"] {
            assert!(!text.contains(noise), "{}: {text}", tool.as_str());
        }
    }
}

#[test]
fn every_tool_parses_its_own_example() -> Result<(), ToolCallError> {
    for &tool in ToolName::ALL {
        let parsed = call(tool.as_str(), example(tool))?;
        assert_eq!(parsed.name(), tool);
    }
    assert_eq!(
        call("find_callees", example(ToolName::FindCallees))?,
        Tool::FindCallees(CallGraphArgs {
            name: "main".into(),
            depth: Some(2)
        })
    );
    assert!(matches!(
        call("module_dependencies", example(ToolName::ModuleDependencies))?,
        Tool::ModuleDependencies(args) if args.direction == Direction::ImportedBy
    ));
    Ok(())
}

#[test]
fn the_exploration_tools_come_from_the_tool_list() {
    let exploration: Vec<&str> = ToolName::ALL
        .iter()
        .filter(|t| t.group() == ToolGroup::Exploration)
        .map(|t| t.as_str())
        .collect();
    assert_eq!(exploration, EXPLORATION_TOOLS);
    assert!(!EXPLORATION_TOOLS.contains(&"finish"));
}

#[test]
fn an_unknown_or_unoffered_tool_names_the_offered_ones() {
    let error = call("rm_rf", json!({})).err().map(|e| e.to_string());
    assert!(
        error.as_deref().is_some_and(
            |e| e.starts_with("unknown tool `rm_rf`; the tools are: list_directory, view_code")
        ),
        "{error:?}"
    );
    let core: Vec<ToolName> = ToolName::ALL
        .iter()
        .copied()
        .filter(|t| t.group() == ToolGroup::Core)
        .collect();
    let error = parse(
        &ToolCall::new("c", "search_code", json!({"query": "x"})),
        &core,
    );
    assert!(
        matches!(&error, Err(ToolCallError::UnknownTool { offered, .. }) if !offered.contains("search_code") && offered.contains("view_file")),
        "{error:?}"
    );
}

#[test]
fn arguments_that_are_not_an_object_are_a_message() {
    for arguments in [json!("nope"), json!([1, 2]), json!(3), Value::Null] {
        assert_eq!(
            call("view_file", arguments),
            Err(ToolCallError::NotAnObject)
        );
    }
    assert_eq!(
        ToolCallError::NotAnObject.to_string(),
        "the arguments must be a JSON object; see the tool's schema"
    );
}

#[test]
fn a_missing_required_argument_is_named() {
    let error = call("edit_file", json!({"path": "a.py", "old_text": "x"}));
    assert_eq!(error, Err(ToolCallError::Missing("new_text".into())));
    assert_eq!(
        call("view_file", json!({})).err().map(|e| e.to_string()),
        Some("missing required argument `path`".into())
    );
    // null is absent: for a required argument, that is missing too.
    assert_eq!(
        call("finish", json!({"summary": null})),
        Err(ToolCallError::Missing("summary".into()))
    );
}

#[test]
fn an_extra_argument_is_refused_with_the_tool_s_arguments() {
    let error = call("run_shell", json!({"command": "ls", "cwd": "/tmp"}))
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        error.as_deref(),
        Some("unknown argument `cwd`; run_shell takes: command")
    );
}

#[test]
fn wrong_types_are_named_and_unambiguous_ones_coerced() -> Result<(), ToolCallError> {
    assert_eq!(
        call("view_file", json!({"path": 3}))
            .err()
            .map(|e| e.to_string()),
        Some("`path` must be a string, got 3".into())
    );
    assert!(matches!(
        call("find_callers", json!({"name": "f", "depth": -1})),
        Err(ToolCallError::Invalid { argument, .. }) if argument == "depth"
    ));
    assert!(
        call(
            "module_dependencies",
            json!({"module": "m", "direction": "sideways"})
        )
        .err()
        .is_some_and(|e| e.to_string().contains(r#"one of "imports", "imported_by""#))
    );
    // A number as a string, a boolean as a string, numbers among strings,
    // and null for an optional argument: what the model meant is clear.
    assert_eq!(
        call("find_callers", json!({"name": "f", "depth": "3"}))?,
        Tool::FindCallers(CallGraphArgs {
            name: "f".into(),
            depth: Some(3)
        })
    );
    assert!(matches!(
        call("search_code", json!({"query": "x", "regex": "true"}))?,
        Tool::SearchCode(args) if args.regex == Some(true)
    ));
    assert_eq!(
        call(
            "run_python",
            json!({"code": "print(1)", "args": ["a", 2], "path": null})
        )?,
        Tool::RunPython(RunPythonArgs {
            code: Some("print(1)".into()),
            path: None,
            args: Some(vec!["a".into(), "2".into()]),
        })
    );
    // Out-of-range values parse (the tool clamps them, as it always has).
    assert!(call("list_directory", json!({"path": ".", "depth": 60})).is_ok());
    Ok(())
}
