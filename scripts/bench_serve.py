#!/usr/bin/env python3
"""`arbor serve` under load, on loopback, bounded in requests and time (issue 86).

    python3 scripts/bench_serve.py ../shared/data/covid-qa [--split test] [--requests 400] [--arbor PATH]

Indexes the corpus's documents of the split (a folder of .txt files, one a document; `arbor index`, the
default encoder), starts `arbor serve` on a free port and measures, with its questions of the split asked
round-robin (`GET /query?q=...&k=5`, keep-alive connections):

- p50 / p99 latency and throughput at 1, 8 and 32 concurrent clients, each phase `--requests` requests,
  while a slow client trickles a request a byte a second (cut off at the server's idle timeout, it
  reconnects and starts again) and a malformed client sends bad requests in a loop (each must be answered
  4xx); nothing may be lost (every request answered, none with a 5xx);
- a normal question's latency while only the slow client trickles;
- the process's memory (VmRSS) across 1,000 distinct method strings (`Hybrid((k_rrf: ...))`, each a new
  BM25 index: kept at most --method-cache of them);
- a burst of 64 requests at once on a second server with --workers 1 --queue 4: every request answered,
  200 or 503 with Retry-After.

Prints a Markdown table and a JSON summary; exits 1 if a request was lost or a bad one answered other
than 4xx. Only the standard library; arbor itself never calls Python.
"""

import argparse
import http.client
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid):
    """The process's resident and peak resident memory, MiB (Linux /proc)."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


class Server:
    def __init__(self, arbor, index, extra, log):
        self.log = open(log, "w")
        self.proc = subprocess.Popen([arbor, "serve", index, "--port", "0", *extra], stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on http://"):
            raise SystemExit(f"arbor serve did not start: {line!r} (log: {log})")
        host, port = line.strip().removeprefix("listening on http://").rsplit(":", 1)
        self.host, self.port = host, int(port)

    def connection(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def stop(self):
        self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self.log.close()
        return code


def ask(conn, question, k=5, method=None):
    """One GET /query on a kept-alive connection: (status, seconds, Retry-After)."""
    params = {"q": question, "k": str(k)}
    if method:
        params["method"] = method
    t = time.perf_counter()
    conn.request("GET", "/query?" + urllib.parse.urlencode(params))
    response = conn.getresponse()
    body = response.read()
    if response.status == 200:
        json.loads(body)
    return response.status, time.perf_counter() - t, response.getheader("Retry-After")


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def slow_client(server, stop, cut_offs):
    """Sends a request a byte a second; when the server closes the connection, counts it and starts again."""
    request = b"GET /query?q=fever&k=1 HTTP/1.1\r\nHost: localhost\r\n\r\n"
    while not stop.is_set():
        s = socket.create_connection((server.host, server.port))
        try:
            for byte in request:
                if stop.is_set():
                    return
                s.sendall(bytes([byte]))
                time.sleep(1.0)
        except OSError:
            cut_offs.append(time.time())
        finally:
            s.close()


BAD = [
    (b"GET /query?q=x HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", "foreign Host"),
    (b"GET /query?q=x&k=1000000000 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "k past the cap"),
    (b"GET /query?q=x&k=oops HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "k not a number"),
    (b"GET /query?q=%zz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "a bad escape"),
    (b"GET /query?q=x&method=Nope HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "an unknown method"),
    (b"POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 9\r\nConnection: close\r\n\r\n{not json", "a body not JSON"),
    (b"POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n", "a body too large"),
    (b"DELETE /query HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "a verb not served"),
    (b"GET /nowhere HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", "an unknown path"),
    (b"NONSENSE\r\n\r\n", "a garbled head"),
    (b"GET /health HTTP/1.1\r\nHost: localhost\r\nX: " + b"y" * 100000 + b"\r\n\r\n", "a head too large"),
]


def malformed_client(server, stop, answered, wrong):
    i = 0
    while not stop.is_set():
        raw, what = BAD[i % len(BAD)]
        i += 1
        try:
            with socket.create_connection((server.host, server.port), timeout=30) as s:
                s.sendall(raw)
                data = b""
                while b"\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
        except OSError as e:
            wrong.append(f"{what}: {e}")
            continue
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
        if status is None or not 400 <= status < 500:
            wrong.append(f"{what}: {data[:60]!r}")
        else:
            answered.append(status)
        time.sleep(0.05)


def phase(server, questions, clients, total):
    """`total` requests over `clients` kept-alive connections: latencies, statuses, lost, seconds."""
    latencies, statuses, lost = [], [], []
    lock = threading.Lock()
    counter = iter(range(total))

    def client(c):
        conn = server.connection()
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            try:
                status, seconds, _ = ask(conn, questions[i % len(questions)])
            except Exception as e:  # noqa: BLE001 - a lost request is what this counts
                lost.append(repr(e))
                conn.close()
                conn = server.connection()
                continue
            with lock:
                statuses.append(status)
                latencies.append(seconds)
        conn.close()

    t = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sorted(latencies), statuses, lost, time.perf_counter() - t


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help="an arbor JSONL folder (documents.jsonl, queries.jsonl)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--requests", type=int, default=400, help="requests a phase")
    parser.add_argument("--methods", type=int, default=1000, help="distinct method strings")
    parser.add_argument("--arbor", default=str(ROOT / "target/release/arbor"))
    parser.add_argument("--work", default=None, help="folder for the index and logs (default: a temporary one)")
    args = parser.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-serve-"))
    docs_dir = work / "docs"
    corpus = Path(args.corpus)
    documents = [json.loads(l) for l in open(corpus / "documents.jsonl") if l.strip()]
    documents = [d for d in documents if d.get("split", args.split) == args.split]
    queries = [json.loads(l) for l in open(corpus / "queries.jsonl") if l.strip()]
    questions = [q["text"] for q in queries if q.get("split", args.split) == args.split]
    index = work / "index.arbor"
    if not index.exists():
        docs_dir.mkdir(parents=True, exist_ok=True)
        for d in documents:
            name = "".join(c for c in d["id"] if c.isalnum() or c in "-_") or "doc"
            (docs_dir / f"{name}.txt").write_text(d["text"])
        t = time.perf_counter()
        subprocess.run([args.arbor, "index", str(docs_dir), "--into", str(index)], check=True)
        print(f"indexed {len(documents)} documents in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    processor = subprocess.run([args.arbor, "cpu"], capture_output=True, text=True).stdout.strip().splitlines()[0]

    server = Server(args.arbor, str(index), ["--idle-timeout", "5", "--method-cache", "8"], work / "serve.log")
    conn = server.connection()
    conn.request("GET", "/health")
    health = json.loads(conn.getresponse().read())
    conn.close()
    rows, summary, failures = [], {"processor": processor, "health": health}, []

    # A normal question while only a slow client trickles.
    stop, cut_offs = threading.Event(), []
    slow = threading.Thread(target=slow_client, args=(server, stop, cut_offs), daemon=True)
    slow.start()
    time.sleep(2)
    conn = server.connection()
    beside_slow = sorted(ask(conn, q)[1] for q in questions[:20])
    conn.close()
    summary["beside_slow_client_max_s"] = beside_slow[-1]

    answered_bad, wrong = [], []
    bad = threading.Thread(target=malformed_client, args=(server, stop, answered_bad, wrong), daemon=True)
    bad.start()
    rss_start = rss_mib(server.proc.pid)[0]
    for clients in (1, 8, 32):
        latencies, statuses, lost, seconds = phase(server, questions, clients, args.requests)
        not_ok = [s for s in statuses if s != 200]
        rows.append((clients, len(statuses), len(lost), len(not_ok), quantile(latencies, 0.5), quantile(latencies, 0.99), len(statuses) / seconds))
        if lost or not_ok:
            failures.append(f"{clients} clients: {len(lost)} lost, statuses {sorted(set(not_ok))}, e.g. {lost[:2]}")
    stop.set()
    bad.join(timeout=60)
    summary["malformed_answered_4xx"] = len(answered_bad)
    summary["malformed_not_4xx"] = wrong[:10]
    summary["slow_client_cut_offs"] = len(cut_offs)
    if wrong:
        failures.append(f"bad requests not answered 4xx: {wrong[:5]}")

    # Memory across distinct method strings.
    conn = server.connection()
    before = rss_mib(server.proc.pid)[0]
    samples = []
    t = time.perf_counter()
    for i in range(args.methods):
        status, _, _ = ask(conn, questions[i % len(questions)], k=3, method=f"Hybrid((k_rrf: {60 + i / 1000:.3f}))")
        if status != 200:
            failures.append(f"method {i}: status {status}")
            break
        if i % 100 == 99:
            samples.append(round(rss_mib(server.proc.pid)[0]))
    conn.close()
    summary["methods"] = {
        "distinct": args.methods,
        "seconds": round(time.perf_counter() - t, 1),
        "rss_mib_before": round(before),
        "rss_mib_every_100": samples,
        "rss_mib_start_of_load": round(rss_start),
    }
    conn = server.connection()
    conn.request("GET", "/metrics")
    metrics = conn.getresponse().read().decode()
    conn.close()
    summary["metrics_kept"] = [l for l in metrics.splitlines() if l.startswith(("arbor_methods", "arbor_queue"))]
    summary["peak_rss_mib"] = round(rss_mib(server.proc.pid)[1])
    summary["stopped_with"] = server.stop()

    # A burst past the queue.
    small = Server(args.arbor, str(index), ["--workers", "1", "--queue", "4"], work / "serve-burst.log")
    results, lock, go = [], threading.Lock(), threading.Barrier(64)

    def one(i):
        conn = small.connection()
        go.wait()
        try:
            status, _, retry = ask(conn, questions[i % len(questions)])
            with lock:
                results.append((status, retry))
        except Exception as e:  # noqa: BLE001
            with lock:
                results.append((repr(e), None))
        conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(64)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    small.stop()
    burst = {"ok": sum(s == 200 for s, _ in results), "503_with_retry_after": sum(s == 503 and r is not None for s, r in results)}
    burst["other"] = [s for s, r in results if s != 200 and not (s == 503 and r is not None)]
    summary["burst_64_on_1_worker_queue_4"] = burst
    if burst["other"]:
        failures.append(f"burst: {burst['other'][:5]}")

    print(f"{processor}; index: {health['documents']} documents, {health['units']} units\n")
    print("| clients | answered | lost | non-200 | p50 ms | p99 ms | requests/s |")
    print("|---|---|---|---|---|---|---|")
    for c, n, lost, bad_n, p50, p99, rps in rows:
        print(f"| {c} | {n} | {lost} | {bad_n} | {p50 * 1e3:.1f} | {p99 * 1e3:.1f} | {rps:.1f} |")
    print()
    print(json.dumps(summary, indent=1))
    if failures:
        print("FAILED:", *failures, sep="\n  ", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
