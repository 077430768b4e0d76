//! RepoMaster's first step: find the repository for a task. Search
//! GitHub's REST API for candidates, read each one's README, rank them
//! (the task's words in the name, description, topics and README; stars;
//! recency; language; licence; and, when a model is given, its judgement
//! of the README against the task), and clone the chosen one with git2,
//! shallow and size-capped.
//!
//! ```no_run
//! # async fn find() -> Result<(), repo_find::Error> {
//! let finder = repo_find::Finder::builder()
//!     .token(std::env::var("GITHUB_TOKEN").ok())
//!     .build()?;
//! let ranked = finder.find("extract the text of a PDF file", Some("python")).await?;
//! for candidate in ranked.iter().take(5) {
//!     println!("{} {:.2}", candidate.repo.full_name, candidate.score.total);
//! }
//! # Ok(()) }
//! ```
//!
//! Everything that comes from the network is hostile: responses and
//! READMEs are size-capped, malformed JSON is an error naming the request,
//! rate limits are waited out by the model client's retry rule
//! ([`llm::RetryPolicy`]) or reported with what to do.

#![deny(missing_docs)]

mod clone;
mod github;
mod rank;
mod transport;

pub use clone::{CloneOptions, Cloned, clone};
pub use github::{Finder, FinderBuilder, GITHUB_API, Repository};
pub use rank::{Ranked, Score, keywords, rank};

/// What went wrong finding or cloning a repository.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The task has no word to search for.
    #[error("the task has no word to search GitHub for: describe it in a few words")]
    NoKeywords,
    /// The HTTP client could not be set up.
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
    /// The API's rate limit is spent and resets later than the retry
    /// policy waits.
    #[error(
        "GitHub's rate limit is spent{}: set GITHUB_TOKEN for a higher limit, or wait",
        reset.map(|s| format!(" (it resets in {s} s)")).unwrap_or_default()
    )]
    RateLimited {
        /// Seconds until the limit resets, when the server said.
        reset: Option<u64>,
    },
    /// The API answered with an error status.
    #[error("{url} answered HTTP {status}: {message}")]
    Http {
        /// The request.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the body.
        message: String,
    },
    /// The request did not complete (connection, timeout).
    #[error(
        "cannot reach {url} ({attempts} {}): {message}; check the network or --api-base",
        if *attempts == 1 { "try" } else { "tries" }
    )]
    Network {
        /// The request.
        url: String,
        /// What failed, the last time.
        message: String,
        /// How many times it was tried.
        attempts: u32,
    },
    /// The response was not what the API documents.
    #[error("{url} answered something that is not a search result: {message}")]
    Malformed {
        /// The request.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// A clone URL this crate refuses.
    #[error("cannot clone {url}: {why}")]
    UnsupportedUrl {
        /// The URL.
        url: String,
        /// Why.
        why: String,
    },
    /// The clone grew past its size cap; nothing was kept.
    #[error(
        "the clone was stopped at {received} bytes: larger than the {limit}-byte cap \
         (raise --max-clone-mb to allow it)"
    )]
    CloneTooLarge {
        /// The cap, in bytes.
        limit: u64,
        /// Bytes received when it stopped.
        received: u64,
    },
    /// The clone's files are more or larger than the caps; nothing was
    /// checked out or kept.
    #[error(
        "the repository's files ({files} files, {bytes} bytes) are more than the caps \
         ({max_files} files, {max_bytes} bytes); nothing was kept (raise --max-checkout-mb \
         to allow it)"
    )]
    CheckoutTooLarge {
        /// Files counted when the count stopped (past a cap, it stops).
        files: u64,
        /// Bytes counted when the count stopped.
        bytes: u64,
        /// The cap on files.
        max_files: u64,
        /// The cap on bytes.
        max_bytes: u64,
    },
    /// git failed.
    #[error("cannot clone {url}: {message}")]
    Clone {
        /// The URL.
        url: String,
        /// git's message.
        message: String,
    },
    /// A file-system error around the clone.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}
