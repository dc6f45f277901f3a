//! Validation and canonical spelling of the string settings that are more than "any text":
//! `DateStyle`, `TimeZone`, `client_encoding`, `search_path`, `application_name`, the locale
//! settings and `debug_io_direct`; plus SQL identifier lists and quoting, which
//! `search_path` and `SET a, b` flattening share.
//!
//! Each check returns the value to store (which is what SHOW prints) or a [`CheckFailure`]
//! that the caller turns into PostgreSQL's `invalid value for parameter "…": "…"` error with
//! the failure's detail, hint and SQLSTATE.

use crate::error::sqlstate;
use crate::units::c_strtod;

/// Why a check refused a value. Without `message`, the error is PostgreSQL's generic
/// `invalid value for parameter "name": "value"`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CheckFailure {
    pub sqlstate: Option<&'static str>,
    pub message: Option<String>,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl CheckFailure {
    fn detail(detail: impl Into<String>) -> Self {
        CheckFailure {
            detail: Some(detail.into()),
            ..CheckFailure::default()
        }
    }

    fn plain() -> Self {
        CheckFailure::default()
    }
}

const LIST_SYNTAX_INVALID: &str = "List syntax is invalid.";

// ---------------------------------------------------------------------------------------
// SQL identifier lists
// ---------------------------------------------------------------------------------------

/// White space as PostgreSQL's SQL scanner knows it.
fn is_sql_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

/// The longest identifier PostgreSQL keeps (NAMEDATALEN - 1 bytes).
pub(crate) const MAX_IDENTIFIER_BYTES: usize = 63;

/// Cuts `text` to at most `max_bytes` bytes without splitting a character.
pub(crate) fn truncate_to_bytes(text: &mut String, max_bytes: usize) {
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
}

/// Splits `"$user", Public ,x` into `["$user", "public", "x"]`: items separated by
/// `separator`, white space around them ignored, unquoted items lower-cased, quoted items kept
/// (`""` inside quotes is one `"`), all truncated to 63 bytes. `None` when the syntax is
/// invalid (an empty item, an unterminated quote, two items without a separator). With
/// `downcase` false, unquoted items keep their case (PostgreSQL's `SplitGUCList`).
pub(crate) fn split_identifier_list(
    input: &str,
    separator: char,
    downcase: bool,
) -> Option<Vec<String>> {
    let mut items = Vec::new();
    let mut rest = input.trim_start_matches(is_sql_space);
    if rest.is_empty() {
        return Some(items);
    }
    loop {
        let mut item = String::new();
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut chars = quoted.char_indices().peekable();
            let mut closed_at = None;
            while let Some((at, c)) = chars.next() {
                if c == '"' {
                    if chars.peek().map(|(_, next)| *next) == Some('"') {
                        item.push('"');
                        chars.next();
                    } else {
                        closed_at = Some(at);
                        break;
                    }
                } else {
                    item.push(c);
                }
            }
            let closed_at = closed_at?;
            if item.is_empty() {
                return None;
            }
            rest = &quoted[closed_at + 1..];
        } else {
            let end = rest
                .find(|c: char| c == separator || is_sql_space(c))
                .unwrap_or(rest.len());
            if end == 0 {
                return None;
            }
            item = if downcase {
                rest[..end].to_ascii_lowercase()
            } else {
                rest[..end].to_string()
            };
            rest = &rest[end..];
        }
        truncate_to_bytes(&mut item, MAX_IDENTIFIER_BYTES);
        items.push(item);
        rest = rest.trim_start_matches(is_sql_space);
        if let Some(after) = rest.strip_prefix(separator) {
            rest = after.trim_start_matches(is_sql_space);
        } else if rest.is_empty() {
            return Some(items);
        } else {
            return None;
        }
    }
}

/// PostgreSQL 18's keywords that are not "unreserved": an identifier spelled like one of
/// these must be quoted (from `pg_get_keywords()` where `catcode <> 'U'`).
const NON_UNRESERVED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "json",
    "json_array",
    "json_arrayagg",
    "json_exists",
    "json_object",
    "json_objectagg",
    "json_query",
    "json_scalar",
    "json_serialize",
    "json_table",
    "json_value",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "merge_action",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// PostgreSQL's `quote_ident`: the identifier as is when it is lower-case letters, digits and
/// underscores (not starting with a digit) and not a keyword; otherwise in double quotes with
/// inner quotes doubled.
pub fn quote_identifier(identifier: &str) -> String {
    let mut chars = identifier.chars();
    let plain = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && NON_UNRESERVED_KEYWORDS.binary_search(&identifier).is_err();
    if plain {
        identifier.to_string()
    } else {
        format!("\"{}\"", identifier.replace('"', "\"\""))
    }
}

// ---------------------------------------------------------------------------------------
// DateStyle
// ---------------------------------------------------------------------------------------

/// How dates are written (first half of `DateStyle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOutputStyle {
    Iso,
    Sql,
    Postgres,
    German,
}

/// How ambiguous dates are read, and for SQL/Postgres styles written (second half).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateFieldOrder {
    Dmy,
    Mdy,
    Ymd,
}

/// A parsed `DateStyle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateStyle {
    pub output: DateOutputStyle,
    pub order: DateFieldOrder,
}

impl DateStyle {
    pub const DEFAULT: DateStyle = DateStyle {
        output: DateOutputStyle::Iso,
        order: DateFieldOrder::Mdy,
    };

    /// The canonical spelling SHOW prints: `ISO, MDY`.
    pub fn canonical(self) -> String {
        let output = match self.output {
            DateOutputStyle::Iso => "ISO",
            DateOutputStyle::Sql => "SQL",
            DateOutputStyle::Postgres => "Postgres",
            DateOutputStyle::German => "German",
        };
        let order = match self.order {
            DateFieldOrder::Dmy => "DMY",
            DateFieldOrder::Mdy => "MDY",
            DateFieldOrder::Ymd => "YMD",
        };
        format!("{output}, {order}")
    }

    /// Reads a stored (canonical) value; anything unreadable is the default.
    pub fn from_canonical(text: &str) -> DateStyle {
        check_date_style(text, DateStyle::DEFAULT).unwrap_or(DateStyle::DEFAULT)
    }
}

/// Reads a `DateStyle` input: a list of key words naming the output style (`ISO`, `SQL`,
/// `Postgres`, `German`) and/or the field order (`DMY`/`Euro`/`European`,
/// `MDY`/`US`/`NonEuro`/`NonEuropean`, `YMD`), or `Default`. Parts not named keep their
/// `current` value; `German` alone also means DMY; `Default` fills only the parts not named.
pub(crate) fn check_date_style(input: &str, current: DateStyle) -> Result<DateStyle, CheckFailure> {
    let words = split_identifier_list(input, ',', true)
        .ok_or_else(|| CheckFailure::detail(LIST_SYNTAX_INVALID))?;
    let mut output = current.output;
    let mut order = current.order;
    let (mut have_output, mut have_order, mut conflict) = (false, false, false);
    for word in &words {
        let mut set_output = |style: DateOutputStyle| {
            conflict |= have_output && output != style;
            output = style;
            have_output = true;
        };
        match word.to_ascii_lowercase().as_str() {
            "iso" => set_output(DateOutputStyle::Iso),
            "sql" => set_output(DateOutputStyle::Sql),
            "postgres" => set_output(DateOutputStyle::Postgres),
            "german" => {
                set_output(DateOutputStyle::German);
                if !have_order {
                    order = DateFieldOrder::Dmy;
                }
            }
            "default" => {
                if !have_output {
                    output = DateStyle::DEFAULT.output;
                }
                if !have_order {
                    order = DateStyle::DEFAULT.order;
                }
            }
            other => {
                let named_order = match other {
                    "ymd" => DateFieldOrder::Ymd,
                    "dmy" | "euro" | "european" => DateFieldOrder::Dmy,
                    "mdy" | "us" | "noneuro" | "noneuropean" => DateFieldOrder::Mdy,
                    _ => {
                        return Err(CheckFailure::detail(format!(
                            "Unrecognized key word: \"{word}\"."
                        )))
                    }
                };
                conflict |= have_order && order != named_order;
                order = named_order;
                have_order = true;
            }
        }
    }
    if conflict {
        return Err(CheckFailure::detail(
            "Conflicting \"DateStyle\" specifications.",
        ));
    }
    Ok(DateStyle { output, order })
}

// ---------------------------------------------------------------------------------------
// TimeZone
// ---------------------------------------------------------------------------------------

/// Names of UTC in the time zone database, as the database spells them (PostgreSQL shows
/// the database's spelling whatever case was typed).
const UTC_ZONE_NAMES: &[&str] = &[
    "UTC",
    "UCT",
    "GMT",
    "GMT0",
    "GMT+0",
    "GMT-0",
    "Greenwich",
    "Universal",
    "Zulu",
    "Etc/UTC",
    "Etc/UCT",
    "Etc/GMT",
    "Etc/GMT0",
    "Etc/GMT+0",
    "Etc/GMT-0",
    "Etc/Greenwich",
    "Etc/Universal",
    "Etc/Zulu",
];

/// PostgreSQL refuses offsets of a week or more.
const MAX_OFFSET_SECONDS: i64 = 7 * 24 * 3600;

const DAYLIGHT_RULES_HINT: &str = "iolab reads the time zone database's zones (such as \
    'Europe/Berlin' or 'EST5EDT') and fixed offsets; POSIX zones with daylight-saving rules \
    are not supported.";

/// Reads a `TimeZone` input and returns what SHOW will print. Accepted, as PostgreSQL accepts
/// and prints them:
/// * a number of hours east of Greenwich (`-5`, `5.5`): shown as `<-05>+05`, `<+05:30>-05:30`;
/// * a name of UTC (`utc` → `UTC`, `Etc/UTC`, `GMT`, …) or `Etc/GMT±N` (shown in the time
///   zone database's spelling);
/// * a zone of the time zone database in any case (`europe/berlin` → `Europe/Berlin`,
///   `est5edt` → `EST5EDT`);
/// * a POSIX-style fixed zone, `[NAME]offset` with the offset *west* of Greenwich
///   (`UTC+3` is three hours behind UTC; `+02:00` is two hours behind), shown upper-cased.
///
/// Refused: POSIX zones with daylight-saving rules (`CET-1CEST,M3.5.0,M10.5.0/3`), which
/// PostgreSQL follows and iolab does not.
pub(crate) fn check_time_zone(input: &str) -> Result<String, CheckFailure> {
    let scanned = c_strtod(input.as_bytes());
    if scanned.end > 0
        && scanned.end == input.len()
        && !scanned.range_error
        && scanned.value.is_finite()
    {
        let east_seconds = (scanned.value * 3600.0) as i64;
        if east_seconds.abs() >= MAX_OFFSET_SECONDS {
            return Err(CheckFailure::detail("UTC timezone offset is out of range."));
        }
        return Ok(numeric_zone_name(east_seconds));
    }
    if let Some(name) = UTC_ZONE_NAMES
        .iter()
        .find(|name| name.eq_ignore_ascii_case(input))
    {
        return Ok(name.to_string());
    }
    if let Some(name) = etc_gmt_zone(input) {
        return Ok(name);
    }
    if let Some(name) = tz_database_name(input) {
        return Ok(name.to_string());
    }
    match posix_fixed_zone(input) {
        Some(west_seconds) if west_seconds % 60 != 0 => Err(CheckFailure {
            message: Some(format!("time zone \"{input}\" appears to use leap seconds")),
            detail: Some("PostgreSQL does not support leap seconds.".to_string()),
            ..CheckFailure::default()
        }),
        Some(_) => Ok(input.to_ascii_uppercase()),
        // A zone PostgreSQL would follow gets a hint; plain nonsense gets PostgreSQL's bare
        // message.
        None if has_daylight_rule(input) => Err(CheckFailure {
            hint: Some(DAYLIGHT_RULES_HINT.to_string()),
            ..CheckFailure::default()
        }),
        None => Err(CheckFailure::plain()),
    }
}

/// The time zone database's spelling of the zone `input` names in any case
/// (`america/new_york` → `America/New_York`), if it has one.
pub fn tz_database_name(input: &str) -> Option<&'static str> {
    // Spelled as the database spells it: a hash lookup; else a scan of the ~600 names.
    if let Ok(zone) = input.parse::<chrono_tz::Tz>() {
        return Some(zone.name());
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| zone.name())
        .find(|name| name.eq_ignore_ascii_case(input))
}

/// A POSIX zone with a daylight-saving part (`CET-1CEST`, `CET-1CEST,M3.5.0,M10.5.0/3`).
fn has_daylight_rule(input: &str) -> bool {
    let name_len = input.bytes().take_while(u8::is_ascii_alphabetic).count();
    let after_name = &input[name_len..];
    let offset_len = after_name
        .bytes()
        .take_while(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b':'))
        .count();
    let daylight_part = &after_name[offset_len..];
    name_len >= 3
        && offset_len > 0
        && daylight_part
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
}

/// `Etc/GMT-3` (three hours *east*, in POSIX's inverted sign) in any case, for the offsets
/// the time zone database has: Etc/GMT-14 … Etc/GMT+12.
fn etc_gmt_zone(input: &str) -> Option<String> {
    let prefix = input.get(..7)?;
    if !prefix.eq_ignore_ascii_case("Etc/GMT") {
        return None;
    }
    let rest = &input[7..];
    let (sign, digits) = rest.split_at(rest.len().min(1));
    if !matches!(sign, "+" | "-")
        || digits.is_empty()
        || digits.len() > 2
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let hours: u32 = digits.parse().ok()?;
    let in_database = if sign == "-" {
        (1..=14).contains(&hours)
    } else {
        (1..=12).contains(&hours)
    };
    in_database.then(|| format!("Etc/GMT{sign}{hours}"))
}

/// How PostgreSQL names a zone given as a number of hours: `<+05:30>-05:30`.
fn numeric_zone_name(east_seconds: i64) -> String {
    let clock = |seconds: i64| {
        let seconds = seconds.abs();
        let (hours, minutes, secs) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
        match (minutes, secs) {
            (0, 0) => format!("{hours:02}"),
            (_, 0) => format!("{hours:02}:{minutes:02}"),
            _ => format!("{hours:02}:{minutes:02}:{secs:02}"),
        }
    };
    let (east_sign, west_sign) = if east_seconds >= 0 {
        ('+', '-')
    } else {
        ('-', '+')
    };
    format!(
        "<{east_sign}{}>{west_sign}{}",
        clock(east_seconds),
        clock(east_seconds)
    )
}

/// Reads `[NAME]offset`, NAME being letters or `<…>`, offset `[+-]h[h[h]][:mm[:ss]]` west of
/// Greenwich, nothing after it. Returns the offset in seconds west.
fn posix_fixed_zone(input: &str) -> Option<i64> {
    let offset = if let Some(quoted) = input.strip_prefix('<') {
        let close = quoted.find('>')?;
        let name = &quoted[..close];
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b':'))
        {
            return None;
        }
        &quoted[close + 1..]
    } else {
        input.trim_start_matches(|c: char| c.is_ascii_alphabetic())
    };
    let (sign, clock) = match offset.as_bytes().first()? {
        b'+' => (1, &offset[1..]),
        b'-' => (-1, &offset[1..]),
        _ => (1, offset),
    };
    let mut fields = clock.split(':');
    let mut seconds = 0_i64;
    for (position, scale) in [3600_i64, 60, 1].into_iter().enumerate() {
        let Some(field) = fields.next() else { break };
        let longest = if position == 0 { 3 } else { 2 };
        if field.is_empty() || field.len() > longest || !field.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let number: i64 = field.parse().ok()?;
        if position > 0 && number > 59 {
            return None;
        }
        seconds += number * scale;
    }
    if fields.next().is_some() || seconds >= MAX_OFFSET_SECONDS {
        return None;
    }
    Some(sign * seconds)
}

// ---------------------------------------------------------------------------------------
// client_encoding
// ---------------------------------------------------------------------------------------

/// PostgreSQL's encoding names and aliases, spelled as PostgreSQL compares them (lower case,
/// letters and digits only), with the canonical name each stands for.
const ENCODING_NAMES: &[(&str, &str)] = &[
    ("abc", "WIN1258"),
    ("alt", "WIN866"),
    ("big5", "BIG5"),
    ("euccn", "EUC_CN"),
    ("eucjis2004", "EUC_JIS_2004"),
    ("eucjp", "EUC_JP"),
    ("euckr", "EUC_KR"),
    ("euctw", "EUC_TW"),
    ("gb18030", "GB18030"),
    ("gbk", "GBK"),
    ("iso88591", "LATIN1"),
    ("iso885910", "LATIN6"),
    ("iso885913", "LATIN7"),
    ("iso885914", "LATIN8"),
    ("iso885915", "LATIN9"),
    ("iso885916", "LATIN10"),
    ("iso88592", "LATIN2"),
    ("iso88593", "LATIN3"),
    ("iso88594", "LATIN4"),
    ("iso88595", "ISO_8859_5"),
    ("iso88596", "ISO_8859_6"),
    ("iso88597", "ISO_8859_7"),
    ("iso88598", "ISO_8859_8"),
    ("iso88599", "LATIN5"),
    ("johab", "JOHAB"),
    ("koi8", "KOI8R"),
    ("koi8r", "KOI8R"),
    ("koi8u", "KOI8U"),
    ("latin1", "LATIN1"),
    ("latin10", "LATIN10"),
    ("latin2", "LATIN2"),
    ("latin3", "LATIN3"),
    ("latin4", "LATIN4"),
    ("latin5", "LATIN5"),
    ("latin6", "LATIN6"),
    ("latin7", "LATIN7"),
    ("latin8", "LATIN8"),
    ("latin9", "LATIN9"),
    ("mskanji", "SJIS"),
    ("muleinternal", "MULE_INTERNAL"),
    ("shiftjis", "SJIS"),
    ("shiftjis2004", "SHIFT_JIS_2004"),
    ("sjis", "SJIS"),
    ("sqlascii", "SQL_ASCII"),
    ("tcvn", "WIN1258"),
    ("tcvn5712", "WIN1258"),
    ("uhc", "UHC"),
    ("unicode", "UTF8"),
    ("utf8", "UTF8"),
    ("vscii", "WIN1258"),
    ("win", "WIN1251"),
    ("win1250", "WIN1250"),
    ("win1251", "WIN1251"),
    ("win1252", "WIN1252"),
    ("win1253", "WIN1253"),
    ("win1254", "WIN1254"),
    ("win1255", "WIN1255"),
    ("win1256", "WIN1256"),
    ("win1257", "WIN1257"),
    ("win1258", "WIN1258"),
    ("win866", "WIN866"),
    ("win874", "WIN874"),
    ("win932", "SJIS"),
    ("win936", "GBK"),
    ("win949", "UHC"),
    ("win950", "BIG5"),
    ("windows1250", "WIN1250"),
    ("windows1251", "WIN1251"),
    ("windows1252", "WIN1252"),
    ("windows1253", "WIN1253"),
    ("windows1254", "WIN1254"),
    ("windows1255", "WIN1255"),
    ("windows1256", "WIN1256"),
    ("windows1257", "WIN1257"),
    ("windows1258", "WIN1258"),
    ("windows866", "WIN866"),
    ("windows874", "WIN874"),
    ("windows932", "SJIS"),
    ("windows936", "GBK"),
    ("windows949", "UHC"),
    ("windows950", "BIG5"),
];

/// Reads a `client_encoding` input. iolab's server encoding is UTF8 and it converts nothing,
/// so it accepts UTF8 under any of its names (`utf8`, `UTF-8`, `Unicode`) and SQL_ASCII (bytes
/// pass through unchanged, as PostgreSQL does for SQL_ASCII clients); other encodings
/// PostgreSQL knows are refused with 0A000 and PostgreSQL's own "Conversion between … is not
/// supported." detail; unknown names with 22023.
pub(crate) fn check_client_encoding(input: &str) -> Result<&'static str, CheckFailure> {
    let cleaned: String = input
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let canonical = ENCODING_NAMES
        .iter()
        .find(|(alias, _)| *alias == cleaned)
        .map(|(_, canonical)| *canonical)
        .or_else(|| {
            ENCODING_NAMES
                .iter()
                .map(|(_, canonical)| *canonical)
                .find(|canonical| canonical.eq_ignore_ascii_case(input))
        })
        .ok_or_else(CheckFailure::plain)?;
    match canonical {
        "UTF8" | "SQL_ASCII" => Ok(canonical),
        other => Err(CheckFailure {
            sqlstate: Some(sqlstate::FEATURE_NOT_SUPPORTED),
            detail: Some(format!("Conversion between {other} and UTF8 is not supported.")),
            hint: Some("iolab accepts only the UTF8 client encoding (and SQL_ASCII, which converts nothing).".to_string()),
            ..CheckFailure::default()
        }),
    }
}

// ---------------------------------------------------------------------------------------
// Smaller checks
// ---------------------------------------------------------------------------------------

/// `search_path`: any list of identifiers, kept as written.
pub(crate) fn check_search_path(input: &str) -> Result<String, CheckFailure> {
    split_identifier_list(input, ',', true)
        .map(|_| input.to_string())
        .ok_or_else(|| CheckFailure::detail(LIST_SYNTAX_INVALID))
}

/// `application_name`: bytes outside printable ASCII become `\xNN`, then the name is cut to
/// 63 bytes (PostgreSQL also sends a NOTICE about the truncation; iolab truncates quietly).
pub(crate) fn clean_application_name(input: &str) -> String {
    let mut cleaned = String::with_capacity(input.len());
    for byte in input.bytes() {
        if (32..=126).contains(&byte) {
            cleaned.push(byte as char);
        } else {
            cleaned.push_str(&format!("\\x{byte:02x}"));
        }
    }
    truncate_to_bytes(&mut cleaned, MAX_IDENTIFIER_BYTES);
    cleaned
}

/// Locale names iolab can honour: its formatting is the C locale's.
pub(crate) fn check_locale(input: &str) -> Result<String, CheckFailure> {
    match input {
        "C" | "POSIX" | "C.UTF-8" | "C.utf8" => Ok(input.to_string()),
        // PostgreSQL's answer for a locale the machine lacks: no detail, no hint.
        _ => Err(CheckFailure::plain()),
    }
}

/// `debug_io_direct`: empty, or a list of `data`, `wal`, `wal_init`.
pub(crate) fn check_debug_io_direct(input: &str) -> Result<String, CheckFailure> {
    let items = split_identifier_list(input, ',', false)
        .ok_or_else(|| CheckFailure::detail(LIST_SYNTAX_INVALID))?;
    for item in &items {
        if !["data", "wal", "wal_init"]
            .iter()
            .any(|known| known.eq_ignore_ascii_case(item))
        {
            return Err(CheckFailure::detail(format!("Invalid option \"{item}\".")));
        }
    }
    Ok(input.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_list_is_sorted_for_binary_search() {
        assert!(NON_UNRESERVED_KEYWORDS
            .windows(2)
            .all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn identifier_lists_split_like_postgres() {
        let split = |s| split_identifier_list(s, ',', true);
        assert_eq!(
            split("\"$user\", public"),
            Some(vec!["$user".to_string(), "public".to_string()])
        );
        assert_eq!(
            split(" A ,\"B c\""),
            Some(vec!["a".to_string(), "B c".to_string()])
        );
        assert_eq!(split("\"a\"\"b\""), Some(vec!["a\"b".to_string()]));
        assert_eq!(split(""), Some(vec![]));
        assert_eq!(split("iso mdy"), None);
        assert_eq!(split("a,,b"), None);
        assert_eq!(split("a,"), None);
        assert_eq!(split("\"unterminated"), None);
    }

    #[test]
    fn identifiers_are_quoted_like_quote_ident() {
        assert_eq!(quote_identifier("public"), "public");
        assert_eq!(quote_identifier("_x1"), "_x1");
        assert_eq!(quote_identifier("$user"), "\"$user\"");
        assert_eq!(quote_identifier("a b"), "\"a b\"");
        assert_eq!(quote_identifier("user"), "\"user\"");
        assert_eq!(quote_identifier("A"), "\"A\"");
        assert_eq!(quote_identifier("ÿx"), "\"ÿx\"");
        assert_eq!(quote_identifier("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn numeric_time_zones_are_named_like_postgres() {
        assert_eq!(check_time_zone("-5").unwrap(), "<-05>+05");
        assert_eq!(check_time_zone("5.5").unwrap(), "<+05:30>-05:30");
        assert_eq!(check_time_zone("0").unwrap(), "<+00>-00");
        assert_eq!(check_time_zone("-12.75").unwrap(), "<-12:45>+12:45");
        assert_eq!(check_time_zone("1e1").unwrap(), "<+10>-10");
        assert_eq!(check_time_zone(" 5").unwrap(), "<+05>-05");
        assert_eq!(check_time_zone("0.001").unwrap(), "<+00:00:03>-00:00:03");
        assert_eq!(
            check_time_zone("168").unwrap_err().detail.as_deref(),
            Some("UTC timezone offset is out of range.")
        );
    }

    #[test]
    fn posix_time_zones_keep_their_spelling() {
        assert_eq!(check_time_zone("+02:00").unwrap(), "+02:00");
        assert_eq!(check_time_zone("utc+3").unwrap(), "UTC+3");
        assert_eq!(check_time_zone("<abc>3").unwrap(), "<ABC>3");
        assert_eq!(check_time_zone("+3:0").unwrap(), "+3:0");
        assert_eq!(check_time_zone("etc/utc").unwrap(), "Etc/UTC");
        assert_eq!(check_time_zone("etc/gmt-3").unwrap(), "Etc/GMT-3");
        assert!(check_time_zone("+02:30:15")
            .unwrap_err()
            .message
            .unwrap()
            .contains("leap seconds"));
        assert_eq!(check_time_zone("europe/berlin").unwrap(), "Europe/Berlin");
        assert_eq!(check_time_zone("est5edt").unwrap(), "EST5EDT");
        assert_eq!(check_time_zone("est").unwrap(), "EST");
        assert!(check_time_zone("Mars/Olympus").unwrap_err().hint.is_none());
        assert!(check_time_zone("CET-1CEST,M3.5.0,M10.5.0/3")
            .unwrap_err()
            .hint
            .is_some());
        assert!(check_time_zone("abc").is_err());
        assert!(check_time_zone("Z").is_err());
        assert!(check_time_zone("").is_err());
        assert!(check_time_zone(" UTC").is_err());
    }
}
