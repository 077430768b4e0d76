//! The Streamable HTTP transport, on loopback only.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::{Error, McpServer};

/// Most connections served at once: each is a client's session or one of
/// its requests, and a handful is what a coding agent opens.
const MAX_CONNECTIONS: usize = 64;

impl McpServer {
    /// Serves MCP's Streamable HTTP transport at `http://ADDR/mcp` until
    /// `shutdown` resolves. `addr` must be a loopback address (anyone who
    /// reaches the server reads the repositories); port 0 picks a free
    /// one, which `bound` is told before the first connection is taken.
    pub async fn serve_http(
        self,
        addr: SocketAddr,
        bound: impl FnOnce(SocketAddr),
        shutdown: impl std::future::Future<Output = ()>,
    ) -> Result<(), Error> {
        if !addr.ip().is_loopback() {
            return Err(Error::NotLoopback(addr));
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Io {
                context: format!("cannot listen on {addr}"),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| Error::Io {
            context: "cannot read the listening address".to_owned(),
            source,
        })?;
        bound(local);
        // The default configuration refuses a Host header that does not
        // name this machine (DNS rebinding).
        let config = StreamableHttpServerConfig::default();
        let cancel = config.cancellation_token.clone();
        let service = {
            let server = self.clone();
            StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                config,
            )
        };
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Out of descriptors, say: the next accept may succeed.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                break;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let handler = hyper::service::service_fn(move |request| {
                    let service = service.clone();
                    async move { Ok::<_, std::convert::Infallible>(service.handle(request).await) }
                });
                if let Err(error) = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), handler)
                    .await
                {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                }
            });
        }
        cancel.cancel();
        Ok(())
    }
}
