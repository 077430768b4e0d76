//! Registry-only egress for `pip` in a container.
//!
//! pip needs the package registry, and what it installs runs code of its own
//! (a `setup.py`, a build backend). Giving that call the host's network
//! (`--share-net`) also gave it the host's loopback and everything else the
//! host reaches: a `setup.py` reached a service on the host's 127.0.0.1.
//!
//! So the call keeps its private network namespace (a loopback of its own,
//! nothing else) and reaches the registry through two relays: inside the
//! container, [`FORWARDER`] (a few lines of Python, run by the call itself)
//! listens on the container's loopback and passes each connection to a Unix
//! socket in the sandbox's home; outside, [`RegistryProxy`] answers on that
//! socket as an HTTP proxy that allows only `CONNECT` to the registry's hosts
//! ([`registry_hosts`]) on their HTTPS port, and never to a loopback or
//! unspecified address. pip is pointed at the relay with `HTTPS_PROXY`, which
//! the build steps it starts inherit.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;

/// The relay inside the container: listens on the container's loopback,
/// writes its port to a file, and passes each connection to the proxy's Unix
/// socket. Arguments: the socket, the port file.
pub(crate) const FORWARDER: &str = r#"import os, socket, sys, threading
sock_path, port_file = sys.argv[1], sys.argv[2]
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)
with open(port_file + ".part", "w") as f:
    f.write(str(server.getsockname()[1]))
os.rename(port_file + ".part", port_file)

def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

def serve(client):
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(sock_path)
    except OSError:
        client.close()
        return
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    pipe(upstream, client)

while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"#;

/// Starts the forwarder in the background, waits for its port, points pip
/// at it and runs the rest of the arguments (`bash -c WRAPPER wrapper PYTHON
/// FORWARDER_FILE SOCKET PORT_FILE pip-args...`).
pub(crate) const WRAPPER: &str = r#"python=$1 forwarder=$2 sock=$3 port_file=$4
shift 4
"$python" -I "$forwarder" "$sock" "$port_file" &
for _ in $(seq 1 100); do [ -s "$port_file" ] && break; sleep 0.05; done
if [ ! -s "$port_file" ]; then echo "sandbox: the registry relay did not start" >&2; exit 70; fi
proxy="http://127.0.0.1:$(cat "$port_file")"
export HTTPS_PROXY="$proxy" https_proxy="$proxy" HTTP_PROXY="$proxy" http_proxy="$proxy"
unset NO_PROXY no_proxy
"$@"
"#;

/// The longest request head the proxy reads before refusing.
const MAX_HEAD: usize = 8 * 1024;

/// How long connecting to the registry may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The hosts pip may reach: PyPI's two, and those of any index configured for
/// pip on this machine (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, `index-url` and
/// `extra-index-url` in `/etc/pip.conf`, `/etc/xdg/pip/pip.conf` and the
/// caller's `pip.conf`), each with the port its URL names (443 by default).
pub(crate) fn registry_hosts() -> Vec<(String, u16)> {
    let mut hosts = vec![
        ("pypi.org".to_owned(), 443),
        ("files.pythonhosted.org".to_owned(), 443),
    ];
    let mut urls: Vec<String> = ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    let mut files = vec![
        PathBuf::from("/etc/pip.conf"),
        PathBuf::from("/etc/xdg/pip/pip.conf"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        files.push(Path::new(&home).join(".config/pip/pip.conf"));
        files.push(Path::new(&home).join(".pip/pip.conf"));
    }
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let mut in_value = false;
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some((key, value)) = trimmed.split_once(['=', ':'])
                && !line.starts_with([' ', '\t'])
            {
                in_value = matches!(key.trim(), "index-url" | "extra-index-url");
                if in_value {
                    urls.extend(value.split_whitespace().map(str::to_owned));
                }
            } else if in_value && line.starts_with([' ', '\t']) {
                urls.extend(trimmed.split_whitespace().map(str::to_owned));
            } else {
                in_value = false;
            }
        }
    }
    for url in urls {
        if let Some(host) = host_of(&url)
            && !hosts.contains(&host)
        {
            hosts.push(host);
        }
    }
    hosts
}

/// The host and port of an `http(s)://[user@]host[:port]/...` URL.
fn host_of(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            (host, port.parse().ok()?)
        }
        _ => (authority, default),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (!host.is_empty()).then(|| (host.to_ascii_lowercase(), port))
}

/// An HTTP proxy on a Unix socket that lets through only `CONNECT` to the
/// registry hosts; stopped and its socket removed when dropped.
#[derive(Debug)]
pub(crate) struct RegistryProxy {
    socket: PathBuf,
    task: JoinHandle<()>,
}

impl RegistryProxy {
    /// Listens on `socket` (replacing a stale one), open to the code's user.
    pub(crate) fn start(
        socket: PathBuf,
        allowed: Vec<(String, u16)>,
        owner: Option<crate::RunAs>,
    ) -> std::io::Result<Self> {
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket)?;
        if let Some(user) = owner {
            std::os::unix::fs::lchown(&socket, Some(user.uid), Some(user.gid))?;
        }
        let allowed = Arc::new(allowed);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                let allowed = Arc::clone(&allowed);
                tokio::spawn(async move {
                    if let Err(error) = relay(stream, &allowed).await {
                        tracing::debug!(%error, "registry relay ended");
                    }
                });
            }
        });
        Ok(Self { socket, task })
    }
}

impl Drop for RegistryProxy {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// Serves one connection: reads a `CONNECT host:port` request, checks it,
/// connects, answers 200 and copies both ways until either side closes.
async fn relay(mut client: UnixStream, allowed: &[(String, u16)]) -> std::io::Result<()> {
    let head = read_head(&mut client).await?;
    let target = match parse_connect(&head) {
        Some((host, port)) if allowed.iter().any(|(h, p)| *h == host && *p == port) => (host, port),
        Some((host, port)) => {
            tracing::warn!(host, port, "refused: not the package registry");
            return refuse(&mut client, "403 Forbidden", "only the package registry").await;
        }
        None => {
            return refuse(&mut client, "405 Method Not Allowed", "CONNECT only").await;
        }
    };
    let addresses: Vec<std::net::SocketAddr> =
        match tokio::net::lookup_host((target.0.as_str(), target.1)).await {
            Ok(found) => found.filter(|a| reachable(a.ip())).collect(),
            Err(_) => Vec::new(),
        };
    let Some(address) = addresses.first() else {
        return refuse(&mut client, "502 Bad Gateway", "no public address").await;
    };
    let upstream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address)).await;
    let Ok(Ok(mut upstream)) = upstream else {
        return refuse(&mut client, "504 Gateway Timeout", "cannot connect").await;
    };
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Never the host's own loopback, nor an unspecified address.
fn reachable(ip: IpAddr) -> bool {
    !(ip.is_loopback() || ip.is_unspecified())
}

async fn read_head(client: &mut UnixStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut byte = [0u8; 1];
    // A bare `\n\n` ends a head too: HTTP/1.1 lets a recipient accept LF alone.
    while head.len() < MAX_HEAD && !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if client.read(&mut byte).await? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    Ok(head)
}

/// `host:port` of a `CONNECT host:port HTTP/1.x` request head.
fn parse_connect(head: &[u8]) -> Option<(String, u16)> {
    let text = std::str::from_utf8(head).ok()?;
    let line = text.lines().next()?;
    let mut parts = line.split(' ');
    if parts.next()? != "CONNECT" {
        return None;
    }
    let authority = parts.next()?;
    if !parts.next()?.starts_with("HTTP/1.") {
        return None;
    }
    let (host, port) = authority.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_ascii_lowercase(), port.parse().ok()?))
}

async fn refuse(client: &mut UnixStream, status: &str, why: &str) -> std::io::Result<()> {
    let body = format!("sandbox: {why}\n");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn connect_requests_are_read_and_others_are_not() {
        assert_eq!(
            parse_connect(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org\r\n\r\n"),
            Some(("pypi.org".to_owned(), 443))
        );
        assert_eq!(
            parse_connect(b"CONNECT PyPI.org:443 HTTP/1.0\r\n\r\n"),
            Some(("pypi.org".to_owned(), 443))
        );
        assert_eq!(
            parse_connect(b"GET http://pypi.org/ HTTP/1.1\r\n\r\n"),
            None
        );
        assert_eq!(parse_connect(b"CONNECT pypi.org HTTP/1.1\r\n\r\n"), None);
        assert_eq!(parse_connect(b"\xff\xfe"), None);
    }

    #[test]
    fn index_urls_give_their_host_and_port() {
        assert_eq!(
            host_of("https://user:pw@mirror.example/simple/"),
            Some(("mirror.example".to_owned(), 443))
        );
        assert_eq!(
            host_of("http://10.0.0.5:8080/simple"),
            Some(("10.0.0.5".to_owned(), 8080))
        );
        assert_eq!(host_of("file:///opt/wheels"), None);
        let hosts = registry_hosts();
        assert!(hosts.contains(&("pypi.org".to_owned(), 443)));
    }

    #[test]
    fn loopback_is_never_reachable() {
        assert!(!reachable("127.0.0.1".parse().unwrap()));
        assert!(!reachable("::1".parse().unwrap()));
        assert!(!reachable("0.0.0.0".parse().unwrap()));
        assert!(reachable("151.101.0.223".parse().unwrap()));
    }

    #[tokio::test]
    async fn the_proxy_refuses_other_hosts_and_relays_allowed_ones() {
        // An "allowed" host that resolves to loopback is still refused: the
        // registry's name cannot be turned into a way to the host.
        let dir = tempfile::tempdir().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let socket = dir.path().join("proxy.sock");
        let proxy =
            RegistryProxy::start(socket.clone(), vec![("localhost".to_owned(), port)], None)
                .unwrap();
        for (request, status) in [
            (
                "CONNECT evil.example:443 HTTP/1.1\r\n\r\n".to_owned(),
                "403",
            ),
            (format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"), "502"),
            ("GET / HTTP/1.1\r\n\r\n".to_owned(), "405"),
        ] {
            let mut client = UnixStream::connect(&socket).await.unwrap();
            client.write_all(request.as_bytes()).await.unwrap();
            let mut answer = String::new();
            client.read_to_string(&mut answer).await.unwrap();
            assert!(
                answer.starts_with(&format!("HTTP/1.1 {status}")),
                "{request}: {answer}"
            );
        }
        drop(proxy);
        assert!(!socket.exists());
    }
}
