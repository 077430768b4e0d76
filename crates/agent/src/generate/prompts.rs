//! The prompts of `repo-agent generate`, one per role of seed 004: the
//! planner that writes the blueprint, the coder that writes one file from
//! the blueprint and the code memory, and the repairer that patches files
//! from the verification's evidence.

use std::fmt::Write as _;

use context_pack::TokenCounter;
use context_pack::spec::SpecDocument;

use super::blueprint::{SpecFacts, shape_for};

/// The planner's system prompt.
pub const PLANNER: &str = "You are the planning agent of repo-agent. You turn a specification into an \
implementation blueprint: a self-contained JSON plan another agent will implement file by file without \
seeing the specification. Be exact: every endpoint with its method, path, request and response shapes, \
status codes and error cases; every file with its purpose, what it exports and which planned files it \
uses; the dependencies; the start command; a build order in which each file comes after the files it uses. \
A web service is written in Python, listens on 0.0.0.0 at the specified port, and has a `start.sh` that \
installs nothing and runs the service in the foreground (for example `exec python app.py`), plus a \
`requirements.txt`. Answer with one ```json block and nothing else.";

/// The coder's system prompt.
pub const CODER: &str = "You are the coding agent of repo-agent. You write one file of a repository at a \
time from its blueprint and from the memory of the files already written (their interfaces, not their code). \
Use exactly the names, signatures and routes the memory shows; implement everything the blueprint asks of \
this file; no placeholders or TODOs. Answer with the complete content of the file in one fenced code block \
and nothing else.";

/// The repairer's system prompt.
pub const REPAIRER: &str = "You are the repair agent of repo-agent. A generated repository failed some of its \
checks. Read the evidence, find the cause in the files, and fix it with `edit_file` (exact text replacement) \
or `write_file` (a whole file), using absolute paths. Change only what the failures need; keep every \
endpoint's method, path and response shape as the blueprint says. You may run commands with `run_shell` to \
check a fix, but do not start the service: it runs in the foreground until the command's time limit, and \
the checks start it themselves after you finish. Call `finish`, alone in its reply, with a one-line summary \
when the fix is in place.";

/// The specification's sections, headings kept, within `budget` tokens:
/// over budget, each section keeps a share proportional to its size.
pub fn spec_sections(doc: &SpecDocument, counter: &TokenCounter, budget: usize) -> String {
    let mut s = String::new();
    let sections = doc.sections();
    let total: usize = sections.iter().map(|sec| counter.count(&sec.text)).sum();
    // Over budget, each section keeps a share of the budget proportional
    // to its size, headings always: the outline stays whole.
    let ratio = if total > budget && total > 0 {
        budget as f64 / total as f64
    } else {
        1.0
    };
    for sec in sections {
        if !sec.heading.is_empty() {
            let depth = usize::from(sec.level.clamp(1, 6));
            let _ = writeln!(s, "{} {}", "#".repeat(depth + 1), sec.heading);
        }
        let body = sec.text.trim();
        if ratio < 1.0 {
            let keep = ((body.len() as f64) * ratio) as usize;
            let cut = super::blueprint::cut(body, keep);
            let _ = writeln!(s, "{cut}\n[… section cut to fit]\n");
        } else if !body.is_empty() {
            let _ = writeln!(s, "{body}\n");
        }
    }
    s
}

/// The planner's request: the specification segmented by headings, within
/// `budget` tokens, the facts extracted from it, and the blueprint's shape.
pub fn planner_request(
    doc: &SpecDocument,
    facts: &SpecFacts,
    counter: &TokenCounter,
    budget: usize,
) -> String {
    let mut s = String::from("# Specification, by section\n\n");
    s.push_str(&spec_sections(doc, counter, budget));
    s.push_str("# Facts read from the specification without a model\n");
    if let Some(port) = facts.port {
        let _ = writeln!(s, "- port: {port}");
    }
    if let Some(framework) = &facts.framework {
        let _ = writeln!(s, "- framework named: {framework}");
    }
    for e in &facts.endpoints {
        let _ = writeln!(s, "- endpoint: {}", e.label());
    }
    let _ = write!(
        s,
        "\n# Your answer\nThe blueprint as one ```json block with this shape (example values):\n```json\n{}\n```\n",
        shape_for(facts)
    );
    if !facts.endpoints.is_empty() {
        s.push_str(
            "Replace every <...> with the real value from the specification (an object's <...> with its \
             keys and values); keep every endpoint listed, and add any the specification names that are missing.\n",
        );
    }
    s.push_str(
        "Include every endpoint above. Give examples (query, body, response) that a test can send as they are, \
         and an `example_path` for each path with parameters.\n",
    );
    s
}
