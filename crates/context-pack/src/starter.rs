//! A starting script for a task: the README's Python example that best
//! matches it, with the example's file names replaced by the task's input
//! files and output paths (RepoMaster, seed 001, section 3.3: the README
//! and example usage, adapted to the task).
//!
//! A small model reads a README's `lsb.hide("./tests/sample-files/Lenna.png",
//! "Hello World")` and then writes its own script from memory, with the
//! sample's path in it, or a path it guessed. Given the example with the
//! paths already put in, what is left to it is what the task asks
//! differently: the message, an option, the format.
//!
//! The example is chosen from the code blocks (fenced, reST code
//! directives and literal blocks, doctest paragraphs) that read as Python,
//! of the README and then of the documentation pages under `docs/`,
//! `doc/`, `examples/` and `example/` (a README shows one use, a user
//! guide the rest: pypdf's README extracts text, its `docs/user` pages
//! split, merge and crop).
//! For a task with input files, only a block with a literal of an input's
//! file type qualifies (an example that makes up its data teaches the
//! model to); without inputs, a block that shares words with the task.
//! Among those, the best BM25 match of the task and the block's section
//! titles wins, the earlier block on a tie. Paths are
//! replaced only in plain string literals: a literal passed to a call that
//! saves or writes (`save`, `write`, `to_csv`, `open(..., "w")`, an
//! `output=` keyword or an `out...` variable) becomes the output path
//! (`output.<ext>`, or `output_01.<ext>`... for several), and one of the
//! inputs' file type (or of its family: images, audio, tables) becomes that
//! input. The same literal written twice (saved, then read back) gets the
//! same path both times. Work is linear in the README.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(
//!     dir.path().join("README.md"),
//!     "# Stego\n\n## Hide a message\n\n```python\n>>> from stego import lsb\n\
//!      >>> secret = lsb.hide(\"./samples/Lenna.png\", \"Hello\")\n\
//!      >>> secret.save(\"./Lenna-secret.png\")\n```\n",
//! )?;
//! let input = std::path::Path::new("/task/input/photo.png");
//! let starter = context_pack::starter::readme_starter(
//!     dir.path(),
//!     "hide a message in the png image",
//!     &[input],
//!     std::path::Path::new("/task/out"),
//! )
//! .expect("an example matches");
//! assert_eq!(
//!     starter.code,
//!     "from stego import lsb\nsecret = lsb.hide(\"/task/input/photo.png\", \"Hello\")\n\
//!      secret.save(\"/task/out/output.png\")\n"
//! );
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};

use crate::bm25::Bm25;
use crate::readme::{CodeSample, code_samples, find_readme, usage_pages};

/// Lines of an example past which it is not a starting point but a program.
const MAX_LINES: usize = 60;
/// Characters of an example, likewise.
const MAX_CHARS: usize = 4_000;
/// Code blocks of a page looked at (a README of a thousand snippets is
/// an API reference; its first ones are the usage).
const MAX_BLOCKS: usize = 200;
/// Python examples weighed for one task, over all pages.
const MAX_CANDIDATES: usize = 2_000;

/// The README example chosen for a task, with the task's paths put in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Starter {
    /// The file the example comes from, relative to the repository
    /// (`README.md`, `docs/user/merging-pdfs.md`).
    pub file: String,
    /// The titles of the sections the example sits under, outermost first.
    pub section: Vec<String>,
    /// The example as a plain script: doctest prompts and output lines,
    /// fences and indentation removed, the paths replaced.
    pub code: String,
    /// Each replaced literal, in order of first appearance.
    pub swaps: Vec<PathSwap>,
    /// The example's sample text values (string literals of words, such
    /// as `Hello World`), which the task may want otherwise: a 1.5B model
    /// given Stegano's example embedded its "Hello World" where the task
    /// named the watermark (GitTaskBench Stegano_01, tuning half).
    pub samples: Vec<String>,
    /// The values the task's text gives ([`crate::task_values`]), set by
    /// [`Starter::put_task_values`].
    pub task_values: Vec<String>,
    /// Sample texts the task's value replaced in [`code`](Self::code).
    pub values_put_in: Vec<ValueSwap>,
    /// Collections the example takes only the first item of (`reader.pages`
    /// for `reader.pages[0]`): a 1.5B model asked for a whole PDF's text
    /// kept the README's first page (GitTaskBench PyPDF2_01, tuning half).
    pub first_items: Vec<String>,
    /// Where a step the example lacked saves the result it only showed
    /// (`print(x)`, `x = ...`), as text in the format the task names.
    pub saved_result: Option<PathBuf>,
}

/// A sample text of the example and the task's value now in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueSwap {
    /// The sample as the README wrote it.
    pub written: String,
    /// The task's value.
    pub now: String,
}

impl Starter {
    /// Records the task's `values` and, when the example has one sample
    /// text and the task gives one value, puts the value in the sample's
    /// place: with more of either, which goes where is the model's call.
    ///
    /// ```
    /// let mut starter = context_pack::starter::starter_from_readme(
    ///     "README.md",
    ///     "```python\nfrom stego import lsb\nlsb.hide(\"a.png\", \"Hello World\").save(\"b.png\")\n```\n",
    ///     "hide a message",
    ///     &[std::path::Path::new("/in/x.png")],
    ///     std::path::Path::new("/out"),
    /// )
    /// .expect("the example reads the input's kind of file");
    /// starter.put_task_values(&["stegano".to_string()]);
    /// assert!(starter.code.contains("lsb.hide(\"/in/x.png\", \"stegano\")"));
    /// assert!(starter.samples.is_empty());
    /// ```
    pub fn put_task_values(&mut self, values: &[String]) {
        self.task_values = values.to_vec();
        let ([sample], [value]) = (self.samples.as_slice(), values) else {
            return;
        };
        if sample == value {
            return;
        }
        let mut out = String::with_capacity(self.code.len());
        let mut at = 0;
        for literal in string_literals(&self.code) {
            if literal.content.trim() == sample {
                out.push_str(&self.code[at..literal.span.0]);
                out.push_str(&python_string(value));
                at = literal.span.1;
            }
        }
        if at == 0 {
            return;
        }
        out.push_str(&self.code[at..]);
        self.code = out;
        self.values_put_in.push(ValueSwap {
            written: sample.clone(),
            now: value.clone(),
        });
        self.samples.clear();
    }
}

/// One file name of the example and the task's path that replaced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathSwap {
    /// The literal's text as the README wrote it.
    pub written: String,
    /// The task's path now in its place.
    pub now: PathBuf,
    /// Whether it is read or written.
    pub role: PathRole,
}

/// What a replaced path is to the task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathRole {
    /// One of the task's input files.
    Input,
    /// A file the task's output directory receives.
    Output,
}

/// The starting script for a task on the repository at `root`: the best
/// matching Python example of its README or of its documentation pages
/// (`docs/`, `examples/`: a README often shows one use, reading a PDF's
/// text, where its user guide has the one the task needs, splitting it),
/// with the example's paths replaced by `inputs` and by `output.<ext>`
/// under `output_dir`. `query` is the task's text (and any search terms
/// for it). `None` when no page has a Python example that matches the task
/// or its inputs.
pub fn readme_starter(
    root: &Path,
    query: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<Starter> {
    let mut pages: Vec<(String, String)> = find_readme(root).shown.into_iter().collect();
    pages.extend(usage_pages(root));
    starter_from_pages(&pages, &own_modules(root), query, inputs, output_dir)
}

/// [`readme_starter`] on a README already read: `name` is its file name.
pub fn starter_from_readme(
    name: &str,
    text: &str,
    query: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<Starter> {
    starter_from_pages(
        &[(name.to_string(), text.to_string())],
        &[],
        query,
        inputs,
        output_dir,
    )
}

/// [`readme_starter`] on pages already read, each a file name and its
/// text, the README first: among equally good examples the earlier page's
/// wins. An example of a page after the first counts only when it imports
/// one of `own` (the repository's top-level modules), unless `own` is
/// empty.
///
/// ```
/// let pages = [
///     ("README.md".to_string(), "```python\nfrom pdf import Reader\nprint(Reader(\"a.pdf\").text())\n```\n".to_string()),
///     ("docs/split.md".to_string(), "# Split pages\n\n```python\nfrom pdf import Reader, Writer\nfor i, page in enumerate(Reader(\"a.pdf\").pages):\n    Writer([page]).write(f\"page{i}.pdf\")\n```\n".to_string()),
/// ];
/// let starter = context_pack::starter::starter_from_pages(
///     &pages,
///     &["pdf".to_string()],
///     "split the pdf into pages",
///     &[std::path::Path::new("/in/x.pdf")],
///     std::path::Path::new("/out"),
/// )
/// .expect("an example reads a PDF");
/// assert_eq!(starter.file, "docs/split.md");
/// assert!(starter.code.contains("Reader(\"/in/x.pdf\")"));
/// ```
pub fn starter_from_pages(
    pages: &[(String, String)],
    own: &[String],
    query: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<Starter> {
    let candidates: Vec<(usize, CodeSample, String)> = pages
        .iter()
        .enumerate()
        .flat_map(|(page, (name, text))| {
            code_samples(name, text)
                .into_iter()
                .take(MAX_BLOCKS)
                .map(move |sample| (page, sample))
        })
        .filter_map(|(page, sample)| {
            let code = python_code(&sample.text)?;
            Some((page, sample, code))
        })
        .take(MAX_CANDIDATES)
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let documents: Vec<String> = candidates
        .iter()
        .map(|(_, sample, code)| format!("{} {code}", sample.titles.join(" ")))
        .collect();
    let index = Bm25::new(documents.iter().map(String::as_str));
    let scores = index.scores(query);
    let mut best: Option<((bool, bool, f64), usize, Adapted)> = None;
    for (i, ((page, _, code), score)) in candidates.iter().zip(scores).enumerate() {
        // A documentation page may teach Python itself (`pd.read_excel` in
        // NeuroKit's `learn_python.rst`): its example counts only when it
        // imports the repository's own code.
        if *page > 0 && !own.is_empty() && !imports_any(code, own) {
            continue;
        }
        let adapted = adapt(code, inputs, output_dir);
        let reads_input = adapted.swaps.iter().any(|s| s.role == PathRole::Input);
        // With inputs, an example that reads none of them would teach the
        // model to make up its data (a README's `ecg_simulate` for a task
        // that gives a recording); without, the words must match.
        if !reads_input && (!inputs.is_empty() || score <= 0.0) {
            continue;
        }
        // An example that reads one of the inputs' kind of file beats one
        // that only shares words with the task, one whose every file is
        // the task's beats one that keeps sample files (merging three
        // PDFs for a task that gives one); then the better match, then the
        // earlier block (the README's before the pages').
        let key = (reads_input, adapted.unmatched == 0, score);
        if best.as_ref().is_none_or(|(k, _, _)| key > *k) {
            best = Some((key, i, adapted));
        }
    }
    let (_, i, mut adapted) = best?;
    let (page, sample, _) = candidates.into_iter().nth(i)?;
    let writes = adapted.swaps.iter().any(|s| s.role == PathRole::Output);
    if !writes
        && let Some((code, path)) = save_what_is_shown(&adapted.code, query, inputs, output_dir)
    {
        adapted.code = code;
        adapted.saved_result = Some(path);
    }
    let first_items = first_items(&adapted.code);
    Some(Starter {
        file: pages.get(page).map(|(name, _)| name.clone())?,
        section: sample.titles,
        code: adapted.code,
        swaps: adapted.swaps,
        samples: adapted.samples,
        task_values: Vec::new(),
        values_put_in: Vec::new(),
        first_items,
        saved_result: adapted.saved_result,
    })
}

/// Entries of a directory looked at for modules, at most.
const MAX_MODULE_ENTRIES: usize = 2_000;

/// The repository's top-level Python modules: packages (directories with
/// an `__init__.py`) and `.py` files at the root or under `src/`.
fn own_modules(root: &Path) -> Vec<String> {
    let mut own = Vec::new();
    for dir in [root.to_path_buf(), root.join("src")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(MAX_MODULE_ENTRIES) {
            let name = entry.file_name().to_string_lossy().to_string();
            // Not followed: a link out of the tree names nothing of it.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let module = if kind.is_dir() {
                let init = entry.path().join("__init__.py");
                std::fs::symlink_metadata(&init)
                    .is_ok_and(|m| m.is_file())
                    .then_some(name)
            } else if kind.is_file() {
                name.strip_suffix(".py").map(str::to_string)
            } else {
                None
            };
            if let Some(module) = module
                && !matches!(module.as_str(), "setup" | "conftest" | "noxfile" | "tasks")
                && !own.contains(&module)
            {
                own.push(module);
            }
        }
    }
    own
}

/// Whether `code` imports one of `modules` (`import m`, `import m.sub as x`,
/// `from m import ...`, `from m.sub import ...`).
fn imports_any(code: &str, modules: &[String]) -> bool {
    code.lines().any(|line| {
        let line = line.trim_start();
        let names: Vec<&str> = if let Some(rest) = line.strip_prefix("from ") {
            rest.split_whitespace().next().into_iter().collect()
        } else if let Some(rest) = line.strip_prefix("import ") {
            rest.split(',')
                .filter_map(|part| part.split_whitespace().next())
                .collect()
        } else {
            Vec::new()
        };
        names.iter().any(|name| {
            let top = name.split('.').next().unwrap_or_default();
            modules.iter().any(|m| m == top)
        })
    })
}

/// Text formats a task may ask its output in; the last one its text
/// names wins (`…按 JSON 行格式逐行写入一个 txt 文件` asks for a `.txt`).
const TEXT_FORMATS: &[&str] = &["txt", "json", "jsonl", "csv", "tsv", "md", "xml", "yaml"];
/// Formats that are not text: a task naming one of these and no text
/// format wants a file its library writes, not a printed value saved.
const BINARY_FORMATS: &[&str] = &[
    "png", "jpg", "jpeg", "bmp", "gif", "pdf", "wav", "mp3", "mp4", "xlsx", "xls", "docx", "zip",
];

/// The output format a task's text asks for, for a starter that only shows
/// its result: the last text format named, `txt` when none is, `None`
/// when the task names only binary formats. A binary format that is an
/// input's type names the input ("decode the watermark in the PNG
/// image"), not the output: a 1.5B model given InvisibleWatermark's
/// printing example for that task never saved the text (GitTaskBench
/// InvisibleWatermark_03, run 11, tuning half).
fn asked_text_format(query: &str, inputs: &[&Path]) -> Option<&'static str> {
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
/// instead of writing it, until the episode ended stuck. The saved text is
/// `str()` of the value: the format is still the model's to get right, but
/// the script it starts from now ends where the task's output goes.
fn save_what_is_shown(
    code: &str,
    query: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<(String, PathBuf)> {
    let format = asked_text_format(query, inputs)?;
    let last = code.lines().rev().find(|l| !l.trim().is_empty())?;
    if last.starts_with([' ', '\t']) {
        return None;
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
        let plain = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !plain || last.contains("==") {
            return None;
        }
        format!("{last}\nresult = {name}\n")
    };
    let path = output_dir.join(format!("output.{format}"));
    let head = &code[..code.rfind(last)?];
    let script = format!(
        "{head}{value}with open({}, \"w\", encoding=\"utf-8\") as out:\n    out.write(str(result))\n",
        python_string(&path.to_string_lossy())
    );
    Some((script, path))
}

/// Whether `expr` has a comma outside brackets and string literals.
fn has_top_level_comma(expr: &str) -> bool {
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

/// Info strings (of a fence or a code directive) that name Python.
const PYTHON_INFOS: &[&str] = &[
    "python", "py", "python3", "py3", "pycon", "ipython", "ipython3", "doctest", "pyodide",
];

/// First words of a line that make a block a shell session, not Python.
const SHELL_STARTS: &[&str] = &[
    "$", "pip", "pip3", "conda", "git", "cd", "python", "python3", "sudo", "apt", "apt-get",
    "brew", "npm", "docker", "curl", "wget", "poetry", "pipx", "uv", "export", "set", "mkdir",
    "make", "bash", "sh", "source", "cargo", "java", "mvn", "ls", "cat", "echo", ">",
];

/// The block's Python as a plain script, or `None` when it is not Python
/// (another language, a shell session, data, a program too long to be an
/// example).
fn python_code(block: &str) -> Option<String> {
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
            .map(|l| crate::readme::indent(l))
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
fn valid_prefix(code: &[String]) -> Option<String> {
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
fn first_error_row(parser: &mut tree_sitter::Parser, text: &str) -> Option<Option<usize>> {
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

/// The info string of a fence line (lowercased first word), or `None` when
/// the line is not a fence.
fn fence_info(line: &str) -> Option<String> {
    let ch = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = line.chars().take_while(|c| *c == ch).count();
    if run < 3 {
        return None;
    }
    let rest = line[run * ch.len_utf8()..].trim();
    let rest = rest.trim_start_matches('{').trim_start_matches('.');
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    Some(word.to_lowercase())
}

/// `line` without its first `base` columns of indentation.
fn dedent(line: &str, base: usize) -> &str {
    let mut width = 0;
    for (i, c) in line.char_indices() {
        if width >= base || !(c == ' ' || c == '\t') {
            return &line[i..];
        }
        width += if c == '\t' { 4 } else { 1 };
    }
    ""
}

/// An example with the task's paths put in.
struct Adapted {
    code: String,
    swaps: Vec<PathSwap>,
    /// File names the example reads that no input of the task took: they
    /// would stay the example's sample files.
    unmatched: usize,
    samples: Vec<String>,
    saved_result: Option<PathBuf>,
}

/// A plain one-line string literal of the code.
struct Literal {
    /// Byte span of the whole literal, quotes (and prefix) included.
    span: (usize, usize),
    content: String,
    /// The code on its line before it.
    before: String,
    /// The code on its line after it.
    after: String,
}

/// Puts the task's paths in place of the example's file names.
fn adapt(code: &str, inputs: &[&Path], output_dir: &Path) -> Adapted {
    let literals = string_literals(code);
    // Every distinct file name, in order, with its role.
    let mut names: Vec<(String, bool)> = Vec::new();
    for literal in &literals {
        if file_type(&literal.content).is_none() {
            continue;
        }
        let writes = is_written(literal);
        match names.iter_mut().find(|(n, _)| *n == literal.content) {
            Some((_, w)) => *w |= writes,
            None => names.push((literal.content.clone(), writes)),
        }
    }
    let outputs: Vec<&String> = names.iter().filter(|(_, w)| *w).map(|(n, _)| n).collect();
    let mut swaps: Vec<PathSwap> = Vec::new();
    let mut unmatched = 0;
    let mut used = vec![false; inputs.len()];
    for (name, writes) in &names {
        let ext = file_type(name).unwrap_or_default();
        if *writes {
            let file = if outputs.len() == 1 {
                format!("output.{ext}")
            } else {
                let n = outputs.iter().position(|o| *o == name).unwrap_or(0) + 1;
                format!("output_{n:02}.{ext}")
            };
            swaps.push(PathSwap {
                written: name.clone(),
                now: output_dir.join(file),
                role: PathRole::Output,
            });
            continue;
        }
        let same = |input: &Path| input_type(input).is_some_and(|t| t == ext);
        let kin = |input: &Path| {
            input_type(input).is_some_and(|t| family(&t).is_some() && family(&t) == family(&ext))
        };
        let pick = (0..inputs.len())
            .find(|&i| !used[i] && same(inputs[i]))
            .or_else(|| (0..inputs.len()).find(|&i| !used[i] && kin(inputs[i])));
        if let Some(i) = pick {
            used[i] = true;
            swaps.push(PathSwap {
                written: name.clone(),
                now: inputs[i].to_path_buf(),
                role: PathRole::Input,
            });
        } else {
            unmatched += 1;
        }
    }
    // An input that is a directory takes the literal the example walks
    // (`Path("tests").iterdir()`, `os.listdir("data")`): a task over "every
    // Excel file of a directory" found no example that reads a file
    // (GitTaskBench Eparse_01, run 11, tuning half).
    if let Some(i) = (0..inputs.len()).find(|&i| !used[i] && inputs[i].is_dir())
        && let Some(literal) = literals.iter().find(|l| walked_directory(l))
    {
        used[i] = true;
        // A glob keeps its pattern: `data/*.xlsx` becomes `<input>/*.xlsx`.
        let now = match literal.content.find(['*', '?']) {
            Some(wild) => {
                let cut = literal.content[..wild]
                    .rfind('/')
                    .map_or(0, |slash| slash + 1);
                inputs[i].join(&literal.content[cut..])
            }
            None => inputs[i].to_path_buf(),
        };
        swaps.push(PathSwap {
            written: literal.content.clone(),
            now,
            role: PathRole::Input,
        });
    }
    let mut out = String::with_capacity(code.len());
    let mut at = 0;
    for literal in &literals {
        if let Some(swap) = swaps.iter().find(|s| s.written == literal.content) {
            out.push_str(&code[at..literal.span.0]);
            out.push_str(&python_string(&swap.now.to_string_lossy()));
            at = literal.span.1;
        }
    }
    out.push_str(&code[at..]);
    Adapted {
        code: out,
        swaps,
        unmatched,
        samples: sample_values(&literals),
        saved_result: None,
    }
}

/// Collections named at most in [`Starter::first_items`].
const MAX_FIRST_ITEMS: usize = 3;

/// The collections `code` indexes with `[0]` (`reader.pages[0]` gives
/// `reader.pages`), outside strings and comments; distinct, in order.
fn first_items(code: &str) -> Vec<String> {
    let literals = string_literals(code);
    let in_literal = |at: usize| literals.iter().any(|l| l.span.0 <= at && at < l.span.1);
    let bytes = code.as_bytes();
    let mut found: Vec<String> = Vec::new();
    let mut comment = false;
    for (at, &b) in bytes.iter().enumerate() {
        match b {
            b'\n' => comment = false,
            b'#' if !in_literal(at) => comment = true,
            b'[' if !comment && bytes[at..].starts_with(b"[0]") && !in_literal(at) => {
                let start = code[..at]
                    .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                    .map_or(0, |i| i + 1);
                let chain = code[start..at].trim_matches('.');
                let named = chain
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
                if named && !found.iter().any(|f| f == chain) && found.len() < MAX_FIRST_ITEMS {
                    found.push(chain.to_owned());
                }
            }
            _ => {}
        }
    }
    found
}

/// Sample values shown at most.
const MAX_SAMPLES: usize = 5;

/// The literals that read as sample text: words with a space between
/// them, not a file name, not a format string, at most 80 characters.
/// Distinct, in order.
fn sample_values(literals: &[Literal]) -> Vec<String> {
    let mut samples: Vec<String> = Vec::new();
    for literal in literals {
        let text = literal.content.trim();
        let words = text.contains(' ') && text.chars().any(char::is_alphabetic);
        let template = text.contains(['{', '%']);
        if words
            && !template
            && text.len() <= 80
            && !samples.iter().any(|s| s == text)
            && samples.len() < MAX_SAMPLES
        {
            samples.push(text.to_owned());
        }
    }
    samples
}

/// A Python string literal holding `text`.
fn python_string(text: &str) -> String {
    let mut s = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// The one-line string literals of `code` without escapes or interpolation
/// (comments, triple-quoted strings, f-strings and byte strings are
/// skipped).
fn string_literals(code: &str) -> Vec<Literal> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            quote @ (b'"' | b'\'') => {
                // The prefix letters just before the quote (r, b, f, u).
                let mut p = i;
                while p > 0 && bytes[p - 1].is_ascii_alphabetic() && i - (p - 1) <= 2 {
                    p -= 1;
                }
                let prefix = code[p..i].to_ascii_lowercase();
                let identifier =
                    p > 0 && (bytes[p - 1].is_ascii_alphanumeric() || bytes[p - 1] == b'_');
                let prefix_ok = !identifier && prefix.chars().all(|c| matches!(c, 'r' | 'u'));
                if bytes[i..].starts_with(&[quote, quote, quote]) {
                    let close = [quote, quote, quote];
                    let end = find(bytes, i + 3, &close).map_or(bytes.len(), |e| e + 3);
                    i = end;
                    continue;
                }
                let mut j = i + 1;
                let mut escaped = false;
                while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
                    escaped |= bytes[j] == b'\\';
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                if j >= bytes.len() || bytes[j] != quote {
                    i = j;
                    continue;
                }
                let raw = prefix.contains('r');
                if prefix_ok && (!escaped || raw) {
                    let line_start = code[..p].rfind('\n').map_or(0, |n| n + 1);
                    let line_end = code[j + 1..].find('\n').map_or(code.len(), |n| j + 1 + n);
                    found.push(Literal {
                        span: (p, j + 1),
                        content: code[i + 1..j].to_string(),
                        before: code[line_start..p].to_string(),
                        after: code[j + 1..line_end].to_string(),
                    });
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    found
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The lowercased extension of a literal that names a file (`./a/b.png`
/// → `png`), or `None` for anything else: words, URLs, numbers, options,
/// dotted names.
/// Whether `text` reads as a file name with an extension (`a.png`,
/// `data/in.csv`).
pub(crate) fn names_a_file(text: &str) -> bool {
    file_type(text).is_some()
}

fn file_type(text: &str) -> Option<String> {
    if text.is_empty()
        || text.len() > 260
        || text.contains(char::is_whitespace)
        || text.contains("://")
        || text.contains('@')
        || text.starts_with('-')
    {
        return None;
    }
    let file = text.rsplit(['/', '\\']).next().unwrap_or(text);
    let (stem, ext) = file.rsplit_once('.')?;
    let plain = |s: &str| s.chars().all(|c| c.is_alphanumeric() || "_-.".contains(c));
    if stem.is_empty()
        || !plain(stem)
        || ext.is_empty()
        || ext.len() > 5
        || !ext.chars().all(|c| c.is_ascii_alphanumeric())
        || !ext.chars().any(|c| c.is_ascii_alphabetic())
    {
        return None;
    }
    let ext = ext.to_ascii_lowercase();
    // Host names and Python's own dotted names are not files.
    if ["com", "org", "net", "io", "py"].contains(&ext.as_str()) && !text.contains('/') {
        return (ext == "py" && stem.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .then_some(ext);
    }
    Some(ext)
}

/// An input file's lowercased extension.
fn input_type(path: &Path) -> Option<String> {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

/// Kinds of file a library reads alike, so a README's `.png` stands for a
/// task's `.jpg`.
fn family(ext: &str) -> Option<u8> {
    const FAMILIES: &[&[&str]] = &[
        &["png", "jpg", "jpeg", "bmp", "gif", "tif", "tiff", "webp"],
        &["wav", "mp3", "flac", "ogg", "m4a"],
        &["csv", "tsv", "xlsx", "xls"],
        &["txt", "md", "text"],
        &["mp4", "avi", "mov", "mkv", "webm"],
    ];
    FAMILIES
        .iter()
        .position(|f| f.contains(&ext))
        .and_then(|p| u8::try_from(p).ok())
}

/// Whether the literal is a path the code writes: an argument of a call
/// that saves or writes, `open(..., "w")`, an `output=`-like keyword, or
/// the value of an `out...` variable.
fn is_written(literal: &Literal) -> bool {
    let before = literal.before.trim_end();
    if let Some(name) = before
        .strip_suffix('=')
        .map(|b| b.trim_end())
        .filter(|b| !b.ends_with(['=', '!', '<', '>']))
        .map(last_identifier)
    {
        return writes_name(&name.to_ascii_lowercase());
    }
    let Some(callee) = open_call(before) else {
        return false;
    };
    let callee = callee.to_ascii_lowercase();
    if callee == "open" {
        let after = literal.after.replace(' ', "");
        return ["\"w", "'w", "\"a", "'a", "\"x", "'x"]
            .iter()
            .any(|m| after.contains(m));
    }
    ["save", "write", "dump", "export", "imsave"]
        .iter()
        .any(|w| callee.contains(w))
        || callee.starts_with("to_")
}

/// Calls whose path argument is a directory walked for its files.
const WALKS: &[&str] = &[
    "Path", "listdir", "walk", "scandir", "glob", "iglob", "rglob",
];

/// Whether `literal` names a directory the example walks: a relative or
/// absolute path with no file type, passed to [`WALKS`] (`glob`'s pattern
/// counts by its directory part).
fn walked_directory(literal: &Literal) -> bool {
    let text = literal.content.as_str();
    let dir = text.split(['*', '?']).next().unwrap_or_default();
    let dir = dir.trim_end_matches('/');
    if dir.is_empty()
        || dir.len() > 260
        || dir.contains(char::is_whitespace)
        || dir.contains("://")
        || file_type(dir).is_some()
    {
        return false;
    }
    open_call(literal.before.trim_end()).is_some_and(|callee| WALKS.contains(&callee))
}

/// Names of variables and keywords that hold an output path.
fn writes_name(name: &str) -> bool {
    name.starts_with("out")
        || name.starts_with("dest")
        || name.starts_with("dst")
        || name.starts_with("save")
        || name.ends_with("output")
        || name.ends_with("output_path")
        || name.ends_with("output_file")
}

/// The identifier that ends `text` (`a.b.c` → `c`).
fn last_identifier(text: &str) -> &str {
    let start = text
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
        .last()
        .map_or(text.len(), |(i, _)| i);
    &text[start..]
}

/// The name of the innermost call still open at the end of `before`
/// (`img.save(` → `save`), when there is one.
fn open_call(before: &str) -> Option<&str> {
    let mut depth = 0i32;
    for (i, c) in before.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '[' | '{' if depth > 0 => depth -= 1,
            '[' | '{' => return None,
            '(' if depth > 0 => depth -= 1,
            '(' => {
                let name = last_identifier(before[..i].trim_end());
                return (!name.is_empty()).then_some(name);
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(readme: &str, name: &str, query: &str, inputs: &[&str]) -> Option<Starter> {
        let inputs: Vec<&Path> = inputs.iter().map(Path::new).collect();
        starter_from_readme(name, readme, query, &inputs, Path::new("/out"))
    }

    #[test]
    fn a_docs_page_example_counts_only_when_it_imports_the_repositorys_code() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("pdfkit")).unwrap();
        std::fs::write(root.join("pdfkit/__init__.py"), "").unwrap();
        std::fs::write(root.join("README.md"), "# pdfkit\n\nNo examples here.\n").unwrap();
        std::fs::create_dir_all(root.join("docs/user")).unwrap();
        // A page that teaches Python, and the user guide's page.
        std::fs::write(
            root.join("docs/learn_python.md"),
            "# Reading data\n\n```python\nimport pandas as pd\ndata = pd.read_csv(\"data.pdf\")\n```\n",
        )
        .unwrap();
        std::fs::write(
            root.join("docs/user/split.md"),
            "# Split\n\n```python\nfrom pdfkit import Reader\nReader(\"in.pdf\").split().save(\"out.pdf\")\n```\n",
        )
        .unwrap();
        let input = [Path::new("/in/a.pdf")];
        let starter = readme_starter(root, "split the data", &input, Path::new("/o")).unwrap();
        assert_eq!(starter.file, "docs/user/split.md");
        assert_eq!(
            starter.code,
            "from pdfkit import Reader\nReader(\"/in/a.pdf\").split().save(\"/o/output.pdf\")\n"
        );
        // Without the guide, the tutorial's example is no starter.
        std::fs::remove_file(root.join("docs/user/split.md")).unwrap();
        assert!(readme_starter(root, "split the data", &input, Path::new("/o")).is_none());
    }

    #[test]
    fn an_example_whose_every_file_is_the_tasks_beats_one_keeping_sample_files() {
        let readme = "# Merge\n\n```python\nfrom pdf import merge\nmerge(\"a.pdf\", \"b.pdf\").save(\"out.pdf\")\n```\n\n\
                      # Copy\n\n```python\nfrom pdf import copy\ncopy(\"a.pdf\").save(\"out.pdf\")\n```\n";
        let starter = start(readme, "README.md", "merge", &["/in/x.pdf"]).unwrap();
        assert_eq!(starter.section, ["Copy"]);
        // Two inputs: the merge takes both.
        let starter = start(readme, "README.md", "merge", &["/in/x.pdf", "/in/y.pdf"]).unwrap();
        assert_eq!(starter.section, ["Merge"]);
    }

    #[test]
    fn an_input_type_named_by_the_task_is_not_the_output_format() {
        let readme = "```python\nimport cv2\nfrom wm import Decoder\nbgr = cv2.imread(\"marked.png\")\nprint(Decoder().decode(bgr))\n```\n";
        let png = [Path::new("/in/a.png")];
        let starter = starter_from_readme(
            "README.md",
            readme,
            "decode the watermark in the PNG image",
            &png,
            Path::new("/o"),
        )
        .unwrap();
        assert_eq!(
            starter.saved_result.as_deref(),
            Some(Path::new("/o/output.txt"))
        );
        assert!(starter.code.ends_with("    out.write(str(result))\n"));
        // A binary format that is no input's is the output's: no text saved.
        let starter = starter_from_readme(
            "README.md",
            readme,
            "decode the watermark and draw it as a JPG",
            &png,
            Path::new("/o"),
        )
        .unwrap();
        assert_eq!(starter.saved_result, None);
    }

    #[test]
    fn an_input_directory_takes_the_directory_the_example_walks() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("sheets");
        std::fs::create_dir(&input).unwrap();
        let readme = "```python\nfrom pathlib import Path\nfrom eparse.core import get_df_from_file\n\n\
                      for f in Path(\"tests\").iterdir():\n    print(get_df_from_file(f))\n```\n";
        let starter = starter_from_readme(
            "README.rst",
            readme,
            "every excel file of the directory",
            &[input.as_path()],
            Path::new("/o"),
        )
        .unwrap();
        let quoted = python_string(&input.to_string_lossy());
        assert!(
            starter
                .code
                .contains(&format!("for f in Path({quoted}).iterdir():")),
            "{}",
            starter.code
        );
        // A glob keeps its pattern.
        let readme =
            "```python\nimport glob\nfor f in glob.glob(\"data/*.xlsx\"):\n    print(f)\n```\n";
        let starter = starter_from_readme(
            "README.md",
            readme,
            "x",
            &[input.as_path()],
            Path::new("/o"),
        )
        .unwrap();
        let quoted = python_string(&input.join("*.xlsx").to_string_lossy());
        assert!(starter.code.contains(&quoted), "{}", starter.code);
        // A file input takes no directory.
        let file = dir.path().join("a.xlsx");
        std::fs::write(&file, "").unwrap();
        assert!(
            starter_from_readme("README.md", readme, "x", &[file.as_path()], Path::new("/o"))
                .is_none()
        );
    }

    #[test]
    fn own_imports_are_read_from_import_lines() {
        let own = ["stegano".to_string()];
        assert!(imports_any("from stegano import lsb\n", &own));
        assert!(imports_any("import os, stegano.lsb as l\n", &own));
        assert!(!imports_any(
            "import steganography\nx = 'from stegano import'\n",
            &own
        ));
    }

    #[test]
    fn a_result_the_example_only_prints_is_saved_in_the_format_the_task_names() {
        let readme = "```python\nfrom eparse.core import get_df_from_file\n\nprint([t for t in get_df_from_file(\"my.xlsx\")])\n```\n";
        let inputs = [Path::new("/in/a.xlsx")];
        let starter = starter_from_readme(
            "README.md",
            readme,
            "按 JSON 行格式逐行写入一个 txt 文件",
            &inputs,
            Path::new("/o"),
        )
        .unwrap();
        assert_eq!(
            starter.code,
            "from eparse.core import get_df_from_file\n\nresult = [t for t in get_df_from_file(\"/in/a.xlsx\")]\n\
             print(result)\nwith open(\"/o/output.txt\", \"w\", encoding=\"utf-8\") as out:\n    out.write(str(result))\n"
        );
        assert_eq!(
            starter.saved_result.as_deref(),
            Some(Path::new("/o/output.txt"))
        );
        // An assignment last: its value is saved; json named: `.json`.
        let readme = "```python\nfrom pypdf import PdfReader\nreader = PdfReader(\"example.pdf\")\nmeta = reader.metadata\n```\n";
        let pdf = [Path::new("/in/a.pdf")];
        let starter = starter_from_readme(
            "README.md",
            readme,
            "存为一个json文件",
            &pdf,
            Path::new("/o"),
        )
        .unwrap();
        assert!(starter.code.ends_with("meta = reader.metadata\nresult = meta\nwith open(\"/o/output.json\", \"w\", encoding=\"utf-8\") as out:\n    out.write(str(result))\n"), "{}", starter.code);
        // Several values printed, or a keyword of `print`: not one value.
        for shown in ["print(a, b)", "print(text, file=log)"] {
            let readme = format!(
                "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\n{shown}\n```\n"
            );
            let starter =
                starter_from_readme("README.md", &readme, "txt", &pdf, Path::new("/o")).unwrap();
            assert_eq!(starter.saved_result, None, "{shown}");
        }
        let readme = "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\nprint(f(r, \"a,b\"), [1, 2])\n```\n";
        let starter =
            starter_from_readme("README.md", readme, "txt", &pdf, Path::new("/o")).unwrap();
        assert_eq!(starter.saved_result, None);
        let readme = "```python\nfrom pypdf import PdfReader\nr = PdfReader(\"e.pdf\")\nprint(f(r, \"a,b\", [1, 2]))\n```\n";
        let starter =
            starter_from_readme("README.md", readme, "txt", &pdf, Path::new("/o")).unwrap();
        assert!(
            starter.code.contains("result = f(r, \"a,b\", [1, 2])\n"),
            "{}",
            starter.code
        );
        // A task that wants an image, or an example that already saves:
        // nothing added.
        let starter = starter_from_readme(
            "README.md",
            readme,
            "split it into png images",
            &pdf,
            Path::new("/o"),
        )
        .unwrap();
        assert_eq!(starter.saved_result, None);
        let saves =
            "```python\nfrom stego import lsb\nlsb.hide(\"a.png\", \"x\").save(\"b.png\")\n```\n";
        let png = [Path::new("/in/a.png")];
        let starter =
            starter_from_readme("README.md", saves, "hide", &png, Path::new("/o")).unwrap();
        assert_eq!(starter.saved_result, None);
        assert!(!starter.code.contains("out.write"));
    }

    #[test]
    fn a_first_item_taken_by_the_example_is_named() {
        let code =
            "page = reader.pages[0]  # pages[1] too\ntext = \"x[0]\"\nrows = df.values[0][0]\n";
        assert_eq!(first_items(code), ["reader.pages", "df.values"]);
        assert!(first_items("x = [0]\ny = f()[0]\n").is_empty());
    }

    #[test]
    fn a_doctest_example_gets_the_input_and_the_output_it_saves_and_reads_back() {
        let readme = "# Stego\n\n## Install\n\n```bash\n$ pip install stego\n```\n\n\
            ## Library\n\n```python\n>>> from stego import lsb\n\
            >>> secret = lsb.hide(\"./tests/Lenna.png\", \"Hello World\")\n\
            >>> secret.save(\"./Lenna-secret.png\")\n>>>\n\
            >>> clear = lsb.reveal(\"./Lenna-secret.png\")\n'Hello World'\n```\n";
        let s = start(readme, "README.md", "embed a watermark", &["/in/x.png"]).unwrap();
        assert_eq!(s.section, vec!["Library".to_string()]);
        assert_eq!(s.samples, ["Hello World"]);
        assert_eq!(
            s.code,
            "from stego import lsb\nsecret = lsb.hide(\"/in/x.png\", \"Hello World\")\n\
             secret.save(\"/out/output.png\")\n\nclear = lsb.reveal(\"/out/output.png\")\n"
        );
        let roles: Vec<(&str, PathRole)> = s
            .swaps
            .iter()
            .map(|w| (w.written.as_str(), w.role))
            .collect();
        assert_eq!(
            roles,
            [
                ("./tests/Lenna.png", PathRole::Input),
                ("./Lenna-secret.png", PathRole::Output)
            ]
        );
    }

    #[test]
    fn with_inputs_only_an_example_reading_their_kind_of_file_is_offered() {
        let readme = "# Pdf\n\n## Merge pdf pages text\n\n```python\nfrom p import merge\n\
            merge(pages=[1, 2])\n```\n\n## Read\n\n```python\nfrom p import Reader\n\
            r = Reader(\"example.pdf\")\nprint(r.pages[0].extract_text())\n```\n";
        let s = start(
            readme,
            "README.md",
            "extract the text of pdf pages",
            &["/in/a.pdf"],
        );
        let s = s.unwrap();
        assert!(s.code.contains("Reader(\"/in/a.pdf\")"), "{}", s.code);
        // An example that reads none of the task's inputs is not offered,
        // however well it matches.
        let s = start(readme, "README.md", "merge pdf pages", &["/in/a.csv"]);
        assert_eq!(s, None);
        // Without an input, the words decide.
        let s = start(readme, "README.md", "merge pdf pages", &[]).unwrap();
        assert!(s.code.contains("merge(pages"), "{}", s.code);
    }

    #[test]
    fn an_rst_code_directive_is_read_and_a_task_sharing_nothing_gets_no_starter() {
        let readme = "Faker\n=====\n\nBasic usage\n-----------\n\n.. code:: python\n\n    \
            from faker import Faker\n    fake = Faker()\n\n    fake.name()\n    \
            # 'Lucy Cechtelar'\n\nCommand line\n------------\n\n.. code:: bash\n\n    \
            faker address\n";
        let s = start(readme, "README.rst", "generate a fake name", &[]).unwrap();
        assert_eq!(
            s.code,
            "from faker import Faker\nfake = Faker()\n\nfake.name()\n# 'Lucy Cechtelar'\n"
        );
        assert!(s.swaps.is_empty());
        assert_eq!(start(readme, "README.rst", "compress a video", &[]), None);
    }

    #[test]
    fn shell_sessions_data_and_other_languages_are_not_examples() {
        for block in [
            "```bash\n$ stego hide -i a.png -o b.png\n```\n",
            "```\npip install stego\n```\n",
            "```json\n{\"a\": \"x.png\"}\n```\n",
            "```js\nhide(\"a.png\")\n```\n",
            "```python\n{\"image\": \"a.png\"}\n```\n",
            "```\npython hide.py a.png\n```\n",
            "```\n$ python -m stego a.png\n```\n",
        ] {
            let readme = format!("# T\n\n{block}");
            assert_eq!(
                start(&readme, "README.md", "hide a png", &["/in/a.png"]),
                None,
                "{block}"
            );
        }
    }

    #[test]
    fn output_shown_after_the_statements_is_cut_and_broken_code_is_no_example() {
        let readme = "Eparse\n======\n\n.. code-block::\n\n    from eparse.core import get_df_from_file\n\n    \
            print([t for t in get_df_from_file('myfile.xlsx')])\n    102   Date  Principal Repayment\n    \
            103  44834        700757.679004\n    ...\n\nMore text.\n";
        let s = start(readme, "README.rst", "parse tables", &["/in/book.xlsx"]).unwrap();
        // The shown tables are cut; what the example printed is saved.
        assert!(
            s.code.starts_with(
                "from eparse.core import get_df_from_file\n\n\
                 result = [t for t in get_df_from_file(\"/in/book.xlsx\")]\nprint(result)\nwith open("
            ),
            "{}",
            s.code
        );
        assert!(!s.code.contains("Principal"), "{}", s.code);
        let broken = "# T\n\n```python\nif (x.read(\"a.png\"):\n```\n";
        assert_eq!(start(broken, "README.md", "read", &["/in/a.png"]), None);
    }

    #[test]
    fn a_variable_named_like_a_command_is_still_python() {
        let readme = "# T\n\n```\ncat = Cat()\ncat.read(\"a.png\")\n```\n";
        let s = start(readme, "README.md", "", &["/in/b.png"]).unwrap();
        assert_eq!(s.code, "cat = Cat()\ncat.read(\"/in/b.png\")\n");
    }

    #[test]
    fn paths_of_a_related_type_stand_in_and_unrelated_files_stay() {
        let readme = "# I\n\n```python\nimport i\nmodel = i.load(\"weights.onnx\")\n\
            img = i.imread('photo.png')\nout = i.run(model, img)\n\
            i.imwrite(\"result.png\", out)\n```\n";
        let s = start(readme, "README.md", "", &["/in/cat.jpg"]).unwrap();
        assert_eq!(
            s.code,
            "import i\nmodel = i.load(\"weights.onnx\")\nimg = i.imread(\"/in/cat.jpg\")\n\
             out = i.run(model, img)\ni.imwrite(\"/out/output.png\", out)\n"
        );
    }

    #[test]
    fn several_outputs_are_numbered_and_open_for_writing_is_an_output() {
        let readme = "# T\n\n```python\nimport t\nt.convert(\"in.csv\", output=\"a.json\")\n\
            with open(\"b.txt\", \"w\") as f:\n    f.write(t.summary(\"in.csv\"))\n\
            out_path = 'c.xlsx'\n```\n";
        let s = start(readme, "README.md", "convert", &["/in/data.csv"]).unwrap();
        let now: Vec<String> = s
            .swaps
            .iter()
            .map(|w| w.now.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            now,
            [
                "/in/data.csv",
                "/out/output_01.json",
                "/out/output_02.txt",
                "/out/output_03.xlsx"
            ]
        );
        assert!(
            s.code.contains("    f.write(t.summary(\"/in/data.csv\"))"),
            "{}",
            s.code
        );
    }

    #[test]
    fn literals_that_are_not_plain_file_names_are_left_alone() {
        for text in [
            "https://x.org/a.png",
            "a b.png",
            "1.5",
            "user@example.com",
            "example.com",
            "--out.png",
            "en_US.UTF-8",
            "",
        ] {
            assert_eq!(file_type(text), None, "{text}");
        }
        assert_eq!(file_type("./samples/Lenna.PNG").as_deref(), Some("png"));
        assert_eq!(file_type("script.py").as_deref(), Some("py"));
        let lits =
            string_literals("f(f\"{x}.png\", b'a.png', r'c:\\a.png', '''d.png''') # 'e.png'\n");
        let contents: Vec<&str> = lits.iter().map(|l| l.content.as_str()).collect();
        assert_eq!(contents, ["c:\\a.png"]);
    }

    #[test]
    fn hostile_readmes_end_quickly_with_nothing() {
        let deep = format!("# T\n\n```python\nf({}\"a.png\"\n```\n", "(".repeat(50_000));
        assert!(start(&deep, "README.md", "a", &["/in/a.png"]).is_none());
        let unclosed = "# T\n\n```python\nx = open('a.png\nimport y\n";
        assert!(start(unclosed, "README.md", "a", &["/in/a.png"]).is_none());
        let many: String = (0..5_000)
            .map(|i| format!("```python\nimport m\nm.read(\"f{i}.png\")\n```\n"))
            .collect();
        let s = start(&many, "README.md", "read", &["/in/a.png"]).unwrap();
        assert!(s.code.contains("/in/a.png"));
    }
}
