//! The workspace's one HTTP client setup: rustls with the ring provider
//! and the platform's certificates, and errors printed with their causes.
//! The model client and repo-find's GitHub client and git transport use it.

use std::sync::Arc;

use rustls_platform_verifier::BuilderVerifierExt as _;

use crate::LlmError;

/// A reqwest client builder with TLS set up: an explicit provider, so
/// nothing depends on a process-wide default. The caller adds timeouts
/// and a user agent.
///
/// ```
/// let client = llm::http_client_builder()?.build().expect("a client");
/// # drop(client);
/// # Ok::<(), llm::LlmError>(())
/// ```
pub fn http_client_builder() -> Result<reqwest::ClientBuilder, LlmError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|e| LlmError::config(format!("cannot set up TLS: {e}")))?
        .with_no_client_auth();
    Ok(reqwest::Client::builder().tls_backend_preconfigured(tls))
}

/// The error and its causes on one line (reqwest's own message is terse:
/// "error sending request", with the cause, "connection refused", only in
/// its sources); a cause that repeats the previous text is left out.
///
/// ```
/// let io = std::io::Error::other("connection refused");
/// assert_eq!(llm::error_chain(&io), "connection refused");
/// ```
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}
