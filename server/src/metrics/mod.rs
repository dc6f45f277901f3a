//! The Prometheus endpoint: `GET /metrics` over HTTP/1.1 on `metrics_listen_address`:
//! `metrics_port` (off when the port is 0, loopback by default), answering with
//! [`exposition::render`].
//!
//! A deliberately small HTTP server on tokio, since a scraper sends one simple request per
//! connection: read the request head, answer, close. Bounds: at most
//! [`MAX_CONNECTIONS`] requests are served at once (further connections get `503` and are
//! closed), a request head may have [`MAX_REQUEST_BYTES`] bytes and must arrive within
//! [`REQUEST_TIMEOUT`]; anything else gets `400`/`404`/`405` and the connection is
//! closed. The body is rendered from snapshots, so a scrape never makes an I/O issuer wait.

pub mod exposition;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use iolab_engine::Database;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Requests served at the same time.
pub const MAX_CONNECTIONS: usize = 8;
/// Largest request head read.
pub const MAX_REQUEST_BYTES: usize = 8192;
/// Time a client has to send its request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Binds the endpoint and serves it on the current runtime; `Ok(None)` when it is off.
pub async fn start(
    db: Arc<Database>,
    address: &str,
    port: i32,
) -> Result<Option<SocketAddr>, String> {
    if port == 0 {
        return Ok(None);
    }
    let ip = match address {
        "localhost" => "127.0.0.1",
        "*" => "0.0.0.0",
        other => other,
    };
    let addr: SocketAddr = format!("{ip}:{port}")
        .parse()
        .or_else(|_| format!("[{ip}]:{port}").parse())
        .map_err(|_| format!("invalid metrics_listen_address \"{address}\""))?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("could not listen for /metrics on {addr}: {e}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    tokio::spawn(serve(db, listener));
    Ok(Some(bound))
}

async fn serve(db: Arc<Database>, listener: TcpListener) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let (mut socket, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("/metrics accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            let _ = respond(&mut socket, "503 Service Unavailable", "busy\n").await;
            continue;
        };
        let db = db.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = handle(&db, &mut socket).await {
                tracing::debug!("/metrics request failed: {e}");
            }
        });
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    Metrics,
    NotFound,
    BadMethod,
    Malformed,
}

/// Parses the request line of `head` (`GET /metrics HTTP/1.1`; a query string is ignored).
fn parse_request(head: &[u8]) -> Request {
    let Ok(text) = std::str::from_utf8(head) else {
        return Request::Malformed;
    };
    let line = text.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Request::Malformed;
    };
    if !version.starts_with("HTTP/1.") {
        return Request::Malformed;
    }
    if method != "GET" {
        return Request::BadMethod;
    }
    match target.split('?').next() {
        Some("/metrics") => Request::Metrics,
        _ => Request::NotFound,
    }
}

async fn handle(db: &Database, socket: &mut TcpStream) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let complete = tokio::time::timeout(REQUEST_TIMEOUT, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await?;
            if n == 0 || head.len() + n > MAX_REQUEST_BYTES {
                return Ok::<bool, std::io::Error>(false);
            }
            head.extend_from_slice(&buf[..n]);
        }
        Ok(true)
    })
    .await;
    let request = match complete {
        Ok(Ok(true)) => parse_request(&head),
        Ok(Ok(false)) => Request::Malformed,
        Ok(Err(e)) => return Err(e),
        Err(_) => return Ok(()),
    };
    match request {
        Request::Metrics => respond(socket, "200 OK", &exposition::render(db)).await,
        Request::NotFound => respond(socket, "404 Not Found", "try /metrics\n").await,
        Request::BadMethod => respond(socket, "405 Method Not Allowed", "GET only\n").await,
        Request::Malformed => respond(socket, "400 Bad Request", "bad request\n").await,
    }
}

async fn respond(socket: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await?;
    socket.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics
        );
        assert_eq!(
            parse_request(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Request::Metrics
        );
        assert_eq!(parse_request(b"GET / HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(
            parse_request(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Request::BadMethod
        );
        assert_eq!(parse_request(b"hello\r\n\r\n"), Request::Malformed);
        assert_eq!(
            parse_request(b"GET /metrics SPDY\r\n\r\n"),
            Request::Malformed
        );
    }
}
