use std::fmt;
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::error::LlmError;
use crate::retry::RetryPolicy;
use crate::secret::{Redactor, Secret};
use crate::tokens::Encoding;

/// Environment variable holding the API key.
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
/// Environment variable holding the base URL of the server.
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
/// Environment variable holding the model name.
pub const ENV_MODEL: &str = "REPO_AGENT_MODEL";
/// OpenAI's own endpoint, the default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolMode {
    /// The API's `tools` field and structured `tool_calls` (OpenAI, vLLM
    /// with a tool parser, llama.cpp with `--jinja`, Ollama, most gateways).
    #[default]
    Native,
    /// Tools described in the system prompt; the model answers with a fenced
    /// JSON block per call, which the client parses. For servers or models
    /// without tool support.
    Text,
}

/// Which request field carries [`ChatRequest::max_tokens`](crate::ChatRequest::max_tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: understood by every OpenAI-compatible server.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: required by OpenAI's reasoning models.
    MaxCompletionTokens,
}

/// Settings of an [`OpenAiModel`](crate::OpenAiModel). Built with
/// [`OpenAiConfig::builder`] or [`OpenAiConfig::from_env`].
#[derive(Clone)]
pub struct OpenAiConfig {
    pub(crate) base_url: Url,
    pub(crate) model: String,
    pub(crate) headers: HeaderMap,
    pub(crate) redactor: Redactor,
    pub(crate) has_api_key: bool,
    pub(crate) timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) tool_mode: ToolMode,
    pub(crate) max_tokens_field: MaxTokensField,
    pub(crate) encoding: Encoding,
    pub(crate) env_proxy: bool,
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values may be credentials: only names are shown.
        let header_names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.redactor.redact(self.base_url.as_str()))
            .field("model", &self.model)
            .field("api_key", &self.has_api_key.then_some("[REDACTED]"))
            .field("headers", &header_names)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("retry", &self.retry)
            .field("tool_mode", &self.tool_mode)
            .field("max_tokens_field", &self.max_tokens_field)
            .field("encoding", &self.encoding)
            .field("env_proxy", &self.env_proxy)
            .finish()
    }
}

impl OpenAiConfig {
    /// A builder with the defaults and nothing read from the environment.
    pub fn builder() -> OpenAiConfigBuilder {
        OpenAiConfigBuilder::default()
    }

    /// A builder that starts from `OPENAI_API_KEY`, `OPENAI_BASE_URL` and
    /// `REPO_AGENT_MODEL` (empty variables count as unset). Setters called
    /// afterwards win, so command-line flags go on top.
    pub fn from_env() -> OpenAiConfigBuilder {
        OpenAiConfigBuilder::from_lookup(|name| std::env::var(name).ok())
    }

    /// The model name sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL (requests go to `{base_url}/chat/completions`).
    pub fn base_url(&self) -> &str {
        self.base_url.as_str()
    }

    /// Whether an API key is configured.
    pub fn has_api_key(&self) -> bool {
        self.has_api_key
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    /// How tools are offered.
    pub fn tool_mode(&self) -> ToolMode {
        self.tool_mode
    }

    /// The encoding used to count tokens the server does not report.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

/// Builder of [`OpenAiConfig`].
///
/// Defaults: base URL `https://api.openai.com/v1`, no API key (required only
/// for that default URL; local servers need none), no model (required),
/// no extra headers, 300 s per-request timeout, 10 s connect timeout,
/// [`RetryPolicy::default`], [`ToolMode::Native`], [`MaxTokensField::MaxTokens`],
/// the tiktoken encoding matching the model ([`Encoding::for_model`]), and
/// `HTTP(S)_PROXY` honoured.
#[derive(Clone)]
pub struct OpenAiConfigBuilder {
    base_url: Option<String>,
    api_key: Option<Secret>,
    model: Option<String>,
    headers: Vec<(String, Secret, bool)>,
    timeout: Duration,
    connect_timeout: Duration,
    retry: RetryPolicy,
    tool_mode: ToolMode,
    max_tokens_field: MaxTokensField,
    encoding: Option<Encoding>,
    env_proxy: bool,
}

impl fmt::Debug for OpenAiConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _, _)| n.as_str()).collect();
        // A URL may carry `user:password@`; it is checked and redacted only at build time.
        let base_url = self.base_url.as_deref().map(|url| {
            if url.contains('@') {
                "[URL with credentials]"
            } else {
                url
            }
        });
        f.debug_struct("OpenAiConfigBuilder")
            .field("base_url", &base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("headers", &header_names)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Default for OpenAiConfigBuilder {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key: None,
            model: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            tool_mode: ToolMode::default(),
            max_tokens_field: MaxTokensField::default(),
            encoding: None,
            env_proxy: true,
        }
    }
}

impl OpenAiConfigBuilder {
    /// Like [`OpenAiConfig::from_env`], reading variables through `lookup`
    /// (tests and embedders pass their own environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let read = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        Self {
            base_url: read(ENV_BASE_URL),
            api_key: read(ENV_API_KEY).map(|key| Secret::new(key.trim())),
            model: read(ENV_MODEL),
            ..Self::default()
        }
    }

    /// Sets the base URL, for example `http://localhost:11434/v1` for Ollama.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// Sets the API key, sent as `Authorization: Bearer <key>`.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(Secret::new(api_key.into().trim()));
        self
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into(), Secret::new(value.into()), false));
        self
    }

    /// Adds a header whose value is a credential (for example `api-key` for
    /// Azure or `x-api-key` for some gateways): it is treated like the API
    /// key, never logged, recorded or shown in errors.
    pub fn secret_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into(), Secret::new(value.into()), true));
        self
    }

    /// Sets the per-request timeout (each attempt gets the full timeout).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the TCP/TLS connect timeout.
    pub fn connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Sets the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Chooses native or text-protocol tool calling.
    pub fn tool_mode(mut self, tool_mode: ToolMode) -> Self {
        self.tool_mode = tool_mode;
        self
    }

    /// Chooses the request field for the output token limit.
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }

    /// Sets the encoding used to count tokens when the server reports none.
    pub fn encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = Some(encoding);
        self
    }

    /// Ignores `HTTP_PROXY`/`HTTPS_PROXY` and connects directly.
    pub fn no_proxy(mut self) -> Self {
        self.env_proxy = false;
        self
    }

    /// Checks the settings.
    pub fn build(self) -> Result<OpenAiConfig, LlmError> {
        let model = self
            .model
            .map(|model| model.trim().to_owned())
            .filter(|model| !model.is_empty())
            .ok_or_else(|| {
                LlmError::config(format!(
                    "no model name: pass --model or set {ENV_MODEL} (for example gpt-4o-mini, or the name your local server serves)"
                ))
            })?;

        let raw_url = self.base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let trimmed = raw_url.trim().trim_end_matches('/');
        let base_url = Url::parse(trimmed)
            .ok()
            .filter(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some())
            .ok_or_else(|| {
                LlmError::config(format!(
                    "base URL `{trimmed}` is not an http(s) URL; set {ENV_BASE_URL} or --base-url to something like http://localhost:8000/v1"
                ))
            })?;

        let api_key = self.api_key.filter(|key| !key.expose().is_empty());
        if api_key.is_none() && base_url.host_str() == Some("api.openai.com") {
            return Err(LlmError::config(format!(
                "{ENV_API_KEY} is not set: export it or pass --api-key (a local server needs {ENV_BASE_URL} instead)"
            )));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(LlmError::config("timeouts must be longer than zero"));
        }

        let mut redactor = Redactor::default();
        if let Some(password) = base_url.password() {
            redactor.add(&Secret::new(password));
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value, secret) in &self.headers {
            let header_name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
                LlmError::config(format!("`{name}` is not a valid HTTP header name"))
            })?;
            let mut header_value = HeaderValue::from_str(value.expose()).map_err(|_| {
                LlmError::config(format!(
                    "the value of header `{name}` is not valid in HTTP (control characters or non-ASCII)"
                ))
            })?;
            if *secret {
                header_value.set_sensitive(true);
                redactor.add(value);
            }
            headers.insert(header_name, header_value);
        }
        if let Some(key) = &api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
                .map_err(|_| {
                    LlmError::config(format!(
                        "the API key contains characters not allowed in HTTP headers; check {ENV_API_KEY}"
                    ))
                })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
            redactor.add(key);
        }

        let encoding = self.encoding.unwrap_or_else(|| Encoding::for_model(&model));
        Ok(OpenAiConfig {
            base_url,
            model,
            headers,
            redactor,
            has_api_key: api_key.is_some(),
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            retry: self.retry,
            tool_mode: self.tool_mode,
            max_tokens_field: self.max_tokens_field,
            encoding,
            env_proxy: self.env_proxy,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn environment_fills_and_setters_override() {
        let config = OpenAiConfigBuilder::from_lookup(env(&[
            (ENV_API_KEY, "sk-env"),
            (ENV_BASE_URL, "http://localhost:8000/v1/"),
            (ENV_MODEL, "env-model"),
        ]))
        .model("flag-model")
        .build()
        .unwrap();
        assert_eq!(config.model(), "flag-model");
        assert_eq!(config.base_url(), "http://localhost:8000/v1");
        assert!(config.has_api_key());
    }

    #[test]
    fn missing_model_and_key_say_what_to_set() {
        let err = OpenAiConfig::builder().build().unwrap_err();
        assert!(err.to_string().contains(ENV_MODEL), "{err}");
        let err = OpenAiConfig::builder().model("gpt-4o").build().unwrap_err();
        assert!(err.to_string().contains(ENV_API_KEY), "{err}");
        let err = OpenAiConfigBuilder::from_lookup(env(&[(ENV_API_KEY, "  ")]))
            .model("gpt-4o")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains(ENV_API_KEY), "{err}");
        // Local servers need no key.
        OpenAiConfig::builder()
            .model("llama3")
            .base_url("http://127.0.0.1:11434/v1")
            .build()
            .unwrap();
    }

    #[test]
    fn bad_urls_and_headers_are_rejected() {
        let base = || OpenAiConfig::builder().model("m");
        assert!(base().base_url("localhost:8000").build().is_err());
        assert!(base().base_url("ftp://host/v1").build().is_err());
        let err = base()
            .base_url("http://h/v1")
            .header("bad header", "v")
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("bad header"), "{err}");
        let err = base()
            .base_url("http://h/v1")
            .secret_header("x-api-key", "line\nbreak")
            .build()
            .unwrap_err();
        assert!(!err.to_string().contains("line"), "{err}");
    }

    #[test]
    fn debug_output_hides_credentials() {
        let config = OpenAiConfig::builder()
            .model("m")
            .api_key("sk-very-secret")
            .secret_header("x-api-key", "gateway-secret")
            .build()
            .unwrap();
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-very-secret") && !shown.contains("gateway-secret"));
        assert!(shown.contains("x-api-key"));
        let builder = OpenAiConfig::builder()
            .api_key("sk-very-secret")
            .base_url("http://user:url-secret@gateway/v1");
        let shown = format!("{builder:?}");
        assert!(!shown.contains("sk-very-secret") && !shown.contains("url-secret"));
        let config = builder.model("m").build().unwrap();
        assert!(!format!("{config:?}").contains("url-secret"));
    }
}
