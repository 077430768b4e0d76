//! `repo-agent find` against a loopback server with recorded GitHub
//! answers, `--clone` from a `file://` repository, and `run` without
//! `--repo`, which finds and clones the repository itself.

mod common;

#[path = "../../find/tests/common/mod.rs"]
mod github;

use std::path::{Path, PathBuf};

use common::Fixture;
use common::cli::{completion, repo_agent, serve};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Commits every file under `dir` as a git repository.
fn commit_all(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let repo = git2::Repository::init(dir)?;
    let mut index = repo.index()?;
    index.add_all(["*"], git2::IndexAddOption::DEFAULT, None)?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let who = git2::Signature::now("test", "test@example.com")?;
    repo.commit(Some("HEAD"), &who, &who, "fixture", &tree, &[])?;
    Ok(())
}

/// A GitHub API whose search finds two repositories, the word-counting
/// fixture (cloned over `file://`) and an unrelated one, with READMEs.
fn github_api(clone_from: &Path) -> std::io::Result<(String, github::Seen)> {
    let clone_url = format!("file://{}", clone_from.display());
    github::serve(move |path, _| {
        if path.starts_with("/search/repositories") {
            let body = json!({"total_count": 2, "items": [
                {"full_name": "acme/wordcount", "html_url": "https://github.com/acme/wordcount",
                 "clone_url": clone_url, "description": "Count the words of a text file",
                 "stargazers_count": 12, "language": "Python",
                 "license": {"spdx_id": "MIT"}, "pushed_at": "2026-11-01T00:00:00Z",
                 "topics": ["words"]},
                {"full_name": "other/images", "html_url": "https://github.com/other/images",
                 "clone_url": "https://github.com/other/images.git",
                 "description": "Resize images", "stargazers_count": 9000,
                 "language": "Python", "license": null, "pushed_at": "2020-01-01T00:00:00Z"}
            ]});
            return (200, vec![], body.to_string().into_bytes());
        }
        if path == "/repos/acme/wordcount/readme" {
            return (
                200,
                vec![],
                b"# wordcount\n\nCount the words of a file.\n".to_vec(),
            );
        }
        (404, vec![], b"{\"message\":\"Not Found\"}".to_vec())
    })
}

fn home(fx: &Fixture) -> PathBuf {
    fx.dir.path().join("home")
}

#[test]
fn find_prints_the_ranked_candidates_and_clones_the_best() -> TestResult {
    let fx = Fixture::new()?;
    commit_all(&fx.repo())?;
    let (api, _) = github_api(&fx.repo())?;
    let output = repo_agent()
        .env("REPO_AGENT_HOME", home(&fx))
        .env("REPO_AGENT_GITHUB_API", &api)
        .env_remove("GITHUB_TOKEN")
        .args([
            "find",
            "count the words of a text file",
            "--json",
            "--clone",
        ])
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let candidates: Vec<Value> = serde_json::from_slice(&output.stdout)?;
    assert_eq!(
        candidates[0]["repo_name"], "acme/wordcount",
        "{candidates:?}"
    );
    assert_eq!(candidates.len(), 2);
    assert!(
        candidates[0]["score"]["relevance"].as_f64() > candidates[1]["score"]["relevance"].as_f64()
    );
    let clone = home(&fx).join("repos/acme/wordcount");
    assert!(clone.join(".git").is_dir(), "{stderr}");
    assert!(stderr.contains("next: repo-agent run --repo"), "{stderr}");

    // The table form.
    let table = repo_agent()
        .env("REPO_AGENT_HOME", home(&fx))
        .env("REPO_AGENT_GITHUB_API", &api)
        .args(["find", "count the words of a text file", "--top", "1"])
        .output()?;
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("acme/wordcount") && !text.contains("other/images"),
        "{text}"
    );
    Ok(())
}

#[test]
fn run_without_a_repository_finds_and_clones_one_then_works_in_it() -> TestResult {
    let fx = Fixture::new()?;
    commit_all(&fx.repo())?;
    let (api, _) = github_api(&fx.repo())?;
    // Enough answers for whatever the run asks (a finish without outputs
    // is questioned), so no request waits for an answer never coming.
    let finish = |id: &str| completion(id, "finish", json!({"summary": "done"}), 100);
    let (model, bodies) = serve(vec![finish("c1"), finish("c2"), finish("c3"), finish("c4")])?;
    let output = repo_agent()
        .env("REPO_AGENT_HOME", home(&fx))
        .env("REPO_AGENT_GITHUB_API", &api)
        .args(["run", "--task", "Count the words.", "--output-dir"])
        .arg(fx.out())
        .args(["--base-url", &model, "--model", "test-model", "--json"])
        .args(["--isolation", "process"])
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no --repo: using acme/wordcount"),
        "{stderr}"
    );
    let clone = home(&fx).join("repos/acme/wordcount");
    assert!(clone.join(".git").is_dir(), "{stderr}");
    // The model was shown the clone.
    let first = bodies
        .lock()
        .map_err(|_| "poisoned")?
        .first()
        .cloned()
        .ok_or("no request")?;
    assert!(first.to_string().contains("wordcount"), "{stderr}");
    Ok(())
}
