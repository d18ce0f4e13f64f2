//! MindRune's own skill fixer (`fixer = "claude"`): one act of the agent runner
//! ([`crate::agent`]) per report.
//!
//! The agent is handed pointers only — the skill's folder, the revision and step reported, the
//! fingerprint of the SKILL.md it will read, and where the record of that turn is — and reads
//! them itself with read-only tools. It answers with one of the spec's two endings, `stop` with
//! its reason or `revise` with the whole corrected SKILL.md and that fingerprint; MindRune holds
//! the answer to the same blocking checks a revision gets, then files it (`refine stop` or
//! `refine revise`) with the report's token, which never leaves this process.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::layout;
use super::refine::Filed;
use super::{PlaybookError, Playbooks, Rule};
use crate::agent::{self, Act, AgentFailure, AgentLimits, Attempt, Backend, READ_ONLY_TOOLS};

/// The act's name.
pub(crate) const ACT: &str = "skill-fixer";

/// What the fixer is told: the spec's §5–6 reasoning, as its task.
pub(crate) const INSTRUCTIONS: &str = "\
You are MindRune's skill fixer. An assistant followed a skill — a markdown procedure, SKILL.md, \
whose frontmatter lists numbered `steps`, each naming the one tool it uses — and reported that \
one step failed, was wrong, or is missing. You were not told what went wrong, because the agent \
that failed cannot always tell a wrong procedure from one it did not follow, and those two call \
for different answers. Read the record yourself.

Read, in this order:
1. `revision_file`: the skill as the assistant read it (revision `revision`). When `revision` is \
the live version it is the live `skill_file`; otherwise it is a kept copy under history/.
2. `skill_file`: the skill as it is now, the file a revision replaces.
3. `turn_record`: the host's record of the turn the skill was used in (Claude Code's transcript: \
one JSON object a line; the assistant's tool calls are `tool_use` blocks and their results \
`tool_result` blocks). Find where the skill was read and what was done at step `step` and \
around it. `turn_record` may be null: then there is no record.

Then decide:
- If the record shows the procedure was not followed — the step was skipped, done otherwise than \
written, or with another tool — stop. A skill that was not the problem is not rewritten because \
something else went wrong.
- If the record does not show enough to decide — there is none, it does not reach the step, or it \
cannot tell a wrong procedure from one that was not followed — stop, and say what is missing.
- Only if the record shows the procedure itself was wrong — it was followed as written and the \
step as written failed, or a step it needs is missing — write the corrected SKILL.md.

Answer with exactly one of:
- {\"decision\": \"stop\", \"reason\": \"…\"}: which of the two cases it is, and what in the \
record shows it.
- {\"decision\": \"revise\", \"reason\": \"…\", \"skill_md\": \"…\", \"fingerprint\": \"…\"}: \
`skill_md` is the whole corrected SKILL.md, written against `skill_file`: the smallest change \
that fixes the reported step, every other field and step kept, `version` and `status` left as \
they are (the runtime sets them). `fingerprint` is the request's `fingerprint`, the SKILL.md you \
read; the revision is refused if the skill changed since. `reason` says what in the record shows \
the procedure was wrong.

You may only read files. You cannot run commands or write anything: MindRune files your answer, \
and the human reviews a revision unless they chose otherwise.
";

/// The answer's JSON Schema (what Claude Code's `--json-schema` holds the answer to).
pub(crate) fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["stop", "revise"]},
            "reason": {"type": "string", "minLength": 1},
            "skill_md": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
        },
        "required": ["decision", "reason"],
        "additionalProperties": false
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    decision: String,
    reason: String,
    skill_md: Option<String>,
    fingerprint: Option<String>,
}

/// The fixer's admitted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Stop {
        reason: String,
    },
    Revise {
        reason: String,
        text: String,
        fingerprint: String,
    },
}

/// What a run of the fixer did.
#[derive(Debug)]
pub enum Fixed {
    /// It stopped; its reason is noted on the report.
    Stopped { reason: String },
    /// It filed one revision.
    Revised { reason: String, filed: Filed },
}

/// A run of the fixer, with what each attempt cost.
#[derive(Debug)]
pub struct FixerRun {
    pub fixed: Fixed,
    pub attempts: Vec<Attempt>,
}

#[derive(Debug, thiserror::Error)]
pub enum FixerError {
    #[error(transparent)]
    Playbook(#[from] PlaybookError),
    /// The agent gave no answer that could be admitted: nothing was filed.
    #[error("{0}; nothing was filed")]
    Agent(AgentFailure),
}

impl Playbooks {
    /// Runs MindRune's own fixer for `report` on `backend`, and files what it decided with
    /// `token` (the report's). A second refused answer files nothing.
    pub fn fix_with_agent(
        &self,
        report: i64,
        token: &str,
        backend: &Backend,
    ) -> Result<FixerRun, FixerError> {
        let line = self.ledger.report(report)?.ok_or_else(|| {
            PlaybookError::refused(Rule::NotFound, format!("there is no report #{report}"))
        })?;
        let act = self.fixer_act(&line.skill, line.revision, line.step, line.turn.as_deref())?;
        let fingerprint = act.request["fingerprint"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let answered = agent::run(backend, &act, |answer| {
            self.admit(&line.skill, &fingerprint, answer)
        })
        .map_err(FixerError::Agent)?;
        let fixed = match answered.value {
            Decision::Stop { reason } => {
                self.fixer_stopped(report, &reason)?;
                Fixed::Stopped { reason }
            }
            Decision::Revise {
                reason,
                text,
                fingerprint,
            } => {
                let filed = self.revise_unasked(report, &text, &fingerprint, token)?;
                Fixed::Revised { reason, filed }
            }
        };
        Ok(FixerRun {
            fixed,
            attempts: answered.attempts,
        })
    }

    /// The fixer's act for a report: pointers only.
    fn fixer_act(
        &self,
        skill: &str,
        revision: Option<u32>,
        step: Option<u32>,
        turn: Option<&str>,
    ) -> Result<Act, PlaybookError> {
        let dir = layout::live_dir(&self.workspace, skill);
        let live = layout::load(&dir, skill)?.ok_or_else(|| {
            PlaybookError::refused(
                Rule::NotFound,
                format!("there is no skill named {skill} in skills/"),
            )
        })?;
        let live_version = live.version().unwrap_or(1);
        let revision = revision.unwrap_or(live_version);
        let skill_file = dir.join(layout::SKILL_FILE);
        let revision_file = if revision == live_version {
            skill_file.clone()
        } else {
            layout::history_dir(&self.workspace, skill, revision).join(layout::SKILL_FILE)
        };
        let turn_record: Option<PathBuf> = turn.map(|turn| {
            let path = Path::new(turn);
            if path.is_absolute() {
                path.to_path_buf()
            } else {
                self.workspace.join(path)
            }
        });
        let read_dirs = turn_record
            .as_ref()
            .and_then(|record| record.parent())
            .filter(|folder| folder.is_dir())
            .map(Path::to_path_buf)
            .into_iter()
            .collect();
        Ok(Act {
            name: ACT.to_string(),
            instructions: INSTRUCTIONS.to_string(),
            request: json!({
                "skill": skill,
                "skill_dir": dir,
                "skill_file": skill_file,
                "live_version": live_version,
                "revision": revision,
                "revision_file": revision_file,
                "step": step,
                "turn_record": turn_record,
                "fingerprint": live.fingerprint(),
            }),
            schema: answer_schema(),
            workdir: dir,
            read_dirs,
            tools: READ_ONLY_TOOLS
                .iter()
                .map(|tool| tool.to_string())
                .collect(),
            limits: AgentLimits {
                timeout: Duration::from_secs(self.config.fixer_timeout_secs),
                max_usd: self.config.fixer_budget_usd,
            },
            command_env: Vec::new(),
        })
    }

    /// Holds an answer to the spec's two endings and a revision to the door's blocking checks,
    /// so a refusal is the agent's to correct before anything is filed.
    fn admit(&self, skill: &str, fingerprint: &str, answer: &Value) -> Result<Decision, String> {
        let answer: Answer = serde_json::from_value(answer.clone())
            .map_err(|err| format!("the answer is not a fixer's answer: {err}"))?;
        let reason = answer.reason.trim().to_string();
        if reason.is_empty() {
            return Err("`reason` is empty; say what in the record decided it".to_string());
        }
        match answer.decision.as_str() {
            "stop" => {
                if answer.skill_md.is_some() || answer.fingerprint.is_some() {
                    return Err(
                        "a `stop` carries only its `reason`; a corrected file is a `revise`"
                            .to_string(),
                    );
                }
                Ok(Decision::Stop { reason })
            }
            "revise" => {
                let Some(text) = answer.skill_md else {
                    return Err(
                        "a `revise` needs `skill_md`, the whole corrected SKILL.md".to_string()
                    );
                };
                match answer.fingerprint.as_deref() {
                    Some(given) if given == fingerprint => {}
                    Some(given) => {
                        return Err(format!(
                            "`fingerprint` {given} is not the request's fingerprint {fingerprint}: give the fingerprint of the SKILL.md you were handed"
                        ));
                    }
                    None => {
                        return Err(format!(
                            "a `revise` needs `fingerprint`, the request's {fingerprint}"
                        ));
                    }
                }
                let proposed = self
                    .checked_text(&text, &format!("the revision of {skill}"), None)
                    .map_err(|err| err.to_string())?;
                if let Some(name) = &proposed.name
                    && name != skill
                {
                    return Err(format!(
                        "the revision names skill {name}, but the report is about {skill}"
                    ));
                }
                Ok(Decision::Revise {
                    reason,
                    text,
                    fingerprint: fingerprint.to_string(),
                })
            }
            other => Err(format!(
                "`decision` is {other:?}; it is \"stop\" or \"revise\""
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::door::{Attendance, Proposal, Suggester};
    use crate::playbook::report::Report;

    const SKILL: &str = "---\nname: weekly\ntrigger: the weekly report\nuse_when: notes exist\nnot_when: a day's summary\npreconditions:\n  - notes/ exists\nsteps:\n  - do: Read the notes\n    tool: workspace_read\n  - do: Write the report\n    tool: file_write\nexpected_result: a report\nfailure_modes:\n  - old notes\nevidence:\n  - last week\n---\nRead, then write.\n";

    /// A workspace with one live skill and one report on its step 2.
    fn reported() -> (tempfile::TempDir, Playbooks, i64) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("playbooks.toml"),
            format!(
                "home = {:?}\nfixer = \"none\"\n",
                root.display().to_string()
            ),
        )
        .unwrap();
        let playbooks = Playbooks::open(&ws).unwrap();
        let (skill, _) = mindrune_core::parse_skill_file(SKILL).unwrap();
        let proposal = Proposal {
            name: "weekly".into(),
            skill,
            suggested_by: Suggester::Human,
            accepted_as_done: false,
        };
        playbooks.create(&proposal, Attendance::Attended).unwrap();
        playbooks.approve(1).unwrap();
        let reported = playbooks
            .report(&Report {
                skill: "weekly".into(),
                revision: 1,
                step: 2,
                turn: None,
            })
            .unwrap();
        (dir, playbooks, reported.report)
    }

    fn command(line: &str) -> Backend {
        Backend::Command {
            command: line.to_string(),
        }
    }

    #[test]
    fn another_agent_cli_that_reads_the_pointers_and_stops_has_its_reason_noted() {
        let (_dir, playbooks, report) = reported();
        // Any program: the request on stdin, the answer on stdout.
        let agent = command(
            r#"grep -q '"step":2' && echo '{"decision":"stop","reason":"there is no record of the turn"}'"#,
        );
        let run = playbooks.fix_with_agent(report, "unused", &agent).unwrap();
        assert!(matches!(run.fixed, Fixed::Stopped { .. }), "{run:?}");
        let record = playbooks.record(Some("weekly")).unwrap();
        assert_eq!(
            record[0].fixer_notes,
            [(report, "there is no record of the turn".to_string())]
        );
    }

    #[test]
    fn a_revision_that_fails_the_door_s_checks_twice_files_nothing() {
        let (_dir, playbooks, report) = reported();
        // The fingerprint it was handed, and a step naming a tool the runtime does not have.
        let agent = command(
            r#"fp=$(sed -n 's/.*"fingerprint":"\(sha256:[0-9a-f]*\)".*/\1/p'); printf '{"decision":"revise","reason":"r","skill_md":"---\\nname: weekly\\nsteps:\\n  - do: x\\n    tool: teleport\\n---\\n","fingerprint":"%s"}' "$fp""#,
        );
        let err = playbooks
            .fix_with_agent(report, "unused", &agent)
            .unwrap_err();
        let FixerError::Agent(AgentFailure::Refused {
            error, attempts, ..
        }) = &err
        else {
            panic!("{err:?}");
        };
        assert!(error.contains("teleport"), "{error}");
        assert_eq!(attempts.len(), 2);
        assert!(
            playbooks
                .ledger()
                .cards(false)
                .unwrap()
                .iter()
                .all(|c| c.kind != crate::playbook::CardKind::Revise)
        );
        assert!(
            playbooks.record(Some("weekly")).unwrap()[0]
                .fixer_notes
                .is_empty()
        );
    }
}
