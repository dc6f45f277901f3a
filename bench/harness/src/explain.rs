//! Reads the numbers out of `EXPLAIN (ANALYZE, BUFFERS)` text, PostgreSQL 18's layout and
//! iolab's additions (`shared wait=` in `I/O Timings:`, the `I/O Latency:` line).
//!
//! A plan is a list of nodes: a line with `(actual time=` starts one, and the detail lines
//! that follow (`Heap Blocks:`, `Buffers:`, …) belong to it until the next node starts. A
//! `Planning:` line starts a section of its own, so its `Buffers:` is not counted to a node.

/// The figures of one plan node.
#[derive(Debug, Default, Clone)]
pub struct Node {
    /// "Bitmap Heap Scan", "Seq Scan", … (without "on table").
    pub name: String,
    pub actual_rows: f64,
    pub rows_removed_by_filter: f64,
    pub heap_exact: f64,
    pub heap_lossy: f64,
    pub shared_hit: f64,
    pub shared_read: f64,
    pub io_wait_ms: f64,
    pub io_read_ms: f64,
    /// `I/O Latency: read p50=… p99=… p99.9=…` (ms), iolab only.
    pub latency_ms: Option<[f64; 3]>,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub nodes: Vec<Node>,
    pub execution_ms: Option<f64>,
}

impl Plan {
    pub fn parse(lines: &[String]) -> Plan {
        let mut plan = Plan::default();
        let mut in_node = false;
        for line in lines {
            let text = line.trim_start().trim_start_matches("->").trim();
            if text.contains("(actual time=") || text.contains("(actual rows=") {
                let name = text.split(" on ").next().unwrap_or(text);
                let name = name.split(" (").next().unwrap_or(name).trim().to_string();
                plan.nodes.push(Node {
                    name,
                    actual_rows: number_after(text, "rows=").unwrap_or(0.0),
                    ..Node::default()
                });
                in_node = true;
                continue;
            }
            if text.starts_with("Planning:") || text.starts_with("Planning Time:") {
                in_node = false;
            }
            if let Some(ms) = text.strip_prefix("Execution Time:") {
                plan.execution_ms = number_after(ms, "");
                continue;
            }
            let Some(node) = plan.nodes.last_mut().filter(|_| in_node) else {
                continue;
            };
            if let Some(rest) = text.strip_prefix("Rows Removed by Filter:") {
                node.rows_removed_by_filter = number_after(rest, "").unwrap_or(0.0);
            } else if let Some(rest) = text.strip_prefix("Heap Blocks:") {
                node.heap_exact = number_after(rest, "exact=").unwrap_or(0.0);
                node.heap_lossy = number_after(rest, "lossy=").unwrap_or(0.0);
            } else if let Some(rest) = text.strip_prefix("Buffers:") {
                let shared = rest.split(',').next().unwrap_or(rest);
                node.shared_hit = number_after(shared, "hit=").unwrap_or(0.0);
                node.shared_read = number_after(shared, "read=").unwrap_or(0.0);
            } else if let Some(rest) = text.strip_prefix("I/O Timings:") {
                let shared = rest.split(',').next().unwrap_or(rest);
                node.io_wait_ms = number_after(shared, "wait=").unwrap_or(0.0);
                node.io_read_ms = number_after(shared, "read=").unwrap_or(0.0);
            } else if let Some(rest) = text.strip_prefix("I/O Latency: read") {
                if let (Some(a), Some(b), Some(c)) = (
                    number_after(rest, "p50="),
                    number_after(rest, "p99="),
                    number_after(rest, "p99.9="),
                ) {
                    node.latency_ms = Some([a, b, c]);
                }
            }
        }
        plan
    }

    pub fn top(&self) -> Option<&Node> {
        self.nodes.first()
    }

    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }
}

/// The number that follows the first `key` in `text` (`key` "" = the first number).
pub fn number_after(text: &str, key: &str) -> Option<f64> {
    let start = if key.is_empty() {
        text.find(|c: char| c.is_ascii_digit())?
    } else {
        // "p99=" must not match inside "p99.9=": require the key to start a word.
        let mut from = 0;
        loop {
            let at = from + text[from..].find(key)?;
            let starts_word =
                at == 0 || !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '.');
            if starts_word {
                break at + key.len();
            }
            from = at + key.len();
        }
    };
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_heap_scan_of_iolab() {
        let text = "Bitmap Heap Scan on eic_uniform (actual time=7.773..8.141 rows=0.00 loops=1)
  Recheck Cond: (a < 140)
  Rows Removed by Filter: 696
  Heap Blocks: exact=345 lossy=2
  Buffers: shared hit=1 read=348
  I/O Timings: shared wait=2.244 read=1.329
  I/O Latency: read p50=0.011 p99=0.042 p99.9=0.071 max=0.071
  ->  Bitmap Index Scan on eic_uniform_a_idx (actual time=0.856..0.856 rows=696.00 loops=1)
        Buffers: shared hit=1 read=3
        I/O Timings: shared read=0.027
Planning:
  Buffers: shared hit=50 read=7
Planning Time: 1.566 ms
Execution Time: 8.283 ms";
        let lines: Vec<String> = text.lines().map(String::from).collect();
        let plan = Plan::parse(&lines);
        assert_eq!(plan.execution_ms, Some(8.283));
        let top = plan.top().unwrap();
        assert_eq!(top.name, "Bitmap Heap Scan");
        assert_eq!((top.heap_exact, top.heap_lossy), (345.0, 2.0));
        assert_eq!((top.shared_hit, top.shared_read), (1.0, 348.0));
        assert_eq!((top.io_wait_ms, top.io_read_ms), (2.244, 1.329));
        assert_eq!(top.latency_ms, Some([0.011, 0.042, 0.071]));
        assert_eq!(top.rows_removed_by_filter, 696.0);
        let index = plan.node("Bitmap Index Scan").unwrap();
        assert_eq!(
            (index.shared_read, index.io_wait_ms, index.actual_rows),
            (3.0, 0.0, 696.0)
        );
    }
}
