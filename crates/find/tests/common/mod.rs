//! A loopback HTTP server for the GitHub API's recorded answers, shared
//! with the `repo-agent find` tests (`crates/cli/tests/find_cli.rs`).

#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One answer: status, extra headers, body.
pub type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

/// A request as the server saw it: the request line and the headers.
pub type Seen = Arc<Mutex<Vec<String>>>;

/// Serves at most 64 connections on 127.0.0.1, each answered by `route`
/// (given the path and how many requests came before).
pub fn serve(
    route: impl Fn(&str, usize) -> Answer + Send + 'static,
) -> std::io::Result<(String, Seen)> {
    serve_with_body(move |path, _, n| route(path, n))
}

/// [`serve`], with the request's body (read by its Content-Length, at
/// most 16 MiB) passed to `route` too.
pub fn serve_with_body(
    route: impl Fn(&str, &[u8], usize) -> Answer + Send + 'static,
) -> std::io::Result<(String, Seen)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().take(64).enumerate() {
            if let Ok(stream) = stream {
                answer(stream, &log, |path, body| route(path, body, n));
            }
        }
    });
    Ok((url, seen))
}

/// [`serve`] with each connection answered on a thread of its own, so
/// that requests sent together are seen together (at most 64).
pub fn serve_concurrently(
    route: impl Fn(&str) -> Answer + Send + Sync + 'static,
) -> std::io::Result<(String, Seen)> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let route = Arc::new(route);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(stream) = stream else { continue };
            let (log, route) = (Arc::clone(&log), Arc::clone(&route));
            std::thread::spawn(move || answer(stream, &log, |path, _| route(path)));
        }
    });
    Ok((url, seen))
}

/// Reads one request from `stream`, logs its head and writes `route`'s answer.
fn answer(stream: TcpStream, log: &Seen, route: impl FnOnce(&str, &[u8]) -> Answer) {
    let mut stream = stream;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut head = String::new();
    for _ in 0..100 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let lower = l.to_ascii_lowercase();
            lower
                .strip_prefix("content-length:")
                .and_then(|v| v.trim().parse::<usize>().ok())
        })
        .unwrap_or(0)
        .min(16 << 20);
    let mut request_body = vec![0u8; length];
    if reader.read_exact(&mut request_body).is_err() {
        return;
    }
    if let Ok(mut log) = log.lock() {
        log.push(head.clone());
    }
    let (status, headers, body) = route(&path, &request_body);
    let mut response = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        response.push_str(&format!("{name}: {value}\r\n"));
    }
    response.push_str("\r\n");
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.write_all(&body);
    let _ = stream.flush();
    // Drain what the client may still send, so it sees the answer.
    let _ = reader.read(&mut [0u8; 1024]);
}
