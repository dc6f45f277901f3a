//! What a run produces: cells (one configuration of one experiment on one system, its
//! metrics over the repeated runs), consistency checks, and notes. Written as
//! `results.csv` (one row per cell and metric), `results.json` (everything) and a table.

use crate::summary::Summary;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub values: Vec<f64>,
    pub summary: Option<Summary>,
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Cell {
    pub experiment: String,
    /// "iolab", "pg18" or "fio".
    pub system: String,
    pub io_method: String,
    /// "buffered" or "direct".
    pub io: String,
    /// What else distinguishes the cell: "dense", "sparse", an advice policy, "mic=0 ra=as-is".
    pub variant: String,
    /// The swept setting's value (effective_io_concurrency), or "".
    pub setting: String,
    pub metrics: Vec<Metric>,
    /// Why the cell has no figures ("n/a: …"), or what to know about them.
    pub note: String,
}

impl Cell {
    pub fn new(
        experiment: &str,
        system: &str,
        io_method: &str,
        io: &str,
        variant: &str,
        setting: &str,
    ) -> Cell {
        Cell {
            experiment: experiment.into(),
            system: system.into(),
            io_method: io_method.into(),
            io: io.into(),
            variant: variant.into(),
            setting: setting.into(),
            metrics: Vec::new(),
            note: String::new(),
        }
    }

    /// Adds one run's value of a metric.
    pub fn add(&mut self, name: &str, unit: &str, value: f64) {
        match self.metrics.iter_mut().find(|m| m.name == name) {
            Some(m) => m.values.push(value),
            None => self.metrics.push(Metric {
                name: name.into(),
                unit: unit.into(),
                values: vec![value],
                summary: None,
            }),
        }
    }

    pub fn summarize(&mut self) {
        for m in &mut self.metrics {
            m.summary = Summary::of(&m.values);
        }
    }

    pub fn get(&self, name: &str) -> Option<Summary> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| Summary::of(&m.values))
    }

    pub fn median(&self, name: &str) -> Option<f64> {
        self.get(name).map(|s| s.median)
    }

    pub fn is_na(&self) -> bool {
        self.metrics.is_empty()
    }

    fn same_config(&self, other: &Cell) -> bool {
        (
            self.experiment.as_str(),
            self.io_method.as_str(),
            self.io.as_str(),
            self.variant.as_str(),
            self.setting.as_str(),
        ) == (
            other.experiment.as_str(),
            other.io_method.as_str(),
            other.io.as_str(),
            other.variant.as_str(),
            other.setting.as_str(),
        )
    }
}

/// A consistency check the harness made on its own figures.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Check {
    pub experiment: String,
    pub what: String,
    pub passed: bool,
    pub detail: String,
}

#[derive(Serialize, Deserialize, Default)]
pub struct Results {
    pub meta: serde_json::Map<String, serde_json::Value>,
    pub cells: Vec<Cell>,
    pub checks: Vec<Check>,
    pub notes: Vec<String>,
}

/// How an experiment's table looks: its main metric (compared with PostgreSQL 18) and columns.
pub struct Layout {
    pub primary: &'static str,
    pub higher_is_better: bool,
    pub columns: &'static [(&'static str, &'static str)],
}

impl Results {
    pub fn note(&mut self, text: String) {
        eprintln!("note: {text}");
        self.notes.push(text);
    }

    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        let mut out = String::from(
            "experiment,system,io_method,io,variant,setting,metric,unit,runs,median,min,max,note\n",
        );
        for c in &self.cells {
            let keys = [
                &c.experiment,
                &c.system,
                &c.io_method,
                &c.io,
                &c.variant,
                &c.setting,
            ]
            .map(|s| csv_field(s));
            if c.metrics.is_empty() {
                let _ = writeln!(out, "{},,,0,,,,{}", keys.join(","), csv_field(&c.note));
            }
            for m in &c.metrics {
                let s = Summary::of(&m.values).expect("a metric has values");
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{}",
                    keys.join(","),
                    csv_field(&m.name),
                    csv_field(&m.unit),
                    s.runs,
                    s.median,
                    s.min,
                    s.max,
                    csv_field(&c.note)
                );
            }
        }
        std::fs::write(path, out)
    }

    pub fn write_json(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(
            path,
            serde_json::to_string_pretty(self).expect("results serialize"),
        )
    }

    /// The results table of one experiment; iolab's cells, PostgreSQL 18's beside them.
    pub fn table(&self, experiment: &str, layout: &Layout) -> String {
        let mut out = String::new();
        let cells: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| c.experiment == experiment)
            .collect();
        if cells.is_empty() {
            return out;
        }
        let pg_present = cells.iter().any(|c| c.system == "pg18");
        if pg_present {
            let _ = writeln!(
                out,
                "vs PG18 = {}: above 1 iolab is faster",
                if layout.higher_is_better {
                    "iolab's median / PostgreSQL 18's"
                } else {
                    "PostgreSQL 18's median / iolab's"
                }
            );
        }
        let mut header = format!(
            "{:<8} {:<17} {:<14} {:>7}",
            "system", "io_method/io", "variant", "setting"
        );
        for (_, title) in layout.columns {
            let _ = write!(header, " {title:>22}");
        }
        if pg_present {
            let _ = write!(
                header,
                " {:>16} {:>7}",
                format!("PG18 {}", layout.columns[0].1),
                "vs PG18"
            );
        }
        out.push_str(&header);
        out.push('\n');
        // PostgreSQL 18's reasons for cells it could not run, printed once below the table.
        let mut pg_reasons: Vec<String> = Vec::new();
        for c in cells.iter().filter(|c| c.system != "pg18") {
            let mut line = format!(
                "{:<8} {:<17} {:<14} {:>7}",
                c.system,
                format!("{}/{}", c.io_method, c.io),
                c.variant,
                c.setting
            );
            if c.is_na() {
                let _ = write!(line, " {}", c.note);
            } else {
                for (name, _) in layout.columns {
                    let _ = write!(
                        line,
                        " {:>22}",
                        c.get(name)
                            .map(format_summary)
                            .unwrap_or_else(|| "-".into())
                    );
                }
                if pg_present && c.system == "iolab" {
                    match cells
                        .iter()
                        .find(|p| p.system == "pg18" && p.same_config(c))
                    {
                        Some(p) if !p.is_na() => {
                            let (mine, theirs) =
                                (c.median(layout.primary), p.median(layout.primary));
                            let ratio = match (mine, theirs) {
                                (Some(a), Some(b)) if a > 0.0 && b > 0.0 => {
                                    format!(
                                        "{:.2}x",
                                        if layout.higher_is_better {
                                            a / b
                                        } else {
                                            b / a
                                        }
                                    )
                                }
                                _ => "-".into(),
                            };
                            let _ = write!(
                                line,
                                " {:>16} {ratio:>7}",
                                theirs
                                    .map(|v| if v.abs() < 10.0 {
                                        format!("{v:.2}")
                                    } else {
                                        format!("{v:.1}")
                                    })
                                    .unwrap_or("-".into())
                            );
                        }
                        Some(p) => {
                            if !pg_reasons.contains(&p.note) {
                                pg_reasons.push(p.note.clone());
                            }
                            let n = pg_reasons.iter().position(|r| *r == p.note).unwrap_or(0) + 1;
                            let _ = write!(line, " {:>16}", format!("n/a [{n}]"));
                        }
                        None => {}
                    }
                }
                if !c.note.is_empty() {
                    let _ = write!(line, "  ({})", c.note);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for (i, reason) in pg_reasons.iter().enumerate() {
            let _ = writeln!(out, "  [{}] PostgreSQL 18 {reason}", i + 1);
        }
        out
    }
}

/// "median (min–max)", one decimal where the number is small.
pub fn format_summary(s: Summary) -> String {
    let f = |v: f64| {
        if v.abs() >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    if s.runs == 1 || s.min == s.max {
        f(s.median)
    } else {
        format!("{} ({}–{})", f(s.median), f(s.min), f(s.max))
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
