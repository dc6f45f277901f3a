//! One PNG per experiment, drawn with plotters: categories on the x axis (the swept
//! setting), one line per system and configuration through the medians, a vertical bar
//! from min to max, a legend, axes labelled with units, and a title naming the experiment
//! and its settings. Text is drawn with DejaVu Sans, loaded at run time.

use crate::experiments::{advice::POLICIES, eic::EICS, recovery};
use crate::results::{Cell, Results};
use crate::summary::Summary;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Registers the font plotters draws text with; Err names the package to install.
pub fn load_font() -> Result<(), String> {
    let bytes = std::fs::read(FONT).map_err(|e| {
        format!("cannot read the plot font {FONT} ({e}): install it with apt-get install -y fonts-dejavu-core")
    })?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| format!("{FONT} is not a usable font"))
}

struct Series {
    name: String,
    points: Vec<(usize, Summary)>,
    dashed: bool,
}

struct Panel {
    title: String,
    x_desc: String,
    y_desc: String,
    categories: Vec<String>,
    series: Vec<Series>,
    /// Horizontal reference lines (fio's limits).
    hlines: Vec<(String, f64)>,
}

/// Lines through `metric` of the cells `keep` selects, one per `name_of`, at `category_of`.
fn series(
    cells: &[&Cell],
    metric: &str,
    keep: impl Fn(&Cell) -> bool,
    name_of: impl Fn(&Cell) -> String,
    category_of: impl Fn(&Cell) -> Option<usize>,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for c in cells.iter().filter(|c| keep(c)) {
        let (Some(s), Some(x)) = (c.get(metric), category_of(c)) else {
            continue;
        };
        let name = name_of(c);
        match out.iter_mut().find(|l| l.name == name) {
            Some(l) => l.points.push((x, s)),
            None => out.push(Series {
                name,
                points: vec![(x, s)],
                dashed: c.system == "pg18",
            }),
        }
    }
    for l in &mut out {
        l.points.sort_by_key(|p| p.0);
    }
    out
}

fn index_of(list: &[&str], value: &str) -> Option<usize> {
    list.iter().position(|v| *v == value)
}

const METHODS: [&str; 3] = ["sync", "worker", "io_uring"];

/// Draws the experiment's PNG into `out`; None for experiments without figures.
pub fn draw(results: &Results, experiment: &str, out: &Path) -> Result<Option<PathBuf>, String> {
    let cells: Vec<&Cell> = results
        .cells
        .iter()
        .filter(|c| c.experiment == experiment && !c.is_na())
        .collect();
    if cells.is_empty() {
        return Ok(None);
    }
    let meta = |key: &str| {
        results
            .meta
            .get(key)
            .map(|v| v.to_string().trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let setup = format!(
        "{} rows, shared_buffers {}, cold",
        meta("rows"),
        meta("shared_buffers")
    );
    let eics: Vec<String> = EICS.iter().map(|e| e.to_string()).collect();
    let eic_strs: Vec<&str> = eics.iter().map(String::as_str).collect();
    let config_name = |c: &Cell| {
        format!(
            "{} {}{}",
            c.system,
            c.io_method,
            if c.io == "direct" { " direct" } else { "" }
        )
    };
    let panels = match experiment {
        "eic" => ["dense", "sparse"]
            .iter()
            .map(|q| Panel {
                title: format!(
                    "eic: bitmap heap scan, {} ({setup})",
                    if *q == "dense" { "a < 140" } else { "a < 5" }
                ),
                x_desc: "effective_io_concurrency".into(),
                y_desc: "Execution Time (ms)".into(),
                categories: eics.clone(),
                series: series(
                    &cells,
                    "exec_ms",
                    |c| c.variant == *q,
                    config_name,
                    |c| index_of(&eic_strs, &c.setting),
                ),
                hlines: vec![],
            })
            .collect(),
        "advice" => vec![
            Panel {
                title: format!("advice: cyclic bitmap heap scan, eic 16, sync ({setup})"),
                x_desc: "read_stream_advice".into(),
                y_desc: "Execution Time (ms)".into(),
                categories: POLICIES.iter().map(|s| s.to_string()).collect(),
                series: series(
                    &cells,
                    "exec_ms",
                    |_| true,
                    config_name,
                    |c| index_of(&POLICIES, &c.setting),
                ),
                hlines: vec![],
            },
            Panel {
                title: "advice: I/O counts (iolab, pg_stat_io)".into(),
                x_desc: "read_stream_advice".into(),
                y_desc: "count (I/Os, posix_fadvise calls)".into(),
                categories: POLICIES.iter().map(|s| s.to_string()).collect(),
                series: ["reads", "advice_calls"]
                    .iter()
                    .flat_map(|m| {
                        series(
                            &cells,
                            m,
                            |c| c.system == "iolab",
                            |_| {
                                if *m == "reads" {
                                    "reads (I/Os)".into()
                                } else {
                                    "advice calls".into()
                                }
                            },
                            |c| index_of(&POLICIES, &c.setting),
                        )
                    })
                    .collect(),
                hlines: vec![],
            },
        ],
        "analyze" => ["ra=as-is", "ra=0"]
            .iter()
            .filter(|ra| cells.iter().any(|c| c.variant == **ra))
            .map(|ra| Panel {
                title: format!(
                    "analyze: cold ANALYZE VERBOSE, readahead {} ({setup})",
                    ra.trim_start_matches("ra=")
                ),
                x_desc: "io_method".into(),
                y_desc: "elapsed (ms)".into(),
                categories: METHODS.iter().map(|s| s.to_string()).collect(),
                series: series(
                    &cells,
                    "elapsed_ms",
                    |c| c.variant == *ra,
                    |c| format!("{} maintenance_io_concurrency={}", c.system, c.setting),
                    |c| index_of(&METHODS, &c.io_method),
                ),
                hlines: vec![],
            })
            .collect(),
        "aio" => vec![Panel {
            title: format!("aio: cold SELECT count(*) sequential scan ({setup})"),
            x_desc: "io_method".into(),
            y_desc: "throughput (MB/s)".into(),
            categories: METHODS.iter().map(|s| s.to_string()).collect(),
            series: series(
                &cells,
                "mb_s",
                |c| c.system != "fio",
                |c| format!("{} {}", c.system, c.io),
                |c| index_of(&METHODS, &c.io_method),
            ),
            hlines: cells
                .iter()
                .filter(|c| c.system == "fio")
                .filter_map(|c| {
                    c.median("mb_s")
                        .map(|v| (format!("fio {} {} {}", c.io_method, c.io, c.variant), v))
                })
                .collect(),
        }],
        "recovery" => {
            let categories: Vec<String> = recovery::CELLS
                .iter()
                .map(|(variant, mic)| match *mic {
                    "-" => variant.to_string(),
                    _ => format!("{variant}, mic {mic}"),
                })
                .collect();
            let category_of = |c: &Cell| {
                recovery::CELLS
                    .iter()
                    .position(|(v, m)| *v == c.variant && *m == c.setting)
            };
            // The read-ahead outcomes of worker's buffered cells (direct where the page
            // cache cannot be dropped).
            let io = if cells.iter().any(|c| c.io == "buffered") {
                "buffered"
            } else {
                "direct"
            };
            vec![
                Panel {
                    title: format!("recovery: redo after kill -9 ({setup})"),
                    x_desc: "recovery_prefetch, maintenance_io_concurrency".into(),
                    y_desc: "redo elapsed (s)".into(),
                    categories: categories.clone(),
                    series: series(&cells, "redo_s", |_| true, config_name, category_of),
                    hlines: vec![],
                },
                Panel {
                    title: format!(
                        "recovery: read-ahead outcomes, worker {io} (none with prefetch off)"
                    ),
                    x_desc: "recovery_prefetch, maintenance_io_concurrency".into(),
                    y_desc: "blocks".into(),
                    categories,
                    series: ["prefetch", "hit", "skip_rep"]
                        .iter()
                        .flat_map(|m| {
                            series(
                                &cells,
                                m,
                                |c| {
                                    c.io == io
                                        && c.io_method == "worker"
                                        && c.variant != "prefetch=off"
                                },
                                |c| format!("{} {m}", c.system),
                                category_of,
                            )
                        })
                        .collect(),
                    hlines: vec![],
                },
            ]
        }
        _ => return Ok(None),
    };
    let path = out.join(format!("{experiment}.png"));
    render(&path, &panels).map_err(|e| e.to_string())?;
    Ok(Some(path))
}

/// Distinct, readable line colours (red, blue, green, purple, orange, brown).
const COLORS: [(u8, u8, u8); 6] = [
    (228, 26, 28),
    (55, 126, 184),
    (77, 175, 74),
    (152, 78, 163),
    (255, 127, 0),
    (166, 86, 40),
];

/// A series' name without its system: "pg18 sync" and "iolab sync" share a colour.
fn configuration_of(name: &str) -> &str {
    name.strip_prefix("iolab ")
        .or_else(|| name.strip_prefix("pg18 "))
        .unwrap_or(name)
}

fn render(path: &Path, panels: &[Panel]) -> Result<(), Box<dyn std::error::Error>> {
    let width = 720 * panels.len() as u32;
    let root = BitMapBackend::new(path, (width, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, panel) in root.split_evenly((1, panels.len())).iter().zip(panels) {
        let n = panel.categories.len();
        let top = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1.max))
            .chain(panel.hlines.iter().map(|h| h.1))
            .fold(0.0f64, f64::max);
        let top = if top > 0.0 { top * 1.35 } else { 1.0 }; // room for the legend
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..top)?;
        let cats = panel.categories.clone();
        chart
            .configure_mesh()
            .x_labels(n)
            .x_label_formatter(&move |x: &f64| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    cats.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            })
            .disable_x_mesh()
            .x_desc(&panel.x_desc)
            .y_desc(&panel.y_desc)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()?;
        // One colour per configuration, the same for both systems (PostgreSQL 18 dashed).
        let mut keys: Vec<&str> = Vec::new();
        for s in &panel.series {
            let key = configuration_of(&s.name);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        // Each series a little to the side of the category, so min–max bars do not overlap.
        let count = panel.series.len() as f64;
        for (k, s) in panel.series.iter().enumerate() {
            let shift = (k as f64 - (count - 1.0) / 2.0) * (0.3 / count.max(1.0));
            let i = keys
                .iter()
                .position(|k| *k == configuration_of(&s.name))
                .unwrap_or(0);
            let (r, g, b) = COLORS[i % COLORS.len()];
            let color = RGBColor(r, g, b).to_rgba();
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|(x, v)| (*x as f64 + shift, v.median))
                .collect();
            let style = color.stroke_width(2);
            if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, style)
                    });
            } else {
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
            chart.draw_series(
                s.points
                    .iter()
                    .filter(|(_, v)| v.max > v.min)
                    .map(|(x, v)| {
                        PathElement::new(
                            vec![(*x as f64 + shift, v.min), (*x as f64 + shift, v.max)],
                            color.stroke_width(1),
                        )
                    }),
            )?;
        }
        for (i, (name, value)) in panel.hlines.iter().enumerate() {
            let color = if i == 0 {
                BLACK.to_rgba()
            } else {
                RGBColor(120, 120, 120).to_rgba()
            };
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(-0.5, *value), (n as f64 - 0.5, *value)],
                    8,
                    6,
                    color.stroke_width(2),
                ))?
                .label(format!("{name}: {value:.0}"))
                .legend(move |(x, y)| {
                    DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font(("sans-serif", 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
