//! The unit tests of `arbor_experiments::library::serve` (src/library/serve/): the query component's
//! decoding, the Host check, the bounded pool, the metrics' quantiles and text.

use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arbor_experiments::library::serve::{Busy, Hosts, Metrics, Pool, Series, decoded, host_name, parameters, quantile, route};
use hyper::header::HeaderValue;

#[test]
fn a_query_component_is_decoded() {
    assert_eq!(decoded("What+is%20a%22lease%22%3F").unwrap(), "What is a\"lease\"?");
    assert_eq!(decoded("caf%C3%A9").unwrap(), "café");
    assert!(decoded("%4").is_err() && decoded("%zz").is_err() && decoded("%FF").is_err());
    let ask = parameters("q=fever+cough&k=3&doc=a&doc=b%2Fc&max_tokens=100&method=bm25").unwrap();
    assert_eq!((ask.query.as_str(), ask.k, ask.max_tokens, ask.method.as_deref()), ("fever cough", Some(3), Some(100), Some("bm25")));
    assert_eq!(ask.doc, ["a", "b/c"]);
    assert!(parameters("q=x&k=-1").is_err() && parameters("q=x&kk=1").is_err());
}

#[test]
fn only_the_expected_hosts_are_answered() {
    assert_eq!(host_name("localhost:8700"), "localhost");
    assert_eq!(host_name("[::1]:8700"), "[::1]");
    assert_eq!(host_name("[::1]"), "[::1]");
    assert_eq!(host_name("example.org"), "example.org");
    let status = |hosts: &Hosts, h: Option<&str>| hosts.check(h.map(|h| HeaderValue::from_str(h).unwrap()).as_ref()).map_err(|r| r.status().as_u16());
    let plain = Hosts::new("127.0.0.1", &[]);
    for ok in ["localhost", "LocalHost:1", "127.0.0.1:8700", "[::1]:80"] {
        assert_eq!(status(&plain, Some(ok)), Ok(()), "{ok}");
    }
    assert_eq!(status(&plain, Some("evil.example")), Err(421));
    assert_eq!(status(&plain, Some("localhost.evil.example:8700")), Err(421));
    assert_eq!(status(&plain, None), Err(400));
    let wider = Hosts::new("10.1.2.3", &["Search.Internal".to_owned()]);
    assert_eq!(status(&wider, Some("10.1.2.3:8700")), Ok(()));
    assert_eq!(status(&wider, Some("search.internal")), Ok(()));
    // 0.0.0.0 listens everywhere but names no host a client should send.
    assert_eq!(status(&Hosts::new("0.0.0.0", &[]), Some("0.0.0.0")), Err(421));
}

/// One worker and a queue of one: a running job, a waiting one, and the third refused; the refusal
/// counted; after the first finishes the pool takes work again. A panicking job loses its answer only.
#[test]
fn the_pool_queues_a_burst_up_to_its_bound_and_refuses_the_rest() {
    let pool = Pool::new(1, 1).unwrap();
    let (started, running) = channel();
    let (release, wait) = channel::<()>();
    let first = pool.submit(move || {
        started.send(()).unwrap();
        wait.recv().unwrap();
        1
    });
    running.recv_timeout(Duration::from_secs(5)).expect("the first job runs");
    let second = pool.submit(|| 2).expect("one job may wait");
    assert_eq!(pool.waiting(), 1);
    assert_eq!(pool.submit(|| 3).err(), Some(Busy));
    assert_eq!(pool.refused(), 1);
    release.send(()).unwrap();
    assert_eq!(first.unwrap().blocking_recv(), Ok(1));
    assert_eq!(second.blocking_recv(), Ok(2));
    let panicked = pool.submit(|| -> u8 { panic!("a job that fails") }).unwrap();
    assert!(panicked.blocking_recv().is_err());
    assert_eq!(pool.submit(|| 4).unwrap().blocking_recv(), Ok(4), "the worker survives");
    assert_eq!(pool.waiting(), 0);
    // No queue: a job is taken only by a worker free to take it (offered until the worker waits), and
    // while it runs nothing more is taken.
    let strict = Pool::new(1, 0).unwrap();
    let (release, wait) = channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    let t = Instant::now();
    let held = loop {
        let wait = Arc::clone(&wait);
        match strict.submit(move || wait.lock().unwrap().recv().unwrap()) {
            Ok(held) => break held,
            Err(Busy) => {
                assert!(t.elapsed() < Duration::from_secs(5), "the idle worker takes a job");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    };
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(strict.submit(|| ()).err(), Some(Busy));
    release.send(()).unwrap();
    held.blocking_recv().unwrap();
}

#[test]
fn metrics_are_prometheus_text_with_nearest_rank_quantiles() {
    assert!(quantile(&[], 0.5).is_nan());
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.99), 4.0);
    assert_eq!(quantile(&[5.0], 0.0), 5.0);
    assert_eq!((route("/query"), route("/query/x"), route("/")), ("/query", "other", "other"));
    let metrics = Metrics::default();
    for ms in 1..=100 {
        metrics.record("/query", 200, ms as f64 / 1e3);
    }
    metrics.record("/query", 400, 0.5);
    metrics.record("other", 404, 0.001);
    let text = metrics.render(&[Series { name: "arbor_queue_waiting", help: "Waiting.", counter: false, value: 2.0 }]);
    for line in [
        "# TYPE arbor_requests_total counter",
        "arbor_requests_total{route=\"/query\",status=\"200\"} 100",
        "arbor_requests_total{route=\"/query\",status=\"400\"} 1",
        "arbor_requests_total{route=\"other\",status=\"404\"} 1",
        "arbor_request_duration_seconds{route=\"/query\",quantile=\"0.5\"} 0.051",
        "arbor_request_duration_seconds{route=\"/query\",quantile=\"0.99\"} 0.1",
        "arbor_request_duration_seconds_count{route=\"/query\"} 101",
        "# TYPE arbor_queue_waiting gauge",
        "arbor_queue_waiting 2",
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
    }
}
