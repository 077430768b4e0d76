//! Python one-liners that Python rejects only because a compound statement
//! follows `;`.
//!
//! Measured (GitTaskBench PyPDF2_02, embedded Qwen 1.5B): `from pypdf import
//! PdfReader; reader = PdfReader('...'); for page in reader.pages:
//! print(page.extract_text())`, right but for the `; for`, a SyntaxError. A
//! `;` joins simple statements only, so a `;` at the top level of a line
//! followed by `for`, `while`, `if`, `with`, `try`, `def`, `class` or
//! `async` can only be a mistake: putting what follows on a line of its own
//! (with the line's indentation) turns code Python refuses into the code
//! that was meant, and never changes code Python accepts.

/// Statements that cannot follow `;`.
const COMPOUND: &[&str] = &["for", "while", "if", "with", "try", "def", "class", "async"];

/// `code` with every `; <compound statement>` put on a line of its own;
/// `None` when there is none.
pub(crate) fn split_compound_statements(code: &str) -> Option<String> {
    let mut out = String::with_capacity(code.len() + 16);
    let mut copied = 0;
    let mut line_start = 0;
    let mut depth = 0usize;
    for (i, byte) in CodeBytes::new(code) {
        match byte {
            b'\n' => line_start = i + 1,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b';' if depth == 0 => {
                let rest = &code[i + 1..];
                let after = rest.trim_start_matches([' ', '\t']);
                if starts_compound(after) {
                    let indent: String = code[line_start..]
                        .chars()
                        .take_while(|c| *c == ' ' || *c == '\t')
                        .collect();
                    out.push_str(code[copied..i].trim_end_matches([' ', '\t']));
                    out.push('\n');
                    out.push_str(&indent);
                    copied = code.len() - after.len();
                }
            }
            _ => {}
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&code[copied..]);
    Some(out)
}

/// The bytes of Python code outside comments and string literals, with
/// their indexes: what brackets and statement separators are read from.
struct CodeBytes<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> CodeBytes<'a> {
    fn new(code: &'a str) -> Self {
        Self {
            bytes: code.as_bytes(),
            at: 0,
        }
    }
}

impl Iterator for CodeBytes<'_> {
    type Item = (usize, u8);

    fn next(&mut self) -> Option<(usize, u8)> {
        let bytes = self.bytes;
        while self.at < bytes.len() {
            let i = self.at;
            match bytes[i] {
                b'#' => {
                    // A comment runs to the end of the line.
                    self.at = bytes[i..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(bytes.len(), |n| i + n);
                }
                quote @ (b'"' | b'\'') => {
                    let triple = bytes.get(i..i + 3) == Some(&[quote; 3][..]);
                    self.at = string_end(bytes, i, quote, triple);
                }
                byte => {
                    self.at = i + 1;
                    return Some((i, byte));
                }
            }
        }
        None
    }
}

/// One bracket [`close_mismatched_brackets`] put in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClosedBracket {
    /// The closer put in.
    pub(crate) closer: char,
    /// The closer it was put before, which closed an outer bracket.
    pub(crate) before: char,
    /// 1-based line of the code where it went.
    pub(crate) line: usize,
}

/// `code` with the closers a mismatched closer skipped put in before it:
/// `print([t for t in f('x'))` becomes `print([t for t in f('x')])`.
///
/// Measured (GitTaskBench Eparse_03, embedded Qwen 1.5B): that line, with
/// its `]` missing, sent five times; Python's "closing parenthesis ')' does
/// not match opening parenthesis '['" did not tell the model what to
/// write. A closer that does not match the innermost open bracket but
/// matches an outer one is always a SyntaxError, and closing the inner ones
/// first is the one-character fix it most often needs; a closer that
/// matches nothing open, and brackets never closed, are left to Python's
/// message. Code Python accepts is never changed. Linear in the code.
pub(crate) fn close_mismatched_brackets(code: &str) -> Option<(String, Vec<ClosedBracket>)> {
    let mut stack: Vec<u8> = Vec::new();
    let mut out = String::with_capacity(code.len() + 4);
    let mut copied = 0;
    let mut closed: Vec<ClosedBracket> = Vec::new();
    // Lines counted up to `counted`, on demand: linear however many closers
    // go in.
    let (mut line, mut counted) = (1, 0);
    for (i, byte) in CodeBytes::new(code) {
        let wanted = match byte {
            b'(' | b'[' | b'{' => {
                stack.push(byte);
                continue;
            }
            b')' => b'(',
            b']' => b'[',
            b'}' => b'{',
            _ => continue,
        };
        let Some(at) = stack.iter().rposition(|&o| o == wanted) else {
            continue;
        };
        if at + 1 < stack.len() {
            out.push_str(&code[copied..i]);
            line += code[counted..i].matches('\n').count();
            counted = i;
            for &inner in stack[at + 1..].iter().rev() {
                let closer = match inner {
                    b'(' => ')',
                    b'[' => ']',
                    _ => '}',
                };
                out.push(closer);
                closed.push(ClosedBracket {
                    closer,
                    before: char::from(byte),
                    line,
                });
            }
            copied = i;
        }
        stack.truncate(at);
    }
    if closed.is_empty() {
        return None;
    }
    out.push_str(&code[copied..]);
    Some((out, closed))
}

/// Whether `text` begins with a compound statement's keyword.
fn starts_compound(text: &str) -> bool {
    COMPOUND.iter().any(|keyword| {
        text.strip_prefix(keyword).is_some_and(|after| {
            !after
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    })
}

/// The index just past the string that opens at `start`; the end of the
/// code for a string that never closes.
fn string_end(bytes: &[u8], start: usize, quote: u8, triple: bool) -> usize {
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' if !triple => return i,
            b if b == quote => {
                if !triple {
                    return i + 1;
                }
                if bytes.get(i..i + 3) == Some(&[quote; 3][..]) {
                    return i + 3;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_after_a_semicolon_gets_its_own_line() {
        let code = "from pypdf import PdfReader; reader = PdfReader('in.pdf'); for page in reader.pages: print(page.extract_text())";
        assert_eq!(
            split_compound_statements(code).as_deref(),
            Some(
                "from pypdf import PdfReader; reader = PdfReader('in.pdf')\n\
                 for page in reader.pages: print(page.extract_text())"
            )
        );
        // Indented: the new line keeps the indentation.
        assert_eq!(
            split_compound_statements("def f():\n    x = 1; if x: print(x)\n").as_deref(),
            Some("def f():\n    x = 1\n    if x: print(x)\n")
        );
        assert_eq!(
            split_compound_statements("import os;with open('a') as f: pass; async def g(): pass")
                .as_deref(),
            Some("import os\nwith open('a') as f: pass\nasync def g(): pass")
        );
    }

    #[test]
    fn a_closer_that_skips_an_open_bracket_gets_it_closed_first() {
        let code = "from eparse.core import get_df_from_file; print([table for table in get_df_from_file('/in/a.xlsx'))";
        let (fixed, closed) = close_mismatched_brackets(code).expect("mismatched");
        assert_eq!(
            fixed,
            "from eparse.core import get_df_from_file; print([table for table in get_df_from_file('/in/a.xlsx')])"
        );
        assert_eq!(
            closed,
            [ClosedBracket {
                closer: ']',
                before: ')',
                line: 1
            }]
        );
        let (fixed, closed) = close_mismatched_brackets("x = 1\nd = {'a': [f(1, g(2}\n").unwrap();
        assert_eq!(fixed, "x = 1\nd = {'a': [f(1, g(2))]}\n");
        assert_eq!(closed.len(), 3);
        assert!(closed.iter().all(|c| c.line == 2));
    }

    #[test]
    fn balanced_code_strings_and_other_mistakes_are_left_alone() {
        for code in [
            "print([x for x in f(1)])",
            "s = '([' ; t = \"{)\"  # ( [\n",
            "x = f'{a[0]}'",
            "print(1))",
            "print((1)",
            "'''\n(]\n'''",
        ] {
            assert_eq!(close_mismatched_brackets(code), None, "{code}");
        }
    }

    #[test]
    fn many_mismatches_are_closed_in_linear_time() {
        let code = "([)\n".repeat(50_000);
        let (fixed, closed) = close_mismatched_brackets(&code).unwrap();
        assert_eq!(closed.len(), 50_000);
        assert_eq!(closed[49_999].line, 50_000);
        assert!(fixed.starts_with("([])\n([])\n"));
    }

    #[test]
    fn code_python_accepts_is_left_alone() {
        for code in [
            "a = 1; b = 2",
            "for p in pages: print(p); print('done')",
            "x = 'a; for b'; y = \"c; if d\"",
            "print(f(a, b); for_each)",
            "s = '''one; for\ntwo''' ; formatted = 1",
            "items = [1; for]",
            "# a; for comment\nx = 1",
            "total = 0; format_it = str(total); iffy = 1",
            "",
        ] {
            assert_eq!(split_compound_statements(code), None, "{code}");
        }
    }

    #[test]
    fn unclosed_strings_and_brackets_do_not_panic() {
        for code in [
            "'abc; for",
            "\"\"\"; for x",
            "((; for x in y: pass",
            "x = '\\",
            ";",
        ] {
            let _ = split_compound_statements(code);
        }
        assert_eq!(
            split_compound_statements(")); for x in y: pass").as_deref(),
            Some("))\nfor x in y: pass")
        );
    }
}
