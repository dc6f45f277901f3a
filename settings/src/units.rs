//! Numbers with units: reading `'16MB'`, `'1.5s'`, `'0x10'` and writing `128MB`, `1500ms`, `1.1`
//! exactly as PostgreSQL 18 reads and writes them.
//!
//! A numeric setting is stored in its *base unit* (`work_mem` in kB, `shared_buffers` in 8 kB
//! blocks, `statement_timeout` in ms). Input is read like C's `strtol(…, 0)` (so `0x10` is 16
//! and `010` is 8), falling back to `strtod` when a `.` or exponent follows or the integer
//! overflows; then optional white space and a unit of at most three characters, matched with
//! case (`MB`, not `mb`). A value with a unit is converted to the base unit; a fractional
//! value is first rounded to a whole number of the next smaller unit (`1.0001GB` → 1024 MB),
//! then integers are rounded half-to-even (`rint`: 0.5 → 0, 1.5 → 2).
//!
//! Output uses the largest unit that divides the value exactly (`16384` blocks → `128MB`,
//! `1500` ms → `1500ms`); zero and negative values are printed bare (`0`, `-1`). Reals print
//! with C's `%g` (six significant digits) and, if they have a unit, the largest unit that
//! gives a whole number, else the smallest (`1.5` ms → `1500us`).

/// The base unit a numeric setting is stored in (`pg_settings.unit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    NoUnit,
    Bytes,
    Kilobytes,
    Megabytes,
    /// 8 kB pages (`shared_buffers`, `io_combine_limit`).
    Blocks,
    Milliseconds,
    Seconds,
    Minutes,
}

/// Memory units, largest first, with their size in bytes.
const MEMORY_UNITS: [(&str, f64); 5] = [
    ("TB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("GB", 1024.0 * 1024.0 * 1024.0),
    ("MB", 1024.0 * 1024.0),
    ("kB", 1024.0),
    ("B", 1.0),
];

/// Time units, largest first, with their length in microseconds.
const TIME_UNITS: [(&str, f64); 6] = [
    ("d", 86_400_000_000.0),
    ("h", 3_600_000_000.0),
    ("min", 60_000_000.0),
    ("s", 1_000_000.0),
    ("ms", 1_000.0),
    ("us", 1.0),
];

/// The page size behind the `8kB` unit.
pub const BLOCK_SIZE_BYTES: f64 = 8192.0;

pub(crate) const MEMORY_UNITS_HINT: &str =
    "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".";
pub(crate) const TIME_UNITS_HINT: &str =
    "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".";
pub(crate) const INTEGER_RANGE_HINT: &str = "Value exceeds integer range.";

impl Unit {
    /// The spelling in `pg_settings.unit` and in range errors.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Unit::NoUnit => None,
            Unit::Bytes => Some("B"),
            Unit::Kilobytes => Some("kB"),
            Unit::Megabytes => Some("MB"),
            Unit::Blocks => Some("8kB"),
            Unit::Milliseconds => Some("ms"),
            Unit::Seconds => Some("s"),
            Unit::Minutes => Some("min"),
        }
    }

    /// The conversion table this unit belongs to, and its own size in that table's measure.
    fn family(self) -> Option<(&'static [(&'static str, f64)], f64)> {
        match self {
            Unit::NoUnit => None,
            Unit::Bytes => Some((&MEMORY_UNITS, 1.0)),
            Unit::Kilobytes => Some((&MEMORY_UNITS, 1024.0)),
            Unit::Megabytes => Some((&MEMORY_UNITS, 1024.0 * 1024.0)),
            Unit::Blocks => Some((&MEMORY_UNITS, BLOCK_SIZE_BYTES)),
            Unit::Milliseconds => Some((&TIME_UNITS, 1_000.0)),
            Unit::Seconds => Some((&TIME_UNITS, 1_000_000.0)),
            Unit::Minutes => Some((&TIME_UNITS, 60_000_000.0)),
        }
    }

    /// The hint PostgreSQL gives when the unit of an input is not understood.
    pub(crate) fn units_hint(self) -> Option<&'static str> {
        match self.family() {
            Some((table, _)) if table.len() == MEMORY_UNITS.len() => Some(MEMORY_UNITS_HINT),
            Some(_) => Some(TIME_UNITS_HINT),
            None => None,
        }
    }

    /// `" kB"` for range messages, or nothing for unit-less settings.
    pub(crate) fn spaced_name(self) -> String {
        self.name()
            .map(|name| format!(" {name}"))
            .unwrap_or_default()
    }
}

/// Why a numeric input was refused; the caller words the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// Not a number (no hint).
    Invalid,
    /// A number followed by something that is not a unit of this setting (hint: valid units).
    BadUnit,
    /// Does not fit in 32 bits once converted (hint: exceeds integer range).
    IntegerOverflow,
}

/// Reads an integer setting's input and returns it in the base unit, not yet range-checked.
pub(crate) fn parse_integer(text: &str, unit: Unit) -> Result<i32, NumberError> {
    let bytes = text.as_bytes();
    let long = c_strtol(bytes);
    let mut value = long.value as f64;
    let mut end = long.end;
    let fractional_follows = matches!(bytes.get(end), Some(b'.' | b'e' | b'E'));
    if long.overflow || fractional_follows {
        let double = c_strtod(bytes);
        if double.range_error {
            return Err(NumberError::Invalid);
        }
        value = double.value;
        end = double.end;
    }
    if end == 0 || value.is_nan() {
        return Err(NumberError::Invalid);
    }
    let rest = skip_c_space(&bytes[end..]);
    if !rest.is_empty() {
        if unit == Unit::NoUnit {
            return Err(NumberError::Invalid);
        }
        value = convert_to_base_unit(value, rest, unit).ok_or(NumberError::BadUnit)?;
    }
    let rounded = value.round_ties_even();
    if rounded > i32::MAX as f64 || rounded < i32::MIN as f64 {
        return Err(NumberError::IntegerOverflow);
    }
    Ok(rounded as i32)
}

/// Reads a real setting's input and returns it in the base unit, not yet range-checked.
pub(crate) fn parse_real(text: &str, unit: Unit) -> Result<f64, NumberError> {
    let bytes = text.as_bytes();
    let double = c_strtod(bytes);
    if double.end == 0 || double.range_error || double.value.is_nan() {
        return Err(NumberError::Invalid);
    }
    let rest = skip_c_space(&bytes[double.end..]);
    if rest.is_empty() {
        return Ok(double.value);
    }
    if unit == Unit::NoUnit {
        return Err(NumberError::Invalid);
    }
    convert_to_base_unit(double.value, rest, unit).ok_or(NumberError::BadUnit)
}

/// Converts `value` given in the unit spelled at the start of `unit_text` (at most three
/// characters, then only white space) into `base`. A fraction is rounded to a whole number
/// of the next smaller unit first, so `1.0001GB` means 1024 MB.
fn convert_to_base_unit(value: f64, unit_text: &[u8], base: Unit) -> Option<f64> {
    const LONGEST_UNIT: usize = 3;
    let unit_len = unit_text
        .iter()
        .take(LONGEST_UNIT)
        .take_while(|b| !is_c_space(**b))
        .count();
    let (unit, after) = unit_text.split_at(unit_len);
    if !skip_c_space(after).is_empty() {
        return None;
    }
    let (table, base_size) = base.family()?;
    let position = table.iter().position(|(name, _)| name.as_bytes() == unit)?;
    let multiplier = table[position].1 / base_size;
    let mut converted = value * multiplier;
    if let Some((_, next_smaller_size)) = table.get(position + 1) {
        let next_multiplier = next_smaller_size / base_size;
        converted = (converted / next_multiplier).round_ties_even() * next_multiplier;
    }
    Some(converted)
}

/// SHOW's text for an integer stored in `unit`.
pub(crate) fn show_integer(value: i32, unit: Unit) -> String {
    if let (true, Some((table, base_size))) = (value > 0, unit.family()) {
        for (name, size) in table {
            let multiplier = size / base_size;
            if multiplier <= 1.0 || i64::from(value) % (multiplier as i64) == 0 {
                let shown = (f64::from(value) / multiplier).round_ties_even() as i64;
                return format!("{shown}{name}");
            }
        }
    }
    value.to_string()
}

/// SHOW's text for a real stored in `unit`.
pub(crate) fn show_real(value: f64, unit: Unit) -> String {
    if let (true, Some((table, base_size))) = (value > 0.0, unit.family()) {
        let mut shown = (value, "");
        for (name, size) in table {
            let in_unit = value / (size / base_size);
            shown = (in_unit, name);
            if in_unit > 0.0 && (in_unit.round_ties_even() / in_unit - 1.0).abs() <= 1e-8 {
                break;
            }
        }
        return format!("{}{}", format_g(shown.0), shown.1);
    }
    format_g(value)
}

/// C's `printf("%g")`: six significant digits, exponent form below 1e-4 and from 1e6,
/// trailing zeros removed. PostgreSQL's own printf spells infinities `Infinity`.
pub(crate) fn format_g(value: f64) -> String {
    const SIGNIFICANT_DIGITS: i32 = 6;
    if value.is_nan() {
        return "NaN".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let scientific = format!("{:.*e}", (SIGNIFICANT_DIGITS - 1) as usize, value);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("{:e} always writes an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} writes a decimal exponent");
    if !(-4..SIGNIFICANT_DIGITS).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{}{:02}",
            strip_fraction_zeros(mantissa),
            sign,
            exponent.abs()
        )
    } else {
        let decimals = (SIGNIFICANT_DIGITS - 1 - exponent) as usize;
        strip_fraction_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

fn strip_fraction_zeros(number: &str) -> &str {
    if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    }
}

/// C's `isspace` in the "C" locale.
pub(crate) fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_c_space(bytes: &[u8]) -> &[u8] {
    let spaces = bytes.iter().take_while(|b| is_c_space(**b)).count();
    &bytes[spaces..]
}

/// What `strtol(text, &end, 0)` would report.
#[derive(Debug, PartialEq)]
pub(crate) struct ScannedLong {
    pub value: i64,
    /// Bytes consumed; 0 when no number was found (C's `end == text`).
    pub end: usize,
    /// The number did not fit in 64 bits (C's `errno == ERANGE`).
    pub overflow: bool,
}

/// C's `strtol` with base 0: optional white space and sign, then `0x` hexadecimal, `0` octal
/// or decimal digits.
pub(crate) fn c_strtol(bytes: &[u8]) -> ScannedLong {
    let mut at = bytes.len() - skip_c_space(bytes).len();
    let negative = match bytes.get(at) {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let radix = if bytes.get(at) == Some(&b'0')
        && matches!(bytes.get(at + 1), Some(b'x' | b'X'))
        && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
    {
        at += 2;
        16
    } else if bytes.get(at) == Some(&b'0') {
        8
    } else {
        10
    };
    let digits_start = at;
    let mut magnitude: u128 = 0;
    let mut overflow = false;
    while let Some(digit) = bytes.get(at).and_then(|b| (*b as char).to_digit(radix)) {
        magnitude = magnitude * u128::from(radix) + u128::from(digit);
        if magnitude > u128::from(u64::MAX) {
            overflow = true;
            magnitude = u128::from(u64::MAX);
        }
        at += 1;
    }
    if at == digits_start {
        return ScannedLong {
            value: 0,
            end: 0,
            overflow: false,
        };
    }
    let limit = if negative {
        i64::MAX as u128 + 1
    } else {
        i64::MAX as u128
    };
    if magnitude > limit {
        overflow = true;
    }
    let value = match (overflow, negative) {
        (true, true) => i64::MIN,
        (true, false) => i64::MAX,
        (false, true) => (magnitude as i128).wrapping_neg() as i64,
        (false, false) => magnitude as i64,
    };
    ScannedLong {
        value,
        end: at,
        overflow,
    }
}

/// What `strtod(text, &end)` would report.
#[derive(Debug, PartialEq)]
pub(crate) struct ScannedDouble {
    pub value: f64,
    /// Bytes consumed; 0 when no number was found.
    pub end: usize,
    /// Overflow to infinity or underflow below the normal range (C's `errno == ERANGE`).
    pub range_error: bool,
}

/// C's `strtod`: optional white space and sign, then `inf`/`infinity`/`nan`, a hexadecimal
/// integer (`0x1F`), or decimal digits with an optional fraction and exponent.
pub(crate) fn c_strtod(bytes: &[u8]) -> ScannedDouble {
    let none = ScannedDouble {
        value: 0.0,
        end: 0,
        range_error: false,
    };
    let start = bytes.len() - skip_c_space(bytes).len();
    let mut at = start;
    let negative = match bytes.get(at) {
        Some(b'-') => {
            at += 1;
            true
        }
        Some(b'+') => {
            at += 1;
            false
        }
        _ => false,
    };
    let sign = if negative { -1.0 } else { 1.0 };
    let rest = &bytes[at..];
    let starts_with_word = |word: &str| {
        rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    if starts_with_word("infinity") {
        return ScannedDouble {
            value: sign * f64::INFINITY,
            end: at + 8,
            range_error: false,
        };
    }
    if starts_with_word("inf") {
        return ScannedDouble {
            value: sign * f64::INFINITY,
            end: at + 3,
            range_error: false,
        };
    }
    if starts_with_word("nan") {
        return ScannedDouble {
            value: f64::NAN,
            end: at + 3,
            range_error: false,
        };
    }
    if rest.len() > 2
        && rest[0] == b'0'
        && matches!(rest[1], b'x' | b'X')
        && rest[2].is_ascii_hexdigit()
    {
        let digits = rest[2..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        let value = rest[2..2 + digits].iter().fold(0.0_f64, |acc, b| {
            acc * 16.0 + f64::from((*b as char).to_digit(16).unwrap_or(0))
        });
        let range_error = value.is_infinite();
        return ScannedDouble {
            value: sign * value,
            end: at + 2 + digits,
            range_error,
        };
    }
    let integer_digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut len = integer_digits;
    let mut fraction_digits = 0;
    if rest.get(len) == Some(&b'.') {
        fraction_digits = rest[len + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if integer_digits + fraction_digits > 0 {
            len += 1 + fraction_digits;
        }
    }
    if integer_digits + fraction_digits == 0 {
        return none;
    }
    if matches!(rest.get(len), Some(b'e' | b'E')) {
        let mut exponent_at = len + 1;
        if matches!(rest.get(exponent_at), Some(b'+' | b'-')) {
            exponent_at += 1;
        }
        let exponent_digits = rest[exponent_at.min(rest.len())..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if exponent_digits > 0 {
            len = exponent_at + exponent_digits;
        }
    }
    let literal = std::str::from_utf8(&rest[..len]).expect("ASCII digits are UTF-8");
    let magnitude: f64 = literal.parse().unwrap_or(0.0);
    let any_nonzero_digit = rest[..len]
        .iter()
        .take_while(|b| !matches!(b, b'e' | b'E'))
        .any(|b| matches!(b, b'1'..=b'9'));
    let range_error = magnitude.is_infinite()
        || (magnitude == 0.0 && any_nonzero_digit)
        || (magnitude != 0.0 && magnitude < f64::MIN_POSITIVE);
    ScannedDouble {
        value: sign * magnitude,
        end: at + len,
        range_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_follows_c_base_zero_rules() {
        assert_eq!(
            c_strtol(b"0x10"),
            ScannedLong {
                value: 16,
                end: 4,
                overflow: false
            }
        );
        assert_eq!(
            c_strtol(b"010"),
            ScannedLong {
                value: 8,
                end: 3,
                overflow: false
            }
        );
        assert_eq!(
            c_strtol(b"08"),
            ScannedLong {
                value: 0,
                end: 1,
                overflow: false
            }
        );
        assert_eq!(
            c_strtol(b"0x"),
            ScannedLong {
                value: 0,
                end: 1,
                overflow: false
            }
        );
        assert_eq!(
            c_strtol(b"  -42kB"),
            ScannedLong {
                value: -42,
                end: 5,
                overflow: false
            }
        );
        assert_eq!(c_strtol(b"abc").end, 0);
        assert_eq!(c_strtol(b"").end, 0);
        assert!(c_strtol(b"99999999999999999999").overflow);
        assert_eq!(c_strtol(b"-9223372036854775808").value, i64::MIN);
        assert!(!c_strtol(b"-9223372036854775808").overflow);
    }

    #[test]
    fn strtod_follows_c_rules() {
        assert_eq!(c_strtod(b"1.5MB").value, 1.5);
        assert_eq!(c_strtod(b"1.5MB").end, 3);
        assert_eq!(c_strtod(b".5").value, 0.5);
        assert_eq!(c_strtod(b"1.").end, 2);
        assert_eq!(c_strtod(b"1e3").value, 1000.0);
        assert_eq!(c_strtod(b"1e").end, 1);
        assert_eq!(c_strtod(b"1e+").end, 1);
        assert_eq!(c_strtod(b".").end, 0);
        assert_eq!(c_strtod(b"-inf").value, f64::NEG_INFINITY);
        assert_eq!(c_strtod(b"Infinity").end, 8);
        assert!(c_strtod(b"nan").value.is_nan());
        assert!(c_strtod(b"1e400").range_error);
        assert!(c_strtod(b"1e-400").range_error);
        assert!(!c_strtod(b"0e-400").range_error);
        assert_eq!(c_strtod(b"0x1F").value, 31.0);
    }

    #[test]
    fn format_g_matches_printf() {
        let cases = [
            (1.1, "1.1"),
            (4.0, "4"),
            (0.0025, "0.0025"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e-7, "1e-07"),
            (1.23456789, "1.23457"),
            (123456789.0, "1.23457e+08"),
            (999999.0, "999999"),
            (1000000.0, "1e+06"),
            (f64::MAX, "1.79769e+308"),
            (-1.0, "-1"),
            (1000.0, "1000"),
            (1234.5678, "1234.57"),
            (f64::INFINITY, "Infinity"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_g(value), expected, "{value}");
        }
    }

    #[test]
    fn integers_parse_like_postgres() {
        let kb = Unit::Kilobytes;
        assert_eq!(parse_integer("1.5MB", kb), Ok(1536));
        assert_eq!(parse_integer("1024 kB", kb), Ok(1024));
        assert_eq!(parse_integer(" 100 ", kb), Ok(100));
        assert_eq!(parse_integer("+100", kb), Ok(100));
        assert_eq!(parse_integer("1.0001GB", kb), Ok(1048576));
        assert_eq!(parse_integer("65537.7B", kb), Ok(64));
        assert_eq!(parse_integer("1mb", kb), Err(NumberError::BadUnit));
        assert_eq!(parse_integer("10MBx", kb), Err(NumberError::BadUnit));
        assert_eq!(parse_integer("08", kb), Err(NumberError::BadUnit));
        assert_eq!(
            parse_integer("100TB", kb),
            Err(NumberError::IntegerOverflow)
        );
        assert_eq!(
            parse_integer("1e100", kb),
            Err(NumberError::IntegerOverflow)
        );
        assert_eq!(parse_integer("1e400", kb), Err(NumberError::Invalid));
        assert_eq!(parse_integer("inf", kb), Err(NumberError::Invalid));
        assert_eq!(parse_integer("nan", kb), Err(NumberError::Invalid));
        assert_eq!(parse_integer("", kb), Err(NumberError::Invalid));
        assert_eq!(
            parse_integer("1ms", Unit::NoUnit),
            Err(NumberError::Invalid)
        );
        assert_eq!(parse_integer("1.5", Unit::NoUnit), Ok(2));
        assert_eq!(parse_integer("2.5", Unit::NoUnit), Ok(2));
        assert_eq!(parse_integer("0.5ms", Unit::Milliseconds), Ok(0));
        assert_eq!(parse_integer("1us", Unit::Milliseconds), Ok(0));
        assert_eq!(parse_integer("1e3", Unit::Milliseconds), Ok(1000));
        assert_eq!(parse_integer("12kB", Unit::Blocks), Ok(2));
        assert_eq!(parse_integer("4kB", Unit::Blocks), Ok(0));
        assert_eq!(
            parse_integer("1 hour", Unit::Milliseconds),
            Err(NumberError::BadUnit)
        );
        assert_eq!(
            parse_integer("3000000000", Unit::Milliseconds),
            Err(NumberError::IntegerOverflow)
        );
    }

    #[test]
    fn integers_show_like_postgres() {
        assert_eq!(show_integer(16384, Unit::Blocks), "128MB");
        assert_eq!(show_integer(16, Unit::Blocks), "128kB");
        assert_eq!(show_integer(2, Unit::Blocks), "16kB");
        assert_eq!(show_integer(131072, Unit::Blocks), "1GB");
        assert_eq!(show_integer(524288, Unit::Blocks), "4GB");
        assert_eq!(show_integer(4096, Unit::Kilobytes), "4MB");
        assert_eq!(show_integer(1025, Unit::Kilobytes), "1025kB");
        assert_eq!(show_integer(16777216, Unit::Bytes), "16MB");
        assert_eq!(show_integer(0, Unit::Milliseconds), "0");
        assert_eq!(show_integer(-1, Unit::Milliseconds), "-1");
        assert_eq!(show_integer(1500, Unit::Milliseconds), "1500ms");
        assert_eq!(show_integer(5_400_000, Unit::Milliseconds), "90min");
        assert_eq!(show_integer(86_400_000, Unit::Milliseconds), "1d");
        assert_eq!(show_integer(i32::MAX, Unit::Milliseconds), "2147483647ms");
        assert_eq!(show_integer(300, Unit::Seconds), "5min");
        assert_eq!(show_integer(3600, Unit::Seconds), "1h");
        assert_eq!(show_integer(16, Unit::NoUnit), "16");
    }

    #[test]
    fn reals_show_like_postgres() {
        let ms = Unit::Milliseconds;
        assert_eq!(show_real(0.0, ms), "0");
        assert_eq!(show_real(1.5, ms), "1500us");
        assert_eq!(show_real(0.5, ms), "500us");
        assert_eq!(show_real(100.0, ms), "100ms");
        assert_eq!(show_real(0.0001, ms), "0.1us");
        assert_eq!(show_real(2.0, ms), "2ms");
        assert_eq!(show_real(1.23456789, ms), "1234.57us");
        assert_eq!(show_real(1.1, Unit::NoUnit), "1.1");
        assert_eq!(parse_real("0.1s", ms), Ok(100.0));
        assert_eq!(parse_real("1 min", ms), Ok(60000.0));
        assert_eq!(parse_real("2ms", Unit::NoUnit), Err(NumberError::Invalid));
        assert_eq!(parse_real("nan", Unit::NoUnit), Err(NumberError::Invalid));
        assert_eq!(parse_real("inf", Unit::NoUnit), Ok(f64::INFINITY));
    }
}
