//! Putting the task's paths in an example: its string literals, the file
//! names among them, which are read and which written, and what replaces
//! them.

use std::path::{Path, PathBuf};

use super::*;

/// An example with the task's paths put in.
pub(super) struct Adapted {
    pub(super) code: String,
    pub(super) swaps: Vec<PathSwap>,
    /// File names the example reads that no input of the task took: they
    /// would stay the example's sample files.
    pub(super) unmatched: usize,
    pub(super) samples: Vec<String>,
    pub(super) saved_result: Option<PathBuf>,
}

/// A plain one-line string literal of the code.
pub(super) struct Literal {
    /// Byte span of the whole literal, quotes (and prefix) included.
    pub(super) span: (usize, usize),
    pub(super) content: String,
    /// The code on its line before it.
    pub(super) before: String,
    /// The code on its line after it.
    pub(super) after: String,
}

/// Puts the task's paths in place of the example's file names.
pub(super) fn adapt(code: &str, inputs: &[&Path], output_dir: &Path) -> Adapted {
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
pub(super) const MAX_FIRST_ITEMS: usize = 3;

/// The collections `code` indexes with `[0]` (`reader.pages[0]` gives
/// `reader.pages`), outside strings and comments; distinct, in order.
pub(super) fn first_items(code: &str) -> Vec<String> {
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
pub(super) const MAX_SAMPLES: usize = 5;

/// The literals that read as sample text: words with a space between
/// them, not a file name, not a format string, at most 80 characters.
/// Distinct, in order.
pub(super) fn sample_values(literals: &[Literal]) -> Vec<String> {
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
pub(super) fn python_string(text: &str) -> String {
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
pub(super) fn string_literals(code: &str) -> Vec<Literal> {
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

pub(super) fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
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

pub(super) fn file_type(text: &str) -> Option<String> {
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
pub(super) fn input_type(path: &Path) -> Option<String> {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

/// Kinds of file a library reads alike, so a README's `.png` stands for a
/// task's `.jpg`.
pub(super) fn family(ext: &str) -> Option<u8> {
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
pub(super) fn is_written(literal: &Literal) -> bool {
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
pub(super) const WALKS: &[&str] = &[
    "Path", "listdir", "walk", "scandir", "glob", "iglob", "rglob",
];

/// Whether `literal` names a directory the example walks: a relative or
/// absolute path with no file type, passed to [`WALKS`] (`glob`'s pattern
/// counts by its directory part).
pub(super) fn walked_directory(literal: &Literal) -> bool {
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
pub(super) fn writes_name(name: &str) -> bool {
    name.starts_with("out")
        || name.starts_with("dest")
        || name.starts_with("dst")
        || name.starts_with("save")
        || name.ends_with("output")
        || name.ends_with("output_path")
        || name.ends_with("output_file")
}

/// The identifier that ends `text` (`a.b.c` → `c`).
pub(super) fn last_identifier(text: &str) -> &str {
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
pub(super) fn open_call(before: &str) -> Option<&str> {
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
