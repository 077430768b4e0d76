//! Secrets kept out of everything the model and the trajectory see.
//!
//! Model-written code runs with a clean environment, but in process
//! isolation it may still find a secret elsewhere (the agent's
//! `/proc/<pid>/environ` when it runs as the same user, a config file).
//! Whatever it prints passes through here before it becomes an
//! observation: every tool output is redacted, so a secret never reaches
//! the history, the requests sent to the model or the trajectory.

use std::borrow::Cow;

/// Shorter values are not treated as secrets (they would redact ordinary
/// words and numbers).
const MIN_SECRET_LEN: usize = 8;

/// Replaces known secret values with `[redacted]`.
///
/// ```
/// let redactor = agent::redact::Redactor::new(["sk-live-0123456789".to_string()]);
/// assert_eq!(redactor.redact("key=sk-live-0123456789!"), "key=[redacted]!");
/// assert_eq!(redactor.redact("nothing here"), "nothing here");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for these values (those shorter than 8 characters are
    /// ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        // Trimmed: a value read from an env file may carry a newline that
        // the printed secret does not.
        let mut secrets: Vec<String> = secrets
            .into_iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// The values of this process's environment variables that name a
    /// credential: `OPENAI_API_KEY` and any name containing `KEY`, `TOKEN`,
    /// `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`.
    pub fn from_env() -> Redactor {
        Redactor::new(std::env::vars_os().filter_map(|(name, value)| {
            let name = name.to_str()?.to_ascii_uppercase();
            let secret = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
                .iter()
                .any(|word| name.contains(word));
            secret.then(|| value.into_string().ok()).flatten()
        }))
    }

    /// `text` with every secret replaced. Matches are found on the original
    /// text and merged, so secrets that overlap in it are removed whole.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut spans: Vec<(usize, usize)> = self
            .secrets
            .iter()
            .flat_map(|secret| {
                text.match_indices(secret.as_str())
                    .map(|(start, found)| (start, start + found.len()))
            })
            .collect();
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut done = 0;
        for (start, end) in spans {
            if end <= done {
                continue;
            }
            if start >= done {
                out.push_str(&text[done..start]);
                out.push_str("[redacted]");
            }
            done = end;
        }
        out.push_str(&text[done..]);
        Cow::Owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_nested_secrets_are_removed_whole() {
        let redactor = Redactor::new(["abcdefgh1234".to_string(), "1234wxyzqrst".to_string()]);
        assert_eq!(redactor.redact("<abcdefgh1234wxyzqrst>"), "<[redacted]>");
        let nested = Redactor::new(["sk-live-0123456789".to_string(), "0123456789".to_string()]);
        assert_eq!(
            nested.redact("a sk-live-0123456789 b 0123456789"),
            "a [redacted] b [redacted]"
        );
    }

    #[test]
    fn secrets_are_matched_without_surrounding_whitespace() {
        let redactor = Redactor::new(["  sk-live-0123456789\n".to_string(), "short\n".to_string()]);
        assert_eq!(
            redactor.redact("key=sk-live-0123456789;"),
            "key=[redacted];"
        );
        assert_eq!(redactor.redact("short"), "short");
    }
}
