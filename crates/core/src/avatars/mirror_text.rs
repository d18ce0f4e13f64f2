//! The text of the read-only `family-skills/` files: `INDEX.md`, `LESSONS.md` and each
//! sibling's `<sibling>/<name>.ts`.
//!
//! Everything here is a pure function of the values the caller read from the library, so the
//! runner can write the files atomically and every face renders the same text. Every
//! interpolated field is made one line first: the caps below count whole lines, and a sibling's
//! text must never be able to add a line (or a heading) of its own.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::avatars::lessons::{self, LessonView, cut_chars, one_line};
use crate::avatars::topics;
use crate::header::{MAX_FIELD_CHARS, MAX_TAGS};

/// The largest `INDEX.md`, in bytes: an agent reads it whole, so it must stay short; the
/// detail is in the skill files.
pub const INDEX_CAP: usize = 4096;
/// The largest `LESSONS.md`, in bytes.
pub const LESSONS_CAP: usize = 8192;
/// The most lines of the reader's own shared skills in `INDEX.md`.
pub(crate) const OWN_SKILL_LINES: usize = 10;
/// The most skills listed under one topic in `INDEX.md`: the best few are what an agent needs.
pub(crate) const SKILLS_PER_TOPIC: usize = 3;
/// How long a goal or a precondition may be in an `INDEX.md` line, in characters.
const INDEX_FIELD_CHARS: usize = 120;
/// How long an avatar or skill name may be when shown; valid names are never longer, so only a
/// broken caller's value is cut.
const NAME_CHARS: usize = 64;
/// How many improved copies an own-skill line names before it says how many more there are.
const COPIES_NAMED: usize = 3;

/// A sibling's shared skill, as the reader's mirror shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SiblingSkill {
    pub agent: String,
    pub name: String,
    pub version: i64,
    pub score: f64,
    pub runs: i64,
    pub goal: Option<String>,
    pub preconditions: Option<String>,
    pub topics: Vec<String>,
}

/// One of the reader's own shared skills and how its siblings use it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnSharedSkill {
    pub name: String,
    pub version: i64,
    /// Siblings that ran the skill (any version) or a copy of it.
    pub used_by: usize,
    /// The siblings' runs of it, which rank the reader's skills by use.
    pub sibling_runs: i64,
    /// The siblings' failed runs in the last 7 days.
    pub failures_7d: i64,
    /// Siblings' scripts built on it, at their latest version: `("rnchk/mine-iron", 2)`.
    pub copies: Vec<(String, i64)>,
}

/// A sibling's shared lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonEntry {
    pub author: String,
    pub text: String,
    /// When the lesson was first seen, in unix milliseconds: newer lessons come first.
    pub at: i64,
    /// Its line in the author's lab log, which orders lessons seen at the same moment.
    pub line: usize,
}

/// The header of a mirrored skill file.
#[derive(Debug, Clone, Copy, Default)]
pub struct SkillFileHeader<'a> {
    pub name: &'a str,
    pub goal: Option<&'a str>,
    pub preconditions: Option<&'a str>,
    pub params: Option<&'a str>,
    pub result: Option<&'a str>,
    pub tags: &'a [String],
    /// The family skill the file is: `buzz/chop-oaks`. A copy keeps this line, which is what
    /// makes its runs build on (or count for) the sibling's skill.
    pub from: &'a str,
    pub topics: &'a [String],
}

// ---------------------------------------------------------------------------------------------
// INDEX.md
// ---------------------------------------------------------------------------------------------

/// The text of `INDEX.md` for `reader`: the topics in use, the reader's own shared skills and
/// how siblings use them (only if it shares any), and the best skills per topic.
///
/// `lessons` are the siblings' lessons (the caller leaves out the reader's own) and
/// `is_shared("agent/name")` says whether that family skill exists and is shared. The text is
/// at most [`INDEX_CAP`] bytes for any input: over the cap the best-skills lines go first (every
/// topic keeps its best skill longest), then the least used own skills, then the least used
/// topics; only whole lines are ever left out.
pub fn render_index(
    reader: &str,
    own: &[OwnSharedSkill],
    siblings: &[SiblingSkill],
    lessons: &[LessonEntry],
    is_shared: &dyn Fn(&str) -> bool,
) -> String {
    let reader = field(reader, NAME_CHARS);
    let views: Vec<LessonView> = lessons
        .iter()
        .map(|lesson| lesson_view(lesson, is_shared))
        .collect();
    let skills = unique_skills(siblings);

    let topic_order = topic_order(&skills, &views);
    let topic_lines: Vec<String> = topic_order
        .iter()
        .map(|(topic, count)| {
            format!(
                "- {topic} ({}, {})\n",
                counted(count.skills as i128, "skill", "skills"),
                counted(count.lessons as i128, "lesson", "lessons")
            )
        })
        .collect();

    let mut own_sorted: Vec<&OwnSharedSkill> = own.iter().collect();
    own_sorted.sort_by(|a, b| {
        b.sibling_runs
            .cmp(&a.sibling_runs)
            .then(b.used_by.cmp(&a.used_by))
            .then_with(|| a.name.cmp(&b.name))
    });
    let own_lines: Vec<String> = own_sorted
        .iter()
        .take(OWN_SKILL_LINES)
        .map(|skill| own_line(&reader, skill, &views))
        .collect();

    // The skills carrying each topic, gathered in one pass so many topics stay cheap.
    let mut by_topic: HashMap<&str, Vec<&UniqueSkill>> = HashMap::new();
    for skill in &skills {
        for topic in &skill.topics {
            by_topic.entry(topic.as_str()).or_default().push(skill);
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    for (topic, _) in &topic_order {
        let Some(mut carrying) = by_topic.remove(topic.as_str()) else {
            continue;
        };
        carrying.sort_by(|a, b| best_first(a.skill, b.skill));
        groups.push(Group {
            heading: format!("\n### {topic}\n"),
            lines: carrying
                .iter()
                .take(SKILLS_PER_TOPIC)
                .map(|skill| skill_line(skill.skill))
                .collect(),
        });
    }
    let mut untopical: Vec<&UniqueSkill> = skills
        .iter()
        .filter(|skill| skill.topics.is_empty())
        .collect();
    if !untopical.is_empty() {
        untopical.sort_by(|a, b| best_first(a.skill, b.skill));
        groups.push(Group {
            heading: "\n### Other skills\n".into(),
            lines: untopical
                .iter()
                .map(|skill| skill_line(skill.skill))
                .collect(),
        });
    }

    let head = format!(
        "# Family skills\n\nRead-only: the skills and lessons your siblings shared. To adapt a skill, copy its file into bots/{reader}/ and keep its From: line.\n"
    );
    let mut index = Index {
        head,
        topics: Section::new("\n## Topics\n".into(), topic_lines, "None yet.\n"),
        own: Section::new(
            if own.is_empty() {
                String::new()
            } else {
                format!(
                    "\n## Your shared skills (siblings' use; their feedback is tagged [skill:{reader}/<name>] in LESSONS.md)\n"
                )
            },
            own_lines,
            "",
        ),
        best_heading: "\n## Best skills per topic\n".into(),
        kept: groups.iter().map(|group| group.lines.len()).collect(),
        groups,
        total: 0,
    };
    index.total = index.size();
    index.fit(INDEX_CAP);
    whole_lines_within(index.render(), INDEX_CAP)
}

/// How often a topic is used: by how many skills and how many lessons.
#[derive(Debug, Default, Clone, Copy)]
struct TopicCount {
    skills: usize,
    lessons: usize,
}

/// A sibling's skill once, with its topics normalised and without duplicates.
struct UniqueSkill<'a> {
    skill: &'a SiblingSkill,
    topics: Vec<String>,
}

/// The siblings' skills, each skill once (the first entry of an agent and name wins), so
/// counts count skills, not versions.
fn unique_skills(siblings: &[SiblingSkill]) -> Vec<UniqueSkill<'_>> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    siblings
        .iter()
        .filter(|skill| seen.insert((skill.agent.as_str(), skill.name.as_str())))
        .map(|skill| {
            let mut normal: Vec<String> = Vec::new();
            for topic in skill.topics.iter().filter_map(|t| topics::normalize_tag(t)) {
                if !normal.contains(&topic) {
                    normal.push(topic);
                }
            }
            UniqueSkill {
                skill,
                topics: normal,
            }
        })
        .collect()
}

/// Every topic in use with its counts, most used first, then alphabetical. Skill references in
/// lessons are feedback, not topics, so they are not counted.
fn topic_order(skills: &[UniqueSkill<'_>], views: &[LessonView]) -> Vec<(String, TopicCount)> {
    let mut counts: BTreeMap<String, TopicCount> = BTreeMap::new();
    for skill in skills {
        for topic in &skill.topics {
            counts.entry(topic.clone()).or_default().skills += 1;
        }
    }
    for view in views {
        for tag in view.tags.iter().filter(|tag| !is_skill_ref_tag(tag)) {
            counts.entry(tag.clone()).or_default().lessons += 1;
        }
    }
    let mut order: Vec<(String, TopicCount)> = counts.into_iter().collect();
    // The map is alphabetical already and the sort is stable, so ties stay alphabetical.
    order.sort_by_key(|(_, count)| std::cmp::Reverse(count.skills + count.lessons));
    order
}

/// Whether a lesson tag is a `skill:<avatar>/<name>` reference rather than a topic.
fn is_skill_ref_tag(tag: &str) -> bool {
    tag.starts_with("skill:") && tag.contains('/')
}

/// Best score first, then most runs, then by name, so the order never depends on the input's.
fn best_first(a: &SiblingSkill, b: &SiblingSkill) -> Ordering {
    sortable_score(b.score)
        .total_cmp(&sortable_score(a.score))
        .then(b.runs.cmp(&a.runs))
        .then_with(|| a.agent.cmp(&b.agent))
        .then_with(|| a.name.cmp(&b.name))
}

/// A score that sorts: a missing (NaN) score ranks below every real one.
fn sortable_score(score: f64) -> f64 {
    if score.is_nan() {
        f64::NEG_INFINITY
    } else {
        score
    }
}

/// One best-skills line: `- pickles/mine-iron.ts — score 712, 14 runs — <goal> — needs: <…>`.
fn skill_line(skill: &SiblingSkill) -> String {
    let score = if skill.score.is_finite() {
        skill.score.round() as i64
    } else {
        0
    };
    let mut line = format!(
        "- {}/{}.ts — score {score}, {}",
        field(&skill.agent, NAME_CHARS),
        field(&skill.name, NAME_CHARS),
        counted(i128::from(skill.runs), "run", "runs")
    );
    if let Some(goal) = present(skill.goal.as_deref(), INDEX_FIELD_CHARS) {
        line.push_str(" — ");
        line.push_str(&goal);
    }
    if let Some(needs) = present(skill.preconditions.as_deref(), INDEX_FIELD_CHARS) {
        line.push_str(" — needs: ");
        line.push_str(&needs);
    }
    line.push('\n');
    line
}

/// One own-skill line: `- mine-iron v1: used by 2 siblings, 3 failures in 7 days, 1 improved
/// copy (rnchk/mine-iron v2), 2 feedback lessons`. Zero counts are written too, so the reader
/// sees that nobody uses the skill yet rather than a line that seems cut.
fn own_line(reader: &str, skill: &OwnSharedSkill, views: &[LessonView]) -> String {
    let feedback_tag = format!("skill:{reader}/{}", skill.name);
    let feedback = views
        .iter()
        .filter(|view| view.tags.contains(&feedback_tag))
        .count();
    let mut copies = counted(
        skill.copies.len() as i128,
        "improved copy",
        "improved copies",
    );
    if !skill.copies.is_empty() {
        let mut named: Vec<String> = skill
            .copies
            .iter()
            .take(COPIES_NAMED)
            .map(|(copy, version)| format!("{} v{version}", field(copy, 2 * NAME_CHARS + 1)))
            .collect();
        if skill.copies.len() > COPIES_NAMED {
            named.push(format!("+{} more", skill.copies.len() - COPIES_NAMED));
        }
        copies.push_str(&format!(" ({})", named.join(", ")));
    }
    format!(
        "- {} v{}: used by {}, {} in 7 days, {copies}, {}\n",
        field(&skill.name, NAME_CHARS),
        skill.version,
        counted(skill.used_by as i128, "sibling", "siblings"),
        counted(i128::from(skill.failures_7d), "failure", "failures"),
        counted(feedback as i128, "feedback lesson", "feedback lessons"),
    )
}

/// A section of lines under a heading. When it has no lines at all it shows `empty` instead;
/// when the cap leaves none of them, the heading goes too.
struct Section {
    heading: String,
    lines: Vec<String>,
    kept: usize,
    empty: &'static str,
}

impl Section {
    fn new(heading: String, lines: Vec<String>, empty: &'static str) -> Self {
        let kept = lines.len();
        Section {
            heading,
            lines,
            kept,
            empty,
        }
    }

    fn size(&self) -> usize {
        if self.lines.is_empty() {
            if self.heading.is_empty() {
                0
            } else {
                self.heading.len() + self.empty.len()
            }
        } else if self.kept == 0 {
            0
        } else {
            self.heading.len()
                + self.lines[..self.kept]
                    .iter()
                    .map(String::len)
                    .sum::<usize>()
        }
    }

    /// Leaves out the last kept line and returns how many bytes that saved.
    fn drop_last(&mut self) -> usize {
        if self.kept == 0 {
            return 0;
        }
        self.kept -= 1;
        let mut saved = self.lines[self.kept].len();
        if self.kept == 0 {
            saved += self.heading.len();
        }
        saved
    }

    fn render(&self, out: &mut String) {
        if self.lines.is_empty() {
            if !self.heading.is_empty() {
                out.push_str(&self.heading);
                out.push_str(self.empty);
            }
        } else if self.kept > 0 {
            out.push_str(&self.heading);
            for line in &self.lines[..self.kept] {
                out.push_str(line);
            }
        }
    }
}

/// The skills listed under one topic (or under "Other skills").
struct Group {
    heading: String,
    lines: Vec<String>,
}

/// `INDEX.md` before it is written, with how much of each part is kept.
struct Index {
    head: String,
    topics: Section,
    own: Section,
    best_heading: String,
    groups: Vec<Group>,
    /// How many lines of each group are kept.
    kept: Vec<usize>,
    /// The rendered size in bytes, kept up to date as lines are left out.
    total: usize,
}

impl Index {
    fn size(&self) -> usize {
        self.head.len() + self.topics.size() + self.own.size() + self.best_size()
    }

    fn best_size(&self) -> usize {
        if self.groups.is_empty() {
            return self.best_heading.len() + NO_SKILLS.len();
        }
        let groups: usize = self
            .groups
            .iter()
            .zip(&self.kept)
            .filter(|(_, kept)| **kept > 0)
            .map(|(group, kept)| {
                group.heading.len() + group.lines[..*kept].iter().map(String::len).sum::<usize>()
            })
            .sum();
        if groups == 0 {
            0
        } else {
            self.best_heading.len() + groups
        }
    }

    /// Leaves out lines, in the order the spec gives, until the text fits the cap.
    fn fit(&mut self, cap: usize) {
        if self.total <= cap {
            return;
        }
        // Every topic's best skill outranks any topic's second: leave out the highest rank
        // first, and among equal ranks the topic listed last.
        let mut order: Vec<(usize, usize)> = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(group, g)| (0..g.lines.len()).map(move |rank| (rank, group)))
            .collect();
        order.sort_by(|a, b| b.cmp(a));
        let mut groups_left = self.kept.iter().filter(|kept| **kept > 0).count();
        for (_, group) in order {
            if self.total <= cap {
                return;
            }
            self.kept[group] -= 1;
            self.total -= self.groups[group].lines[self.kept[group]].len();
            if self.kept[group] == 0 {
                self.total -= self.groups[group].heading.len();
                groups_left -= 1;
                if groups_left == 0 {
                    self.total -= self.best_heading.len();
                }
            }
        }
        while self.total > cap && self.own.kept > 0 {
            self.total -= self.own.drop_last();
        }
        while self.total > cap && self.topics.kept > 0 {
            self.total -= self.topics.drop_last();
        }
    }

    fn render(&self) -> String {
        let mut out = String::with_capacity(self.total);
        out.push_str(&self.head);
        self.topics.render(&mut out);
        self.own.render(&mut out);
        if self.groups.is_empty() {
            out.push_str(&self.best_heading);
            out.push_str(NO_SKILLS);
        } else if self.kept.iter().any(|kept| *kept > 0) {
            out.push_str(&self.best_heading);
            for (group, kept) in self.groups.iter().zip(&self.kept) {
                if *kept > 0 {
                    out.push_str(&group.heading);
                    for line in &group.lines[..*kept] {
                        out.push_str(line);
                    }
                }
            }
        }
        out
    }
}

/// What the best-skills section says when no sibling shares a skill yet.
const NO_SKILLS: &str = "No sibling shares a skill yet.\n";

// ---------------------------------------------------------------------------------------------
// LESSONS.md
// ---------------------------------------------------------------------------------------------

/// The text of `LESSONS.md` for `reader`: siblings' feedback on the reader's own shared skills
/// first, then every other lesson, each newest first, one line per lesson with its tags first.
///
/// A lesson is feedback for the reader when it names one of the reader's shared skills
/// (`[skill:<reader>/<name>]`, as [`lessons::view`] recognises it). At most [`LESSONS_CAP`]
/// bytes for any input: the oldest other lessons are left out first, then the oldest feedback,
/// so the cap never drops feedback while anything else could go.
pub fn render_lessons(
    reader: &str,
    lessons: &[LessonEntry],
    is_shared: &dyn Fn(&str) -> bool,
) -> String {
    let reader = field(reader, NAME_CHARS);
    let own_prefix = format!("skill:{reader}/");
    let mut feedback: Vec<(&LessonEntry, LessonView)> = Vec::new();
    let mut others: Vec<(&LessonEntry, LessonView)> = Vec::new();
    for lesson in lessons {
        let view = lesson_view(lesson, is_shared);
        if view.tags.iter().any(|tag| tag.starts_with(&own_prefix)) {
            feedback.push((lesson, view));
        } else {
            others.push((lesson, view));
        }
    }
    let lines = |mut group: Vec<(&LessonEntry, LessonView)>| -> Vec<String> {
        group.sort_by(|(a, _), (b, _)| {
            b.at.cmp(&a.at)
                .then(b.line.cmp(&a.line))
                .then_with(|| a.author.cmp(&b.author))
                .then_with(|| a.text.cmp(&b.text))
        });
        group
            .iter()
            .map(|(lesson, view)| {
                let mut line = lessons::render_line(view, &field(&lesson.author, NAME_CHARS));
                line.push('\n');
                line
            })
            .collect()
    };
    let nothing_shared = lessons.is_empty();
    let mut feedback = Section::new(
        "\n## Feedback on your shared skills\n".into(),
        lines(feedback),
        "",
    );
    let mut others = Section::new(
        "\n## Lessons\n".into(),
        lines(others),
        "No sibling shares a lesson yet.\n",
    );
    if feedback.lines.is_empty() {
        // Feedback is only for authors whose skills siblings wrote about: no empty heading.
        feedback.heading.clear();
    }
    if !nothing_shared && others.lines.is_empty() {
        // Only feedback: no empty "Lessons" section under it.
        others.heading.clear();
    }
    let head = "# Lessons from your family\n\nRead-only: the lessons your siblings shared from their lab logs (their Share: lines), newest first, tags first and the author last. Share your own as a Share: line in your lab_log.md.\n";
    let mut total = head.len() + feedback.size() + others.size();
    while total > LESSONS_CAP && others.kept > 0 {
        total -= others.drop_last();
    }
    while total > LESSONS_CAP && feedback.kept > 0 {
        total -= feedback.drop_last();
    }
    let mut out = String::with_capacity(total);
    out.push_str(head);
    feedback.render(&mut out);
    others.render(&mut out);
    whole_lines_within(out, LESSONS_CAP)
}

/// How a lesson is shown in the mirror. Its text is cut to [`lessons::MAX_LESSON_CHARS`] first, as the
/// lab log reader does, so even a caller's overlong lesson makes one bounded line.
fn lesson_view(lesson: &LessonEntry, is_shared: &dyn Fn(&str) -> bool) -> LessonView {
    match lessons::cut_lesson(&lesson.text) {
        Some(cut) => lessons::view(&cut, is_shared),
        None => lessons::view(&lesson.text, is_shared),
    }
}

// ---------------------------------------------------------------------------------------------
// <sibling>/<name>.ts
// ---------------------------------------------------------------------------------------------

/// A mirrored skill file: an `@skill` header with `From:` and `Topics:` lines, then the code.
///
/// Lines whose field is missing or empty are left out. Every value is made one line, cut to
/// the header's own limits, and cleared of `*/` (which would close the comment early) and of
/// `@private` (which would make a copy private without its agent choosing so), so that
/// [`crate::header::parse`] reads back exactly what was written and
/// [`crate::digest::code_without_header`] gives back `code` (as stored: `\n` line ends, no
/// leading blank lines). That round trip is what makes a copied file count for the sibling's
/// skill.
pub fn render_skill_file(header: &SkillFileHeader<'_>, code: &str) -> String {
    let mut out = format!("/** @skill {}\n", header_value(header.name));
    let fields = [
        ("Goal", header.goal),
        ("Preconditions", header.preconditions),
        ("Params", header.params),
        ("Result", header.result),
    ];
    for (key, value) in fields {
        let value = header_value(value.unwrap_or(""));
        if !value.is_empty() {
            out.push_str(&format!(" * {key}: {value}\n"));
        }
    }
    let tags = header_tags(header.tags);
    if !tags.is_empty() {
        out.push_str(&format!(" * Tags: {}\n", tags.join(", ")));
    }
    let from = header_value(header.from);
    if !from.is_empty() {
        out.push_str(&format!(" * From: {from}\n"));
    }
    let topic_tags = header_tags(header.topics);
    if !topic_tags.is_empty() {
        out.push_str(&format!(" * Topics: {}\n", topic_tags.join(", ")));
    }
    out.push_str(" */\n");
    out.push_str(code);
    out
}

/// A header value as it is written: one line, trimmed, at most [`MAX_FIELD_CHARS`] characters
/// (what the parser keeps), with no `*/` and no `@private`.
fn header_value(value: &str) -> String {
    let value = one_line(value);
    let value: String = value.trim().chars().take(MAX_FIELD_CHARS).collect();
    defuse(&value).trim().to_string()
}

/// Tags as they are written: each one a single word the parser splits out again (no white
/// space, no commas), at most 100 characters, without duplicates and at most [`MAX_TAGS`].
fn header_tags(tags: &[String]) -> Vec<String> {
    let mut written: Vec<String> = Vec::new();
    for tag in tags {
        let word: String = tag
            .chars()
            .filter(|c| !c.is_whitespace() && !c.is_control() && *c != ',')
            .filter(|c| *c != '\u{2028}' && *c != '\u{2029}')
            .collect();
        let word: String = defuse(&word).chars().take(100).collect();
        if !word.is_empty() && !written.contains(&word) && written.len() < MAX_TAGS {
            written.push(word);
        }
    }
    written
}

/// Removes every `*/` (a `/` right after a `*` is dropped, in one pass, so no new `*/` can form)
/// and every `@private`'s `@` (repeated until none is left, as removing one `@` can make
/// another `@private`).
fn defuse(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c == '/' && out.ends_with('*') {
            continue;
        }
        out.push(c);
    }
    while let Some(at) = out.find("@private") {
        out.remove(at);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// An interpolated field: one line, trimmed, at most `max` characters (ending in `…` when cut).
fn field(value: &str, max: usize) -> String {
    let value = one_line(value);
    let value = value.trim();
    cut_chars(value, max).unwrap_or_else(|| value.to_string())
}

/// An optional field that is shown only when it says something.
fn present(value: Option<&str>, max: usize) -> Option<String> {
    value.map(|v| field(v, max)).filter(|v| !v.is_empty())
}

/// `1 skill`, `2 skills`, `0 skills`. Takes an `i128` so every count (`usize` or `i64`) fits.
fn counted(n: i128, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The text cut after its last whole line that fits in `cap` bytes: the hard guarantee behind
/// every cap, whatever the input. A line end is always a character boundary.
fn whole_lines_within(mut text: String, cap: usize) -> String {
    if text.len() > cap {
        let keep = text.as_bytes()[..cap]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        text.truncate(keep);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{digest, header};
    use proptest::prelude::*;

    fn sibling(agent: &str, name: &str, score: f64, topics: &[&str]) -> SiblingSkill {
        SiblingSkill {
            agent: agent.into(),
            name: name.into(),
            version: 1,
            score,
            runs: 10,
            goal: None,
            preconditions: None,
            topics: topics.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn lesson(author: &str, text: &str, at: i64) -> LessonEntry {
        LessonEntry {
            author: author.into(),
            text: text.into(),
            at,
            line: 1,
        }
    }

    fn own(name: &str, sibling_runs: i64) -> OwnSharedSkill {
        OwnSharedSkill {
            name: name.into(),
            version: 1,
            used_by: 0,
            sibling_runs,
            failures_7d: 0,
            copies: Vec::new(),
        }
    }

    /// The family skills that exist and are shared in these tests.
    fn shared(reference: &str) -> bool {
        matches!(
            reference,
            "buzz/mine-iron" | "pickles/chop-oaks" | "buzz/fish"
        )
    }

    fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
        text.split('\n')
            .skip_while(|line| *line != heading)
            .skip(1)
            .take_while(|line| !line.starts_with("## "))
            .filter(|line| line.starts_with("- ") || line.starts_with("### "))
            .collect()
    }

    #[test]
    fn index_starts_with_the_heading_and_how_to_copy_a_skill() {
        let index = render_index("buzz", &[], &[], &[], &shared);
        assert!(index.starts_with("# Family skills\n\nRead-only: "));
        assert!(index.contains("copy its file into bots/buzz/ and keep its From: line"));
        assert!(!index.contains("## Your shared skills"));
        assert!(index.contains("## Topics\nNone yet.\n"));
        assert!(index.ends_with("## Best skills per topic\nNo sibling shares a skill yet.\n"));
    }

    #[test]
    fn topics_are_counted_by_skills_and_lessons_most_used_first() {
        let siblings = [
            sibling("pickles", "ghost", 700.0, &["quest:restless-ghost"]),
            sibling(
                "rnchk",
                "ghost",
                650.0,
                &["Quest:Restless-Ghost", "place:lumbridge"],
            ),
            sibling("rnchk", "ghost", 640.0, &["quest:restless-ghost"]),
            sibling("rnchk", "oaks", 640.0, &["item:oak-logs"]),
        ];
        let lessons = [
            lesson(
                "pickles",
                "[quest:restless-ghost] Father Aereck is in the church",
                1,
            ),
            lesson("rnchk", "quest:restless-ghost needs a ghostspeak amulet", 2),
            lesson("rnchk", "[item:oak-logs] [quest:restless-ghost] third", 3),
            lesson("rnchk", "[skill:pickles/chop-oaks] keeps going", 4),
        ];
        let index = render_index("buzz", &[], &siblings, &lessons, &shared);
        assert_eq!(
            section(&index, "## Topics"),
            [
                "- quest:restless-ghost (2 skills, 3 lessons)",
                "- item:oak-logs (1 skill, 1 lesson)",
                "- place:lumbridge (1 skill, 0 lessons)",
            ]
        );
    }

    #[test]
    fn the_own_section_matches_the_spec_example() {
        let mut mine = own("mine-iron", 30);
        mine.used_by = 2;
        mine.failures_7d = 3;
        mine.copies = vec![("rnchk/mine-iron".into(), 2)];
        let lessons = [
            lesson(
                "pickles",
                "[skill:buzz/mine-iron] fails when the inventory is full",
                1,
            ),
            lesson(
                "rnchk",
                "skill:buzz/mine-iron is slow near skill:pickles/chop-oaks",
                2,
            ),
            lesson("rnchk", "[skill:buzz/fish] fine", 3),
        ];
        let index = render_index("buzz", &[mine], &[], &lessons, &shared);
        assert!(index.contains(
            "\n## Your shared skills (siblings' use; their feedback is tagged [skill:buzz/<name>] in LESSONS.md)\n\
             - mine-iron v1: used by 2 siblings, 3 failures in 7 days, 1 improved copy (rnchk/mine-iron v2), 2 feedback lessons\n"
        ), "{index}");
    }

    #[test]
    fn own_lines_write_zero_counts_and_singulars() {
        let mut one = own("a", 1);
        one.used_by = 1;
        one.failures_7d = 1;
        one.copies = vec![("x/a".into(), 2), ("y/a".into(), 3)];
        let index = render_index(
            "buzz",
            &[own("b", 0), one],
            &[],
            &[lesson("x", "[skill:buzz/a] ok", 1)],
            &|r: &str| r == "buzz/a",
        );
        assert_eq!(
            section(
                &index,
                "## Your shared skills (siblings' use; their feedback is tagged [skill:buzz/<name>] in LESSONS.md)"
            ),
            [
                "- a v1: used by 1 sibling, 1 failure in 7 days, 2 improved copies (x/a v2, y/a v3), 1 feedback lesson",
                "- b v1: used by 0 siblings, 0 failures in 7 days, 0 improved copies, 0 feedback lessons",
            ]
        );
    }

    #[test]
    fn own_lines_are_the_ten_most_used() {
        let mut skills: Vec<OwnSharedSkill> =
            (0..15).map(|i| own(&format!("s{i:02}"), i)).collect();
        skills[3].used_by = 9; // Ties on runs are broken by siblings using it.
        skills.push({
            let mut tie = own("s03b", 3);
            tie.used_by = 1;
            tie
        });
        let index = render_index("buzz", &skills, &[], &[], &shared);
        let lines = section(
            &index,
            "## Your shared skills (siblings' use; their feedback is tagged [skill:buzz/<name>] in LESSONS.md)",
        );
        assert_eq!(lines.len(), OWN_SKILL_LINES);
        assert!(lines[0].starts_with("- s14 v1"));
        assert!(lines[9].starts_with("- s05 v1"));
        assert!(!index.contains("s03"));
    }

    #[test]
    fn many_improved_copies_are_named_up_to_three() {
        let mut mine = own("a", 1);
        mine.copies = (0..5).map(|i| (format!("s{i}/a"), 1)).collect();
        let index = render_index("buzz", &[mine], &[], &[], &shared);
        assert!(index.contains("5 improved copies (s0/a v1, s1/a v1, s2/a v1, +2 more)"));
    }

    #[test]
    fn best_skills_per_topic_are_the_three_best_then_other_skills() {
        let mut best = sibling("pickles", "mine-iron", 712.4, &["item:iron-ore"]);
        best.runs = 14;
        best.goal = Some("mine iron ore in Varrock east".into());
        best.preconditions = Some("a pickaxe".into());
        let siblings = [
            sibling("a", "w", 500.0, &["item:iron-ore"]),
            best,
            sibling("b", "x", 690.0, &["item:iron-ore"]),
            sibling("c", "y", 600.0, &["item:iron-ore"]),
            sibling("d", "walk", 300.0, &[]),
            sibling("e", "bank", 800.0, &["skill:e/x"]),
        ];
        let index = render_index("buzz", &[], &siblings, &[], &shared);
        assert_eq!(
            section(&index, "## Best skills per topic"),
            [
                "### item:iron-ore",
                "- pickles/mine-iron.ts — score 712, 14 runs — mine iron ore in Varrock east — needs: a pickaxe",
                "- b/x.ts — score 690, 10 runs",
                "- c/y.ts — score 600, 10 runs",
                "### Other skills",
                "- e/bank.ts — score 800, 10 runs",
                "- d/walk.ts — score 300, 10 runs",
            ]
        );
    }

    #[test]
    fn a_long_goal_is_cut_with_an_ellipsis() {
        let mut skill = sibling("a", "b", 1.0, &[]);
        skill.goal = Some("g".repeat(300));
        skill.runs = 1;
        let index = render_index("buzz", &[], &[skill], &[], &shared);
        let line = index.lines().find(|l| l.starts_with("- a/b.ts")).unwrap();
        assert_eq!(
            line,
            format!("- a/b.ts — score 1, 1 run — {}…", "g".repeat(119))
        );
    }

    #[test]
    fn interpolated_fields_cannot_add_lines() {
        let mut skill = sibling("a\nb", "c\r\n## Topics", 1.0, &["quest:x"]);
        skill.goal = Some("one\ntwo\u{2028}three".into());
        let index = render_index(
            "evil\n# Family",
            &[own("x\n- y", 1)],
            &[skill],
            &[lesson("z\nq", "l1\nl2", 1)],
            &shared,
        );
        assert_eq!(index.lines().filter(|l| *l == "## Topics").count(), 1);
        assert!(index.lines().all(|line| !line.starts_with("l2")));
        assert_eq!(index.lines().filter(|l| l.starts_with("# ")).count(), 1);
        assert!(!index.contains('\r'));
    }

    #[test]
    fn over_the_cap_second_best_skills_go_before_any_topics_best() {
        let mut siblings = Vec::new();
        for topic in 0..40 {
            for rank in 0..3 {
                let mut skill = sibling(
                    &format!("agent{rank}"),
                    &format!("skill-{topic}"),
                    900.0 - f64::from(rank) * 100.0,
                    &[&format!("quest:topic-{topic:02}")],
                );
                skill.goal = Some("a goal long enough to fill the index quickly".into());
                siblings.push(skill);
            }
        }
        let owns: Vec<OwnSharedSkill> = (0..10).map(|i| own(&format!("own-{i}"), i)).collect();
        let index = render_index("buzz", &owns, &siblings, &[], &shared);
        assert!(index.len() <= INDEX_CAP);
        assert!(index.ends_with('\n'));
        // Every topic line and every own line survive; best lines were cut, rank 0 last.
        assert_eq!(section(&index, "## Topics").len(), 40);
        assert_eq!(index.matches("- own-").count(), 10);
        let best = section(&index, "## Best skills per topic");
        let first_ranked = best.iter().filter(|l| l.starts_with("- agent0/")).count();
        let others = best
            .iter()
            .filter(|l| l.starts_with("- agent1/") || l.starts_with("- agent2/"))
            .count();
        assert!(first_ranked > 0 && others == 0, "{best:?}");
        // The kept topics are the first ones, and no heading is left without lines.
        assert!(best[0] == "### quest:topic-00" && best[1].starts_with("- agent0/skill-0.ts "));
        for pair in best.windows(2) {
            assert!(
                !(pair[0].starts_with("###") && pair[1].starts_with("###")),
                "{best:?}"
            );
        }
        assert!(best.last().unwrap().starts_with("- "));
    }

    #[test]
    fn over_the_cap_the_least_used_own_skills_go_after_all_best_skills_and_topics_last() {
        let skills_on = |count: usize| -> Vec<SiblingSkill> {
            (0..count)
                .map(|i| {
                    let topic = format!("quest:a-rather-long-topic-name-{i:03}");
                    // Earlier topics are used by more lessons, so they rank first.
                    sibling("s", &format!("k{i}"), 1.0, &[topic.as_str()])
                })
                .collect()
        };
        let owns: Vec<OwnSharedSkill> = (0..10).map(|i| own(&format!("own-{i}"), i)).collect();
        let own_heading = "## Your shared skills (siblings' use; their feedback is tagged [skill:buzz/<name>] in LESSONS.md)";

        let index = render_index("buzz", &owns, &skills_on(60), &[], &shared);
        assert!(index.len() <= INDEX_CAP);
        assert!(!index.contains("## Best skills per topic"));
        let kept = section(&index, own_heading);
        assert!(!kept.is_empty() && kept.len() < 10, "{kept:?}");
        assert!(kept[0].starts_with("- own-9 "));
        assert!(!index.contains("- own-0 "));
        assert_eq!(section(&index, "## Topics").len(), 60);

        let lessons: Vec<LessonEntry> = (0..5)
            .map(|i| lesson("x", "[quest:a-rather-long-topic-name-150]", i))
            .collect();
        let index = render_index("buzz", &owns, &skills_on(200), &lessons, &shared);
        assert!(index.len() <= INDEX_CAP);
        assert!(!index.contains(own_heading));
        let topics = section(&index, "## Topics");
        assert!(topics.len() < 200);
        assert_eq!(
            topics[0],
            "- quest:a-rather-long-topic-name-150 (1 skill, 5 lessons)"
        );
        assert_eq!(
            topics[1],
            "- quest:a-rather-long-topic-name-000 (1 skill, 0 lessons)"
        );
    }

    #[test]
    fn lessons_list_feedback_on_the_readers_skills_first_newest_first() {
        let lessons = [
            lesson(
                "pickles",
                "[skill:buzz/mine-iron] fails when the inventory is full, bank first",
                10,
            ),
            lesson(
                "rnchk",
                "[quest:restless-ghost] Father Aereck is in the church",
                30,
            ),
            lesson(
                "rnchk",
                "skill:buzz/fish works at skill:pickles/chop-oaks too",
                20,
            ),
            lesson("rnchk", "[skill:pickles/chop-oaks] needs an axe", 40),
            lesson("rnchk", "[skill:pickles/gone] old advice", 5),
        ];
        let text = render_lessons("buzz", &lessons, &shared);
        assert_eq!(
            text,
            "# Lessons from your family\n\nRead-only: the lessons your siblings shared from their lab logs (their Share: lines), newest first, tags first and the author last. Share your own as a Share: line in your lab_log.md.\n\
             \n## Feedback on your shared skills\n\
             - [skill:buzz/fish] [skill:pickles/chop-oaks] skill:buzz/fish works at skill:pickles/chop-oaks too (rnchk)\n\
             - [skill:buzz/mine-iron] fails when the inventory is full, bank first (pickles)\n\
             \n## Lessons\n\
             - [skill:pickles/chop-oaks] needs an axe (rnchk)\n\
             - [quest:restless-ghost] Father Aereck is in the church (rnchk)\n\
             - pickles/gone old advice (rnchk)\n"
        );
    }

    #[test]
    fn lessons_seen_at_once_are_ordered_by_their_line() {
        let mut a = lesson("x", "written-earlier", 7);
        a.line = 1;
        let mut b = lesson("x", "written-later", 7);
        b.line = 2;
        let text = render_lessons("buzz", &[a, b], &shared);
        assert!(text.find("written-later").unwrap() < text.find("written-earlier").unwrap());
    }

    #[test]
    fn no_lessons_and_only_feedback_read_sensibly() {
        let none = render_lessons("buzz", &[], &shared);
        assert!(
            !none.contains("## Feedback"),
            "no empty feedback heading: {none}"
        );
        assert!(none.ends_with("\n## Lessons\nNo sibling shares a lesson yet.\n"));
        let only = render_lessons("buzz", &[lesson("x", "[skill:buzz/fish] ok", 1)], &shared);
        assert!(only.ends_with("## Feedback on your shared skills\n- [skill:buzz/fish] ok (x)\n"));
    }

    #[test]
    fn over_the_cap_the_oldest_lessons_go_first_and_feedback_stays() {
        let mut lessons: Vec<LessonEntry> = (0..200)
            .map(|i| {
                lesson(
                    "rnchk",
                    &format!("lesson number {i:03} {}", "x".repeat(80)),
                    i,
                )
            })
            .collect();
        lessons.push(lesson("pickles", "[skill:buzz/fish] oldest feedback", -1));
        let text = render_lessons("buzz", &lessons, &shared);
        assert!(text.len() <= LESSONS_CAP);
        assert!(text.contains("- [skill:buzz/fish] oldest feedback (pickles)\n"));
        assert!(text.contains("lesson number 199"));
        assert!(!text.contains("lesson number 000"));
        let kept: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("lesson number"))
            .collect();
        assert!(kept.windows(2).all(|w| w[0] > w[1]));
    }

    #[test]
    fn the_skill_file_header_matches_the_spec_layout() {
        let tags = vec!["quest:x".to_string(), "item:oak-logs".to_string()];
        let topics = vec!["item:oak-logs".to_string()];
        let header = SkillFileHeader {
            name: "chop-oaks",
            goal: Some("chop oaks west of Draynor"),
            preconditions: Some("an axe"),
            params: Some("none"),
            result: Some("logs in the bank"),
            tags: &tags,
            from: "buzz/chop-oaks",
            topics: &topics,
        };
        assert_eq!(
            render_skill_file(&header, "await a();\n"),
            "/** @skill chop-oaks\n * Goal: chop oaks west of Draynor\n * Preconditions: an axe\n * Params: none\n * Result: logs in the bank\n * Tags: quest:x, item:oak-logs\n * From: buzz/chop-oaks\n * Topics: item:oak-logs\n */\nawait a();\n"
        );
    }

    #[test]
    fn missing_and_empty_fields_are_left_out() {
        let header = SkillFileHeader {
            name: "x",
            goal: Some("  "),
            from: "buzz/x",
            ..SkillFileHeader::default()
        };
        assert_eq!(
            render_skill_file(&header, "a();\n"),
            "/** @skill x\n * From: buzz/x\n */\na();\n"
        );
    }

    #[test]
    fn a_value_cannot_close_the_comment_or_make_the_copy_private() {
        let tags = vec!["a*/b".to_string()];
        let header = SkillFileHeader {
            name: "x",
            goal: Some("ends */ early **// and @@private"),
            tags: &tags,
            from: "buzz/x",
            ..SkillFileHeader::default()
        };
        let file = render_skill_file(&header, "a();\n");
        assert_eq!(file.matches("*/").count(), 1);
        let (parsed, diagnostics) = header::parse(&file);
        let parsed = parsed.unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert!(!parsed.private);
        assert_eq!(
            parsed.goal.as_deref(),
            Some(
                "ends * early ** and @private"
                    .replace("@private", "private")
                    .as_str()
            )
        );
        assert_eq!(parsed.tags, ["a*b"]);
        assert_eq!(digest::code_without_header(&file), "a();\n");
    }

    /// Pieces of text that matter to the renderers: words, multi-byte letters, line breaks of
    /// every kind, brackets, tags and references, `*/`, `@private`, separators. Texts are made
    /// of these rather than of `\PC`, whose generation made these tests take minutes.
    const PIECES: &[&str] = &[
        "a",
        "mine",
        "Iron",
        " ",
        "  ",
        "é",
        "€",
        "😀",
        "\t",
        "\u{85}",
        "\u{2028}",
        "\u{feff}",
        "\r",
        "\n",
        "\r\n",
        "[",
        "]",
        "skill:a/b",
        "skill:buzz/x.ts",
        "quest:x",
        "Place:Al-Kharid",
        "*",
        "/",
        "*/",
        "@private",
        "@",
        ",",
        ":",
        "-",
        ".",
        "#",
    ];

    /// Up to `max` pieces run together.
    fn pieces(max: usize) -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 0..=max)
            .prop_map(|parts| parts.concat())
    }

    /// A name as a caller might pass it: usually a short plain one, sometimes any text.
    fn name_like() -> impl Strategy<Value = String> {
        prop_oneof!["[a-z]{1,3}".boxed(), pieces(30).boxed()]
    }

    /// Up to `repeat` times a short text: long texts are made by repetition, which is cheap.
    fn long_text(repeat: usize) -> impl Strategy<Value = String> {
        (pieces(16), 1..=repeat).prop_map(|(piece, times)| piece.repeat(times))
    }

    /// How many `- ` lines stand under each `## ` heading.
    fn listed_lines(text: &str) -> BTreeMap<&str, usize> {
        let mut listed = BTreeMap::new();
        let mut heading = "";
        for line in text.lines() {
            if line.starts_with("## ") {
                heading = line;
                listed.insert(heading, 0);
            } else if line.starts_with("- ") {
                *listed.entry(heading).or_insert(0) += 1;
            }
        }
        listed
    }

    fn header_fields(h: &header::Header) -> [Option<String>; 4] {
        [
            h.goal.clone(),
            h.preconditions.clone(),
            h.params.clone(),
            h.result.clone(),
        ]
    }

    fn any_own_skills() -> impl Strategy<Value = Vec<OwnSharedSkill>> {
        let copies = proptest::collection::vec((name_like(), any::<i64>()), 0..6);
        let skill = (
            name_like(),
            any::<i64>(),
            0usize..5,
            any::<i64>(),
            any::<i64>(),
            copies,
        );
        proptest::collection::vec(skill, 0..15).prop_map(|skills| {
            skills
                .into_iter()
                .map(
                    |(name, version, used_by, sibling_runs, failures_7d, copies)| OwnSharedSkill {
                        name,
                        version,
                        used_by,
                        sibling_runs,
                        failures_7d,
                        copies,
                    },
                )
                .collect()
        })
    }

    fn any_siblings() -> impl Strategy<Value = Vec<SiblingSkill>> {
        let topic = prop_oneof!["(quest|item|skill):[a-c]{1,2}".boxed(), pieces(3).boxed()];
        let skill = (
            (name_like(), name_like(), any::<f64>(), any::<i64>()),
            proptest::option::of(long_text(60)),
            proptest::option::of(long_text(60)),
            proptest::collection::vec(topic, 0..4),
        );
        proptest::collection::vec(skill, 0..60).prop_map(|skills| {
            skills
                .into_iter()
                .map(
                    |((agent, name, score, runs), goal, preconditions, topics)| SiblingSkill {
                        agent,
                        name,
                        version: 1,
                        score,
                        runs,
                        goal,
                        preconditions,
                        topics,
                    },
                )
                .collect()
        })
    }

    fn any_lessons(count: usize, repeat: usize) -> impl Strategy<Value = Vec<LessonEntry>> {
        let lesson = (name_like(), long_text(repeat), any::<i64>(), any::<usize>());
        proptest::collection::vec(lesson, 0..count).prop_map(|lessons| {
            lessons
                .into_iter()
                .map(|(author, text, at, line)| LessonEntry {
                    author,
                    text,
                    at,
                    line,
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn the_index_fits_the_cap_for_any_input(
            reader in name_like(),
            owns in any_own_skills(),
            siblings in any_siblings(),
            lessons in any_lessons(60, 30),
        ) {
            let shared = |r: &str| r.len().is_multiple_of(2);
            let index = render_index(&reader, &owns, &siblings, &lessons, &shared);
            prop_assert!(index.len() <= INDEX_CAP, "{} bytes", index.len());
            prop_assert!(index.ends_with('\n'));
            prop_assert!(index.starts_with("# Family skills\n"));
            prop_assert!(!index.contains('\r'));
            // The cut order: no best-skills line while an own skill or a topic line is missing,
            // and no own-skill line while a topic line is missing.
            let views: Vec<LessonView> = lessons.iter().map(|l| lesson_view(l, &shared)).collect();
            let all_topics = topic_order(&unique_skills(&siblings), &views).len();
            let listed = listed_lines(&index);
            let topics_kept = listed.get("## Topics").copied().unwrap_or(0);
            let own_kept = listed
                .iter()
                .find(|(heading, _)| heading.starts_with("## Your shared skills"))
                .map_or(0, |(_, n)| *n);
            let best_kept = listed.get("## Best skills per topic").copied().unwrap_or(0);
            if best_kept > 0 {
                prop_assert_eq!(own_kept, owns.len().min(OWN_SKILL_LINES));
            }
            if own_kept > 0 || best_kept > 0 {
                prop_assert_eq!(topics_kept, all_topics);
            }
        }

        #[test]
        fn lessons_fit_the_cap_for_any_input(
            reader in prop_oneof![Just("a".to_string()).boxed(), name_like().boxed()],
            lessons in any_lessons(80, 40),
        ) {
            let shared = |r: &str| r.starts_with('a');
            let text = render_lessons(&reader, &lessons, &shared);
            prop_assert!(text.len() <= LESSONS_CAP, "{} bytes", text.len());
            prop_assert!(text.ends_with('\n'));
            prop_assert!(text.starts_with("# Lessons from your family\n"));
            prop_assert!(!text.contains('\r'));
            // No feedback is left out while an ordinary lesson is kept.
            let listed = listed_lines(&text);
            if listed.get("## Lessons").copied().unwrap_or(0) > 0 {
                let own_prefix = format!("skill:{}/", field(&reader, NAME_CHARS));
                let feedback = lessons
                    .iter()
                    .filter(|l| lesson_view(l, &shared).tags.iter().any(|t| t.starts_with(&own_prefix)))
                    .count();
                let kept = listed.get("## Feedback on your shared skills").copied().unwrap_or(0);
                prop_assert_eq!(kept, feedback);
            }
        }

        #[test]
        fn the_skill_file_round_trips_through_the_header_parser_and_the_digest(
            name in "[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}",
            fields in proptest::collection::vec(proptest::option::of(long_text(120)), 4),
            tags in proptest::collection::vec(long_text(12), 0..80),
            topics in proptest::collection::vec(
                prop_oneof!["(quest|item):[a-z]{1,8}".boxed(), long_text(2).boxed()],
                0..5,
            ),
            from in "[a-z0-9]{1,10}/[a-z0-9-]{1,20}",
            code in pieces(40),
        ) {
            // Code as stored: `\n` line ends and no leading blank lines.
            let code = code.replace('\r', "").trim_start_matches('\n').to_string();
            let header = SkillFileHeader {
                name: &name,
                goal: fields[0].as_deref(),
                preconditions: fields[1].as_deref(),
                params: fields[2].as_deref(),
                result: fields[3].as_deref(),
                tags: &tags,
                from: &from,
                topics: &topics,
            };
            let file = render_skill_file(&header, &code);
            let (parsed, diagnostics) = header::parse(&file);
            prop_assert!(diagnostics.is_empty(), "{diagnostics:?}");
            let parsed = parsed.expect("the rendered header parses");
            prop_assert_eq!(&parsed.name, &name);
            let expected: Vec<Option<String>> = fields
                .iter()
                .map(|f| f.as_deref().map(header_value).filter(|v| !v.is_empty()))
                .collect();
            prop_assert_eq!(header_fields(&parsed).to_vec(), expected);
            prop_assert_eq!(&parsed.tags, &header_tags(&tags));
            prop_assert_eq!(&parsed.topics, &header_tags(&topics));
            prop_assert_eq!(parsed.from.as_deref(), Some(from.as_str()));
            prop_assert!(!parsed.private);
            prop_assert_eq!(digest::code_without_header(&file), code);
        }

        #[test]
        fn clean_values_are_written_exactly_as_given(
            goal in "[!-~]([ -~]{0,200}[!-~])?",
            tags in proptest::collection::btree_set("[a-z]{1,8}:[a-z0-9-]{1,20}", 0..10),
        ) {
            prop_assume!(!goal.contains("*/") && !goal.contains("@private"));
            let tags: Vec<String> = tags.into_iter().collect();
            let header = SkillFileHeader {
                name: "x",
                goal: Some(&goal),
                tags: &tags,
                topics: &tags,
                from: "a/x",
                ..SkillFileHeader::default()
            };
            let (parsed, _) = header::parse(&render_skill_file(&header, "a();\n"));
            let parsed = parsed.unwrap();
            prop_assert_eq!(parsed.goal.as_deref(), Some(goal.as_str()));
            prop_assert_eq!(&parsed.tags, &tags);
            prop_assert_eq!(&parsed.topics, &tags);
        }
    }
}
