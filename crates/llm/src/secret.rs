use std::borrow::Cow;
use std::fmt;

/// A credential. Its `Debug` never shows the value, and the only way to read
/// it is [`Secret::expose`], used where the value goes into a request header.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// Removes the client's secrets from text that came from elsewhere (server
/// bodies, HTTP client errors), so that a server echoing a key cannot leak
/// it into errors, logs or recordings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<Secret>,
}

pub(crate) const REDACTED: &str = "[REDACTED]";

impl Redactor {
    pub(crate) fn add(&mut self, secret: &Secret) {
        // Very short values would blank out ordinary text and protect nothing.
        if secret.expose().len() >= 4 && !self.secrets.contains(secret) {
            self.secrets.push(secret.clone());
        }
    }

    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for secret in &self.secrets {
            if text.contains(secret.expose()) {
                text = Cow::Owned(text.replace(secret.expose(), REDACTED));
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_hidden_in_debug_and_text() {
        let key = Secret::new("sk-test-123456");
        assert_eq!(format!("{key:?}"), "[REDACTED]");
        let mut redactor = Redactor::default();
        redactor.add(&key);
        redactor.add(&Secret::new("x"));
        assert_eq!(
            redactor.redact("bad key sk-test-123456, x stays"),
            "bad key [REDACTED], x stays"
        );
    }
}
