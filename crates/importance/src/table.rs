//! The ranking as a fixed-width table, as `repo-agent rank` prints it and
//! the MCP server's `rank` tool answers.

use std::fmt::Write as _;

use crate::Ranking;

impl Ranking {
    /// The `top` best modules and functions and the `classes` best classes
    /// as three aligned tables, with each module's feature scores; says so
    /// when the Git feature read no history.
    pub fn table(&self, top: usize, classes: usize) -> String {
        let mut out = String::new();
        let modules = self.top_modules(top);
        let width = modules
            .iter()
            .map(|m| m.name.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let _ = writeln!(
            out,
            "{:<width$}  {:>6}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
            "module", "score", "dep", "cmplx", "usage", "sem", "doc", "git"
        );
        for m in modules {
            let f = &m.features;
            let _ = writeln!(
                out,
                "{:<width$}  {:>6.3}  {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.3}",
                m.name, m.score, f.dependency, f.complexity, f.usage, f.semantic, f.doc, f.git
            );
        }
        let core = self.top_classes(classes);
        let width = core.iter().map(|c| c.name.len()).max().unwrap_or(5).max(5);
        let _ = writeln!(
            out,
            "\n{:<width$}  {:>6}  {:>7}  {:>5}",
            "class", "score", "methods", "calls"
        );
        for c in core {
            let _ = writeln!(
                out,
                "{:<width$}  {:>6.3}  {:>7}  {:>5}",
                c.name, c.score, c.methods, c.calls
            );
        }
        let functions = self.top_functions(top);
        let width = functions
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let _ = writeln!(
            out,
            "\n{:<width$}  {:>6}  {:>5}  entry  public",
            "function", "score", "calls"
        );
        for f in functions {
            let _ = writeln!(
                out,
                "{:<width$}  {:>6.3}  {:>5}  {:<5}  {}",
                f.name,
                f.score,
                f.calls,
                if f.entry_point { "yes" } else { "" },
                if f.public { "yes" } else { "" }
            );
        }
        if self.commits_read == 0 {
            out.push_str("\n(no git history: the git feature is 0)\n");
        }
        out
    }
}
