//! The workspace's ledger: one SQLite file holding the cards, the usage log, evidence,
//! suggestions and the search index.
//!
//! Its write transaction (`BEGIN IMMEDIATE`) doubles as the workspace lock: every change under
//! `skills/` happens inside [`Ledger::locked`], so the MCP server and the human's `mindrune
//! card approve` in another process never move the same folder at once, and two revisions of
//! one skill are applied one after the other (the second then finds a stale fingerprint).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension as _, Row, Transaction, params};

use super::PlaybookError;

/// Migrations, in order. Never edit one that has landed; add the next.
const MIGRATIONS: [&str; 3] = [
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_fixer_token.sql"),
    include_str!("migrations/0003_search_stamp.sql"),
];

pub struct Ledger {
    path: PathBuf,
    connection: Mutex<Connection>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind {
    Create,
    Revise,
    Revert,
    Retire,
}

impl CardKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CardKind::Create => "create",
            CardKind::Revise => "revise",
            CardKind::Revert => "revert",
            CardKind::Retire => "retire",
        }
    }

    fn parse(text: &str) -> CardKind {
        match text {
            "create" => CardKind::Create,
            "revise" => CardKind::Revise,
            "revert" => CardKind::Revert,
            _ => CardKind::Retire,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardState {
    /// Waiting for the human.
    Waiting,
    /// Approved (by the human or on its own) and done.
    Applied,
    /// Turned down by the human, with a reason.
    Rejected,
    /// Approved, but the change could not be applied (a stale fingerprint, a blocking check);
    /// the outcome says why and nothing changed.
    Refused,
}

impl CardState {
    pub fn as_str(self) -> &'static str {
        match self {
            CardState::Waiting => "waiting",
            CardState::Applied => "applied",
            CardState::Rejected => "rejected",
            CardState::Refused => "refused",
        }
    }

    fn parse(text: &str) -> CardState {
        match text {
            "waiting" => CardState::Waiting,
            "applied" => CardState::Applied,
            "rejected" => CardState::Rejected,
            _ => CardState::Refused,
        }
    }
}

/// One card in the human's inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub id: i64,
    pub kind: CardKind,
    pub skill: String,
    pub state: CardState,
    /// Who filed it: `assistant`, `human`, `observer`, `carry-over` or `fixer`.
    pub filed_by: String,
    pub filed_at: String,
    /// The proposed `SKILL.md` (create, revise, revert).
    pub proposal: Option<String>,
    /// The fingerprint of the live file the change was written against (revise, revert, retire).
    pub fingerprint: Option<String>,
    /// The live version when the card was filed.
    pub base_version: Option<u32>,
    /// Revert: the kept version it restores.
    pub restore_version: Option<u32>,
    /// Revise: the report it answers.
    pub report_id: Option<i64>,
    /// Why it was filed, in the filer's words (a retire question, the observer's suggestion).
    pub why: Option<String>,
    pub answered_at: Option<String>,
    /// `human` or `auto`.
    pub answered_by: Option<String>,
    /// The human's reason for turning it down.
    pub reason: Option<String>,
    /// What happened when it was answered ("live as v4", or why it was refused).
    pub outcome: Option<String>,
}

/// A card about to be filed (also kept in the journal, see `journal::FiledCard`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct NewCard {
    pub(crate) skill: String,
    pub(crate) filed_by: String,
    pub(crate) proposal: Option<String>,
    pub(crate) fingerprint: Option<String>,
    pub(crate) base_version: Option<u32>,
    pub(crate) restore_version: Option<u32>,
    pub(crate) report_id: Option<i64>,
    pub(crate) why: Option<String>,
}

/// One line of the usage log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLine {
    pub id: i64,
    pub(crate) at: String,
    pub skill: String,
    pub revision: Option<u32>,
    /// `read` or `correction`.
    pub kind: String,
    /// A read: whether it went through. A correction: always true.
    pub ok: bool,
    pub step: Option<u32>,
    /// Where the record of the turn is on disk, when the host said.
    pub turn: Option<String>,
}

const CARD_COLUMNS: &str = "id, kind, skill, state, filed_by, filed_at, proposal, fingerprint, \
     base_version, restore_version, report_id, why, answered_at, answered_by, reason, outcome";

fn card_from_row(row: &Row<'_>) -> rusqlite::Result<Card> {
    Ok(Card {
        id: row.get(0)?,
        kind: CardKind::parse(&row.get::<_, String>(1)?),
        skill: row.get(2)?,
        state: CardState::parse(&row.get::<_, String>(3)?),
        filed_by: row.get(4)?,
        filed_at: row.get(5)?,
        proposal: row.get(6)?,
        fingerprint: row.get(7)?,
        base_version: row.get(8)?,
        restore_version: row.get(9)?,
        report_id: row.get(10)?,
        why: row.get(11)?,
        answered_at: row.get(12)?,
        answered_by: row.get(13)?,
        reason: row.get(14)?,
        outcome: row.get(15)?,
    })
}

fn usage_from_row(row: &Row<'_>) -> rusqlite::Result<UsageLine> {
    Ok(UsageLine {
        id: row.get(0)?,
        at: row.get(1)?,
        skill: row.get(2)?,
        revision: row.get(3)?,
        kind: row.get(4)?,
        ok: row.get(5)?,
        step: row.get(6)?,
        turn: row.get(7)?,
    })
}

/// The time now as RFC 3339 UTC, to the second.
pub(crate) fn now() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl Ledger {
    pub(crate) fn open(path: &Path) -> Result<Ledger, PlaybookError> {
        let fail = |source| PlaybookError::Ledger {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open(path).map_err(fail)?;
        connection
            .busy_timeout(Duration::from_secs(30))
            .map_err(fail)?;
        connection
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
            )
            .map_err(fail)?;
        let ledger = Ledger {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        };
        ledger.migrate()?;
        Ok(ledger)
    }

    fn fail(&self) -> impl Fn(rusqlite::Error) -> PlaybookError + '_ {
        move |source| PlaybookError::Ledger {
            path: self.path.clone(),
            source,
        }
    }

    fn migrate(&self) -> Result<(), PlaybookError> {
        self.locked(|tx| {
            let done: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
            let done = done as usize;
            for (index, sql) in MIGRATIONS.iter().enumerate().skip(done) {
                tx.execute_batch(sql)?;
                tx.execute_batch(&format!("PRAGMA user_version = {}", index + 1))?;
            }
            Ok(())
        })
    }

    /// Runs `work` in one write transaction that holds the workspace lock: committed when it
    /// returns `Ok`, rolled back otherwise. File changes under `skills/` happen inside it.
    pub(crate) fn locked<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, PlaybookError>,
    ) -> Result<T, PlaybookError> {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let tx = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(self.fail())?;
        let value = work(&tx)?;
        tx.commit().map_err(self.fail())?;
        Ok(value)
    }

    /// Runs a read.
    pub(crate) fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, PlaybookError> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        work(&connection).map_err(self.fail())
    }

    pub fn card(&self, id: i64) -> Result<Option<Card>, PlaybookError> {
        self.read(|connection| card_by_id(connection, id))
    }

    /// Cards newest first: the waiting ones only, or all.
    pub fn cards(&self, waiting_only: bool) -> Result<Vec<Card>, PlaybookError> {
        self.read(|connection| {
            let sql = format!(
                "SELECT {CARD_COLUMNS} FROM cards {} ORDER BY id DESC",
                if waiting_only {
                    "WHERE state = 'waiting'"
                } else {
                    ""
                }
            );
            let mut statement = connection.prepare(&sql)?;
            statement
                .query_map([], card_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
    }

    /// The usage log, oldest first, for one skill or all.
    pub fn usage(&self, skill: Option<&str>) -> Result<Vec<UsageLine>, PlaybookError> {
        self.read(|connection| {
            let mut statement = connection.prepare(
                "SELECT id, at, skill, revision, kind, ok, step, turn FROM usage \
                 WHERE ?1 IS NULL OR skill = ?1 ORDER BY id",
            )?;
            statement
                .query_map(params![skill], usage_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
    }

    /// One report (a correction line of the usage log) by its id.
    pub fn report(&self, id: i64) -> Result<Option<UsageLine>, PlaybookError> {
        self.read(|connection| {
            connection
                .query_row(
                    "SELECT id, at, skill, revision, kind, ok, step, turn FROM usage WHERE id = ?1 AND kind = 'correction'",
                    [id],
                    usage_from_row,
                )
                .optional()
        })
    }

    /// Writes one line of the usage log on its own (a read).
    pub(crate) fn log_read(
        &self,
        skill: &str,
        revision: Option<u32>,
        ok: bool,
        turn: Option<&str>,
    ) -> Result<(), PlaybookError> {
        self.locked(|tx| {
            tx.execute(
                "INSERT INTO usage (at, skill, revision, kind, ok, turn) VALUES (?1, ?2, ?3, 'read', ?4, ?5)",
                params![now(), skill, revision, ok, turn],
            )?;
            Ok(())
        })
    }

    /// Evidence added to a skill by a second success of a task accepted as done.
    pub fn evidence(&self, skill: &str) -> Result<Vec<(String, String)>, PlaybookError> {
        self.read(|connection| {
            let mut statement =
                connection.prepare("SELECT at, text FROM evidence WHERE skill = ?1 ORDER BY id")?;
            statement
                .query_map([skill], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
    }
}

impl From<rusqlite::Error> for PlaybookError {
    /// Errors inside a locked transaction; the ledger's path is not at hand there, so they are
    /// named by the file every ledger has.
    fn from(source: rusqlite::Error) -> Self {
        PlaybookError::Ledger {
            path: PathBuf::from(".mindrune/playbooks.sqlite3"),
            source,
        }
    }
}

pub(crate) fn card_by_id(connection: &Connection, id: i64) -> rusqlite::Result<Option<Card>> {
    connection
        .query_row(
            &format!("SELECT {CARD_COLUMNS} FROM cards WHERE id = ?1"),
            [id],
            card_from_row,
        )
        .optional()
}

/// Files a card in the waiting state and returns its id.
pub(crate) fn file_card(
    tx: &Transaction<'_>,
    kind: CardKind,
    card: &NewCard,
) -> Result<i64, PlaybookError> {
    tx.execute(
        "INSERT INTO cards (kind, skill, state, filed_by, filed_at, proposal, fingerprint, \
         base_version, restore_version, report_id, why) \
         VALUES (?1, ?2, 'waiting', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            kind.as_str(),
            card.skill,
            card.filed_by,
            now(),
            card.proposal,
            card.fingerprint,
            card.base_version,
            card.restore_version,
            card.report_id,
            card.why,
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Marks a card answered. Only a waiting card can be: the `WHERE` makes a second answer (even
/// from another process) change nothing, and the caller checks the count.
pub(crate) fn answer_card(
    tx: &Transaction<'_>,
    id: i64,
    state: CardState,
    answered_by: &str,
    reason: Option<&str>,
    outcome: &str,
) -> Result<bool, PlaybookError> {
    let changed = tx.execute(
        "UPDATE cards SET state = ?2, answered_at = ?3, answered_by = ?4, reason = ?5, outcome = ?6 \
         WHERE id = ?1 AND state = 'waiting'",
        params![id, state.as_str(), now(), answered_by, reason, outcome],
    )?;
    Ok(changed == 1)
}

/// Writes what happened to a card that stays waiting (an approval that could not be applied
/// and is left for the human to mend).
pub(crate) fn note_card(tx: &Transaction<'_>, id: i64, outcome: &str) -> Result<(), PlaybookError> {
    tx.execute(
        "UPDATE cards SET outcome = ?2 WHERE id = ?1 AND state = 'waiting'",
        params![id, outcome],
    )?;
    Ok(())
}

/// Waiting cards of one kind for one skill (or any skill when `skill` is `None`).
pub(crate) fn waiting_count(
    tx: &Connection,
    kind: CardKind,
    skill: Option<&str>,
) -> rusqlite::Result<usize> {
    tx.query_row::<i64, _, _>(
        "SELECT count(*) FROM cards WHERE state = 'waiting' AND kind = ?1 AND (?2 IS NULL OR skill = ?2)",
        params![kind.as_str(), skill],
        |row| row.get(0),
    )
    .map(|count| count as usize)
}

/// Files again, under its own number, a card a crash took before its transaction committed
/// (the apply journal kept it); a card already there is left as it is.
pub(crate) fn refile_card(
    tx: &Transaction<'_>,
    id: i64,
    kind: &str,
    card: &NewCard,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR IGNORE INTO cards (id, kind, skill, state, filed_by, filed_at, proposal, \
         fingerprint, base_version, restore_version, report_id, why) \
         VALUES (?1, ?2, ?3, 'waiting', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            id,
            kind,
            card.skill,
            card.filed_by,
            now(),
            card.proposal,
            card.fingerprint,
            card.base_version,
            card.restore_version,
            card.report_id,
            card.why,
        ],
    )?;
    Ok(())
}

/// The newest waiting card that would create `skill`.
pub(crate) fn waiting_create_card(
    connection: &Connection,
    skill: &str,
) -> rusqlite::Result<Option<i64>> {
    connection
        .query_row(
            "SELECT id FROM cards WHERE kind = 'create' AND skill = ?1 AND state = 'waiting' ORDER BY id DESC",
            [skill],
            |row| row.get(0),
        )
        .optional()
}

/// The revision card filed for a report, if one was.
pub(crate) fn revision_card_for_report(
    connection: &Connection,
    report: i64,
) -> rusqlite::Result<Option<i64>> {
    connection
        .query_row(
            "SELECT id FROM cards WHERE kind = 'revise' AND report_id = ?1",
            [report],
            |row| row.get(0),
        )
        .optional()
}

/// Keeps one more piece of evidence for a skill.
pub(crate) fn add_evidence(tx: &Transaction<'_>, skill: &str, text: &str) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO evidence (at, skill, text) VALUES (?1, ?2, ?3)",
        params![now(), skill, text],
    )?;
    Ok(())
}

/// A correction the assistant reported, with the digest of the fixer's token when a fixer was
/// started on it; returns the report's id.
pub(crate) fn add_correction(
    tx: &Transaction<'_>,
    skill: &str,
    revision: u32,
    step: u32,
    turn: Option<&str>,
    fixer_token_digest: Option<&str>,
) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO usage (at, skill, revision, kind, ok, step, turn, fixer_token) VALUES (?1, ?2, ?3, 'correction', 1, ?4, ?5, ?6)",
        params![now(), skill, revision, step, turn, fixer_token_digest],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Writes why the fixer stopped on a report; whether there was such a report.
pub(crate) fn note_fixer_stopped(
    tx: &Transaction<'_>,
    report: i64,
    reason: &str,
) -> rusqlite::Result<bool> {
    let changed = tx.execute(
        "UPDATE usage SET fixer_note = ?2 WHERE id = ?1 AND kind = 'correction'",
        params![report, reason],
    )?;
    Ok(changed != 0)
}

/// The digest of the token the fixer of a report was given (`None`: no fixer was started).
pub(crate) fn fixer_token_digest(
    connection: &Connection,
    report: i64,
) -> rusqlite::Result<Option<String>> {
    connection.query_row(
        "SELECT fixer_token FROM usage WHERE id = ?1",
        [report],
        |row| row.get(0),
    )
}

/// The fixer's notes on a skill's reports, oldest first: (report id, note).
pub(crate) fn fixer_notes(
    connection: &Connection,
    skill: &str,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut statement = connection.prepare(
        "SELECT id, fixer_note FROM usage WHERE skill = ?1 AND fixer_note IS NOT NULL ORDER BY id",
    )?;
    statement
        .query_map([skill], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect()
}

/// Keeps a suggestion for the assistant; returns its id.
pub(crate) fn add_suggestion(
    tx: &Transaction<'_>,
    source: &str,
    text: &str,
) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO suggestions (at, source, text) VALUES (?1, ?2, ?3)",
        params![now(), source, text],
    )?;
    Ok(tx.last_insert_rowid())
}

/// How many suggestions the assistant has not been shown.
pub(crate) fn unshown_suggestions(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row(
        "SELECT count(*) FROM suggestions WHERE shown = 0",
        [],
        |row| row.get(0),
    )
}

/// The suggestions not shown yet, oldest first, marked shown.
pub(crate) fn take_unshown_suggestions(tx: &Transaction<'_>) -> rusqlite::Result<Vec<String>> {
    let texts: Vec<String> = {
        let mut statement =
            tx.prepare("SELECT text FROM suggestions WHERE shown = 0 ORDER BY id")?;
        statement
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?
    };
    tx.execute("UPDATE suggestions SET shown = 1 WHERE shown = 0", [])?;
    Ok(texts)
}

/// How many of the observer's suggestions have a text matching a `LIKE` pattern.
pub(crate) fn observer_suggestions_like(
    connection: &Connection,
    pattern: &str,
) -> rusqlite::Result<i64> {
    connection.query_row(
        "SELECT count(*) FROM suggestions WHERE source = 'observer' AND text LIKE ?1",
        [pattern],
        |row| row.get(0),
    )
}

/// One row of the search index's bookkeeping (`skill_indexed`).
pub(crate) struct IndexedSkill {
    pub(crate) name: String,
    /// The FTS row, or -1 for a skill that is known but not searchable (draft, retired,
    /// unreadable).
    pub(crate) search_row: i64,
    pub(crate) stamp: String,
}

/// A skill's searchable text, one FTS column each.
pub(crate) struct SearchText<'a> {
    pub(crate) name: &'a str,
    pub(crate) trigger: &'a str,
    pub(crate) use_when: &'a str,
    pub(crate) not_when: &'a str,
    pub(crate) steps: &'a str,
    pub(crate) body: &'a str,
}

/// A search result row: name, use_when, trigger and BM25 rank.
pub(crate) type SearchRow = (String, String, String, f64);

/// Every indexed skill, by name, unranked (rank 0).
pub(crate) fn search_all(
    connection: &Connection,
    limit: usize,
) -> rusqlite::Result<Vec<SearchRow>> {
    let mut statement = connection
        .prepare("SELECT name, use_when, trigger, 0.0 FROM skill_search ORDER BY name LIMIT ?1")?;
    statement
        .query_map([limit as i64], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?
        .collect()
}

/// The skills an FTS5 `MATCH` expression finds, best first.
pub(crate) fn search_matching(
    connection: &Connection,
    expression: &str,
    limit: usize,
) -> rusqlite::Result<Vec<SearchRow>> {
    let mut statement = connection.prepare(
        "SELECT name, use_when, trigger, bm25(skill_search, 10.0, 5.0, 5.0, 1.0, 2.0, 1.0) AS rank \
         FROM skill_search WHERE skill_search MATCH ?1 ORDER BY rank LIMIT ?2",
    )?;
    statement
        .query_map(params![expression, limit as i64], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?
        .collect()
}

pub(crate) fn indexed_skills(connection: &Connection) -> rusqlite::Result<Vec<IndexedSkill>> {
    let mut statement = connection.prepare("SELECT name, search_row, stamp FROM skill_indexed")?;
    statement
        .query_map([], |row| {
            Ok(IndexedSkill {
                name: row.get(0)?,
                search_row: row.get(1)?,
                stamp: row.get(2)?,
            })
        })?
        .collect()
}

/// Adds a skill's text to the search index; returns its FTS row.
pub(crate) fn add_search_row(tx: &Transaction<'_>, text: &SearchText<'_>) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO skill_search (name, trigger, use_when, not_when, steps, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            text.name,
            text.trigger,
            text.use_when,
            text.not_when,
            text.steps,
            text.body,
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

pub(crate) fn remove_search_row(tx: &Transaction<'_>, search_row: i64) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM skill_search WHERE rowid = ?1", [search_row])?;
    Ok(())
}

/// Notes what the index holds of a skill, and the stamp of the file it was read from.
pub(crate) fn note_indexed(
    tx: &Transaction<'_>,
    name: &str,
    fingerprint: &str,
    search_row: i64,
    stamp: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT OR REPLACE INTO skill_indexed (name, fingerprint, search_row, stamp) VALUES (?1, ?2, ?3, ?4)",
        params![name, fingerprint, search_row, stamp],
    )?;
    Ok(())
}

pub(crate) fn forget_indexed(tx: &Transaction<'_>, name: &str) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM skill_indexed WHERE name = ?1", [name])?;
    Ok(())
}
