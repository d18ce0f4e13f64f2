//! Writing values back as YAML: each scalar plain, quoted or as a literal block, whichever
//! reads back as the same text under YAML 1.1 and 1.2 alike.

use std::fmt::Write as _;

use yaml_serde::Value;

/// True for the characters YAML lets a file hold as they are (its `c-printable`, without the
/// line breaks, the tab and the byte-order mark, which are written as escapes).
pub(super) fn is_printable(c: char) -> bool {
    matches!(c as u32, 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
        && !matches!(c, '\u{feff}' | '\u{2028}' | '\u{2029}')
}

/// Whether `text` can be written without quotes and read back as the same text.
pub(super) fn is_plain_safe(text: &str, as_key: bool) -> bool {
    let Some(first) = text.chars().next() else {
        return false;
    };
    if !text.chars().all(is_printable)
        || "-?:,[]{}#&*!|>'\"%@`".contains(first)
        || text.starts_with(' ')
        || text.ends_with(' ')
        || text.contains(": ")
        || text.contains(" #")
        || text.ends_with(':')
        || (as_key && (text.len() > 1000 || text == "<<"))
    {
        return false;
    }
    if yaml11_reads_otherwise(text) {
        return false;
    }
    // The YAML reader itself is the judge of what a plain scalar means (`null`, `true`, `1e3`,
    // `0x1F` are not text).
    let probe = if as_key {
        format!("{text}: x\n")
    } else {
        format!("k: {text}\n")
    };
    match yaml_serde::from_str::<Value>(&probe) {
        Ok(Value::Mapping(mapping)) if mapping.len() == 1 => {
            let (key, value) = mapping
                .iter()
                .next()
                .map_or((&Value::Null, &Value::Null), |kv| kv);
            let read = if as_key { key } else { value };
            read.as_str() == Some(text)
        }
        _ => false,
    }
}

/// Whether a YAML 1.1 reader (PyYAML, many Ruby and Go tools, older editors) would read the plain
/// scalar `text` as something other than text, where the YAML 1.2 reader MindRune uses reads
/// text: the 1.1 booleans (`yes`, `no`, `on`, `off`, `y`, `n` in any of their spellings),
/// base-60 numbers (`1:30`), numbers with underscores (`1_000`), binary (`0b101`), octal
/// (`0755`), timestamps (`2026-11-20`) and the merge and value keys (`<<`, `=`). Those are
/// quoted, so every reader sees the text that was written.
pub(super) fn yaml11_reads_otherwise(text: &str) -> bool {
    const BOOLEANS: [&str; 22] = [
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
    ];
    if BOOLEANS.contains(&text) || text == "<<" || text == "=" {
        return true;
    }
    // A 1.1 timestamp: `YYYY-M-D`, alone or followed by a time (`T10:00`, ` 10:00`).
    let (day, time) = match text.find(['T', 't', ' ']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let parts: Vec<&str> = day.split('-').collect();
    let is_date = parts.len() == 3
        && parts[0].len() == 4
        && parts.iter().all(|part| {
            !part.is_empty() && part.len() <= 4 && part.bytes().all(|b| b.is_ascii_digit())
        })
        && parts[1].len() <= 2
        && parts[2].len() <= 2
        && time.is_none_or(|time| time.starts_with(|c: char| c.is_ascii_digit()));
    if is_date {
        return true;
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let digits_and = |extra: &str| {
        !unsigned.is_empty()
            && unsigned.starts_with(|c: char| c.is_ascii_digit())
            && unsigned
                .chars()
                .all(|c| c.is_ascii_digit() || extra.contains(c))
    };
    // 1_000, 1:30:00, 1_0.5, 190:20:30.15, 0755.
    (digits_and("_") && unsigned.contains('_'))
        || (digits_and(":_.") && unsigned.contains(':'))
        || (digits_and("_.") && unsigned.contains('_'))
        || (unsigned.len() > 1 && unsigned.starts_with('0') && digits_and(""))
        || unsigned
            .strip_prefix("0b")
            .is_some_and(|bits| !bits.is_empty() && bits.chars().all(|c| "01_".contains(c)))
}

/// Whether `text` can be written as a literal block (`|`): several lines, each starting with a
/// visible character or empty, nothing that needs an escape.
pub(super) fn is_literal_safe(text: &str) -> bool {
    text.contains('\n')
        && text.chars().any(|c| !c.is_whitespace())
        && text
            .chars()
            .all(|c| c == '\n' || c == '\t' || is_printable(c))
        && text.split('\n').all(|line| !line.starts_with([' ', '\t']))
}

/// Writes a scalar after `key:` or `-`, with its leading space and its line break. A literal
/// block's lines are indented by `block_indent` spaces.
pub(super) fn push_scalar(out: &mut String, text: &str, block_indent: usize) {
    if is_plain_safe(text, false) {
        out.push(' ');
        out.push_str(text);
        out.push('\n');
    } else if is_literal_safe(text) {
        let content = text.trim_end_matches('\n');
        let trailing = text.len() - content.len();
        out.push_str(match trailing {
            0 => " |-\n",
            1 => " |\n",
            _ => " |+\n",
        });
        for line in content.split('\n') {
            if !line.is_empty() {
                out.extend(std::iter::repeat_n(' ', block_indent));
                out.push_str(line);
            }
            out.push('\n');
        }
        out.extend(std::iter::repeat_n('\n', trailing.saturating_sub(1)));
    } else {
        out.push(' ');
        push_double_quoted(out, text);
        out.push('\n');
    }
}

pub(super) fn push_key(out: &mut String, key: &str) {
    if is_plain_safe(key, true) {
        out.push_str(key);
    } else {
        push_double_quoted(out, key);
    }
}

pub(super) fn push_double_quoted(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\u{85}' => out.push_str("\\N"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xFF => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c if (c as u32) <= 0xFFFF => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
}

pub(super) fn push_list(out: &mut String, key: &str, items: Option<&[String]>) {
    let Some(items) = items else {
        return;
    };
    out.push_str(key);
    if items.is_empty() {
        out.push_str(": []\n");
        return;
    }
    out.push_str(":\n");
    for item in items {
        out.push_str("  -");
        push_scalar(out, item, 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::skill_file::{SkillFile, parse, render};

    #[test]
    fn rendered_fields_quote_what_yaml_1_1_readers_would_misread() {
        for text in [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "n",
            "1:30",
            "190:20:30",
            "1_000",
            "0755",
            "0b101",
            "<<",
            "=",
            "2026-11-20",
            "2026-1-2 10:00",
        ] {
            let skill = SkillFile {
                trigger: Some(text.to_owned()),
                body: String::new(),
                ..SkillFile::default()
            };
            let rendered = render(&skill);
            assert!(
                rendered.contains(&format!("trigger: \"{text}\"\n")),
                "{text}: {rendered}"
            );
            assert_eq!(parse(&rendered).unwrap().0.trigger.as_deref(), Some(text));
        }
        for text in [
            "yesterday",
            "noon",
            "10 to 5",
            "v1.30",
            "2026-11-20 report",
            "1.5",
        ] {
            assert!(
                !yaml11_reads_otherwise(text),
                "{text} is text to every reader"
            );
        }
    }
}
