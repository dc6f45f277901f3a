//! `ALTER SYSTEM SET name { TO | = } value [, …]`, `ALTER SYSTEM SET name TO DEFAULT`,
//! `ALTER SYSTEM RESET name`, `ALTER SYSTEM RESET ALL`: PostgreSQL's grammar, read here
//! (sqlparser does not know the statement). A value is a word, a string constant or a
//! signed number, as SET takes it; list items are joined with ", ".
//! `iolab_settings::auto_conf` checks the change and computes the file; [`run`] writes it.

use std::path::Path;

use iolab_catalog::store::write_durably;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_settings::auto_conf::{alter_system, AlterSystem, AUTO_CONF_FILE};
use parking_lot::Mutex;

use super::tokens::{tokenize, Tok, TokenParser};

/// One ALTER SYSTEM at a time reads and rewrites the file.
static FILE_WRITER: Mutex<()> = Mutex::new(());

/// Runs one ALTER SYSTEM: outside a transaction block, by a superuser, as PostgreSQL
/// requires. The file is written whole to a temporary file, synced and renamed over the
/// old one. The change applies at the next start, or to sessions at `pg_reload_conf()`.
pub fn run(
    data_dir: &Path,
    change: &AlterSystem,
    in_block: bool,
    is_superuser: bool,
) -> PgResult<()> {
    if in_block {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "ALTER SYSTEM cannot run inside a transaction block",
        ));
    }
    if !is_superuser {
        let message = match change {
            AlterSystem::Set { name, .. } | AlterSystem::Reset { name } => {
                format!("permission denied to set parameter \"{name}\"")
            }
            AlterSystem::ResetAll => "permission denied to perform ALTER SYSTEM RESET ALL".into(),
        };
        return Err(PgError::new(sqlstate::INSUFFICIENT_PRIVILEGE, message));
    }
    let _writer = FILE_WRITER.lock();
    let path = data_dir.join(AUTO_CONF_FILE);
    let failed = |action: &str, e: std::io::Error| {
        PgError::io(
            &format!("could not {action} file \"{}\"", path.display()),
            &e,
        )
    };
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(failed("read", e)),
    };
    let text = alter_system(current.as_deref(), change).map_err(crate::show::setting_error)?;
    write_durably(&path, text.as_bytes()).map_err(|e| failed("write", e))
}

/// Is `words` (the statement's first words, upper-cased) an ALTER SYSTEM?
pub fn is_alter_system(words: &[&str]) -> bool {
    matches!(words, ["ALTER", "SYSTEM", ..])
}

pub fn parse(text: &str, whole: &str, offset: usize) -> PgResult<AlterSystem> {
    let mut p = TokenParser::new(tokenize(text, usize::MAX)?, text, whole, offset);
    p.pos = 2; // ALTER SYSTEM
    let change = if p.is_word("reset") {
        p.pos += 1;
        if p.is_word("all") {
            p.pos += 1;
            AlterSystem::ResetAll
        } else {
            AlterSystem::Reset {
                name: setting_name(&mut p)?,
            }
        }
    } else if p.is_word("set") {
        p.pos += 1;
        let name = setting_name(&mut p)?;
        if p.is_word("to") || p.is_punct('=') {
            p.pos += 1;
        } else {
            return Err(p.syntax_error());
        }
        if p.is_word("default") {
            p.pos += 1;
            AlterSystem::Reset { name }
        } else {
            let mut items = vec![value(&mut p)?];
            while p.is_punct(',') {
                p.pos += 1;
                items.push(value(&mut p)?);
            }
            AlterSystem::Set {
                name,
                value: items.join(", "),
            }
        }
    } else {
        return Err(p.syntax_error());
    };
    if p.is_punct(';') {
        p.pos += 1;
    }
    if p.peek().is_some() {
        return Err(p.syntax_error());
    }
    Ok(change)
}

/// `name` or `prefix.name`.
fn setting_name(p: &mut TokenParser) -> PgResult<String> {
    let mut name = p.word()?;
    if p.is_punct('.') {
        p.pos += 1;
        name = format!("{name}.{}", p.word()?);
    }
    Ok(name)
}

fn value(p: &mut TokenParser) -> PgResult<String> {
    let sign = match p.peek() {
        Some(Tok::Punct(c @ ('-' | '+'))) => {
            let c = *c;
            p.pos += 1;
            Some(c)
        }
        _ => None,
    };
    let text = match (p.peek(), sign) {
        (Some(Tok::Number(n)), _) => n.clone(),
        (Some(Tok::Word { text, .. } | Tok::Str(text)), None) => text.clone(),
        _ => return Err(p.syntax_error()),
    };
    p.pos += 1;
    Ok(match sign {
        Some('-') => format!("-{text}"),
        _ => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> PgResult<AlterSystem> {
        parse(text, text, 0)
    }

    #[test]
    fn postgresql_forms() {
        let set = |name: &str, value: &str| AlterSystem::Set {
            name: name.into(),
            value: value.into(),
        };
        assert_eq!(
            parsed("ALTER SYSTEM SET work_mem = '8MB'").unwrap(),
            set("work_mem", "8MB")
        );
        assert_eq!(
            parsed("alter system set io_workers to 8;").unwrap(),
            set("io_workers", "8")
        );
        assert_eq!(
            parsed("ALTER SYSTEM SET random_page_cost = -1.5").unwrap(),
            set("random_page_cost", "-1.5")
        );
        assert_eq!(
            parsed("ALTER SYSTEM SET search_path = \"$user\", public").unwrap(),
            set("search_path", "$user, public")
        );
        assert_eq!(
            parsed("ALTER SYSTEM SET myext.knob = on").unwrap(),
            set("myext.knob", "on")
        );
        assert_eq!(
            parsed("ALTER SYSTEM SET work_mem TO DEFAULT").unwrap(),
            AlterSystem::Reset {
                name: "work_mem".into()
            }
        );
        assert_eq!(
            parsed("ALTER SYSTEM RESET Work_Mem").unwrap(),
            AlterSystem::Reset {
                name: "work_mem".into()
            }
        );
        assert_eq!(
            parsed("ALTER SYSTEM RESET ALL").unwrap(),
            AlterSystem::ResetAll
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        for (text, near, position) in [
            (
                "ALTER SYSTEM SET work_mem 8",
                "syntax error at or near \"8\"",
                27,
            ),
            (
                "ALTER SYSTEM SET work_mem =",
                "syntax error at end of input",
                28,
            ),
            (
                "ALTER SYSTEM UNSET x",
                "syntax error at or near \"UNSET\"",
                14,
            ),
            (
                "ALTER SYSTEM SET x = 1 2",
                "syntax error at or near \"2\"",
                24,
            ),
        ] {
            let e = parsed(text).unwrap_err();
            assert_eq!(
                (e.code, e.message.as_str(), e.position),
                ("42601", near, Some(position)),
                "{text}"
            );
        }
    }
}
