//! A hostile repository's README and files: links out of the tree, named
//! pipes and terabyte files are never read into the context; the context
//! says, in one line each, why they are not shown.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use context_pack::{BlockKind, ContextBuilder, RepoContext};
use importance::Ranker;
use repo_graph::Analyzer;

const OUTSIDE_SECRET: &str = "OUTSIDE-SECRET-7c4a8d09ca3762af61e5";

/// A small package; the README and the rest are up to each test.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("webtext")).unwrap();
    std::fs::write(
        dir.path().join("webtext/core.py"),
        "\"\"\"The extractor.\"\"\"\n\n\ndef extract(html):\n    \"\"\"The main text of an HTML page.\"\"\"\n    return html\n",
    )
    .unwrap();
    dir
}

/// A file outside every repository, holding a secret.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("secret.md"),
        format!("# Keys\n\n{OUTSIDE_SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("setup.cfg"),
        format!("[metadata]\nname = {OUTSIDE_SECRET}\n"),
    )
    .unwrap();
    dir
}

/// The context of `root`, built on another thread and waited for at most
/// a minute: a read that blocks (a pipe opened for reading) fails the test
/// instead of hanging it.
fn context(root: &Path) -> RepoContext {
    let root = root.to_path_buf();
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let graph = Analyzer::new(&root).analyze().unwrap();
        let ranking = Ranker::new().git(false).rank(&graph);
        let built = ContextBuilder::new(&graph, &ranking)
            .budget(2_000)
            .build()
            .unwrap();
        let _ = send.send(built);
    });
    let context = receive
        .recv_timeout(Duration::from_secs(60))
        .expect("the context was not built within a minute: a read blocked");
    assert!(context.total_tokens <= 2_000);
    assert!(!context.render_markdown().contains(OUTSIDE_SECRET));
    context
}

fn block(context: &RepoContext, kind: BlockKind) -> String {
    context
        .blocks
        .iter()
        .find(|b| b.kind == kind)
        .map(|b| b.text.clone())
        .unwrap_or_default()
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

#[test]
fn a_readme_linked_out_of_the_repository_is_named_not_read() {
    let dir = repo();
    let out = outside();
    std::os::unix::fs::symlink(out.path().join("secret.md"), dir.path().join("README.md")).unwrap();
    insta::assert_snapshot!(block(&context(dir.path()), BlockKind::Readme));
}

#[test]
fn a_readme_linked_to_the_process_environment_is_named_not_read() {
    let dir = repo();
    std::os::unix::fs::symlink("/proc/self/environ", dir.path().join("README.md")).unwrap();
    let readme = block(&context(dir.path()), BlockKind::Readme);
    assert_eq!(
        readme,
        "## README\n\nREADME.md not shown: it is a symbolic link out of the repository."
    );
}

#[test]
fn a_readme_that_is_a_named_pipe_is_named_not_waited_on() {
    let dir = repo();
    mkfifo(&dir.path().join("README.md"));
    insta::assert_snapshot!(block(&context(dir.path()), BlockKind::Readme));
}

#[test]
fn a_refused_readme_gives_way_to_the_next_one() {
    let dir = repo();
    let out = outside();
    std::os::unix::fs::symlink(out.path().join("secret.md"), dir.path().join("README.md")).unwrap();
    std::fs::write(
        dir.path().join("README.rst"),
        "Webtext\n=======\n\nExtracts the main text of web pages.\n",
    )
    .unwrap();
    insta::assert_snapshot!(block(&context(dir.path()), BlockKind::Readme));
}

#[test]
fn a_sparse_terabyte_readme_is_named_as_binary_after_a_bounded_read() {
    let dir = repo();
    let file = std::fs::File::create(dir.path().join("README.md")).unwrap();
    file.set_len(1 << 40).unwrap();
    drop(file);
    assert_eq!(
        block(&context(dir.path()), BlockKind::Readme),
        "## README\n\nREADME.md not shown: it is a binary file (1099511627776 bytes)."
    );
}

#[test]
fn files_the_analysis_refused_are_listed_with_why() {
    let dir = repo();
    let out = outside();
    std::os::unix::fs::symlink(out.path().join("setup.cfg"), dir.path().join("setup.cfg")).unwrap();
    std::os::unix::fs::symlink(
        out.path().join("secret.md"),
        dir.path().join("webtext/notes.py"),
    )
    .unwrap();
    let notebook = std::fs::File::create(dir.path().join("analysis.ipynb")).unwrap();
    notebook.set_len(1 << 40).unwrap();
    drop(notebook);
    std::fs::write(
        dir.path().join("README.md"),
        "# Webtext\n\nExtracts text.\n",
    )
    .unwrap();
    let context = context(dir.path());
    insta::assert_snapshot!(block(&context, BlockKind::Unread));
    // Nothing refused, no block.
    let plain = repo();
    assert_eq!(block(&self::context(plain.path()), BlockKind::Unread), "");
}
