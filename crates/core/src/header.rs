//! The `/** @skill <name> … */` header at the top of a script.
//!
//! The header is how an avatar shares a script with its family: no API call, just a comment.
//! Parsing never fails: [`parse`] returns what it could read plus diagnostics, and a header with
//! a problem that matters (no name, say) parses to `None` so the script simply stays private.

use std::ops::Range;

/// The most topic tags a header may carry; more are dropped with a diagnostic.
pub(crate) const MAX_TAGS: usize = 64;
/// The longest value a header field may have, in characters; longer ones are cut.
pub(crate) const MAX_FIELD_CHARS: usize = 1_000;
/// The largest header read, in bytes; a longer comment is not treated as a header.
pub(crate) const MAX_HEADER_BYTES: usize = 256 * 1024;

/// A parsed `@skill` header.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub name: String,
    pub goal: Option<String>,
    pub preconditions: Option<String>,
    pub params: Option<String>,
    pub result: Option<String>,
    /// `Tags:` as written, split on commas and white space.
    pub tags: Vec<String>,
    /// `From: <sibling>/<name>`: the family skill this script was copied from.
    pub from: Option<String>,
    /// `Topics:` as the mirror writes them (kept so a copied file round-trips).
    pub topics: Vec<String>,
    /// `@private` anywhere in the header: the script is not shared.
    pub private: bool,
}

/// A problem found in a header, with its 1-based line in the file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Diagnostic {
    pub line: usize,
    pub message: String,
}

/// Where the header block lies in the source: from `/**` through `*/`, and the rest of that
/// line's end. `None` when the file does not start with an `@skill` block comment.
pub(crate) fn locate(source: &str) -> Option<Range<usize>> {
    let start = leading_skip(source);
    let rest = &source[start..];
    if !rest.starts_with("/**") {
        return None;
    }
    let close = rest.find("*/")?;
    if close > MAX_HEADER_BYTES {
        return None;
    }
    let block = &rest[..close];
    if !block.contains("@skill") {
        return None;
    }
    let mut end = start + close + 2;
    // Take the rest of the closing line too, so the code starts on a line of its own.
    let tail = &source[end..];
    let line_end = tail.find('\n').map_or(tail.len(), |i| i + 1);
    if tail[..line_end].trim().is_empty() {
        end += line_end;
    }
    Some(start..end)
}

/// Bytes to pass over before a header may start: a byte-order mark, a shebang line and blank
/// lines.
fn leading_skip(source: &str) -> usize {
    let mut pos = 0;
    if source.starts_with('\u{feff}') {
        pos += '\u{feff}'.len_utf8();
    }
    if source[pos..].starts_with("#!") {
        pos += source[pos..]
            .find('\n')
            .map_or(source.len() - pos, |i| i + 1);
    }
    loop {
        let rest = &source[pos..];
        let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
        if line_end == 0 || !rest[..line_end].trim().is_empty() {
            return pos;
        }
        pos += line_end;
    }
}

/// Parses the header of a script, if it has one.
#[expect(
    clippy::too_many_lines,
    reason = "one line-by-line parser over the header grammar; its arms share the parse state"
)]
pub fn parse(source: &str) -> (Option<Header>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    let start = leading_skip(source);
    let rest = &source[start..];
    let first_line = 1 + source[..start].matches('\n').count();
    if rest.starts_with("/**")
        && !rest.contains("*/")
        && rest.lines().next().is_some_and(|l| l.contains("@skill"))
    {
        diagnostics.push(Diagnostic {
            line: first_line,
            message: "the @skill header is never closed with */; the script stays private".into(),
        });
        return (None, diagnostics);
    }
    let Some(span) = locate(source) else {
        if rest.starts_with("/**")
            && rest
                .find("*/")
                .is_some_and(|close| close > MAX_HEADER_BYTES)
        {
            diagnostics.push(Diagnostic {
                line: first_line,
                message: format!(
                    "the header is longer than {MAX_HEADER_BYTES} bytes and is not read; the script stays private"
                ),
            });
        }
        return (None, diagnostics);
    };
    let block = &source[span.start + 3..span.start + source[span.clone()].find("*/").unwrap_or(0)];
    let mut header = Header::default();
    let mut name_seen = false;
    let mut last_field: Option<&'static str> = None;
    for (offset, raw) in block.split('\n').enumerate() {
        let line_no = first_line + offset;
        let line = strip_comment_margin(raw);
        if line.is_empty() {
            last_field = None;
            continue;
        }
        if line.contains("@private") {
            header.private = true;
        }
        if let Some(after) = line.strip_prefix("@skill") {
            if name_seen {
                diagnostics.push(Diagnostic {
                    line: line_no,
                    message: "a second @skill line; the first name is kept".into(),
                });
                continue;
            }
            name_seen = true;
            let name = after.split_whitespace().next().unwrap_or("");
            if name.is_empty() {
                diagnostics.push(Diagnostic {
                    line: line_no,
                    message: "@skill has no name; write `@skill <name>`; the script stays private"
                        .into(),
                });
            } else if !is_valid_name(name) {
                diagnostics.push(Diagnostic {
                    line: line_no,
                    message: format!(
                        "`{name}` is not a skill name (use letters, digits, `-` and `_`, at most 64); the script stays private"
                    ),
                });
            } else {
                header.name = name.to_string();
            }
            continue;
        }
        if line.starts_with("@private") {
            continue;
        }
        match line.split_once(':') {
            Some((key, value)) if is_field_key(key) => {
                let key = key.trim().to_ascii_lowercase();
                // Tags are capped by count, not length, so they are not cut here.
                let value = if key == "tags" || key == "topics" {
                    value.trim().to_string()
                } else {
                    bounded(value.trim(), line_no, &mut diagnostics)
                };
                last_field = match key.as_str() {
                    "goal" => set_once(&mut header.goal, value, "Goal", line_no, &mut diagnostics),
                    "preconditions" => set_once(
                        &mut header.preconditions,
                        value,
                        "Preconditions",
                        line_no,
                        &mut diagnostics,
                    ),
                    "params" => set_once(
                        &mut header.params,
                        value,
                        "Params",
                        line_no,
                        &mut diagnostics,
                    ),
                    "result" => set_once(
                        &mut header.result,
                        value,
                        "Result",
                        line_no,
                        &mut diagnostics,
                    ),
                    "tags" => {
                        push_tags(&mut header.tags, &value, line_no, &mut diagnostics);
                        None
                    }
                    "topics" => {
                        push_tags(&mut header.topics, &value, line_no, &mut diagnostics);
                        None
                    }
                    "from" => {
                        let from = value.trim().trim_end_matches(".ts").to_string();
                        if from.split('/').count() == 2 && from.split('/').all(is_valid_name) {
                            header.from = Some(from);
                        } else {
                            diagnostics.push(Diagnostic {
                                line: line_no,
                                message: format!(
                                    "From: `{from}` is not `<avatar>/<skill>`; the line is ignored"
                                ),
                            });
                        }
                        None
                    }
                    other => {
                        diagnostics.push(Diagnostic {
                            line: line_no,
                            message: format!(
                                "unknown header field `{other}` (known: Goal, Preconditions, Params, Result, Tags, From); it is ignored"
                            ),
                        });
                        None
                    }
                };
            }
            _ => {
                // A line without a field continues the previous field's text, the way people
                // wrap long goals.
                let target = match last_field {
                    Some("goal") => header.goal.as_mut(),
                    Some("preconditions") => header.preconditions.as_mut(),
                    Some("params") => header.params.as_mut(),
                    Some("result") => header.result.as_mut(),
                    _ => None,
                };
                if let Some(text) = target {
                    if text.chars().count() + line.chars().count() < MAX_FIELD_CHARS {
                        text.push(' ');
                        text.push_str(line);
                    }
                } else {
                    diagnostics.push(Diagnostic {
                        line: line_no,
                        message: "a header line that is not `Field: value`; it is ignored".into(),
                    });
                }
            }
        }
    }
    if header.name.is_empty() {
        return (None, diagnostics);
    }
    (Some(header), diagnostics)
}

fn strip_comment_margin(raw: &str) -> &str {
    let line = raw.trim();
    let line = line.strip_prefix('*').unwrap_or(line);
    line.trim()
}

fn is_field_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 20 && key.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
}

/// Skill and avatar names: what may stand in a file name and a tag without quoting.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.')
}

fn bounded(value: &str, line: usize, diagnostics: &mut Vec<Diagnostic>) -> String {
    if value.chars().count() > MAX_FIELD_CHARS {
        diagnostics.push(Diagnostic {
            line,
            message: format!("the value is longer than {MAX_FIELD_CHARS} characters and was cut"),
        });
        value.chars().take(MAX_FIELD_CHARS).collect()
    } else {
        value.to_string()
    }
}

fn set_once(
    slot: &mut Option<String>,
    value: String,
    field: &str,
    line: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<&'static str> {
    if slot.is_some() {
        diagnostics.push(Diagnostic {
            line,
            message: format!("{field}: is given twice; the first is kept"),
        });
        return None;
    }
    *slot = Some(value);
    match field {
        "Goal" => Some("goal"),
        "Preconditions" => Some("preconditions"),
        "Params" => Some("params"),
        _ => Some("result"),
    }
}

fn push_tags(tags: &mut Vec<String>, value: &str, line: usize, diagnostics: &mut Vec<Diagnostic>) {
    let mut dropped = 0usize;
    for tag in value
        .split([',', ' ', '\t'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        if tags.len() >= MAX_TAGS {
            dropped += 1;
            continue;
        }
        if !tags.iter().any(|t| t == tag) {
            tags.push(tag.chars().take(100).collect());
        }
    }
    if dropped > 0 {
        diagnostics.push(Diagnostic {
            line,
            message: format!("more than {MAX_TAGS} tags; {dropped} were dropped"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_EXAMPLE: &str = "/** @skill chop-oaks\n * Goal: chop oaks west of Draynor and bank the logs\n * Preconditions: an axe, Woodcutting 15\n * Params: none\n * Result: logs in the bank\n */\nimport { runScript } from '../../sdk/runner';\nawait runScript(async ({ bot, sdk }) => { /* … */ });\n";

    #[test]
    fn the_spec_example_header_parses_into_its_fields() {
        let (header, diagnostics) = parse(SPEC_EXAMPLE);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let header = header.unwrap();
        assert_eq!(header.name, "chop-oaks");
        assert_eq!(
            header.goal.as_deref(),
            Some("chop oaks west of Draynor and bank the logs")
        );
        assert_eq!(
            header.preconditions.as_deref(),
            Some("an axe, Woodcutting 15")
        );
        assert_eq!(header.params.as_deref(), Some("none"));
        assert_eq!(header.result.as_deref(), Some("logs in the bank"));
        assert!(!header.private);
    }

    #[test]
    fn the_header_span_ends_where_the_code_starts() {
        let span = locate(SPEC_EXAMPLE).unwrap();
        assert!(SPEC_EXAMPLE[span.end..].starts_with("import"));
    }

    #[test]
    fn at_private_in_the_header_marks_it_private() {
        let (header, _) = parse("/** @skill x\n * @private\n */\na();\n");
        assert!(header.unwrap().private);
    }

    #[test]
    fn tags_and_from_are_read() {
        let (header, diagnostics) = parse(
            "/** @skill mine-iron\n * Tags: skill:mining, item:iron-ore place:al-kharid\n * From: pickles/mine-iron.ts\n */\n",
        );
        let header = header.unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(
            header.tags,
            ["skill:mining", "item:iron-ore", "place:al-kharid"]
        );
        assert_eq!(header.from.as_deref(), Some("pickles/mine-iron"));
    }

    #[test]
    fn a_header_without_a_name_keeps_the_script_private_with_a_diagnostic() {
        let (header, diagnostics) = parse("/** @skill\n * Goal: x\n */\n");
        assert!(header.is_none());
        assert_eq!(diagnostics[0].line, 1);
    }

    #[test]
    fn an_unclosed_header_is_a_diagnostic_not_a_crash() {
        let (header, diagnostics) = parse("/** @skill x\n * Goal: never closed\n");
        assert!(header.is_none());
        assert!(diagnostics[0].message.contains("never closed"));
    }

    #[test]
    fn a_doc_comment_without_at_skill_is_not_a_header() {
        assert!(locate("/** Chops trees. */\na();\n").is_none());
        assert!(parse("/** Chops trees. */\na();\n").0.is_none());
    }

    #[test]
    fn a_shebang_and_blank_lines_may_stand_before_the_header() {
        let (header, _) = parse("#!/usr/bin/env bun\n\n/** @skill x */\na();\n");
        assert_eq!(header.unwrap().name, "x");
    }

    #[test]
    fn ten_thousand_tags_are_cut_to_the_limit_with_a_diagnostic() {
        let tags: Vec<String> = (0..10_000).map(|i| format!("t{i}")).collect();
        let source = format!("/** @skill x\n * Tags: {}\n */\n", tags.join(", "));
        let (header, diagnostics) = parse(&source);
        assert_eq!(header.unwrap().tags.len(), MAX_TAGS);
        assert!(diagnostics.iter().any(|d| d.message.contains("dropped")));
    }

    #[test]
    fn diagnostics_name_the_line_in_the_file() {
        let (_, diagnostics) = parse("\n\n/** @skill x\n * Colour: blue\n */\n");
        assert_eq!(diagnostics[0].line, 4);
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(source in "\\PC{0,400}") {
            let _ = parse(&source);
            let _ = locate(&source);
        }

        #[test]
        fn parsing_never_panics_on_header_like_input(body in "[ -~\n*@:/]{0,300}") {
            let source = format!("/** @skill a{body}");
            let _ = parse(&source);
            if let Some(span) = locate(&source) {
                proptest::prop_assert!(span.end <= source.len());
            }
        }
    }
}
