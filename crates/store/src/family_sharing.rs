//! What a family shares: its shared skills, how siblings use them, the sharing changes and the
//! lessons, and the writes that change them outside recording (the bar lowered, a file gone,
//! the lab log's `Share:` lines).

use crate::{
    AgentId, FamilyReuse, Lesson, LessonsChange, Millis, NewLesson, OwnerId, Result, SharedSkill,
    SharingChange, SiblingUse, SkillId,
};

/// The family's shared skills and lessons.
pub trait FamilySharing {
    /// Every skill the family shares now, with its versions' standing.
    fn shared_skills(&self, owner: OwnerId) -> Result<Vec<SharedSkill>>;
    /// How the family's other avatars use a skill (any version, or a copy of it).
    fn sibling_use(&self, owner: OwnerId, skill: SkillId, since: Millis) -> Result<SiblingUse>;
    /// Sharing changes of an agent's skills since a time, oldest first.
    fn sharing_changes(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SharingChange>>;
    /// Every lesson of the family, newest first.
    fn lessons(&self, owner: OwnerId) -> Result<Vec<Lesson>>;
    /// How the family reused its family skills since a time.
    fn family_reuse(&self, owner: OwnerId, since: Millis) -> Result<FamilyReuse>;
    /// Makes an agent's lessons exactly these `Share:` lines (a line gone from the lab log is
    /// un-shared; a line kept keeps its first-seen time).
    fn replace_lessons(
        &self,
        owner: OwnerId,
        agent: AgentId,
        lessons: &[NewLesson],
        now: Millis,
    ) -> Result<LessonsChange>;
    /// Shares every headed skill of the agent whose current version clears the family's bar
    /// (the bar may have been lowered since the last run).
    fn share_qualified(
        &self,
        owner: OwnerId,
        agent: AgentId,
        now: Millis,
    ) -> Result<Vec<SharingChange>>;
    /// Marks a skill's file as gone (deleted or renamed): a shared skill stops being shared;
    /// its history is kept.
    fn mark_file_gone(
        &self,
        owner: OwnerId,
        skill: SkillId,
        now: Millis,
    ) -> Result<Option<SharingChange>>;
}
