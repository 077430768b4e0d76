use std::collections::BTreeMap;
use std::fmt;
use std::ops::AddAssign;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::LlmError;
use crate::model::ChatModel;
use crate::types::{ChatRequest, ChatResponse};

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Input tokens (the whole prompt, cached ones included).
    pub prompt_tokens: u64,
    /// Output tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from the provider's prompt cache, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// True when the server reported no usage and the numbers were counted
    /// locally with a tokenizer.
    #[serde(default)]
    pub estimated: bool,
}

impl TokenUsage {
    /// Usage as reported by a server.
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            cached_tokens: None,
            estimated: false,
        }
    }

    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// Prices of one model in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ModelPrice {
    /// Dollars per million prompt tokens.
    pub input: f64,
    /// Dollars per million completion tokens.
    pub output: f64,
    /// Dollars per million cached prompt tokens; `None` bills them as input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl ModelPrice {
    /// Prices per million input and output tokens.
    pub fn new(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cached_input: None,
        }
    }

    /// Sets the price per million cached input tokens.
    pub fn with_cached_input(mut self, cached_input: f64) -> Self {
        self.cached_input = Some(cached_input);
        self
    }

    /// The cost of one call in dollars.
    pub fn cost(&self, usage: &TokenUsage) -> f64 {
        let cached = usage.cached_tokens.unwrap_or(0).min(usage.prompt_tokens);
        let uncached = usage.prompt_tokens - cached;
        let cached_price = self.cached_input.unwrap_or(self.input);
        (uncached as f64 * self.input
            + cached as f64 * cached_price
            + usage.completion_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices per model, used to estimate the cost of a run.
///
/// [`PriceTable::default`] has list prices (USD per million tokens, as
/// published by the providers in 2025) for a few common models; they are an
/// estimate, not a bill. A JSON file can add or override entries; its format
/// is one object keyed by model name:
///
/// ```json
/// {
///   "gpt-4o": { "input": 2.5, "output": 10.0, "cached_input": 1.25 },
///   "my-local-model": { "input": 0, "output": 0 }
/// }
/// ```
///
/// A model is looked up by its exact name, then by the longest table entry
/// that is a prefix of it (so `gpt-4o-2024-08-06` is priced as `gpt-4o`),
/// with any `provider/` prefix removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PriceTable {
    models: BTreeMap<String, ModelPrice>,
}

impl Default for PriceTable {
    fn default() -> Self {
        let mut table = PriceTable::empty();
        for (model, input, output, cached) in [
            ("gpt-4o", 2.50, 10.00, Some(1.25)),
            ("gpt-4o-mini", 0.15, 0.60, Some(0.075)),
            ("gpt-4.1", 2.00, 8.00, Some(0.50)),
            ("gpt-4.1-mini", 0.40, 1.60, Some(0.10)),
            ("gpt-4.1-nano", 0.10, 0.40, Some(0.025)),
            ("o3-mini", 1.10, 4.40, Some(0.55)),
            ("o4-mini", 1.10, 4.40, Some(0.275)),
            ("deepseek-chat", 0.27, 1.10, Some(0.07)),
            ("deepseek-reasoner", 0.55, 2.19, Some(0.14)),
            ("claude-3-5-sonnet", 3.00, 15.00, Some(0.30)),
            ("claude-3-7-sonnet", 3.00, 15.00, Some(0.30)),
            ("claude-sonnet-4", 3.00, 15.00, Some(0.30)),
        ] {
            let mut price = ModelPrice::new(input, output);
            price.cached_input = cached;
            table.models.insert(model.to_owned(), price);
        }
        table
    }
}

impl PriceTable {
    /// A table with no prices.
    pub fn empty() -> Self {
        Self {
            models: BTreeMap::new(),
        }
    }

    /// Adds or replaces the price of a model.
    pub fn with(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.models.insert(model.into(), price);
        self
    }

    /// Adds or replaces every price of `other`.
    pub fn extend(&mut self, other: PriceTable) {
        self.models.extend(other.models);
    }

    /// Parses a table from JSON (format in the type's documentation).
    pub fn from_json(json: &str) -> Result<Self, LlmError> {
        let table: PriceTable = serde_json::from_str(json).map_err(|e| {
            LlmError::config(format!(
                "price table is not valid JSON ({e}); expected {{\"model\": {{\"input\": 2.5, \"output\": 10.0}}}} with prices in dollars per million tokens"
            ))
        })?;
        for (model, price) in &table.models {
            let values = [Some(price.input), Some(price.output), price.cached_input];
            if values.iter().flatten().any(|v| !v.is_finite() || *v < 0.0) {
                return Err(LlmError::config(format!(
                    "price table: prices of `{model}` must be non-negative numbers"
                )));
            }
        }
        Ok(table)
    }

    /// The default table with the entries of a JSON file added or replaced.
    pub fn default_with_file(path: &Path) -> Result<Self, LlmError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            LlmError::config(format!("cannot read price table {}: {e}", path.display()))
        })?;
        let overrides = Self::from_json(&text).map_err(|e| match e {
            LlmError::Config { message } => {
                LlmError::config(format!("{}: {message}", path.display()))
            }
            other => other,
        })?;
        let mut table = Self::default();
        table.extend(overrides);
        Ok(table)
    }

    /// The price of a model (exact name, else the longest prefix entry).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        let bare = model.rsplit('/').next().unwrap_or(model);
        for name in [model, bare] {
            if let Some(price) = self.models.get(name) {
                return Some(price);
            }
        }
        self.models
            .iter()
            .filter(|(key, _)| bare.starts_with(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, price)| price)
    }

    /// The cost of one call in dollars, if the model has a price.
    pub fn cost(&self, model: &str, usage: &TokenUsage) -> Option<f64> {
        self.price(model).map(|price| price.cost(usage))
    }
}

/// Cumulative usage of a model over many calls: what the agent and the
/// benchmark harness report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Calls made, failed ones included.
    pub calls: u64,
    /// Calls that returned an error.
    pub failed_calls: u64,
    /// Extra HTTP attempts made by retries.
    pub retries: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from a prompt cache.
    pub cached_tokens: u64,
    /// Calls whose tokens were counted locally because the server reported none.
    pub estimated_calls: u64,
    /// Estimated cost in dollars of the calls whose model has a price.
    pub cost_usd: f64,
    /// Calls whose model has no price, so `cost_usd` leaves them out.
    pub unpriced_calls: u64,
    /// Sum of the calls' latencies.
    pub latency: Duration,
}

impl Usage {
    /// Prompt plus completion tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// What was added since `earlier`, an earlier summary of the same meter:
    /// the usage of one step of a longer run.
    ///
    /// ```
    /// use llm::{ChatResponse, TokenUsage, UsageMeter};
    /// let meter = UsageMeter::default();
    /// meter.record_response("m", &ChatResponse::text("a").with_usage(TokenUsage::new(10, 2)));
    /// let before = meter.summary();
    /// meter.record_response("m", &ChatResponse::text("b").with_usage(TokenUsage::new(5, 1)));
    /// let step = meter.summary().since(&before);
    /// assert_eq!((step.calls, step.total_tokens()), (1, 6));
    /// ```
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            calls: self.calls.saturating_sub(earlier.calls),
            failed_calls: self.failed_calls.saturating_sub(earlier.failed_calls),
            retries: self.retries.saturating_sub(earlier.retries),
            prompt_tokens: self.prompt_tokens.saturating_sub(earlier.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_sub(earlier.completion_tokens),
            cached_tokens: self.cached_tokens.saturating_sub(earlier.cached_tokens),
            estimated_calls: self.estimated_calls.saturating_sub(earlier.estimated_calls),
            cost_usd: (self.cost_usd - earlier.cost_usd).max(0.0),
            unpriced_calls: self.unpriced_calls.saturating_sub(earlier.unpriced_calls),
            latency: self.latency.saturating_sub(earlier.latency),
        }
    }

    fn add_tokens(&mut self, tokens: &TokenUsage, cost: Option<f64>) {
        self.prompt_tokens += tokens.prompt_tokens;
        self.completion_tokens += tokens.completion_tokens;
        self.cached_tokens += tokens.cached_tokens.unwrap_or(0);
        if tokens.estimated {
            self.estimated_calls += 1;
        }
        match cost {
            Some(cost) => self.cost_usd += cost,
            None if tokens.total() > 0 => self.unpriced_calls += 1,
            None => {}
        }
    }
}

impl AddAssign<&Usage> for Usage {
    fn add_assign(&mut self, other: &Usage) {
        self.calls += other.calls;
        self.failed_calls += other.failed_calls;
        self.retries += other.retries;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.estimated_calls += other.estimated_calls;
        self.cost_usd += other.cost_usd;
        self.unpriced_calls += other.unpriced_calls;
        self.latency += other.latency;
    }
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} calls ({} failed, {} retries), {} prompt + {} completion = {} tokens",
            self.calls,
            self.failed_calls,
            self.retries,
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens()
        )?;
        if self.cached_tokens > 0 {
            write!(f, " ({} cached)", self.cached_tokens)?;
        }
        if self.estimated_calls > 0 {
            write!(f, ", {} calls counted locally", self.estimated_calls)?;
        }
        write!(f, ", about ${:.4}", self.cost_usd)?;
        if self.unpriced_calls > 0 {
            write!(f, " (+{} calls without a price)", self.unpriced_calls)?;
        }
        Ok(())
    }
}

/// A shared, thread-safe running total of [`Usage`], priced with a
/// [`PriceTable`]. Clones share the same total.
#[derive(Debug, Clone)]
pub struct UsageMeter {
    total: Arc<Mutex<Usage>>,
    prices: Arc<PriceTable>,
}

impl Default for UsageMeter {
    fn default() -> Self {
        Self::new(PriceTable::default())
    }
}

impl UsageMeter {
    /// A meter at zero that prices calls with `prices`.
    pub fn new(prices: PriceTable) -> Self {
        Self {
            total: Arc::new(Mutex::new(Usage::default())),
            prices: Arc::new(prices),
        }
    }

    /// The total so far.
    pub fn summary(&self) -> Usage {
        self.lock().clone()
    }

    /// The price table in use.
    pub fn prices(&self) -> &PriceTable {
        &self.prices
    }

    /// Adds one successful call; `model` names the model for pricing when
    /// the response does not.
    pub fn record_response(&self, model: &str, response: &ChatResponse) {
        let priced_as = if response.model.is_empty() {
            model
        } else {
            &response.model
        };
        let cost = self.prices.cost(priced_as, &response.usage);
        let mut total = self.lock();
        total.calls += 1;
        total.retries += u64::from(response.attempts.saturating_sub(1));
        total.latency += response.latency;
        total.add_tokens(&response.usage, cost);
    }

    /// Adds the usage of calls metered elsewhere (by another meter, or a
    /// step that reports its own total).
    pub fn add(&self, usage: &Usage) {
        *self.lock() += usage;
    }

    /// Adds one failed call (and the tokens it spent, if any).
    pub fn record_error(&self, model: &str, error: &LlmError) {
        let spent = error.usage().copied();
        let cost = spent.and_then(|tokens| self.prices.cost(model, &tokens));
        let mut total = self.lock();
        total.calls += 1;
        total.failed_calls += 1;
        total.retries += u64::from(error.attempts().saturating_sub(1));
        if let Some(tokens) = spent {
            total.add_tokens(&tokens, cost);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Usage> {
        // Counters stay meaningful even if a holder panicked mid-update.
        self.total
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A [`ChatModel`] wrapper that adds every call to a [`UsageMeter`].
#[derive(Debug)]
pub struct Metered<M> {
    inner: M,
    meter: UsageMeter,
}

impl<M: ChatModel> Metered<M> {
    /// Counts the calls of `inner` in `meter`.
    pub fn new(inner: M, meter: UsageMeter) -> Self {
        Self { inner, meter }
    }

    /// The meter (clone it to read totals elsewhere).
    pub fn meter(&self) -> &UsageMeter {
        &self.meter
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for Metered<M> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let result = self.inner.complete(request).await;
        match &result {
            Ok(response) => self
                .meter
                .record_response(self.inner.model_name(), response),
            Err(error) => self.meter.record_error(self.inner.model_name(), error),
        }
        result
    }

    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_lookup_prefers_the_longest_entry() {
        let table = PriceTable::default();
        assert_eq!(
            table.price("gpt-4o-mini-2024-07-18"),
            table.price("gpt-4o-mini")
        );
        assert_eq!(table.price("gpt-4o-2024-08-06"), table.price("gpt-4o"));
        assert_ne!(table.price("gpt-4o-mini"), table.price("gpt-4o"));
        assert_eq!(table.price("openai/gpt-4.1"), table.price("gpt-4.1"));
        assert_eq!(table.price("llama3"), None);
    }

    #[test]
    fn cost_bills_cached_tokens_at_the_cached_price() {
        let price = ModelPrice::new(2.0, 8.0).with_cached_input(0.5);
        let usage = TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
            cached_tokens: Some(400_000),
            estimated: false,
        };
        let cost = price.cost(&usage);
        assert!(
            (cost - (0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)).abs() < 1e-9,
            "{cost}"
        );
    }

    #[test]
    fn json_file_overrides_and_adds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("prices.json");
        std::fs::write(
            &path,
            r#"{"gpt-4o": {"input": 1, "output": 2}, "local": {"input": 0, "output": 0}}"#,
        )
        .unwrap();
        let table = PriceTable::default_with_file(&path).unwrap();
        assert_eq!(table.price("gpt-4o"), Some(&ModelPrice::new(1.0, 2.0)));
        assert_eq!(table.price("local"), Some(&ModelPrice::new(0.0, 0.0)));
        assert!(table.price("gpt-4.1").is_some());
    }

    #[test]
    fn bad_price_files_say_what_is_expected() {
        let err = PriceTable::from_json(r#"{"m": {"input": "cheap"}}"#).unwrap_err();
        assert!(
            err.to_string().contains("dollars per million tokens"),
            "{err}"
        );
        let err = PriceTable::from_json(r#"{"m": {"input": -1, "output": 1}}"#).unwrap_err();
        assert!(err.to_string().contains("non-negative"), "{err}");
    }

    #[test]
    fn meter_adds_calls_failures_and_costs() {
        let meter = UsageMeter::new(PriceTable::empty().with("m", ModelPrice::new(1.0, 2.0)));
        let mut response = ChatResponse::text("hi").with_usage(TokenUsage::new(1000, 500));
        response.attempts = 3;
        meter.record_response("m", &response);
        meter.record_error(
            "m",
            &LlmError::MalformedToolCall {
                name: "t".into(),
                raw: "{".into(),
                reason: "eof".into(),
                usage: TokenUsage::new(10, 5),
            },
        );
        meter.record_response(
            "unknown",
            &ChatResponse::text("x").with_usage(TokenUsage::new(1, 1)),
        );
        let usage = meter.summary();
        assert_eq!(usage.calls, 3);
        assert_eq!(usage.failed_calls, 1);
        assert_eq!(usage.retries, 2);
        assert_eq!(usage.prompt_tokens, 1011);
        assert_eq!(usage.completion_tokens, 506);
        assert_eq!(usage.unpriced_calls, 1);
        let expected = (1000.0 + 1000.0 + 10.0 + 10.0) / 1e6;
        assert!(
            (usage.cost_usd - expected).abs() < 1e-12,
            "{}",
            usage.cost_usd
        );
        let mut sum = usage.clone();
        sum += &usage;
        assert_eq!(sum.total_tokens(), 2 * usage.total_tokens());
        assert!(usage.to_string().contains("3 calls (1 failed, 2 retries)"));
    }
}
