//! Where a command's result goes: stdout or a file, plus the progress bar.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Writes `text` to `path`, or to stdout when `path` is `None`.
pub fn emit(text: &str, path: Option<&Path>) -> anyhow::Result<()> {
    match path {
        Some(path) => std::fs::write(path, text).with_context(|| {
            format!(
                "cannot write {}; check the directory exists and is writable",
                path.display()
            )
        }),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                // A closed pipe (`| head`) is not an error worth reporting.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to stdout"),
            }
        }
    }
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress_bar(message: &'static str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} files ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}
