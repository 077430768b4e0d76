//! Dotted module names derived from the directory layout.
//!
//! A file inside a package (a directory with `__init__.py`) is named from the
//! outermost package of its chain, as Python would import it: in
//! `tests/app/models.py` with `tests/app/__init__.py` but no
//! `tests/__init__.py`, the name is `app.models`. A file outside any package
//! (a script, a namespace package, a `src/` layout) is named by its path
//! relative to the analysed root, with a leading `src/` dropped. Every module
//! also answers to its path-derived name, so imports written either way
//! resolve. Names are made unique: on a collision the later file (in path
//! order) takes its path-derived name, then a `@ext` suffix.
//!
//! A Java compilation unit is named by the package it declares (not its
//! directory) and its file name: `com/example/App.java` with
//! `package com.example;` is `com.example.App.java`, which cannot collide
//! with its primary type `com.example.App`. Because the package is only
//! known after parsing, Java names are given after the Python ones; a
//! second file with the same package and file name (another Maven module)
//! becomes `com.example.App.java@2`, and its types `com.example.App@2`.

use std::collections::{HashMap, HashSet};

use crate::model::{Language, SourceKind};
use crate::walk::SourceFile;

#[derive(Debug, Clone)]
pub(crate) struct ModuleName {
    /// The unique primary name.
    pub name: String,
    /// Another name the module can be imported by, if it differs.
    pub alias: Option<String>,
    pub is_package: bool,
    /// Java: the `k` of a `@k` suffix given to a duplicate compilation unit,
    /// which its top-level types carry too (0 when the name is unique).
    pub duplicate: u32,
}

fn split(rel_path: &str) -> (Vec<&str>, &str) {
    let mut parts: Vec<&str> = rel_path.split('/').collect();
    let file = parts.pop().unwrap_or("");
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    (parts, stem)
}

/// Names of the Python modules among `files`, aligned with `files`; `None`
/// for Java files, which [`java_module_names`] names after parsing.
pub(crate) fn module_names(files: &[SourceFile]) -> Vec<Option<ModuleName>> {
    let packages: HashSet<&str> = files
        .iter()
        .filter(|f| matches!(f.kind, SourceKind::Python | SourceKind::Stub))
        .filter_map(|f| {
            let (dir, stem) = f.rel_path.rsplit_once('/').unwrap_or(("", &f.rel_path));
            let is_init = stem == "__init__.py" || stem == "__init__.pyi";
            (is_init && !dir.is_empty()).then_some(dir)
        })
        .collect();
    let mut taken: HashMap<String, usize> = HashMap::with_capacity(files.len() * 2);
    let mut names = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        if file.kind.language() != Language::Python {
            names.push(None);
            continue;
        }
        let (dirs, stem) = split(&file.rel_path);
        let is_package = stem == "__init__" && file.kind != SourceKind::Notebook;
        // Outermost directory of the package chain ending at the file's directory.
        let mut top = dirs.len();
        while top > 0 && packages.contains(dirs[..top].join("/").as_str()) {
            top -= 1;
        }
        let mut path_parts: Vec<&str> = dirs.clone();
        if path_parts.first() == Some(&"src") && !packages.contains("src") {
            path_parts.remove(0);
        }
        if !is_package {
            path_parts.push(stem);
        }
        let path_name = path_parts.join(".");
        let package_name = if top < dirs.len() {
            let mut parts: Vec<&str> = dirs[top..].to_vec();
            if !is_package {
                parts.push(stem);
            }
            Some(parts.join("."))
        } else {
            None
        };
        let mut candidates: Vec<String> = Vec::with_capacity(3);
        candidates.extend(package_name);
        candidates.push(if path_name.is_empty() {
            // A root-level __init__.py: the analysed directory is itself a package.
            "__init__".to_string()
        } else {
            path_name
        });
        let ext = file.rel_path.rsplit_once('.').map_or("", |(_, e)| e);
        let suffixed = format!("{}@{ext}", candidates[candidates.len() - 1]);
        candidates.push(suffixed);
        let mut chosen = None;
        for candidate in &candidates {
            if !taken.contains_key(candidate) {
                chosen = Some(candidate.clone());
                break;
            }
        }
        let name = chosen.unwrap_or_else(|| format!("{}#{index}", candidates[0]));
        taken.insert(name.clone(), index);
        let alias = candidates
            .iter()
            .take(2)
            .find(|c| **c != name && !taken.contains_key(*c))
            .cloned();
        names.push(Some(ModuleName {
            name,
            alias,
            is_package,
            duplicate: 0,
        }));
    }
    names
}

/// Names Java compilation units, given as (relative path, declared
/// package) in path order, avoiding every name in `taken` (and adding theirs).
pub(crate) fn java_module_names<'a>(
    units: impl Iterator<Item = (&'a str, Option<&'a str>)>,
    taken: &mut HashSet<String>,
) -> Vec<ModuleName> {
    units
        .map(|(rel_path, package)| {
            let file = rel_path.rsplit('/').next().unwrap_or(rel_path);
            let base = match package {
                Some(p) if !p.is_empty() => format!("{p}.{file}"),
                _ => file.to_string(),
            };
            let mut duplicate = 0u32;
            let mut name = base.clone();
            while taken.contains(&name) {
                duplicate = if duplicate == 0 { 2 } else { duplicate + 1 };
                name = format!("{base}@{duplicate}");
            }
            taken.insert(name.clone());
            ModuleName {
                name,
                alias: None,
                is_package: false,
                duplicate,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn names(paths: &[&str]) -> Vec<(String, Option<String>)> {
        let files: Vec<SourceFile> = paths
            .iter()
            .map(|p| SourceFile {
                rel_path: p.to_string(),
                abs_path: PathBuf::from(p),
                kind: if p.ends_with(".ipynb") {
                    SourceKind::Notebook
                } else if p.ends_with(".pyi") {
                    SourceKind::Stub
                } else {
                    SourceKind::Python
                },
                seen: Default::default(),
            })
            .collect();
        module_names(&files)
            .into_iter()
            .flatten()
            .map(|n| (n.name, n.alias))
            .collect()
    }

    #[test]
    fn layouts() {
        let got = names(&[
            "main.py",
            "pkg/__init__.py",
            "pkg/core.py",
            "pkg/core.pyi",
            "pkg/data/helpers.py",
            "scripts/run.py",
            "src/lib/__init__.py",
            "src/lib/x.py",
            "tests/app/__init__.py",
            "tests/app/models.py",
            "nb/explore.ipynb",
        ]);
        let primary: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            primary,
            [
                "main",
                "pkg",
                "pkg.core",
                "pkg.core@pyi",
                "pkg.data.helpers",
                "scripts.run",
                "lib",
                "lib.x",
                "app",
                "app.models",
                "nb.explore"
            ]
        );
        assert_eq!(got[9].1.as_deref(), Some("tests.app.models"));
    }

    #[test]
    fn java_units_by_package_and_file() {
        let mut taken: HashSet<String> = ["main".to_string()].into_iter().collect();
        let got: Vec<(String, u32)> = java_module_names(
            [
                ("a/src/main/java/com/x/App.java", Some("com.x")),
                ("b/src/main/java/com/x/App.java", Some("com.x")),
                ("Tool.java", None),
                ("weird/dir/Lib.java", Some("org.lib")),
            ]
            .into_iter(),
            &mut taken,
        )
        .into_iter()
        .map(|n| (n.name, n.duplicate))
        .collect();
        assert_eq!(
            got,
            [
                ("com.x.App.java".to_string(), 0),
                ("com.x.App.java@2".to_string(), 2),
                ("Tool.java".to_string(), 0),
                ("org.lib.Lib.java".to_string(), 0),
            ]
        );
    }
}
