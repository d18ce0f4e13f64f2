//! The avatars' face: rs-sdk avatars whose scripts become skills shared with their family.
//!
//! What only this face reads and writes lives here: the event contract a host reports a tool
//! call in, rs-sdk's printed output, lab-log lessons, topic tags and their vocabulary, the
//! sharing bar, the `family-skills/` texts and the start-up instructions. The mechanisms every
//! face shares (digests, the `@skill` header the digest strips, secrets, scores, shell lines)
//! stay at the crate's top.

mod event;
mod instructions;
mod lessons;
mod mirror_text;
mod rs_output;
mod sharing;
mod topics;
mod vocabulary;

// What the crate root's `pub use` list takes from these files.
pub use event::{
    Call, Event, EventError, EventKind, MAX_SCRIPTS_AT_START, RawEvent, check as check_event,
    check_control_characters, parse_line,
};
pub use instructions::text as instructions_text;
pub use lessons::{
    LessonView, MAX_LESSON_CHARS, leading_tags_end, render_line, share_lines, view as lesson_view,
};
pub use mirror_text::{
    INDEX_CAP, LESSONS_CAP, LessonEntry, OwnSharedSkill, SiblingSkill, SkillFileHeader,
    render_index, render_lessons, render_skill_file,
};
pub use rs_output::{RunOutput, command_cuts_output, measure_against, parse_run_output};
pub use sharing::{SharingBar, VersionStanding, version_for_siblings};
pub use topics::{TOPIC_KINDS, exact_tags, normalize_tag};
pub use vocabulary::{Entry, Source, Vocabulary, parse_listing};
