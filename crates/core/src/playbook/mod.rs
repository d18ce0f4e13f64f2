//! The playbook face: an assistant's skills written down as `SKILL.md` procedures.
//!
//! What only this face reads lives here: the skill file, the human's `permissions.yaml`, the
//! comparison of a skill's live revision with the one before it, and the host's transcript with
//! the observer that reads repeated work from it.

mod fisher;
mod observer;
mod permissions;
mod skill_file;
mod transcript;

// What the crate root's `pub use` list takes from these files.
pub use fisher::{Comparison, MIN_READS, Verdict, compare_revisions};
pub use observer::{
    MAX_STEPS, MIN_STEPS, MIN_TURNS, describe as describe_repeat, redone_in_last_turn,
};
pub use permissions::{Act, Permissions, Policy};
pub use skill_file::{
    CheckContext, MAX_SKILL_BYTES, SkillFile, Status, Step, blocking_checks, owed_fields,
    parse as parse_skill_file, render as render_skill, tool_sequence,
};
pub use transcript::parse as parse_transcript;
