//! Every tool against the real graph, views and sandbox of the fixture.

mod common;

use agent::run::tools::{EXPLORATION_TOOLS, all_definitions};
use agent::{Prepared, ToolOptions, ToolOutput};
use llm::ToolCall;
use serde_json::{Value, json};

use common::{Fixture, config};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn setup() -> Result<(Fixture, Prepared), Box<dyn std::error::Error>> {
    let fixture = Fixture::new()?;
    let prepared = agent::prepare(&fixture.task(), &config()).await?;
    Ok((fixture, prepared))
}

async fn call(prepared: &Prepared, name: &str, args: Value) -> ToolOutput {
    prepared.tools.call(&ToolCall::new("t1", name, args)).await
}

#[test]
fn schemas_have_exactly_the_issue_names_and_parameters() {
    let expected: &[(&str, &[&str], &[&str])] = &[
        ("list_directory", &["path", "depth"], &["path"]),
        ("view_code", &["target", "query"], &["target"]),
        ("view_file", &["path", "start_line", "end_line"], &["path"]),
        ("search_code", &["query", "regex"], &["query"]),
        ("find_callers", &["name", "depth"], &["name"]),
        ("find_callees", &["name", "depth"], &["name"]),
        (
            "module_dependencies",
            &["module", "direction"],
            &["module", "direction"],
        ),
        ("dependency_path", &["from", "to"], &["from", "to"]),
        ("read_document", &["path", "query"], &["path"]),
        ("write_file", &["path", "content"], &["path", "content"]),
        (
            "edit_file",
            &["path", "old_text", "new_text"],
            &["path", "old_text", "new_text"],
        ),
        ("run_python", &["code", "path", "args"], &[]),
        ("run_shell", &["command"], &["command"]),
        ("finish", &["summary"], &["summary"]),
        // The whole-repository views, offered by the MCP server only.
        ("overview", &["task", "budget", "keywords"], &[]),
        ("rank", &["top", "classes"], &[]),
        ("routes", &["filter"], &[]),
        ("usage", &["task", "budget"], &[]),
    ];
    let defs = all_definitions();
    assert_eq!(defs.len(), expected.len());
    for (def, (name, params, required)) in defs.iter().zip(expected) {
        assert_eq!(def.name, *name);
        let mut got: Vec<&str> = def.parameters["properties"]
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let mut want = params.to_vec();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{name}");
        let req: Vec<&str> = def.parameters["required"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(req, *required, "{name}");
    }
    assert!(
        EXPLORATION_TOOLS
            .iter()
            .all(|t| defs.iter().any(|d| d.name == *t))
    );
}

#[tokio::test]
async fn exploration_tools_answer_from_the_graph() -> TestResult {
    let (fixture, p) = setup().await?;

    let out = call(
        &p,
        "list_directory",
        json!({"path": fixture.repo().to_string_lossy()}),
    )
    .await;
    assert!(
        !out.is_error && out.text.contains("textstats/") && out.text.contains("core.py"),
        "{}",
        out.text
    );

    std::fs::create_dir_all(fixture.repo().join("textstats/__pycache__"))?;
    std::fs::create_dir_all(fixture.repo().join("build"))?;
    std::fs::write(fixture.repo().join(".gitignore"), "build/\n")?;
    let out = call(
        &p,
        "list_directory",
        json!({"path": "textstats", "depth": 1}),
    )
    .await;
    assert!(
        out.text.contains("  io.py\n") && !out.text.contains("__pycache__"),
        "{}",
        out.text
    );
    let out = call(&p, "list_directory", json!({"path": "."})).await;
    assert!(
        !out.text.contains("build/") && !out.text.contains(".gitignore"),
        "{}",
        out.text
    );
    let out = call(&p, "list_directory", json!({"path": "/no/such/dir"})).await;
    assert!(
        out.is_error && out.text.contains("outside the task's files"),
        "{}",
        out.text
    );

    let out = call(&p, "search_code", json!({"query": "WordCounter"})).await;
    assert!(
        out.text
            .contains("textstats.core.WordCounter (class) textstats/core.py:8-"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "search_code",
        json!({"query": r"def \w+\(rows", "regex": true}),
    )
    .await;
    assert!(
        out.text.contains("textstats/io.py:12:")
            && out.text.contains("(in textstats.io.write_csv)"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "search_code",
        json!({"query": "[unclosed", "regex": true}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("invalid regex"),
        "{}",
        out.text
    );

    let out = call(
        &p,
        "view_code",
        json!({"target": "textstats.core.WordCounter.top"}),
    )
    .await;
    assert!(out.text.contains("def top(self, n):"), "{}", out.text);
    let out = call(&p, "view_code", json!({"target": "textstats/io.py"})).await;
    assert!(
        out.text.contains("def write_csv(rows, path):"),
        "{}",
        out.text
    );
    let out = call(&p, "view_code", json!({"target": "textstats.core.Nope"})).await;
    assert!(
        out.is_error && out.text.contains("neither a file"),
        "{}",
        out.text
    );

    let out = call(&p, "find_callees", json!({"name": "feed"})).await;
    assert!(
        out.text.contains("textstats.tokenize.words"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "find_callers",
        json!({"name": "textstats.tokenize.words", "depth": 2}),
    )
    .await;
    assert!(
        out.text.contains("[1] textstats.core.WordCounter.feed")
            && out.text.contains("[2] textstats.cli.main"),
        "{}",
        out.text
    );
    let out = call(&p, "find_callers", json!({"name": "no_such_function"})).await;
    assert!(
        out.is_error && out.text.contains("search_code"),
        "{}",
        out.text
    );

    let out = call(
        &p,
        "module_dependencies",
        json!({"module": "textstats.cli", "direction": "imports"}),
    )
    .await;
    assert!(
        out.text.contains("textstats.core") && out.text.contains("textstats.io"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "module_dependencies",
        json!({"module": "textstats/tokenize.py", "direction": "imported_by"}),
    )
    .await;
    assert!(out.text.contains("textstats.core"), "{}", out.text);
    let out = call(
        &p,
        "module_dependencies",
        json!({"module": "textstats.cli", "direction": "sideways"}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    let out = call(
        &p,
        "dependency_path",
        json!({"from": "textstats.cli", "to": "textstats.tokenize"}),
    )
    .await;
    assert!(
        out.text.contains("textstats.cli")
            && out.text.contains("-> textstats.core")
            && out.text.contains("-> textstats.tokenize"),
        "{}",
        out.text
    );
    Ok(())
}

#[tokio::test]
async fn file_tools_view_write_and_edit() -> TestResult {
    let (fixture, p) = setup().await?;
    let script = fixture.repo().join("s.py");
    let path = script.to_string_lossy().into_owned();

    let out = call(
        &p,
        "write_file",
        json!({"path": path, "content": "x = 1\ny = 2\nx = 1\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(
        &p,
        "view_file",
        json!({"path": path, "start_line": 2, "end_line": 3}),
    )
    .await;
    assert_eq!(out.text, "    2 | y = 2\n    3 | x = 1\n");
    let out = call(
        &p,
        "edit_file",
        json!({"path": path, "old_text": "x = 1", "new_text": "x = 3"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("occurs 2 times"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "edit_file",
        json!({"path": path, "old_text": "z", "new_text": "w"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("does not occur"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "edit_file",
        json!({"path": path, "old_text": "y = 2", "new_text": "y = 5"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(std::fs::read_to_string(&script)?, "x = 1\ny = 5\nx = 1\n");
    // An edit that changes nothing is refused (RepoGenesis Blog, run 2).
    let out = call(
        &p,
        "edit_file",
        json!({"path": path, "old_text": "y = 5", "new_text": "y = 5"}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("nothing would change"),
        "{}",
        out.text
    );
    // A one-word fragment over a source file of ten lines or more is
    // refused (RepoGenesis Chatroom, run 2: a working app overwritten with
    // `app.py`); a short file, or real content, is written.
    let source: String = (0..12).map(|i| format!("v{i} = {i}\n")).collect();
    std::fs::write(&script, &source)?;
    let out = call(&p, "write_file", json!({"path": path, "content": "s.py"})).await;
    assert!(
        out.is_error
            && out
                .text
                .contains("would replace 12 lines of source with `s.py`"),
        "{}",
        out.text
    );
    assert_eq!(std::fs::read_to_string(&script)?, source);
    let out = call(
        &p,
        "write_file",
        json!({"path": path, "content": "print('all new')\nx = 2\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(&p, "write_file", json!({"path": path, "content": "x = 3"})).await;
    assert!(!out.is_error, "{}", out.text);

    let out = call(&p, "view_file", json!({"path": "/no/such/file"})).await;
    assert!(
        out.is_error && out.text.contains("outside the task's files"),
        "{}",
        out.text
    );
    let out = call(&p, "view_file", json!({"path": "no_such_file.py"})).await;
    assert!(
        out.is_error && out.text.contains("no_such_file.py does not exist"),
        "{}",
        out.text
    );
    // Relative paths are taken from the working directory (the repository).
    let out = call(
        &p,
        "read_document",
        json!({"path": "README.md", "query": "usage"}),
    )
    .await;
    assert!(out.text.contains("# textstats"), "{}", out.text);
    Ok(())
}

/// Measured with the embedded model (GitTaskBench Eparse_01): a package's
/// module run by its path, five turns running, failing on its relative
/// imports; and the module has no `__main__` block, only a console script.
#[tokio::test]
async fn a_package_module_run_by_path_runs_as_the_package_means() -> TestResult {
    let fixture = Fixture::new()?;
    let repo = fixture.repo();
    std::fs::write(
        repo.join("textstats/report.py"),
        "import sys\nfrom .core import WordCounter\n\n\ndef main():\n    print('top', WordCounter().feed(' '.join(sys.argv[1:])).top(1))\n    return 0\n",
    )?;
    std::fs::write(
        repo.join("textstats/summary.py"),
        "from .core import WordCounter\n\nif __name__ == '__main__':\n    print('summary', WordCounter().feed('b b').top(1))\n",
    )?;
    std::fs::write(
        repo.join("pyproject.toml"),
        "[project]\nname = \"textstats\"\n\n[project.scripts]\ntextstats-report = \"textstats.report:main\"\n",
    )?;
    let prepared = agent::prepare(&fixture.task(), &config()).await?;
    let report = repo.join("textstats/report.py").display().to_string();
    let dir = repo.display().to_string();
    // (arguments, what the reply says, what it must not say)
    let cases = [
        (
            json!({"path": report, "args": ["a", "b", "a"]}),
            vec![
                "exit code 0",
                "top [('a', 2)]",
                "console script `textstats-report = textstats.report:main`",
            ],
            "relative import",
        ),
        (
            json!({"args": ["python", "textstats/summary.py"], "code": "", "path": dir}),
            vec![
                "exit code 0",
                "summary [('b', 2)]",
                "ran as `python -m textstats.summary`",
            ],
            "Traceback",
        ),
        (
            json!({"args": ["python", "-m", "textstats.report", "x"]}),
            vec!["exit code 0", "top [('x', 1)]"],
            "Traceback",
        ),
        // A library module (PyPDF2_01, run 8: `pypdf/_reader.py` run for a
        // PDF's text): it runs, and the reply says it only defines things.
        (
            json!({"path": repo.join("textstats/core.py")}),
            vec![
                "exit code 0",
                "library module `textstats.core`",
                "`from textstats.core import WordCounter`",
            ],
            "Traceback",
        ),
        // A module with its own `__main__` block and absolute imports runs
        // as the file it is (here failing on its missing input).
        (
            json!({"args": ["python", "textstats/cli.py", "missing.txt", "out.csv"], "path": dir}),
            vec!["textstats/cli.py\", line", "FileNotFoundError"],
            "python -m",
        ),
    ];
    for (arguments, says, never) in cases {
        let out = call(&prepared, "run_python", arguments.clone()).await;
        assert!(!out.is_error, "{arguments}: {}", out.text);
        for text in says {
            assert!(out.text.contains(text), "{arguments}: {}", out.text);
        }
        assert!(!out.text.contains(never), "{arguments}: {}", out.text);
    }
    // A script guessed at the repository's top (PyPDF2_01, Eparse_02):
    // the repository's only file of that name runs, as its package means.
    let guessed = repo.join("report.py").display().to_string();
    let out = call(
        &prepared,
        "run_python",
        json!({"path": guessed, "args": ["q"]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    for says in [
        "top [('q', 1)]",
        "the repository's only file of that name",
        "textstats/report.py, ran instead",
    ] {
        assert!(out.text.contains(says), "{}", out.text);
    }
    // With two files of that name, the reply names both, and neither it
    // nor a shell command line is then written out as a file.
    std::fs::create_dir_all(repo.join("tools"))?;
    std::fs::write(repo.join("tools/report.py"), "print('other report')\n")?;
    let prepared = agent::prepare(&fixture.task(), &config()).await?;
    let out = call(&prepared, "run_python", json!({"path": guessed})).await;
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text
            .contains("textstats/report.py (the console script `textstats-report`)")
            && out.text.contains("tools/report.py"),
        "{}",
        out.text
    );
    // The same guess through the shell gets the same facts as a hint.
    let shell = call(
        &prepared,
        "run_shell",
        json!({"command": format!("python3 {guessed} x")}),
    )
    .await;
    assert!(
        shell.text.contains("Hint:") && shell.text.contains("textstats/report.py"),
        "{}",
        shell.text
    );
    // A package's module run by path through the shell: a hint says how.
    let shell = call(
        &prepared,
        "run_shell",
        json!({"command": format!("python3 {report} x")}),
    )
    .await;
    assert!(
        shell.text.contains("attempted relative import")
            && shell
                .text
                .contains("is the module `textstats.report` of a package"),
        "{}",
        shell.text
    );
    let output = fixture.out().join("output.txt").display().to_string();
    let out = call(
        &prepared,
        "write_file",
        json!({"path": output, "content": out.text}),
    )
    .await;
    assert!(
        out.is_error
            && out
                .text
                .contains("repeats the error an earlier call returned"),
        "{}",
        out.text
    );
    let out = call(
        &prepared,
        "write_file",
        json!({"path": guessed, "content": format!("python {guessed} scan --file in.xlsx")}),
    )
    .await;
    assert!(
        out.is_error && out.text.contains("shell command line"),
        "{}",
        out.text
    );
    Ok(())
}

/// Two shapes from the tuning half's trajectories (run 5): a one-liner
/// with `; for` (PyPDF2_02) and the model searching the repository for its
/// own tool after a failed run (PyPDF2_02, NeuroKit_02: four turns each).
#[tokio::test]
async fn one_liners_run_as_meant_and_tools_are_not_code() -> TestResult {
    let (fixture, prepared) = setup().await?;
    let dir = fixture.repo().display().to_string();
    let line = "from textstats.core import WordCounter; c = WordCounter().feed('a b a'); \
                for word, n in c.top(2): print(word, n)";
    for arguments in [
        json!({"args": ["python", "-c", line], "code": "", "path": dir}),
        json!({"code": line}),
    ] {
        let out = call(&prepared, "run_python", arguments.clone()).await;
        assert!(!out.is_error, "{arguments}: {}", out.text);
        for says in ["exit code 0", "a 2\nb 1", "cannot follow `;`"] {
            assert!(out.text.contains(says), "{arguments}: {}", out.text);
        }
        assert!(!out.text.contains("SyntaxError"), "{}", out.text);
    }
    // A relative path naming the task's input (InvisibleWatermark_03's
    // `cv2.imread('input/x.png')`) runs as that input's absolute path.
    let input = fixture.input();
    let first_line = std::fs::read_to_string(&input)?
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let out = call(
        &prepared,
        "run_python",
        json!({"code": "print(open('data/input.txt').read().splitlines()[0])"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    for says in [
        first_line.as_str(),
        "naming the task's inputs were made absolute",
        &format!("`data/input.txt` ran as {}", input.display()),
    ] {
        assert!(out.text.contains(says), "{}", out.text);
    }
    assert!(!out.text.contains("FileNotFoundError"), "{}", out.text);
    // Code Python accepts runs as written, without the note.
    let out = call(
        &prepared,
        "run_python",
        json!({"code": "a = 1; print(a + 1)"}),
    )
    .await;
    assert!(
        out.text.contains('2') && !out.text.contains("cannot follow"),
        "{}",
        out.text
    );

    let out = call(&prepared, "search_code", json!({"query": "run_python"})).await;
    assert!(
        out.text
            .contains("`run_python` is one of your tools, not code of the repository"),
        "{}",
        out.text
    );
    let out = call(&prepared, "find_callers", json!({"name": "run_python"})).await;
    assert!(
        out.is_error && out.text.contains("one of your tools"),
        "{}",
        out.text
    );
    // A name the repository does not have and no tool has: the usual advice.
    let out = call(&prepared, "search_code", json!({"query": "zzz_nothing"})).await;
    assert!(out.text.contains("Try other words"), "{}", out.text);
    Ok(())
}

/// A click-style usage error (`Try '... --help' for help.`) comes back with
/// the program's help (Eparse_01, tuning half of run 8: five identical
/// calls with arguments the command does not take).
#[tokio::test]
async fn a_usage_error_comes_with_the_programs_help() -> TestResult {
    let fixture = Fixture::new()?;
    let tool = fixture.repo().join("tool.sh");
    let shown = tool.display().to_string();
    std::fs::write(
        &tool,
        format!(
            "if [ \"$1\" = --help ]; then echo 'Options:'; echo '  --file PATH  the sheet to read'; exit 0; fi\n\
             echo 'Usage: sh {shown} [OPTIONS]'; echo \"Try 'sh {shown} --help' for help.\"; echo\n\
             echo 'Error: Got unexpected extra arguments (1 sheet)' >&2; exit 2\n"
        ),
    )?;
    let prepared = agent::prepare(&fixture.task(), &config()).await?;
    let out = call(
        &prepared,
        "run_shell",
        json!({"command": format!("sh {shown} 1 sheet")}),
    )
    .await;
    for says in [
        "unexpected extra arguments",
        "The usage error's help",
        "--file PATH  the sheet to read",
    ] {
        assert!(out.text.contains(says), "{}", out.text);
    }
    // A run that succeeds gets no help appended.
    let out = call(
        &prepared,
        "run_shell",
        json!({"command": format!("sh {shown} --help")}),
    )
    .await;
    assert!(!out.text.contains("The usage error's help"), "{}", out.text);
    Ok(())
}

#[tokio::test]
async fn run_tools_use_the_sandbox_in_the_working_directory() -> TestResult {
    let (fixture, p) = setup().await?;
    let out = call(&p, "run_python", json!({"code": "from textstats.core import WordCounter\nprint(WordCounter().feed('a b a').top(1))"})).await;
    assert!(
        out.text.starts_with("[exit code 0") && out.text.contains("[('a', 2)]"),
        "{}",
        out.text
    );
    let out = call(
        &p,
        "run_python",
        json!({"code": "import sys\nprint(sys.argv[1:])", "args": ["x", "y"]}),
    )
    .await;
    assert!(out.text.contains("['x', 'y']"), "{}", out.text);
    let out = call(
        &p,
        "run_python",
        json!({"code": "raise ValueError('bad input')"}),
    )
    .await;
    assert!(
        out.text.contains("exit code 1") && out.text.contains("ValueError: bad input"),
        "{}",
        out.text
    );
    let out = call(&p, "run_python", json!({})).await;
    assert!(out.is_error, "{}", out.text);
    // Code with `path` naming a directory (the repository, meant as where
    // to run it; measured with the embedded model): the code runs and the
    // reply says the path was ignored; so with a file path (NeuroKit_01:
    // a module of the repository, refused four turns running).
    let repo = fixture.repo().display().to_string();
    // (arguments, is an error, what the reply says, what it must not say)
    let cases = [
        (
            json!({"code": "print('ran')", "path": repo}),
            false,
            vec!["ran", "is a directory, not a script"],
            "",
        ),
        (
            json!({"code": "print('ran')", "path": "textstats/core.py"}),
            false,
            vec!["ran", "`code` ran and `path` was ignored"],
            "",
        ),
        // Empty strings for the arguments not meant, and a whole command
        // line in `args` (measured with the embedded model, GitTaskBench
        // Eparse_01 and _02): the command line runs, and the reply says
        // how to call.
        (
            json!({"args": ["python", "-c", "import sys; print('cl', sys.argv[1:])", "z"], "code": "", "path": ""}),
            false,
            vec!["cl ['z']", "held a whole Python command line"],
            "",
        ),
        (
            json!({"args": ["python3", "-c", "print('in dir')"], "code": "", "path": repo}),
            false,
            vec!["in dir"],
            "",
        ),
        // A `]` missing before the `)` that closes the call (Eparse_03,
        // sent five times): the code runs with it put in, and says so.
        (
            json!({"args": ["python", "-c", "print([c for c in str(12))"], "code": "", "path": ""}),
            false,
            vec!["['1', '2']", "`]` before `)` on line 1 put in"],
            "does not match",
        ),
        (
            json!({"args": ["--verbose"], "code": "", "path": ""}),
            true,
            vec!["give `code`"],
            "not both",
        ),
    ];
    for (arguments, is_error, says, never) in cases {
        let out = call(&p, "run_python", arguments.clone()).await;
        assert_eq!(out.is_error, is_error, "{arguments}: {}", out.text);
        for text in says {
            assert!(out.text.contains(text), "{arguments}: {}", out.text);
        }
        assert!(
            never.is_empty() || !out.text.contains(never),
            "{}",
            out.text
        );
    }
    let out = call(
        &p,
        "run_shell",
        json!({"command": "ls textstats && echo done"}),
    )
    .await;
    assert!(
        out.text.contains("core.py") && out.text.contains("done"),
        "{}",
        out.text
    );
    Ok(())
}

#[tokio::test]
async fn bad_calls_are_messages_and_observations_stay_under_l() -> TestResult {
    let fixture = Fixture::new()?;
    let mut cfg = config();
    cfg.tools.select.max_tokens = 300;
    let p = agent::prepare(&fixture.task(), &cfg).await?;
    let out = call(&p, "rm_rf", json!({})).await;
    assert!(
        out.is_error && out.text.contains("unknown tool `rm_rf`") && out.text.contains("view_code")
    );
    let out = call(&p, "view_file", json!({"path": 3})).await;
    assert!(
        out.is_error && out.text.contains("must be a string"),
        "{}",
        out.text
    );
    let out = call(&p, "view_file", json!({})).await;
    assert!(out.is_error && out.text.contains("missing required argument `path`"));
    let out = p
        .tools
        .call(&ToolCall::new("t", "view_file", json!("nope")))
        .await;
    assert!(out.is_error);
    let out = call(
        &p,
        "run_python",
        json!({"code": "for i in range(5000): print('line', i)"}),
    )
    .await;
    assert!(out.tokens <= 300, "{} tokens", out.tokens);
    assert!(
        out.text.contains("line 4999") && out.text.contains("omitted"),
        "{}",
        out.text
    );

    // Ablations: without exploration tools they are not offered; without
    // information selection observations are raw.
    let mut cfg = config();
    cfg.tools = ToolOptions {
        exploration: false,
        info_selection: false,
        ..ToolOptions::default()
    };
    let p = agent::prepare(&fixture.task(), &cfg).await?;
    let names: Vec<String> = p.tools.definitions().into_iter().map(|d| d.name).collect();
    assert!(!names.iter().any(|n| n == "search_code") && names.iter().any(|n| n == "view_file"));
    let out = call(&p, "search_code", json!({"query": "x"})).await;
    assert!(out.is_error && out.text.contains("unknown tool"));
    let out = call(
        &p,
        "run_python",
        json!({"code": "for i in range(5000): print('line', i)"}),
    )
    .await;
    assert!(out.tokens > 300 && !out.text.contains("omitted"));
    Ok(())
}

/// A task with two repositories: every graph tool answers from both, the
/// primary one first, and the initial context covers both.
#[tokio::test]
async fn tools_explore_every_repository_of_the_task() -> TestResult {
    let fixture = Fixture::new()?;
    let shop = std::fs::canonicalize(common::testdata().join("python/relative_import_reexport"))?;
    let task = fixture.task().with_repository(&shop);
    let prepared = agent::prepare(&task, &config()).await?;
    assert_eq!(prepared.tools.graphs().len(), 2);
    assert!(prepared.context.contains("# Repository repo ("));
    assert!(
        prepared
            .context
            .contains("# Repository relative_import_reexport")
    );

    // Qualified names and files of the second repository.
    let code = call(
        &prepared,
        "view_code",
        json!({"target": "shop.payments.gateway.charge"}),
    )
    .await;
    assert!(!code.is_error, "{}", code.text);
    assert!(
        code.text.contains("round_cents(cart.total())"),
        "{}",
        code.text
    );
    let by_path = call(
        &prepared,
        "view_code",
        // Not canonical on purpose: `..` must not defeat the lookup.
        json!({"target": shop.join("shop/../checkout.py").display().to_string()}),
    )
    .await;
    assert!(
        !by_path.is_error && by_path.text.contains("def main"),
        "{}",
        by_path.text
    );

    // Search merges both; paths are absolute so the model can use them.
    let search = call(&prepared, "search_code", json!({"query": "charge"})).await;
    assert!(
        search.text.contains("shop.payments.gateway.charge"),
        "{}",
        search.text
    );
    assert!(
        search
            .text
            .contains(&shop.join("shop/payments/gateway.py").display().to_string()),
        "{}",
        search.text
    );
    let callers = call(&prepared, "find_callers", json!({"name": "round_cents"})).await;
    assert!(
        callers.text.contains("shop.payments.gateway.charge"),
        "{}",
        callers.text
    );
    let deps = call(
        &prepared,
        "module_dependencies",
        json!({"module": "shop.payments.gateway", "direction": "imports"}),
    )
    .await;
    assert!(deps.text.contains("shop.utils.money"), "{}", deps.text);
    let across = call(
        &prepared,
        "dependency_path",
        json!({"from": "checkout", "to": "textstats"}),
    )
    .await;
    assert!(
        across.text.contains("different repositories"),
        "{}",
        across.text
    );
    Ok(())
}

/// A clean run that saved nothing is answered with the script itself plus
/// a step saving what it shows, in the format the task names (CSV here);
/// running what was offered writes the output.
#[tokio::test]
async fn a_clean_run_that_saved_nothing_is_offered_its_script_with_a_save_step() -> TestResult {
    let (fixture, prepared) = setup().await?;
    let code = format!(
        "from collections import Counter\nwords = open({:?}).read().split()\nprint(Counter(words).most_common(3))\n",
        fixture.input().display().to_string()
    );
    let out = call(&prepared, "run_python", json!({ "code": code })).await;
    assert!(!out.is_error, "{}", out.text);
    let csv = fixture.out().join("output.csv");
    assert!(
        out.text.contains(&format!(
            "Your script with a last step that saves what it shows in {}",
            csv.display()
        )),
        "{}",
        out.text
    );
    let offered = out
        .text
        .split("```python\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .ok_or("no script offered")?
        .to_owned();
    assert!(
        offered.starts_with(&code[..code.len() - "print(Counter(words).most_common(3))\n".len()])
    );
    assert!(!csv.exists());
    let out = call(&prepared, "run_python", json!({ "code": offered })).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        !out.text.contains("holds no `output*` file yet"),
        "{}",
        out.text
    );
    let written = std::fs::read_to_string(&csv)?;
    assert!(written.starts_with("[("), "{written}");
    Ok(())
}
