//! GitHub's REST API: repository search and READMEs, with retries.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde::Deserialize;

use crate::Error;
use crate::rank::{Ranked, keywords, rank};

/// GitHub's API, the default base.
pub const GITHUB_API: &str = "https://api.github.com";

/// Largest search response read, in bytes (100 results are ~300 KiB).
const MAX_SEARCH_BYTES: usize = 4 << 20;

/// Largest README kept, in bytes: a README past this is cut, not refused.
const MAX_README_BYTES: usize = 256 << 10;

/// Largest README response read: a README of 256 KiB in the API's JSON
/// form (base64, 4/3 of the text, plus the metadata) still fits.
const MAX_README_RESPONSE_BYTES: usize = MAX_README_BYTES / 3 * 4 + (32 << 10);

/// A repository as the search describes it.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[non_exhaustive]
pub struct Repository {
    /// `owner/name`.
    pub full_name: String,
    /// The page on GitHub.
    pub html_url: String,
    /// What git clones.
    pub clone_url: String,
    /// The one-line description.
    #[serde(default)]
    pub description: Option<String>,
    /// Stars.
    #[serde(default, rename = "stargazers_count")]
    pub stars: u64,
    /// The main language, as GitHub detects it.
    #[serde(default)]
    pub language: Option<String>,
    /// The licence's SPDX identifier.
    #[serde(default, deserialize_with = "licence")]
    pub license: Option<String>,
    /// When it was last pushed to (RFC 3339).
    #[serde(default)]
    pub pushed_at: Option<String>,
    /// Topics.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Archived repositories are read-only upstream.
    #[serde(default)]
    pub archived: bool,
    /// Size as GitHub reports it, in KiB.
    #[serde(default)]
    pub size: u64,
    /// The README, cut at 256 KiB; empty when there is none.
    #[serde(default, skip_deserializing)]
    pub readme: String,
}

fn licence<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    struct Licence {
        spdx_id: Option<String>,
    }
    Ok(Option::<Licence>::deserialize(d)?
        .and_then(|l| l.spdx_id)
        .filter(|id| id != "NOASSERTION"))
}

#[derive(Deserialize)]
struct SearchPage {
    items: Vec<Repository>,
}

/// The README endpoint's JSON form, answered by a server (or a proxy) that
/// does not honour `Accept: application/vnd.github.raw`.
#[derive(Deserialize)]
struct ReadmeJson {
    content: String,
    #[serde(default)]
    encoding: String,
}

/// Whether `full_name` is an `OWNER/NAME` GitHub could have answered: one
/// slash, both parts made of GitHub's name characters and neither `.` nor
/// `..`. The name becomes an API path and the clone's directory
/// (`<home>/repos/OWNER/NAME`), so nothing else may pass.
fn valid_full_name(full_name: &str) -> bool {
    let mut parts = full_name.split('/');
    let (Some(owner), Some(name), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    [owner, name].iter().all(|part| {
        !part.is_empty()
            && *part != "."
            && *part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    })
}

/// Searches GitHub and ranks what it finds ([`Finder::builder`]).
#[derive(Clone)]
pub struct Finder {
    http: reqwest::Client,
    api: String,
    token: Option<String>,
    candidates: usize,
    retry: llm::RetryPolicy,
    judge: Option<Arc<dyn llm::ChatModel>>,
    now: Option<jiff::Timestamp>,
}

impl std::fmt::Debug for Finder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finder")
            .field("api", &self.api)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .field("candidates", &self.candidates)
            .finish()
    }
}

/// Builds a [`Finder`].
pub struct FinderBuilder {
    api: String,
    token: Option<String>,
    candidates: usize,
    retry: llm::RetryPolicy,
    judge: Option<Arc<dyn llm::ChatModel>>,
    now: Option<jiff::Timestamp>,
    timeout: Duration,
}

impl FinderBuilder {
    /// The API's base URL (default `https://api.github.com`; tests point it
    /// at a loopback server).
    pub fn api_base(mut self, url: impl Into<String>) -> Self {
        self.api = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// A token for higher rate limits (`GITHUB_TOKEN`); never logged.
    pub fn token(mut self, token: Option<String>) -> Self {
        self.token = token.filter(|t| !t.trim().is_empty());
        self
    }

    /// How many search results to read and rank (default 10, at most 100).
    pub fn candidates(mut self, n: usize) -> Self {
        self.candidates = n.clamp(1, 100);
        self
    }

    /// How failed requests are retried (default: the model client's).
    pub fn retry(mut self, policy: llm::RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Asks this model to judge each README against the task.
    pub fn judge(mut self, model: Arc<dyn llm::ChatModel>) -> Self {
        self.judge = Some(model);
        self
    }

    /// The time recency is measured from (default: now; tests fix it).
    pub fn now(mut self, now: jiff::Timestamp) -> Self {
        self.now = Some(now);
        self
    }

    /// Each request's time limit (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The finder, with its HTTP client (TLS through rustls and the
    /// platform's certificates, as the model client).
    pub fn build(self) -> Result<Finder, Error> {
        let http = http_client()?
            .timeout(self.timeout)
            .user_agent(concat!("repo-agent-find/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Setup(e.to_string()))?;
        Ok(Finder {
            http,
            api: self.api,
            token: self.token,
            candidates: self.candidates,
            retry: self.retry,
            judge: self.judge,
            now: self.now,
        })
    }
}

impl Finder {
    /// A finder for github.com without a token.
    pub fn builder() -> FinderBuilder {
        FinderBuilder {
            api: GITHUB_API.to_owned(),
            token: None,
            candidates: 10,
            retry: llm::RetryPolicy::default(),
            judge: None,
            now: None,
            timeout: Duration::from_secs(30),
        }
    }

    /// Searches for the task's keywords (in `language` when given), reads
    /// each candidate's README, and ranks them, best first.
    pub async fn find(&self, task: &str, language: Option<&str>) -> Result<Vec<Ranked>, Error> {
        let words = keywords(task);
        if words.is_empty() {
            return Err(Error::NoKeywords);
        }
        let mut repos = self.search(&words, language).await?;
        // A few at a time: each is a round trip of its own, and GitHub
        // asks clients not to flood it (secondary rate limits).
        let readmes: Vec<Result<String, Error>> = futures_util::stream::iter(&repos)
            .map(|repo| self.readme(&repo.full_name))
            .buffered(READMES_IN_FLIGHT)
            .collect()
            .await;
        for (repo, readme) in repos.iter_mut().zip(readmes) {
            repo.readme = readme?;
        }
        let mut judged = Vec::with_capacity(repos.len());
        for repo in &repos {
            judged.push(match &self.judge {
                Some(model) => crate::rank::judge(model.as_ref(), task, repo).await,
                None => None,
            });
        }
        let now = self.now.unwrap_or_else(jiff::Timestamp::now);
        Ok(rank(task, language, repos, &judged, now))
    }

    /// The search's candidates for `words`.
    async fn search(
        &self,
        words: &[String],
        language: Option<&str>,
    ) -> Result<Vec<Repository>, Error> {
        // The search matches every word it is given: the six rarest-looking
        // (longest) words keep it from finding nothing.
        let mut chosen: Vec<&String> = words.iter().collect();
        chosen.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        chosen.truncate(6);
        let mut query = chosen
            .iter()
            .map(|w| w.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(language) = language {
            query.push_str(&format!(" language:{language}"));
        }
        let per_page = self.candidates.to_string();
        let url = reqwest::Url::parse_with_params(
            &format!("{}/search/repositories", self.api),
            [
                ("q", query.as_str()),
                ("sort", "stars"),
                ("order", "desc"),
                ("per_page", per_page.as_str()),
            ],
        )
        .map_err(|e| Error::Setup(format!("--api-base {} is not a URL: {e}", self.api)))?
        .to_string();
        let request = self.http.get(&url);
        let body = self
            .send(
                &url,
                request,
                "application/vnd.github+json",
                MAX_SEARCH_BYTES,
            )
            .await?
            .map(|body| body.bytes)
            .ok_or_else(|| Error::Http {
                url: url.clone(),
                status: 404,
                message: "the search endpoint was not found".to_owned(),
            })?;
        let page: SearchPage = serde_json::from_slice(&body).map_err(|e| Error::Malformed {
            url: url.clone(),
            message: e.to_string(),
        })?;
        let mut items = page.items;
        items.truncate(self.candidates);
        if let Some(bad) = items.iter().find(|r| !valid_full_name(&r.full_name)) {
            return Err(Error::Malformed {
                url,
                message: format!("{:?} is not an owner/name", bad.full_name),
            });
        }
        Ok(items)
    }

    /// A repository's README as text, cut at 256 KiB; empty when it has none.
    /// `full_name` was checked by the search ([`valid_full_name`]).
    async fn readme(&self, full_name: &str) -> Result<String, Error> {
        let url = format!("{}/repos/{full_name}/readme", self.api);
        let request = self.http.get(&url);
        let Some(body) = self
            .send(
                &url,
                request,
                "application/vnd.github.raw",
                MAX_README_RESPONSE_BYTES,
            )
            .await?
        else {
            return Ok(String::new());
        };
        let mut text = if body.json {
            readme_from_json(&url, &body.bytes)
        } else {
            body.bytes
        };
        text.truncate(MAX_README_BYTES);
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// Sends with retries: transient failures (5xx, a connection that
    /// broke, a timeout) and rate limits are retried by the policy, a host
    /// that cannot be connected to once; 404 is `None`.
    async fn send(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
        accept: &str,
        max_bytes: usize,
    ) -> Result<Option<Body>, Error> {
        let mut retry = 0u32;
        loop {
            let mut attempt = request
                .try_clone()
                .ok_or_else(|| Error::Setup("a request that cannot be repeated".to_owned()))?
                .header("Accept", accept)
                .header("X-GitHub-Api-Version", "2022-11-28");
            if let Some(token) = &self.token {
                attempt = attempt.bearer_auth(token);
            }
            let failure = match attempt.send().await {
                // No connection at all (no route, no name, refused): a
                // machine offline stays offline for the backoff's half
                // minute, so one retry covers a blip and no more.
                Err(error) if error.is_connect() => Failure::Unreachable(Error::Network {
                    url: url.to_owned(),
                    message: describe(error),
                    attempts: 1,
                }),
                Err(error) => Failure::Transient(Error::Network {
                    url: url.to_owned(),
                    message: describe(error),
                    attempts: 1,
                }),
                Ok(response) => match classify(url, response, max_bytes).await {
                    Ok(body) => return Ok(body),
                    Err(failure) => failure,
                },
            };
            retry += 1;
            let failure = failure.tried(retry);
            let (error, wait) = match failure {
                Failure::Final(error) => return Err(error),
                Failure::Transient(error) => (error, None),
                Failure::Unreachable(error) if retry > UNREACHABLE_RETRIES => return Err(error),
                Failure::Unreachable(error) => (error, None),
                Failure::RateLimited { reset, wait } => (Error::RateLimited { reset }, wait),
            };
            if retry > self.retry.max_retries() {
                return Err(error);
            }
            let Some(delay) = self.retry.delay(retry, wait) else {
                return Err(error);
            };
            tracing::warn!(%url, retry, delay_ms = delay.as_millis() as u64, %error, "retrying");
            tokio::time::sleep(delay).await;
        }
    }
}

/// The workspace's HTTP client setup ([`llm::http_client_builder`]): the
/// search and the clone's transport use it.
pub(crate) fn http_client() -> Result<reqwest::ClientBuilder, Error> {
    llm::http_client_builder().map_err(|e| Error::Setup(e.to_string()))
}

/// What failed, with its causes ("error sending request: client error
/// (Connect): tcp connect error: Connection refused"), without the URL,
/// which the error names already.
fn describe(error: reqwest::Error) -> String {
    llm::error_chain(&error.without_url())
}

/// A successful response's body (cut at the request's cap).
struct Body {
    bytes: Vec<u8>,
    /// The server said the body is JSON (`Content-Type: application/json`
    /// or GitHub's `application/vnd.github+json`).
    json: bool,
}

/// The text of a README answered in the API's JSON form: its `content`,
/// base64 (GitHub breaks it into lines). Anything else is no README: a
/// README is context for the ranking, never a reason to fail the search.
fn readme_from_json(url: &str, body: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    let decoded = serde_json::from_slice::<ReadmeJson>(body)
        .map_err(|e| e.to_string())
        .and_then(|json| {
            if !json.encoding.eq_ignore_ascii_case("base64") {
                return Err(format!("an encoding of {:?}", json.encoding));
            }
            let packed: Vec<u8> = json
                .content
                .bytes()
                .filter(|b| !b.is_ascii_whitespace())
                .collect();
            base64::engine::general_purpose::STANDARD
                .decode(packed)
                .map_err(|e| e.to_string())
        });
    decoded.unwrap_or_else(|message| {
        tracing::warn!(%url, %message, "a README in JSON form that cannot be read; taken as none");
        Vec::new()
    })
}

/// README requests in flight at once.
const READMES_IN_FLIGHT: usize = 4;

/// Retries after a request that could not connect at all.
const UNREACHABLE_RETRIES: u32 = 1;

enum Failure {
    Final(Error),
    Transient(Error),
    /// No connection was made: retried [`UNREACHABLE_RETRIES`] times.
    Unreachable(Error),
    RateLimited {
        reset: Option<u64>,
        wait: Option<Duration>,
    },
}

impl Failure {
    /// The failure of the `attempts`th try: a network error says how many.
    fn tried(mut self, attempts: u32) -> Self {
        if let Failure::Final(error) | Failure::Transient(error) | Failure::Unreachable(error) =
            &mut self
            && let Error::Network { attempts: n, .. } = error
        {
            *n = attempts;
        }
        self
    }
}

/// The body of a success (None for 404), or how the request failed.
async fn classify(
    url: &str,
    response: reqwest::Response,
    max_bytes: usize,
) -> Result<Option<Body>, Failure> {
    let status = response.status();
    let headers = response.headers().clone();
    let body = read_capped(url, response, max_bytes)
        .await
        .map_err(Failure::Transient)?;
    if status.is_success() {
        let json = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                let v = v.trim();
                v.eq_ignore_ascii_case("application/json")
                    || v.eq_ignore_ascii_case("application/vnd.github+json")
            });
        return Ok(Some(Body { bytes: body, json }));
    }
    if status.as_u16() == 404 {
        return Ok(None);
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let spent = header("x-ratelimit-remaining").is_some_and(|v| v.trim() == "0");
    let message = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    if status.as_u16() == 429
        || (status.as_u16() == 403 && (spent || message.contains("rate limit")))
    {
        let reset = header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .map(|at| (at - jiff::Timestamp::now().as_second()).max(0) as u64);
        let wait = llm::retry_after(&headers).or(reset.map(Duration::from_secs));
        return Err(Failure::RateLimited { reset, wait });
    }
    let error = Error::Http {
        url: url.to_owned(),
        status: status.as_u16(),
        message,
    };
    Err(if status.is_server_error() {
        Failure::Transient(error)
    } else {
        Failure::Final(error)
    })
}

/// The body, cut at `max_bytes` (never more is kept in memory).
async fn read_capped(
    url: &str,
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<Vec<u8>, Error> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = max_bytes.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() >= max_bytes {
                    break;
                }
            }
            Ok(None) => break,
            Err(error) => {
                return Err(Error::Network {
                    url: url.to_owned(),
                    message: describe(error),
                    attempts: 1,
                });
            }
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_owner_and_a_name_pass_as_a_full_name() {
        for good in [
            "py-pdf/pypdf",
            "pdfminer/pdfminer.six",
            "a_b/c-d",
            "o/.github",
        ] {
            assert!(valid_full_name(good), "{good}");
        }
        for bad in [
            "", "pypdf", "a/b/c", "/b", "a/", "../x", "x/..", "./x", "a/b c", "a/b?x", "a\\b/c",
        ] {
            assert!(!valid_full_name(bad), "{bad}");
        }
    }

    #[test]
    fn a_readme_in_json_form_is_decoded_and_anything_else_is_none() {
        let json = br#"{"name":"README.md","encoding":"base64","content":"IyBweXBk\nZgo=\n"}"#;
        assert_eq!(readme_from_json("u", json), b"# pypdf\n");
        assert!(readme_from_json("u", br#"{"encoding":"utf-8","content":"x"}"#).is_empty());
        assert!(readme_from_json("u", br#"{"encoding":"base64","content":"!!"}"#).is_empty());
        assert!(readme_from_json("u", b"not json").is_empty());
    }
}
