//! git's smart HTTP protocol over reqwest, for git2.
//!
//! The workspace builds libgit2 without TLS (no OpenSSL), so libgit2
//! cannot fetch `https://` by itself. This registers a smart subtransport
//! for `https` and `http` (as the git2-curl crate does over curl): the
//! ref advertisement is `GET URL/info/refs?service=git-upload-pack`, the
//! negotiation and pack `POST URL/git-upload-pack`, through the same
//! rustls client as the search. Only fetching: pushes are refused.

use std::io::{self, Read, Write};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};

use crate::Error;

/// Largest request body libgit2 may write (its negotiation: a few KiB of
/// `want`/`have` lines for a shallow clone).
const MAX_REQUEST_BYTES: usize = 16 << 20;

/// Chunks of a response buffered between the HTTP thread and libgit2.
const CHUNKS_IN_FLIGHT: usize = 64;

/// Largest ref advertisement read (`info/refs`): libgit2 keeps every ref
/// in memory, and the clone's cap counts only the pack. A ref is one
/// line of 60 to 100 bytes, so this is most of a million refs.
const MAX_ADVERTISEMENT_BYTES: usize = 64 << 20;

/// No byte for this long ends the transfer.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Registers the transport once per process; later calls return the
/// first registration's result.
pub(crate) fn ensure_registered() -> Result<(), Error> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            for scheme in ["https", "http"] {
                // SAFETY: `register` must not run concurrently with the
                // creation of other transports. The OnceLock runs it once,
                // before this crate's first clone; nothing else in the
                // workspace creates git transports (importance's git2 use
                // reads a local repository's history, no remote).
                #[allow(unsafe_code)]
                let registered = unsafe {
                    git2::transport::register(scheme, |remote| {
                        Transport::smart(remote, true, HttpSubtransport)
                    })
                };
                registered.map_err(|e| e.message().to_owned())?;
            }
            Ok(())
        })
        .clone()
        .map_err(|message| Error::Setup(format!("cannot register the HTTPS transport: {message}")))
}

struct HttpSubtransport;

impl SmartSubtransport for HttpSubtransport {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let base = url.trim_end_matches('/');
        let request = match action {
            Service::UploadPackLs => Request {
                post: false,
                url: format!("{base}/info/refs?service=git-upload-pack"),
                content_type: None,
                accept: "application/x-git-upload-pack-advertisement",
                max_bytes: MAX_ADVERTISEMENT_BYTES,
            },
            Service::UploadPack => Request {
                post: true,
                url: format!("{base}/git-upload-pack"),
                content_type: Some("application/x-git-upload-pack-request"),
                accept: "application/x-git-upload-pack-result",
                // The pack: the clone's cap stops it (`transfer_progress`).
                max_bytes: usize::MAX,
            },
            Service::ReceivePackLs | Service::ReceivePack => {
                return Err(git2::Error::from_str(
                    "repo-find only fetches; pushing is not supported",
                ));
            }
        };
        Ok(Box::new(HttpStream {
            request: Some(request),
            body: Vec::new(),
            response: None,
            chunk: Vec::new(),
            at: 0,
        }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        Ok(())
    }
}

struct Request {
    post: bool,
    url: String,
    content_type: Option<&'static str>,
    accept: &'static str,
    /// The response is an error past this many bytes.
    max_bytes: usize,
}

/// One request: libgit2 writes the body, then reads the response, which
/// a thread of its own streams in through a bounded channel.
struct HttpStream {
    request: Option<Request>,
    body: Vec<u8>,
    response: Option<Receiver<io::Result<Vec<u8>>>>,
    chunk: Vec<u8>,
    at: usize,
}

impl Write for HttpStream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.response.is_some() {
            return Err(io::Error::other("the request was already sent"));
        }
        if self.body.len() + data.len() > MAX_REQUEST_BYTES {
            return Err(io::Error::other("the fetch negotiation is too large"));
        }
        self.body.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Read for HttpStream {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if let Some(request) = self.request.take() {
            let (sender, receiver) = sync_channel(CHUNKS_IN_FLIGHT);
            let body = std::mem::take(&mut self.body);
            std::thread::Builder::new()
                .name("repo-find-http".to_owned())
                .spawn(move || fetch(&request, body, &sender))
                .map_err(io::Error::other)?;
            self.response = Some(receiver);
        }
        while self.at == self.chunk.len() {
            let Some(response) = &self.response else {
                return Ok(0);
            };
            match response.recv_timeout(READ_TIMEOUT) {
                Ok(Ok(chunk)) => {
                    self.chunk = chunk;
                    self.at = 0;
                }
                Ok(Err(error)) => return Err(error),
                // The sender is gone: the response ended.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("no data for {} s", READ_TIMEOUT.as_secs()),
                    ));
                }
            }
        }
        let n = out.len().min(self.chunk.len() - self.at);
        out[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Runs one request on a runtime of this thread's own (the caller may be
/// inside another runtime) and sends the response's chunks; stops when
/// the reader is gone.
fn fetch(request: &Request, body: Vec<u8>, sender: &SyncSender<io::Result<Vec<u8>>>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let _ = sender.send(Err(error));
            return;
        }
    };
    runtime.block_on(async {
        let client = match crate::github::http_client().and_then(|builder| {
            builder
                .connect_timeout(Duration::from_secs(30))
                .read_timeout(READ_TIMEOUT)
                .user_agent(concat!(
                    "git/2.0 (repo-agent-find/",
                    env!("CARGO_PKG_VERSION"),
                    ")"
                ))
                .build()
                .map_err(|e| Error::Setup(e.to_string()))
        }) {
            Ok(client) => client,
            Err(error) => {
                let _ = sender.send(Err(io::Error::other(error.to_string())));
                return;
            }
        };
        let mut builder = if request.post {
            client.post(&request.url).body(body)
        } else {
            client.get(&request.url)
        };
        builder = builder.header("Accept", request.accept);
        if let Some(content_type) = request.content_type {
            builder = builder.header("Content-Type", content_type);
        }
        let mut response = match builder.send().await {
            Ok(response) => response,
            Err(error) => {
                let _ = sender.send(Err(io::Error::other(format!("{}: {error}", request.url))));
                return;
            }
        };
        if !response.status().is_success() {
            let _ = sender.send(Err(io::Error::other(format!(
                "{} answered HTTP {}",
                request.url,
                response.status().as_u16()
            ))));
            return;
        }
        let mut received = 0usize;
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    received = received.saturating_add(chunk.len());
                    if received > request.max_bytes {
                        let _ = sender.send(Err(io::Error::other(format!(
                            "{} answered more than {} bytes",
                            request.url, request.max_bytes
                        ))));
                        return;
                    }
                    if sender.send(Ok(chunk.to_vec())).is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(error) => {
                    let _ = sender.send(Err(io::Error::other(error.to_string())));
                    return;
                }
            }
        }
    });
}
