//! What `arbor serve` reads from a request and writes back: the allowed Host names, a question from a GET's
//! parameters or a POST's JSON body (bounded in bytes and in time), and the JSON answers with their status.

use std::time::Instant;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderValue, RETRY_AFTER};
use hyper::{Request, Response, StatusCode};
use serde::Deserialize;

pub type Answered = Response<Full<Bytes>>;

/// One question, as a request asks it (a POST body; a GET's parameters are read into the same).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ask {
    pub query: String,
    pub k: Option<usize>,
    pub method: Option<String>,
    #[serde(default)]
    pub doc: Vec<String>,
    pub max_tokens: Option<usize>,
}

/// The Host names a request may name (DNS rebinding: a page in a browser on this machine can reach a
/// loopback port under a name of its own; answering only the names we expect closes that door).
pub struct Hosts(Vec<String>);

/// The names every server answers.
pub const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Hosts {
    /// The loopback names, the address listened on when it is a specific one, and `extra`.
    pub fn new(listening: &str, extra: &[String]) -> Hosts {
        let mut names: Vec<String> = LOOPBACK.iter().map(|s| s.to_string()).collect();
        let listening = listening.parse::<std::net::IpAddr>().ok().filter(|ip| !ip.is_unspecified()).map(|ip| match ip {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        });
        names.extend(listening);
        names.extend(extra.iter().map(|h| h.trim().to_ascii_lowercase()));
        names.dedup();
        Hosts(names)
    }

    /// `Ok` when the Host header names an allowed host (any port); 400 without one, 421 for another.
    pub fn check(&self, host: Option<&HeaderValue>) -> Result<(), Box<Answered>> {
        let Some(host) = host.and_then(|h| h.to_str().ok()) else {
            return Err(Box::new(error(StatusCode::BAD_REQUEST, "a request without a readable Host header")));
        };
        let name = host_name(host).to_ascii_lowercase();
        if self.0.contains(&name) {
            return Ok(());
        }
        Err(Box::new(error(
            StatusCode::MISDIRECTED_REQUEST,
            &format!("Host {host:?} is not served here: this server answers {} (arbor serve --allow-host NAME for another)", self.0.join(", ")),
        )))
    }
}

/// The name of a Host header without its port (`[::1]:8700` is `[::1]`).
pub fn host_name(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Why a question could not be read: its status and message.
pub struct Unread(pub StatusCode, pub String);

/// The question `request` asks: its JSON body (POST, at most `max_body` bytes, read before `deadline`) or
/// its query parameters (GET).
pub async fn asked(request: Request<Incoming>, max_body: usize, deadline: Instant) -> Result<Ask, Unread> {
    let bad = |e: anyhow::Error| Unread(StatusCode::BAD_REQUEST, format!("{e:#}"));
    if request.method() != hyper::Method::POST {
        return parameters(request.uri().query().unwrap_or("")).map_err(bad);
    }
    let declared = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let too_large = || Unread(StatusCode::PAYLOAD_TOO_LARGE, format!("a body of more than {max_body} bytes"));
    if declared.is_some_and(|n| n > max_body as u64) {
        return Err(too_large());
    }
    let body = Limited::new(request.into_body(), max_body);
    let bytes = match tokio::time::timeout_at(deadline.into(), body.collect()).await {
        Err(_) => return Err(Unread(StatusCode::REQUEST_TIMEOUT, "the body did not arrive before the request's deadline".into())),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Ok(Err(e)) => return Err(Unread(StatusCode::BAD_REQUEST, format!("the body could not be read: {e}"))),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    serde_json::from_slice(&bytes)
        .context("the body is not a question ({\"query\": ..., \"k\"?, \"method\"?, \"doc\"?, \"max_tokens\"?})")
        .map_err(bad)
}

/// A GET's question from its query component.
pub fn parameters(query: &str) -> anyhow::Result<Ask> {
    let mut ask = Ask::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (name, value) = (decoded(name)?, decoded(value)?);
        let number = || value.parse::<usize>().with_context(|| format!("{name}={value:?} is not a whole number"));
        match name.as_str() {
            "q" | "query" => ask.query = value.clone(),
            "k" => ask.k = Some(number()?),
            "max_tokens" => ask.max_tokens = Some(number()?),
            "method" => ask.method = Some(value.clone()),
            "doc" => ask.doc.push(value.clone()),
            other => anyhow::bail!("unknown parameter {other:?} (q, k, method, doc, max_tokens)"),
        }
    }
    Ok(ask)
}

/// A URL's query component decoded: `+` is a space, `%XX` a byte; the bytes must be UTF-8.
pub fn decoded(text: &str) -> anyhow::Result<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.with_context(|| format!("a bad escape in {text:?}"))?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).with_context(|| format!("{text:?} decodes to bytes that are not UTF-8"))
}

/// A response of `status` with `body` of `content_type`.
pub fn respond(status: StatusCode, content_type: &'static str, body: String) -> Answered {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

pub fn json(status: StatusCode, body: String) -> Answered {
    respond(status, "application/json", body)
}

/// `{"error": message}` with `status`.
pub fn error(status: StatusCode, message: &str) -> Answered {
    json(status, serde_json::json!({ "error": message }).to_string())
}

/// 503 with Retry-After: the server is too busy (or was too slow) to answer now.
pub fn unavailable(message: &str, retry_after_s: u64) -> Answered {
    let mut response = error(StatusCode::SERVICE_UNAVAILABLE, message);
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry_after_s));
    response
}

/// 405 naming the verbs the path answers.
pub fn not_allowed(verb: &hyper::Method, path: &str, allow: &'static str) -> Answered {
    let mut response = error(StatusCode::METHOD_NOT_ALLOWED, &format!("{verb} {path} is not served: {allow} {path}"));
    response.headers_mut().insert(hyper::header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The request's Host header.
pub fn host(request: &Request<Incoming>) -> Option<&HeaderValue> {
    request.headers().get(HOST)
}
