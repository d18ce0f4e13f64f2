//! The avatar's game state for the owner's dashboard: a JSON file holding rs-sdk's
//! `BotWorldState` (`--state-file`), read whenever it changes and sent as
//! [`AvatarStats`] when what the dashboard shows changed.
//!
//! Levels come from `skills[]` (the base level: a boosted or drained level is not what the
//! avatar has) with their `experience`, gear from `equipment[]`, wealth from the coins in `inventory[]` plus the
//! coins last seen in the bank. The bank is visible only while it is open, so what was last
//! seen there is kept (in the spool, `bank.json`) and sent until it is seen again. Quests come
//! from a top-level `quests` array, when the file has one. An `inspect_state` answer
//! (`{metadata, state}`) works too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::spool::write_atomic;
use crate::wire::AvatarStats;

/// The largest state file read; rs-sdk's whole state is a few hundred kilobytes.
const MAX_STATE_BYTES: u64 = 16 * 1024 * 1024;

/// The spool file that keeps the bank as last seen.
pub(crate) const BANK_FILE: &str = "bank.json";

/// Reads the state file when it changes and keeps what is due to be sent.
pub(crate) struct StateWatch {
    path: PathBuf,
    bank_file: PathBuf,
    stamp: Option<(u64, Option<SystemTime>, u64)>,
    bank: Option<BTreeMap<String, i64>>,
    pending: Option<AvatarStats>,
    sent: Option<AvatarStats>,
}

impl StateWatch {
    /// Watches `path`; the bank as last seen is kept in `spool/bank.json`.
    pub(crate) fn new(path: &Path, spool: &Path) -> StateWatch {
        let bank_file = spool.join(BANK_FILE);
        let bank = std::fs::read(&bank_file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        StateWatch {
            path: path.to_path_buf(),
            bank_file,
            stamp: None,
            bank,
            pending: None,
            sent: None,
        }
    }

    /// Reads the file again if it changed; a state worth sending becomes pending. A file that
    /// cannot be read or is not a state is reported once per change and otherwise ignored: the
    /// program writing it may be half-way through.
    pub(crate) fn poll(&mut self) {
        let Ok(metadata) = std::fs::metadata(&self.path) else {
            return;
        };
        // The inode too: a writer that replaces the file by a rename within one tick of the
        // clock, at the same length, still makes a new stamp.
        use std::os::unix::fs::MetadataExt as _;
        let stamp = Some((metadata.len(), metadata.modified().ok(), metadata.ino()));
        if stamp == self.stamp {
            return;
        }
        self.stamp = stamp;
        if metadata.len() > MAX_STATE_BYTES {
            tracing::warn!(
                "{} is {} bytes, over the {MAX_STATE_BYTES}-byte limit of a state file; not read",
                self.path.display(),
                metadata.len()
            );
            return;
        }
        let value = match std::fs::read(&self.path)
            .map_err(|err| err.to_string())
            .and_then(|bytes| {
                serde_json::from_slice::<Value>(&bytes).map_err(|err| err.to_string())
            }) {
            Ok(value) => value,
            Err(err) => {
                tracing::warn!(
                    "cannot read the state file {}: {err}; waiting for its next change",
                    self.path.display()
                );
                return;
            }
        };
        let bank_before = self.bank.clone();
        let mut stats = match stats_from_state(&value, &mut self.bank) {
            Ok(stats) => stats,
            Err(err) => {
                tracing::warn!(
                    "{}: {err}; waiting for its next change",
                    self.path.display()
                );
                return;
            }
        };
        if self.bank != bank_before
            && let Some(bank) = &self.bank
            && let Ok(bytes) = serde_json::to_vec(bank)
            && let (Some(dir), Some(name)) = (self.bank_file.parent(), self.bank_file.file_name())
            && let Err(err) = write_atomic(dir, &name.to_string_lossy(), &bytes)
        {
            tracing::warn!("cannot keep the bank as last seen: {err}");
        }
        let unchanged = self
            .sent
            .as_ref()
            .is_some_and(|sent| same_stats(sent, &stats));
        if unchanged {
            self.pending = None;
            return;
        }
        stats.at = metadata.modified().ok().and_then(rfc3339);
        self.pending = Some(stats);
    }

    /// The state due to be sent, if any.
    pub(crate) fn pending(&self) -> Option<&AvatarStats> {
        self.pending.as_ref()
    }

    /// The pending state was delivered (or refused: it is not sent again until it changes).
    pub(crate) fn done(&mut self) {
        if let Some(stats) = self.pending.take() {
            self.sent = Some(stats);
        }
    }
}

/// Whether two states show the same on the dashboard (when they were read aside).
fn same_stats(a: &AvatarStats, b: &AvatarStats) -> bool {
    a.levels == b.levels
        && a.xp == b.xp
        && a.quests == b.quests
        && a.wealth == b.wealth
        && a.gear == b.gear
        && a.bank == b.bank
}

fn rfc3339(time: SystemTime) -> Option<String> {
    time::OffsetDateTime::from(time)
        .format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// The stats of one `BotWorldState`. `bank` is the bank as last seen; it is updated when the
/// state shows the bank open.
pub(crate) fn stats_from_state(
    value: &Value,
    bank: &mut Option<BTreeMap<String, i64>>,
) -> Result<AvatarStats, String> {
    let Value::Object(top) = value else {
        return Err("not a JSON object (rs-sdk's BotWorldState)".into());
    };
    // An `inspect_state` answer wraps the state.
    let state = match top.get("state") {
        Some(inner @ Value::Object(_)) if !top.contains_key("skills") => inner,
        _ => value,
    };
    let Some(skills) = state.get("skills").and_then(Value::as_array) else {
        return Err("has no `skills` array; is this rs-sdk's BotWorldState?".into());
    };
    let mut stats = AvatarStats::default();
    for skill in skills {
        let Some(name) = skill.get("name").and_then(Value::as_str) else {
            continue;
        };
        let level = skill
            .get("baseLevel")
            .and_then(Value::as_u64)
            .or_else(|| skill.get("level").and_then(Value::as_u64));
        if let Some(level) = level.and_then(|l| u32::try_from(l).ok()) {
            stats.levels.insert(name.to_string(), level);
        }
        if let Some(xp) = skill.get("experience").and_then(Value::as_u64) {
            stats.xp.insert(name.to_string(), xp);
        }
    }
    stats.gear = items(state.get("equipment"))
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let carried: i64 = items(state.get("inventory"))
        .into_iter()
        .filter(|(name, _)| is_coins(name))
        .map(|(_, count)| count)
        .sum();
    if let Some(seen) = state.get("bank")
        && seen.get("isOpen").and_then(Value::as_bool) == Some(true)
    {
        let mut now = BTreeMap::new();
        for (name, count) in items(seen.get("items")) {
            *now.entry(name).or_insert(0) += count;
        }
        *bank = Some(now);
    }
    let banked: i64 = bank
        .iter()
        .flatten()
        .filter(|(name, _)| is_coins(name))
        .map(|(_, count)| *count)
        .sum();
    if state.get("inventory").is_some() || bank.is_some() {
        stats.wealth = Some(carried.saturating_add(banked));
    }
    stats.bank = bank.clone().unwrap_or_default();
    let quests = top
        .get("quests")
        .or_else(|| state.get("quests"))
        .and_then(Value::as_array);
    for quest in quests.into_iter().flatten() {
        if let Some(name) = quest_done(quest) {
            stats.quests.push(name);
        }
    }
    Ok(stats)
}

fn is_coins(name: &str) -> bool {
    name.eq_ignore_ascii_case("coins")
}

/// The named items of an inventory-like array (`[{name, count}]`; empty slots are `null` or
/// nameless and left out).
fn items(value: Option<&Value>) -> Vec<(String, i64)> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let name = item.get("name").and_then(Value::as_str)?.trim();
            if name.is_empty() {
                return None;
            }
            let count = item.get("count").and_then(Value::as_i64).unwrap_or(1);
            Some((name.to_string(), count))
        })
        .collect()
}

/// A quest of the `quests` array that is done: a name, or an object with a `name` whose
/// completion fields (if any) say it is done.
fn quest_done(quest: &Value) -> Option<String> {
    match quest {
        Value::String(name) if !name.trim().is_empty() => Some(name.trim().to_string()),
        Value::Object(fields) => {
            let name = fields.get("name").and_then(Value::as_str)?.trim();
            if name.is_empty() {
                return None;
            }
            let flagged_undone = ["complete", "completed", "done"]
                .iter()
                .any(|flag| fields.get(*flag).and_then(Value::as_bool) == Some(false));
            let status_undone = fields
                .get("status")
                .and_then(Value::as_str)
                .is_some_and(|s| {
                    !["complete", "completed", "done", "finished"]
                        .iter()
                        .any(|done| s.eq_ignore_ascii_case(done))
                });
            (!flagged_undone && !status_undone).then(|| name.to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn world(bank_open: bool) -> Value {
        json!({
            "tick": 100, "inGame": true,
            "player": {"name": "buzz", "combatLevel": 3},
            "skills": [
                {"name": "Woodcutting", "level": 17, "baseLevel": 15, "experience": 2500},
                {"name": "Attack", "level": 1, "baseLevel": 1, "experience": 0}
            ],
            "inventory": [
                {"slot": 0, "id": 995, "name": "Coins", "count": 120},
                {"slot": 1, "id": 1351, "name": "Bronze axe", "count": 1},
                null
            ],
            "equipment": [{"slot": 3, "id": 1277, "name": "Bronze sword", "count": 1}, null],
            "bank": {"isOpen": bank_open, "items": [{"name": "Coins", "count": 1000}, {"name": "Logs", "count": 50}]}
        })
    }

    #[test]
    fn levels_gear_and_wealth_come_from_the_world_state() {
        let mut bank = None;
        let stats = stats_from_state(&world(true), &mut bank).unwrap();
        assert_eq!(
            stats.levels["Woodcutting"], 15,
            "the base level, not the boosted one"
        );
        assert_eq!(stats.levels["Attack"], 1);
        assert_eq!(stats.gear, vec!["Bronze sword"]);
        assert_eq!(stats.wealth, Some(1120));
        assert_eq!(stats.bank["Logs"], 50);
        assert!(stats.quests.is_empty());
    }

    #[test]
    fn experience_comes_from_each_skill_and_a_change_of_it_is_sent() {
        let mut bank = None;
        let stats = stats_from_state(&world(true), &mut bank).unwrap();
        assert_eq!(stats.xp["Woodcutting"], 2500);
        assert_eq!(stats.xp["Attack"], 0);
        // XP moves long before a level does: a gain at the same level is news to the owner.
        let mut later = world(true);
        later["skills"][0]["experience"] = json!(2600);
        let gained = stats_from_state(&later, &mut bank).unwrap();
        assert_eq!(gained.levels, stats.levels);
        assert!(!same_stats(&stats, &gained));
        // A skill without `experience` (an older SDK) still has its level, and no XP.
        let mut older = world(true);
        older["skills"][1]
            .as_object_mut()
            .unwrap()
            .remove("experience");
        let older = stats_from_state(&older, &mut bank).unwrap();
        assert_eq!(older.levels["Attack"], 1);
        assert!(!older.xp.contains_key("Attack"));
    }

    #[test]
    fn the_bank_as_last_seen_counts_while_it_is_closed() {
        let mut bank = None;
        let closed = stats_from_state(&world(false), &mut bank).unwrap();
        assert_eq!(closed.wealth, Some(120), "never seen: only what is carried");
        assert!(closed.bank.is_empty());
        stats_from_state(&world(true), &mut bank).unwrap();
        let closed = stats_from_state(&world(false), &mut bank).unwrap();
        assert_eq!(closed.wealth, Some(1120));
        assert_eq!(closed.bank["Coins"], 1000);
    }

    #[test]
    fn quests_come_from_a_top_level_array_and_inspect_state_answers_work() {
        let mut state = world(false);
        state["quests"] = json!(["Cook's Assistant", {"name": "The Restless Ghost", "status": "in_progress"}, {"name": "Rune Mysteries", "completed": true}]);
        let wrapped = json!({"metadata": {"username": "buzz"}, "state": state});
        let stats = stats_from_state(&wrapped, &mut None).unwrap();
        assert_eq!(stats.quests, vec!["Cook's Assistant", "Rune Mysteries"]);
        assert_eq!(stats.levels["Woodcutting"], 15);
    }

    #[test]
    fn a_file_that_is_no_world_state_says_so() {
        let err = stats_from_state(&json!({"tick": 1}), &mut None).unwrap_err();
        assert!(err.contains("skills"), "{err}");
        assert!(stats_from_state(&json!([1]), &mut None).is_err());
    }

    #[test]
    fn a_watch_sends_only_changes_and_keeps_the_bank() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::fs::write(&path, world(true).to_string()).unwrap();
        let mut watch = StateWatch::new(&path, dir.path());
        watch.poll();
        assert_eq!(watch.pending().unwrap().wealth, Some(1120));
        assert!(watch.pending().unwrap().at.is_some());
        watch.done();
        // The same stats written again (the tick moved on) are not sent again.
        let mut later = world(true);
        later["tick"] = json!(101);
        std::fs::write(&path, later.to_string()).unwrap();
        watch.poll();
        assert!(watch.pending().is_none());
        // A new watch (a restarted runner) still knows the bank while it is closed.
        let mut restarted = StateWatch::new(&path, dir.path());
        std::fs::write(&path, world(false).to_string()).unwrap();
        restarted.poll();
        assert_eq!(restarted.pending().unwrap().wealth, Some(1120));
    }
}
