use std::sync::Arc;

use async_trait::async_trait;

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse};

/// A chat model: anything that turns a conversation into the next assistant
/// turn.
///
/// Object-safe, so the agent can pick a provider at run time and hold it as
/// `Arc<dyn ChatModel>` or `Box<dyn ChatModel>`. Implementations must be
/// cheap to share between tasks (`Send + Sync`) and must not panic on
/// anything a server or a model sends.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Asks for the next assistant turn.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The configured model name (for logs and pricing).
    fn model_name(&self) -> &str;
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        (**self).complete(request).await
    }

    fn model_name(&self) -> &str {
        (**self).model_name()
    }
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Box<M> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        (**self).complete(request).await
    }

    fn model_name(&self) -> &str {
        (**self).model_name()
    }
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for &M {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        (**self).complete(request).await
    }

    fn model_name(&self) -> &str {
        (**self).model_name()
    }
}
