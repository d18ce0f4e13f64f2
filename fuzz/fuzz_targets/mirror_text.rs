//! The mirror's texts never panic and keep their promises for any input: `INDEX.md` and
//! `LESSONS.md` stay within their caps, and a mirrored skill file reads back through the
//! header parser and gives back its code.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{INDEX_CAP, LESSONS_CAP, LessonEntry, OwnSharedSkill, SiblingSkill, SkillFileHeader, render_index, render_lessons, render_skill_file};
use mindrune_core::{code_without_header, parse_header};

/// A valid skill name made from the input's name characters (`x` when none are left).
fn name_from(text: &str) -> String {
    let name: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .skip_while(|c| *c == '.')
        .take(64)
        .collect();
    if name.is_empty() { "x".into() } else { name }
}

fuzz_target!(|data: &[u8]| {
    // The input is split on 0xFF (never part of UTF-8) into the texts a case is made of.
    let parts: Vec<String> = data
        .split(|b| *b == 0xFF)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect();
    let part = |i: usize| parts.get(i).map_or("", String::as_str);
    let reader = part(0);
    let number = |i: usize| part(i).len() as i64 * 37 - 200;

    let siblings: Vec<SiblingSkill> = parts
        .chunks(4)
        .take(40)
        .enumerate()
        .map(|(i, chunk)| SiblingSkill {
            agent: chunk[0].clone(),
            name: chunk.get(1).cloned().unwrap_or_default(),
            version: i as i64,
            score: number(i) as f64 * 1.7,
            runs: number(i + 1),
            goal: chunk.get(2).cloned(),
            preconditions: chunk.get(3).cloned(),
            topics: chunk
                .iter()
                .flat_map(|text| text.split_whitespace())
                .take(8)
                .map(str::to_string)
                .collect(),
        })
        .collect();
    let own: Vec<OwnSharedSkill> = parts
        .iter()
        .take(12)
        .enumerate()
        .map(|(i, name)| OwnSharedSkill {
            name: name.clone(),
            version: number(i),
            used_by: i,
            sibling_runs: number(i + 2),
            failures_7d: number(i + 3),
            copies: parts
                .iter()
                .skip(i)
                .take(i % 5)
                .map(|copy| (copy.clone(), number(i)))
                .collect(),
        })
        .collect();
    let lessons: Vec<LessonEntry> = parts
        .iter()
        .enumerate()
        .map(|(i, text)| LessonEntry {
            author: part(i % 3).to_string(),
            text: text.clone(),
            at: number(i % 7),
            line: i,
        })
        .collect();
    let is_shared = |reference: &str| !reference.len().is_multiple_of(3);

    let index = render_index(reader, &own, &siblings, &lessons, &is_shared);
    assert!(
        index.len() <= INDEX_CAP,
        "INDEX.md is {} bytes",
        index.len()
    );
    assert!(index.ends_with('\n') && !index.contains('\r'));
    let lessons_md = render_lessons(reader, &lessons, &is_shared);
    assert!(
        lessons_md.len() <= LESSONS_CAP,
        "LESSONS.md is {} bytes",
        lessons_md.len()
    );
    assert!(lessons_md.ends_with('\n') && !lessons_md.contains('\r'));

    // A skill file: any header values, a valid name, and code as the library stores it (the
    // code of a file without its header, so no leading blank line and `\n` line ends).
    let name = name_from(part(0));
    let code = code_without_header(parts.last().map_or("", String::as_str));
    let tags: Vec<String> = parts.iter().skip(5).take(70).cloned().collect();
    let topics: Vec<String> = parts.iter().skip(2).take(6).cloned().collect();
    let file = render_skill_file(
        &SkillFileHeader {
            name: &name,
            goal: Some(part(1)),
            preconditions: Some(part(2)),
            params: Some(part(3)),
            result: Some(part(4)),
            tags: &tags,
            from: "pickles/mine-iron",
            topics: &topics,
        },
        &code,
    );
    let (parsed, diagnostics) = parse_header(&file);
    assert!(diagnostics.is_empty(), "{diagnostics:?}\n{file}");
    let parsed = parsed.expect("a rendered header parses");
    assert_eq!(parsed.name, name);
    assert_eq!(parsed.from.as_deref(), Some("pickles/mine-iron"));
    assert!(!parsed.private);
    assert_eq!(code_without_header(&file), code);
});
