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
pub struct NewCard {
    pub skill: String,
    pub filed_by: String,
    pub proposal: Option<String>,
    pub fingerprint: Option<String>,
    pub base_version: Option<u32>,
    pub restore_version: Option<u32>,
    pub report_id: Option<i64>,
    pub why: Option<String>,
}

/// One line of the usage log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLine {
    pub id: i64,
    pub at: String,
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
pub fn now() -> String {
    let now = time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    now.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl Ledger {
    pub fn open(path: &Path) -> Result<Ledger, PlaybookError> {
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

    pub fn path(&self) -> &Path {
        &self.path
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
    pub fn locked<T>(
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
    pub fn read<T>(
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
    pub fn log_read(
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

pub fn card_by_id(connection: &Connection, id: i64) -> rusqlite::Result<Option<Card>> {
    connection
        .query_row(
            &format!("SELECT {CARD_COLUMNS} FROM cards WHERE id = ?1"),
            [id],
            card_from_row,
        )
        .optional()
}

/// Files a card in the waiting state and returns its id.
pub fn file_card(
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
pub fn answer_card(
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
pub fn note_card(tx: &Transaction<'_>, id: i64, outcome: &str) -> Result<(), PlaybookError> {
    tx.execute(
        "UPDATE cards SET outcome = ?2 WHERE id = ?1 AND state = 'waiting'",
        params![id, outcome],
    )?;
    Ok(())
}

/// Waiting cards of one kind for one skill (or any skill when `skill` is `None`).
pub fn waiting_count(
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
