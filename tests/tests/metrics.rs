//! The Prometheus endpoint end to end: off by default; with `metrics_port` set, `GET
//! /metrics` answers in the text exposition format, which a Prometheus parser
//! (`prometheus-parse`) reads; after a scan its counters equal the SQL views' at the same
//! moment (the server is idle, so exactly), its histograms count every read, and other
//! requests get 404 / 405 / 400.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use iolab_tests::{free_port, rows, show, TestServer};
use prometheus_parse::{Scrape, Value};

/// One HTTP/1.1 request; returns the status line and the body.
fn http(port: u16, request: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to /metrics");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.lines().next().unwrap().to_string();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .unwrap();
    assert_eq!(length, body.len(), "{head}");
    (status, body.to_string())
}

fn scrape(port: u16) -> Scrape {
    let (status, body) = http(port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("valid exposition")
}

/// How many samples of `metric` have labels including `labels`.
fn count(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> usize {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .count()
}

/// The value of the sample of `metric` whose labels include `labels`.
fn value(scrape: &Scrape, metric: &str, labels: &[(&str, &str)]) -> f64 {
    let matching: Vec<_> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(matching.len(), 1, "{metric} {labels:?}: {matching:?}");
    match &matching[0].value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(buckets) => {
            buckets
                .iter()
                .find(|b| b.less_than.is_infinite())
                .expect("+Inf bucket")
                .count
        }
        other => panic!("{metric}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_endpoint_matches_the_views() {
    let off = TestServer::start("metrics-off");
    let c = off.client().await;
    assert_eq!(show(&c, "metrics_port").await, "0");
    assert_eq!(show(&c, "metrics_listen_address").await, "127.0.0.1");
    drop(c);
    drop(off);

    let port = free_port();
    let server = TestServer::start_with(
        "metrics",
        &[
            "-c",
            &format!("metrics_port={port}"),
            "-c",
            "shared_buffers=4MB",
            "-c",
            "io_method=worker",
        ],
    );
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 100000) AS s(i);
             CHECKPOINT;
             SELECT * FROM pg_buffercache_evict_all();
             SELECT count(*) FROM t;",
        )
        .await
        .unwrap();

    let scraped = scrape(port);
    // every family documented and typed
    for (family, kind) in [
        ("iolab_io_operations_total", "counter"),
        ("iolab_io_latency_seconds", "histogram"),
        ("iolab_aio_ios_total", "counter"),
        ("iolab_aio_in_flight", "gauge"),
        ("iolab_aio_latency_seconds", "histogram"),
        ("iolab_backends", "gauge"),
    ] {
        assert!(scraped.docs.contains_key(family), "{family} has no HELP");
        let typed = scraped
            .samples
            .iter()
            .find(|s| s.metric == family)
            .unwrap_or_else(|| panic!("no {family} sample"));
        let ok = matches!(
            (&typed.value, kind),
            (Value::Counter(_), "counter")
                | (Value::Gauge(_), "gauge")
                | (Value::Histogram(_), "histogram")
        );
        assert!(ok, "{family}: {:?}", typed.value);
    }

    // pg_stat_io's counts, row by row, against the same moment's view (the server is idle)
    let view = rows(
        &client,
        "SELECT backend_type, object, context, reads, hits, writes, extends, read_bytes \
         FROM pg_stat_io WHERE reads > 0 OR hits > 0 OR writes > 0",
    )
    .await;
    assert!(!view.is_empty());
    let mut checked = HashMap::new();
    for r in &view {
        let text = |i: usize| r[i].as_deref().unwrap_or("NULL");
        let labels = |op| {
            [
                ("backend_type", text(0)),
                ("object", text(1)),
                ("context", text(2)),
                ("op", op),
            ]
        };
        for (i, op) in [(3, "reads"), (4, "hits"), (5, "writes"), (6, "extends")] {
            let exported = count(&scraped, "iolab_io_operations_total", &labels(op));
            if r[i].is_none() {
                assert_eq!(exported, 0, "{r:?} {op}: NULL in the view, not exported");
                continue;
            }
            let expected: f64 = text(i).parse().unwrap();
            let got = value(&scraped, "iolab_io_operations_total", &labels(op));
            assert_eq!(got, expected, "{r:?} {op}");
        }
        if r[7].is_some() {
            let bytes: f64 = text(7).parse().unwrap();
            let got = value(&scraped, "iolab_io_bytes_total", &labels("reads"));
            assert_eq!(got, bytes, "{r:?}");
        }
        checked.insert(format!("{}/{}", text(0), text(2)), text(3).to_string());
    }
    let bulk_reads: f64 = checked["client backend/bulkread"].parse().unwrap();
    assert!(
        bulk_reads > 0.0,
        "the cold scan read through the bulk-read ring"
    );
    // every read has a latency in the histogram
    let latency = [
        ("backend_type", "client backend"),
        ("object", "relation"),
        ("context", "bulkread"),
        ("op", "read"),
    ];
    assert_eq!(
        value(&scraped, "iolab_io_latency_seconds", &latency),
        bulk_reads
    );

    // pg_stat_aio
    let aio = rows(
        &client,
        "SELECT ios, submissions, queue_full, in_flight FROM pg_stat_aio \
         WHERE backend_type = 'client backend'",
    )
    .await;
    let aio_labels = [("backend_type", "client backend"), ("io_method", "worker")];
    for (i, metric) in [
        "iolab_aio_ios_total",
        "iolab_aio_submissions_total",
        "iolab_aio_queue_full_total",
        "iolab_aio_in_flight",
    ]
    .into_iter()
    .enumerate()
    {
        let expected: f64 = aio[0][i].as_deref().unwrap().parse().unwrap();
        assert_eq!(value(&scraped, metric, &aio_labels), expected, "{metric}");
    }
    let ios: f64 = aio[0][0].as_deref().unwrap().parse().unwrap();
    let read_latency = [("backend_type", "client backend"), ("op", "read")];
    assert_eq!(
        value(&scraped, "iolab_aio_latency_seconds", &read_latency),
        ios
    );
    assert_eq!(value(&scraped, "iolab_backends", &[("state", "idle")]), 1.0);

    // a histogram's buckets are cumulative and end with +Inf
    let hist = scraped
        .samples
        .iter()
        .find(|s| s.metric == "iolab_io_latency_seconds")
        .unwrap();
    let Value::Histogram(buckets) = &hist.value else {
        panic!()
    };
    assert!(buckets
        .windows(2)
        .all(|w| w[0].count <= w[1].count && w[0].less_than < w[1].less_than));

    // other requests
    assert_eq!(
        http(port, "GET / HTTP/1.1\r\n\r\n").0,
        "HTTP/1.1 404 Not Found"
    );
    assert_eq!(
        http(port, "POST /metrics HTTP/1.1\r\n\r\n").0,
        "HTTP/1.1 405 Method Not Allowed"
    );
    assert_eq!(http(port, "nonsense\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    // the SQL side is unaffected
    let _ = scrape(port);
    client.batch_execute("SELECT 1").await.unwrap();
}
