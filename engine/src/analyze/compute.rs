//! Statistics of one column from the sampled rows: PostgreSQL's `compute_scalar_stats`
//! (every iolab type has `=` and `<`, so this is the only routine needed).
//!
//! Input: the column's value in each sampled row, in physical (TID) order, with the width
//! PostgreSQL would store it in. Output: a [`ColumnStatistics`]. The steps:
//!
//! 1. **NULLs and widths.** `null_frac` = NULLs / sample rows. `avg_width` = the type's
//!    length for fixed-width types, else the mean stored width (varlena header included) of
//!    the non-NULL values. Values wider than 1024 bytes are "too wide": counted, never
//!    compared (PostgreSQL's `WIDTH_THRESHOLD`), and assumed distinct.
//! 2. **Sort** the remaining values (ties by sample position), and walk the runs of equal
//!    values: `d` distinct values, of which `nmultiple` occur more than once, and the
//!    `target` longest runs (the MCV candidates, most frequent first, ties kept in value
//!    order). The same walk sums `i · position` for the correlation.
//! 3. **n_distinct.** No repeats → unique: `−(1 − null_frac)`. Every value repeated (and
//!    none too wide) → the column has just these values: `d`. Otherwise Haas and Stokes'
//!    Duj1 estimator over the non-NULL rows, `n·d / (n − f1 + f1·n/N)` with `f1` values
//!    seen exactly once, clamped to `[d, N]` and rounded. An estimate above 10% of the rows
//!    is stored as a negative fraction, so it scales as the table grows.
//! 4. **MCV list.** If every distinct value fits in `target` slots and the column seems to
//!    have only those values, keep them all; else keep the candidates only while the least
//!    common of them is significantly more common than an average non-MCV value (2
//!    standard deviations of the hypergeometric sampling error, plus 0.5: PostgreSQL 11's
//!    `analyze_mcv_list`). Frequencies are counts / sample rows.
//! 5. **Histogram.** The values not in the MCV list, in order, cut into `target`
//!    equal-population buckets: `target + 1` bounds (fewer if fewer distinct values
//!    remain), the first and last value included; none if fewer than two distinct values
//!    remain.
//! 6. **Correlation** between sample position and sort position (Pearson's r over the
//!    ranks `0..n−1` on both axes, which simplifies the sums).

use iolab_catalog::{ColumnStatistics, MostCommonValues, PgType, StatValue};

/// Values wider than this (bytes, uncompressed with a 4-byte header) are not compared.
pub const WIDTH_THRESHOLD: usize = 1024;

/// One sampled row's value of the column: `None` for NULL, else the value and the width
/// PostgreSQL would store it with (`VARSIZE_ANY` for a varlena).
pub type SampledValue = Option<(StatValue, usize)>;

/// Computes the statistics of column `attnum` (1-based) of type `ty` from `values` (one per
/// sampled row, in TID order), the sample being `values.len()` rows of an estimated
/// `total_rows`, for statistics target `target`. `None` when the sample is empty (nothing
/// is recorded, as in PostgreSQL).
pub fn compute_column_stats(
    attnum: i16,
    ty: PgType,
    values: &[SampledValue],
    total_rows: f64,
    target: usize,
) -> Option<ColumnStatistics> {
    let sample_rows = values.len();
    if sample_rows == 0 {
        return None;
    }
    let target = target.max(1);
    let fixed_width = match ty.typlen() {
        iolab_catalog::types::TypLen::Fixed(_) if !matches!(ty, PgType::Numeric { .. }) => {
            Some(typlen_of(ty))
        }
        _ => None,
    };

    // 1. NULLs, widths, too-wide values; the rest in (value, position) pairs.
    let mut null_cnt = 0usize;
    let mut nonnull_cnt = 0usize;
    let mut toowide_cnt = 0usize;
    let mut total_width = 0f64;
    let mut items: Vec<(&StatValue, usize)> = Vec::with_capacity(sample_rows);
    for v in values {
        let Some((value, width)) = v else {
            null_cnt += 1;
            continue;
        };
        nonnull_cnt += 1;
        if fixed_width.is_none() {
            total_width += *width as f64;
            if is_too_wide(value) {
                toowide_cnt += 1;
                continue;
            }
        }
        let position = items.len();
        items.push((value, position));
    }
    let null_frac = null_cnt as f64 / sample_rows as f64;
    let avg_width = match fixed_width {
        Some(w) => w,
        None if nonnull_cnt > 0 => (total_width / nonnull_cnt as f64) as i32,
        None => 0, // only NULLs: "unknown"
    };
    let base = |n_distinct: f64| ColumnStatistics {
        attnum,
        ty,
        null_frac: null_frac as f32,
        avg_width,
        n_distinct: n_distinct as f32,
        mcv: None,
        histogram: None,
        correlation: None,
    };
    if items.is_empty() {
        return Some(if nonnull_cnt > 0 {
            // Values, but all too wide: assume them distinct.
            base(-(1.0 - null_frac))
        } else {
            // Only NULLs: the column is all NULL, n_distinct unknown.
            base(0.0)
        });
    }

    // 2. Sort and walk the runs of equal values.
    items.sort_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    let values_cnt = items.len();
    /// An MCV candidate: run length and the index of its first item in `items`.
    #[derive(Clone, Copy)]
    struct Track {
        count: usize,
        first: usize,
    }
    let mut track: Vec<Track> = Vec::with_capacity(target);
    let mut ndistinct = 0usize;
    let mut nmultiple = 0usize;
    let mut dups = 0usize;
    let mut corr_xysum = 0f64;
    for i in 0..values_cnt {
        corr_xysum += i as f64 * items[i].1 as f64;
        dups += 1;
        let run_ends = i + 1 == values_cnt || items[i + 1].0 != items[i].0;
        if !run_ends {
            continue;
        }
        ndistinct += 1;
        if dups > 1 {
            nmultiple += 1;
            if track.len() < target || dups > track.last().expect("non-empty").count {
                // Insert after every candidate at least as frequent (ties keep value order).
                if track.len() == target {
                    track.pop();
                }
                let at = track.partition_point(|t| t.count >= dups);
                track.insert(
                    at,
                    Track {
                        count: dups,
                        first: i + 1 - dups,
                    },
                );
            }
        }
        dups = 0;
    }

    // 3. n_distinct.
    let mut stadistinct = if nmultiple == 0 {
        -(1.0 - null_frac)
    } else if toowide_cnt == 0 && nmultiple == ndistinct {
        ndistinct as f64
    } else {
        let f1 = (ndistinct - nmultiple + toowide_cnt) as f64;
        let d = f1 + nmultiple as f64;
        let n = (sample_rows - null_cnt) as f64;
        let big_n = total_rows * (1.0 - null_frac);
        haas_stokes(n, big_n, d, f1)
    };
    if stadistinct > 0.1 * total_rows {
        stadistinct = -(stadistinct / total_rows);
    }

    // 4. MCV list.
    let num_mcv = if track.len() == ndistinct
        && toowide_cnt == 0
        && stadistinct > 0.0
        && track.len() <= target
    {
        track.len()
    } else {
        let counts: Vec<usize> = track.iter().map(|t| t.count).collect();
        analyze_mcv_list(&counts, stadistinct, null_frac, sample_rows, total_rows)
    };
    track.truncate(num_mcv);
    let mut stats = base(stadistinct);
    if num_mcv > 0 {
        stats.mcv = Some(MostCommonValues {
            values: track.iter().map(|t| items[t.first].0.clone()).collect(),
            freqs: track
                .iter()
                .map(|t| (t.count as f64 / sample_rows as f64) as f32)
                .collect(),
        });
    }

    // 5. Histogram of the values outside the MCV list.
    let mut num_hist = ndistinct - num_mcv;
    if num_hist > target {
        num_hist = target + 1;
    }
    if num_hist >= 2 {
        let mut mcv_runs: Vec<(usize, usize)> = track.iter().map(|t| (t.first, t.count)).collect();
        mcv_runs.sort_unstable();
        let mut rest: Vec<&StatValue> = Vec::with_capacity(values_cnt);
        let mut next_run = mcv_runs.iter().peekable();
        let mut i = 0;
        while i < values_cnt {
            if let Some(&&(first, count)) = next_run.peek() {
                if i == first {
                    i += count;
                    next_run.next();
                    continue;
                }
            }
            rest.push(items[i].0);
            i += 1;
        }
        let nvals = rest.len();
        assert!(nvals >= num_hist, "enough values for the histogram");
        // Bound j is rest[j·(nvals−1)/(num_hist−1)], walked in integer and fractional
        // parts (no overflow for large targets).
        let delta = (nvals - 1) / (num_hist - 1);
        let deltafrac = (nvals - 1) % (num_hist - 1);
        let (mut pos, mut posfrac) = (0usize, 0usize);
        let mut bounds = Vec::with_capacity(num_hist);
        for _ in 0..num_hist {
            bounds.push(rest[pos].clone());
            pos += delta;
            posfrac += deltafrac;
            if posfrac >= num_hist - 1 {
                pos += 1;
                posfrac -= num_hist - 1;
            }
        }
        stats.histogram = Some(bounds);
    }

    // 6. Correlation of physical and logical order.
    if values_cnt > 1 {
        let n = values_cnt as f64;
        let corr_xsum = (n - 1.0) * n / 2.0;
        let corr_x2sum = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
        let r = (n * corr_xysum - corr_xsum * corr_xsum) / (n * corr_x2sum - corr_xsum * corr_xsum);
        stats.correlation = Some(r as f32);
    }
    Some(stats)
}

/// Haas and Stokes' Duj1 estimate of the distinct values among `big_n` non-NULL rows from a
/// sample of `n` of them holding `d` distinct values, `f1` of them seen once; clamped to
/// `[d, N]` and rounded.
pub fn haas_stokes(n: f64, big_n: f64, d: f64, f1: f64) -> f64 {
    let mut est = if big_n > 0.0 {
        (n * d) / ((n - f1) + f1 * n / big_n)
    } else {
        0.0
    };
    if est < d {
        est = d;
    }
    if est > big_n {
        est = big_n;
    }
    (est + 0.5).floor()
}

/// How many of the MCV candidates (`counts`, most common first) are worth keeping: drop the
/// least common while it is not significantly more common than the average value outside
/// the list would be (PostgreSQL's `analyze_mcv_list`).
pub fn analyze_mcv_list(
    counts: &[usize],
    stadistinct: f64,
    stanullfrac: f64,
    sample_rows: usize,
    total_rows: f64,
) -> usize {
    let mut num_mcv = counts.len();
    if num_mcv == 0 {
        return 0;
    }
    // The whole table was sampled: keep the whole list.
    if sample_rows as f64 == total_rows || total_rows <= 1.0 {
        return num_mcv;
    }
    let ndistinct_table = if stadistinct < 0.0 {
        -stadistinct * total_rows
    } else {
        stadistinct
    };
    let samplerows = sample_rows as f64;
    let mut sumcount: f64 = counts[..num_mcv - 1].iter().map(|&c| c as f64).sum();
    while num_mcv > 0 {
        // Selectivity of the least common candidate if it were not in the list.
        let mut selec = (1.0 - sumcount / samplerows - stanullfrac).clamp(0.0, 1.0);
        let otherdistinct = ndistinct_table - (num_mcv as f64 - 1.0);
        if otherdistinct > 1.0 {
            selec /= otherdistinct;
        }
        // Hypergeometric standard deviation of its sample count.
        let big_n = total_rows;
        let n = samplerows;
        let count = counts[num_mcv - 1] as f64;
        let k = big_n * count / n;
        let variance = n * k * (big_n - k) * (big_n - n) / (big_n * big_n * (big_n - 1.0));
        let stddev = variance.sqrt();
        if count > selec * samplerows + 2.0 * stddev + 0.5 {
            break; // significantly more common: keep it and all before it
        }
        num_mcv -= 1;
        if num_mcv == 0 {
            break;
        }
        sumcount -= counts[num_mcv - 1] as f64;
    }
    num_mcv
}

/// `typlen` of a fixed-width type as PostgreSQL has it.
fn typlen_of(ty: PgType) -> i32 {
    match ty.typlen() {
        iolab_catalog::types::TypLen::Fixed(w) => w as i32,
        iolab_catalog::types::TypLen::Varlena => -1,
    }
}

/// Is the value wider than [`WIDTH_THRESHOLD`] once detoasted (4-byte header included)?
fn is_too_wide(value: &StatValue) -> bool {
    matches!(value, StatValue::Text(s) if s.len() + 4 > WIDTH_THRESHOLD)
}

/// The size PostgreSQL stores a varlena of `payload` bytes with in a heap tuple
/// (`VARSIZE_ANY`): a 1-byte header up to 126 bytes, else 4.
pub fn varlena_stored_size(payload: usize) -> usize {
    if payload < 127 {
        payload + 1
    } else {
        payload + 4
    }
}

/// The size PostgreSQL would store `unscaled × 10^−scale` with as a `numeric` in a heap
/// tuple: varlena header, the 2-byte short numeric header, and 2 bytes per base-10000 digit
/// (leading and trailing zero digits dropped). iolab itself stores numeric in 16 bytes;
/// `avg_width` reports PostgreSQL's figure so the planner's width estimates agree.
pub fn pg_numeric_stored_size(unscaled: i128, scale: i8) -> usize {
    let digits = unscaled.unsigned_abs().to_string();
    let ndigits = if unscaled == 0 {
        0
    } else {
        let scale = scale as i64;
        // Split into integer and fraction decimal digits.
        let (int_part, frac_part) = if scale <= 0 {
            (
                format!("{digits}{}", "0".repeat((-scale) as usize)),
                String::new(),
            )
        } else if digits.len() as i64 > scale {
            let at = digits.len() - scale as usize;
            (digits[..at].to_string(), digits[at..].to_string())
        } else {
            (
                String::new(),
                format!("{}{digits}", "0".repeat(scale as usize - digits.len())),
            )
        };
        let int_pad = (4 - int_part.len() % 4) % 4;
        let frac_pad = (4 - frac_part.len() % 4) % 4;
        let all = format!(
            "{}{int_part}{frac_part}{}",
            "0".repeat(int_pad),
            "0".repeat(frac_pad)
        );
        let groups: Vec<&str> = all
            .as_bytes()
            .chunks(4)
            .map(|c| std::str::from_utf8(c).expect("ascii digits"))
            .collect();
        let first = groups.iter().position(|g| *g != "0000");
        let last = groups.iter().rposition(|g| *g != "0000");
        match (first, last) {
            (Some(f), Some(l)) => l - f + 1,
            _ => 0,
        }
    };
    varlena_stored_size(2 + 2 * ndigits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::sampling::Prng;

    fn ints(v: impl IntoIterator<Item = Option<i64>>) -> Vec<SampledValue> {
        v.into_iter()
            .map(|x| x.map(|i| (StatValue::Int(i), 4)))
            .collect()
    }

    #[test]
    fn small_fixed_set_is_complete() {
        // 30 000 rows of i % 100 out of 100 000: every value repeats; n_distinct = 100,
        // all 100 values in the MCV list, no histogram.
        let values = ints((0..30_000).map(|i| Some(i % 100)));
        let s = compute_column_stats(1, PgType::Int4, &values, 100_000.0, 100).unwrap();
        assert_eq!(s.n_distinct, 100.0);
        let mcv = s.mcv.as_ref().unwrap();
        assert_eq!(mcv.values.len(), 100);
        assert!(mcv.freqs.iter().all(|&f| (f - 0.01).abs() < 1e-6));
        // Ties keep value order.
        assert_eq!(mcv.values[0], StatValue::Int(0));
        assert_eq!(mcv.values[99], StatValue::Int(99));
        assert!(s.histogram.is_none());
        assert_eq!(s.null_frac, 0.0);
        assert_eq!(s.avg_width, 4);
    }

    #[test]
    fn unique_column_with_nulls() {
        // 10% NULLs, the rest unique: n_distinct = −0.9, histogram of 101 sorted bounds,
        // no MCVs, correlation 1 (values rise with position).
        let values = ints((0..30_000).map(|i| (i % 10 != 0).then_some(i)));
        let s = compute_column_stats(2, PgType::Int4, &values, 100_000.0, 100).unwrap();
        assert!((s.null_frac - 0.1).abs() < 1e-6);
        assert!((s.n_distinct + 0.9).abs() < 1e-6);
        assert!(s.mcv.is_none());
        let h = s.histogram.as_ref().unwrap();
        assert_eq!(h.len(), 101);
        assert!(h.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(h[0], StatValue::Int(1));
        assert_eq!(h[100], StatValue::Int(29_999));
        assert!((s.correlation.unwrap() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn reversed_order_has_negative_correlation() {
        let values = ints((0..1000).rev().map(Some));
        let s = compute_column_stats(1, PgType::Int8, &values, 1000.0, 100).unwrap();
        assert!((s.correlation.unwrap() + 1.0).abs() < 1e-6);
        assert_eq!(s.n_distinct, -1.0);
    }

    #[test]
    fn haas_stokes_on_known_distributions() {
        // Uniform over 10 000 values, 30 000 of 1 000 000 rows sampled: the estimate lands
        // near 10 000 (PostgreSQL showed 9946 for such a column).
        let mut rng = Prng::seeded(3);
        let values = ints((0..30_000).map(|_| Some((rng.next_double() * 10_000.0) as i64)));
        let s = compute_column_stats(1, PgType::Int4, &values, 1_000_000.0, 100).unwrap();
        assert!(
            (9_000.0..=11_000.0).contains(&s.n_distinct),
            "n_distinct {}",
            s.n_distinct
        );
        // Duj1 itself: every value seen once → n·d/(n − n + n²/N) = N (clamped to N).
        assert_eq!(haas_stokes(100.0, 1000.0, 100.0, 100.0), 1000.0);
        // No singletons → d.
        assert_eq!(haas_stokes(100.0, 1000.0, 10.0, 0.0), 10.0);
        // A skewed column: 1000 distinct values, Zipf-like; estimate within a factor 2.
        let mut rng = Prng::seeded(4);
        let values = ints((0..30_000).map(|_| {
            let u = rng.random_fract();
            Some((1.0 / u).min(1000.0) as i64)
        }));
        let s = compute_column_stats(1, PgType::Int4, &values, 3_000_000.0, 100).unwrap();
        let truth = {
            let mut v: Vec<i64> = values
                .iter()
                .map(|x| match x {
                    Some((StatValue::Int(i), _)) => *i,
                    _ => unreachable!(),
                })
                .collect();
            v.sort();
            v.dedup();
            v.len() as f32
        };
        assert!(s.n_distinct >= truth, "at least what the sample shows");
        assert!(s.n_distinct <= 2000.0, "n_distinct {}", s.n_distinct);
        // The common values (1, 2, 3…) are in the MCV list, most common first.
        let mcv = s.mcv.as_ref().unwrap();
        assert_eq!(mcv.values[0], StatValue::Int(1));
        assert!(mcv.freqs.windows(2).all(|w| w[0] >= w[1]));
        // The histogram excludes MCV values.
        for b in s.histogram_bounds() {
            assert!(!mcv.values.contains(b));
        }
    }

    #[test]
    fn all_nulls_and_too_wide() {
        let values: Vec<SampledValue> = vec![None; 10];
        let s = compute_column_stats(1, PgType::Text, &values, 10.0, 100).unwrap();
        assert_eq!(s.null_frac, 1.0);
        assert_eq!(s.avg_width, 0);
        assert_eq!(s.n_distinct, 0.0);
        let wide = "x".repeat(2000);
        let values: Vec<SampledValue> = (0..10)
            .map(|_| Some((StatValue::Text(wide.clone()), varlena_stored_size(2000))))
            .collect();
        let s = compute_column_stats(1, PgType::Text, &values, 10.0, 100).unwrap();
        assert_eq!(s.n_distinct, -1.0);
        assert_eq!(s.avg_width, 2004);
        assert!(compute_column_stats(1, PgType::Int4, &[], 0.0, 100).is_none());
    }

    #[test]
    fn stored_sizes_match_postgres() {
        assert_eq!(varlena_stored_size(32), 33); // md5 text: avg_width 33 in PostgreSQL
        assert_eq!(varlena_stored_size(126), 127);
        assert_eq!(varlena_stored_size(127), 131);
        assert_eq!(pg_numeric_stored_size(0, 2), 3);
        assert_eq!(pg_numeric_stored_size(12345, 0), 7); // 1 2345: two digits
        assert_eq!(pg_numeric_stored_size(15, 1), 7); // 1.5: digits 0001 5000
        assert_eq!(pg_numeric_stored_size(10000, 0), 5); // 1 0000 → one digit (trailing 0000 dropped)
        assert_eq!(pg_numeric_stored_size(-1_000_000, 6), 5); // -1.000000
    }

    #[test]
    fn mcv_list_drops_values_not_more_common_than_the_rest() {
        // One dominant value and many singletons: only the dominant one stays.
        let mut v: Vec<Option<i64>> = (0..10_000).map(|_| Some(-1)).collect();
        v.extend((0..20_000).map(|i| Some(i / 2)));
        let s = compute_column_stats(1, PgType::Int4, &ints(v), 1_000_000.0, 100).unwrap();
        let mcv = s.mcv.unwrap();
        assert_eq!(mcv.values, vec![StatValue::Int(-1)]);
        assert!((mcv.freqs[0] - 1.0 / 3.0).abs() < 1e-6);
    }
}
