//! Topic tags (`quest:restless-ghost`, `place:lumbridge`) and family skill references
//! (`skill:pickles/mine-iron`) written exactly in free text.
//!
//! Tags let `grep -r 'quest:restless-ghost' family-skills/` find every skill and lesson about
//! one thing. This module only knows tags written exactly as `<kind>:<slug>`; a vocabulary and
//! an alias table (names to tags) can be added beside [`exact_tags`] without changing it.
//!
//! A `skill:<avatar>/<name>` reference looks like a `skill:` topic followed by a slash, but it
//! names a family skill (feedback on it), not a topic, so [`exact_tags`] never returns one and
//! [`skill_refs`] reads them instead.

use std::ops::Range;

use crate::header;

/// The kinds a topic tag may have: one per kind of page of rs-sdk's wiki, plus places.
pub const TOPIC_KINDS: [&str; 6] = ["quest", "skill", "item", "npc", "shop", "place"];

/// A kind word right before a colon: the only place an exact tag or a skill reference can
/// start. Most colons of free text (`Share:`, `timeout: 60_000`) have none, so finding them
/// first (`memchr`, vectorised) leaves almost every text with nothing more to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KindColon {
    /// Where the kind word starts.
    pub(crate) start: usize,
    /// Where its colon is.
    pub(crate) colon: usize,
    /// Whether the kind is `skill` (which may also start a skill reference).
    pub(crate) skill: bool,
}

/// Every kind word (any case) that ends right before a colon, in order.
pub(crate) fn kind_colons(text: &str) -> Vec<KindColon> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for colon in memchr::memchr_iter(b':', bytes) {
        // No kind is the end of another, so at most one ends at a colon.
        if let Some(kind) = TOPIC_KINDS.iter().find(|kind| {
            colon
                .checked_sub(kind.len())
                .is_some_and(|start| bytes[start..colon].eq_ignore_ascii_case(kind.as_bytes()))
        }) {
            found.push(KindColon {
                start: colon - kind.len(),
                colon,
                skill: *kind == "skill",
            });
        }
    }
    found
}

/// The end of the run of bytes from `from` that `keep` accepts.
fn run_end(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    from + bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|&&b| keep(b)).count())
}

/// The candidate tag at a kind colon: the kind, the colon and a slug of ASCII letters and
/// digits in hyphen-joined runs, as long as it goes (`quest:x-` is `quest:x`). `None` when
/// no slug follows. This is the pattern
/// `(?i-u:quest|skill|item|npc|shop|place):[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*` matched at the
/// kind word; it is ASCII-only so a Unicode case fold (the Kelvin sign for `k`) can never
/// make a tag out of a foreign letter.
fn tag_candidate(bytes: &[u8], kind: KindColon) -> Option<Range<usize>> {
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let mut end = run_end(bytes, kind.colon + 1, alnum);
    if end == kind.colon + 1 {
        return None;
    }
    while bytes.get(end) == Some(&b'-') {
        let more = run_end(bytes, end + 1, alnum);
        if more == end + 1 {
            break;
        }
        end = more;
    }
    Some(kind.start..end)
}

/// The candidate skill reference at a `skill:` colon: the kind, the colon and two runs of
/// name characters (`[A-Za-z0-9_.-]`) around a slash: the avatar's range and the name's.
/// Whether both halves are real names is checked afterwards with [`header::is_valid_name`].
fn skill_ref_candidate(bytes: &[u8], kind: KindColon) -> Option<(Range<usize>, Range<usize>)> {
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
    let avatar = kind.colon + 1..run_end(bytes, kind.colon + 1, name_byte);
    if avatar.is_empty() || bytes.get(avatar.end) != Some(&b'/') {
        return None;
    }
    let name = avatar.end + 1..run_end(bytes, avatar.end + 1, name_byte);
    (!name.is_empty()).then_some((avatar, name))
}

/// Normalises an exactly written topic tag: `Quest:Restless-Ghost` becomes
/// `quest:restless-ghost`. Returns `None` when the tag is not `<kind>:<slug>` with a kind from
/// [`TOPIC_KINDS`] and a slug of `[a-z0-9]+(-[a-z0-9]+)*` after lowercasing. Surrounding white
/// space is ignored. Only ASCII is lowercased, so no foreign letter can fold into a tag.
pub fn normalize_tag(tag: &str) -> Option<String> {
    let lowered = tag.trim().to_ascii_lowercase();
    let (kind, slug) = lowered.split_once(':')?;
    if !TOPIC_KINDS.contains(&kind) || !is_slug(slug) {
        return None;
    }
    Some(lowered)
}

/// Whether a string is a slug: lowercase ASCII words of letters and digits joined by single
/// hyphens, so `restless-ghost` is one and `-ghost`, `a--b` and `Ghost` are not.
fn is_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// The exactly written topic tags in free text, bare (`quest:restless-ghost`) or in brackets
/// (`[quest:restless-ghost]`), normalised, without duplicates, in order of first appearance.
///
/// A tag counts only as a whole word: `subquest:x`, `quest:x/y` and `quest:x:y` hold no tag.
/// A `skill:<avatar>/<name>` reference is a family skill, not a topic, and is not returned
/// (see [`skill_refs`]).
pub fn exact_tags(text: &str) -> Vec<String> {
    let mut tags: Vec<String> = Vec::new();
    for (_, tag) in tag_spans(text) {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    tags
}

/// The `skill:<avatar>/<name>` references in free text as `avatar/name`, without duplicates,
/// in order of first appearance. Both halves must be names as [`header::is_valid_name`] allows;
/// a trailing `.ts` (the mirror's file name) and a sentence's full stop are not part of the
/// name, so `skill:pickles/mine-iron.ts.` reads as `pickles/mine-iron`.
#[cfg(test)]
pub(crate) fn skill_refs(text: &str) -> Vec<String> {
    let mut refs: Vec<String> = Vec::new();
    for (_, reference) in skill_ref_spans(text) {
        if !refs.contains(&reference) {
            refs.push(reference);
        }
    }
    refs
}

/// Every exact topic tag in the text with the byte range it was written in, duplicates kept,
/// so a caller can tell where each tag stands.
pub(crate) fn tag_spans(text: &str) -> Vec<(Range<usize>, String)> {
    tag_spans_at(text, &kind_colons(text))
}

/// [`tag_spans`], given the text's [`kind_colons`].
pub(crate) fn tag_spans_at(text: &str, kinds: &[KindColon]) -> Vec<(Range<usize>, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    // Candidates do not overlap: one that starts inside the last is not one (it could not be
    // a whole word anyway).
    let mut last_end = 0;
    for &kind in kinds {
        if kind.start < last_end {
            continue;
        }
        let Some(span) = tag_candidate(bytes, kind) else {
            continue;
        };
        last_end = span.end;
        if !starts_a_word(text, span.start) || continues_a_word(text, span.end) {
            continue;
        }
        // `skill:pickles/mine-iron` is a reference to a sibling's skill, never the topic
        // `skill:pickles` (which could name another owner's avatar).
        if text[span.end..].starts_with('/') {
            continue;
        }
        if let Some(tag) = normalize_tag(&text[span.clone()]) {
            found.push((span, tag));
        }
    }
    found
}

/// Every skill reference in the text as `avatar/name` with the byte range of its
/// `skill:avatar/name` spelling (a `.ts` suffix included, a trailing full stop not),
/// duplicates kept.
pub(crate) fn skill_ref_spans(text: &str) -> Vec<(Range<usize>, String)> {
    skill_ref_spans_at(text, &kind_colons(text))
}

/// [`skill_ref_spans`], given the text's [`kind_colons`].
pub(crate) fn skill_ref_spans_at(text: &str, kinds: &[KindColon]) -> Vec<(Range<usize>, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut last_end = 0;
    for &kind in kinds.iter().filter(|kind| kind.skill) {
        if kind.start < last_end {
            continue;
        }
        let Some((avatar, name)) = skill_ref_candidate(bytes, kind) else {
            continue;
        };
        last_end = name.end;
        let (avatar, name_start) = (&text[avatar], name.start);
        // A sentence may end right after the name; its full stops are not part of the name.
        let spelled = text[name].trim_end_matches('.');
        let end = name_start + spelled.len();
        let name = spelled.strip_suffix(".ts").unwrap_or(spelled);
        if !starts_a_word(text, kind.start) || continues_a_word(text, end) {
            continue;
        }
        if header::is_valid_name(avatar) && header::is_valid_name(name) {
            found.push((kind.start..end, format!("{avatar}/{name}")));
        }
    }
    found
}

/// Reads a whole string as one skill reference (`skill:pickles/mine-iron`, `.ts` allowed) and
/// returns `pickles/mine-iron`; `None` when the string is anything more or less.
pub(crate) fn parse_skill_ref(item: &str) -> Option<String> {
    let spans = skill_ref_spans(item);
    match spans.as_slice() {
        [(span, reference)] if span.start == 0 && span.end == item.len() => Some(reference.clone()),
        _ => None,
    }
}

/// Characters that glue onto a tag and make it part of a longer word: `subquest:x`,
/// `quest:x-y-`, `quest:x/y` and `quest:x:y` are not the tag `quest:x`.
fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | ':' | '/')
}

/// Whether a tag may start at this byte: at the start of the text or after a character that
/// cannot be part of a word.
fn starts_a_word(text: &str, start: usize) -> bool {
    text[..start]
        .chars()
        .next_back()
        .is_none_or(|c| !is_tag_char(c))
}

/// Whether the text goes on with the same word at this byte. A full stop ends a sentence, but
/// one followed by a name character continues a name (`skill:bot.2/x`, `skill:bot./x`), so it
/// glues too.
fn continues_a_word(text: &str, end: usize) -> bool {
    let mut rest = text[end..].chars();
    match rest.next() {
        None => false,
        Some('.') => rest.next().is_some_and(|c| is_tag_char(c) || c == '.'),
        Some(c) => is_tag_char(c),
    }
}

#[cfg(test)]
mod tests {
    use regex::Regex;

    // The patterns the scan at kind colons replaced, kept as its reference.
    fn tag_spans_by_regex(text: &str) -> Vec<(Range<usize>, String)> {
        let pattern = Regex::new(
            r"(?i-u:quest|skill|item|npc|shop|place):(?-u:[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)",
        )
        .unwrap();
        let mut found = Vec::new();
        for candidate in pattern.find_iter(text) {
            let span = candidate.range();
            if !starts_a_word(text, span.start)
                || continues_a_word(text, span.end)
                || text[span.end..].starts_with('/')
            {
                continue;
            }
            if let Some(tag) = normalize_tag(candidate.as_str()) {
                found.push((span, tag));
            }
        }
        found
    }

    fn skill_ref_spans_by_regex(text: &str) -> Vec<(Range<usize>, String)> {
        let pattern =
            Regex::new(r"(?i-u:skill):(?-u:([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+))").unwrap();
        let mut found = Vec::new();
        for caps in pattern.captures_iter(text) {
            let (whole, avatar, name) = (
                caps.get(0).unwrap(),
                caps.get(1).unwrap(),
                caps.get(2).unwrap(),
            );
            let spelled = name.as_str().trim_end_matches('.');
            let end = name.start() + spelled.len();
            let name = spelled.strip_suffix(".ts").unwrap_or(spelled);
            if !starts_a_word(text, whole.start()) || continues_a_word(text, end) {
                continue;
            }
            if header::is_valid_name(avatar.as_str()) && header::is_valid_name(name) {
                found.push((whole.start()..end, format!("{}/{}", avatar.as_str(), name)));
            }
        }
        found
    }

    #[test]
    fn candidates_that_start_inside_the_last_one_are_passed_over_as_the_patterns_do() {
        for text in [
            "skill:a/b.skill:c/d",
            "skill:a/b.skill:c/d and skill:e/f",
            "quest:x-item:y",
            "quest:item:foo",
            "skill:bot.2/x.quest:cooks-assistant",
            "Skill:PICKLES/mine-iron.ts. then skill:x",
            "npc:a-b-c-shop:d place:e",
        ] {
            assert_eq!(tag_spans(text), tag_spans_by_regex(text), "{text}");
            assert_eq!(
                skill_ref_spans(text),
                skill_ref_spans_by_regex(text),
                "{text}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn the_scan_at_kind_colons_finds_what_the_patterns_find(
            text in "(skill:|quest:|Skill|ITEM|npc|shop|place|sub|x|\\.|/|:|-|_| |\\.ts|[a-z0-9]{1,3}|\u{212a}|é){0,24}",
        ) {
            proptest::prop_assert_eq!(tag_spans(&text), tag_spans_by_regex(&text));
            proptest::prop_assert_eq!(skill_ref_spans(&text), skill_ref_spans_by_regex(&text));
        }
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normalize_tag_lowercases_a_known_kind_and_slug() {
        assert_eq!(
            normalize_tag("Quest:Restless-Ghost").as_deref(),
            Some("quest:restless-ghost")
        );
        assert_eq!(
            normalize_tag(" place:al-kharid ").as_deref(),
            Some("place:al-kharid")
        );
        assert_eq!(
            normalize_tag("item:rune-2h-sword").as_deref(),
            Some("item:rune-2h-sword")
        );
    }

    #[test]
    fn normalize_tag_rejects_unknown_kinds_and_bad_slugs() {
        for bad in [
            "monster:goblin",
            "quest:",
            "quest",
            "quest:-ghost",
            "quest:ghost-",
            "quest:a--b",
            "quest:a_b",
            "quest:a b",
            "quest:café",
            "skill:pickles/mine-iron",
            "\u{212a}ill:x",
        ] {
            assert_eq!(normalize_tag(bad), None, "{bad}");
        }
    }

    #[test]
    fn exact_tags_finds_bare_and_bracketed_tags_in_order_without_duplicates() {
        let text = "[quest:restless-ghost] Father Aereck (npc:father-aereck) is in place:lumbridge; \
                    QUEST:Restless-Ghost again.";
        assert_eq!(
            exact_tags(text),
            [
                "quest:restless-ghost",
                "npc:father-aereck",
                "place:lumbridge"
            ]
        );
    }

    #[test]
    fn exact_tags_respects_word_boundaries() {
        for text in [
            "subquest:x",
            "quest:x-",
            "quest:x:y",
            "quest:x/y",
            "my_item:logs",
            "item:logsé",
            "quest:x.y",
        ] {
            assert!(exact_tags(text).is_empty(), "{text}");
        }
        assert_eq!(exact_tags("done with quest:x."), ["quest:x"]);
        assert_eq!(
            exact_tags("(item:logs), item:oak-logs!"),
            ["item:logs", "item:oak-logs"]
        );
    }

    #[test]
    fn a_skill_reference_is_not_a_topic() {
        let text =
            "[skill:pickles/mine-iron] fails; skill:bot.2/x too; but skill:mining is a topic";
        assert_eq!(exact_tags(text), ["skill:mining"]);
        assert!(exact_tags("skill:bot./x").is_empty());
        assert_eq!(skill_refs("skill:bot./x"), ["bot./x"]);
    }

    #[test]
    fn skill_refs_reads_avatar_and_name_in_order_without_duplicates() {
        let text =
            "[skill:pickles/mine-iron] and Skill:rnchk/mine_iron.ts, then skill:pickles/mine-iron.";
        assert_eq!(skill_refs(text), ["pickles/mine-iron", "rnchk/mine_iron"]);
    }

    #[test]
    fn skill_refs_ignores_what_is_not_a_name() {
        for text in [
            "skill:mining",
            "skill:a/.hidden",
            "skill:a/b/c",
            "xskill:a/b",
            "skill:/b",
        ] {
            assert!(skill_refs(text).is_empty(), "{text}");
        }
        let long = format!("skill:a/{}", "n".repeat(65));
        assert!(skill_refs(&long).is_empty());
    }

    #[test]
    fn parse_skill_ref_reads_only_a_whole_reference() {
        assert_eq!(parse_skill_ref("skill:a/b.ts").as_deref(), Some("a/b"));
        assert_eq!(parse_skill_ref("skill:a/b,"), None);
        assert_eq!(parse_skill_ref("quest:x"), None);
    }

    proptest! {
        #[test]
        fn scanning_any_text_never_panics_and_returns_normal_unique_tags(text in "(\\PC|quest:|skill:|/|-|\\.|\\[|\\]){0,120}") {
            let tags = exact_tags(&text);
            for tag in &tags {
                prop_assert_eq!(normalize_tag(tag), Some(tag.clone()));
                prop_assert_eq!(tags.iter().filter(|t| *t == tag).count(), 1);
            }
            for reference in skill_refs(&text) {
                let (avatar, name) = reference.split_once('/').unwrap();
                prop_assert!(header::is_valid_name(avatar) && header::is_valid_name(name));
            }
        }

        #[test]
        fn normalizing_is_idempotent(tag in "[a-zA-Z]{1,6}:[a-zA-Z0-9-]{0,12}") {
            if let Some(normal) = normalize_tag(&tag) {
                prop_assert_eq!(normalize_tag(&normal), Some(normal.clone()));
            }
        }

        #[test]
        fn a_written_tag_between_words_is_found(
            kind in 0usize..TOPIC_KINDS.len(),
            slug in "[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}",
            before in "[a-z ]{0,20}",
            after in "[a-z ]{0,20}",
            bracketed in any::<bool>(),
        ) {
            let tag = format!("{}:{slug}", TOPIC_KINDS[kind]);
            let written = if bracketed { format!("[{tag}]") } else { tag.clone() };
            let text = format!("{before} {} {after}", written.to_uppercase());
            prop_assert!(exact_tags(&text).contains(&tag));
        }

        #[test]
        fn a_written_skill_reference_is_found_and_is_no_topic(
            avatar in "[a-z0-9][a-z0-9_-]{0,15}",
            name in "[a-z0-9][a-z0-9_-]{0,15}",
        ) {
            let text = format!("Share: [skill:{avatar}/{name}] works.");
            prop_assert_eq!(skill_refs(&text), vec![format!("{avatar}/{name}")]);
            prop_assert!(exact_tags(&text).is_empty());
        }
    }

    #[test]
    fn a_skill_reference_is_not_read_as_the_topic_of_its_avatar() {
        assert!(exact_tags("Share: [skill:yq1/chop.ts] fails when full").is_empty());
        assert_eq!(
            skill_refs("Share: [skill:yq1/chop.ts] fails"),
            vec!["yq1/chop"]
        );
    }
}
