//! `arbor serve INDEX [--host 127.0.0.1] [--port 8700]`: `arbor query` over HTTP, for pipelines that are
//! not in Rust (a LlamaIndex or LangChain retriever calling it). The index, the encoder and the index's
//! trained model are opened once ([`super::query::Opened`]); each request is answered with the JSON object
//! `arbor query --json` prints for the same question, method, k, documents and token budget.
//!
//! ```text
//! GET  /query?q=QUESTION[&k=5][&method=Flat][&doc=KEY]...[&max_tokens=N]
//! POST /query   {"query": "QUESTION", "k": 5, "method": "Flat", "doc": ["KEY"], "max_tokens": 2000}
//! GET  /health  {"documents": N, "units": N, "model": "the trained row it embeds as, or null"}
//! ```
//!
//! Plain HTTP/1.1 on the standard library's listener (no dependency, nothing added to the build): one
//! request a connection, answered in turn, `Connection: close`. A method is served once and kept for later
//! requests. A bad request is answered 400 with `{"error": "..."}`, never by stopping the server.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde::Deserialize;

use super::EncoderArgs;
use super::approximate::SearchArgs;
use super::query::{Answer, Opened};
use crate::methods::{Method, Served};

#[derive(Debug, Parser)]
pub struct ServeArgs {
    /// The index file built by `arbor index`
    pub index: PathBuf,
    /// The address to listen on (127.0.0.1: this machine only)
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port (0: any free one; the address is printed on the first line of standard output)
    #[arg(long, default_value_t = 8700)]
    pub port: u16,
    /// The method of a request that names none, as an experiment file writes it
    #[arg(long, default_value = "Flat")]
    pub method: Method,
    /// The k of a request that names none
    #[arg(short = 'k', long, default_value_t = 5)]
    pub k: usize,
    /// The token budget of a request that names none (none: every item of the top k)
    #[arg(long)]
    pub max_tokens: Option<usize>,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    #[command(flatten)]
    pub search: SearchArgs,
}

/// One question, as a request asks it (a POST body; a GET's parameters are read into the same).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ask {
    query: String,
    k: Option<usize>,
    method: Option<String>,
    #[serde(default)]
    doc: Vec<String>,
    max_tokens: Option<usize>,
}

/// A request: its method, path, decoded query parameters and body.
struct Request {
    verb: String,
    path: String,
    params: Vec<(String, String)>,
    body: Vec<u8>,
}

/// The largest request line plus headers, and the largest body, read.
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 1024 * 1024;

pub fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.k > 0, "-k must be at least 1");
    let opened = Opened::open(&args.index, &args.encoder, &args.search)?;
    let listener = TcpListener::bind((args.host.as_str(), args.port)).with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let address = listener.local_addr()?;
    println!("listening on http://{address}");
    std::io::stdout().flush()?;
    eprintln!("arbor serve: {} ({} documents, {} units)", args.index.display(), opened.index.corpus.documents.len(), opened.index.units.len());
    let mut served: HashMap<String, Served> = HashMap::new();
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let (status, body) = match read_request(&mut stream) {
            Ok(request) => respond(&opened, &mut served, args, &request),
            Err(e) => (400, error(&format!("{e:#}"))),
        };
        // A client gone before its answer costs nothing but its answer.
        let _ = write_response(&mut stream, status, &body);
    }
    Ok(())
}

/// The status and JSON body answering `request`.
fn respond<'a>(opened: &'a Opened, served: &mut HashMap<String, Served<'a>>, args: &ServeArgs, request: &Request) -> (u16, String) {
    match (request.verb.as_str(), request.path.as_str()) {
        ("GET", "/health") => {
            let model = opened.record().map(|r| r.method.clone());
            let health = serde_json::json!({"documents": opened.index.corpus.documents.len(), "units": opened.index.units.len(), "model": model});
            (200, health.to_string())
        }
        ("GET" | "POST", "/query") => match asked(request).and_then(|ask| answer(opened, served, args, &ask)) {
            Ok(json) => (200, json),
            Err(e) => (400, error(&format!("{e:#}"))),
        },
        (_, "/query" | "/health") => (405, error(&format!("{} {} is not served: GET or POST /query, GET /health", request.verb, request.path))),
        _ => (404, error(&format!("no {}: GET or POST /query, GET /health", request.path))),
    }
}

/// The question a request asks: a POST's JSON body, or a GET's parameters.
fn asked(request: &Request) -> anyhow::Result<Ask> {
    if request.verb == "POST" {
        return serde_json::from_slice(&request.body)
            .context("the body is not a question ({\"query\": ..., \"k\"?, \"method\"?, \"doc\"?, \"max_tokens\"?})");
    }
    let mut ask = Ask::default();
    for (name, value) in &request.params {
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

/// `arbor query --json`'s object for `ask`, its method served once and kept.
fn answer<'a>(opened: &'a Opened, served: &mut HashMap<String, Served<'a>>, args: &ServeArgs, ask: &Ask) -> anyhow::Result<String> {
    anyhow::ensure!(!ask.query.trim().is_empty(), "ask a question: q=... (GET) or {{\"query\": ...}} (POST)");
    let k = ask.k.unwrap_or(args.k);
    anyhow::ensure!(k > 0, "k must be at least 1");
    let method: Method = match &ask.method {
        Some(m) => m.parse()?,
        None => args.method.clone(),
    };
    let name = ron::to_string(&method)?;
    if !served.contains_key(&name) {
        served.insert(name.clone(), method.spec().serve(&opened.serving())?);
    }
    let docs = opened.index.scope(&ask.doc)?;
    let results = opened.ask(&served[&name], &ask.query, k, &docs, ask.max_tokens.or(args.max_tokens));
    Ok(serde_json::to_string(&Answer { query: &ask.query, method: &name, results })?)
}

fn error(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// Reads one request: the request line, the headers (up to `MAX_HEAD` bytes), and a body of the declared
/// `Content-Length` (up to `MAX_BODY`).
fn read_request(stream: &mut TcpStream) -> anyhow::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream);
    let (mut head, mut read) = (Vec::new(), 0usize);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        let n = (&mut reader).take((MAX_HEAD - read) as u64 + 1).read_line(&mut line)?;
        read += n;
        anyhow::ensure!(n > 0 && line.ends_with('\n') && read <= MAX_HEAD, "the request ends before its headers do, or they exceed {MAX_HEAD} bytes");
        let line = line.trim_end().to_owned();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().context("a Content-Length that is not a number")?;
        }
        head.push(line);
    }
    anyhow::ensure!(length <= MAX_BODY, "a body of {length} bytes: at most {MAX_BODY}");
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let first = head.first().context("an empty request")?;
    let mut words = first.split_whitespace();
    let (verb, target) = (words.next().unwrap_or_default().to_owned(), words.next().context("a request line without a path")?);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let params = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            Ok((decoded(name)?, decoded(value)?))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(Request { verb, path: path.to_owned(), params, body })
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

fn write_response(stream: &mut TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
