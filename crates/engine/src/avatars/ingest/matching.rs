//! A run's file matched to its skill and version: read only when its stamp changed, matched
//! (or made) in the store with the header it carries, and the use recorded for that version.

use std::borrow::Cow;
use std::sync::Arc;

use mindrune_core::RunOutput;
use mindrune_core::Scrubber;
use mindrune_core::{Header, parse_header};
use mindrune_core::{code_without_header, sha256};
use mindrune_store::{
    Agent, HeaderState, NewUse, Outcome, Recording, ScriptSnapshot, SkillHeader, StoreError,
    UnrecordedReason, VersionId,
};

use super::{Ingest, IngestError, KnownFile, Recorded, RunRecorded, now_millis};
use crate::avatars::tags;
use crate::workspace::{self, AgentFiles, FileStamp, MAX_SCRIPT_BYTES};

impl Ingest<'_> {
    pub(super) fn record_run(
        &self,
        agent: &Agent,
        files: &dyn AgentFiles,
        scrubber: &Scrubber,
        run: RunInput,
        recorded: &mut Recorded,
    ) -> Result<(), IngestError> {
        let owner = agent.owner;
        let cache_key = (agent.id.0, run.relative.clone());
        let cached = |stamp: &FileStamp| {
            self.caches()
                .files
                .get(&cache_key)
                .filter(|k| k.stamp == Some(*stamp))
                .cloned()
        };
        let source = match &run.file {
            // The file's stamp is the one its version was matched at: nothing to read.
            Some(stamp) if let Some(known) = cached(stamp) => Ok(known),
            Some(_) => match files.read(&run.relative, MAX_SCRIPT_BYTES) {
                Ok(Some(source)) => Err(Some(source)),
                Ok(None) => Err(None),
                Err(err) => {
                    recorded
                        .warnings
                        .push(format!("{err}; the run is not recorded"));
                    return Ok(());
                }
            },
            None => Err(None),
        };
        let target = match source {
            Ok(known) => KnownFile {
                new_skill: false,
                new_version: false,
                sharing: None,
                ..known
            },
            Err(None) => {
                // The file vanished between the call and the record: the run belongs to the
                // version the library last saw, never to a guess.
                let known = self.store.skill_at_path(owner, agent.id, &run.relative)?;
                match known.and_then(|skill| skill.current_version.map(|v| (skill, v))) {
                    Some((skill, version)) => {
                        recorded.warnings.push(format!(
                            "{}: the file is gone; the run is recorded for its last known version",
                            run.relative
                        ));
                        KnownFile {
                            file_digest: String::new(),
                            stamp: None,
                            version,
                            skill_label: format!("{}/{}", skill.agent_name, skill.name),
                            new_skill: false,
                            new_version: false,
                            sibling_copy: false,
                            sharing: None,
                        }
                    }
                    None => {
                        let warning = format!(
                            "{}: the file does not exist and was never seen; the run is not recorded",
                            run.relative
                        );
                        self.note_unrecorded(
                            agent,
                            run.event_id.as_deref(),
                            &run.relative,
                            now_millis(),
                            UnrecordedReason::NoScript,
                            warning.clone(),
                        )?;
                        recorded.warnings.push(warning);
                        return Ok(());
                    }
                }
            }
            Err(Some(source)) => {
                let file_digest = sha256(source.as_bytes());
                let same_content = self
                    .caches()
                    .files
                    .get(&cache_key)
                    .filter(|k| k.file_digest == file_digest)
                    .cloned();
                let known = match same_content {
                    // Touched but unchanged: the same version, under its new stamp.
                    Some(known) => KnownFile {
                        new_skill: false,
                        new_version: false,
                        sharing: None,
                        ..known
                    },
                    None => {
                        self.match_file(agent, scrubber, &run.relative, &source, file_digest)?
                    }
                };
                let known = KnownFile {
                    stamp: run.file,
                    ..known
                };
                self.caches().files.insert(cache_key, known.clone());
                known
            }
        };
        let new_use = NewUse {
            version: target.version,
            agent: agent.id,
            outcome: run.outcome.clone(),
            source: run.source_kind.into(),
            call: Some(run.call),
            output: run.output,
            event_id: run.event_id,
            recorded_at: now_millis(),
        };
        let result = self.store.record_use(owner, &new_use)?;
        if result.added
            && let Some(text) = &new_use.output
        {
            self.note_output(agent, new_use.outcome.at, text, run.stored_parse);
        }
        recorded.runs.push(RunRecorded {
            skill: target.skill_label,
            version: result.version.number,
            new_skill: target.new_skill,
            new_version: target.new_version,
            added: result.added,
            ok: run.outcome.ok,
            failure: run.outcome.failure.clone(),
            score: result.version.score,
            uses: result.version.uses,
            sharing: result.shared.or(target.sharing),
        });
        Ok(())
    }

    /// Matches a file's content to a skill and version, creating them when new, and records
    /// the header it carries (which decides sharing).
    pub(crate) fn match_file(
        &self,
        agent: &Agent,
        scrubber: &Scrubber,
        relative: &str,
        source: &str,
        file_digest: String,
    ) -> Result<KnownFile, IngestError> {
        let owner = agent.owner;
        let (parsed, _diagnostics) = parse_header(source);
        let code = code_without_header(source);
        let code_digest = sha256(code.as_bytes());
        let name = workspace::script_of_bot(relative)
            .map_or("", |(_, name)| name)
            .to_string();
        // Tags are stored (and mirrored) as written, so they are scrubbed like every other word
        // of the header: a secret written as a tag never reaches the library.
        let tags: Vec<String> = parsed
            .as_ref()
            .map(|h| scrubbed_tags(&h.tags, scrubber))
            .unwrap_or_default();
        let from = parsed.as_ref().and_then(|h| h.from.clone());

        let existing = self.store.skill_at_path(owner, agent.id, relative)?;
        let mut origin = None;
        if existing.is_none() {
            let same_code = self.store.versions_with_digest(owner, &code_digest)?;
            // An unchanged copy of a sibling's skill (it keeps its From: line) counts for the
            // sibling's skill: it is the sibling's, already.
            if let Some(from) = &from
                && let Some((sibling, version)) = same_code.iter().find(|(skill, _)| {
                    skill.agent != Some(agent.id)
                        && format!("{}/{}", skill.agent_name, skill.name) == *from
                })
            {
                return Ok(KnownFile {
                    file_digest,
                    stamp: None,
                    version: version.id,
                    skill_label: format!("{}/{}", sibling.agent_name, sibling.name),
                    new_skill: false,
                    new_version: false,
                    sibling_copy: true,
                    sharing: None,
                });
            }
            // The mirror holds the sibling's code as stored, scrubbed: a skill whose code held
            // a secret reaches the family with it redacted, so its verbatim copy has other
            // bytes than the version's digest was taken of. It is still the sibling's skill.
            if let Some(from) = &from
                && let Some((sibling, version)) =
                    self.scrubbed_copy_of(agent, scrubber, from, &code)?
            {
                return Ok(KnownFile {
                    file_digest,
                    stamp: None,
                    version,
                    skill_label: format!("{}/{}", sibling.agent_name, sibling.name),
                    new_skill: false,
                    new_version: false,
                    sibling_copy: true,
                    sharing: None,
                });
            }
            // A copy or rename of one of the agent's own files starts its own history, built
            // on the original; a changed copy of a sibling's skill, the avatar's own version,
            // built on it.
            origin = mindrune_store::origin_of_new_file(
                agent.id,
                &agent.name,
                from.as_deref(),
                same_code
                    .iter()
                    .map(|(skill, version)| (skill.agent, version.id, version.score)),
                |sibling_agent, sibling_name| {
                    Ok::<_, StoreError>(
                        self.store
                            .skill_by_name(owner, sibling_agent, sibling_name)?
                            .and_then(|sibling| sibling.current_version),
                    )
                },
            )?;
        }
        let matched = self.store.match_script(
            owner,
            &ScriptSnapshot {
                agent: agent.id,
                path: relative.to_string(),
                name,
                digest: code_digest,
                code: scrubber.scrub(&code).text.into_owned(),
                tags,
                header: skill_header(parsed.as_ref(), scrubber, self.store)?,
                file_digest: Some(file_digest.clone()),
                origin,
            },
            now_millis(),
        )?;
        Ok(KnownFile {
            file_digest,
            stamp: None,
            version: matched.version.id,
            skill_label: format!("{}/{}", matched.skill.agent_name, matched.skill.name),
            new_skill: matched.new_skill,
            new_version: matched.new_version,
            sibling_copy: false,
            sharing: matched.sharing,
        })
    }

    /// The sibling's skill (and version) that `code` is a verbatim copy of as the mirror showed
    /// it: the version's stored, scrubbed code, equal to the copy as it is or once scrubbed.
    fn scrubbed_copy_of(
        &self,
        agent: &Agent,
        scrubber: &Scrubber,
        from: &str,
        code: &str,
    ) -> Result<Option<(mindrune_store::Skill, VersionId)>, IngestError> {
        let Some((sibling_agent, sibling_name)) = from.split_once('/') else {
            return Ok(None);
        };
        if sibling_agent == agent.name {
            return Ok(None);
        }
        let Some(sibling) = self
            .store
            .skill_by_name(agent.owner, sibling_agent, sibling_name)?
        else {
            return Ok(None);
        };
        let scrubbed = scrubber.scrub(code).text;
        let versions = self.store.versions(agent.owner, sibling.id)?;
        let found = versions
            .iter()
            .find(|v| v.code == code || v.code == scrubbed)
            .map(|v| v.id);
        Ok(found.map(|version| (sibling, version)))
    }
}

/// What a header says, as the library keeps it: its state decides sharing; its words are
/// scrubbed like the code.
pub(crate) fn skill_header(
    parsed: Option<&Header>,
    scrubber: &Scrubber,
    store: &dyn Recording,
) -> Result<SkillHeader, StoreError> {
    let Some(parsed) = parsed else {
        return Ok(SkillHeader::default());
    };
    let scrub = |text: &Option<String>| {
        text.as_deref()
            .map(|t| scrubber.scrub(t).text.into_owned())
            .filter(|t| !t.is_empty())
    };
    // Topics are read from the scrubbed words: a secret in a goal or a tag must not come back
    // as a lower-cased topic.
    let clean = Header {
        goal: scrub(&parsed.goal),
        preconditions: scrub(&parsed.preconditions),
        params: scrub(&parsed.params),
        result: scrub(&parsed.result),
        tags: scrubbed_tags(&parsed.tags, scrubber),
        ..parsed.clone()
    };
    Ok(SkillHeader {
        state: if parsed.private {
            HeaderState::Private
        } else {
            HeaderState::Skill
        },
        topics: header_topics(&clean, store)?,
        goal: clean.goal,
        preconditions: clean.preconditions,
        params: clean.params,
        result: clean.result,
        from: parsed.from.clone(),
    })
}

/// A header's tags with secrets scrubbed; a tag that was all secret is dropped.
fn scrubbed_tags(tags: &[String], scrubber: &Scrubber) -> Vec<String> {
    tags.iter()
        .map(|tag| scrubber.scrub(tag).text.into_owned())
        .filter(|tag| !tag.is_empty() && tag != mindrune_core::REDACTED)
        .collect()
}

/// Topic tags of a header, by the library's vocabulary: each `Tags:` entry as an exact tag or
/// a name (`lumby`, `cooks-assistant`, everyday names too: the author chose it as a tag), then
/// the tags of the goal's and preconditions' free text (exact tags and names).
fn header_topics(parsed: &Header, store: &dyn Recording) -> Result<Vec<String>, StoreError> {
    let vocabulary = tags::vocabulary(store)?;
    let mut topics: Vec<String> = Vec::new();
    let words = [parsed.goal.as_deref(), parsed.preconditions.as_deref()];
    let found = parsed
        .tags
        .iter()
        .filter_map(|tag| vocabulary.tag_for_word(tag))
        .chain(
            words
                .into_iter()
                .flatten()
                .flat_map(|text| vocabulary.map(text).into_iter().map(Cow::into_owned)),
        );
    for topic in found {
        if !topics.contains(&topic) {
            topics.push(topic);
        }
    }
    Ok(topics)
}

pub(super) struct RunInput {
    pub(super) relative: String,
    /// The file's stamp when the run was recorded; `None` when it no longer exists.
    pub(super) file: Option<FileStamp>,
    pub(super) outcome: Outcome,
    pub(super) output: Option<String>,
    /// The parse of `output` as stored, when it is the parse already made of the event's.
    pub(super) stored_parse: Option<Arc<RunOutput>>,
    pub(super) call: String,
    pub(super) source_kind: &'static str,
    pub(super) event_id: Option<String>,
}
