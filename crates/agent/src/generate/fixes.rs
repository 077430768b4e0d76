//! Deterministic repairs of generated code, applied before each
//! verification: the old spelling of an API that the pinned release no
//! longer accepts, written by a model trained on the old one, which its
//! repair rounds then do not fix from the traceback.
//!
//! Measured (RepoGenesis run 3, tuning half): three Flask services of
//! fifteen exited at start with "Working outside of application context"
//! because they called `db.create_all()` outside `app.app_context()`, as
//! Flask-SQLAlchemy 2 allowed and 3 (the pinned one) does not; each had
//! two repair rounds with the traceback and kept the call as it was.
//!
//! Each fix reads the file line by line once (linear, no parse that a
//! hostile file could blow up) and changes only lines it recognises whole.

use std::time::Instant;

use super::{Run, Stop};

/// One repair made to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fixed {
    /// What was changed, for the run's log and steps.
    pub(crate) what: String,
    /// The file's new text.
    pub(crate) text: String,
}

/// Wraps each `DB.create_all()` that runs at import time or in the
/// `__main__` block, outside an application context, in
/// `with APP.app_context():`, where `DB` is a Flask-SQLAlchemy object and
/// `APP` the module's one Flask app. `None` when nothing is to change.
pub(crate) fn create_all_in_app_context(source: &str) -> Option<Fixed> {
    if !source.contains("flask_sqlalchemy") || !source.contains("create_all") {
        return None;
    }
    let apps: Vec<&str> = source
        .lines()
        .filter_map(|line| assignment_of(line, "Flask("))
        .collect();
    let [app] = apps.as_slice() else {
        return None;
    };
    let databases: Vec<&str> = source
        .lines()
        .filter_map(|line| assignment_of(line, "SQLAlchemy("))
        .collect();
    let mut out = String::with_capacity(source.len() + 64);
    let mut changed = 0usize;
    // The indentation of each open block header, innermost last, with
    // whether it is an application context or the `__main__` block.
    let mut blocks: Vec<(usize, Block)> = Vec::new();
    let mut in_string: Option<&str> = None;
    for line in source.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start();
        let indent = body.len() - trimmed.len();
        if let Some(quote) = in_string {
            if body.matches(quote).count() % 2 == 1 {
                in_string = None;
            }
            out.push_str(line);
            continue;
        }
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            while blocks.last().is_some_and(|(at, _)| *at >= indent) {
                blocks.pop();
            }
        }
        let call = trimmed
            .strip_suffix("create_all()")
            .and_then(|receiver| receiver.strip_suffix('.'))
            .filter(|receiver| databases.contains(receiver));
        let outside_context = !blocks.iter().any(|(_, b)| *b == Block::AppContext);
        let at_import_or_main = blocks.iter().all(|(_, b)| *b != Block::Other);
        if call.is_some() && outside_context && at_import_or_main {
            let pad = &body[..indent];
            out.push_str(&format!(
                "{pad}with {app}.app_context():\n{pad}    {trimmed}\n"
            ));
            changed += 1;
            continue;
        }
        if trimmed.ends_with(':') && !trimmed.starts_with('#') {
            let block = if trimmed.contains("app_context()") {
                Block::AppContext
            } else if trimmed.starts_with("if __name__") {
                Block::Main
            } else {
                Block::Other
            };
            blocks.push((indent, block));
        }
        for quote in ["\"\"\"", "'''"] {
            if body.matches(quote).count() % 2 == 1 {
                in_string = Some(quote);
                break;
            }
        }
        out.push_str(line);
    }
    (changed > 0).then(|| Fixed {
        what: format!(
            "{changed} `create_all()` put in `with {app}.app_context():` (Flask-SQLAlchemy 3 needs an application context)"
        ),
        text: out,
    })
}

/// What kind of block a line opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// `with ....app_context():`
    AppContext,
    /// `if __name__ == "__main__":`
    Main,
    /// Anything else: a function, a class, a loop.
    Other,
}

/// `NAME` of a module-level `NAME = ...CALL...` line.
fn assignment_of<'a>(line: &'a str, call: &str) -> Option<&'a str> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, value) = line.split_once('=')?;
    let name = name.trim();
    let simple = !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_');
    (simple && !value.starts_with('=') && value.contains(call)).then_some(name)
}

impl Run<'_> {
    /// Applies the fixes to every written Python file; each change is a
    /// step of the run.
    pub(super) fn apply_fixes(&mut self) -> Result<(), Stop> {
        let python: Vec<String> = self
            .written
            .iter()
            .filter(|p| p.ends_with(".py"))
            .cloned()
            .collect();
        for path in python {
            let started = Instant::now();
            let source = self.read_generated(&path);
            // Read lossily: a file that is not UTF-8 (a repair may have
            // written anything) is left as it is, never rewritten.
            if source.contains(char::REPLACEMENT_CHARACTER) {
                continue;
            }
            if let Some(fixed) = create_all_in_app_context(&source) {
                self.write(&path, &fixed.text)?;
                self.scaffold_step(&path, started, format!("fixed: {}", fixed.what))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVE: &str = "from flask import Flask\nfrom flask_sqlalchemy import SQLAlchemy\n\napp = Flask(__name__)\ndb = SQLAlchemy(app)\n\nclass Person(db.Model):\n    id = db.Column(db.Integer, primary_key=True)\n\ndb.create_all()\n\n@app.route('/people')\ndef people():\n    return 'ok'\n\nif __name__ == '__main__':\n    db.create_all()\n    app.run(port=8080)\n";

    #[test]
    fn create_all_at_import_and_in_main_gets_an_app_context() {
        let fixed = create_all_in_app_context(EVE).unwrap();
        assert!(
            fixed
                .text
                .contains("\nwith app.app_context():\n    db.create_all()\n\n@app.route"),
            "{}",
            fixed.text
        );
        assert!(
            fixed.text.contains(
                "if __name__ == '__main__':\n    with app.app_context():\n        db.create_all()\n    app.run(port=8080)\n"
            ),
            "{}",
            fixed.text
        );
        assert!(fixed.what.starts_with("2 `create_all()`"), "{}", fixed.what);
        // Applied again, nothing changes.
        assert_eq!(create_all_in_app_context(&fixed.text), None);
    }

    #[test]
    fn create_all_already_in_a_context_or_a_function_is_left() {
        let in_context = EVE.replace(
            "\ndb.create_all()\n\n@app",
            "\nwith app.app_context():\n    db.create_all()\n\n@app",
        );
        let in_context = in_context.replace(
            "    db.create_all()\n    app.run",
            "    with app.app_context():\n        db.create_all()\n    app.run",
        );
        assert_eq!(create_all_in_app_context(&in_context), None);
        // Inside a function it runs when called, maybe in a request.
        let in_function = "from flask import Flask\nfrom flask_sqlalchemy import SQLAlchemy\napp = Flask(__name__)\ndb = SQLAlchemy(app)\ndef init():\n    db.create_all()\n";
        assert_eq!(create_all_in_app_context(in_function), None);
        // In a docstring it is text.
        let in_string = "from flask import Flask\nfrom flask_sqlalchemy import SQLAlchemy\napp = Flask(__name__)\ndb = SQLAlchemy(app)\n\"\"\"\ndb.create_all()\n\"\"\"\n";
        assert_eq!(create_all_in_app_context(in_string), None);
        // Two Flask apps: which context is meant is not known.
        let two_apps = EVE.replace(
            "db = SQLAlchemy(app)",
            "admin = Flask('admin')\ndb = SQLAlchemy(app)",
        );
        assert_eq!(create_all_in_app_context(&two_apps), None);
        // Not Flask-SQLAlchemy.
        assert_eq!(create_all_in_app_context("engine.create_all()\n"), None);
    }

    #[test]
    fn hostile_sources_are_read_in_one_pass() {
        let deep = format!(
            "from flask_sqlalchemy import SQLAlchemy\napp = Flask(x)\ndb = SQLAlchemy(app)\n{}",
            (0..20_000)
                .map(|i| format!("{}if x:\n", " ".repeat(i % 200)))
                .collect::<String>()
        );
        // Twenty thousand blocks, then one call at import time.
        let fixed = create_all_in_app_context(&format!("{deep}db.create_all()\n")).unwrap();
        assert!(fixed.what.starts_with("1 `create_all()`"), "{}", fixed.what);
        assert_eq!(
            create_all_in_app_context(
                "\u{0}\u{ffff}=Flask(=SQLAlchemy(create_all flask_sqlalchemy"
            ),
            None
        );
    }
}
