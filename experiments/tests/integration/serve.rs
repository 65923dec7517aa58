//! `arbor serve` through the binary over two of the fixture's articles: it answers `curl` with `arbor query
//! --json`'s object (issue 63), and holds under what a service meets (issue 86): a client trickling bytes
//! holds no other request and is cut off at the idle timeout, as is an idle keep-alive connection; two
//! requests share one connection; every bad request is answered 4xx (a foreign Host 421, a body too large
//! 413, a body too slow 408, k past the cap 400, a garbled head 400) and the server goes on; methods
//! kept are bounded; `/metrics` counts in Prometheus' text; SIGTERM stops it with status 0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::ok;
use crate::library::{articles, written};

/// A running `arbor serve` (killed when dropped) over an index of two articles.
struct Server {
    child: Child,
    /// host:port
    address: String,
    index: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(String, String)> = articles().into_iter().take(2).collect();
        let folder = written(dir.path(), &files);
        let index = dir.path().join("docs.arbor").to_str().unwrap().to_owned();
        ok(&["index", folder.to_str().unwrap(), "--into", &index]);
        let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
            .args(["serve", &index, "--port", "0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut first).unwrap();
        let address = first.trim().strip_prefix("listening on http://").unwrap_or_else(|| panic!("{first:?}")).to_owned();
        Server { child, address, index, _dir: dir }
    }

    fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Writes `raw` on a new connection and reads until the server closes it: each response's status and
    /// body, in order.
    fn exchange(&self, raw: &[u8]) -> Vec<(u16, String)> {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // A server that answers before reading everything (a head too large) may close mid-write.
        let _ = stream.write_all(raw);
        let mut text = Vec::new();
        let _ = stream.read_to_end(&mut text);
        responses(&String::from_utf8_lossy(&text))
    }

    /// A GET of `target` with `Connection: close`: its status and body.
    fn get(&self, target: &str) -> (u16, String) {
        let raw = format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        self.exchange(raw.as_bytes()).into_iter().next().unwrap_or_else(|| panic!("no answer to GET {target}"))
    }
}

/// The responses in `text` (HTTP/1.x with Content-Length): status and body of each.
fn responses(mut text: &str) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    while let Some(start) = text.find("HTTP/1.") {
        let rest = &text[start..];
        let status = rest[9..12].parse().unwrap();
        let (head, after) = rest.split_once("\r\n\r\n").unwrap();
        let length = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
            .unwrap_or(0);
        out.push((status, after[..length].to_owned()));
        text = &after[length..];
    }
    out
}

/// A server's address from a client's side: is the connection closed (EOF or reset) within `within`?
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => return !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        }
    }
}

/// `arbor serve` (issue 63) answers a request from `curl` with the JSON `arbor query --json` prints for
/// the same question, method, k and budget, asked by GET or by POST; a bad request is answered 400 with
/// the reason, and the server goes on serving.
#[test]
fn arbor_serve_answers_curl_with_the_json_of_query() {
    let server = Server::start(&["--max-tokens", "300"]);
    let url = server.url();
    // curl's answer and its status code (written after the body).
    let curl = |args: &[&str]| -> (Value, String) {
        let out = Command::new("curl").args(["-sS", "-w", "\n%{http_code}"]).args(args).output().expect("curl runs");
        let text = String::from_utf8(out.stdout).unwrap();
        let (body, code) = text.rsplit_once('\n').unwrap();
        (serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}")), code.to_owned())
    };
    let question = "Who bought the rights to show the Premier League?";
    let query = |method: &str| -> Value {
        serde_json::from_str(&ok(&["query", &server.index, question, "--method", method, "-k", "3", "--max-tokens", "300", "--json"])).unwrap()
    };
    for method in ["Flat", "bm25"] {
        let args = ["--get", "--data-urlencode", &format!("q={question}"), "--data-urlencode", &format!("method={method}"), "-d", "k=3"];
        let (got, code) = curl(&[&args[..], &[&format!("{url}/query")]].concat());
        assert_eq!(code, "200");
        assert_eq!(got, query(method), "{method}");
        assert_eq!(got["results"].as_array().unwrap().len(), 3);
    }
    let body = serde_json::json!({"query": question, "k": 3, "method": "Hybrid(())"}).to_string();
    let (got, code) = curl(&["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", &body, &format!("{url}/query")]);
    assert_eq!((got, code.as_str()), (query("Hybrid(())"), "200"));
    let (bad, code) = curl(&["--get", "-d", "q=x", "-d", "kk=3", &format!("{url}/query")]);
    assert_eq!(code, "400");
    assert!(bad["error"].as_str().unwrap().contains("unknown parameter \"kk\""), "{bad}");
    let (bad, code) = curl(&["--get", "-d", "q=x", "-d", "method=Rse(())", &format!("{url}/query")]);
    assert!(code == "400" && bad["error"].as_str().unwrap().contains("cannot serve"), "{code} {bad}");
    let (health, code) = curl(&[&format!("{url}/health")]);
    assert_eq!((health["documents"].as_u64(), code.as_str()), (Some(2), "200"));
}

/// Issue 86: a client sending its request a byte at a time holds no other request (each answered within a
/// second while it trickles) and is cut off at the idle timeout; so is a keep-alive connection left idle;
/// two requests written at once on one connection are both answered on it.
#[test]
fn a_slow_client_holds_no_one_and_idle_connections_are_closed() {
    let server = Server::start(&["--idle-timeout", "2"]);
    let mut slow = TcpStream::connect(&server.address).unwrap();
    let mut trickle = slow.try_clone().unwrap();
    let trickler = std::thread::spawn(move || {
        for byte in b"GET /query?q=fever HTTP/1.1\r\nHost: localhost\r\n" {
            if trickle.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        let t = Instant::now();
        let (status, body) = server.get("/query?q=Who+bought+the+rights&k=2");
        assert_eq!(status, 200, "{body}");
        assert!(t.elapsed() < Duration::from_secs(1), "answered in {:?} beside a slow client", t.elapsed());
    }
    assert!(closed_within(&mut slow, Duration::from_secs(6)), "the trickling client is cut off at the idle timeout");
    trickler.join().unwrap();

    // Keep-alive: two requests in one write, both answered on the one connection.
    let two = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\nGET /query?q=league&k=1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let answers = server.exchange(two.as_bytes());
    assert_eq!(answers.iter().map(|a| a.0).collect::<Vec<_>>(), [200, 200], "{answers:?}");
    // An idle keep-alive connection is closed after the idle timeout.
    let mut idle = TcpStream::connect(&server.address).unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(idle.read(&mut buf).unwrap() > 0);
    let t = Instant::now();
    assert!(closed_within(&mut idle, Duration::from_secs(6)), "an idle connection is closed");
    assert!(t.elapsed() >= Duration::from_millis(1500), "not before the idle timeout: {:?}", t.elapsed());
}

/// Issue 86: every bad request is answered 4xx with the reason and the server goes on: a foreign Host
/// (DNS rebinding) 421, none 400, a body declared or sent too large 413, a body arriving after the
/// deadline 408, k past the cap or 0 400, bad JSON 400, a garbled head 400, a head past 64 KiB 431, an
/// unknown path 404, a verb a path does not answer 405.
#[test]
fn bad_requests_are_answered_4xx_and_the_server_goes_on() {
    let server = Server::start(&["--deadline", "1", "--max-body", "1000", "--max-k", "1000"]);
    let status = |raw: &str| server.exchange(raw.as_bytes()).first().map(|a| a.0);
    let foreign = "GET /query?q=x HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n";
    assert_eq!(status(foreign), Some(421));
    let rebound = "GET /health HTTP/1.1\r\nHost: evil.example:8700\r\nConnection: close\r\n\r\n";
    assert_eq!(status(rebound), Some(421));
    assert_eq!(status("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"), Some(400), "no Host");
    assert_eq!(status("GET /health HTTP/1.1\r\nHost: LOCALHOST:1\r\nConnection: close\r\n\r\n"), Some(200));
    assert_eq!(status("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"), Some(200));
    let declared = "POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5000000\r\nConnection: close\r\n\r\n{";
    assert_eq!(status(declared), Some(413));
    let chunk = "x".repeat(1500);
    let sent = format!(
        "POST /query HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    assert_eq!(status(&sent), Some(413));
    let t = Instant::now();
    assert_eq!(status("POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"query\""), Some(408));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    for target in ["/query?q=x&k=1001", "/query?q=x&k=0", "/query?q=x&k=many", "/query?q=", "/query?q=x&method=Nope"] {
        let (code, body) = server.get(target);
        assert_eq!(code, 400, "{target}: {body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(), "{body}");
    }
    let json = "POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{\"q\": 1}!";
    assert_eq!(status(json), Some(400));
    assert_eq!(status("HELLO THERE\r\n\r\n"), Some(400));
    let big = format!("GET /health HTTP/1.1\r\nHost: localhost\r\nX: {}\r\nConnection: close\r\n\r\n", "y".repeat(100_000));
    assert_eq!(status(&big), Some(431), "a head past 64 KiB");
    assert_eq!(server.get("/nope").0, 404);
    let delete = server.exchange(b"DELETE /query HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(delete[0].0, 405);
    // k beyond the units in scope is capped there: every unit of one document, no more.
    let (code, body) = server.get(&format!("/query?q=league&k=1000&doc={}", articles()[0].0));
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|_| panic!("{code} {body}"));
    let (code_all, all) = server.get("/query?q=league&k=1000");
    let every: Value = serde_json::from_str(&all).unwrap_or_else(|_| panic!("{code_all} {all}"));
    let (units, both) = (answer["results"].as_array().unwrap().len(), every["results"].as_array().unwrap().len());
    assert!(code == 200 && units > 0 && units < both && both < 1000, "{code} {units} of {both}");
    assert_eq!(server.get("/health").0, 200);
}

/// Issue 86: methods named by requests are kept up to --method-cache (plus the default), whatever number
/// of distinct ones arrive; under --methods any other is refused; /metrics counts in Prometheus' text.
#[test]
fn methods_kept_are_bounded_and_metrics_count_them() {
    let server = Server::start(&["--method-cache", "2"]);
    for i in 0..6 {
        let (code, body) = server.get(&format!("/query?q=league&k=2&method=Hybrid((k_rrf:{}.0))", 50 + i));
        assert_eq!(code, 200, "{body}");
    }
    let (code, metrics) = server.get("/metrics");
    assert_eq!(code, 200);
    let value = |name: &str| -> f64 {
        metrics.lines().find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok())).unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert_eq!(value("arbor_methods_kept "), 3.0, "Flat and the two most recent");
    assert_eq!(value("arbor_methods_built_total "), 7.0);
    assert_eq!(value("arbor_requests_total{route=\"/query\",status=\"200\"} "), 6.0);
    assert!(metrics.contains("arbor_request_duration_seconds{route=\"/query\",quantile=\"0.99\"}"), "{metrics}");
    assert!(metrics.contains("# TYPE arbor_request_duration_seconds summary"));

    let fixed = Server::start(&["--methods", "Bm25"]);
    assert_eq!(fixed.get("/query?q=league&method=bm25").0, 200);
    let (code, body) = fixed.get("/query?q=league&method=Hybrid(())");
    assert!(code == 400 && body.contains("not served here"), "{code} {body}");
}

/// Issue 86: SIGTERM stops accepting and exits 0, saying so.
#[test]
fn sigterm_stops_the_server_with_status_zero() {
    let mut server = Server::start(&[]);
    assert_eq!(server.get("/health").0, 200);
    let killed = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let t = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "still running 10 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut log = String::new();
    server.child.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(status.success() && log.contains("SIGTERM") && log.contains("stopped"), "{status} {log}");
    assert!(log.contains("GET /health 200"), "one line a request: {log}");
}
