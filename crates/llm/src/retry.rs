use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// When and how often a failed call is tried again.
///
/// Only transient failures are retried (see
/// [`LlmError::is_retryable`](crate::LlmError::is_retryable)). The wait before
/// retry `n` (1-based) is `base_delay * 2^(n-1)`, capped at `max_delay`, then
/// spread by up to `±jitter` of itself so that parallel workers do not retry
/// in lockstep. When the server sends `Retry-After` (or `retry-after-ms`),
/// that wait is used instead, unless it is longer than `max_retry_after`, in
/// which case the call fails at once with the server's error.
///
/// Defaults: 5 retries, 1 s base delay, 60 s maximum delay, jitter 0.2,
/// `Retry-After` honoured up to 120 s.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_retries: u32,
    base_delay: Duration,
    max_delay: Duration,
    jitter: f64,
    max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            jitter: 0.2,
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The default policy.
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy that never retries.
    pub fn none() -> Self {
        Self::default().with_max_retries(0)
    }

    /// Caps the retries of one call (attempts = retries + 1).
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the wait before the first retry.
    pub fn with_base_delay(mut self, base_delay: Duration) -> Self {
        self.base_delay = base_delay;
        self
    }

    /// Caps the exponential wait.
    pub fn with_max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// Sets the jitter fraction, clamped to `0.0..=1.0` (0 = exact delays).
    pub fn with_jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Sets the longest `Retry-After` the client is willing to wait.
    pub fn with_max_retry_after(mut self, max_retry_after: Duration) -> Self {
        self.max_retry_after = max_retry_after;
        self
    }

    /// Retries allowed per call.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The wait before retry number `retry` (1-based), or `None` when the
    /// server asked for a wait longer than the policy accepts. Public so
    /// that other HTTP clients of this workspace (repo-find's GitHub
    /// client) back off by the same rule.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if let Some(wait) = retry_after {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let exponent = retry.saturating_sub(1).min(30);
        let backoff = self
            .base_delay
            .saturating_mul(1u32 << exponent)
            .min(self.max_delay);
        let spread = 1.0 + self.jitter * (2.0 * fastrand::f64() - 1.0);
        Some(backoff.mul_f64(spread).min(self.max_delay))
    }
}

/// How long the server asked to wait: `retry-after-ms` (OpenAI), else
/// `Retry-After` in seconds or as an HTTP date.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return finite_secs(ms / 1000.0);
    }
    let value = text("retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return finite_secs(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn finite_secs(secs: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(secs.max(0.0)).ok()
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy::new()
            .with_base_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_millis(350))
            .with_jitter(0.0);
        let delays: Vec<_> = (1..=4).map(|n| policy.delay(n, None).unwrap()).collect();
        assert_eq!(
            delays,
            [100, 200, 350, 350].map(Duration::from_millis).to_vec()
        );
    }

    #[test]
    fn jitter_stays_within_its_fraction() {
        let policy = RetryPolicy::new()
            .with_base_delay(Duration::from_millis(1000))
            .with_jitter(0.25);
        for _ in 0..200 {
            let delay = policy.delay(1, None).unwrap();
            assert!(delay >= Duration::from_millis(750) && delay <= Duration::from_millis(1250));
        }
    }

    #[test]
    fn retry_after_wins_unless_too_long() {
        let policy = RetryPolicy::new().with_max_retry_after(Duration::from_secs(10));
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(policy.delay(1, Some(Duration::from_secs(11))), None);
    }

    #[test]
    fn retry_after_headers_are_read() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));

        let mut dated = HeaderMap::new();
        let past = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH);
        dated.insert("retry-after", HeaderValue::from_str(&past).unwrap());
        assert_eq!(retry_after(&dated), Some(Duration::ZERO));
        dated.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&dated), None);
    }
}
