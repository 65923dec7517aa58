//! `GET /metrics`: what `arbor serve` has answered, in Prometheus' text exposition format (version 0.0.4):
//! requests by route and status (a counter), each route's latency as a summary (the 0.5, 0.9 and 0.99
//! quantiles over its last [`WINDOW`] requests, with the sum and count over all), and the gauges the caller
//! adds (the pool's queue and refusals, the methods kept and built). Routes are a fixed set of labels (any unknown path is
//! `other`), so what is kept stays bounded however many distinct requests arrive.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

/// The latencies a route's quantiles are read over: its most recent requests.
pub const WINDOW: usize = 4096;

/// The routes a request is counted under.
pub const ROUTES: [&str; 4] = ["/query", "/health", "/metrics", "other"];

/// The label of `path`: itself when served, `other` otherwise.
pub fn route(path: &str) -> &'static str {
    ROUTES.iter().find(|r| **r == path).copied().unwrap_or("other")
}

#[derive(Default)]
pub struct Metrics(Mutex<Kept>);

#[derive(Default)]
struct Kept {
    answered: BTreeMap<(&'static str, u16), u64>,
    latency: BTreeMap<&'static str, Latency>,
}

#[derive(Default)]
struct Latency {
    recent: VecDeque<f64>,
    sum: f64,
    count: u64,
}

/// A series the caller adds to the exposition: its name, help, type (a counter, or else a gauge) and value.
pub struct Series<'a> {
    pub name: &'a str,
    pub help: &'a str,
    pub counter: bool,
    pub value: f64,
}

impl Metrics {
    /// Counts one answered request of `route` ([`route`]) with its status and seconds taken.
    pub fn record(&self, route: &'static str, status: u16, seconds: f64) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *kept.answered.entry((route, status)).or_default() += 1;
        let latency = kept.latency.entry(route).or_default();
        if latency.recent.len() == WINDOW {
            latency.recent.pop_front();
        }
        latency.recent.push_back(seconds);
        latency.sum += seconds;
        latency.count += 1;
    }

    /// The exposition text, the `series` after the requests'.
    pub fn render(&self, series: &[Series]) -> String {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::new();
        out.push_str("# HELP arbor_requests_total Requests answered, by route and status.\n# TYPE arbor_requests_total counter\n");
        for ((route, status), n) in &kept.answered {
            let _ = writeln!(out, "arbor_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}");
        }
        out.push_str(&format!(
            "# HELP arbor_request_duration_seconds Seconds from a request's headers to its answer; quantiles over the route's last {WINDOW} requests.\n\
             # TYPE arbor_request_duration_seconds summary\n"
        ));
        for (route, latency) in &kept.latency {
            let mut sorted: Vec<f64> = latency.recent.iter().copied().collect();
            sorted.sort_by(f64::total_cmp);
            for q in [0.5, 0.9, 0.99] {
                let _ = writeln!(out, "arbor_request_duration_seconds{{route=\"{route}\",quantile=\"{q}\"}} {}", quantile(&sorted, q));
            }
            let _ = writeln!(out, "arbor_request_duration_seconds_sum{{route=\"{route}\"}} {}", latency.sum);
            let _ = writeln!(out, "arbor_request_duration_seconds_count{{route=\"{route}\"}} {}", latency.count);
        }
        for s in series {
            let kind = if s.counter { "counter" } else { "gauge" };
            let _ = writeln!(out, "# HELP {} {}\n# TYPE {} {kind}\n{} {}", s.name, s.help, s.name, s.name, s.value);
        }
        out
    }
}

/// The `q` quantile of ascending `sorted` by the nearest rank (NaN when empty, as Prometheus writes an
/// unknown quantile).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
