//! Generators of hostile repositories (issue 26, item 4): deeply nested
//! brackets, calls and blocks in Python and Java, and files made to hold
//! as many facts per byte as possible. Shared by the
//! `hostile_fixtures` example (which writes them for measuring) and the
//! tests (which build them at test time), so that no fixture is committed
//! and both measure the same shapes.

#![allow(dead_code)]

use std::path::Path;

/// One hostile shape; [`Shape::text`] builds a file of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `x = [[[ ... ]]]`.
    PyBrackets,
    /// `x = f(f(f( ... )))`.
    PyCalls,
    /// `if x:` nested one space deeper on each line.
    PyBlocks,
    /// `int[][] x = {{{ ... }}};` inside a class.
    JavaBrackets,
    /// `f(f(f( ... )));` inside a method.
    JavaCalls,
    /// `if (x) {` nested inside a method.
    JavaBlocks,
    /// `f()` on every line: the most call sites per byte.
    PyFlatCalls,
    /// Lines of `x = f(f( ... ))` 150 deep, within the nesting budget.
    PyWideNests,
    /// One chain `x.a().a() ...` (`depth` calls).
    PyChain,
    /// One chain `x.a().a() ...` in a method: each call copies its receiver.
    JavaChain,
    /// `if x:` nested `depth` deep, then 1 MB of blank lines, then a line
    /// back at the top level: tree-sitter-python's scanner reads the blank
    /// lines again for every level it closes.
    PyDedent,
}

impl Shape {
    /// The nesting shapes: `depth` is how deep they nest.
    pub const NESTED: [Shape; 6] = [
        Shape::PyBrackets,
        Shape::PyCalls,
        Shape::PyBlocks,
        Shape::JavaBrackets,
        Shape::JavaCalls,
        Shape::JavaBlocks,
    ];

    /// Every shape.
    pub const ALL: [Shape; 11] = [
        Shape::PyBrackets,
        Shape::PyCalls,
        Shape::PyBlocks,
        Shape::JavaBrackets,
        Shape::JavaCalls,
        Shape::JavaBlocks,
        Shape::PyFlatCalls,
        Shape::PyWideNests,
        Shape::PyChain,
        Shape::JavaChain,
        Shape::PyDedent,
    ];

    /// The shape's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Shape::PyBrackets => "py-brackets",
            Shape::PyCalls => "py-calls",
            Shape::PyBlocks => "py-blocks",
            Shape::JavaBrackets => "java-brackets",
            Shape::JavaCalls => "java-calls",
            Shape::JavaBlocks => "java-blocks",
            Shape::PyFlatCalls => "py-flat-calls",
            Shape::PyWideNests => "py-wide-nests",
            Shape::PyChain => "py-chain",
            Shape::JavaChain => "java-chain",
            Shape::PyDedent => "py-dedent",
        }
    }

    /// The shape named `name`.
    pub fn parse(name: &str) -> Option<Shape> {
        Shape::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The file extension of the shape's language.
    pub fn extension(self) -> &'static str {
        match self {
            Shape::PyBrackets
            | Shape::PyCalls
            | Shape::PyBlocks
            | Shape::PyFlatCalls
            | Shape::PyWideNests
            | Shape::PyChain
            | Shape::PyDedent => "py",
            Shape::JavaBrackets | Shape::JavaCalls | Shape::JavaBlocks | Shape::JavaChain => "java",
        }
    }

    /// A file of this shape nested `depth` levels deep (for the other
    /// shapes: with `depth` repetitions). A call to a defined function
    /// follows the nest, so that what comes after the nest can be checked
    /// to be analysed (or not).
    pub fn text(self, depth: usize) -> String {
        let mut text = String::new();
        match self {
            Shape::PyBrackets => {
                text.push_str("def g():\n    pass\n\nx = ");
                text.push_str(&"[".repeat(depth));
                text.push_str(&"]".repeat(depth));
                text.push_str("\ng()\n");
            }
            Shape::PyCalls => {
                text.push_str("def f(a=None):\n    return a\n\ndef g():\n    pass\n\nx = ");
                text.push_str(&"f(".repeat(depth));
                text.push_str(&")".repeat(depth));
                text.push_str("\ng()\n");
            }
            Shape::PyBlocks => {
                text.push_str("def g():\n    pass\n\ndef deep(x):\n");
                for level in 1..=depth {
                    text.push_str(&" ".repeat(level));
                    text.push_str("if x:\n");
                }
                text.push_str(&" ".repeat(depth + 1));
                text.push_str("g()\n");
                text.push_str("\ng()\n");
            }
            Shape::JavaBrackets => {
                text.push_str("class A {\n  void g() {}\n  int[] x = ");
                text.push_str(&"{".repeat(depth));
                text.push_str(&"}".repeat(depth));
                text.push_str(";\n  void h() { g(); }\n}\n");
            }
            Shape::JavaCalls => {
                text.push_str(
                    "class A {\n  void g() {}\n  int f(int a) { return a; }\n  void m() {\n    f(",
                );
                text.push_str(&"f(".repeat(depth));
                text.push('0');
                text.push_str(&")".repeat(depth + 1));
                text.push_str(";\n  }\n  void h() { g(); }\n}\n");
            }
            Shape::JavaBlocks => {
                text.push_str("class A {\n  void g() {}\n  void m(boolean x) {\n");
                text.push_str(&"if (x) {\n".repeat(depth));
                text.push_str("g();\n");
                text.push_str(&"}\n".repeat(depth));
                text.push_str("  }\n  void h() { g(); }\n}\n");
            }
            Shape::PyFlatCalls => {
                text.push_str("def f(a=None):\n    return a\n\n");
                text.push_str(&"f()\n".repeat(depth));
            }
            Shape::PyWideNests => {
                text.push_str("def f(a=None):\n    return a\n\n");
                let line = format!("x = {}{}\n", "f(".repeat(150), ")".repeat(150));
                text.push_str(&line.repeat(depth));
            }
            Shape::PyChain => {
                text.push('x');
                text.push_str(&".a()".repeat(depth));
                text.push('\n');
            }
            Shape::JavaChain => {
                text.push_str("class A {\n  A a() { return this; }\n  void m(A x) {\n    x");
                text.push_str(&".a()".repeat(depth));
                text.push_str(";\n  }\n}\n");
            }
            Shape::PyDedent => {
                text.push_str("def g():\n    pass\n\ndef deep(x):\n");
                for level in 1..=depth {
                    text.push_str(&" ".repeat(level));
                    text.push_str("if x:\n");
                }
                text.push_str(&" ".repeat(depth + 1));
                text.push_str("pass\n");
                let blank = format!("{}\n", " ".repeat(999));
                text.push_str(&blank.repeat(1_000));
                text.push_str("g()\n");
            }
        }
        text
    }

    /// The depth at which a file of this shape is about `bytes` long.
    pub fn depth_for_bytes(self, bytes: usize) -> usize {
        match self {
            Shape::PyBrackets | Shape::JavaBrackets => bytes / 2,
            Shape::PyCalls | Shape::JavaCalls => bytes / 3,
            // Level k costs k + 6 bytes: about depth² / 2 in all.
            Shape::PyBlocks => ((2 * bytes) as f64).sqrt() as usize,
            Shape::JavaBlocks => bytes / 11,
            Shape::PyFlatCalls | Shape::PyChain | Shape::JavaChain => bytes / 4,
            Shape::PyWideNests => bytes / 455,
            // The 1 MB of blank lines, then levels of k + 6 bytes.
            Shape::PyDedent => ((2 * bytes.saturating_sub(1_000_000)) as f64).sqrt() as usize,
        }
    }
}

/// Writes `files` files of `shape`, each about `bytes` long, into `dir`
/// (`n0.py`, `n1.py`, ...).
pub fn write(dir: &Path, shape: Shape, files: usize, bytes: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let text = shape.text(shape.depth_for_bytes(bytes));
    for i in 0..files {
        std::fs::write(dir.join(format!("n{i}.{}", shape.extension())), &text)?;
    }
    Ok(())
}
