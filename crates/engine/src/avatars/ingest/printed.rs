//! The avatar's state for the owner's dashboard, read from the World State a run printed.
//!
//! Most rs-sdk checkouts write no state file for `mindrune runner --state-file`, but every run
//! of the fork runner (and every `execute_code`) prints the full `formatWorldState`. What it
//! shows (levels, XP, worn items, the coins carried) is saved as a state file's report would be
//! (`Store::save_avatar_state`, the same JSON, the same wealth-history point). What it does not
//! show (the bank, the quests) is kept as the last report had it, and the state says it was
//! printed (`printed: true`), so the page can tell the owner so.
//!
//! A state file's newer report is never replaced by an older printed one: the store keeps the
//! state with the newest `reported_at`, and a printed state is reported at its run's time.

use std::collections::BTreeMap;

use mindrune_core::RunOutput;
use mindrune_core::Scrubber;
use mindrune_store::{Agent, Millis, Standing};
use serde::{Deserialize, Serialize};

use super::{Ingest, IngestError};

/// The state as the dashboard reads it: the fields of the server's `AvatarStats` (the body of
/// `POST /v1/state`), which this crate cannot name.
#[derive(Debug, Default, Serialize, Deserialize)]
struct PrintedStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    levels: BTreeMap<String, u32>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    xp: BTreeMap<String, u64>,
    quests: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wealth: Option<i64>,
    gear: Vec<String>,
    bank: BTreeMap<String, i64>,
    printed: bool,
}

/// What the last report kept that no printed state shows.
#[derive(Debug, Default, Deserialize)]
struct Unprinted {
    #[serde(default)]
    quests: Vec<String>,
    #[serde(default)]
    bank: BTreeMap<String, i64>,
}

fn is_coins(name: &str) -> bool {
    name.eq_ignore_ascii_case("coins")
}

/// The state JSON and its standing (wealth, total XP and level) for a run's printed full state, the bank and quests taken
/// from `last` (the JSON of the state kept, if any). `None` when the output holds no full state.
pub(crate) fn printed_state(
    out: &RunOutput,
    last: Option<&str>,
    at: Millis,
) -> Option<(String, Standing)> {
    if !out.full_state() {
        return None;
    }
    let inventory = out.inventory.as_ref()?;
    // A state that cannot be read keeps nothing: its next report replaces it anyway.
    let kept: Unprinted = last
        .and_then(|json| serde_json::from_str(json).ok())
        .unwrap_or_default();
    // Wealth as a state file's: the coins carried and the coins last seen in the bank.
    let carried: i64 = inventory
        .items
        .iter()
        .filter(|(name, _)| is_coins(name))
        .map(|(_, n)| i64::from(*n))
        .sum();
    let banked: i64 = kept
        .bank
        .iter()
        .filter(|(name, _)| is_coins(name))
        .map(|(_, n)| *n)
        .fold(0, i64::saturating_add);
    let wealth = carried.saturating_add(banked);
    let stats = PrintedStats {
        at: time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            }),
        levels: out.skill_levels.clone(),
        // Printed XP is whole, grouped (`3,125 xp`); a fraction would be a misread.
        xp: out
            .skill_totals
            .iter()
            .filter(|(skill, _)| out.skill_levels.contains_key(*skill))
            .filter(|(_, xp)| xp.fract() == 0.0 && **xp <= u64::MAX as f64)
            .map(|(skill, xp)| (skill.clone(), *xp as u64))
            .collect(),
        quests: kept.quests,
        wealth: Some(wealth),
        gear: out.equipment.clone(),
        bank: kept.bank,
        printed: true,
    };
    let json = serde_json::to_string(&stats).ok()?;
    Some((json, Standing::of_report(wealth, &stats.levels, &stats.xp)))
}

/// Whether the `Name:` an `execute_code` printed is this avatar's: rs-sdk shows `woody` as
/// `Woody`, and a name's `_` as a space.
fn same_player(printed: &str, agent: &str) -> bool {
    let norm = |s: &str| {
        s.trim()
            .chars()
            .map(|c| if c == '_' || c == '-' { ' ' } else { c })
            .collect::<String>()
            .to_lowercase()
    };
    norm(printed) == norm(agent)
}

impl Ingest<'_> {
    /// Saves the full World State `out` printed at `at` as the avatar's state, when it printed
    /// one. `check_name`: the output may be another bot's (an `execute_code` names its bot
    /// in its code, not to MindRune), so a `Name:` that is not the avatar's is not saved.
    pub(super) fn save_printed_state(
        &self,
        agent: &Agent,
        at: Millis,
        out: &RunOutput,
        scrubber: &Scrubber,
        check_name: bool,
    ) -> Result<(), IngestError> {
        if !out.full_state() {
            return Ok(());
        }
        if check_name
            && let Some(name) = &out.player_name
            && !same_player(name, &agent.name)
        {
            return Ok(());
        }
        let last = self.store.avatar_state(agent.owner, agent.id)?;
        let Some((json, standing)) =
            printed_state(out, last.as_ref().map(|s| s.state.as_str()), at)
        else {
            return Ok(());
        };
        // Item names are free text: scrubbed like everything the library keeps.
        let json = scrubber.scrub(&json).text.into_owned();
        self.store
            .save_avatar_state(agent.owner, agent.id, &json, Some(standing), at)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_core::parse_run_output;

    const DUMP: &str = "── World State ──\n# World State\n## Player\nName: Woody (Combat 3)\n\
        Position: (3222, 3218) Level 0\n\n## Skills\nAttack: 2/5 (388 xp)\nWoodcutting: 20 (3,125 xp)\n\n\
        ## Inventory (25 empty slots)\n- Coins x150\n- Logs x2\n\n## Equipment\n- Bronze sword\n";

    #[test]
    fn a_printed_state_keeps_the_last_bank_and_quests_and_counts_banked_coins() {
        let last = r#"{"levels":{"Attack":1},"quests":["Cook's Assistant"],"wealth":1000,"gear":[],"bank":{"Coins":1000,"Logs":7}}"#;
        let (json, standing) = printed_state(&parse_run_output(DUMP), Some(last), 0).unwrap();
        assert_eq!(
            standing,
            Standing {
                coins: 1150,
                total_xp: Some(388 + 3125),
                total_level: Some(5 + 20),
            }
        );
        let stats: PrintedStats = serde_json::from_str(&json).unwrap();
        assert_eq!(stats.levels["Attack"], 5);
        assert_eq!(stats.xp["Woodcutting"], 3125);
        assert_eq!(stats.gear, ["Bronze sword"]);
        assert_eq!(stats.quests, ["Cook's Assistant"]);
        assert_eq!(stats.bank["Logs"], 7);
        assert!(stats.printed);
        assert_eq!(stats.at.as_deref(), Some("1970-01-01T00:00:00Z"));
    }

    #[test]
    fn a_summary_state_saves_nothing() {
        let summary =
            "── State ──\nPos (1, 2) lvl 0 | HP 10/10\nXP: none gained\nInv 1/28: Coins x5\n";
        assert!(printed_state(&parse_run_output(summary), None, 0).is_none());
    }

    #[test]
    fn a_printed_name_is_the_avatar_s_in_any_case() {
        assert!(same_player("Woody", "woody"));
        assert!(same_player("Big ash", "big_ash"));
        assert!(!same_player("Ash", "woody"));
    }
}
