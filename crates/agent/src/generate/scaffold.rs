//! Deterministic scaffolding (issue 28, item 7): the files a generated
//! service needs that follow from facts alone, written without a model.
//!
//! - `requirements.txt` lists the distributions the generated code imports
//!   (repo-graph's external imports; inside `try` blocks only those the
//!   table or the blueprint knows), pinned from a
//!   table of versions that resolve together on CPython 3.11; an import the
//!   table lacks is listed unpinned only when the blueprint planned it, since
//!   one unknown name (an unresolved local module, say) fails the whole
//!   `pip install -r`.
//! - `start.sh` starts the app object the code defines (`X = Flask(...)`,
//!   `X = FastAPI(...)`, a Django `manage.py`) on the port the specification
//!   states. A module whose `__main__` block already runs the server on that
//!   port is run as it is, so the setup it does there (creating tables, say)
//!   still happens.
//!
//! When the code defines no app the facts can name, `start.sh` is left to
//! the model, as before.

use std::collections::BTreeSet;

use crate::imports::{normalized, requirement_name};
use std::fmt::Write as _;
use std::time::Instant;

use super::blueprint::Blueprint;
use super::memory::MemoryEntry;
use super::report::GeneratePhase;
use super::{Run, Stop, probe};
use crate::Error;

/// Pinned distributions by top-level import name: `(module, distribution,
/// version)`: the web-service libraries a generated service imports, with
/// the import names that differ from their distribution's (`jwt` is
/// PyJWT, `flask_bcrypt` is Flask-Bcrypt). Checked together with `pip
/// install --dry-run` on CPython 3.11 (2026-11-27); Eve 2.1.0 resolves
/// with these Flask, Cerberus and pymongo pins. Measured (RepoGenesis
/// Blog, tuning half, run 2): `flask_bcrypt` missing from the table left
/// the service unable to start through both repair rounds.
const PINS: &[(&str, &str, &str)] = &[
    ("aiofiles", "aiofiles", "24.1.0"),
    ("aiohttp", "aiohttp", "3.10.10"),
    ("apscheduler", "APScheduler", "3.10.4"),
    ("argon2", "argon2-cffi", "23.1.0"),
    ("bcrypt", "bcrypt", "4.2.0"),
    ("bleach", "bleach", "6.1.0"),
    ("bs4", "beautifulsoup4", "4.12.3"),
    ("bson", "pymongo", "4.10.1"),
    ("cerberus", "Cerberus", "1.3.5"),
    ("click", "click", "8.1.7"),
    ("croniter", "croniter", "3.0.3"),
    ("cryptography", "cryptography", "43.0.1"),
    ("dateutil", "python-dateutil", "2.9.0.post0"),
    ("django", "Django", "5.1.2"),
    ("dotenv", "python-dotenv", "1.0.1"),
    ("email_validator", "email-validator", "2.2.0"),
    ("eve", "Eve", "2.1.0"),
    ("fastapi", "fastapi", "0.115.0"),
    ("flask", "Flask", "3.0.3"),
    ("flask_bcrypt", "Flask-Bcrypt", "1.0.1"),
    ("flask_caching", "Flask-Caching", "2.3.0"),
    ("flask_cors", "Flask-Cors", "5.0.0"),
    ("flask_httpauth", "Flask-HTTPAuth", "4.8.0"),
    ("flask_jwt_extended", "Flask-JWT-Extended", "4.6.0"),
    ("flask_limiter", "Flask-Limiter", "3.8.0"),
    ("flask_login", "Flask-Login", "0.6.3"),
    ("flask_mail", "Flask-Mail", "0.10.0"),
    ("flask_marshmallow", "flask-marshmallow", "1.2.1"),
    ("flask_migrate", "Flask-Migrate", "4.0.7"),
    ("flask_restful", "Flask-RESTful", "0.3.10"),
    ("flask_session", "Flask-Session", "0.8.0"),
    ("flask_socketio", "Flask-SocketIO", "5.4.1"),
    ("flask_sqlalchemy", "Flask-SQLAlchemy", "3.1.1"),
    ("flask_wtf", "Flask-WTF", "1.2.1"),
    ("gunicorn", "gunicorn", "23.0.0"),
    ("httpx", "httpx", "0.27.2"),
    ("itsdangerous", "itsdangerous", "2.2.0"),
    ("jinja2", "Jinja2", "3.1.4"),
    ("jose", "python-jose", "3.3.0"),
    ("jsonschema", "jsonschema", "4.23.0"),
    ("jwt", "PyJWT", "2.9.0"),
    ("lxml", "lxml", "5.3.0"),
    ("markdown", "Markdown", "3.7"),
    ("markupsafe", "MarkupSafe", "2.1.5"),
    ("marshmallow", "marshmallow", "3.22.0"),
    ("marshmallow_sqlalchemy", "marshmallow-sqlalchemy", "1.1.0"),
    ("mongoengine", "mongoengine", "0.29.1"),
    ("multipart", "python-multipart", "0.0.12"),
    ("numpy", "numpy", "2.1.2"),
    ("openpyxl", "openpyxl", "3.1.5"),
    ("orjson", "orjson", "3.10.7"),
    ("pandas", "pandas", "2.2.3"),
    ("passlib", "passlib", "1.7.4"),
    ("PIL", "Pillow", "10.4.0"),
    ("psycopg2", "psycopg2-binary", "2.9.10"),
    ("pydantic", "pydantic", "2.9.2"),
    ("pydantic_settings", "pydantic-settings", "2.5.2"),
    ("pymongo", "pymongo", "4.10.1"),
    ("pymysql", "PyMySQL", "1.1.1"),
    ("pyotp", "pyotp", "2.9.0"),
    ("pytest", "pytest", "8.3.3"),
    ("pytz", "pytz", "2024.2"),
    ("redis", "redis", "5.1.1"),
    ("requests", "requests", "2.32.3"),
    ("rest_framework", "djangorestframework", "3.15.2"),
    ("schedule", "schedule", "1.2.2"),
    ("shortuuid", "shortuuid", "1.0.13"),
    ("simplejson", "simplejson", "3.19.3"),
    ("slugify", "python-slugify", "8.0.4"),
    ("socketio", "python-socketio", "5.11.4"),
    ("sqlalchemy", "SQLAlchemy", "2.0.35"),
    ("sqlmodel", "sqlmodel", "0.0.22"),
    ("tabulate", "tabulate", "0.9.0"),
    ("toml", "toml", "0.10.2"),
    ("ujson", "ujson", "5.10.0"),
    ("uvicorn", "uvicorn", "0.30.6"),
    ("validators", "validators", "0.34.0"),
    ("waitress", "waitress", "3.0.0"),
    ("websocket", "websocket-client", "1.8.0"),
    ("websockets", "websockets", "13.1"),
    ("werkzeug", "Werkzeug", "3.0.4"),
    ("wtforms", "WTForms", "3.1.2"),
    ("xmltodict", "xmltodict", "0.14.2"),
    ("yaml", "PyYAML", "6.0.2"),
];

/// Import names that come with a distribution already pinned for another
/// name: listing them again would pin a second, possibly conflicting version.
const BUNDLED: &[(&str, &str)] = &[("starlette", "fastapi")];

/// The pinned `name==version` line for an import name, if the table has it.
fn pin(module: &str) -> Option<String> {
    PINS.iter()
        .find(|(m, _, _)| *m == module)
        .map(|(_, dist, version)| format!("{dist}=={version}"))
}

/// The `requirements.txt` the generated code needs, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirements {
    /// The file's lines, sorted.
    pub lines: Vec<String>,
    /// Third-party imports neither in the table nor planned: left out.
    pub unknown: Vec<String>,
}

impl Requirements {
    /// The file's text.
    pub fn text(&self) -> String {
        let mut text = String::from(
            "# Written by repo-agent from the generated code's imports (pinned versions).\n",
        );
        for line in &self.lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

impl Requirements {
    /// These requirements with the lines of `existing` (a
    /// `requirements.txt` someone edited) that name other distributions
    /// kept; a line naming a standard-library module is dropped, since pip
    /// cannot install it.
    pub fn merged(mut self, existing: &str) -> Requirements {
        let mine: BTreeSet<String> = self
            .lines
            .iter()
            .filter_map(|l| requirement_name(l))
            .collect();
        for line in existing.lines() {
            let Some(name) = requirement_name(line) else {
                continue;
            };
            let stdlib = crate::imports::is_stdlib_name(&name);
            if !stdlib && !mine.contains(&name) {
                self.lines
                    .push(line.split('#').next().unwrap_or("").trim().to_owned());
            }
        }
        self.lines.sort();
        self.lines.dedup();
        self
    }
}

/// What the generated code shows, read from repo-graph's facts of it.
pub(crate) struct CodeFacts<'a> {
    /// Every Python module: its path, source and imports.
    pub modules: Vec<ModuleFacts<'a>>,
    /// Top-level names of the repository's own files and directories.
    pub local: BTreeSet<String>,
}

/// One generated Python module.
pub(crate) struct ModuleFacts<'a> {
    /// Path relative to the root (`app/main.py`).
    pub path: &'a str,
    /// Its dotted name (`app.main`).
    pub name: &'a str,
    /// Its source text.
    pub source: &'a str,
    /// Top-level names of its absolute imports outside `try` blocks.
    pub imports: Vec<String>,
    /// Those inside `try` blocks (optional, or a "please install" message).
    pub optional: Vec<String>,
    /// What its `from` imports name, as `module.name` (`fastapi.Form`).
    pub names: Vec<String>,
}

impl<'a> CodeFacts<'a> {
    /// The facts of the Python modules of `graph`.
    pub fn of(graph: &'a repo_graph::RepoGraph) -> CodeFacts<'a> {
        let mut modules = Vec::new();
        let mut local = BTreeSet::new();
        for (id, module) in graph.module_ids().zip(graph.modules()) {
            if let Some(first) = module.path.split('/').next() {
                local.insert(first.trim_end_matches(".py").to_owned());
            }
            if module.language != repo_graph::Language::Python {
                continue;
            }
            let imports = module
                .imports
                .iter()
                .filter(|i| i.level == 0 && !i.in_try)
                .filter_map(|i| match &i.target {
                    repo_graph::ImportTarget::External(name) => {
                        name.split('.').next().map(str::to_owned)
                    }
                    _ => None,
                })
                .collect();
            let optional = module
                .imports
                .iter()
                .filter(|i| i.level == 0 && i.in_try)
                .filter_map(|i| match &i.target {
                    repo_graph::ImportTarget::External(name) => {
                        name.split('.').next().map(str::to_owned)
                    }
                    _ => None,
                })
                .collect();
            let names = module
                .imports
                .iter()
                .filter(|i| i.level == 0)
                .filter_map(|i| Some(format!("{}.{}", i.module, i.name.as_deref()?)))
                .collect();
            modules.push(ModuleFacts {
                path: &module.path,
                name: &module.name,
                source: graph.module_source(id).unwrap_or(""),
                imports,
                optional,
                names,
            });
        }
        CodeFacts { modules, local }
    }

    /// The requirements of the code: every third-party import, plus what
    /// its use of a framework needs without importing it (FastAPI's forms
    /// need `python-multipart`, `EmailStr` needs `email-validator`, the
    /// start script's `uvicorn`). `planned` is the blueprint's list;
    /// `extra` are import names the start script needs.
    pub fn requirements(&self, planned: &[String], extra: &[&str]) -> Requirements {
        let planned: BTreeSet<String> =
            planned.iter().filter_map(|p| requirement_name(p)).collect();
        let mut names: BTreeSet<String> = self
            .modules
            .iter()
            .flat_map(|m| m.imports.iter().cloned())
            .collect();
        names.extend(extra.iter().map(|e| (*e).to_owned()));
        // An import in a `try` block is often a hard requirement that only
        // prints "install it" when missing. Measured (RepoGenesis
        // StructuredDataConvertor, tuning half, run 2): `import pandas` in
        // a `try` left out, the service exited at start. A table entry is
        // known to install, so it is listed; an unknown optional import is
        // not (the block may be there because it is absent).
        names.extend(
            self.modules
                .iter()
                .flat_map(|m| m.optional.iter())
                .filter(|name| pin(name).is_some() || planned.contains(&normalized(name)))
                .cloned(),
        );
        let uses = |name: &str| {
            self.modules
                .iter()
                .any(|m| m.names.iter().any(|n| n == name))
        };
        // OAuth2's password form is a form too (RepoGenesis UserManagement
        // and UserManagement_2, run 3: both exited at start without it).
        let forms = [
            "fastapi.Form",
            "fastapi.File",
            "fastapi.UploadFile",
            "fastapi.security.OAuth2PasswordRequestForm",
            "fastapi.security.OAuth2PasswordRequestFormStrict",
        ];
        if forms.into_iter().any(uses) {
            names.insert("multipart".into());
        }
        if uses("pydantic.EmailStr") {
            names.insert("email_validator".into());
        }
        let mut lines = BTreeSet::new();
        let mut unknown = Vec::new();
        for name in &names {
            if crate::imports::is_stdlib(name) || self.local.contains(name) {
                continue;
            }
            if let Some((_, with)) = BUNDLED.iter().find(|(m, _)| m == name)
                && names.contains(*with)
            {
                continue;
            }
            match pin(name) {
                Some(line) => {
                    lines.insert(line);
                }
                None if planned.contains(&normalized(name)) => {
                    lines.insert(normalized(name));
                }
                None => unknown.push(name.clone()),
            }
        }
        Requirements {
            lines: lines.into_iter().collect(),
            unknown,
        }
    }

    /// The start script for the app the code defines, served on `port`;
    /// `None` when no app object or Django project is found.
    pub fn start_script(&self, port: u16) -> Option<StartScript> {
        if self.modules.iter().any(|m| m.path == "manage.py") {
            return Some(StartScript::new(
                "Django project (manage.py)",
                &format!(
                    "python3 manage.py migrate --noinput || exit 1\nexec python3 manage.py runserver 0.0.0.0:{port} --noreload"
                ),
                &["django"],
            ));
        }
        let mut apps: Vec<(&ModuleFacts, AppKind, String)> = Vec::new();
        for module in &self.modules {
            for (kind, object) in app_objects(module.source) {
                apps.push((module, kind, object));
            }
        }
        // The module whose `__main__` block runs the server on the right
        // port wins: it may set things up there first.
        for (module, kind, _) in &apps {
            if let Some(main_port) = main_block_port(module.source, *kind)
                && main_port == port
            {
                return Some(StartScript::new(
                    &format!(
                        "{} app in {}, run by its own __main__ block",
                        kind.label(),
                        module.path
                    ),
                    &format!("exec python3 {}", module.path),
                    kind.imports(),
                ));
            }
        }
        // Otherwise the framework's own runner; an app in a file named like
        // an entry point is preferred over one in a helper module.
        let (module, kind, object) = apps.iter().min_by_key(|(m, _, _)| {
            let stem = m.path.rsplit('/').next().unwrap_or(m.path);
            let entry = matches!(
                stem,
                "app.py" | "main.py" | "server.py" | "run.py" | "wsgi.py" | "asgi.py"
            );
            (!entry, m.path.matches('/').count(), m.path.to_owned())
        })?;
        let target = format!("{}:{object}", module.name);
        let command = match kind {
            AppKind::Flask => {
                format!("exec python3 -m flask --app {target} run --host 0.0.0.0 --port {port}")
            }
            AppKind::FastApi => {
                format!("exec python3 -m uvicorn {target} --host 0.0.0.0 --port {port}")
            }
        };
        let mut needs: Vec<&str> = kind.imports().to_vec();
        if *kind == AppKind::FastApi {
            needs.push("uvicorn");
        }
        Some(StartScript::new(
            &format!(
                "{} app `{target}`, started by the framework's runner",
                kind.label()
            ),
            &command,
            &needs,
        ))
    }
}

/// A web framework whose app object the code defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AppKind {
    Flask,
    FastApi,
}

impl AppKind {
    fn label(self) -> &'static str {
        match self {
            AppKind::Flask => "Flask",
            AppKind::FastApi => "FastAPI",
        }
    }

    fn imports(self) -> &'static [&'static str] {
        match self {
            AppKind::Flask => &["flask"],
            AppKind::FastApi => &["fastapi"],
        }
    }

    /// The port its server takes when none is given.
    fn default_port(self) -> u16 {
        match self {
            AppKind::Flask => 5000,
            AppKind::FastApi => 8000,
        }
    }
}

/// The app objects a module assigns at its top level (`app = Flask(__name__)`,
/// `api = fastapi.FastAPI()`), in source order.
fn app_objects(source: &str) -> Vec<(AppKind, String)> {
    let mut found = Vec::new();
    for line in source.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let Some((left, right)) = line.split_once('=') else {
            continue;
        };
        let name = left.trim().split(':').next().unwrap_or("").trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let call = right.trim_start();
        let kind = if call.starts_with("Flask(") || call.starts_with("flask.Flask(") {
            AppKind::Flask
        } else if call.starts_with("FastAPI(") || call.starts_with("fastapi.FastAPI(") {
            AppKind::FastApi
        } else {
            continue;
        };
        found.push((kind, name.to_owned()));
    }
    found
}

/// The port the module's `if __name__ == "__main__":` block serves on, when
/// that block starts a server (`app.run(...)`, `uvicorn.run(...)`): the
/// `port=` literal, or the framework's default when none is given.
fn main_block_port(source: &str, kind: AppKind) -> Option<u16> {
    let mut lines = source.lines();
    lines.find(|l| {
        let l = l.trim_end();
        !l.starts_with([' ', '\t'])
            && l.starts_with("if __name__")
            && l.contains("__main__")
            && l.ends_with(':')
    })?;
    let block: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.starts_with([' ', '\t']))
        .collect();
    let run = block.iter().find(|l| l.contains(".run("))?;
    // The call may span lines: read from `.run(` to the end of the block.
    let at = block.iter().position(|l| std::ptr::eq(*l, *run))?;
    let call = block[at..].join("\n");
    match call.find("port") {
        Some(i) => {
            let rest = call[i + 4..].trim_start().strip_prefix('=')?.trim_start();
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        }
        None => Some(kind.default_port()),
    }
}

/// A start script written from facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartScript {
    /// What it starts, in words (for the trajectory).
    pub how: String,
    /// The script's text.
    pub text: String,
    /// Import names the command needs installed.
    pub needs: Vec<&'static str>,
}

impl StartScript {
    fn new(how: &str, command: &str, needs: &[&'static str]) -> StartScript {
        StartScript {
            how: how.to_owned(),
            text: format!(
                "#!/bin/sh\n# Written by repo-agent: {how}.\ncd \"$(dirname \"$0\")\" || exit 1\n{command}\n"
            ),
            needs: needs.to_vec(),
        }
    }
}

/// The scaffold's steps of a run: writing `requirements.txt` and
/// `start.sh` from the facts, and the requirements again after a repair.
impl Run<'_> {
    /// Writes the scaffold files of `paths` that the written code's facts
    /// determine (see [`scaffold`]); returns those left to the model.
    pub(super) fn write_scaffold(
        &mut self,
        blueprint: &Blueprint,
        paths: &[String],
    ) -> Result<Vec<String>, Stop> {
        let started = Instant::now();
        let graph = self.analyze()?;
        let facts = CodeFacts::of(&graph);
        let mut left = Vec::new();
        let mut needs: Vec<&'static str> = Vec::new();
        let port = blueprint.service.as_ref().map(|s| s.port);
        if paths.iter().any(|p| p == "start.sh") {
            match port.and_then(|port| facts.start_script(port)) {
                Some(start) => {
                    self.write("start.sh", &start.text)?;
                    self.scaffold_step("start.sh", started, format!("from facts: {}", start.how))?;
                    self.written.push("start.sh".into());
                    needs = start.needs;
                }
                None => left.push("start.sh".to_owned()),
            }
        }
        if paths.iter().any(|p| p == "requirements.txt") {
            let requirements = facts.requirements(&blueprint.dependencies, &needs);
            self.write("requirements.txt", &requirements.text())?;
            let mut result = format!("from imports: {}", requirements.lines.join(", "));
            if !requirements.unknown.is_empty() {
                let _ = write!(
                    result,
                    "; left out (neither pinned nor planned): {}",
                    requirements.unknown.join(", ")
                );
            }
            self.scaffold_step("requirements.txt", started, result)?;
            self.written.push("requirements.txt".into());
        }
        for path in ["requirements.txt", "start.sh"] {
            if self.written.iter().any(|w| w == path) {
                self.memory
                    .insert(path.to_owned(), MemoryEntry::plain(path, blueprint));
            }
        }
        Ok(left)
    }

    /// After a repair: the requirements of the code as it now is, with the
    /// lines the repair added kept.
    pub(super) fn refresh_requirements(&mut self, blueprint: &Blueprint) -> Result<(), Stop> {
        if !self.written.iter().any(|w| w == "requirements.txt") {
            return Ok(());
        }
        let started = Instant::now();
        let existing = self.read_generated("requirements.txt");
        let graph = self.analyze()?;
        let facts = CodeFacts::of(&graph);
        let start = self.read_generated("start.sh");
        let needs: &[&str] = if start.contains("uvicorn") {
            &["uvicorn"]
        } else {
            &[]
        };
        let derived = facts
            .requirements(&blueprint.dependencies, needs)
            .merged(&existing);
        if derived.text() != existing {
            self.write("requirements.txt", &derived.text())?;
            self.scaffold_step(
                "requirements.txt",
                started,
                format!(
                    "after the repair, from imports: {}",
                    derived.lines.join(", ")
                ),
            )?;
        }
        Ok(())
    }

    /// After an install: the generated code's imports that no table
    /// pins and the blueprint does not plan, looked up on the registry
    /// under their own name in the installed environment
    /// ([`probe::look_up_unknown`]); those that install and import are
    /// pinned in `requirements.txt` (the environment already holds them).
    pub(super) async fn pin_unknown_imports(
        &mut self,
        blueprint: &Blueprint,
        graph: &repo_graph::RepoGraph,
        sandbox: &sandbox::Sandbox,
        env: &sandbox::PythonEnv,
    ) -> Result<(), Stop> {
        if !self.written.iter().any(|w| w == "requirements.txt") {
            return Ok(());
        }
        let start = self.read_generated("start.sh");
        let needs: &[&str] = if start.contains("uvicorn") {
            &["uvicorn"]
        } else {
            &[]
        };
        let unknown = CodeFacts::of(graph)
            .requirements(&blueprint.dependencies, needs)
            .unknown;
        let fresh: Vec<String> = unknown
            .into_iter()
            .filter(|name| self.looked_up.insert(name.clone()))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let lookups = probe::look_up_unknown(sandbox, env, &fresh, &[])
            .await
            .map_err(|e| Error::Task(format!("looking up unknown imports: {e}")))?;
        let found: Vec<&str> = lookups
            .iter()
            .filter_map(|l| l.requirement.as_deref())
            .collect();
        if !found.is_empty() {
            let mut text = self.read_generated("requirements.txt");
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            for line in &found {
                text.push_str(line);
                text.push('\n');
            }
            self.write("requirements.txt", &text)?;
            if let Some((_, installed)) = &mut self.env {
                *installed = text;
            }
        }
        let said: Vec<String> = lookups
            .iter()
            .map(|l| match &l.requirement {
                Some(line) => line.clone(),
                None => format!("{} not found ({})", l.import, l.reason),
            })
            .collect();
        self.scaffold_step(
            "requirements.txt",
            started,
            format!(
                "unknown imports looked up on the registry: {}",
                said.join("; ")
            ),
        )
    }

    pub(super) fn scaffold_step(
        &mut self,
        path: &str,
        started: Instant,
        result: String,
    ) -> Result<(), Stop> {
        self.say(&format!("[write] {path}: {result}"));
        let before = self.meter.summary();
        self.step(
            GeneratePhase::WriteFile,
            Some(path),
            &before,
            started,
            result,
            Vec::new(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_of(files: &[(&str, &str)]) -> (tempfile::TempDir, repo_graph::RepoGraph) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let graph = repo_graph::Analyzer::new(dir.path()).analyze().unwrap();
        (dir, graph)
    }

    #[test]
    fn requirements_come_from_third_party_imports_pinned() {
        let (_dir, graph) = facts_of(&[
            (
                "app.py",
                "import os, json\nfrom flask import Flask, jsonify\nimport jwt\nfrom models import User\nfrom .x import y\ntry:\n    import fastjsonx\n    import pandas\nexcept ImportError:\n    print('install them')\napp = Flask(__name__)\n",
            ),
            (
                "models.py",
                "from flask_sqlalchemy import SQLAlchemy\nimport stripe\nimport leftpad\n",
            ),
        ]);
        let facts = CodeFacts::of(&graph);
        let req = facts.requirements(&["Stripe>=5".into(), "sqlite3".into()], &[]);
        assert_eq!(
            req.lines,
            [
                "Flask-SQLAlchemy==3.1.1",
                "Flask==3.0.3",
                "PyJWT==2.9.0",
                "pandas==2.2.3",
                "stripe"
            ]
        );
        // Neither pinned nor planned: left out, named; an unknown import
        // in a `try` block is optional, left out silently.
        assert_eq!(req.unknown, ["leftpad"]);
        assert!(req.text().ends_with("stripe\n"));
    }

    #[test]
    fn fastapi_forms_and_email_fields_bring_what_they_need() {
        let (_dir, graph) = facts_of(&[(
            "main.py",
            "from fastapi import FastAPI, Form\nfrom starlette.responses import JSONResponse\nfrom pydantic import BaseModel, EmailStr\napp = FastAPI()\n",
        )]);
        let facts = CodeFacts::of(&graph);
        let start = facts.start_script(8000).unwrap();
        let req = facts.requirements(&[], &start.needs);
        assert_eq!(
            req.lines,
            [
                "email-validator==2.2.0",
                "fastapi==0.115.0",
                "pydantic==2.9.2",
                "python-multipart==0.0.12",
                "uvicorn==0.30.6"
            ]
        );
        // OAuth2's password form, imported from `fastapi.security`.
        let (_dir, graph) = facts_of(&[(
            "main.py",
            "from fastapi import FastAPI, Depends\nfrom fastapi.security import OAuth2PasswordRequestForm\napp = FastAPI()\n@app.post('/login')\ndef login(form: OAuth2PasswordRequestForm = Depends()):\n    return {}\n",
        )]);
        let req = CodeFacts::of(&graph).requirements(&[], &[]);
        assert!(
            req.lines.iter().any(|l| l == "python-multipart==0.0.12"),
            "{:?}",
            req.lines
        );
    }

    #[test]
    fn a_main_block_on_the_right_port_is_run_as_written() {
        let source = "from flask import Flask\napp = Flask(__name__)\n\nif __name__ == '__main__':\n    db.create_all()\n    app.run(host='0.0.0.0',\n            port=8082)\n";
        let (_dir, graph) = facts_of(&[("service/app.py", source)]);
        let facts = CodeFacts::of(&graph);
        let start = facts.start_script(8082).unwrap();
        assert!(
            start.text.contains("exec python3 service/app.py\n"),
            "{}",
            start.text
        );
        // On another port, the framework's runner serves the right one.
        let start = facts.start_script(9000).unwrap();
        assert!(
            start
                .text
                .contains("python3 -m flask --app service.app:app run --host 0.0.0.0 --port 9000"),
            "{}",
            start.text
        );
    }

    #[test]
    fn the_default_port_counts_and_entry_files_win() {
        let (_dir, graph) = facts_of(&[
            (
                "helpers.py",
                "from flask import Flask\ntest_app = Flask('t')\n",
            ),
            (
                "app.py",
                "import flask\nserver = flask.Flask(__name__)\nif __name__ == \"__main__\":\n    server.run(debug=False)\n",
            ),
        ]);
        let facts = CodeFacts::of(&graph);
        assert!(
            facts
                .start_script(5000)
                .unwrap()
                .text
                .contains("exec python3 app.py")
        );
        let other = facts.start_script(5001).unwrap();
        assert!(
            other.text.contains("--app app:server run"),
            "{}",
            other.text
        );
    }

    #[test]
    fn django_runs_migrations_then_the_server_and_no_app_means_no_script() {
        let (_dir, graph) = facts_of(&[
            ("manage.py", "import django\n"),
            ("site/settings.py", "DEBUG = False\n"),
        ]);
        let start = CodeFacts::of(&graph).start_script(8000).unwrap();
        assert!(start.text.contains("migrate --noinput"));
        assert!(start.text.contains("runserver 0.0.0.0:8000 --noreload"));
        let (_dir, graph) = facts_of(&[("tool.py", "print('hi')\n")]);
        assert_eq!(CodeFacts::of(&graph).start_script(8000), None);
    }

    #[test]
    fn a_repairs_own_lines_are_kept_and_stdlib_lines_dropped() {
        let derived = Requirements {
            lines: vec!["Flask==3.0.3".into()],
            unknown: Vec::new(),
        };
        let merged = derived.merged("flask>=2\nsqlite3\nstripe==5.0 # payments\n");
        assert_eq!(merged.lines, ["Flask==3.0.3", "stripe==5.0"]);
    }
}
