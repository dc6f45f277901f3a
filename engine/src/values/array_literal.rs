//! PostgreSQL's text form of a one-dimensional array, `{1,2,NULL,"a b","x\"y"}`, split
//! into its elements' texts (`array_in`'s first step; the element type's input function
//! reads each).
//!
//! Between the braces, elements are separated by commas. An element is either quoted —
//! `"…"`, where a backslash takes the next character as it is — or unquoted, with its
//! surrounding white space dropped and a backslash escaping the next character too; an
//! unquoted `NULL` (any case) is the null value, a quoted one the text `NULL`. `{}` is the
//! empty array. Nested braces (more dimensions) and dimension decorations (`[1:2]={…}`) are
//! refused.

use iolab_catalog::{sqlstate, PgError};

/// The elements of the array written `text` (`None`: NULL).
pub fn split_array_literal(text: &str) -> Result<Vec<Option<String>>, PgError> {
    let malformed = |detail: &str| {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{text}\""),
        )
        .with_detail(detail)
    };
    let Some(open) = text.trim().strip_prefix('{') else {
        return Err(malformed(
            "Array value must start with \"{\" or dimension information.",
        ));
    };
    let Some(inner) = open.strip_suffix('}') else {
        return Err(malformed("Unexpected end of input."));
    };
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut elements = Vec::new();
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut element = String::new();
        let mut quoted = false;
        if chars.next_if_eq(&'"').is_some() {
            quoted = true;
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => element.extend(chars.next()),
                    Some(c) => element.push(c),
                    None => return Err(malformed("Unexpected end of input.")),
                }
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
        } else {
            let mut trailing_space = 0;
            while let Some(&c) = chars.peek() {
                match c {
                    ',' => break,
                    '{' | '}' => {
                        return Err(PgError::new(
                            sqlstate::FEATURE_NOT_SUPPORTED,
                            "arrays of more than one dimension are not supported",
                        ))
                    }
                    '"' => return Err(malformed("Unexpected array element.")),
                    '\\' => {
                        chars.next();
                        element.extend(chars.next());
                        trailing_space = 0;
                        continue;
                    }
                    c if c.is_whitespace() => trailing_space += c.len_utf8(),
                    _ => trailing_space = 0,
                }
                element.push(c);
                chars.next();
            }
            element.truncate(element.len() - trailing_space);
            if element.is_empty() {
                return Err(malformed("Unexpected \",\" character."));
            }
        }
        let is_null = !quoted && element.eq_ignore_ascii_case("NULL");
        elements.push((!is_null).then_some(element));
        match chars.next() {
            Some(',') => continue,
            None => return Ok(elements),
            Some(_) => return Err(malformed("Unexpected array element.")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<Option<&'static str>> {
        split_array_literal(text)
            .unwrap()
            .into_iter()
            .map(|e| e.map(|s| &*s.leak()))
            .collect()
    }

    #[test]
    fn elements_quoted_unquoted_and_null() {
        assert_eq!(split("{1,2,3}"), [Some("1"), Some("2"), Some("3")]);
        assert_eq!(split(" { 1 , 2 } "), [Some("1"), Some("2")]);
        assert_eq!(split("{}"), Vec::<Option<&str>>::new());
        assert_eq!(
            split(r#"{a b,NULL,"NULL",null,"x\"y","c,d",e\,f}"#),
            [
                Some("a b"),
                None,
                Some("NULL"),
                None,
                Some("x\"y"),
                Some("c,d"),
                Some("e,f")
            ]
        );
    }

    #[test]
    fn malformed_and_multidimensional_literals_are_refused() {
        for bad in ["1,2", "{1,,2}", "{1,2", "{\"a}", "{a\"b\"}"] {
            let e = split_array_literal(bad).unwrap_err();
            assert_eq!(e.code, sqlstate::INVALID_TEXT_REPRESENTATION, "{bad}");
            assert_eq!(e.message, format!("malformed array literal: \"{bad}\""));
        }
        let e = split_array_literal("{{1,2},{3,4}}").unwrap_err();
        assert_eq!(e.code, sqlstate::FEATURE_NOT_SUPPORTED);
    }
}
