//! The `Share:` lines of a lab log: the only part of a lab log that ever leaves it.
//!
//! An avatar's lab log is private; a line written as `Share: <lesson>` (also as a list item)
//! is shared with its family. [`share_lines`] reads those lines, [`view`] turns a lesson into
//! what siblings see (its tags first, feedback on a shared skill recognised), and
//! [`render_line`] writes it as one line of `LESSONS.md`.

use crate::avatars::topics;
use crate::header::Diagnostic;

/// The longest lesson, in characters; a longer one is cut and ends in `…`, so one runaway
/// line cannot crowd every other lesson out of a sibling's 8 KB `LESSONS.md`.
pub const MAX_LESSON_CHARS: usize = 500;

/// One `Share:` line of a lab log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLine {
    /// The line's 1-based number in the lab log, so a diagnostic or a sibling can point at it.
    pub line: usize,
    /// The lesson after `Share:`, trimmed, at most [`MAX_LESSON_CHARS`] characters.
    pub text: String,
}

/// Reads every `Share: <lesson>` line of a lab log.
///
/// `Share:` is case-insensitive and may be indented or written as a list item (`- Share: …`,
/// `* Share: …`, `+ Share: …`). Lines inside ```` ``` ```` fenced code blocks are examples,
/// not lessons. An empty lesson is skipped with a diagnostic; a lesson longer than
/// [`MAX_LESSON_CHARS`] characters is cut (ending in `…`) with a diagnostic naming its line.
/// Never panics and runs in time linear in the log's length, so a 1 MB line is harmless.
pub fn share_lines(lab_log: &str) -> (Vec<ShareLine>, Vec<Diagnostic>) {
    let mut lessons = Vec::new();
    let mut diagnostics = Vec::new();
    let mut in_fence = false;
    // `str::lines` splits on `\n` and drops a `\r` before it, so CRLF logs read the same.
    for (index, raw) in lab_log.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim_start();
        if line.starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let Some(lesson) = share_text(line) else {
            continue;
        };
        // A lone `\r` (an old Mac line end) must not split the lesson when it is shown.
        let lesson = lesson.trim();
        if lesson.is_empty() {
            diagnostics.push(Diagnostic {
                line: line_no,
                message: "an empty Share: line; write the lesson after `Share:`; nothing is shared"
                    .into(),
            });
            continue;
        }
        let mut text = one_line(lesson);
        if let Some(cut) = cut_lesson(&text) {
            diagnostics.push(Diagnostic {
                line: line_no,
                message: format!(
                    "the lesson on line {line_no} is longer than {MAX_LESSON_CHARS} characters and was cut"
                ),
            });
            text = cut;
        }
        lessons.push(ShareLine {
            line: line_no,
            text,
        });
    }
    (lessons, diagnostics)
}

/// The lesson of a line that is a `Share:` line (already trimmed at the start), or `None`.
fn share_text(line: &str) -> Option<&str> {
    let line = match line.as_bytes() {
        // A list marker counts only when white space follows it, as in Markdown, so
        // `-Share:` or `*Share:*` is not mistaken for a list item.
        [b'-' | b'*' | b'+', next, ..] if next.is_ascii_whitespace() => line[1..].trim_start(),
        _ => line,
    };
    let prefix = line.get(..6)?;
    prefix.eq_ignore_ascii_case("share:").then(|| &line[6..])
}

/// The text with every control character (`\r`, `\n`, tabs) and Unicode line or paragraph
/// separator made a space, so it can never spill onto a second line of a mirror file.
pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || c == '\u{2028}' || c == '\u{2029}' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// A lesson cut to [`MAX_LESSON_CHARS`] (`None` when it fits), without the word the cut fell
/// in when that word holds a colon: a tag or a `skill:<avatar>/<name>` reference cut short
/// (`skill:yq1…`, its slash gone) would read as a topic it never was — another family's avatar
/// name among this family's topics.
pub(crate) fn cut_lesson(text: &str) -> Option<String> {
    let cut = cut_chars(text, MAX_LESSON_CHARS)?;
    let body = cut.strip_suffix('…').unwrap_or(&cut);
    match body.rfind(char::is_whitespace) {
        Some(space) if body[space..].contains(':') => {
            let mut kept = body[..space].trim_end().to_string();
            kept.push('…');
            Some(kept)
        }
        _ => Some(cut),
    }
}

/// The text cut to at most `max` characters ending in `…`, or `None` when it already fits.
/// Cuts fall on character boundaries because they count characters, never bytes.
pub(crate) fn cut_chars(text: &str, max: usize) -> Option<String> {
    let (cut_at, _) = text.char_indices().nth(max)?;
    let keep = text[..cut_at]
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(cut_at, |(i, _)| i);
    let mut cut = text[..keep].trim_end().to_string();
    cut.push('…');
    Some(cut)
}

/// How a lesson is shown to siblings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonView {
    /// Topic tags (normalised) and `skill:<avatar>/<name>` references to shared family skills,
    /// in order of appearance, without duplicates.
    pub tags: Vec<String>,
    /// The lesson without its leading tag groups, on one line.
    pub text: String,
    /// The first shared family skill the lesson names (`avatar/name`): feedback for its author.
    pub feedback_on: Option<String>,
}

/// How a lesson is shown: its tags first.
///
/// Leading `[tag]` groups (one tag or several in one bracket) are taken off the text into
/// `tags`; other exact topic tags in the text are added to `tags` too, and the text keeps
/// them. A `[skill:a/b]` (or bare `skill:a/b`) reference counts only when `is_shared("a/b")`:
/// then `skill:a/b` is in `tags` and the first such one is `feedback_on`. Otherwise the
/// reference becomes the plain words `a/b` in the text and counts as feedback nowhere, because
/// a lesson must not pose as feedback on a skill that is not there for the family to see.
/// The text is made one line.
pub fn view(text: &str, is_shared: &dyn Fn(&str) -> bool) -> LessonView {
    let text = one_line(text);
    let mut tags: Vec<String> = Vec::new();
    let mut feedback_on: Option<String> = None;
    let mut plain_words: Vec<String> = Vec::new();

    // Leading tag groups: each bracket must hold only tags and references, or the text starts.
    let mut rest = text.trim_start();
    while let Some(inside) = rest.strip_prefix('[') {
        let Some(close) = inside.find(']') else {
            break;
        };
        let Some(items) = tag_group(&inside[..close]) else {
            break;
        };
        for item in items {
            match item {
                Tagged::Topic(tag) => add_tag(tag, &mut tags),
                Tagged::SkillRef(reference) if is_shared(&reference) => {
                    add_tag(format!("skill:{reference}"), &mut tags);
                    feedback_on.get_or_insert(reference);
                }
                Tagged::SkillRef(reference) => plain_words.push(reference),
            }
        }
        rest = inside[close + 1..].trim_start();
    }

    // The rest of the text: its topic tags are added, its references judged in place.
    let mut found: Vec<(std::ops::Range<usize>, Tagged)> = topics::tag_spans(rest)
        .into_iter()
        .map(|(span, tag)| (span, Tagged::Topic(tag)))
        .chain(
            topics::skill_ref_spans(rest)
                .into_iter()
                .map(|(span, reference)| (span, Tagged::SkillRef(reference))),
        )
        .collect();
    found.sort_by_key(|(span, _)| span.start);
    let mut body = String::with_capacity(rest.len());
    let mut copied_to = 0;
    for (span, item) in found {
        match item {
            Tagged::Topic(tag) => add_tag(tag, &mut tags),
            Tagged::SkillRef(reference) if is_shared(&reference) => {
                add_tag(format!("skill:{reference}"), &mut tags);
                feedback_on.get_or_insert(reference);
            }
            Tagged::SkillRef(reference) => {
                // Brackets around an unshared reference go too: it is plain words now.
                let bracketed =
                    rest[..span.start].ends_with('[') && rest[span.end..].starts_with(']');
                let (start, end) = if bracketed {
                    (span.start - 1, span.end + 1)
                } else {
                    (span.start, span.end)
                };
                if start >= copied_to {
                    body.push_str(&rest[copied_to..start]);
                    body.push_str(&reference);
                    copied_to = end;
                }
            }
        }
    }
    body.push_str(&rest[copied_to..]);

    plain_words.push(body.trim().to_string());
    let text = plain_words
        .iter()
        .filter(|words| !words.is_empty())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(" ");
    LessonView {
        tags,
        text,
        feedback_on,
    }
}

/// Adds a tag unless it is there already, so each tag is shown once, where it first stood.
fn add_tag(tag: String, tags: &mut Vec<String>) {
    if !tags.contains(&tag) {
        tags.push(tag);
    }
}

/// One item of a tag group.
enum Tagged {
    Topic(String),
    SkillRef(String),
}

/// The items of a bracket that holds only tags and skill references (separated by commas or
/// white space), or `None` when it holds anything else, such as `[todo]`.
fn tag_group(inside: &str) -> Option<Vec<Tagged>> {
    let items: Vec<Tagged> = inside
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
        .map(|item| {
            topics::normalize_tag(item)
                .map(Tagged::Topic)
                .or_else(|| topics::parse_skill_ref(item).map(Tagged::SkillRef))
        })
        .collect::<Option<_>>()?;
    (!items.is_empty()).then_some(items)
}

/// The byte where a lesson's text starts after its leading tag groups (the groups [`view`]
/// takes off as tags) and the white space after them; 0 when it has none. The vocabulary adds
/// the tags it finds here, so they join the ones the author wrote, in order.
pub fn leading_tags_end(text: &str) -> usize {
    let mut rest = text.trim_start();
    while let Some(inside) = rest.strip_prefix('[') {
        let Some(close) = inside.find(']') else {
            break;
        };
        if tag_group(&inside[..close]).is_none() {
            break;
        }
        rest = inside[close + 1..].trim_start();
    }
    if rest.len() == text.trim_start().len() {
        return 0;
    }
    text.len() - rest.len()
}

/// One line of `LESSONS.md`: `- [tag] [tag] text (author)`, or `- text (author)` without tags.
/// Every part is made one line, so a lesson can never add a line of its own.
pub fn render_line(view: &LessonView, author: &str) -> String {
    let mut line = String::from("- ");
    for tag in &view.tags {
        line.push('[');
        line.push_str(one_line(tag).trim());
        line.push_str("] ");
    }
    let text = one_line(&view.text);
    let text = text.trim();
    if !text.is_empty() {
        line.push_str(text);
        line.push(' ');
    }
    line.push('(');
    line.push_str(one_line(author).trim());
    line.push(')');
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shared(reference: &str) -> bool {
        reference == "pickles/mine-iron"
    }

    fn texts(log: &str) -> Vec<String> {
        share_lines(log).0.into_iter().map(|s| s.text).collect()
    }

    #[test]
    fn share_lines_reads_plain_and_list_item_lessons_with_their_line_numbers() {
        let log = "# Lab log\nMined 20 ore.\nShare: bank before the inventory is full\n- Share: [quest:restless-ghost] Father Aereck is in the church\n* Share: one\n+ Share: two\n";
        let (lessons, diagnostics) = share_lines(log);
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(
            lessons,
            [
                ShareLine {
                    line: 3,
                    text: "bank before the inventory is full".into()
                },
                ShareLine {
                    line: 4,
                    text: "[quest:restless-ghost] Father Aereck is in the church".into()
                },
                ShareLine {
                    line: 5,
                    text: "one".into()
                },
                ShareLine {
                    line: 6,
                    text: "two".into()
                },
            ]
        );
    }

    #[test]
    fn share_is_case_insensitive_and_may_be_indented() {
        assert_eq!(
            texts("  SHARE: a\n\tshare:b\n   - sHaRe:   c  \n"),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn share_elsewhere_in_a_line_is_not_a_lesson() {
        assert!(texts("I will Share: later\n-Share: no marker space\n**Share:** bold\nShare without colon\n").is_empty());
    }

    #[test]
    fn lines_inside_a_fenced_code_block_are_not_lessons() {
        let log = "Share: before\n```md\nShare: an example\n```\nShare: after\n  ```\nShare: indented fence\n";
        assert_eq!(texts(log), ["before", "after"]);
    }

    #[test]
    fn an_empty_lesson_is_skipped_with_a_diagnostic() {
        let (lessons, diagnostics) = share_lines("x\nShare:   \n- Share:\n");
        assert!(lessons.is_empty());
        assert_eq!(
            diagnostics.iter().map(|d| d.line).collect::<Vec<_>>(),
            [2, 3]
        );
        assert!(diagnostics[0].message.contains("empty"));
    }

    #[test]
    fn a_long_lesson_is_cut_with_an_ellipsis_and_a_diagnostic_naming_the_line() {
        let log = format!("a\nb\nShare: {}\n", "é".repeat(MAX_LESSON_CHARS + 10));
        let (lessons, diagnostics) = share_lines(&log);
        assert_eq!(lessons[0].text.chars().count(), MAX_LESSON_CHARS);
        assert!(lessons[0].text.ends_with("é…"));
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].line, 3);
        assert!(diagnostics[0].message.contains("line 3"));
    }

    #[test]
    fn a_cut_inside_a_skill_reference_leaves_no_topic_behind() {
        // The cut falls inside `skill:yq1/fish`, before its slash: what is left must not read
        // as the topic `skill:yq1` (another family's avatar name in this family's topics).
        let head = format!("{} ", "a".repeat(MAX_LESSON_CHARS - 11));
        let log = format!("Share: {head}skill:yq1/fish-lobsters\n");
        let (lessons, _) = share_lines(&log);
        let text = &lessons[0].text;
        assert!(text.ends_with('…'), "{text}");
        assert!(
            !crate::avatars::topics::exact_tags(text)
                .iter()
                .any(|t| t.starts_with("skill:")),
            "{text}: {:?}",
            crate::avatars::topics::exact_tags(text)
        );
    }

    #[test]
    fn a_lesson_of_exactly_the_limit_is_kept_whole() {
        let lesson = "x".repeat(MAX_LESSON_CHARS);
        let (lessons, diagnostics) = share_lines(&format!("Share: {lesson}"));
        assert!(diagnostics.is_empty());
        assert_eq!(lessons[0].text, lesson);
    }

    #[test]
    fn crlf_line_endings_are_read() {
        let (lessons, _) = share_lines("x\r\nShare: one\r\n- Share: two\r\n");
        assert_eq!(
            lessons
                .iter()
                .map(|l| (l.line, l.text.as_str()))
                .collect::<Vec<_>>(),
            [(2, "one"), (3, "two")]
        );
    }

    #[test]
    fn a_one_megabyte_line_is_cut_not_a_crash() {
        let log = format!("Share: {}\nShare: next\n", "ab€".repeat(350_000));
        let (lessons, diagnostics) = share_lines(&log);
        assert_eq!(lessons.len(), 2);
        assert!(lessons[0].text.ends_with('…'));
        assert_eq!(diagnostics.len(), 1);
        assert!(exact_one_line(&lessons[0].text));
    }

    fn exact_one_line(text: &str) -> bool {
        !text.contains(['\r', '\n'])
    }

    #[test]
    fn view_takes_leading_tags_off_the_text() {
        let view = view(
            "[Quest:Restless-Ghost] [npc:father-aereck, place:lumbridge] Father Aereck is in the church",
            &shared,
        );
        assert_eq!(
            view.tags,
            [
                "quest:restless-ghost",
                "npc:father-aereck",
                "place:lumbridge"
            ]
        );
        assert_eq!(view.text, "Father Aereck is in the church");
        assert_eq!(view.feedback_on, None);
    }

    #[test]
    fn view_adds_other_tags_in_the_text_and_keeps_the_text() {
        let view = view(
            "[todo] ask about quest:restless-ghost at [place:lumbridge]",
            &shared,
        );
        assert_eq!(view.tags, ["quest:restless-ghost", "place:lumbridge"]);
        assert_eq!(
            view.text,
            "[todo] ask about quest:restless-ghost at [place:lumbridge]"
        );
    }

    #[test]
    fn feedback_on_a_shared_skill_is_tagged_and_names_the_skill() {
        let view = view(
            "[skill:pickles/mine-iron] fails when the inventory is full, bank first",
            &shared,
        );
        assert_eq!(view.tags, ["skill:pickles/mine-iron"]);
        assert_eq!(view.text, "fails when the inventory is full, bank first");
        assert_eq!(view.feedback_on.as_deref(), Some("pickles/mine-iron"));

        let inline = super::view("like skill:pickles/mine-iron.ts but faster", &shared);
        assert_eq!(inline.tags, ["skill:pickles/mine-iron"]);
        assert_eq!(inline.text, "like skill:pickles/mine-iron.ts but faster");
        assert_eq!(inline.feedback_on.as_deref(), Some("pickles/mine-iron"));
    }

    #[test]
    fn a_reference_to_an_unshared_skill_becomes_plain_words() {
        let view = view(
            "[skill:buzz/chop-oaks] [item:logs] works, unlike [skill:rnchk/x] and skill:rnchk/y",
            &shared,
        );
        assert_eq!(view.tags, ["item:logs"]);
        assert_eq!(
            view.text,
            "buzz/chop-oaks works, unlike rnchk/x and rnchk/y"
        );
        assert_eq!(view.feedback_on, None);
    }

    #[test]
    fn the_first_shared_reference_is_the_feedback() {
        let both = |_: &str| true;
        let view = view("[skill:a/x] better than skill:b/y", &both);
        assert_eq!(view.tags, ["skill:a/x", "skill:b/y"]);
        assert_eq!(view.feedback_on.as_deref(), Some("a/x"));
    }

    #[test]
    fn view_makes_the_text_one_line() {
        let view = view("[quest:x] one\r\ntwo\rthree\u{2028}four", &shared);
        assert_eq!(view.text, "one  two three four");
    }

    #[test]
    fn render_line_puts_tags_first_and_the_author_last() {
        let view = view(
            "[quest:restless-ghost] Father Aereck is in the church",
            &shared,
        );
        assert_eq!(
            render_line(&view, "artest02"),
            "- [quest:restless-ghost] Father Aereck is in the church (artest02)"
        );
    }

    #[test]
    fn render_line_without_tags_is_text_and_author() {
        let view = view("bank first", &shared);
        assert_eq!(render_line(&view, "pickles"), "- bank first (pickles)");
    }

    #[test]
    fn render_line_cannot_be_split_by_its_fields() {
        let view = LessonView {
            tags: vec!["quest:\nx".into()],
            text: "a\nb".into(),
            feedback_on: None,
        };
        assert!(exact_one_line(&render_line(&view, "ev\nil")));
    }

    proptest! {
        #[test]
        fn share_lines_never_panics_and_returns_bounded_one_line_lessons(log in "([ -~]|[é€\\t\\x{85}\\x{2028}]|\\r|\\n|```|Share:|- Share: |   ){0,200}") {
            let (lessons, diagnostics) = share_lines(&log);
            let line_count = log.split('\n').count();
            for lesson in &lessons {
                prop_assert!(!lesson.text.is_empty());
                prop_assert!(lesson.text.chars().count() <= MAX_LESSON_CHARS);
                prop_assert!(exact_one_line(&lesson.text));
                prop_assert!(lesson.line >= 1 && lesson.line <= line_count);
            }
            for diagnostic in &diagnostics {
                prop_assert!(diagnostic.line >= 1 && diagnostic.line <= line_count);
            }
        }

        #[test]
        fn a_written_share_line_is_read_back(
            before in proptest::collection::vec("[a-z ]{0,20}", 0..5),
            lesson in "[a-zA-Z0-9][a-zA-Z0-9 ,.!?'()-]{0,80}[a-zA-Z0-9.!?)]",
            marker in prop_oneof![Just(""), Just("- "), Just("* "), Just("+ "), Just("  ")],
        ) {
            let mut log = before.join("\n");
            if !before.is_empty() {
                log.push('\n');
            }
            log.push_str(&format!("{marker}Share: {lesson}\n"));
            let (lessons, _) = share_lines(&log);
            let expected = ShareLine { line: before.len() + 1, text: lesson };
            prop_assert_eq!(lessons.last(), Some(&expected));
        }

        #[test]
        fn view_never_panics_and_keeps_its_promises(text in "([ -~]|[é€\\x{2028}]|\\r|\\n|\\[|\\]|skill:a/b|skill:ab/c.ts|quest:x|place:y){0,100}") {
            let is_shared = |r: &str| r.len() % 2 == 1;
            let view = view(&text, &is_shared);
            prop_assert!(exact_one_line(&view.text));
            for (i, tag) in view.tags.iter().enumerate() {
                prop_assert!(!view.tags[..i].contains(tag));
                match tag.strip_prefix("skill:").filter(|r| r.contains('/')) {
                    Some(reference) => prop_assert!(is_shared(reference)),
                    None => prop_assert_eq!(topics::normalize_tag(tag), Some(tag.clone())),
                }
            }
            if let Some(reference) = &view.feedback_on {
                prop_assert!(is_shared(reference));
                let tag = format!("skill:{reference}");
                prop_assert!(view.tags.contains(&tag));
            }
            prop_assert!(exact_one_line(&render_line(&view, "author")));
        }
    }
}
