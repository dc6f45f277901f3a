//! Reading the client's messages, each checked as PostgreSQL's backend checks it before
//! pgwire decodes it.
//!
//! pgwire's decoders are lenient where PostgreSQL is strict (a string without its NUL
//! reads as empty, invalid UTF-8 as U+FFFD, a Bind that ends early or a Sync with a body
//! pass), and what they cannot decode ends the connection without a word. So
//! [`next_message`] takes each message whole out of the connection, as its length word
//! says, and checks it first:
//!
//! - **Framing.** A length word below 4, a body longer than PostgreSQL allows for the
//!   type (1 GiB − 2 bytes for Query, Parse, Bind, FunctionCall and CopyData, 10 000 for
//!   the rest, 65 535 for a SASL response; a start-up packet 4 to 10 000), or a stream
//!   that ends inside a message: PostgreSQL hangs up without replying, since the stream
//!   can no longer carry a reply anyone could find. These limits are also the bound on
//!   what one message can make the connection buffer.
//! - **The type.** A type PostgreSQL does not take in this phase is FATAL 08P01: an
//!   unknown one, a PasswordMessage after authentication, anything but a SASL response
//!   during it. During COPY FROM STDIN anything but CopyData, CopyDone, CopyFail, Flush
//!   and Sync is an ERROR and then FATAL, as the protocol has lost its synchronization.
//! - **The start-up packet** (FATAL): a protocol major version other than 3 (0A000), or
//!   parameters that do not end with the terminator (08P01).
//! - **The body** (ERROR; the session goes on, after the next Sync for a message of the
//!   extended protocol): every string ends with a NUL inside the message and is UTF-8
//!   (22021); every fixed field is there (`insufficient data left in message`); nothing
//!   follows the last field (`invalid message format`). While the session waits for a
//!   Sync, the bodies it skips are not checked, as in PostgreSQL.
//!
//! A FunctionCall (PostgreSQL's fast path) is refused with 42883, as for an unknown
//! function: iolab has no function callable by OID.

use std::io;

use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::utf8::check_utf8;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::messages::{PgWireFrontendMessage, ProtocolVersion};
use pgwire::tokio::server::PgWireMessageServerCodec;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::{Decoder, Framed};

/// PostgreSQL's `PQ_LARGE_MESSAGE_LIMIT`: the longest body of a Query, Parse, Bind,
/// FunctionCall or CopyData message.
const LARGE_MESSAGE: usize = 0x3fff_fffe;
/// PostgreSQL's `PQ_SMALL_MESSAGE_LIMIT`: the longest body of any other message.
const SMALL_MESSAGE: usize = 10_000;
/// PostgreSQL's `PG_MAX_AUTH_TOKEN_LENGTH`: the longest SASL response.
const AUTH_TOKEN: usize = 65_535;
/// PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`, and the shortest: the version word alone.
const STARTUP_PACKET: std::ops::RangeInclusive<usize> = 4..=10_000;
/// The version word of a CancelRequest (1234.5678), which is not a protocol version.
const CANCEL_REQUEST_CODE: u32 = (1234 << 16) | 5678;
/// Bytes read from the socket at a time, at least.
const READ_CHUNK: usize = 8192;

/// What the client sent next.
#[derive(Debug)]
pub enum Next {
    Message(PgWireFrontendMessage),
    /// A message refused with this ERROR; the session goes on. `extended`: a message of
    /// the extended protocol, after which the session skips messages until Sync; `sync`:
    /// a Sync, which still ends the extended protocol's implicit transaction (failed).
    Error {
        error: PgError,
        extended: bool,
        sync: bool,
    },
    /// A message that ends the session: these errors are sent, then the connection closes.
    Fatal(Vec<PgError>),
    /// The connection closed, or its bytes cannot be framed: hang up without a reply.
    HangUp,
}

/// Reads, checks and decodes the client's next message. A connection that fails to read
/// is one that ended.
pub async fn next_message<S, ST>(socket: &mut Framed<S, PgWireMessageServerCodec<ST>>) -> Next
where
    S: AsyncRead + Unpin + 'static,
{
    read_message(socket).await.unwrap_or(Next::HangUp)
}

async fn read_message<S, ST>(
    socket: &mut Framed<S, PgWireMessageServerCodec<ST>>,
) -> io::Result<Next>
where
    S: AsyncRead + Unpin + 'static,
{
    let state = socket.state();
    let starting = matches!(state, PgWireConnectionState::AwaitingStartup);
    // A start-up packet has no type byte; every later message has one.
    let header = if starting { 4 } else { 5 };
    if !fill(socket, header).await? {
        return Ok(Next::HangUp);
    }
    let buffered = socket.read_buffer();
    let tag = (!starting).then(|| buffered[0]);
    let length = i32::from_be_bytes(buffered[header - 4..header].try_into().unwrap());
    let Some(body_length) = usize::try_from(length).ok().and_then(|n| n.checked_sub(4)) else {
        return Ok(Next::HangUp);
    };
    let fits = match tag {
        None => STARTUP_PACKET.contains(&body_length),
        Some(tag) => match longest_body(tag, &state) {
            Ok(limit) => body_length <= limit,
            Err(refused) => return Ok(refused),
        },
    };
    if !fits || !fill(socket, header + body_length).await? {
        return Ok(Next::HangUp);
    }
    let mut frame = socket.read_buffer_mut().split_to(header + body_length);
    let body = &frame[header..];
    let checked = match tag {
        None => check_startup_packet(body),
        // Skipped until Sync, unchecked (a Sync itself is checked).
        Some(tag) if matches!(state, PgWireConnectionState::AwaitingSync) && tag != b'S' => Ok(()),
        Some(tag) => check_body(tag, body).map_err(|error| Next::Error {
            error,
            extended: matches!(tag, b'P' | b'B' | b'E' | b'D' | b'C' | b'H'),
            sync: tag == b'S',
        }),
    };
    if let Err(refused) = checked {
        return Ok(refused);
    }
    Ok(match socket.codec_mut().decode(&mut frame) {
        Ok(Some(message)) => Next::Message(message),
        // What pgwire cannot decode (the checks above let through only what PostgreSQL
        // takes, so this is a message iolab cannot serve): hang up, as pgwire would.
        Ok(None) | Err(_) => Next::HangUp,
    })
}

/// Reads until the connection's buffer holds `wanted` bytes; false if it closes first.
async fn fill<S, ST>(
    socket: &mut Framed<S, PgWireMessageServerCodec<ST>>,
    wanted: usize,
) -> io::Result<bool>
where
    S: AsyncRead + Unpin + 'static,
{
    while socket.read_buffer().len() < wanted {
        let mut buffer = std::mem::take(socket.read_buffer_mut());
        buffer.reserve((wanted - buffer.len()).clamp(READ_CHUNK, LARGE_MESSAGE));
        let read = socket.get_mut().read_buf(&mut buffer).await;
        *socket.read_buffer_mut() = buffer;
        if read? == 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The longest body a message of type `tag` may have in this phase of the connection, or
/// how PostgreSQL refuses the type.
fn longest_body(tag: u8, state: &PgWireConnectionState) -> Result<usize, Next> {
    let fatal =
        |message: String| Next::Fatal(vec![PgError::fatal(sqlstate::PROTOCOL_VIOLATION, message)]);
    match state {
        PgWireConnectionState::AuthenticationInProgress => match tag {
            b'p' => Ok(AUTH_TOKEN),
            _ => Err(fatal(format!(
                "expected SASL response, got message type {tag}"
            ))),
        },
        PgWireConnectionState::CopyInProgress(_) => match tag {
            b'd' => Ok(LARGE_MESSAGE),
            b'c' | b'f' | b'H' | b'S' => Ok(SMALL_MESSAGE),
            _ => Err(Next::Fatal(vec![
                PgError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    format!("unexpected message type 0x{tag:02X} during COPY from stdin"),
                ),
                PgError::fatal(
                    sqlstate::PROTOCOL_VIOLATION,
                    "terminating connection because protocol synchronization was lost",
                ),
            ])),
        },
        _ => match tag {
            b'Q' | b'P' | b'B' | b'F' | b'd' => Ok(LARGE_MESSAGE),
            b'E' | b'D' | b'C' | b'H' | b'S' | b'X' | b'c' | b'f' => Ok(SMALL_MESSAGE),
            _ => Err(fatal(format!("invalid frontend message type {tag}"))),
        },
    }
}

/// A start-up packet's protocol version and the layout of its parameters (a CancelRequest
/// is left to pgwire).
fn check_startup_packet(body: &[u8]) -> Result<(), Next> {
    let version = u32::from_be_bytes(body[..4].try_into().unwrap());
    if version == CANCEL_REQUEST_CODE {
        return Ok(());
    }
    let (major, minor) = (version >> 16, version & 0xffff);
    if major != 3 {
        let (newest_major, newest_minor) = ProtocolVersion::default().version_number();
        return Err(Next::Fatal(vec![PgError::fatal(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!(
                "unsupported frontend protocol {major}.{minor}: server supports 3.0 to {newest_major}.{newest_minor}"
            ),
        )]));
    }
    if !parameters_end_with_terminator(&body[4..]) {
        return Err(Next::Fatal(vec![PgError::fatal(
            sqlstate::PROTOCOL_VIOLATION,
            "invalid startup packet layout: expected terminator as last byte",
        )]));
    }
    Ok(())
}

/// Whether start-up parameters are name and value strings in pairs followed by one NUL,
/// the last byte.
fn parameters_end_with_terminator(parameters: &[u8]) -> bool {
    let mut at = 0;
    loop {
        match parameters.get(at) {
            None => return false,
            Some(0) => return at == parameters.len() - 1,
            Some(_) => {}
        }
        // A name, then its value.
        for _ in 0..2 {
            match parameters[at..].iter().position(|&b| b == 0) {
                Some(n) => at += n + 1,
                None => return false,
            }
            if at >= parameters.len() {
                return false;
            }
        }
    }
}

/// A message body's fields, as PostgreSQL reads them (`pq_getmsg*`).
fn check_body(tag: u8, body: &[u8]) -> Result<(), PgError> {
    let mut fields = Fields { rest: body };
    match tag {
        b'Q' => {
            fields.string()?;
        }
        b'P' => {
            fields.string()?;
            fields.string()?;
            let types = fields.int16()?;
            fields.skip(4 * types)?;
        }
        b'B' => {
            fields.string()?;
            fields.string()?;
            let formats = fields.int16()?;
            fields.skip(2 * formats)?;
            for _ in 0..fields.int16()? {
                let length = fields.int32()?;
                if length != -1 {
                    fields.skip(usize::try_from(length).map_err(|_| insufficient_data())?)?;
                }
            }
            let result_formats = fields.int16()?;
            fields.skip(2 * result_formats)?;
        }
        b'E' => {
            fields.string()?;
            fields.int32()?;
        }
        b'D' | b'C' => {
            fields.byte()?;
            fields.string()?;
        }
        b'F' => {
            let oid = fields.int32()? as u32;
            return Err(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function with OID {oid} does not exist"),
            ));
        }
        b'H' | b'S' => {}
        // Terminate, and COPY's messages (outside a COPY PostgreSQL ignores them unread).
        _ => return Ok(()),
    }
    fields.end()
}

fn insufficient_data() -> PgError {
    PgError::new(
        sqlstate::PROTOCOL_VIOLATION,
        "insufficient data left in message",
    )
}

/// The unread rest of a message body.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PgError> {
        if n > self.rest.len() {
            return Err(insufficient_data());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    fn skip(&mut self, n: usize) -> Result<(), PgError> {
        self.take(n).map(|_| ())
    }

    fn byte(&mut self) -> Result<u8, PgError> {
        match self.rest.split_first() {
            Some((&b, rest)) => {
                self.rest = rest;
                Ok(b)
            }
            None => Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "no data left in message",
            )),
        }
    }

    /// An unsigned 16-bit count, as PostgreSQL reads counts.
    fn int16(&mut self) -> Result<usize, PgError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
    }

    fn int32(&mut self) -> Result<i32, PgError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A NUL-terminated string, which must be UTF-8.
    fn string(&mut self) -> Result<(), PgError> {
        let Some(length) = self.rest.iter().position(|&b| b == 0) else {
            return Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "invalid string in message",
            ));
        };
        let text = self.take(length + 1)?;
        check_utf8(&text[..length])
    }

    fn end(&self) -> Result<(), PgError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "invalid message format",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cstrings(parts: &[&str]) -> Vec<u8> {
        parts
            .iter()
            .flat_map(|p| [p.as_bytes(), b"\0"].concat())
            .collect()
    }

    #[test]
    fn start_up_parameters_must_end_with_one_terminator() {
        let ok = parameters_end_with_terminator;
        assert!(ok(b"\0"));
        assert!(ok(&[cstrings(&["user", "postgres"]), vec![0]].concat()));
        assert!(ok(
            &[cstrings(&["user", "u", "database", ""]), vec![0]].concat()
        ));
        assert!(!ok(b""));
        assert!(!ok(&cstrings(&["user", "postgres"])));
        assert!(!ok(b"user\0\0"));
        assert!(!ok(b"user\0postgres"));
        assert!(!ok(&[cstrings(&["user", "postgres"]), vec![0, 0]].concat()));
    }

    #[test]
    fn bodies_are_read_field_by_field() {
        let message = |r: Result<(), PgError>| r.map_err(|e| e.message);
        assert_eq!(message(check_body(b'Q', b"SELECT 1\0")), Ok(()));
        assert_eq!(
            message(check_body(b'Q', b"SELECT 1")),
            Err("invalid string in message".into())
        );
        assert_eq!(
            message(check_body(b'Q', b"SELECT 1\0x")),
            Err("invalid message format".into())
        );
        assert_eq!(
            message(check_body(b'Q', b"SELECT '\xe2\x28\xa1'\0")),
            Err("invalid byte sequence for encoding \"UTF8\": 0xe2 0x28 0xa1".into())
        );
        // Parse: two strings, a count of types, the types.
        let parse = [cstrings(&["s", "SELECT $1"]), vec![0, 1, 0, 0, 0, 23]].concat();
        assert_eq!(message(check_body(b'P', &parse)), Ok(()));
        assert_eq!(
            message(check_body(b'P', &parse[..parse.len() - 1])),
            Err("insufficient data left in message".into())
        );
        // Bind: a NULL (-1) needs no bytes; another negative length is short data.
        let bind = |length: i32| {
            [
                cstrings(&["", ""]),
                vec![0, 0, 0, 1],
                length.to_be_bytes().to_vec(),
                vec![0, 0],
            ]
            .concat()
        };
        assert_eq!(message(check_body(b'B', &bind(-1))), Ok(()));
        assert_eq!(
            message(check_body(b'B', &bind(-2))),
            Err("insufficient data left in message".into())
        );
        assert_eq!(
            message(check_body(b'D', b"")),
            Err("no data left in message".into())
        );
        assert_eq!(message(check_body(b'S', b"")), Ok(()));
        assert_eq!(
            message(check_body(b'H', b"x")),
            Err("invalid message format".into())
        );
        assert_eq!(message(check_body(b'd', b"anything")), Ok(()));
    }
}
