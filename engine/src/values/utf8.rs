//! Text from clients must be valid UTF-8 without NUL bytes (UTF8 is the only encoding
//! iolab takes); what is not is refused as PostgreSQL refuses it, naming the bytes of the
//! first bad character: 22021 `invalid byte sequence for encoding "UTF8": 0xe2 0x82 0x2c`.

use iolab_catalog::{sqlstate, PgError};

/// Checks UTF-8 and the absence of NUL bytes, which PostgreSQL text cannot hold.
pub fn check_utf8(bytes: &[u8]) -> Result<(), PgError> {
    match std::str::from_utf8(bytes) {
        Err(e) => Err(invalid_utf8(&bytes[e.valid_up_to()..])),
        Ok(_) => match bytes.iter().position(|&b| b == 0) {
            Some(p) => Err(invalid_utf8(&bytes[p..])),
            None => Ok(()),
        },
    }
}

/// The error for the bad character at the start of `bytes` (showing as many bytes as its
/// first byte announces).
pub fn invalid_utf8(bytes: &[u8]) -> PgError {
    let first = bytes.first().copied().unwrap_or(0);
    let len = match first {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bytes
        .iter()
        .take(len)
        .map(|b| format!("0x{b:02x}"))
        .collect();
    PgError::new(
        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            shown.join(" ")
        ),
    )
}
