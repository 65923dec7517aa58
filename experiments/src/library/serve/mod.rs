//! `arbor serve INDEX [--host 127.0.0.1] [--port 8700]`: `arbor query` over HTTP, for pipelines that are
//! not in Rust (a LlamaIndex or LangChain retriever calling it: scripts/arbor_retrievers.py). The index, the
//! encoder and the index's trained model are opened once ([`super::query::Opened`]) and shared read-only;
//! each request is answered with the JSON object `arbor query --json` prints for the same question, method,
//! k, documents and token budget.
//!
//! ```text
//! GET  /query?q=QUESTION[&k=5][&method=Flat][&doc=KEY]...[&max_tokens=N]
//! POST /query   {"query": "QUESTION", "k": 5, "method": "Flat", "doc": ["KEY"], "max_tokens": 2000}
//! GET  /health  {"documents": N, "units": N, "model": "the trained row it embeds as, or null"}
//! GET  /metrics requests by route and status, latency quantiles, the queue (Prometheus' text format)
//! ```
//!
//! HTTP/1.1 by hyper on tokio (hyper: the HTTP implementation under axum, reqwest and most of Rust's
//! services; nothing of a framework is needed for four routes). One thread reads and writes every
//! connection; encoding and search run on a bounded pool ([`pool`]: `--workers` threads, a queue of
//! `--queue`), so a burst waits in the queue and a request that finds it full is answered 503 with
//! Retry-After. What a client can hold is bounded: a connection that sends no complete request head within
//! `--idle-timeout` seconds (idle between keep-alive requests included) is closed; a request must be
//! answered within `--deadline` seconds of its head (408 while its body is still arriving, 503 after);
//! bodies are at most `--max-body` bytes (413), heads 64 KiB (431); `k` at most `--max-k` and never more
//! than the units in scope; methods are named at start (`--methods`) or kept in a cache of
//! `--method-cache` ([`Methods`]). Only the Host names it expects are answered (loopback names, the
//! address listened on, `--allow-host`; 421 otherwise): a page in a browser cannot reach it through DNS
//! rebinding. SIGTERM or Ctrl-C stops accepting, lets the requests in flight finish (up to `--deadline`)
//! and exits 0. One log line per request on standard error: verb, path, status, milliseconds.

mod http;
mod methods;
mod metrics;
pub mod pool;

use std::convert::Infallible;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;

pub use http::{Ask, Hosts, decoded, host_name, parameters};
pub use methods::Methods;
pub use metrics::{Metrics, Series, quantile, route};
pub use pool::{Busy, Pool};

use self::http::{Answered, Unread, error, json, not_allowed, unavailable};
use super::EncoderArgs;
use super::approximate::SearchArgs;
use super::query::{Answer, Opened};
use crate::methods::Method;

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
    /// Serve only these methods (the flag repeated), built before the server listens; without it, a
    /// method is built on its first request and kept among the --method-cache most recently used
    #[arg(long = "methods")]
    pub methods: Vec<Method>,
    /// How many methods requests named are kept built (beside --method)
    #[arg(long, default_value_t = 8)]
    pub method_cache: usize,
    /// The k of a request that names none
    #[arg(short = 'k', long, default_value_t = 5)]
    pub k: usize,
    /// The largest k a request may ask (400 above it)
    #[arg(long, default_value_t = 100)]
    pub max_k: usize,
    /// The token budget of a request that names none (none: every item of the top k)
    #[arg(long)]
    pub max_tokens: Option<usize>,
    /// Threads that encode and search (default: the cores)
    #[arg(long)]
    pub workers: Option<usize>,
    /// Requests that may wait for a worker; one more is answered 503 with Retry-After
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Seconds a request may take from its head to its answer
    #[arg(long, default_value_t = 30.0)]
    pub deadline: f64,
    /// Seconds a connection may take to send a request's head, or stay idle between requests
    #[arg(long, default_value_t = 10.0)]
    pub idle_timeout: f64,
    /// The largest request body read, in bytes
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body: usize,
    /// A Host name answered besides the loopback names and the address listened on (the flag repeated)
    #[arg(long = "allow-host")]
    pub allow_hosts: Vec<String>,
    #[command(flatten)]
    pub encoder: EncoderArgs,
    #[command(flatten)]
    pub search: SearchArgs,
}

/// What every request reads: the opened index and its methods, the pool, the limits. Built once and kept
/// for the life of the process (the request handlers run on tokio's tasks, which hold no borrow).
struct State {
    opened: &'static Opened,
    methods: Methods,
    pool: Pool,
    metrics: Metrics,
    hosts: Hosts,
    default_method: Method,
    k: usize,
    max_k: usize,
    max_tokens: Option<usize>,
    deadline: Duration,
    max_body: usize,
}

pub fn serve(args: &ServeArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.k > 0 && args.k <= args.max_k, "-k must be at least 1 and at most --max-k ({})", args.max_k);
    let seconds = |name: &str, s: f64| {
        anyhow::ensure!(s.is_finite() && s > 0.0, "--{name} must be a positive number of seconds, not {s}");
        Ok(Duration::from_secs_f64(s))
    };
    let (deadline, idle) = (seconds("deadline", args.deadline)?, seconds("idle-timeout", args.idle_timeout)?);
    let workers = args.workers.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    anyhow::ensure!(workers > 0, "--workers must be at least 1");
    // The flags checked above before the index and the encoder are loaded.
    let opened: &'static Opened = Box::leak(Box::new(Opened::open(&args.index, &args.encoder, &args.search)?));
    let methods = Methods::new(opened, &args.method, &args.methods, args.method_cache)?;
    let state: &'static State = Box::leak(Box::new(State {
        opened,
        methods,
        pool: Pool::new(workers, args.queue).context("cannot start the workers")?,
        metrics: Metrics::default(),
        hosts: Hosts::new(&args.host, &args.allow_hosts),
        default_method: args.method.clone(),
        k: args.k,
        max_k: args.max_k,
        max_tokens: args.max_tokens,
        deadline,
        max_body: args.max_body,
    }));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the server's runtime")?;
    runtime.block_on(listen(state, args, idle))
}

/// Accepts connections until SIGTERM or Ctrl-C, then lets those in flight finish.
async fn listen(state: &'static State, args: &ServeArgs, idle: Duration) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    println!("listening on http://{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    eprintln!(
        "arbor serve: {} ({} documents, {} units; {} workers, a queue of {}; methods {})",
        args.index.display(),
        state.opened.index.corpus.documents.len(),
        state.opened.index.units.len(),
        state.pool.workers(),
        state.pool.queue(),
        state.methods.names().join(", ")
    );
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(idle).keep_alive(true).max_header_size(64 * 1024).max_buf_size(64 * 1024);
    let graceful = GracefulShutdown::new();
    let stop = stopped();
    tokio::pin!(stop);
    let signal = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // Out of descriptors, say: the connections open go on; try again shortly.
                        eprintln!("arbor serve: cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let connection = http.serve_connection(TokioIo::new(stream), service_fn(move |request| handle(state, request)));
                let watched = graceful.watch(connection);
                tokio::spawn(async move {
                    // A connection that ends badly (reset, a malformed head answered by hyper) ends alone.
                    let _ = watched.await;
                });
            }
            signal = &mut stop => break signal,
        }
    };
    drop(listener);
    eprintln!("arbor serve: {signal}: no new connections; finishing the requests in flight");
    match tokio::time::timeout(state.deadline, graceful.shutdown()).await {
        Ok(()) => eprintln!("arbor serve: stopped"),
        Err(_) => eprintln!("arbor serve: stopped with connections still open after {:.0} s", state.deadline.as_secs_f64()),
    }
    Ok(())
}

/// The signal that stops the server: Ctrl-C, or SIGTERM where there is one.
async fn stopped() -> &'static str {
    let interrupt = async {
        // Without a handler (it could not be installed) Ctrl-C stops the process as it would anyway.
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let terminate = async {
            match signal(SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                    "SIGTERM"
                }
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! { s = interrupt => s, s = terminate => s }
    }
    #[cfg(not(unix))]
    interrupt.await
}

/// Answers one request, counts it and logs it.
async fn handle(state: &'static State, request: Request<Incoming>) -> Result<Answered, Infallible> {
    let started = Instant::now();
    let (verb, path) = (request.method().clone(), request.uri().path().to_owned());
    let answered = route_request(state, request, started).await;
    let status = answered.status().as_u16();
    let seconds = started.elapsed().as_secs_f64();
    state.metrics.record(route(&path), status, seconds);
    let shown: String = path.chars().take(100).collect();
    eprintln!("{verb} {shown} {status} {:.1} ms", seconds * 1e3);
    Ok(answered)
}

async fn route_request(state: &'static State, request: Request<Incoming>, started: Instant) -> Answered {
    if let Err(refused) = state.hosts.check(http::host(&request)) {
        return *refused;
    }
    let (verb, path) = (request.method().clone(), request.uri().path().to_owned());
    match (verb.as_str(), path.as_str()) {
        ("GET", "/health") => {
            let model = state.opened.record().map(|r| r.method.clone());
            let index = &state.opened.index;
            json(
                StatusCode::OK,
                serde_json::json!({"documents": index.corpus.documents.len(), "units": index.units.len(), "model": model}).to_string(),
            )
        }
        ("GET", "/metrics") => http::respond(StatusCode::OK, "text/plain; version=0.0.4", exposition(state)),
        ("GET" | "POST", "/query") => query(state, request, started + state.deadline).await,
        (_, "/query") => not_allowed(&verb, "/query", "GET, POST"),
        (_, "/health" | "/metrics") => not_allowed(&verb, &path, "GET"),
        (_, path) => error(StatusCode::NOT_FOUND, &format!("no {path}: GET or POST /query, GET /health, GET /metrics")),
    }
}

/// A question answered on the pool before `deadline`.
async fn query(state: &'static State, request: Request<Incoming>, deadline: Instant) -> Answered {
    let ask = match http::asked(request, state.max_body, deadline).await {
        Ok(ask) => ask,
        Err(Unread(status, message)) => return error(status, &message),
    };
    let (method, k) = match checked(state, &ask) {
        Ok(checked) => checked,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("{e:#}")),
    };
    let job = move || {
        // Waited past its deadline in the queue: its client has been answered already.
        if Instant::now() >= deadline {
            return None;
        }
        Some(answer(state, &ask, &method, k))
    };
    let Ok(answer) = state.pool.submit(job) else {
        return unavailable(&format!("every worker is busy and {} requests wait: ask again shortly", state.pool.queue()), 1);
    };
    let late = || unavailable(&format!("no answer within the request's deadline of {:.0} s: ask again shortly", state.deadline.as_secs_f64()), 1);
    match tokio::time::timeout_at(deadline.into(), answer).await {
        Ok(Ok(Some(Ok(body)))) => json(StatusCode::OK, body),
        Ok(Ok(Some(Err(e)))) => error(StatusCode::BAD_REQUEST, &format!("{e:#}")),
        Ok(Ok(None)) | Err(_) => late(),
        Ok(Err(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, "the worker answering this request failed (see the server's log)"),
    }
}

/// The method `ask` names (or the default) and its k (or the default), refusing what needs no worker to
/// refuse.
fn checked(state: &State, ask: &Ask) -> anyhow::Result<(Method, usize)> {
    anyhow::ensure!(!ask.query.trim().is_empty(), "ask a question: q=... (GET) or {{\"query\": ...}} (POST)");
    let k = ask.k.unwrap_or(state.k);
    anyhow::ensure!(k > 0 && k <= state.max_k, "k must be at least 1 and at most {} (arbor serve --max-k), not {k}", state.max_k);
    let method = match &ask.method {
        Some(m) => m.parse()?,
        None => state.default_method.clone(),
    };
    Ok((method, k))
}

/// `arbor query --json`'s object for `ask` with `method` and `k` (on a worker: the method built here on its
/// first use), k capped at the units in scope.
fn answer(state: &State, ask: &Ask, method: &Method, k: usize) -> anyhow::Result<String> {
    let (name, served) = state.methods.get(method)?;
    let index = &state.opened.index;
    let docs = index.scope(&ask.doc)?;
    let units: usize = docs.iter().map(|&d| index.units.by_doc[d].len()).sum();
    let k = k.min(units.max(1));
    let results = state.opened.ask(&served, &ask.query, k, &docs, ask.max_tokens.or(state.max_tokens));
    Ok(serde_json::to_string(&Answer { query: &ask.query, method: &name, results })?)
}

fn exposition(state: &State) -> String {
    let gauges = [
        Series { name: "arbor_queue_waiting", help: "Requests waiting for a worker.", counter: false, value: state.pool.waiting() as f64 },
        Series {
            name: "arbor_queue_refused_total",
            help: "Requests answered 503 because the queue was full.",
            counter: true,
            value: state.pool.refused() as f64,
        },
        Series { name: "arbor_methods_kept", help: "Methods kept built.", counter: false, value: state.methods.kept_count() as f64 },
        Series { name: "arbor_methods_built_total", help: "Methods built since the start.", counter: true, value: state.methods.built() as f64 },
    ];
    state.metrics.render(&gauges)
}
