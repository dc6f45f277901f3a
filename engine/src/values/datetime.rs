//! Calendar arithmetic and the session time zone, shared by input and output.
//!
//! Dates are counted in days and timestamps in microseconds from 1970-01-01 (Arrow's epoch);
//! PostgreSQL's wire formats count from 2000-01-01, [`PG_EPOCH_DAYS`] days later. Years are
//! astronomical (year 0 is 1 BC), the calendar is the proleptic Gregorian one PostgreSQL uses.

use chrono::{DateTime, LocalResult, Offset, TimeZone};
use datafusion::arrow::array::timezone::Tz;
use std::str::FromStr;

/// Microseconds in a day.
pub const USECS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
pub const PG_EPOCH_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
pub const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS as i64 * USECS_PER_DAY;
/// `date 'infinity'` / `'-infinity'` as Arrow `Date32` values (PostgreSQL uses the same sentinels).
pub const DATE_POS_INFINITY: i32 = i32::MAX;
pub const DATE_NEG_INFINITY: i32 = i32::MIN;
/// `timestamp 'infinity'` / `'-infinity'` as Arrow microsecond timestamps.
pub const TS_POS_INFINITY: i64 = i64::MAX;
pub const TS_NEG_INFINITY: i64 = i64::MIN;

/// The first date PostgreSQL accepts, 4714-11-24 BC, in days since 1970.
pub(crate) const DATE_MIN_DAYS: i64 = -2_440_588;
/// The last date PostgreSQL accepts, 5874897-12-31, in days since 1970.
pub(crate) const DATE_MAX_DAYS: i64 = 2_145_042_905;
/// The first timestamp PostgreSQL accepts (4714-11-24 00:00 BC), in µs since 1970.
pub(crate) const TS_MIN_MICROS: i64 = DATE_MIN_DAYS * USECS_PER_DAY;
/// The last timestamp iolab can hold: one below the `infinity` sentinel.
pub(crate) const TS_MAX_MICROS: i64 = i64::MAX - 1;

/// Days since 1970-01-01 of a proleptic Gregorian date (astronomical year, month 1..=12).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    debug_assert!((1..=12).contains(&month) && (1..=31).contains(&day));
    // Count years from March so that the leap day is the last day of the year.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let month_from_march = (month as i64 + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day as i64 - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The (astronomical year, month, day) of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month as u32, day)
}

pub(crate) fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

/// Days in a month of a year (astronomical: 0 is 1 BC).
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap_year(year) => 29,
        _ => 28,
    }
}

/// The session's `TimeZone`: a fixed offset or a zone of the tz database.
///
/// Offsets are kept in seconds east of Greenwich (ISO 8601's sign). PostgreSQL reads the
/// setting two ways, and so does [`SessionZone::parse`]: a bare number is hours east
/// (`SET timezone = -3` is UTC−3), everything else is a zone name or a POSIX zone string,
/// whose offsets count hours *west* (`UTC+5` and `+05:30` are UTC−5 and UTC−5:30).
#[derive(Clone, Copy, Debug)]
pub struct SessionZone {
    kind: ZoneKind,
}

#[derive(Clone, Copy, Debug)]
enum ZoneKind {
    /// Seconds east of UTC.
    Fixed(i32),
    Named(Tz),
}

/// Largest offset a zone may have, as PostgreSQL limits it: 15:59:59 either way.
const MAX_OFFSET_SECS: i32 = 15 * 3600 + 59 * 60 + 59;

impl SessionZone {
    pub fn utc() -> SessionZone {
        SessionZone {
            kind: ZoneKind::Fixed(0),
        }
    }

    /// A fixed zone `east_secs` seconds east of UTC (negative: west).
    pub fn fixed(east_secs: i32) -> SessionZone {
        assert!(
            east_secs.abs() <= MAX_OFFSET_SECS * 2,
            "offset {east_secs}s is not a zone"
        );
        SessionZone {
            kind: ZoneKind::Fixed(east_secs),
        }
    }

    /// Reads a `TimeZone` setting; `None` when PostgreSQL would reject it.
    pub fn parse(setting: &str) -> Option<SessionZone> {
        let s = setting.trim();
        // A plain number is hours east, fractions allowed (`5.5` is +05:30).
        if let Some(hours) = parse_plain_number(s) {
            let secs = (hours * 3600.0).round();
            if secs.abs() > f64::from(MAX_OFFSET_SECS) {
                return None;
            }
            return Some(SessionZone::fixed(secs as i32));
        }
        SessionZone::named(s)
    }

    /// Reads a zone as `AT TIME ZONE` and `timezone(zone, …)` do: an abbreviation
    /// (`PST`, `CEST`: fixed offsets), a zone of the tz database in any case, or a POSIX
    /// fixed zone (`UTC+3`, `+05`: hours *west*). `None` when PostgreSQL would not
    /// recognize it.
    pub fn named(text: &str) -> Option<SessionZone> {
        if let Some(east) = super::zone_abbreviations::offset_east(text) {
            return Some(SessionZone::fixed(east));
        }
        let lower = text.to_ascii_lowercase();
        let utc_alias = lower.strip_prefix("etc/").unwrap_or(&lower);
        if matches!(
            utc_alias,
            "utc" | "uct" | "gmt" | "gmt0" | "gmt+0" | "gmt-0" | "universal" | "zulu" | "greenwich"
        ) {
            return Some(SessionZone::utc());
        }
        let starts_alpha = text.bytes().next()?.is_ascii_alphabetic();
        if starts_alpha {
            if let Some(tz) =
                iolab_settings::tz_database_name(text).and_then(|name| Tz::from_str(name).ok())
            {
                return Some(SessionZone {
                    kind: ZoneKind::Named(tz),
                });
            }
        }
        parse_posix_fixed(text).map(SessionZone::fixed)
    }

    /// The zone as Arrow names one: a tz database name, or a fixed offset `+05:30`.
    pub fn arrow_name(&self) -> String {
        match self.kind {
            ZoneKind::Named(tz) => tz.to_string(),
            ZoneKind::Fixed(east) => {
                let (sign, abs) = (if east < 0 { '-' } else { '+' }, east.unsigned_abs());
                format!("{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60)
            }
        }
    }

    /// Whether the zone is UTC at every instant (the fast path of most conversions).
    pub fn is_utc(&self) -> bool {
        matches!(self.kind, ZoneKind::Fixed(0))
    }

    /// The zone's offset east of UTC, in seconds, at an instant (µs since 1970 UTC).
    pub fn offset_at_utc(&self, utc_micros: i64) -> i32 {
        match self.kind {
            ZoneKind::Fixed(east) => east,
            ZoneKind::Named(tz) => {
                let naive = naive_from_micros(utc_micros);
                tz.offset_from_utc_datetime(&naive).fix().local_minus_utc()
            }
        }
    }

    /// The instant (µs since 1970 UTC) a wall-clock time in this zone names.
    ///
    /// Where the wall clock repeats (daylight saving ends) or skips (it begins), PostgreSQL
    /// takes the zone's smaller offset of the two around the transition, which gives the
    /// later instant; so does this.
    pub fn local_to_utc(&self, local_micros: i64) -> i64 {
        let east = match self.kind {
            ZoneKind::Fixed(east) => east,
            ZoneKind::Named(tz) => {
                let naive = naive_from_micros(local_micros);
                match tz.offset_from_local_datetime(&naive) {
                    LocalResult::Single(o) => o.fix().local_minus_utc(),
                    LocalResult::Ambiguous(a, b) => {
                        a.fix().local_minus_utc().min(b.fix().local_minus_utc())
                    }
                    LocalResult::None => {
                        let before = self.offset_at_utc(local_micros.saturating_sub(USECS_PER_DAY));
                        let after = self.offset_at_utc(local_micros.saturating_add(USECS_PER_DAY));
                        before.min(after)
                    }
                }
            }
        };
        local_micros.saturating_sub(i64::from(east) * 1_000_000)
    }

    /// The zone's abbreviation at an instant, as `to_char`'s `TZ` writes it: the tz
    /// database's (`CEST`, `EST`), `UTC` for UTC, and the offset (`+05:30`, `-03`) for
    /// other fixed zones and for tz database zones that have no abbreviation.
    pub fn abbreviation_at_utc(&self, utc_micros: i64) -> String {
        use chrono_tz::OffsetName;
        let named = match self.kind {
            ZoneKind::Fixed(0) => return "UTC".into(),
            ZoneKind::Fixed(_) => None,
            ZoneKind::Named(tz) => chrono_tz::Tz::from_str(&tz.to_string()).ok(),
        };
        let at = naive_from_micros(utc_micros);
        let abbreviation = named.and_then(|zone| {
            let offset = zone.offset_from_utc_datetime(&at);
            let text = offset.abbreviation()?;
            // The tz database writes `+0530`-style names for zones without one.
            (!text.starts_with(['+', '-'])).then(|| text.to_string())
        });
        abbreviation.unwrap_or_else(|| {
            let east = self.offset_at_utc(utc_micros);
            let (sign, abs) = (if east < 0 { '-' } else { '+' }, east.unsigned_abs());
            match abs % 3600 / 60 {
                0 => format!("{sign}{:02}", abs / 3600),
                minutes => format!("{sign}{:02}:{minutes:02}", abs / 3600),
            }
        })
    }

    /// `utc_micros + interval` as PostgreSQL adds an interval to a `timestamptz`: the
    /// months on this zone's wall clock (the day of the month clamped to the new month's
    /// length), then the days on the wall clock (so a day across a daylight-saving change is
    /// 23 or 25 hours), then the time part as elapsed time. `infinity` stays; `None` past
    /// the timestamp range.
    pub fn add_interval(
        &self,
        utc_micros: i64,
        months: i32,
        days: i32,
        micros: i64,
    ) -> Option<i64> {
        if utc_micros == TS_POS_INFINITY || utc_micros == TS_NEG_INFINITY {
            return Some(utc_micros);
        }
        let mut t = utc_micros;
        if months != 0 {
            let (local, _) = self.utc_to_local(t);
            t = self.local_to_utc(add_months(local, months)?);
        }
        if days != 0 {
            let (local, _) = self.utc_to_local(t);
            let local = local.checked_add(i64::from(days).checked_mul(USECS_PER_DAY)?)?;
            t = self.local_to_utc(local);
        }
        let t = t.checked_add(micros)?;
        (TS_MIN_MICROS..=TS_MAX_MICROS).contains(&t).then_some(t)
    }

    /// The wall-clock time (µs since 1970) of an instant in this zone, and the offset used.
    pub fn utc_to_local(&self, utc_micros: i64) -> (i64, i32) {
        let east = self.offset_at_utc(utc_micros);
        (utc_micros.saturating_add(i64::from(east) * 1_000_000), east)
    }
}

/// A wall-clock time (µs since 1970) `months` later, the day clamped to the month's length
/// (January 31 + 1 month is February 29 or 28); `None` past the calendar's range.
fn add_months(local_micros: i64, months: i32) -> Option<i64> {
    let days = local_micros.div_euclid(USECS_PER_DAY);
    let time = local_micros.rem_euclid(USECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    let month_index = year.checked_mul(12)? + i64::from(month) - 1 + i64::from(months);
    let (year, month) = (
        month_index.div_euclid(12),
        month_index.rem_euclid(12) as u32 + 1,
    );
    if !(DATE_MIN_DAYS / 365 - 1..=DATE_MAX_DAYS / 365 + 1).contains(&year) {
        return None;
    }
    let day = day.min(days_in_month(year, month));
    days_from_civil(year, month, day)
        .checked_mul(USECS_PER_DAY)?
        .checked_add(time)
}

/// The fields of a wall-clock time: (year, month, day, µs into the day).
fn calendar_fields(micros: i64) -> (i64, i64, i64, i64) {
    let days = micros.div_euclid(USECS_PER_DAY);
    let (year, month, day) = civil_from_days(days);
    (
        year,
        i64::from(month),
        i64::from(day),
        micros.rem_euclid(USECS_PER_DAY),
    )
}

/// `a - b` (wall-clock times in µs since 1970) as PostgreSQL's `age` subtracts them: field
/// by field, years, months and days of the calendar, then the time
/// (`age('2024-03-31', '2024-01-31')` is `2 mons`, not `60 days`), as (months, days, µs).
/// `None` for an infinity or past an interval's range.
pub fn calendar_difference(a: i64, b: i64) -> Option<(i32, i32, i64)> {
    let infinite = |v: i64| v == i64::MAX || v == i64::MIN;
    if infinite(a) || infinite(b) {
        return None;
    }
    // Subtract the later from the earlier's fields and borrow upwards, then restore the sign.
    let (later, earlier, sign) = if a >= b { (a, b, 1) } else { (b, a, -1) };
    let (y1, m1, d1, t1) = calendar_fields(later);
    let (y2, m2, d2, t2) = calendar_fields(earlier);
    let (mut years, mut months, mut days, mut time) = (y1 - y2, m1 - m2, d1 - d2, t1 - t2);
    if time < 0 {
        time += USECS_PER_DAY;
        days -= 1;
    }
    while days < 0 {
        // Borrow the length of the earlier value's month, as PostgreSQL does.
        days += i64::from(days_in_month(y2, m2 as u32));
        months -= 1;
    }
    if months < 0 {
        months += 12;
        years -= 1;
    }
    let months = i32::try_from((years * 12 + months) * sign).ok()?;
    let days = i32::try_from(days * sign).ok()?;
    Some((months, days, time * sign))
}

/// An interval (months, days, µs) times `factor`, as PostgreSQL's `interval_mul` (and, with
/// `1 / divisor`'s steps, `interval_div`) scales it: each field is scaled and truncated, and
/// what a fraction leaves cascades down — a month is 30 days, a day 24 hours — but never up
/// (`'1 mon' * 1.5` is `1 mon 15 days`, `'1 day' / 7` is `03:25:42.857143`). `divide`
/// divides by `factor` instead (the quotients are computed directly, not through a
/// reciprocal). `None` out of range.
pub fn scale_interval(
    (months, days, micros): (i32, i32, i64),
    factor: f64,
    divide: bool,
) -> Option<(i32, i32, i64)> {
    let apply = |v: f64| if divide { v / factor } else { v * factor };
    let fits_i32 = |v: f64| v.is_finite() && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX);
    // Rounded to the microsecond, so 0.3 × 30 days is 9 days, not 8.999….
    let to_micros_precision = |v: f64| (v * 1e6).round_ties_even() / 1e6;
    let scaled_months = apply(f64::from(months));
    let scaled_days = apply(f64::from(days));
    if !fits_i32(scaled_months) || !fits_i32(scaled_days) {
        return None;
    }
    let (whole_months, mut whole_days) = (scaled_months as i32, scaled_days as i32);
    let month_remainder_days =
        to_micros_precision((scaled_months - f64::from(whole_months)) * 30.0);
    let mut sec_remainder = to_micros_precision(
        (scaled_days - f64::from(whole_days) + month_remainder_days - month_remainder_days.trunc())
            * 86_400.0,
    );
    if sec_remainder.abs() >= 86_400.0 {
        let carried_days = (sec_remainder / 86_400.0).trunc();
        whole_days = whole_days.checked_add(carried_days as i32)?;
        sec_remainder -= carried_days * 86_400.0;
    }
    let whole_days = whole_days.checked_add(month_remainder_days as i32)?;
    let time = (apply(micros as f64) + sec_remainder * 1e6).round_ties_even();
    (time.is_finite() && time.abs() < 9.2e18).then_some((whole_months, whole_days, time as i64))
}

/// chrono's `NaiveDateTime` for µs since 1970, clamped into chrono's range (±262143 years),
/// which only matters for offsets of far-away instants.
fn naive_from_micros(micros: i64) -> chrono::NaiveDateTime {
    const LIMIT: i64 = 8_210_298_412_799_999_999; // +262143-12-31T23:59:59.999999
    let clamped = micros.clamp(-LIMIT, LIMIT);
    DateTime::from_timestamp_micros(clamped)
        .map(|d| d.naive_utc())
        .unwrap_or_default()
}

/// `[+-]digits[.digits]` and nothing else, as `strtod` would accept it in the TimeZone check.
fn parse_plain_number(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut parts = body.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next().unwrap_or("");
    let digits_ok = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits_ok(int) || !digits_ok(frac) {
        return None;
    }
    s.parse::<f64>().ok()
}

/// A POSIX zone without daylight saving: `[NAME]offset` where NAME is `<...>` or 3+ letters
/// and the offset `[+-]h[h][:mm[:ss]]` counts west. Returns seconds east.
fn parse_posix_fixed(s: &str) -> Option<i32> {
    let rest = if let Some(after) = s.strip_prefix('<') {
        &after[after.find('>')? + 1..]
    } else {
        let letters = s.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
        if letters != 0 && letters < 3 {
            return None;
        }
        &s[letters..]
    };
    let (sign, body) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => (1, rest),
    };
    let mut secs = 0i32;
    let mut fields = 0;
    for (i, part) in body.split(':').enumerate() {
        let limit = if i == 0 { 24 } else { 59 };
        if i > 2 || part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let v: i32 = part.parse().ok()?;
        if v > limit {
            return None;
        }
        secs += v * [3600, 60, 1][i];
        fields += 1;
    }
    if fields == 0 || secs > MAX_OFFSET_SECS {
        return None;
    }
    Some(-sign * secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `to_char`'s `TZ`: the tz database's abbreviation by season, `UTC`, an offset.
    #[test]
    fn zone_abbreviations() {
        let july = 1_720_180_800_000_000; // 2024-07-05 12:00 UTC
        let january = 1_704_456_000_000_000; // 2024-01-05 12:00 UTC
        let paris = SessionZone::parse("Europe/Paris").unwrap();
        assert_eq!(paris.abbreviation_at_utc(july), "CEST");
        assert_eq!(paris.abbreviation_at_utc(january), "CET");
        assert_eq!(SessionZone::utc().abbreviation_at_utc(july), "UTC");
        assert_eq!(
            SessionZone::fixed(-3 * 3600).abbreviation_at_utc(july),
            "-03"
        );
        assert_eq!(
            SessionZone::fixed(19_800).abbreviation_at_utc(july),
            "+05:30"
        );
    }

    #[test]
    fn calendar_round_trips() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 1, 1), i64::from(PG_EPOCH_DAYS));
        assert_eq!(days_from_civil(-4713, 11, 24), DATE_MIN_DAYS);
        assert_eq!(days_from_civil(5_874_897, 12, 31), DATE_MAX_DAYS);
        for days in (-3_000_000..3_000_000).step_by(997) {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(19_753), (2024, 1, 31));
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
    }

    #[test]
    fn time_zone_settings_read_like_postgres() {
        // Verified on PostgreSQL 18: SET timezone = X; SELECT '2024-01-31 12:34:56'::timestamptz
        // shows +05 for '5' and '+5', +05:30 for '5.5', -07 for -7, -05:30 for '+05:30',
        // -05 for 'UTC+5' and 'EST5', +03 for 'Etc/GMT-3', +03:30 for '<+0330>-03:30'.
        let east = |s: &str| SessionZone::parse(s).unwrap().offset_at_utc(0);
        assert_eq!(east("UTC"), 0);
        assert_eq!(east("Etc/UTC"), 0);
        assert_eq!(east("gmt"), 0);
        assert_eq!(east("5"), 5 * 3600);
        assert_eq!(east("+5"), 5 * 3600);
        assert_eq!(east("5.5"), 5 * 3600 + 1800);
        assert_eq!(east("-7"), -7 * 3600);
        assert_eq!(east("+05:30"), -(5 * 3600 + 1800));
        assert_eq!(east("UTC+5"), -5 * 3600);
        assert_eq!(east("EST5"), -5 * 3600);
        assert_eq!(east("Etc/GMT-3"), 3 * 3600);
        assert_eq!(east("<+0330>-03:30"), 3 * 3600 + 1800);
        assert_eq!(east("Asia/Kolkata"), 5 * 3600 + 1800);
        assert_eq!(east("europe/berlin"), 3600);
        assert!(SessionZone::parse("Foo").is_none());
        assert!(SessionZone::parse("").is_none());
    }

    #[test]
    fn at_time_zone_reads_numbers_as_posix_and_knows_abbreviations() {
        // Verified on PostgreSQL 18: timestamptz '2024-07-01 03:00+00' AT TIME ZONE '-5' is
        // 08:00, '+05' 22:00 the day before, 'PST' 19:00, 'cest' 05:00.
        let east = |s: &str| SessionZone::named(s).unwrap().offset_at_utc(0);
        assert_eq!(east("-5"), 5 * 3600);
        assert_eq!(east("+05"), -5 * 3600);
        assert_eq!(east("PST"), -8 * 3600);
        assert_eq!(east("cest"), 2 * 3600);
        assert_eq!(east("NST"), -(3 * 3600 + 1800));
        assert_eq!(east("europe/paris"), 3600);
        assert!(SessionZone::named("nowhere").is_none());
    }

    #[test]
    fn intervals_add_on_the_wall_clock() {
        // Verified on PostgreSQL 18 with TimeZone Europe/Berlin: timestamptz
        // '2024-03-31 00:30+00' + '1 day' is 2024-04-01 01:30+02 (23 hours later),
        // + '24 hours' 02:30+02, + '1 day 1 hour' 02:30+02; '2024-01-31 12:00+01' +
        // '1 month' is 2024-02-29 12:00+01.
        let berlin = SessionZone::parse("Europe/Berlin").unwrap();
        let utc = |y, m, d, h: i64, mi: i64| {
            days_from_civil(y, m, d) * USECS_PER_DAY + (h * 60 + mi) * 60_000_000
        };
        let start = utc(2024, 3, 31, 0, 30);
        let hour = 3_600_000_000;
        assert_eq!(
            berlin.add_interval(start, 0, 1, 0),
            Some(utc(2024, 3, 31, 23, 30))
        );
        assert_eq!(
            berlin.add_interval(start, 0, 0, 24 * hour),
            Some(utc(2024, 4, 1, 0, 30))
        );
        assert_eq!(
            berlin.add_interval(start, 0, 1, hour),
            Some(utc(2024, 4, 1, 0, 30))
        );
        assert_eq!(
            berlin.add_interval(utc(2024, 1, 31, 11, 0), 1, 0, 0),
            Some(utc(2024, 2, 29, 11, 0))
        );
        assert_eq!(
            SessionZone::utc().add_interval(utc(2023, 3, 31, 0, 0), -1, 0, 0),
            Some(utc(2023, 2, 28, 0, 0))
        );
        assert_eq!(
            berlin.add_interval(TS_POS_INFINITY, 0, 1, 0),
            Some(TS_POS_INFINITY)
        );
        assert_eq!(SessionZone::utc().add_interval(0, i32::MAX, 0, 0), None);
    }

    #[test]
    fn ages_subtract_field_by_field() {
        // Verified on PostgreSQL 18: age(a, b) of these timestamps.
        let at = |y, m, d, micros: i64| days_from_civil(y, m, d) * USECS_PER_DAY + micros;
        let hour = 3_600_000_000;
        let cases = [
            (
                at(2024, 3, 31, 10 * hour),
                at(2024, 1, 31, 12 * hour),
                (1, 30, 22 * hour),
            ),
            (at(2024, 1, 31, 0), at(2024, 3, 1, 0), (-1, -1, 0)),
            (at(2001, 4, 10, 0), at(1957, 6, 13, 0), (43 * 12 + 9, 27, 0)),
            (at(2024, 3, 1, 0), at(2023, 2, 28, 0), (12, 1, 0)),
            (
                at(2024, 3, 1, 0),
                at(2024, 2, 29, 24 * hour - 500_000),
                (0, 0, 500_000),
            ),
        ];
        for (a, b, want) in cases {
            assert_eq!(calendar_difference(a, b), Some(want));
        }
        assert_eq!(calendar_difference(TS_POS_INFINITY, 0), None);
    }

    #[test]
    fn intervals_scale_and_cascade_down() {
        // Verified on PostgreSQL 18.
        let minute = 60_000_000;
        let hour = 60 * minute;
        let cases = [
            ((0, 0, minute), 3.0, false, (0, 0, 3 * minute)),
            ((1, 0, 0), 1.5, false, (1, 15, 0)),
            ((1, 1, 0), 0.3, false, (0, 9, 7 * hour + 12 * minute)),
            ((12, 1, hour), 2.5, false, (30, 2, 14 * hour + 30 * minute)),
            ((-1, 0, 0), 0.5, false, (0, -15, 0)),
            ((0, 0, hour), 4.0, true, (0, 0, 15 * minute)),
            ((0, 1, 0), 7.0, true, (0, 0, 12_342_857_143)),
            ((1, 0, 0), 3.0, true, (0, 10, 0)),
        ];
        for (interval, factor, divide, want) in cases {
            assert_eq!(
                scale_interval(interval, factor, divide),
                Some(want),
                "{interval:?} {factor}"
            );
        }
        assert_eq!(scale_interval((i32::MAX, 0, 0), 2.0, false), None);
    }

    #[test]
    fn daylight_saving_transitions_take_the_later_instant() {
        // Verified on PostgreSQL 18 with TimeZone Europe/Berlin:
        // '2024-10-27 02:30'::timestamptz → 2024-10-27 02:30:00+01 (repeated hour)
        // '2024-03-31 02:30'::timestamptz → 2024-03-31 03:30:00+02 (skipped hour)
        let berlin = SessionZone::parse("Europe/Berlin").unwrap();
        let local = |y, m, d, h: i64, mi: i64| {
            days_from_civil(y, m, d) * USECS_PER_DAY + (h * 60 + mi) * 60_000_000
        };
        let utc = berlin.local_to_utc(local(2024, 10, 27, 2, 30));
        assert_eq!(utc, local(2024, 10, 27, 1, 30));
        let utc = berlin.local_to_utc(local(2024, 3, 31, 2, 30));
        assert_eq!(utc, local(2024, 3, 31, 1, 30));
        assert_eq!(berlin.offset_at_utc(utc), 7200);
        assert_eq!(
            berlin.local_to_utc(local(2024, 7, 1, 12, 0)),
            local(2024, 7, 1, 10, 0)
        );
    }
}
