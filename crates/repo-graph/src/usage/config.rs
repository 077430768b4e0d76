//! The packaging files that are not Python: `pyproject.toml` (PEP 621
//! `[project]`, Poetry, Flit) and `setup.cfg`, at the root and in its
//! direct subdirectories (monorepos). Each is read with a size limit, and
//! a file that is too large or does not parse is recorded, never fatal.

use std::path::Path;

use super::{
    ConfigSkip, ConfigSkipReason, Distribution, EntryPointKind, EntryPointSource, MAX_CONFIG_BYTES,
};
use crate::lang::python::usage_facts::MAX_ENTRY_POINTS;

/// Directory entries of the root examined for subprojects.
const MAX_ROOT_ENTRIES: usize = 1024;
/// Subdirectories read as subprojects.
const MAX_SUBPROJECTS: usize = 64;
/// Longest parser message kept.
const MAX_DETAIL: usize = 200;

/// A console or GUI script before resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawEntryPoint {
    pub name: String,
    pub kind: EntryPointKind,
    pub source: EntryPointSource,
    pub file: String,
    pub module: String,
    pub function: Option<String>,
}

/// What the packaging files declare.
#[derive(Debug, Default)]
pub(crate) struct Configs {
    pub distributions: Vec<Distribution>,
    pub entry_points: Vec<RawEntryPoint>,
    pub skipped: Vec<ConfigSkip>,
}

/// The directories that may hold packaging files, relative to `root`:
/// the root itself (`""`), then its subdirectories that hold one, by name.
pub(crate) fn project_dirs(root: &Path) -> Vec<String> {
    let mut dirs = vec![String::new()];
    let Ok(entries) = std::fs::read_dir(root) else {
        return dirs;
    };
    let mut subdirs: Vec<String> = entries
        .take(MAX_ROOT_ENTRIES)
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.') && !repo_files::is_tool_directory(root, name))
        .filter(|name| {
            ["pyproject.toml", "setup.cfg", "setup.py"]
                .iter()
                .any(|f| root.join(name).join(f).is_file())
        })
        .collect();
    subdirs.sort();
    subdirs.truncate(MAX_SUBPROJECTS);
    dirs.extend(subdirs);
    dirs
}

/// Reads `pyproject.toml` and `setup.cfg` in each of `dirs`.
pub(crate) fn read(root: &Path, dirs: &[String]) -> Configs {
    let mut out = Configs::default();
    for dir in dirs {
        for (file, parse) in [
            (
                "pyproject.toml",
                pyproject as fn(&str, &str, &mut Configs) -> Result<(), String>,
            ),
            ("setup.cfg", setup_cfg),
        ] {
            let rel = if dir.is_empty() {
                file.to_string()
            } else {
                format!("{dir}/{file}")
            };
            match read_config(root, &rel) {
                Ok(Some(text)) => {
                    if let Err(message) = parse(&text, &rel, &mut out) {
                        out.skipped.push(ConfigSkip {
                            path: rel,
                            reason: ConfigSkipReason::Invalid,
                            detail: Some(message),
                        });
                    }
                }
                Ok(None) => {}
                Err(reason) => out.skipped.push(ConfigSkip {
                    path: rel,
                    reason,
                    detail: None,
                }),
            }
        }
    }
    out
}

/// The text of a packaging file; `Ok(None)` when there is none. Read as
/// every repository file is ([`repo_files::read_in_tree`]): a link out of the
/// repository, a named pipe or a device by that name is unreadable, and
/// nothing waits on it.
fn read_config(root: &Path, rel: &str) -> Result<Option<String>, ConfigSkipReason> {
    use repo_files::TreeFileError;
    match repo_files::read_in_tree(root, Path::new(rel), MAX_CONFIG_BYTES) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ConfigSkipReason::NotUtf8),
        Err(TreeFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(TreeFileError::TooLarge { .. }) => Err(ConfigSkipReason::TooLarge),
        Err(error) => {
            tracing::debug!(%error, "packaging file not read");
            Err(ConfigSkipReason::Unreadable)
        }
    }
}

fn pyproject(text: &str, file: &str, out: &mut Configs) -> Result<(), String> {
    let table: toml::Table = toml::from_str(text).map_err(|e| {
        let message = e.message().lines().next().unwrap_or("").to_string();
        crate::text::truncate(&message, MAX_DETAIL)
    })?;
    let mut added = 0usize;
    let mut push = |out: &mut Configs, name: &str, reference: &str, kind, source| {
        if added >= MAX_ENTRY_POINTS {
            return;
        }
        if let Some(entry) = entry_point(name, reference, kind, source, file) {
            out.entry_points.push(entry);
            added += 1;
        }
    };
    let project = table.get("project").and_then(toml::Value::as_table);
    let tool = table.get("tool").and_then(toml::Value::as_table);
    let poetry = tool
        .and_then(|t| t.get("poetry"))
        .and_then(toml::Value::as_table);
    let flit = tool
        .and_then(|t| t.get("flit"))
        .and_then(toml::Value::as_table);
    for name in [project, poetry]
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name")?.as_str())
        .take(1)
    {
        out.distributions.push(Distribution {
            name: crate::text::truncate(name, MAX_DETAIL),
            file: file.to_string(),
        });
    }
    if let Some(project) = project {
        for (key, kind) in [
            ("scripts", EntryPointKind::Console),
            ("gui-scripts", EntryPointKind::Gui),
        ] {
            let Some(scripts) = project.get(key).and_then(toml::Value::as_table) else {
                continue;
            };
            for (name, reference) in scripts {
                if let Some(reference) = reference.as_str() {
                    push(out, name, reference, kind, EntryPointSource::Pyproject);
                }
            }
        }
    }
    if let Some(scripts) = poetry
        .and_then(|p| p.get("scripts"))
        .and_then(toml::Value::as_table)
    {
        for (name, value) in scripts {
            // `name = "mod:func"`, or `{ callable = "mod:func" }`; a
            // `{ reference = "bin/x", type = "file" }` script is not Python.
            let reference = match value {
                toml::Value::String(s) => Some(s.as_str()),
                toml::Value::Table(t) if t.get("type").and_then(|v| v.as_str()) != Some("file") => {
                    t.get("callable")
                        .or_else(|| t.get("reference"))
                        .and_then(toml::Value::as_str)
                }
                _ => None,
            };
            if let Some(reference) = reference {
                push(
                    out,
                    name,
                    reference,
                    EntryPointKind::Console,
                    EntryPointSource::Poetry,
                );
            }
        }
    }
    if let Some(scripts) = flit
        .and_then(|f| f.get("scripts"))
        .and_then(toml::Value::as_table)
    {
        for (name, reference) in scripts {
            if let Some(reference) = reference.as_str() {
                push(
                    out,
                    name,
                    reference,
                    EntryPointKind::Console,
                    EntryPointSource::Flit,
                );
            }
        }
    }
    Ok(())
}

/// `setup.cfg`: `[metadata] name` and the `console_scripts` and
/// `gui_scripts` of `[options.entry_points]`, as configparser reads them
/// (a key's value continues on the indented lines after it).
fn setup_cfg(text: &str, file: &str, out: &mut Configs) -> Result<(), String> {
    let mut section = String::new();
    let mut group: Option<EntryPointKind> = None;
    let mut added = 0usize;
    let mut push = |out: &mut Configs, line: &str, kind| {
        if added >= MAX_ENTRY_POINTS {
            return;
        }
        if let Some((name, reference)) = line.split_once('=')
            && let Some(entry) =
                entry_point(name, reference, kind, EntryPointSource::SetupCfg, file)
        {
            out.entry_points.push(entry);
            added += 1;
        }
    };
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']'))
            && !line.starts_with(char::is_whitespace)
        {
            section = name.trim().to_lowercase();
            group = None;
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(kind) = group {
                push(out, trimmed, kind);
            }
            continue;
        }
        group = None;
        let Some(at) = trimmed.find(['=', ':']) else {
            continue;
        };
        let (key, value) = (
            trimmed[..at].trim().to_lowercase(),
            trimmed[at + 1..].trim(),
        );
        match (section.as_str(), key.as_str()) {
            ("metadata", "name") if !value.is_empty() => out.distributions.push(Distribution {
                name: crate::text::truncate(value, MAX_DETAIL),
                file: file.to_string(),
            }),
            ("options.entry_points", "console_scripts" | "gui_scripts") => {
                let kind = if key == "console_scripts" {
                    EntryPointKind::Console
                } else {
                    EntryPointKind::Gui
                };
                group = Some(kind);
                if !value.is_empty() {
                    push(out, value, kind);
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `name` and `module.sub:attr.path [extras]`, when both are well formed.
pub(crate) fn entry_point(
    name: &str,
    reference: &str,
    kind: EntryPointKind,
    source: EntryPointSource,
    file: &str,
) -> Option<RawEntryPoint> {
    let name = name.trim().trim_matches(|c| c == '"' || c == '\'');
    let (module, function) = parse_reference(reference)?;
    if name.is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return None;
    }
    Some(RawEntryPoint {
        name: name.to_string(),
        kind,
        source,
        file: file.to_string(),
        module,
        function,
    })
}

/// `module.sub:attr.path [extra1, extra2]` as the module and the attribute path.
pub(crate) fn parse_reference(reference: &str) -> Option<(String, Option<String>)> {
    let reference = reference.split('[').next().unwrap_or("").trim();
    let (module, function) = match reference.split_once(':') {
        Some((m, f)) => (m.trim(), Some(f.trim())),
        None => (reference, None),
    };
    let dotted = |s: &str| {
        !s.is_empty() && s.len() <= 300 && s.split('.').all(crate::lang::python::is_identifier)
    };
    if !dotted(module) || function.is_some_and(|f| !dotted(f)) {
        return None;
    }
    Some((module.to_string(), function.map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_with_extras_and_attributes() {
        assert_eq!(
            parse_reference("pkg.cli:Main.run [color, fast]"),
            Some(("pkg.cli".into(), Some("Main.run".into())))
        );
        assert_eq!(parse_reference("pkg.cli"), Some(("pkg.cli".into(), None)));
        assert_eq!(parse_reference("pkg cli:main"), None);
        assert_eq!(parse_reference(":main"), None);
    }

    #[test]
    fn setup_cfg_continuation_lines() {
        let mut out = Configs::default();
        let text = "[metadata]\nname = demo\n\n[options.entry_points]\nconsole_scripts =\n    demo = demo.cli:main\n    demo-gui = demo.gui:run\n# comment\ngui_scripts = viewer = demo.gui:view\nother =\n    x = y:z\n";
        setup_cfg(text, "setup.cfg", &mut out).unwrap();
        assert_eq!(out.distributions[0].name, "demo");
        let names: Vec<(&str, EntryPointKind)> = out
            .entry_points
            .iter()
            .map(|e| (e.name.as_str(), e.kind))
            .collect();
        assert_eq!(
            names,
            [
                ("demo", EntryPointKind::Console),
                ("demo-gui", EntryPointKind::Console),
                ("viewer", EntryPointKind::Gui)
            ]
        );
    }

    #[test]
    fn poetry_and_flit_scripts() {
        let mut out = Configs::default();
        let text = "[tool.poetry]\nname = \"p\"\n[tool.poetry.scripts]\na = \"p.cli:main\"\nb = { callable = \"p.cli:other\" }\nc = { reference = \"bin/c\", type = \"file\" }\n[tool.flit.scripts]\nd = \"p:run\"\n";
        pyproject(text, "pyproject.toml", &mut out).unwrap();
        let names: Vec<&str> = out.entry_points.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "d"]);
        assert_eq!(out.distributions[0].name, "p");
    }
}
