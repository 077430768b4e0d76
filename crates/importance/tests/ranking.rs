//! Rankings on fixture repositories whose expected order is obvious by
//! construction, and the Git feature on histories built inside the test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use importance::{Ranker, Ranking, Weights};
use repo_graph::Analyzer;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/python")
        .join(name)
}

fn rank(dir: &Path, ranker: Ranker) -> Ranking {
    ranker.rank(&Analyzer::new(dir).analyze().unwrap())
}

/// Scores rounded so snapshots do not depend on the last floating-point bits.
fn rounded(ranking: &Ranking) -> serde_json::Value {
    let mut value = serde_json::to_value(ranking).unwrap();
    fn round(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap();
                *v = serde_json::Value::from((x * 10_000.0).round() / 10_000.0);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(round),
            serde_json::Value::Object(map) => map.values_mut().for_each(round),
            _ => {}
        }
    }
    round(&mut value);
    value
}

#[test]
fn hub_module_and_its_class_rank_first() {
    // The fixture lives in this project's git history, which changes with
    // every commit: the git feature has its own test below.
    let ranking = rank(&fixture("ranking_hub"), Ranker::new().git(false));
    assert_eq!(ranking.modules[0].name, "registry");
    assert_eq!(ranking.classes[0].name, "registry.Registry");
    let registry = &ranking.modules[0].features;
    for other in &ranking.modules[1..] {
        assert!(registry.usage >= other.features.usage, "{}", other.name);
        assert!(
            registry.dependency > other.features.dependency,
            "{}",
            other.name
        );
    }
    let documented = ranking
        .modules
        .iter()
        .find(|m| m.name == "documented")
        .unwrap();
    assert!(
        ranking
            .modules
            .iter()
            .all(|m| m.features.doc <= documented.features.doc)
    );
    assert!(documented.features.doc > 0.7);
    let leaf = ranking.modules.iter().find(|m| m.name == "leaf").unwrap();
    assert_eq!(leaf.features.usage, 0.0);
    // The entry point is found by name and by its `if __name__ == "__main__"` call.
    let main = ranking
        .functions
        .iter()
        .find(|f| f.name == "main.main")
        .unwrap();
    assert!(main.entry_point);
    // Registry's methods are called 4 times each from the plugins.
    let registry_class = &ranking.classes[0];
    assert_eq!(registry_class.methods, 5);
    assert!(registry_class.calls >= 16);
    insta::assert_json_snapshot!("ranking_hub__paper", rounded(&ranking));
}

#[test]
fn published_weights_change_the_scores_not_the_facts() {
    let paper = rank(&fixture("ranking_hub"), Ranker::new());
    let published = rank(
        &fixture("ranking_hub"),
        Ranker::new().weights(Weights::published()),
    );
    let find =
        |r: &Ranking, name: &str| r.modules.iter().find(|m| m.name == name).cloned().unwrap();
    let (a, b) = (find(&paper, "documented"), find(&published, "documented"));
    assert_eq!(a.features, b.features);
    // Doc has weight 0 in the published preset.
    let expected = (3.0 * b.features.dependency
        + b.features.complexity
        + 2.0 * b.features.usage
        + 0.5 * b.features.semantic
        + 4.0 * b.features.git)
        .min(10.0);
    assert!((b.score - expected).abs() < 1e-9);
}

#[test]
fn ranking_is_deterministic() {
    let dir = fixture("relative_import_reexport");
    let first = rounded(&rank(&dir, Ranker::new().git(false)));
    for _ in 0..3 {
        assert_eq!(rounded(&rank(&dir, Ranker::new().git(false))), first);
    }
}

#[test]
fn weights_file_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.toml");
    std::fs::write(&path, "usage = 2\nspeed = 1\n").unwrap();
    let error = Weights::from_toml_file(&path).unwrap_err().to_string();
    assert!(error.contains("speed"), "{error}");
    std::fs::write(&path, "usage = -1.0\n").unwrap();
    assert!(Weights::from_toml_file(&path).is_err());
    assert!(Weights::from_name_or_file("published").is_ok());
    assert!(Weights::from_name_or_file("/no/such/file.toml").is_err());
}

/// Commits `files` (path → content) at `time` (seconds since the epoch).
fn commit(repo: &git2::Repository, files: &[(&str, String)], time: i64) {
    let workdir = repo.workdir().unwrap().to_path_buf();
    let mut index = repo.index().unwrap();
    for (path, content) in files {
        std::fs::write(workdir.join(path), content).unwrap();
        index.add_path(Path::new(path)).unwrap();
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let signature = git2::Signature::new("t", "t@example.com", &git2::Time::new(time, 0)).unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(
        Some("HEAD"),
        &signature,
        &signature,
        "change",
        &tree,
        &parents,
    )
    .unwrap();
}

#[test]
fn git_feature_counts_commits_and_recency() {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    let day = 86_400;
    // hot.py: 6 commits, the last one newest. cold.py: 1 old commit.
    // warm.py: 3 commits, last one in the middle.
    commit(
        &repo,
        &[
            ("cold.py", "def c(): pass\n".into()),
            ("hot.py", "x = 0\n".into()),
            ("warm.py", "w = 0\n".into()),
        ],
        1_000 * day,
    );
    for i in 1..=2 {
        commit(
            &repo,
            &[("warm.py", format!("w = {i}\n"))],
            (1_000 + i) * day,
        );
    }
    for i in 1..=5 {
        commit(
            &repo,
            &[("hot.py", format!("x = {i}\n"))],
            (1_010 + i) * day,
        );
    }
    let ranking = rank(dir.path(), Ranker::new());
    assert_eq!(ranking.commits_read, 8);
    let git = |name: &str| {
        ranking
            .modules
            .iter()
            .find(|m| m.name == name)
            .unwrap()
            .features
            .git
    };
    // hot: volume ln(7)/ln(7) = 1, recency 1.
    assert!((git("hot") - 1.0).abs() < 1e-9);
    // cold: volume ln(2)/ln(7), recency 0 (the oldest commit).
    assert!((git("cold") - 0.7 * 2f64.ln() / 7f64.ln()).abs() < 1e-9);
    // warm: volume ln(4)/ln(7), last commit at day 1002 of 1000..1015.
    let expected = 0.7 * 4f64.ln() / 7f64.ln() + 0.3 * (1.0 - 13.0 / 15.0);
    assert!((git("warm") - expected).abs() < 1e-9);

    // The bound on commits read is honoured: only the 2 newest commits.
    let bounded = rank(dir.path(), Ranker::new().max_commits(2));
    assert_eq!(bounded.commits_read, 2);
    let cold = bounded.modules.iter().find(|m| m.name == "cold").unwrap();
    assert_eq!(cold.features.git, 0.0);

    // Outside git, and with the feature off, it is 0.
    let off = rank(dir.path(), Ranker::new().git(false));
    assert!(off.modules.iter().all(|m| m.features.git == 0.0));
    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("m.py"), "x = 1\n").unwrap();
    let outside = rank(plain.path(), Ranker::new());
    assert_eq!(outside.commits_read, 0);
}

/// Java: role names and `main` feed Semantic, Javadoc feeds Doc, route
/// handlers are entry points and `public` decides the public-API flag.
#[test]
fn java_service_roles_routes_and_modifiers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/routes/spring_boot");
    let ranking = rank(&dir, Ranker::new().git(false));
    let module = |name: &str| {
        ranking
            .modules
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no module {name}"))
    };
    let function = |name: &str| {
        ranking
            .functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no function {name}"))
    };
    let controller = module("com.example.api.UserController.java");
    let store = module("com.example.api.UserStore.java");
    let application = module("com.example.Application.java");
    assert!(controller.features.semantic > store.features.semantic);
    assert!(application.features.semantic >= 0.7, "{application:?}");
    assert!(controller.features.doc > 0.0);

    let list = function("com.example.api.UserController.list");
    assert!(list.entry_point, "a route handler is an entry point");
    assert!(list.public);
    assert!(function("com.example.Application.main").entry_point);
    let store_all = function("com.example.api.UserStore.all");
    assert!(!store_all.entry_point);
}
