//! The unit tests of `arbor_experiments::summaries::endpoint` (src/summaries/endpoint.rs).

use arbor_experiments::summaries::endpoint::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

/// A chat-completions server on loopback that answers each request with `reply(body)` (status, JSON)
/// and hands every request it saw (headers, body) to the test. Ends after `n` requests.
pub(crate) fn serve(
    n: usize,
    reply: impl Fn(&serde_json::Value) -> (u16, String) + Send + 'static,
) -> (String, mpsc::Receiver<(String, serde_json::Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let (status, answer) = reply(&body);
            let _ = tx.send((head, body));
            write!(stream, "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}", answer.len()).unwrap();
        }
    });
    (url, rx)
}

pub(crate) fn completion(text: &str) -> String {
    serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}).to_string()
}

fn config(url: &str) -> EndpointConfig {
    EndpointConfig { url: url.into(), model: "m".into(), api_key_env: None, prompt: default_prompt(), temperature: 0.0, timeout_secs: 10 }
}

#[test]
fn a_summary_is_asked_as_a_chat_completion_with_the_key_from_the_named_variable() {
    let (url, seen) = serve(1, |_| (200, completion("  Pets purr and bark.\n")));
    // Every process has this variable (the binary may run outside cargo): it stands for a key here.
    let endpoint = EndpointConfig { api_key_env: Some("PATH".into()), ..config(&url) }.connect().unwrap();
    assert_eq!(endpoint.summarise("Cats purr. Dogs bark.", 100).unwrap(), "Pets purr and bark.");
    let (head, body) = seen.recv().unwrap();
    assert!(head.starts_with("POST /v1/chat/completions HTTP/1.1"), "{head}");
    assert!(head.contains(&format!("Authorization: Bearer {}", std::env::var("PATH").unwrap())), "{head}");
    assert_eq!(body["model"], "m");
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["messages"][0]["role"], "system");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("Write a summary") && user.contains("at most 75 words") && user.ends_with("Cats purr. Dogs bark."), "{user}");
}

#[test]
fn endpoint_failures_are_errors_that_say_what_went_wrong() {
    let (url, _seen) = serve(2, |body| match body["model"].as_str() {
        Some("busy") => (503, r#"{"error": "overloaded"}"#.into()),
        _ => (200, r#"{"choices": []}"#.into()),
    });
    let err = format!("{:#}", EndpointConfig { model: "busy".into(), ..config(&url) }.connect().unwrap().summarise("x", 10).unwrap_err());
    assert!(err.contains("503") && err.contains("overloaded"), "{err}");
    let err = format!("{:#}", config(&url).connect().unwrap().summarise("x", 10).unwrap_err());
    assert!(err.contains("no text in choices[0]"), "{err}");
    let err = format!("{:#}", EndpointConfig { api_key_env: Some("ARBOR_TEST_UNSET_KEY".into()), ..config(&url) }.check().unwrap_err());
    assert!(err.contains("ARBOR_TEST_UNSET_KEY is not set"), "{err}");
    let err = format!("{:#}", config("localhost:8000").check().unwrap_err());
    assert!(err.contains("must start with http://"), "{err}");
    let err = format!("{:#}", EndpointConfig { prompt: "Summarise.".into(), ..config(&url) }.check().unwrap_err());
    assert!(err.contains("{text}"), "{err}");
    // Nothing listens on a freshly closed port.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let err = format!("{:#}", config(&format!("http://{closed}/v1")).connect().unwrap().summarise("x", 10).unwrap_err());
    assert!(err.contains("cannot reach the summary endpoint"), "{err}");
}

#[cfg(not(feature = "https"))]
#[test]
fn an_https_endpoint_without_tls_says_how_to_build_it() {
    let err = format!("{:#}", config("https://api.example/v1").check().unwrap_err());
    assert!(err.contains("--features https"), "{err}");
}
