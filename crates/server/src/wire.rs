//! The runner protocol's wire types: what runners send to `/v1/` and what the server answers.
//!
//! Architecture invariant: only this module defines wire types. The server's handlers and the
//! runner both use them, so the two cannot drift; `docs/openapi.json` documents the same shapes
//! and the API tests validate every answer against it.
//!
//! Every request type rejects unknown fields: a runner that sends something the server does not
//! understand gets a 400 naming the field, never a silent drop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The protocol version, the first segment of every runner path.
pub(crate) const API_VERSION: &str = "v1";

/// The most events one batch may carry.
pub const MAX_BATCH_EVENTS: usize = 500;
/// The largest request body of the event and state endpoints.
pub const MAX_EVENTS_BODY: usize = 8 * 1024 * 1024;
/// The largest turn body: every script of the avatar plus its lab log (a lab log is read up to
/// 16 MiB, a script up to 1 MiB; real turns are a few hundred KB). Recording a turn costs the
/// server about three times its body at the peak, so this bounds what one turn may cost.
pub const MAX_TURN_BODY: usize = 32 * 1024 * 1024;
/// The largest body of any other request (dashboard forms, mirror requests).
pub const MAX_SMALL_BODY: usize = 1024 * 1024;
/// The most files a turn or a wrap-up may list: an avatar's folder of scripts, with room to
/// spare. A body is bounded by what it costs the server, not only by its bytes: a 60 MB list
/// of one-character names would otherwise become a million map entries.
pub(crate) const MAX_TURN_FILES: usize = 1_000;
/// The most files one event may name (the scripts one call ran).
pub(crate) const MAX_EVENT_FILES: usize = 64;
/// The most mirror keys a runner may say it holds.
pub(crate) const MAX_MIRROR_KEYS: usize = 10_000;
/// The longest file path or mirror key, in bytes (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4_096;
/// The most bytes of file paths (or mirror keys) one list may carry in all.
pub(crate) const MAX_PATH_LIST_BYTES: usize = 256 * 1024;
/// How much of a path an error shows: enough to recognise it, never the whole of a hostile one.
pub(crate) const SHOWN_PATH_CHARS: usize = 200;

/// `path` as an error shows it: cut after [`SHOWN_PATH_CHARS`] characters, with `…` and its
/// length when cut.
pub(crate) fn shown_path(path: &str) -> String {
    match path.char_indices().nth(SHOWN_PATH_CHARS) {
        None => path.to_string(),
        Some((at, _)) => format!("{}… ({} bytes)", &path[..at], path.len()),
    }
}

/// The bounds of one map of paths (or keys) in a request, checked while it is read.
struct PathList {
    what: &'static str,
    max_entries: usize,
}

impl PathList {
    /// Reads a map of paths, refusing it at the first entry past a bound, before the rest is
    /// read: what a hostile list costs is what the bounds allow.
    fn read<'de, D, V>(self, deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
    where
        D: serde::Deserializer<'de>,
        V: Deserialize<'de>,
    {
        struct Visit<V> {
            list: PathList,
            value: std::marker::PhantomData<V>,
        }
        impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Visit<V> {
            type Value = BTreeMap<String, V>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a map of {}", self.list.what)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error as _;
                let PathList { what, max_entries } = self.list;
                let mut out = BTreeMap::new();
                let mut bytes = 0usize;
                while let Some(key) = map.next_key::<String>()? {
                    if out.len() == max_entries {
                        return Err(A::Error::custom(format!(
                            "more than {max_entries} {what}: the limit of one request; send fewer"
                        )));
                    }
                    if key.len() > MAX_PATH_BYTES {
                        return Err(A::Error::custom(format!(
                            "the entry {} is {} bytes, over the {MAX_PATH_BYTES}-byte limit of a path",
                            shown_path(&key),
                            key.len()
                        )));
                    }
                    bytes += key.len();
                    if bytes > MAX_PATH_LIST_BYTES {
                        return Err(A::Error::custom(format!(
                            "the {what} add up to more than {MAX_PATH_LIST_BYTES} bytes of paths, the limit of one request; send fewer"
                        )));
                    }
                    let value = map.next_value::<V>()?;
                    out.insert(key, value);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(Visit {
            list: self,
            value: std::marker::PhantomData,
        })
    }
}

fn turn_files<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, WireFile>, D::Error> {
    PathList {
        what: "files",
        max_entries: MAX_TURN_FILES,
    }
    .read(deserializer)
}

fn event_files<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, WireFile>, D::Error> {
    PathList {
        what: "files of one event",
        max_entries: MAX_EVENT_FILES,
    }
    .read(deserializer)
}

fn mirror_keys<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    PathList {
        what: "mirror keys",
        max_entries: MAX_MIRROR_KEYS,
    }
    .read(deserializer)
}

/// A file the runner read beside the avatar's sandbox, or why it could not read it. A script
/// path that a snapshot does not list does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WireFile {
    /// The file's text (already scrubbed of the bot's own secrets by the runner).
    Text(String),
    /// The runner found the path but could not read it.
    Unreadable(FileProblem),
}

/// Why a runner could not read a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileProblem {
    Symlink,
    NotAFile,
    TooLarge,
    NotText,
}

/// `POST /v1/events`: tool calls of the runner's avatar, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventBatch {
    pub events: Vec<WireEvent>,
}

/// One tool call: the event contract's object (its `id` is required here, so a retried batch
/// never counts twice; its `agent` may be left out, and if given must be the token's avatar),
/// with the scripts it ran as the runner read them when the call finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WireEvent {
    pub event: serde_json::Value,
    /// Workspace-relative path (`bots/<bot>/<name>.ts`) → the file; at most
    /// [`MAX_EVENT_FILES`].
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "event_files"
    )]
    pub files: BTreeMap<String, WireFile>,
}

/// What happened to one event of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EventStatus {
    /// Stored now.
    Recorded,
    /// Stored before (a retried batch): nothing counted twice.
    Duplicate,
    /// Nothing to store (a detached run, a call that runs no script); the warnings say why.
    Ignored,
    /// Refused (a script outside the workspace, another bot's script); `error` says why. A
    /// runner does not send it again.
    Rejected,
}

/// One script run an event recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireRun {
    /// `<agent>/<name>`.
    pub skill: String,
    pub version: i64,
    pub ok: bool,
    pub score: f64,
    pub uses: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventResult {
    pub id: String,
    pub status: EventStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<WireRun>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer to a batch: one result per event, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct EventsAnswer {
    pub results: Vec<EventResult>,
}

/// Which boundary a turn request marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WireBoundary {
    /// The agent's turn ended.
    TurnEnd,
    /// The agent is starting: every header is re-checked and the mirror always comes back.
    Start,
}

/// `POST /v1/turns`: a turn boundary with the avatar's file snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnRequest {
    pub boundary: WireBoundary,
    /// Every file directly in `bots/<bot>/` the runner reads: its scripts and `lab_log.md`
    /// (never `bot.env`), by workspace-relative path; at most [`MAX_TURN_FILES`].
    #[serde(deserialize_with = "turn_files")]
    pub files: BTreeMap<String, WireFile>,
    /// The keys of the mirror files the runner holds; with it, the answer carries the mirror
    /// when it is due (at most once a minute at turn ends, always at a start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<MirrorRequest>,
}

/// The answer to a turn boundary: what changed (the engine's turn report) and, when due, the
/// mirror.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TurnAnswer {
    pub report: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<MirrorAnswer>,
}

/// `POST /v1/mirror`: the keys of the files the runner's `family-skills/` holds (from its
/// manifest), so unchanged files come back without their content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MirrorRequest {
    /// At most [`MAX_MIRROR_KEYS`].
    #[serde(default, deserialize_with = "mirror_keys")]
    pub have: BTreeMap<String, String>,
}

/// One file of the avatar's `family-skills/`: `INDEX.md`, `LESSONS.md` or
/// `<sibling>/<name>.ts`. `content` is left out when the runner already has this key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MirrorFile {
    pub path: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Everything the avatar's `family-skills/` should hold, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MirrorAnswer {
    pub files: Vec<MirrorFile>,
}

/// `POST /v1/wrapup`: a wrap-up at a goal's or step's end, with the same file snapshot as a
/// turn boundary (a wrap-up marks one). The answer is the engine's wrap-up as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WrapUpRequest {
    #[serde(deserialize_with = "turn_files")]
    pub files: BTreeMap<String, WireFile>,
}

/// `GET /v1/instructions`: the agent's instruction text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InstructionsAnswer {
    pub text: String,
}

/// `GET /v1/whoami`: the avatar a runner's token stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WhoAmI {
    pub agent: String,
    pub api_version: String,
}

/// `POST /v1/state`: the avatar's latest game state, as the dashboard shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AvatarStats {
    /// RFC 3339 time the state was read; the server's clock when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Skill name → level.
    #[serde(default)]
    pub levels: BTreeMap<String, u32>,
    /// Skill name → experience points. Left out by runners older than it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub xp: BTreeMap<String, u64>,
    /// Quests done.
    #[serde(default)]
    pub quests: Vec<String>,
    /// Coins carried and banked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wealth: Option<i64>,
    /// Equipped items.
    #[serde(default)]
    pub gear: Vec<String>,
    /// Item name → count, as last seen in the bank.
    #[serde(default)]
    pub bank: BTreeMap<String, i64>,
    /// The recorder read this state from the World State a run printed (no state file): its
    /// bank and quests are not printed, so they are as the last report had them. A runner's
    /// report is never printed; the server sets it to `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub printed: bool,
}

/// Every error answer: a status code and this body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A stable, machine-readable code: `bad_request`, `unauthorized`, `forbidden`,
    /// `not_found`, `gone`, `too_large`, `unavailable`, `request_timeout`,
    /// `insufficient_storage`, `internal`.
    pub code: String,
    /// What happened and what to do, for a person.
    pub message: String,
    /// The request field at fault (`events[3].event.kind`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The hint every old loopback skill endpoint answers with (410 Gone).
pub const SKILLS_ARE_FILES: &str = "skills are files now: add the @skill header";

/// The header a runner sends with every request: how many items its spool still holds, for
/// the operator's console.
pub const SPOOL_HEADER: &str = "x-mindrune-spool";
/// How many times the avatar's Claude Code hooks could not do their job in the last 24 hours
/// (the hook notes each in its relay folder, the runner's spool): sent by the runner with every
/// request, so the console and `/metrics` show what the hooks said on a machine nobody watches.
pub(crate) const HOOK_FAILURES_HEADER: &str = "x-mindrune-hook-failures";

#[cfg(test)]
mod tests {
    use super::*;

    /// The error of decoding `json` as `T`, with the path of the field at fault.
    fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str) -> (String, String) {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let err = serde_path_to_error::deserialize::<_, T>(&mut deserializer).unwrap_err();
        (err.path().to_string(), err.into_inner().to_string())
    }

    fn files_json(n: usize, name: impl Fn(usize) -> String) -> String {
        let entries: Vec<String> = (0..n)
            .map(|i| format!("{:?}:{{\"text\":\"\"}}", name(i)))
            .collect();
        format!("{{{}}}", entries.join(","))
    }

    #[test]
    fn a_turn_of_more_than_a_thousand_files_is_refused_naming_the_field_and_the_bound() {
        let json = format!(
            "{{\"boundary\":\"turn_end\",\"files\":{}}}",
            files_json(MAX_TURN_FILES + 1, |i| format!("bots/a/{i}.ts"))
        );
        let (path, message) = refusal::<TurnRequest>(&json);
        assert_eq!(path, "files");
        assert!(message.starts_with("more than 1000 files"), "{message}");
        let json = format!(
            "{{\"boundary\":\"turn_end\",\"files\":{}}}",
            files_json(MAX_TURN_FILES, |i| format!("bots/a/{i}.ts"))
        );
        let request: TurnRequest = serde_json::from_str(&json).unwrap();
        assert_eq!(request.files.len(), MAX_TURN_FILES);
    }

    #[test]
    fn an_event_naming_more_than_64_files_is_refused() {
        let json = format!(
            "{{\"event\":{{}},\"files\":{}}}",
            files_json(MAX_EVENT_FILES + 1, |i| format!("bots/a/{i}.ts"))
        );
        let (path, message) = refusal::<WireEvent>(&json);
        assert_eq!(path, "files");
        assert!(
            message.contains("more than 64 files of one event"),
            "{message}"
        );
    }

    #[test]
    fn a_path_over_path_max_is_refused_and_shown_cut() {
        let long = format!("bots/a/{}.ts", "x".repeat(MAX_PATH_BYTES));
        let json = format!("{{\"files\":{}}}", files_json(1, |_| long.clone()));
        let (_, message) = refusal::<WrapUpRequest>(&json);
        assert!(
            message.contains("over the 4096-byte limit of a path"),
            "{message}"
        );
        assert!(message.len() < 600, "{} bytes", message.len());
    }

    #[test]
    fn many_long_names_are_refused_past_256_kib_of_paths() {
        let json = format!(
            "{{\"boundary\":\"start\",\"files\":{}}}",
            files_json(MAX_TURN_FILES, |i| format!(
                "bots/a/{i}-{}.ts",
                "y".repeat(400)
            ))
        );
        let (path, message) = refusal::<TurnRequest>(&json);
        assert_eq!(path, "files");
        assert!(message.contains("262144 bytes of paths"), "{message}");
    }

    #[test]
    fn a_mirror_request_of_more_than_ten_thousand_keys_is_refused() {
        let entries: Vec<String> = (0..=MAX_MIRROR_KEYS)
            .map(|i| format!("\"k{i}\":\"v\""))
            .collect();
        let json = format!("{{\"have\":{{{}}}}}", entries.join(","));
        let (path, message) = refusal::<MirrorRequest>(&json);
        assert_eq!(path, "have");
        assert!(
            message.starts_with("more than 10000 mirror keys"),
            "{message}"
        );
    }

    #[test]
    fn a_shown_path_is_cut_after_200_characters_with_its_length() {
        assert_eq!(shown_path("bots/a/x.ts"), "bots/a/x.ts");
        let shown = shown_path(&"é".repeat(10_000));
        assert!(shown.ends_with("… (20000 bytes)"), "{shown}");
        assert_eq!(
            shown.chars().filter(|c| *c == 'é').count(),
            SHOWN_PATH_CHARS
        );
    }
}
