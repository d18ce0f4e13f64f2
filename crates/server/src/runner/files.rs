//! What the runner reads of the agent's workspace, and how an inbox item becomes an outbox item.
//!
//! The server never sees the agent's disk: the runner sends, with each call, the scripts it ran
//! as they were when the call finished, and with each turn end the files directly in
//! `bots/<agent>/` (its scripts and `lab_log.md`, never `bot.env`). Every read goes through
//! [`read_contained_limited`] (no symlink or `..` leads out of the workspace, sizes
//! are bounded), and everything that leaves the machine is scrubbed first with the bot's own
//! secrets from `bot.env`, so its password never reaches the server.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use mindrune_core::Scrubber;
use mindrune_core::{Call, Event, RawEvent};
use mindrune_core::{ShellContext, classify_shell_line};
use mindrune_engine::MAX_LAB_LOG_BYTES;
use mindrune_engine::{
    LocalFiles, MAX_SCRIPT_BYTES, ReadError, SANDBOX_ROOT, list_contained, names_not_utf8,
    read_contained_limited, script_of_bot, stat_contained_limited, workspace_relative,
};
use mindrune_engine::{UnreadableBotEnv, bot_env_secrets};
use serde::{Deserialize, Serialize};

use super::spool::{Kind, event_json};
use crate::wire::{FileProblem, WireEvent, WireFile};

/// The most of a call's output the runner keeps: the end, where rs-sdk prints its summary (the
/// server keeps a shorter tail still). A bound keeps one chatty call from outgrowing the
/// server's body limit and being refused whole.
pub(crate) const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// The name of the lab log in a bot's folder.
pub(crate) const LAB_LOG: &str = "lab_log.md";

/// An outbox turn end: the snapshot of `bots/<agent>/` taken when the turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutboxTurn {
    pub files: BTreeMap<String, WireFile>,
}

/// The agent a runner serves and where its files are.
#[derive(Debug, Clone, Copy)]
pub struct AgentFolder<'a> {
    pub workspace: &'a Path,
    pub agent: &'a str,
}

impl AgentFolder<'_> {
    /// `bots/<agent>`, workspace-relative.
    pub fn bot_dir(&self) -> String {
        format!("bots/{}", self.agent)
    }

    /// The scrubber for everything sent: the secrets in `bots/<agent>/bot.env` plus the
    /// credential shapes every scrubber knows. A missing `bot.env` gives no known secrets; one
    /// that exists but cannot be read is an error, and nothing is to be spooled or sent until
    /// it can (the bot's password could not be scrubbed from it).
    pub fn scrubber(&self) -> Result<Scrubber, UnreadableBotEnv> {
        let known = bot_env_secrets(&LocalFiles(self.workspace), self.agent)?;
        let refs: Vec<&str> = known.iter().map(String::as_str).collect();
        Ok(Scrubber::new(&refs))
    }

    /// The scripts of this agent a call ran (workspace-relative `bots/<agent>/<name>.ts`), as
    /// the engine's recorder finds them: the shell line classified, or the `script` of an
    /// `execute_code` call.
    pub fn scripts_of(&self, call: &Call) -> Vec<String> {
        let candidates = match call {
            Call::Shell { command, cwd } => {
                let workspace = self.workspace.to_string_lossy();
                let roots = [SANDBOX_ROOT, workspace.as_ref()];
                classify_shell_line(
                    command,
                    &ShellContext {
                        cwd: cwd.as_deref(),
                        workspace_roots: &roots,
                    },
                )
                .runs
            }
            Call::ExecuteScript { script } => workspace_relative(script, self.workspace)
                .into_iter()
                .collect(),
            Call::ExecuteCode { .. } => Vec::new(),
        };
        candidates
            .into_iter()
            .filter(|path| script_of_bot(path).is_some_and(|(bot, _)| bot == self.agent))
            .collect()
    }

    /// One file as the server should see it: its scrubbed text, why it could not be read, or
    /// `None` when it does not exist.
    pub fn read(&self, relative: &str, limit: u64, scrubber: &Scrubber) -> Option<WireFile> {
        match read_contained_limited(self.workspace, relative, limit) {
            Ok(Some(text)) => Some(WireFile::Text(scrubber.scrub(&text).text.into_owned())),
            Ok(None) => None,
            Err(err) => Some(WireFile::Unreadable(problem(relative, &err))),
        }
    }

    /// Every file directly in `bots/<agent>/` a turn boundary reads: `*.ts` and `lab_log.md`,
    /// never `bot.env`. A missing folder is an empty snapshot.
    pub fn snapshot(&self, scrubber: &Scrubber) -> BTreeMap<String, WireFile> {
        let mut files = BTreeMap::new();
        for name in self.snapshot_names() {
            let relative = format!("{}/{name}", self.bot_dir());
            let limit = if name == LAB_LOG {
                MAX_LAB_LOG_BYTES
            } else {
                MAX_SCRIPT_BYTES
            };
            if let Some(file) = self.read(&relative, limit, scrubber) {
                files.insert(relative, file);
            }
        }
        files
    }

    /// The names a snapshot holds, as the folder lists them now.
    fn snapshot_names(&self) -> Vec<String> {
        match list_contained(self.workspace, &self.bot_dir()) {
            Ok(Some(names)) => {
                for name in names_not_utf8(self.workspace, &self.bot_dir()) {
                    tracing::warn!(
                        "{}/{name}: its name is not UTF-8, so it is not sent and MindRune cannot record or share it; rename it",
                        self.bot_dir()
                    );
                }
                names
                    .into_iter()
                    .filter(|name| is_snapshot_name(name))
                    .collect()
            }
            Ok(None) => Vec::new(),
            Err(err) => {
                tracing::warn!(
                    "cannot list {}/ in {} ({err}); its files are sent as gone until it can be read",
                    self.bot_dir(),
                    self.workspace.display()
                );
                Vec::new()
            }
        }
    }

    /// What identifies the folder's snapshot without reading it: each file's name, length,
    /// modification time and inode. It changes whenever a script or the lab log does.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut entries = Vec::new();
        for name in self.snapshot_names() {
            let relative = format!("{}/{name}", self.bot_dir());
            let stamp = stat_contained_limited(self.workspace, &relative, u64::MAX)
                .ok()
                .flatten();
            entries.push((name, stamp.map(|s| (s.len, s.modified, s.inode))));
        }
        Fingerprint(entries)
    }

    /// Turns an inbox item's bytes into its outbox bytes: an event gets the scripts it ran and
    /// is scrubbed; a turn end gets the folder's snapshot. `Err` says why the item is refused.
    pub fn enrich(
        &self,
        kind: Kind,
        name: &str,
        bytes: &[u8],
        scrubber: &Scrubber,
    ) -> Result<Vec<u8>, String> {
        match kind {
            Kind::Event => {
                let wire = self.enrich_event(name, bytes, scrubber)?;
                serde_json::to_vec(&wire).map_err(|err| format!("cannot encode the event: {err}"))
            }
            Kind::TurnEnd => {
                let value: serde_json::Value = serde_json::from_slice(bytes)
                    .map_err(|err| format!("the turn-end marker is not JSON ({err})"))?;
                if !value.is_object() {
                    return Err("the turn-end marker is not a JSON object".into());
                }
                let turn = OutboxTurn {
                    files: self.snapshot(scrubber),
                };
                serde_json::to_vec(&turn)
                    .map_err(|err| format!("cannot encode the turn's snapshot: {err}"))
            }
        }
    }

    fn enrich_event(
        &self,
        name: &str,
        bytes: &[u8],
        scrubber: &Scrubber,
    ) -> Result<WireEvent, String> {
        let mut raw: RawEvent = serde_json::from_slice(bytes).map_err(|err| {
            format!("not an event of the event contract ({err}); the hook writes these files, so check what else writes into the inbox")
        })?;
        let event: Event = mindrune_core::check_event(raw.clone())
            .map_err(|err| format!("not a valid event: {err}"))?;
        if event.agent != self.agent {
            return Err(format!(
                "the event is agent `{}`'s, but this runner relays for `{}`; give each agent its own spool (--relay / --spool)",
                event.agent, self.agent
            ));
        }
        // An event without an id gets one from its item's name: the same on every attempt, so
        // the server still recognises it when it comes again.
        if raw.id.as_deref().is_none_or(str::is_empty) {
            raw.id = Some(format!("runner:{}", name.trim_end_matches(".json")));
        }

        let mut files = BTreeMap::new();
        for relative in self.scripts_of(&event.call) {
            // A script whose code the hook kept from the call's start is not read again: the
            // file may have been edited since, and the run is the code that ran.
            if event.code_at_start.contains_key(&relative) {
                continue;
            }
            if let Some(file) = self.read(&relative, MAX_SCRIPT_BYTES, scrubber) {
                files.insert(relative, file);
            }
        }

        // Paths on this machine become workspace-relative: the server knows the workspace
        // under the path it was registered with, which need not be this one.
        if let Some(cwd) = &raw.cwd
            && Path::new(cwd).is_absolute()
            && !Path::new(cwd).starts_with(SANDBOX_ROOT)
            && let Ok(inside) = Path::new(cwd).strip_prefix(self.workspace)
        {
            let inside = inside.to_string_lossy().into_owned();
            raw.cwd = (!inside.is_empty()).then_some(inside);
        }
        if let Some(script) = &raw.script
            && Path::new(script).is_absolute()
            && !Path::new(script).starts_with(SANDBOX_ROOT)
            && let Some(relative) = workspace_relative(script, self.workspace)
        {
            raw.script = Some(relative);
        }

        for value in [&mut raw.command, &mut raw.code].into_iter().flatten() {
            *value = scrubber.scrub(value).text.into_owned();
        }
        for code in raw
            .code_at_start
            .iter_mut()
            .flat_map(|code| code.values_mut())
        {
            *code = scrubber.scrub(code).text.into_owned();
        }
        if let Some(output) = &mut raw.output {
            *output = tail(&scrubber.scrub(output).text, MAX_OUTPUT_BYTES);
        }
        let event = event_json(&raw).map_err(|err| err.to_string())?;
        Ok(WireEvent { event, files })
    }
}

/// Whether a name in `bots/<agent>/` belongs in a snapshot.
fn is_snapshot_name(name: &str) -> bool {
    name == LAB_LOG || (name.ends_with(".ts") && name.len() > ".ts".len())
}

/// What the folder looked like, to tell whether it changed since a turn boundary.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Fingerprint(Vec<(String, Option<Stamp>)>);

/// A file's length, modification time and inode.
type Stamp = (u64, Option<SystemTime>, u64);

/// The wire's name for why a file could not be read.
fn problem(relative: &str, err: &ReadError) -> FileProblem {
    match err {
        ReadError::Symlink(_) => FileProblem::Symlink,
        ReadError::TooLarge { .. } => FileProblem::TooLarge,
        ReadError::NotText(_) => FileProblem::NotText,
        ReadError::NotAFile(_) | ReadError::Outside(_) => FileProblem::NotAFile,
        // The wire has no word for a failed read; the server treats the file like one it
        // cannot use, which is what it is until the read works again.
        ReadError::Io { .. } => {
            tracing::warn!("cannot read {relative}: {err}; sent as unreadable");
            FileProblem::NotAFile
        }
    }
}

/// The last `limit` bytes of `text`, cut at a character boundary, marked with `…` when cut.
fn tail(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: &str = "hunter2-Pa55word-xyz";

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let bots = dir.path().join("bots/buzz");
        std::fs::create_dir_all(&bots).unwrap();
        std::fs::write(
            bots.join("bot.env"),
            format!("BOT_USERNAME=buzz\nPASSWORD={PASSWORD}\nSERVER=localhost\n"),
        )
        .unwrap();
        std::fs::write(
            bots.join("chop.ts"),
            format!("// login with {PASSWORD}\nawait bot.chop();\n"),
        )
        .unwrap();
        std::fs::write(bots.join("mine.ts"), "await bot.mine();\n").unwrap();
        std::fs::write(bots.join(LAB_LOG), "Share: oaks regrow fast\n").unwrap();
        std::fs::write(bots.join("notes.txt"), "not sent").unwrap();
        dir
    }

    fn folder(dir: &tempfile::TempDir) -> AgentFolder<'_> {
        AgentFolder {
            workspace: dir.path(),
            agent: "buzz",
        }
    }

    fn enrich_event(
        folder: &AgentFolder<'_>,
        event: serde_json::Value,
    ) -> Result<WireEvent, String> {
        let scrubber = folder.scrubber().unwrap();
        let bytes = folder.enrich(
            Kind::Event,
            "1-2-3-event.json",
            event.to_string().as_bytes(),
            &scrubber,
        )?;
        Ok(serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn a_latin1_bot_env_is_scrubbed_in_every_reading_and_a_missing_one_scrubs_shapes_only() {
        let dir = workspace();
        std::fs::write(
            dir.path().join("bots/buzz/bot.env"),
            b"# \xe9t\xe9\nPASSWORD=h\xe9llo-Secr3t-xyz # ops\n",
        )
        .unwrap();
        let scrubber = folder(&dir).scrubber().unwrap();
        let text = "h\u{e9}llo-Secr3t-xyz and h\u{fffd}llo-Secr3t-xyz";
        assert_eq!(
            scrubber.scrub(text).text,
            "[redacted] and [redacted]",
            "both readings scrubbed"
        );
        std::fs::remove_file(dir.path().join("bots/buzz/bot.env")).unwrap();
        assert!(folder(&dir).scrubber().is_ok());
    }

    #[test]
    fn a_bot_env_that_cannot_be_read_gives_no_scrubber_and_names_the_file() {
        let dir = workspace();
        std::fs::remove_file(dir.path().join("bots/buzz/bot.env")).unwrap();
        std::fs::create_dir(dir.path().join("bots/buzz/bot.env")).unwrap();
        let err = folder(&dir).scrubber().unwrap_err().to_string();
        assert!(
            err.starts_with("cannot read bots/buzz/bot.env (")
                && err.contains("will not record buzz's runs")
                && err.ends_with("or remove it"),
            "{err}"
        );
    }

    #[test]
    fn an_event_carries_the_scripts_it_ran_scrubbed() {
        let dir = workspace();
        let folder = folder(&dir);
        let wire = enrich_event(
            &folder,
            serde_json::json!({"id": "c1", "agent": "buzz", "command": format!("cd bots/buzz && PASSWORD={PASSWORD} bun chop.ts; bun bots/pickles/x.ts"),
                               "cwd": "/work", "ok": true, "output": format!("logged in as buzz/{PASSWORD}")}),
        )
        .unwrap();
        assert_eq!(
            wire.files.keys().collect::<Vec<_>>(),
            vec!["bots/buzz/chop.ts"]
        );
        let WireFile::Text(text) = &wire.files["bots/buzz/chop.ts"] else {
            panic!("readable");
        };
        assert!(text.contains("await bot.chop()"));
        let all = serde_json::to_string(&wire).unwrap();
        assert!(!all.contains(PASSWORD), "{all}");
        assert_eq!(wire.event["id"], "c1");
    }

    #[test]
    fn an_execute_code_script_is_read_and_inline_code_carries_no_files() {
        let dir = workspace();
        let folder = folder(&dir);
        let absolute = dir.path().join("bots/buzz/mine.ts");
        let wire = enrich_event(
            &folder,
            serde_json::json!({"id": "c2", "agent": "buzz", "kind": "execute_code", "script": absolute.to_str().unwrap(), "ok": true}),
        )
        .unwrap();
        assert_eq!(
            wire.files.keys().collect::<Vec<_>>(),
            vec!["bots/buzz/mine.ts"]
        );
        // The path on this machine is sent workspace-relative.
        assert_eq!(wire.event["script"], "bots/buzz/mine.ts");
        let wire = enrich_event(
            &folder,
            serde_json::json!({"id": "c3", "agent": "buzz", "kind": "execute_code", "code": "await bot.chop()", "ok": true}),
        )
        .unwrap();
        assert!(wire.files.is_empty());
    }

    #[test]
    fn an_event_without_an_id_gets_one_from_its_item_name() {
        let dir = workspace();
        let wire = enrich_event(
            &folder(&dir),
            serde_json::json!({"agent": "buzz", "command": "bun bots/buzz/chop.ts", "ok": true}),
        )
        .unwrap();
        assert_eq!(wire.event["id"], "runner:1-2-3-event");
    }

    #[test]
    fn corrupt_or_foreign_inbox_items_are_refused_with_a_reason() {
        let dir = workspace();
        let folder = folder(&dir);
        let scrubber = folder.scrubber().unwrap();
        let err = folder
            .enrich(Kind::Event, "x-event.json", b"{oops", &scrubber)
            .unwrap_err();
        assert!(err.contains("not an event"), "{err}");
        let err = enrich_event(
            &folder,
            serde_json::json!({"id": "c", "agent": "pickles", "command": "ls"}),
        )
        .unwrap_err();
        assert!(err.contains("`pickles`") && err.contains("`buzz`"), "{err}");
        let err = enrich_event(
            &folder,
            serde_json::json!({"id": "c", "agent": "buzz", "okay": true}),
        )
        .unwrap_err();
        assert!(err.contains("okay"), "{err}");
        let err = folder
            .enrich(Kind::TurnEnd, "x-turn_end.json", b"[]", &scrubber)
            .unwrap_err();
        assert!(err.contains("turn-end"), "{err}");
    }

    #[test]
    fn a_snapshot_holds_scripts_and_the_lab_log_never_bot_env() {
        let dir = workspace();
        let folder = folder(&dir);
        let scrubber = folder.scrubber().unwrap();
        std::fs::write(dir.path().join("bots/buzz/binary.ts"), [0xff, 0xfe]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("bots/buzz/link.ts")).unwrap();
        let snapshot = folder.snapshot(&scrubber);
        assert_eq!(
            snapshot.keys().map(String::as_str).collect::<Vec<_>>(),
            vec![
                "bots/buzz/binary.ts",
                "bots/buzz/chop.ts",
                "bots/buzz/lab_log.md",
                "bots/buzz/link.ts",
                "bots/buzz/mine.ts"
            ]
        );
        assert_eq!(
            snapshot["bots/buzz/binary.ts"],
            WireFile::Unreadable(FileProblem::NotText)
        );
        assert_eq!(
            snapshot["bots/buzz/link.ts"],
            WireFile::Unreadable(FileProblem::Symlink)
        );
        assert!(!serde_json::to_string(&snapshot).unwrap().contains(PASSWORD));
    }

    #[test]
    fn the_fingerprint_changes_with_the_folder() {
        let dir = workspace();
        let folder = folder(&dir);
        let before = folder.fingerprint();
        assert_eq!(before, folder.fingerprint());
        std::fs::write(
            dir.path().join("bots/buzz/lab_log.md"),
            "Share: more\nand more\n",
        )
        .unwrap();
        assert_ne!(before, folder.fingerprint());
    }

    #[test]
    fn a_long_output_keeps_its_end() {
        let text = format!("{}XP: Woodcutting +1,250", "é".repeat(MAX_OUTPUT_BYTES));
        let kept = tail(&text, MAX_OUTPUT_BYTES);
        assert!(kept.len() <= MAX_OUTPUT_BYTES + "…".len());
        assert!(kept.ends_with("XP: Woodcutting +1,250"));
        assert!(kept.starts_with('…'));
    }
}
