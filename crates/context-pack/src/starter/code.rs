//! Reading a documentation code block as a plain Python script: which
//! blocks are Python, and the prompts, output lines and indentation they
//! lose.

use super::*;

/// Info strings (of a fence or a code directive) that name Python.
pub(super) const PYTHON_INFOS: &[&str] = &[
    "python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "doctest", "pyodide",
];

/// First words of a line that make a block a shell session, not Python.
pub(super) const SHELL_STARTS: &[&str] = &[
    "$", "pip", "pip3", "conda", "git", "cd", "python", "python3", "sudo", "apt", "apt-get",
    "brew", "npm", "docker", "curl", "wget", "poetry", "pipx", "uv", "export", "set", "mkdir",
    "make", "bash", "sh", "source", "cargo", "java", "mvn", "ls", "cat", "echo", ">",
];

/// The block's Python as a plain script, or `None` when it is not Python
/// (another language, a shell session, data, a program too long to be an
/// example).
pub(super) fn python_code(block: &str) -> Option<String> {
    let lines: Vec<&str> = block.lines().collect();
    let first = lines.first()?.trim_start();
    let body: Vec<&str> = if let Some(info) = fence_info(first) {
        if !info.is_empty() && !PYTHON_INFOS.contains(&info.as_str()) {
            return None;
        }
        let mut body = &lines[1..];
        if body
            .last()
            .is_some_and(|l| fence_info(l.trim_start()).is_some())
        {
            body = &body[..body.len() - 1];
        }
        body.to_vec()
    } else if let Some(rest) = first.strip_prefix("..") {
        let info = rest
            .split_once("::")
            .map(|(_, arg)| arg.trim().to_lowercase())
            .unwrap_or_default();
        let info = info.split_whitespace().next().unwrap_or("").to_string();
        if !info.is_empty() && !PYTHON_INFOS.contains(&info.as_str()) {
            return None;
        }
        // The directive's options (`:linenos:`) come before its content.
        lines[1..]
            .iter()
            .copied()
            .skip_while(|l| {
                let t = l.trim();
                t.starts_with(':') && t[1..].contains(':')
            })
            .collect()
    } else {
        lines
    };
    let doctest = body.iter().any(|l| l.trim_start().starts_with(">>>"));
    let mut code: Vec<String> = Vec::new();
    if doctest {
        // Only the statements: what follows a prompt is the output shown.
        let base = body
            .iter()
            .find(|l| l.trim_start().starts_with(">>>"))
            .map_or(0, |l| l.len() - l.trim_start().len());
        for line in &body {
            let t = line.get(base..).unwrap_or_else(|| line.trim_start());
            let statement = t
                .strip_prefix(">>> ")
                .or_else(|| t.strip_prefix("... "))
                .or_else(|| (t == ">>>" || t == "...").then_some(""));
            if let Some(statement) = statement {
                code.push(statement.to_string());
            }
        }
    } else {
        let base = body
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| crate::markdown::indent(l))
            .min()
            .unwrap_or(0);
        for line in &body {
            code.push(dedent(line, base).to_string());
        }
    }
    // Notebook magics and install lines are not the example.
    code.retain(|l| {
        let t = l.trim_start();
        !(t.starts_with('!') || t.starts_with('%') || t.starts_with("pip install"))
    });
    while code.last().is_some_and(|l| l.trim().is_empty()) {
        code.pop();
    }
    let lead = code
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(code.len());
    code.drain(..lead);
    let lead = code
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let word = lead.split_whitespace().next().unwrap_or("");
    // `cat = Cat()` is Python; `cat file.txt` is not.
    let rest = lead[word.len()..].trim_start();
    let python_after =
        rest.is_empty() || rest.starts_with(['=', '(', '.', '[', ',', ':', '+', '-']);
    let shell = SHELL_STARTS.contains(&word) && !(python_after && word != "$" && word != ">");
    if shell || lead.starts_with('{') || lead.starts_with('[') {
        return None;
    }
    if code.len() > MAX_LINES || code.iter().map(|l| l.len() + 1).sum::<usize>() > MAX_CHARS {
        return None;
    }
    let text = valid_prefix(&code)?;
    text.contains('(').then_some(text)
}

/// The code's longest run of leading lines that parses as Python: all of
/// it when it parses. A README's code block often shows the output after
/// the statements without doctest prompts (`print(df)` and then the
/// table), and the statements are the example. `None` when not even the
/// first line before the first error parses.
pub(super) fn valid_prefix(code: &[String]) -> Option<String> {
    let mut parser = tree_sitter::Parser::new();
    let python: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    parser.set_language(&python).ok()?;
    let join = |lines: &[String]| -> String { lines.iter().map(|l| format!("{l}\n")).collect() };
    let text = join(code);
    let first_error = first_error_row(&mut parser, &text)?;
    let Some(row) = first_error else {
        return Some(text);
    };
    // The error's node may start a line or two before the line that
    // broke the grammar (an unclosed call swallowing the output), so
    // shorter prefixes are tried too: at most MAX_LINES parses of at most
    // MAX_CHARS.
    (1..=row.min(code.len()))
        .rev()
        .map(|end| join(&code[..end]))
        .find(|prefix| {
            !prefix.trim().is_empty() && first_error_row(&mut parser, prefix) == Some(None)
        })
}

/// `Some(None)` when `text` parses as Python; `Some(Some(row))` with the
/// first line of the first syntax error; `None` when the parser gave up.
pub(super) fn first_error_row(
    parser: &mut tree_sitter::Parser,
    text: &str,
) -> Option<Option<usize>> {
    let tree = parser.parse(text, None)?;
    let mut node = tree.root_node();
    if !node.has_error() {
        return Some(None);
    }
    // Down the first child holding an error, to the error itself; the
    // depth is the tree's, bounded by the example's size.
    loop {
        let mut cursor = node.walk();
        let next = node.children(&mut cursor).find(|c| c.has_error());
        match next {
            Some(child) if !(child.is_error() || child.is_missing()) => node = child,
            Some(child) => return Some(Some(child.start_position().row)),
            None => return Some(Some(node.start_position().row)),
        }
    }
}

/// The language a fence line names (the lowercased first word of its info
/// string, `python` of ```` ```{.python} ````), or `None` when the line is
/// not a fence. The block is the README reader's, so its fence rules.
pub(super) fn fence_info(line: &str) -> Option<String> {
    let fence = crate::markdown::Fence::open(line)?;
    let rest = fence.info(line);
    let rest = rest.trim_start_matches('{').trim_start_matches('.');
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    Some(word.to_lowercase())
}

/// `line` without its first `base` columns of indentation.
pub(super) fn dedent(line: &str, base: usize) -> &str {
    let mut width = 0;
    for (i, c) in line.char_indices() {
        if width >= base || !(c == ' ' || c == '\t') {
            return &line[i..];
        }
        width += if c == '\t' { 4 } else { 1 };
    }
    ""
}

/// Import lines of a page's other examples that `code` needs: it uses a
/// name they bind (`nk` of `import neurokit2 as nk`) and binds it nowhere
/// itself. A page imports once, in its first example, and its later
/// examples use the names (NeuroKit's README: every signal example after
/// the first calls `nk.` with no import, and ran into a `NameError`).
pub(super) fn imports_needed(code: &str, page_examples: &[&str]) -> Vec<String> {
    let bound_here = bound_names(code);
    let used = words(code);
    let mut needed: Vec<String> = Vec::new();
    for example in page_examples {
        for line in example.lines() {
            let line = line.trim();
            let line = line.strip_prefix(">>> ").unwrap_or(line);
            let names = import_binds(line);
            if names.is_empty() || needed.iter().any(|n| n == line) {
                continue;
            }
            if names
                .iter()
                .any(|n| used.contains(n.as_str()) && !bound_here.contains(n))
            {
                needed.push(line.to_string());
            }
        }
    }
    needed
}

/// The names an `import` or `from ... import` line binds; none for any
/// other line (or a star import).
fn import_binds(line: &str) -> Vec<String> {
    let alias = |part: &str| -> Option<String> {
        let mut words = part.split_whitespace();
        let first = words.next()?;
        match (words.next(), words.next()) {
            (Some("as"), Some(name)) => Some(name.to_string()),
            (None, _) => Some(first.to_string()),
            _ => None,
        }
    };
    if let Some(rest) = line.strip_prefix("import ") {
        return rest
            .split(',')
            .filter_map(|part| {
                let name = alias(part)?;
                // `import a.b` binds `a`.
                Some(name.split('.').next().unwrap_or_default().to_string())
            })
            .filter(|n| is_identifier(n))
            .collect();
    }
    if let Some(rest) = line.strip_prefix("from ")
        && let Some((_, names)) = rest.split_once(" import ")
    {
        let names = names.trim().trim_start_matches('(').trim_end_matches(')');
        return names
            .split(',')
            .filter_map(alias)
            .filter(|n| is_identifier(n))
            .collect();
    }
    Vec::new()
}

/// Names `code` binds by import, assignment, `def`, `class` or `for`.
fn bound_names(code: &str) -> std::collections::BTreeSet<String> {
    let mut bound = std::collections::BTreeSet::new();
    for line in code.lines() {
        let line = line.trim();
        bound.extend(import_binds(line));
        for keyword in ["def ", "class ", "for "] {
            if let Some(rest) = line.strip_prefix(keyword) {
                bound.extend(
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ','))
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(str::trim)
                        .filter(|n| is_identifier(n))
                        .map(str::to_string),
                );
            }
        }
        if let Some((left, right)) = line.split_once('=')
            && !right.starts_with('=')
            && !left.ends_with(['!', '<', '>', '='])
        {
            bound.extend(
                left.split(',')
                    .map(str::trim)
                    .filter(|n| is_identifier(n))
                    .map(str::to_string),
            );
        }
    }
    bound
}

/// The identifier-like words of `code`.
fn words(code: &str) -> std::collections::BTreeSet<&str> {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| is_identifier(w))
        .collect()
}

/// Whether `name` is a Python identifier (ASCII letters, digits, `_`, or
/// any alphabetic character; not starting with a digit).
pub(super) fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `text` uses `name` as a whole word.
pub(super) fn uses_name(text: &str, name: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

/// `name = expr` on one top-level line (no comparison, no augmented
/// assignment, no tuple on the left): the name and the expression.
pub(super) fn plain_assignment(line: &str) -> Option<(&str, &str)> {
    if line.starts_with([' ', '\t']) {
        return None;
    }
    let (name, expr) = line.split_once('=')?;
    let name = name.trim();
    let expr = expr.trim();
    (is_identifier(name) && !expr.is_empty() && !expr.starts_with('=')).then_some((name, expr))
}
