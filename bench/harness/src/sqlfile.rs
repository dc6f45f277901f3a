//! The experiments' SQL lives in `sql/experiments/<name>.sql`, plain psql scripts a user can
//! run by hand. The harness compiles them in and reads them the way psql would, with two
//! differences: it picks the sections it needs (a line `-- @name` starts section `name` and
//! runs until the next such line), and it skips psql meta-commands (lines starting with `\`),
//! filling in the variables itself. `:name` becomes the value as is and `:'name'` a quoted
//! literal, as in psql. So the harness and a user running the file never see different SQL.

use std::collections::BTreeMap;

/// One experiment script, split into named sections.
pub struct SqlFile {
    pub name: &'static str,
    sections: BTreeMap<String, String>,
}

/// The scripts, compiled into the binary.
const SCRIPTS: [(&str, &str); 5] = [
    ("eic", include_str!("../../../sql/experiments/eic.sql")),
    (
        "advice",
        include_str!("../../../sql/experiments/advice.sql"),
    ),
    (
        "analyze",
        include_str!("../../../sql/experiments/analyze.sql"),
    ),
    ("aio", include_str!("../../../sql/experiments/aio.sql")),
    (
        "recovery",
        include_str!("../../../sql/experiments/recovery.sql"),
    ),
];

pub fn script(name: &str) -> SqlFile {
    let (name, text) = SCRIPTS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no script sql/experiments/{name}.sql"));
    SqlFile {
        name,
        sections: parse(text),
    }
}

fn parse(text: &str) -> BTreeMap<String, String> {
    let mut sections = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("-- @") {
            if let Some((name, body)) = current.take() {
                sections.insert(name, body);
            }
            let name = rest.split_whitespace().next().unwrap_or_default();
            current = Some((name.to_string(), String::new()));
        } else if let Some((_, body)) = current.as_mut() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('\\') || trimmed.starts_with("--") || trimmed.is_empty() {
                continue;
            }
            body.push_str(line);
            body.push('\n');
        }
    }
    if let Some((name, body)) = current {
        sections.insert(name, body);
    }
    sections
}

impl SqlFile {
    /// The statements of section `section` with the variables filled in, one per `;`.
    pub fn statements(&self, section: &str, vars: &[(&str, String)]) -> Vec<String> {
        let body = self.sections.get(section).unwrap_or_else(|| {
            panic!(
                "sql/experiments/{}.sql has no section '-- @{section}'",
                self.name
            )
        });
        body.split(';')
            .map(|s| substitute(s.trim(), vars))
            .filter(|s| !s.is_empty())
            .collect()
    }
}

/// psql's variable interpolation: `:name` → value, `:'name'` → 'value' (quotes doubled).
/// Longer names are tried first, so `:first` is not read as a variable `:f` plus "irst".
fn substitute(sql: &str, vars: &[(&str, String)]) -> String {
    let mut vars: Vec<&(&str, String)> = vars.iter().collect();
    vars.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut out = sql.to_string();
    for (name, value) in vars {
        out = out.replace(
            &format!(":'{name}'"),
            &format!("'{}'", value.replace('\'', "''")),
        );
        out = replace_word(&out, &format!(":{name}"), value);
    }
    assert!(!out.contains(":'"), "unfilled psql variable in: {out}");
    out
}

/// Replaces `pattern` where it is not followed by an identifier character (and not a `::` cast).
fn replace_word(text: &str, pattern: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(pattern) {
        let after = &rest[at + pattern.len()..];
        let is_cast = at > 0 && rest[..at].ends_with(':');
        let continues = after
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if is_cast || continues { pattern } else { value });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_and_variables() {
        let file = SqlFile {
            name: "t",
            sections: parse(
                "\\set x 1\n-- @run\nSET a = :eic;\n\\if :{?load}\nSELECT 'x'::text WHERE :pred AND b = :'policy';\n-- @other\nSELECT 1;\n",
            ),
        };
        let vars = [
            ("eic", "16".to_string()),
            ("pred", "a < 5".into()),
            ("policy", "pg'17".into()),
        ];
        assert_eq!(
            file.statements("run", &vars),
            vec![
                "SET a = 16",
                "SELECT 'x'::text WHERE a < 5 AND b = 'pg''17'"
            ]
        );
        assert_eq!(file.statements("other", &[]), vec!["SELECT 1"]);
    }

    #[test]
    fn every_script_parses() {
        for name in ["eic", "advice", "analyze", "aio", "recovery"] {
            assert!(!script(name)
                .statements(
                    "run",
                    &[
                        ("eic", "0".into()),
                        ("predicate", "a < 5".into()),
                        ("policy", "pg18".into()),
                        ("mic", "0".into()),
                    ]
                )
                .is_empty());
        }
    }
}
