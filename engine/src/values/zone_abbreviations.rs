//! Time zone abbreviations `AT TIME ZONE` and `timezone(zone, …)` accept before zone
//! names, each a fixed offset as in PostgreSQL's default abbreviation set (offsets checked
//! against PostgreSQL 18's `pg_timezone_abbrevs`). `CEST` is always +02, whatever the
//! date. A subset: the abbreviations of North America, Europe, Australia and the largest
//! zones elsewhere.

/// (abbreviation, hours and minutes east of UTC).
const ABBREVIATIONS: &[(&str, i32, i32)] = &[
    ("ACDT", 10, 30),
    ("ACST", 9, 30),
    ("ADT", -3, 0),
    ("AEDT", 11, 0),
    ("AEST", 10, 0),
    ("AKDT", -8, 0),
    ("AKST", -9, 0),
    ("AST", -4, 0),
    ("AWST", 8, 0),
    ("BST", 1, 0),
    ("CDT", -5, 0),
    ("CEST", 2, 0),
    ("CET", 1, 0),
    ("CST", -6, 0),
    ("EAT", 3, 0),
    ("EDT", -4, 0),
    ("EEST", 3, 0),
    ("EET", 2, 0),
    ("EST", -5, 0),
    ("GMT", 0, 0),
    ("HKT", 8, 0),
    ("HST", -10, 0),
    ("IST", 2, 0),
    ("JST", 9, 0),
    ("KST", 9, 0),
    ("MDT", -6, 0),
    ("MEST", 2, 0),
    ("MET", 1, 0),
    ("MSK", 3, 0),
    ("MST", -7, 0),
    ("NDT", -2, -30),
    ("NST", -3, -30),
    ("NZDT", 13, 0),
    ("NZST", 12, 0),
    ("PDT", -7, 0),
    ("PKT", 5, 0),
    ("PST", -8, 0),
    ("SAST", 2, 0),
    ("SGT", 8, 0),
    ("UT", 0, 0),
    ("UTC", 0, 0),
    ("WAT", 1, 0),
    ("WET", 0, 0),
    ("Z", 0, 0),
    ("ZULU", 0, 0),
];

/// Seconds east of UTC of the abbreviation `text` (any case), if it is one.
pub(crate) fn offset_east(text: &str) -> Option<i32> {
    ABBREVIATIONS
        .iter()
        .find(|(name, ..)| name.eq_ignore_ascii_case(text))
        .map(|&(_, hours, minutes)| hours * 3600 + minutes * 60)
}
