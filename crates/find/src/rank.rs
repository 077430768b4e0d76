//! Ranking candidates for a task: a transparent score with its parts.

use serde::Serialize;

use crate::github::Repository;

/// Words of a task that carry no meaning for a search.
const STOP_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "by",
    "can",
    "do",
    "for",
    "from",
    "given",
    "how",
    "i",
    "in",
    "into",
    "is",
    "it",
    "its",
    "me",
    "my",
    "of",
    "on",
    "or",
    "please",
    "so",
    "some",
    "that",
    "the",
    "their",
    "them",
    "then",
    "these",
    "this",
    "to",
    "use",
    "using",
    "want",
    "we",
    "what",
    "when",
    "which",
    "with",
    "write",
    "you",
    "your",
    "file",
    "files",
    "output",
    "input",
    "save",
    "result",
    "results",
    "task",
    "repository",
    "repo",
    "code",
    "python",
];

/// Licences that let anyone use the code for anything.
const PERMISSIVE: &[&str] = &[
    "MIT",
    "Apache-2.0",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "ISC",
    "0BSD",
    "Unlicense",
    "Zlib",
    "MPL-2.0",
    "PSF-2.0",
    "CC0-1.0",
];

/// The weights of the score's parts (they sum to 1).
const RELEVANCE: f64 = 0.5;
const STARS: f64 = 0.2;
const RECENCY: f64 = 0.15;
const LANGUAGE: f64 = 0.1;
const LICENCE: f64 = 0.05;

/// A candidate with its score, best first in [`rank`]'s answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Ranked {
    /// The repository (with its README).
    pub repo: Repository,
    /// The score and its parts.
    pub score: Score,
}

/// The parts of a candidate's score, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Score {
    /// The weighted sum (with the model's judgement, when there is one,
    /// averaged in at equal weight).
    pub total: f64,
    /// The task's words found in the name, description and topics (full
    /// weight) or only in the README (0.6).
    pub relevance: f64,
    /// Stars, log-scaled against the most-starred candidate.
    pub stars: f64,
    /// How recently it was pushed to (1 now, 0.37 a year ago).
    pub recency: f64,
    /// 1 in the language asked for (0.5 when none was asked for).
    pub language: f64,
    /// 1 for a permissive licence, 0.5 for another, 0 for none.
    pub licence: f64,
    /// The model's judgement of the README against the task, when asked.
    pub judgement: Option<f64>,
}

/// The task's search words: lower-case, stemmed as the context's search
/// stems them, stop words dropped, each once, in order.
pub fn keywords(task: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in context_pack::bm25::terms(task) {
        if term.len() < 2
            || STOP_WORDS.contains(&term.as_str())
            || term.chars().all(|c| c.is_ascii_digit())
        {
            continue;
        }
        if !out.contains(&term) {
            out.push(term);
        }
    }
    out
}

fn stems(text: &str) -> Vec<String> {
    context_pack::bm25::terms(text)
        .iter()
        .map(|t| context_pack::bm25::stem(t))
        .collect()
}

/// Ranks `repos` for `task`, best first (ties by name). `judged[i]` is the
/// model's 0-10 judgement of `repos[i]`, when there is one.
pub fn rank(
    task: &str,
    language: Option<&str>,
    repos: Vec<Repository>,
    judged: &[Option<u8>],
    now: jiff::Timestamp,
) -> Vec<Ranked> {
    let words: Vec<String> = keywords(task)
        .iter()
        .map(|w| context_pack::bm25::stem(w))
        .collect();
    let most_stars = repos.iter().map(|r| r.stars).max().unwrap_or(0);
    let mut ranked: Vec<Ranked> = repos
        .into_iter()
        .enumerate()
        .map(|(i, repo)| {
            let judgement = judged
                .get(i)
                .copied()
                .flatten()
                .map(|j| f64::from(j.min(10)) / 10.0);
            let score = score(&words, language, &repo, most_stars, judgement, now);
            Ranked { repo, score }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .total
            .total_cmp(&a.score.total)
            .then_with(|| a.repo.full_name.cmp(&b.repo.full_name))
    });
    ranked
}

fn score(
    words: &[String],
    language: Option<&str>,
    repo: &Repository,
    most_stars: u64,
    judgement: Option<f64>,
    now: jiff::Timestamp,
) -> Score {
    let meta = stems(&format!(
        "{} {} {}",
        repo.full_name,
        repo.description.as_deref().unwrap_or(""),
        repo.topics.join(" ")
    ));
    let readme = stems(&repo.readme);
    let relevance = if words.is_empty() {
        0.0
    } else {
        words
            .iter()
            .map(|w| {
                if meta.contains(w) {
                    1.0
                } else if readme.contains(w) {
                    0.6
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / words.len() as f64
    };
    let stars = if most_stars == 0 {
        0.0
    } else {
        (1.0 + repo.stars as f64).ln() / (1.0 + most_stars as f64).ln()
    };
    let recency = repo
        .pushed_at
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0.0, |pushed| {
            let days = (now.as_second() - pushed.as_second()).max(0) as f64 / 86_400.0;
            (-days / 365.0).exp()
        });
    let language_fit = match language {
        None => 0.5,
        Some(wanted) => {
            let same = repo
                .language
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case(wanted));
            if same { 1.0 } else { 0.0 }
        }
    };
    let licence = match repo.license.as_deref() {
        Some(id) if PERMISSIVE.contains(&id) => 1.0,
        Some(_) => 0.5,
        None => 0.0,
    };
    let mut total = RELEVANCE * relevance
        + STARS * stars
        + RECENCY * recency
        + LANGUAGE * language_fit
        + LICENCE * licence;
    if repo.archived {
        // Archived upstream: usable, but a live one is preferred.
        total *= 0.8;
    }
    if let Some(judgement) = judgement {
        total = (total + judgement) / 2.0;
    }
    Score {
        total,
        relevance,
        stars,
        recency,
        language: language_fit,
        licence,
        judgement,
    }
}

/// Most README characters shown to the judging model.
const JUDGE_README_CHARS: usize = 6_000;

/// The model's 0-10 judgement of how well `repo` fits `task`, from its
/// README; None when the model fails or answers without a number.
pub(crate) async fn judge(model: &dyn llm::ChatModel, task: &str, repo: &Repository) -> Option<u8> {
    let readme = &repo.readme[..repo.readme.floor_char_boundary(JUDGE_README_CHARS)];
    let request = llm::ChatRequest::new(vec![
        llm::Message::system(
            "You judge whether a code repository can be used to do a task. Answer with one \
             integer from 0 (useless for the task) to 10 (does exactly this), and nothing else.",
        ),
        llm::Message::user(format!(
            "Task: {task}\n\nRepository: {} - {}\n\nREADME:\n{readme}\n\nScore (0-10):",
            repo.full_name,
            repo.description.as_deref().unwrap_or("")
        )),
    ])
    .with_temperature(0.0)
    .with_max_tokens(8);
    let answer = match model.complete(&request).await {
        Ok(response) => response.content.unwrap_or_default(),
        Err(error) => {
            tracing::warn!(repo = %repo.full_name, %error, "the model did not judge the README");
            return None;
        }
    };
    parse_judgement(&answer)
}

/// The first whole number in `answer`, if it is 0-10.
pub(crate) fn parse_judgement(answer: &str) -> Option<u8> {
    let digits: String = answer
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .take(3)
        .collect();
    digits.parse::<u8>().ok().filter(|n| *n <= 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_drop_stop_words_and_repeats() {
        assert_eq!(
            keywords("Extract the text of a PDF file, then extract its images using Python"),
            ["extract", "text", "pdf", "images"]
        );
        assert!(keywords("the of a 42").is_empty());
    }

    #[test]
    fn a_judgement_is_the_first_number_from_0_to_10() {
        assert_eq!(parse_judgement("8"), Some(8));
        assert_eq!(parse_judgement("Score: 10/10"), Some(10));
        assert_eq!(parse_judgement("11"), None);
        assert_eq!(parse_judgement("about seven"), None);
        assert_eq!(parse_judgement("99999999999"), None);
    }
}
