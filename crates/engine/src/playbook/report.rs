//! What a report of a skill's failure says, in a module of its own: refine files it and the
//! fixer is started on it, and refine starts the fixer, so neither imports the other for it.

/// A report: the skill, the revision followed, and the step that failed, was wrong or is
/// missing. `turn` is where the record of that turn is on disk, when the host knows.
#[derive(Debug, Clone)]
pub struct Report {
    pub skill: String,
    pub revision: u32,
    pub step: u32,
    pub turn: Option<String>,
}
