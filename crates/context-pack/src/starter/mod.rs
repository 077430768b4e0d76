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

mod adapt;
mod all_items;
mod code;
mod made_up;
mod round_trip;
mod save;
#[cfg(test)]
mod tests;

pub(crate) use adapt::names_a_file;
use adapt::*;
use code::*;
pub use made_up::MadeUpData;
use made_up::read_input_instead;
use save::*;

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
    /// The collection whose first item the example took and that the
    /// script now loops over, as the task asks for all of it
    /// ([`first_items`](Self::first_items) no longer names it).
    pub looped_over: Option<String>,
    /// The reading call the example was cut to, when it wrote a sample
    /// text and read it back and the task gives no text to write
    /// ([`Starter::keep_reading_half`]).
    pub reading_half: Option<String>,
    /// Where a step the example lacked saves the result it only showed
    /// (`print(x)`, `x = ...`), as text in the format the task names.
    pub saved_result: Option<PathBuf>,
    /// The data the example made up, now read from the task's table
    /// instead (when no example reads the task's input).
    pub made_up_data: Option<MadeUpData>,
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

    /// When the task gives no value for the example's sample text (call
    /// after [`Starter::put_task_values`]) and the example writes it into
    /// the task's input file and reads it back (hide, then reveal), keeps
    /// only the reading, on the input, and saves what it reads as text;
    /// whether it did. A task that wants a text written names it.
    ///
    /// ```
    /// let mut starter = context_pack::starter::starter_from_readme(
    ///     "README.md",
    ///     "```python\nfrom stegano import lsb\nsecret = lsb.hide(\"a.png\", \"Hello World\")\nsecret.save(\"b.png\")\nmessage = lsb.reveal(\"b.png\")\n```\n",
    ///     "extract the hidden message",
    ///     &[std::path::Path::new("/in/x.png")],
    ///     std::path::Path::new("/out"),
    /// )
    /// .expect("the example reads the input's kind of file");
    /// starter.put_task_values(&[]);
    /// assert!(starter.keep_reading_half("extract the hidden message", &[std::path::Path::new("/in/x.png")], std::path::Path::new("/out")));
    /// assert!(starter.code.starts_with("from stegano import lsb\nmessage = lsb.reveal(\"/in/x.png\")\n"));
    /// assert_eq!(starter.saved_result.as_deref(), Some(std::path::Path::new("/out/output.txt")));
    /// ```
    pub fn keep_reading_half(&mut self, query: &str, inputs: &[&Path], output_dir: &Path) -> bool {
        if !self.task_values.is_empty() || self.samples.is_empty() || self.reading_half.is_some() {
            return false;
        }
        let (Some(output), Some(input)) = (
            self.swaps.iter().find(|s| s.role == PathRole::Output),
            self.swaps.iter().find(|s| s.role == PathRole::Input),
        ) else {
            return false;
        };
        let Some((code, reading)) =
            round_trip::reading_half(&self.code, &output.now, &input.now, &self.samples)
        else {
            return false;
        };
        let (code, saved) = match save_what_is_shown(&code, query, inputs, output_dir) {
            Some((code, path)) => (code, Some(path)),
            None => (code, None),
        };
        self.code = code;
        self.saved_result = saved;
        self.swaps.retain(|s| s.role == PathRole::Input);
        self.samples.clear();
        self.first_items = first_items(&self.code);
        self.reading_half = Some(reading);
        true
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
    type Key = (bool, bool, bool, f64);
    let mut best: Option<(Key, usize, Adapted, Option<MadeUpData>)> = None;
    for (i, ((page, _, code), score)) in candidates.iter().zip(scores).enumerate() {
        // A documentation page may teach Python itself (`pd.read_excel` in
        // NeuroKit's `learn_python.rst`): its example counts only when it
        // imports the repository's own code.
        if *page > 0 && !own.is_empty() && !imports_any(code, own) {
            continue;
        }
        let mut adapted = adapt(code, inputs, output_dir);
        let mut reads_input = adapted.swaps.iter().any(|s| s.role == PathRole::Input);
        // An example that makes up its data, matching the task's words,
        // may read the task's table instead; one that reads the input
        // itself still comes first.
        let mut made_up = None;
        if !reads_input
            && score > 0.0
            && let Some((code, data)) = inputs.iter().find_map(|i| read_input_instead(code, i))
        {
            adapted = adapt(&code, inputs, output_dir);
            // The table's path is already the task's: no swap is left to show.
            adapted.swaps.retain(|s| s.now != data.input);
            made_up = Some(data);
            reads_input = true;
        }
        // With inputs, an example that reads none of them would teach the
        // model to make up its data (a README's `ecg_simulate` for a task
        // that gives a recording); without, the words must match.
        if !reads_input && (!inputs.is_empty() || score <= 0.0) {
            continue;
        }
        // An example that reads one of the inputs' kind of file beats one
        // that only shares words with the task, one that reads it as
        // written beats one whose made-up data was replaced, one whose
        // every file is the task's beats one that keeps sample files
        // (merging three PDFs for a task that gives one); then the better
        // match, then the earlier block (the README's before the pages').
        let key = (
            reads_input,
            made_up.is_none(),
            adapted.unmatched == 0,
            score,
        );
        if best.as_ref().is_none_or(|(k, ..)| key > *k) {
            best = Some((key, i, adapted, made_up));
        }
    }
    let (_, i, mut adapted, made_up_data) = best?;
    let page = candidates.get(i)?.0;
    // Every block of the page, Python or not by itself (a block of one
    // import line is no example).
    let page_blocks: Vec<String> = pages
        .get(page)
        .map(|(name, text)| {
            code_samples(name, text)
                .into_iter()
                .take(MAX_BLOCKS)
                .map(|sample| sample.text)
                .collect()
        })
        .unwrap_or_default();
    let page_examples: Vec<&str> = page_blocks.iter().map(String::as_str).collect();
    let imports = imports_needed(&adapted.code, &page_examples);
    if !imports.is_empty() {
        adapted.code = format!("{}\n{}", imports.join("\n"), adapted.code);
    }
    let (_, sample, _) = candidates.into_iter().nth(i)?;
    let writes = adapted.swaps.iter().any(|s| s.role == PathRole::Output);
    if !writes
        && let Some((code, path)) = save_what_is_shown(&adapted.code, query, inputs, output_dir)
    {
        adapted.code = code;
        adapted.saved_result = Some(path);
    }
    let mut looped_over = None;
    if adapted.saved_result.is_some()
        && all_items::asks_for_all(query)
        && let Some((code, collection)) = all_items::loop_over_all(&adapted.code)
    {
        adapted.code = code;
        looped_over = Some(collection);
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
        looped_over,
        reading_half: None,
        saved_result: adapted.saved_result,
        made_up_data,
    })
}

/// `code` (a script the model ran) with a step that saves what it shows
/// into `output_dir`, in the format `task` names, as the starter's own
/// save step does: its last `print(x)` or `x = ...` written out, or what a
/// loop at its end prints also written to the output. `inputs` are the
/// task's input files (a binary format that is an input's names the
/// input, not the output). `None` when the script shows nothing it could
/// save that way.
///
/// ```
/// let (script, path) = context_pack::starter::with_save_step(
///     "from pypdf import PdfReader\ntext = PdfReader(\"/in/a.pdf\").pages[0].extract_text()\nprint(text)\n",
///     "save the text as a txt file",
///     &[std::path::Path::new("/in/a.pdf")],
///     std::path::Path::new("/out"),
/// )
/// .expect("the script prints one value");
/// assert_eq!(path, std::path::Path::new("/out/output.txt"));
/// assert!(script.ends_with("result = text\nprint(result)\nwith open(\"/out/output.txt\", \"w\", encoding=\"utf-8\") as out:\n    out.write(str(result))\n"));
/// ```
pub fn with_save_step(
    code: &str,
    task: &str,
    inputs: &[&Path],
    output_dir: &Path,
) -> Option<(String, PathBuf)> {
    save_what_is_shown(code, task, inputs, output_dir)
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
