//! The runner's spool: three folders under one root (by default
//! `<MINDRUNE_HOME>/runner/<agent>/`) that carry every tool call and turn end from the agent's
//! hook to the server, through crashes and server restarts.
//!
//! * `inbox/`: the hook (`mindrune hook claude-code --relay DIR`) writes each finished call as
//!   one file holding the event contract's JSON object, and a `turn_end` marker when the agent's
//!   turn ends. Writing a file here is all the hook does, so it never waits for the network.
//! * `outbox/`: the runner moves each inbox item here, in order, after adding what the server
//!   needs from the agent's files (the scripts a call ran, the folder's snapshot at a turn
//!   end), scrubbed of the bot's secrets. An item leaves the outbox only once the server
//!   answered 2xx.
//! * `rejected/`: items the server (or the runner) refused, each with a `.error.txt` beside it
//!   saying why, so nothing is retried forever and nothing disappears without a trace.
//!
//! Names sort in arrival order: `<millis, 13 digits>-<pid, 10 digits>-<counter, 6 digits>-<kind>.json`.
//! An item keeps its name from inbox to outbox, so a runner killed between writing the outbox
//! copy and deleting the inbox file finds both and only deletes the inbox file: the item is
//! sent once. Every write is atomic (a hidden temp file in the same folder, fsynced, renamed,
//! then the folder fsynced), so a folder listing never shows a partial item.

use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mindrune_core::{Call, Event, EventKind, RawEvent};
use mindrune_engine::{Replace, write_atomic_with};

/// Where the hook puts items for the runner.
pub const INBOX: &str = "inbox";
/// Where the runner keeps items until the server took them.
pub const OUTBOX: &str = "outbox";
/// Where refused items go, each with the reason beside it.
pub const REJECTED: &str = "rejected";
/// Where the hook notes calls that started (its `PreToolUse` notes), in relay mode.
pub const PENDING: &str = "pending";
/// The agent's instructions as the server last gave them, for the hook's `SessionStart` (it
/// needs no network and no library): written at the runner's start.
pub const INSTRUCTIONS: &str = "instructions.md";
/// A session of the agent is starting and wants `family-skills/` brought up to date first: the
/// hook's `SessionStart` writes it (the time, as text) and waits; the runner fetches the mirror,
/// writes it and the instructions, then removes it ([`ask_fresh_mirror`], [`fresh_mirror_asked`]).
pub(crate) const FRESH_MIRROR: &str = "fresh-mirror-wanted";
/// The Claude Code hook's failures, one JSON line each (`{"at": millis, …}`), which the hook
/// writes where it keeps its notes: in relay mode, the spool's root.
pub const HOOK_FAILURES: &str = "hook-failures.jsonl";

/// How many hook failures the file in `root` holds at or after `since` (millis).
pub(crate) fn hook_failures_since(root: &Path, since: i64) -> usize {
    #[derive(serde::Deserialize)]
    struct At {
        at: i64,
    }
    fs::read_to_string(root.join(HOOK_FAILURES))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<At>(line).ok())
        .filter(|failure| failure.at >= since)
        .count()
}

/// When the server last took something from this spool (milliseconds since the Unix epoch, as
/// text): `mindrune doctor` says how long ago a runner last delivered.
pub const LAST_DELIVERY: &str = "last-delivery";
/// The file a runner holds a lock on while it uses the spool.
const LOCK: &str = ".lock";

/// Hidden temp files older than this are left over from a crash and swept away at a runner's
/// start; younger ones may belong to a hook writing right now.
const STALE_TEMP: Duration = Duration::from_secs(10 * 60);

/// What a spool item carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One finished tool call.
    Event,
    /// The agent's turn ended.
    TurnEnd,
}

impl Kind {
    fn suffix(self) -> &'static str {
        match self {
            Kind::Event => "event",
            Kind::TurnEnd => "turn_end",
        }
    }

    /// The kind a spool file's name says, or `None` for a name no spool writer makes.
    pub fn of_name(name: &str) -> Option<Kind> {
        let stem = name.strip_suffix(".json")?;
        if stem.ends_with("-turn_end") {
            Some(Kind::TurnEnd)
        } else if stem.ends_with("-event") {
            Some(Kind::Event)
        } else {
            None
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error(
        "cannot {action} `{path}`: {source}; check that the spool folder is writable and the disk has room"
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "another runner is already using the spool `{0}`; stop it first, or give this one its own --spool"
    )]
    Locked(PathBuf),
    #[error("the hook's event cannot be written as JSON: {0}")]
    Encode(String),
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SpoolError + 'a {
    move |source| SpoolError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// One item in a spool folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    pub name: String,
    pub path: PathBuf,
    /// `None` when the name is not one a spool writer makes (the item is refused).
    pub kind: Option<Kind>,
    /// Its size in bytes, to keep batches under the server's body limit.
    pub len: u64,
}

/// A fresh item name for `kind`, sorting after every name this process made before.
pub(crate) fn item_name(kind: Kind) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let counter = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{millis:013}-{:010}-{counter:06}-{}.json",
        std::process::id(),
        kind.suffix()
    )
}

/// Writes `dir/name` atomically and durably with the engine's writer: a hidden temp file in the
/// same folder (`.NAME.tmp-PID`, which [`temp_writer`] reads back), written in full and fsynced,
/// renamed over the name, then the folder fsynced so the rename survives a power loss. The temp
/// file is removed when anything fails.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), SpoolError> {
    let target = dir.join(name);
    let how = Replace {
        mode: None,
        sync_folder: true,
    };
    write_atomic_with(&target, bytes, how).map_err(io("write", &target))
}

fn sync_dir(dir: &Path) -> Result<(), SpoolError> {
    mindrune_engine::sync_dir(dir).map_err(io("sync", dir))
}

fn create_dir(path: &Path) -> Result<(), SpoolError> {
    fs::create_dir_all(path).map_err(io("create", path))
}

/// The event contract's object for a checked event: what the hook writes into the inbox.
pub(crate) fn raw_event(event: &Event) -> RawEvent {
    let (kind, command, cwd, script, code) = match &event.call {
        Call::Shell { command, cwd } => (
            EventKind::Shell,
            Some(command.clone()),
            cwd.clone(),
            None,
            None,
        ),
        Call::ExecuteScript { script } => (
            EventKind::ExecuteCode,
            None,
            None,
            Some(script.clone()),
            None,
        ),
        Call::ExecuteCode { code } => {
            (EventKind::ExecuteCode, None, None, None, Some(code.clone()))
        }
    };
    RawEvent {
        id: event.id.clone(),
        agent: event.agent.clone(),
        at: event.at,
        kind: Some(kind),
        command,
        cwd,
        script,
        code,
        background: event.background.then_some(true),
        ok: event.ok,
        duration_ms: event.duration_ms,
        output: event.output.clone(),
        measures: event.measures.clone(),
        damage: event.damage.clone(),
        code_at_start: (!event.code_at_start.is_empty()).then(|| event.code_at_start.clone()),
    }
}

/// The JSON object of a raw event without its empty fields.
pub(crate) fn event_json(raw: &RawEvent) -> Result<serde_json::Value, SpoolError> {
    let mut value = serde_json::to_value(raw).map_err(|err| SpoolError::Encode(err.to_string()))?;
    if let serde_json::Value::Object(object) = &mut value {
        object.retain(|_, field| !field.is_null());
    }
    Ok(value)
}

/// A random event id, for a call the host gave none: the server recognises a batch sent again
/// by its events' ids, so every event needs one.
fn random_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the operating system's random source works");
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("relay:{hex}")
}

/// Asks the runner of the spool at `root` to bring `family-skills/` up to date now (a session
/// is starting); what was written, to recognise the answer by ([`fresh_mirror_done`]).
pub fn ask_fresh_mirror(root: &Path, now: i64) -> Result<String, SpoolError> {
    let stamp = now.to_string();
    create_dir(root)?;
    write_atomic(root, FRESH_MIRROR, stamp.as_bytes())?;
    Ok(stamp)
}

/// The request of [`ask_fresh_mirror`] waiting in the spool at `root`, if any.
pub(crate) fn fresh_mirror_asked(root: &Path) -> Option<String> {
    fs::read_to_string(root.join(FRESH_MIRROR)).ok()
}

/// Whether the request `stamp` was answered: the runner removed it (or a later session's
/// request replaced it, which the runner answers no earlier).
pub fn fresh_mirror_done(root: &Path, stamp: &str) -> bool {
    fresh_mirror_asked(root).is_none_or(|now| now != stamp)
}

/// The runner answered the request `stamp`: it goes, unless a newer one replaced it meanwhile.
pub(crate) fn answer_fresh_mirror(root: &Path, stamp: &str) {
    if fresh_mirror_asked(root).as_deref() == Some(stamp) {
        let _ = fs::remove_file(root.join(FRESH_MIRROR));
    }
}

/// Writes one finished call into `root/inbox/` for the runner (what the hook does in relay
/// mode). A call without an id gets a random one. Returns the item's path.
pub fn relay_event(root: &Path, event: &Event) -> Result<PathBuf, SpoolError> {
    let mut raw = raw_event(event);
    if raw.id.as_deref().is_none_or(str::is_empty) {
        raw.id = Some(random_id());
    }
    let bytes = serde_json::to_vec(&event_json(&raw)?)
        .map_err(|err| SpoolError::Encode(err.to_string()))?;
    relay(root, Kind::Event, &bytes)
}

/// Writes a turn-end marker into `root/inbox/` (the agent's turn ended). Returns its path.
pub fn relay_turn_end(root: &Path) -> Result<PathBuf, SpoolError> {
    relay(root, Kind::TurnEnd, br#"{"boundary":"turn_end"}"#)
}

fn relay(root: &Path, kind: Kind, bytes: &[u8]) -> Result<PathBuf, SpoolError> {
    let inbox = root.join(INBOX);
    create_dir(&inbox)?;
    let name = item_name(kind);
    write_atomic(&inbox, &name, bytes)?;
    Ok(inbox.join(name))
}

/// A runner's hold on its spool: the three folders, locked against a second runner (two
/// runners taking the same inbox would each send what the other sent).
#[derive(Debug)]
pub(crate) struct Spool {
    root: PathBuf,
    inbox: PathBuf,
    outbox: PathBuf,
    rejected: PathBuf,
    /// Held for the runner's life; the lock goes with the file.
    _lock: File,
}

impl Spool {
    /// Opens (creating) the spool at `root` and locks it.
    pub(crate) fn open(root: &Path) -> Result<Spool, SpoolError> {
        let (inbox, outbox, rejected) = (root.join(INBOX), root.join(OUTBOX), root.join(REJECTED));
        for dir in [&inbox, &outbox, &rejected] {
            create_dir(dir)?;
        }
        let lock_path = root.join(LOCK);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io("open", &lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                return Err(SpoolError::Locked(root.to_path_buf()));
            }
            Err(fs::TryLockError::Error(err)) => return Err(io("lock", &lock_path)(err)),
        }
        let spool = Spool {
            root: root.to_path_buf(),
            inbox,
            outbox,
            rejected,
            _lock: lock,
        };
        spool.sweep_temp_files();
        Ok(spool)
    }

    /// Notes that the server just took something from the spool. Only a note for people (no
    /// decision reads it), so it is written plainly, without the fsyncs a spooled item gets.
    pub(crate) fn note_delivery(&self, now: i64) {
        let path = self.root.join(LAST_DELIVERY);
        if let Err(err) = fs::write(&path, now.to_string()) {
            tracing::debug!("cannot note the delivery in {}: {err}", path.display());
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn inbox(&self) -> &Path {
        &self.inbox
    }

    pub(crate) fn outbox(&self) -> &Path {
        &self.outbox
    }

    #[cfg(test)]
    pub(crate) fn rejected(&self) -> &Path {
        &self.rejected
    }

    /// The inbox's items, oldest first.
    pub(crate) fn inbox_items(&self) -> Result<Vec<Item>, SpoolError> {
        list(&self.inbox)
    }

    /// The outbox's items, oldest first.
    pub(crate) fn outbox_items(&self) -> Result<Vec<Item>, SpoolError> {
        list(&self.outbox)
    }

    /// Whether the outbox already holds an item of this name (the runner stopped between
    /// writing it and deleting its inbox file).
    pub(crate) fn in_outbox(&self, name: &str) -> bool {
        fs::symlink_metadata(self.outbox.join(name)).is_ok()
    }

    /// Writes an item's outbox copy (atomically, under the same name).
    pub(crate) fn put_outbox(&self, name: &str, bytes: &[u8]) -> Result<(), SpoolError> {
        write_atomic(&self.outbox, name, bytes)
    }

    /// Deletes an item that is done with. A missing file is fine (gone already). The folder is
    /// not fsynced: should a power loss bring the file back, it is sent again, and the server
    /// recognises its events by their ids.
    pub(crate) fn remove(&self, item: &Item) -> Result<(), SpoolError> {
        match fs::remove_file(&item.path) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == ErrorKind::NotFound => Ok(()),
            Err(err) => Err(io("remove", &item.path)(err)),
        }
    }

    /// Moves an item into `rejected/` with the reason in `<name>.error.txt` beside it.
    pub(crate) fn reject(&self, item: &Item, reason: &str) -> Result<PathBuf, SpoolError> {
        let note = format!(
            "{reason}\n\nThis item was not sent (again). Fix what the message says and move the \
             file back into {} to send it, or delete it.\n",
            item.path
                .parent()
                .map_or_else(|| "the outbox".to_string(), |p| p.display().to_string())
        );
        write_atomic(
            &self.rejected,
            &format!("{}.error.txt", item.name),
            note.as_bytes(),
        )?;
        let target = self.rejected.join(&item.name);
        match fs::rename(&item.path, &target) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::NotFound => {}
            Err(err) => return Err(io("move into rejected/", &item.path)(err)),
        }
        sync_dir(&self.rejected)?;
        Ok(target)
    }

    /// Removes hidden temp files a killed writer left behind. Only a runner writes the outbox
    /// and `rejected/`, and this one holds the spool's lock, so every temp file there is a dead
    /// runner's and goes at once. The inbox is written by hooks too: a temp file there goes
    /// when its writer (the pid in its name) is gone, or when it is older than ten minutes (a
    /// pid may be reused).
    fn sweep_temp_files(&self) {
        for (dir, ours) in [
            (&self.inbox, false),
            (&self.outbox, true),
            (&self.rejected, true),
        ] {
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let Some(writer) = temp_writer(name) else {
                    continue;
                };
                let stale = ours
                    || writer.is_none_or(|pid| !Path::new(&format!("/proc/{pid}")).exists())
                    || entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|modified| modified.elapsed().ok())
                        .is_some_and(|age| age > STALE_TEMP);
                if stale {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
    }
}

/// For a hidden temp file of [`write_atomic`] (`.NAME.tmp-PID`, or `.NAME.tmp-PID-COUNTER` as
/// runners before the engine's writer named them), the pid of the process
/// that wrote it (`None` when the name has none); `None` outright for any other file.
fn temp_writer(name: &str) -> Option<Option<u32>> {
    if !name.starts_with('.') {
        return None;
    }
    let (_, tail) = name.rsplit_once(".tmp-")?;
    Some(tail.split('-').next().and_then(|pid| pid.parse().ok()))
}

/// The items of a spool folder, sorted by name (arrival order). Hidden files (temp files in
/// progress) are not items.
fn list(dir: &Path) -> Result<Vec<Item>, SpoolError> {
    let mut items = Vec::new();
    for entry in fs::read_dir(dir).map_err(io("list", dir))? {
        let entry = entry.map_err(io("list", dir))?;
        let Ok(name) = entry.file_name().into_string() else {
            // A name that is not UTF-8 is no spool writer's; it is still shown to the caller
            // as an item of no kind so that it ends up in rejected/ instead of blocking.
            let path = entry.path();
            items.push(Item {
                name: path
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                path,
                kind: None,
                len: 0,
            });
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            continue;
        }
        let len = entry.metadata().map_or(0, |m| m.len());
        items.push(Item {
            kind: if file_type.is_file() {
                Kind::of_name(&name)
            } else {
                None
            },
            path: entry.path(),
            name,
            len,
        });
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_core::parse_line;

    fn shell_event(id: Option<&str>) -> Event {
        parse_line(
            &serde_json::json!({"id": id, "agent": "buzz", "command": "bun bots/buzz/chop.ts", "cwd": "/work", "ok": true, "duration_ms": 1200})
                .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn an_atomic_write_leaves_only_the_named_file() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "a.json", b"{\"x\":1}").unwrap();
        write_atomic(dir.path(), "a.json", b"{\"x\":2}").unwrap();
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["a.json"]);
        assert_eq!(fs::read(dir.path().join("a.json")).unwrap(), b"{\"x\":2}");
    }

    #[test]
    fn a_failed_atomic_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // A folder where the file should go: the rename fails, the temp file is cleaned up.
        fs::create_dir(dir.path().join("taken.json")).unwrap();
        fs::write(dir.path().join("taken.json").join("inside"), "x").unwrap();
        let err = write_atomic(dir.path(), "taken.json", b"{}").unwrap_err();
        assert!(err.to_string().contains("taken.json"), "{err}");
        let hidden = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with('.')
            })
            .count();
        assert_eq!(hidden, 0);
    }

    #[test]
    fn items_list_in_arrival_order_and_temp_files_are_not_items() {
        let dir = tempfile::tempdir().unwrap();
        let mut made = Vec::new();
        for index in 0..30 {
            let kind = if index % 7 == 6 {
                Kind::TurnEnd
            } else {
                Kind::Event
            };
            let path = if kind == Kind::TurnEnd {
                relay_turn_end(dir.path()).unwrap()
            } else {
                relay_event(dir.path(), &shell_event(Some(&format!("call-{index}")))).unwrap()
            };
            made.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                kind,
            ));
        }
        fs::write(dir.path().join(INBOX).join(".x.json.tmp-1-1"), "{").unwrap();
        let listed = list(&dir.path().join(INBOX)).unwrap();
        let listed: Vec<(String, Kind)> = listed
            .into_iter()
            .map(|item| (item.name, item.kind.unwrap()))
            .collect();
        assert_eq!(listed, made);
        // Each event kept its id, in the contract's shape.
        let first = fs::read_to_string(dir.path().join(INBOX).join(&made[0].0)).unwrap();
        let event = parse_line(&first).unwrap();
        assert_eq!(event.id.as_deref(), Some("call-0"));
        assert!(
            !first.contains("null"),
            "empty fields are left out: {first}"
        );
    }

    #[test]
    fn names_sort_by_time_then_process_then_counter() {
        let a = item_name(Kind::Event);
        let b = item_name(Kind::TurnEnd);
        assert!(a < b, "{a} < {b}");
        assert_eq!(Kind::of_name(&a), Some(Kind::Event));
        assert_eq!(Kind::of_name(&b), Some(Kind::TurnEnd));
        assert_eq!(Kind::of_name("notes.txt"), None);
        assert_eq!(Kind::of_name("1-2-3-other.json"), None);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(parts[0].len(), 13);
        assert_eq!(parts[1].len(), 10);
        assert_eq!(parts[2].len(), 6);
    }

    #[test]
    fn an_event_without_an_id_gets_a_random_one() {
        let dir = tempfile::tempdir().unwrap();
        let one = relay_event(dir.path(), &shell_event(None)).unwrap();
        let two = relay_event(dir.path(), &shell_event(None)).unwrap();
        let id = |path: &Path| {
            parse_line(&fs::read_to_string(path).unwrap())
                .unwrap()
                .id
                .unwrap()
        };
        assert!(id(&one).starts_with("relay:"));
        assert_ne!(id(&one), id(&two));
    }

    #[test]
    fn a_rejected_item_moves_with_its_reason_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        let path = relay_turn_end(dir.path()).unwrap();
        let item = spool.inbox_items().unwrap().remove(0);
        assert_eq!(item.path, path);
        let moved = spool.reject(&item, "inbox item is not JSON").unwrap();
        assert!(moved.exists());
        assert!(!path.exists());
        let note =
            fs::read_to_string(spool.rejected().join(format!("{}.error.txt", item.name))).unwrap();
        assert!(note.starts_with("inbox item is not JSON"), "{note}");
        assert!(spool.inbox_items().unwrap().is_empty());
    }

    #[test]
    fn a_second_runner_cannot_take_the_same_spool() {
        let dir = tempfile::tempdir().unwrap();
        let _first = Spool::open(dir.path()).unwrap();
        let err = Spool::open(dir.path()).unwrap_err();
        assert!(matches!(err, SpoolError::Locked(_)), "{err}");
        assert!(err.to_string().contains("--spool"), "{err}");
    }

    #[test]
    fn a_killed_runner_s_temp_files_in_the_outbox_are_swept_at_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join(OUTBOX);
        let rejected = dir.path().join(REJECTED);
        fs::create_dir_all(&outbox).unwrap();
        fs::create_dir_all(&rejected).unwrap();
        // Fresh, and named for a live process (this one): a runner killed a moment ago, whose
        // pid was taken again. The lock says no other runner writes here.
        let me = std::process::id();
        let temp = outbox.join(format!(".0000000000001-x-event.json.tmp-{me}-3"));
        let note = rejected.join(format!(".n.json.error.txt.tmp-{me}-4"));
        let item = outbox.join("0000000000001-0000000001-000000-event.json");
        fs::write(&temp, "{\"half").unwrap();
        fs::write(&note, "half").unwrap();
        fs::write(&item, "{}").unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert!(!temp.exists() && !note.exists());
        assert!(item.exists(), "an item is never swept");
        assert_eq!(spool.outbox_items().unwrap().len(), 1);
    }

    #[test]
    fn an_inbox_temp_file_of_a_dead_writer_is_swept_and_a_live_hook_s_kept() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join(INBOX);
        fs::create_dir_all(&inbox).unwrap();
        // No process has a pid this high (the kernel's limit is 2^22).
        let dead = inbox.join(".a.json.tmp-4999999-0");
        let live = inbox.join(format!(".b.json.tmp-{}-1", std::process::id()));
        fs::write(&dead, "{").unwrap();
        fs::write(&live, "{").unwrap();
        let _spool = Spool::open(dir.path()).unwrap();
        assert!(!dead.exists());
        assert!(live.exists());
    }

    #[test]
    fn stale_temp_files_are_swept_at_open_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = dir.path().join(INBOX);
        fs::create_dir_all(&inbox).unwrap();
        let stale = inbox.join(".a.json.tmp-1-0");
        let fresh = inbox.join(".b.json.tmp-1-1");
        fs::write(&stale, "{").unwrap();
        fs::write(&fresh, "{").unwrap();
        let old = SystemTime::now() - Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&stale)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let _spool = Spool::open(dir.path()).unwrap();
        assert!(!stale.exists());
        assert!(fresh.exists());
    }
}
