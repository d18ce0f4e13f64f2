//! The family's answer for one agent, and the `family-skills/` mirror written from it.
//!
//! Architecture invariant: the mirror is written only from the library's answer for the
//! agent it is for. That answer is built here from the store's owner-filtered queries, so
//! another owner's skills, lessons and runs cannot reach it; the reader's own lessons and
//! skills are left out of the sibling sections; every text is scrubbed again before it is
//! written.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use mindrune_core::Scrubber;
use mindrune_core::is_valid_name;
use mindrune_core::sha256;
use mindrune_core::{
    LessonEntry, OwnSharedSkill, SiblingSkill, SkillFileHeader, render_index, render_lessons,
    render_skill_file,
};
use mindrune_core::{SharingBar, VersionStanding, version_for_siblings};
use mindrune_store::{
    Agent, Millis, Owner, OwnerId, SharedSkill, Skill, Store, StoreError, VersionId, VersionSummary,
};

use crate::avatars::ingest::now_millis;
use crate::avatars::mirror_writer::{self, MirrorError, RefreshReport, Wanted};

/// The directory name of the mirror in an agent's workspace.
pub const MIRROR_DIR: &str = "family-skills";
/// "Failures in 7 days".
const FAILURE_WINDOW_MS: Millis = 7 * 24 * 60 * 60 * 1000;
/// Bumped when the skill files' layout changes, so every mirror is rewritten once.
const MIRROR_FORMAT: &str = "mindrune-mirror-1";

#[derive(Debug, thiserror::Error)]
pub enum FamilyError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Mirror(#[from] MirrorError),
}

impl FamilyError {
    /// Whether the library's or the mirror's disk is full.
    pub(crate) fn is_disk_full(&self) -> bool {
        match self {
            FamilyError::Store(err) => err.is_disk_full(),
            FamilyError::Mirror(crate::avatars::mirror_writer::MirrorError::Io {
                source, ..
            }) => crate::io_disk_full(source),
            FamilyError::Mirror(_) => false,
        }
    }
}

/// What a refresh of the mirror did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MirrorOutcome {
    Refreshed {
        dir: String,
        written: Vec<String>,
        removed: Vec<String>,
        unchanged: usize,
    },
    Skipped {
        reason: String,
    },
}

impl Default for MirrorOutcome {
    fn default() -> Self {
        MirrorOutcome::Skipped {
            reason: "not refreshed".into(),
        }
    }
}

/// One sibling's shared skill at the version siblings get.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MirroredSkill {
    /// `<agent>/<name>.ts` inside the mirror.
    pub(crate) path: String,
    pub(crate) shared: SharedSkill,
    pub(crate) version: VersionSummary,
}

/// The library's answer for one agent: what its `family-skills/` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyAnswer {
    pub index: String,
    pub(crate) lessons: String,
    pub(crate) skills: Vec<MirroredSkill>,
    /// The owner's key digest: a new key (`mindrune owner key`) rewrites every file once.
    scrub_key: String,
}

/// Where an agent's `family-skills/` is, relative to its workspace: `family-skills` in a
/// sandbox of its own, or what setup chose (`bots/<bot>/family-skills` in a shared checkout).
pub fn mirror_relative(agent: &Agent) -> &str {
    agent.mirror.as_deref().unwrap_or(MIRROR_DIR)
}

/// The mirror directory of an agent: `<workspace>/family-skills`, or where setup put it.
pub fn default_dir(agent: &Agent) -> PathBuf {
    Path::new(&agent.workspace).join(mirror_relative(agent))
}

/// Builds the answer for `reader` from the library.
pub fn answer(store: &dyn Store, reader: &Agent) -> Result<FamilyAnswer, FamilyError> {
    let owner = store.owner(reader.owner)?;
    // The owner's key is scrubbed by its shape: the library keeps only its digest.
    let scrubber = Scrubber::new(&[]);
    answer_with(store, reader, &owner, &scrubber)
}

/// [`answer`] with the owner and its scrubber already at hand (a refresh needs both again to
/// write the skill files, and building a scrubber is not free).
fn answer_with(
    store: &dyn Store,
    reader: &Agent,
    owner: &Owner,
    scrubber: &Scrubber,
) -> Result<FamilyAnswer, FamilyError> {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let scrub = |text: &str| scrubber.scrub(text).text.into_owned();
    let now = now_millis();

    let shared = store.shared_skills(owner.id)?;
    let labels: HashSet<String> = shared
        .iter()
        .map(|s| format!("{}/{}", s.skill.agent_name, s.skill.name))
        .collect();
    let is_shared = |label: &str| labels.contains(label);

    let mut skills = Vec::new();
    let mut siblings = Vec::new();
    let mut own = Vec::new();
    let mut paths = HashSet::new();
    for skill in shared {
        let standings: Vec<VersionStanding> = skill.versions.iter().map(Into::into).collect();
        let Some(index) = version_for_siblings(&standings, bar) else {
            continue;
        };
        let version = skill.versions[index].clone();
        if skill.skill.agent == Some(reader.id) {
            let usage = store.sibling_use(owner.id, skill.skill.id, now - FAILURE_WINDOW_MS)?;
            own.push(OwnSharedSkill {
                name: skill.skill.name.clone(),
                version: version.number,
                used_by: usage.used_by,
                sibling_runs: usage.runs,
                failures_7d: usage.failures_since,
                copies: usage.copies,
            });
            continue;
        }
        let path = format!("{}/{}.ts", skill.skill.agent_name, skill.skill.name);
        // Names come from file names the library accepted; one that could not be a mirror
        // path (or a second skill at the same path) is left out rather than written oddly.
        if !is_valid_name(&skill.skill.agent_name)
            || !is_valid_name(&skill.skill.name)
            || !paths.insert(path.clone())
        {
            continue;
        }
        siblings.push(SiblingSkill {
            agent: skill.skill.agent_name.clone(),
            name: skill.skill.name.clone(),
            version: version.number,
            // As of now: a skill left unused drifts back to the middle in the best-skills list.
            score: version.score_at(now),
            runs: version.uses,
            goal: skill.skill.header.goal.as_deref().map(scrub),
            preconditions: skill.skill.header.preconditions.as_deref().map(scrub),
            topics: shown_topics(&skill.skill, scrubber),
        });
        skills.push(MirroredSkill {
            path,
            shared: skill,
            version,
        });
    }
    let lessons: Vec<LessonEntry> = store
        .lessons(owner.id)?
        .into_iter()
        .filter(|lesson| lesson.agent != reader.id)
        .map(|lesson| LessonEntry {
            author: lesson.agent_name,
            text: scrub(&lesson.text),
            at: lesson.first_seen_at,
            line: lesson.line,
        })
        .collect();
    let index = render_index(&reader.name, &own, &siblings, &lessons, &is_shared);
    let lessons = render_lessons(&reader.name, &lessons, &is_shared);
    Ok(FamilyAnswer {
        index,
        lessons,
        skills,
        // The key's digest is what `sha256(key)` was before only the digest was kept, so the
        // mirrors written then are not rewritten for it.
        scrub_key: owner.key_digest.clone(),
    })
}

/// The header a mirrored skill file carries.
fn file_header(skill: &MirroredSkill, scrubber: &Scrubber) -> String {
    let header = &skill.shared.skill.header;
    let scrub =
        |text: &Option<String>| text.as_deref().map(|t| scrubber.scrub(t).text.into_owned());
    let (goal, preconditions, params, result) = (
        scrub(&header.goal),
        scrub(&header.preconditions),
        scrub(&header.params),
        scrub(&header.result),
    );
    // Tags are kept as the header wrote them, unscrubbed: scrub them like every other field.
    let tags: Vec<String> = skill
        .shared
        .skill
        .tags
        .iter()
        .map(|tag| scrubber.scrub(tag).text.into_owned())
        .collect();
    let from = format!(
        "{}/{}",
        skill.shared.skill.agent_name, skill.shared.skill.name
    );
    render_skill_file(
        &SkillFileHeader {
            name: &skill.shared.skill.name,
            goal: goal.as_deref(),
            preconditions: preconditions.as_deref(),
            params: params.as_deref(),
            result: result.as_deref(),
            tags: &tags,
            from: &from,
            topics: &shown_topics(&skill.shared.skill, scrubber),
        },
        "",
    )
}

/// The header's topics that may be shown. Topics are derived from the header's words as
/// written and are lower case, so a secret written as a tag (`item:AKIA…`) would pass the
/// scrubber as its lower-cased topic: a topic spelled in the words before they are scrubbed
/// but not after is left out with the secret.
fn shown_topics(skill: &Skill, scrubber: &Scrubber) -> Vec<String> {
    let header = &skill.header;
    let fields = [
        &header.goal,
        &header.preconditions,
        &header.params,
        &header.result,
    ];
    let words = skill
        .tags
        .iter()
        .chain(fields.into_iter().flatten())
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n");
    let written = words.to_ascii_lowercase();
    let scrubbed = scrubber.scrub(&words).text.to_ascii_lowercase();
    header
        .topics
        .iter()
        .filter(|topic| !written.contains(topic.as_str()) || scrubbed.contains(topic.as_str()))
        .cloned()
        .collect()
}

/// What an agent's `family-skills/` should hold: every file with a key that changes when its
/// content does, and the content of any of them on demand. The local mirror writer and the
/// server's answer to a runner are built from the same plan, so both write the same bytes.
pub struct MirrorPlan<'s> {
    pub wanted: Vec<Wanted>,
    answer: FamilyAnswer,
    headers: HashMap<String, (String, VersionId)>,
    store: &'s dyn Store,
    owner: OwnerId,
    scrubber: Scrubber,
}

impl MirrorPlan<'_> {
    /// The content of one wanted file (scrubbed like every mirrored file).
    pub fn content(&self, path: &str) -> Result<String, MirrorError> {
        match path {
            "INDEX.md" => Ok(self.answer.index.clone()),
            "LESSONS.md" => Ok(self.answer.lessons.clone()),
            path => {
                let Some((header, version)) = self.headers.get(path) else {
                    return Err(MirrorError::Content {
                        path: path.to_string(),
                        message: "not a file of this mirror".into(),
                    });
                };
                let code = self
                    .store
                    .version(self.owner, *version)
                    .map_err(|err| MirrorError::Content {
                        path: path.to_string(),
                        message: err.to_string(),
                    })?
                    .code;
                Ok(format!("{header}{}", self.scrubber.scrub(&code).text))
            }
        }
    }
}

/// Plans the agent's mirror from the library's answer.
pub fn mirror_plan<'s>(
    store: &'s dyn Store,
    reader: &Agent,
) -> Result<MirrorPlan<'s>, FamilyError> {
    let owner = store.owner(reader.owner)?;
    let scrubber = Scrubber::new(&[]);
    let answer = answer_with(store, reader, &owner, &scrubber)?;
    let mut wanted = vec![
        Wanted {
            path: "INDEX.md".into(),
            key: sha256(answer.index.as_bytes()),
        },
        Wanted {
            path: "LESSONS.md".into(),
            key: sha256(answer.lessons.as_bytes()),
        },
    ];
    let mut headers: HashMap<String, (String, VersionId)> = HashMap::new();
    for skill in &answer.skills {
        let header = file_header(skill, &scrubber);
        let key = sha256(
            format!(
                "{MIRROR_FORMAT}\n{}\n{}\n{header}",
                answer.scrub_key, skill.version.digest
            )
            .as_bytes(),
        );
        wanted.push(Wanted {
            path: skill.path.clone(),
            key,
        });
        headers.insert(skill.path.clone(), (header, skill.version.id));
    }
    Ok(MirrorPlan {
        wanted,
        answer,
        headers,
        store,
        owner: owner.id,
        scrubber,
    })
}

/// Writes the agent's mirror from the library's answer (into `dir`, or its workspace's
/// `family-skills/`), rewriting only what changed.
pub fn refresh_mirror(
    store: &dyn Store,
    reader: &Agent,
    dir: Option<&Path>,
) -> Result<MirrorOutcome, FamilyError> {
    let dir = dir.map_or_else(|| default_dir(reader), Path::to_path_buf);
    let plan = mirror_plan(store, reader)?;
    let report: RefreshReport =
        mirror_writer::refresh(&dir, &plan.wanted, &mut |file: &Wanted| {
            plan.content(&file.path)
        })?;
    store.note_mirror_refresh(reader.owner, reader.id, now_millis())?;
    Ok(MirrorOutcome::Refreshed {
        dir: dir.display().to_string(),
        written: report.written,
        removed: report.removed,
        unchanged: report.unchanged,
    })
}

/// Empties the agent's mirror: what an agent starts with when the library cannot answer.
pub fn empty_mirror(dir: &Path) -> Result<MirrorOutcome, FamilyError> {
    let report = mirror_writer::empty(dir)?;
    Ok(MirrorOutcome::Refreshed {
        dir: dir.display().to_string(),
        written: report.written,
        removed: report.removed,
        unchanged: report.unchanged,
    })
}
