//! The playbook face: an assistant's skills written down as `SKILL.md` procedures.
//!
//! What only this face reads lives here: the skill file, the human's `permissions.yaml`, the
//! comparison of a skill's live revision with the one before it, and the host's transcript with
//! the observer that reads repeated work from it.

pub mod fisher;
pub mod observer;
pub mod permissions;
pub mod skill_file;
pub mod transcript;
