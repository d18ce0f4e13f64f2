//! The embedded default: SQLite (bundled, WAL).
//!
//! Durability: WAL with `synchronous=NORMAL`. A committed use survives a crash of any process;
//! only a power cut or kernel crash may lose the last few commits, which SQLite's own docs
//! describe as the WAL trade-off. `MINDRUNE_SYNC=full` selects `synchronous=FULL` for hosts
//! that need power-loss durability at some throughput cost.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use mindrune_core::score::{self, Measure, ScoreBreakdown, ScoreInput, UseSample};
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use crate::{
    Agent, AgentId, AvatarState, DeletedAgent, FailedRun, FamilyReuse, HeaderState, Lesson,
    LessonsChange, Lineage, Matched, Millis, NewLesson, NewSnippetUse, NewUse, Owner, OwnerId,
    RecordedSnippetUse, RecordedUse, Result, ScriptSnapshot, Session, SharedSkill, SharingChange,
    SharingKind, SiblingUse, Skill, SkillEntry, SkillHeader, SkillId, Snippet, SnippetId,
    SnippetRuns, Store, StoreError, UnrecordedCall, UnrecordedReason, Version, VersionId,
    VersionStats, VersionSummary,
};
use mindrune_core::sharing::SharingBar;

use crate::common::{
    AGENT_COLUMNS, OWNER_COLUMNS, SKILL_COLUMN_COUNT, SKILL_COLUMNS, SharingState, StoredVersion,
    VERSION_COLUMN_COUNT, VERSION_COLUMNS, VersionRow, audit_version, insert_sample, json_map,
    lines_of, parse_map, sample_from, sharing_change, sorted,
};

/// The migrations, in order. Never edit one that has landed: add the next.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/sqlite/0001_init.sql"),
    include_str!("../migrations/sqlite/0002_sharing.sql"),
    include_str!("../migrations/sqlite/0003_vocabulary.sql"),
    include_str!("../migrations/sqlite/0004_wrapups.sql"),
    include_str!("../migrations/sqlite/0005_server.sql"),
    include_str!("../migrations/sqlite/0006_names_nocase.sql"),
    include_str!("../migrations/sqlite/0007_host_runs.sql"),
    include_str!("../migrations/sqlite/0008_failures.sql"),
];

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times a transaction that found the database busy is tried again.
const BUSY_RETRIES: u32 = 20;
/// How many uses of a version pass before the family's peer median is looked up again.
const PEER_REFRESH_USES: i64 = 20;
/// Score windows kept in memory; past this the cache is cleared (it is only a cache).
const WINDOW_CACHE_LIMIT: usize = 20_000;

/// The newest uses of one version, as the score reads them, and how many uses the version had
/// when they were read. The count tells a stale entry: any writer, in this process or another,
/// bumps it in the same transaction as its insert.
struct CachedWindow {
    uses: i64,
    samples: VecDeque<UseSample>,
}

struct Inner {
    conn: Connection,
    windows: HashMap<i64, CachedWindow>,
}

pub struct SqliteStore {
    inner: Mutex<Inner>,
    location: String,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.location)
            .finish()
    }
}

fn db_err(err: rusqlite::Error) -> StoreError {
    // A full disk and a failing write are the library's surroundings, not a bug: say so, and
    // what to do. SQLite reports a write past the process's file-size limit (EFBIG) as an I/O
    // error, and a short write on a full disk as `SQLITE_FULL`.
    match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull(format!(
            "{err}: the disk holding the library is full; free space on it and run the command \
             again (the change that failed was not stored; what was stored before is kept)"
        )),
        Some(rusqlite::ErrorCode::SystemIoFailure) => StoreError::Database(format!(
            "{err}: the library's files could not be written; check that their disk has free \
             space and is writable (and the process's file-size limit, `ulimit -f`), then run \
             the command again (the change that failed was not stored; what was stored before \
             is kept)"
        )),
        Some(rusqlite::ErrorCode::ReadOnly) => StoreError::Database(format!(
            "{err}: the library's folder or files are read-only; make them writable (or point \
             MINDRUNE_HOME at a writable library) and run the command again (nothing was stored)"
        )),
        _ => StoreError::Database(err.to_string()),
    }
}

/// Below this much free space an I/O failure of the library is taken for a full disk.
const NEARLY_FULL: u64 = 1024 * 1024;

/// A failure of the library at `path` as a full disk, when its disk is (nearly) full. SQLite
/// says `SQLITE_FULL` for a write that finds no room, but only "disk I/O error" when mapping
/// its shared-memory file (`-shm`) on a full disk at open, and the errno behind that is out of
/// safe reach; the disk's free space tells them apart.
fn disk_full_at(path: &Path, err: StoreError) -> StoreError {
    let StoreError::Database(message) = err else {
        return err;
    };
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
    let available = folder
        .and_then(|folder| rustix::fs::statvfs(folder).ok())
        .map(|stat| stat.f_bavail.saturating_mul(stat.f_frsize));
    match (folder, available) {
        (Some(folder), Some(available)) if available < NEARLY_FULL => {
            StoreError::DiskFull(format!(
                "{message} (the disk holding {} has {available} bytes free: it is full)",
                folder.display()
            ))
        }
        _ => StoreError::Database(message),
    }
}

/// The name already in `table` that `name` collides with (the same letters in any case), for
/// the refusal; `name` itself when the row cannot be found.
fn name_taken(conn: &Connection, table: &str, name: &str) -> Result<String> {
    let taken: Option<String> = conn
        .query_row(
            &format!("SELECT name FROM {table} WHERE lower(name) = lower(?1)"),
            [name],
            |row| row.get(0),
        )
        .optional()
        .map_err(db_err)?;
    Ok(taken.unwrap_or_else(|| name.to_string()))
}

fn is_busy(err: &StoreError) -> bool {
    matches!(err, StoreError::Database(msg) if msg.contains("database is locked") || msg.contains("database is busy"))
}

impl SqliteStore {
    /// Opens (creating if needed) the library database at `path` and brings its schema up to
    /// date.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let opened = Connection::open(path)
            .map_err(db_err)
            .and_then(|conn| Self::setup(conn, path.display().to_string()));
        opened.map_err(|err| disk_full_at(path, err))
    }

    /// A private in-memory library, for tests.
    pub fn open_in_memory() -> Result<SqliteStore> {
        let conn = Connection::open_in_memory().map_err(db_err)?;
        Self::setup(conn, ":memory:".into())
    }

    fn setup(conn: Connection, location: String) -> Result<SqliteStore> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        // The query-planner stability guarantee: without it SQLite re-prepares a statement
        // whenever a bound id changes to or from 0 or 1 (owner 1, version 1, …), which cost
        // more than the rest of recording a use. Every query here is keyed by ids, so one plan
        // per statement is the right plan.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map_err(db_err)?;
        let sync = Self::synchronous();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON;"
        ))
        .map_err(db_err)?;
        let mut store = SqliteStore {
            inner: Mutex::new(Inner {
                conn,
                windows: HashMap::new(),
            }),
            location,
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<()> {
        let location = self.location.clone();
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let conn = &mut inner.conn;
        let known = MIGRATIONS.len() as i64;
        // Two processes opening a new library at once must not both run the migrations, so
        // the check and the work share one immediate transaction.
        with_retry(|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let found: i64 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(db_err)?;
            if found > known {
                return Err(StoreError::TooNew {
                    path: location.clone(),
                    found,
                    known,
                });
            }
            for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
                tx.execute_batch(sql).map_err(db_err)?;
                tx.pragma_update(None, "user_version", index as i64 + 1)
                    .map_err(db_err)?;
            }
            tx.commit().map_err(db_err)
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves no half-done transaction behind (rusqlite rolls
        // back on drop), so the connection is still good to use.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` on the library's connection, holding it for the whole call (the copy into
    /// PostgreSQL reads every table in one transaction through it).
    pub(crate) fn with_connection<T>(&self, work: impl FnOnce(&mut Connection) -> T) -> T {
        work(&mut self.lock().conn)
    }

    /// Where the library is (its file), for messages.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// The `synchronous` setting every connection gets: `NORMAL`, or `FULL` with
    /// `MINDRUNE_SYNC=full` (see the module docs).
    pub fn synchronous() -> &'static str {
        match std::env::var("MINDRUNE_SYNC").as_deref() {
            Ok("full") => "FULL",
            _ => "NORMAL",
        }
    }

    /// SQLite's own integrity check; `ok` when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        let inner = self.lock();
        inner
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(db_err)
    }
}

/// Runs a write transaction, trying again while another process holds the database.
fn with_retry<T>(mut work: impl FnMut() -> Result<T>) -> Result<T> {
    let mut attempt = 0;
    loop {
        match work() {
            Err(err) if is_busy(&err) && attempt < BUSY_RETRIES => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(5 * u64::from(attempt)));
            }
            other => return other,
        }
    }
}

/// Each snippet of an agent run since a time, with its runs since then. The plan walks the
/// agent's snippets by `snippets`' unique index (owner_id, agent_id, digest), skips those not run
/// since (`last_used_at` is the newest use's time), and seeks each one's window in
/// `snippet_uses_by_snippet` (snippet_id, at DESC); snippet ids are unique across owners, and
/// the owner is checked on both tables.
const SNIPPET_RUNS_SINCE: &str =
    "SELECT s.snippet_id, s.digest, s.code, SUM(u.ok), COUNT(*), MAX(u.at)
     FROM snippets s JOIN snippet_uses u ON u.snippet_id = s.snippet_id AND u.owner_id = s.owner_id
     WHERE s.owner_id = ?1 AND s.agent_id = ?2 AND s.last_used_at >= ?3 AND u.at >= ?3
     GROUP BY s.snippet_id
     ORDER BY MAX(u.at) DESC, s.snippet_id";

fn owner_from(row: &Row<'_>) -> rusqlite::Result<Owner> {
    Ok(Owner {
        id: OwnerId(row.get(0)?),
        name: row.get(1)?,
        api_key: row.get(2)?,
        eager_sharing: row.get(3)?,
        created_at: row.get(4)?,
    })
}

fn agent_from(row: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        id: AgentId(row.get(0)?),
        owner: OwnerId(row.get(1)?),
        name: row.get(2)?,
        workspace: row.get(3)?,
        created_at: row.get(4)?,
        mirror_refreshed_at: row.get(5)?,
        last_turn_at: row.get(6)?,
        last_wrapup_at: row.get(7)?,
        mirror: row.get(8)?,
    })
}

fn skill_from(row: &Row<'_>) -> rusqlite::Result<Skill> {
    Ok(Skill {
        id: SkillId(row.get(0)?),
        owner: OwnerId(row.get(1)?),
        agent: row.get::<_, Option<i64>>(2)?.map(AgentId),
        agent_name: row.get(3)?,
        name: row.get(4)?,
        path: row.get(5)?,
        kind: row.get(6)?,
        current_version: row.get::<_, Option<i64>>(7)?.map(VersionId),
        created_at: row.get(8)?,
        deleted_at: row.get(9)?,
        tags: lines_of(row.get(10)?),
        header: SkillHeader {
            state: HeaderState::parse(&row.get::<_, String>(11)?),
            goal: row.get(12)?,
            preconditions: row.get(13)?,
            params: row.get(14)?,
            result: row.get(15)?,
            from: row.get(16)?,
            topics: lines_of(row.get(17)?),
        },
        file_digest: row.get(18)?,
    })
}

fn version_from_at(row: &Row<'_>, base: usize) -> rusqlite::Result<Version> {
    let breakdown: Option<String> = row.get(base + 12)?;
    let lineage: Option<String> = row.get(base + 7)?;
    Ok(Version {
        id: VersionId(row.get(base)?),
        owner: OwnerId(row.get(base + 1)?),
        skill: SkillId(row.get(base + 2)?),
        number: row.get(base + 3)?,
        digest: row.get(base + 4)?,
        code: row.get(base + 5)?,
        parent: row.get::<_, Option<i64>>(base + 6)?.map(VersionId),
        lineage: lineage.as_deref().and_then(Lineage::parse),
        inherited: row.get(base + 8)?,
        uses: row.get(base + 9)?,
        ok: row.get(base + 10)?,
        score: row.get(base + 11)?,
        breakdown: breakdown.and_then(|json| serde_json::from_str(&json).ok()),
        measure_key: row.get(base + 13)?,
        rate_per_minute: row.get(base + 14)?,
        created_at: row.get(base + 15)?,
        last_used_at: row.get(base + 16)?,
        shared_at: row.get(base + 17)?,
    })
}

fn version_from(row: &Row<'_>) -> rusqlite::Result<Version> {
    version_from_at(row, 0)
}

fn load_version(conn: &Connection, owner: OwnerId, version: VersionId) -> Result<Version> {
    conn.query_row(
        &format!(
            "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = ?1 AND v.version_id = ?2"
        ),
        params![owner.0, version.0],
        version_from,
    )
    .optional()
    .map_err(db_err)?
    .ok_or_else(|| StoreError::NotFound(format!("version {}", version.0)))
}

fn load_agent(conn: &Connection, owner: OwnerId, agent: AgentId) -> Result<Agent> {
    conn.query_row(
        &format!("SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = ?1 AND agent_id = ?2"),
        params![owner.0, agent.0],
        agent_from,
    )
    .optional()
    .map_err(db_err)?
    .ok_or_else(|| StoreError::NotFound(format!("agent {}", agent.0)))
}

/// Reads a version's newest uses (newest first), as the score needs them.
fn read_window(
    conn: &Connection,
    owner: OwnerId,
    version: VersionId,
) -> Result<VecDeque<UseSample>> {
    let mut statement = conn
        .prepare_cached(
            "SELECT at, ok, agent_id, duration_ms, xp, items, goal_progress, deaths, stuck, items_lost
             FROM uses WHERE owner_id = ?1 AND version_id = ?2
             ORDER BY at DESC, use_id DESC LIMIT ?3",
        )
        .map_err(db_err)?;
    let rows = statement
        .query_map(params![owner.0, version.0, score::WINDOW as i64], |row| {
            Ok(UseSample {
                at: row.get::<_, i64>(0)?.div_euclid(1000),
                ok: row.get(1)?,
                agent: row.get::<_, Option<i64>>(2)?.unwrap_or(0),
                duration_ms: row.get::<_, i64>(3)?.max(0) as u64,
                xp: parse_map(row.get(4)?),
                items: parse_map(row.get(5)?),
                goal_progress: row.get(6)?,
                deaths: row.get::<_, i64>(7)?.clamp(0, i64::from(u32::MAX)) as u32,
                stuck: row.get(8)?,
                items_lost: row.get::<_, i64>(9)?.clamp(0, i64::from(u32::MAX)) as u32,
            })
        })
        .map_err(db_err)?;
    rows.collect::<rusqlite::Result<VecDeque<_>>>()
        .map_err(db_err)
}

/// Median rate of the family's comparable skills: same measure, a shared tag, ≥ 3 uses.
fn peer_median_rate(
    conn: &Connection,
    owner: OwnerId,
    skill: SkillId,
    measure_key: &str,
) -> Result<Option<f64>> {
    let mut statement = conn
        .prepare_cached(
            // The peers are found from this skill's own tags (its few rows by the primary key,
            // then each tag's skills by skill_tags_by_tag), once; each peer is then one look-up.
            // The unary `+` keeps SQLite from walking the whole family by owner_id instead:
            // with every skill tagged alike, that was a scan of the family's tags per skill of
            // the family, quadratic in its size, on every recorded use.
            "SELECT v.rate_per_minute FROM skills s
             JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
             WHERE s.skill_id IN (SELECT peer.skill_id FROM skill_tags mine
                                  CROSS JOIN skill_tags peer ON peer.owner_id = mine.owner_id AND peer.tag = mine.tag
                                  WHERE +mine.owner_id = ?1 AND mine.skill_id = ?2 AND peer.skill_id <> ?2)
               AND +s.owner_id = ?1 AND s.deleted_at IS NULL
               AND v.measure_key = ?3 AND v.uses >= 3",
        )
        .map_err(db_err)?;
    let rates = statement
        .query_map(params![owner.0, skill.0, measure_key], |row| {
            row.get::<_, f64>(0)
        })
        .map_err(db_err)?
        .collect::<rusqlite::Result<Vec<f64>>>()
        .map_err(db_err)?;
    Ok(score::peer_median_rate(rates))
}

fn skill_tags(conn: &Connection, owner: OwnerId, skill: SkillId) -> Result<Vec<String>> {
    let mut statement = conn
        .prepare_cached(
            "SELECT tag FROM skill_tags WHERE owner_id = ?1 AND skill_id = ?2 ORDER BY tag",
        )
        .map_err(db_err)?;
    let tags = statement
        .query_map(params![owner.0, skill.0], |row| row.get(0))
        .map_err(db_err)?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(db_err)?;
    Ok(tags)
}

fn sharing_state(conn: &Connection, owner: OwnerId, skill: SkillId) -> Result<SharingState> {
    conn.prepare_cached(
        "SELECT s.header = 'skill' AND s.deleted_at IS NULL,
                (SELECT MAX(v.number) FROM versions v
                  WHERE v.owner_id = s.owner_id AND v.skill_id = s.skill_id AND v.shared_at IS NOT NULL)
         FROM skills s WHERE s.owner_id = ?1 AND s.skill_id = ?2",
    )
    .map_err(db_err)?
    .query_row(params![owner.0, skill.0], |r| {
        let headed: bool = r.get(0)?;
        let newest_shared: Option<i64> = r.get(1)?;
        Ok(SharingState {
            visible: headed && newest_shared.is_some(),
            newest_shared,
        })
    })
    .optional()
    .map_err(db_err)
    .map(Option::unwrap_or_default)
}

/// Marks the skill's current version shared when the file is headed and the version clears the
/// family's bar on its own runs.
fn share_if_qualified(
    conn: &Connection,
    owner: OwnerId,
    skill: SkillId,
    now: Millis,
) -> Result<()> {
    let candidate = conn
        .prepare_cached(
            "SELECT v.version_id, v.uses, v.score, o.eager_sharing
             FROM skills s
             JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
             JOIN owners o ON o.owner_id = s.owner_id
             WHERE s.owner_id = ?1 AND s.skill_id = ?2 AND s.header = 'skill' AND s.deleted_at IS NULL
               AND v.shared_at IS NULL",
        )
        .map_err(db_err)?
        .query_row(params![owner.0, skill.0], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, bool>(3)?,
            ))
        })
        .optional()
        .map_err(db_err)?;
    if let Some((version, uses, score, eager)) = candidate
        && SharingBar::for_family(eager).cleared_by(uses, score)
    {
        conn.prepare_cached(
            "UPDATE versions SET shared_at = ?3 WHERE owner_id = ?1 AND version_id = ?2",
        )
        .map_err(db_err)?
        .execute(params![owner.0, version, now])
        .map_err(db_err)?;
    }
    Ok(())
}

/// A skill as a sharing change describes it.
struct SkillNow {
    agent: Option<i64>,
    label: String,
    header: String,
    deleted: bool,
    /// The current version's number, runs and score.
    current: Option<(i64, i64, f64)>,
}

/// Compares what the family saw of a skill before a change with what it sees now, and logs
/// (and returns) the difference.
fn note_sharing_change(
    conn: &Connection,
    owner: OwnerId,
    skill: SkillId,
    before: &SharingState,
    now: Millis,
) -> Result<Option<SharingChange>> {
    let after = sharing_state(conn, owner, skill)?;
    if after == *before || (!before.visible && !after.visible) {
        return Ok(None);
    }
    let SkillNow {
        agent,
        label,
        header,
        deleted,
        current,
    } = conn
        .prepare_cached(
            "SELECT s.agent_id, s.agent_name || '/' || s.name, s.header, s.deleted_at IS NOT NULL,
                    v.number, v.uses, v.score
             FROM skills s LEFT JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
             WHERE s.owner_id = ?1 AND s.skill_id = ?2",
        )
        .map_err(db_err)?
        .query_row(params![owner.0, skill.0], |r| {
            let number: Option<i64> = r.get(4)?;
            Ok(SkillNow {
                agent: r.get(0)?,
                label: r.get(1)?,
                header: r.get(2)?,
                deleted: r.get(3)?,
                current: match number {
                    Some(n) => Some((n, r.get(5)?, r.get(6)?)),
                    None => None,
                },
            })
        })
        .map_err(db_err)?;
    let (kind, version, reason) = sharing_change(before, &after, current, deleted, &header);
    conn.prepare_cached(
        "INSERT INTO sharing_events (owner_id, skill_id, agent_id, version_number, kind, reason, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .map_err(db_err)?
    .execute(params![owner.0, skill.0, agent, version, kind.as_str(), reason, now])
    .map_err(db_err)?;
    Ok(Some(SharingChange {
        skill,
        label,
        kind,
        version,
        reason,
        at: now,
    }))
}

impl Store for SqliteStore {
    fn create_owner(&self, name: &str, api_key: &str, now: Millis) -> Result<Owner> {
        let inner = self.lock();
        let result = inner.conn.execute(
            "INSERT INTO owners (name, api_key, created_at) VALUES (?1, ?2, ?3)",
            params![name, api_key, now],
        );
        match result {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let taken = name_taken(&inner.conn, "owners", name)?;
                return Err(crate::common::name_taken("owner", name, &taken));
            }
            Err(e) => return Err(db_err(e)),
        }
        let id = inner.conn.last_insert_rowid();
        Ok(Owner {
            id: OwnerId(id),
            name: name.into(),
            api_key: api_key.into(),
            eager_sharing: false,
            created_at: now,
        })
    }

    fn owner_by_name(&self, name: &str) -> Result<Option<Owner>> {
        let inner = self.lock();
        inner
            .conn
            .query_row(
                &format!("SELECT {OWNER_COLUMNS} FROM owners WHERE name = ?1"),
                [name],
                owner_from,
            )
            .optional()
            .map_err(db_err)
    }

    fn owner(&self, owner: OwnerId) -> Result<Owner> {
        let inner = self.lock();
        inner
            .conn
            .query_row(
                &format!("SELECT {OWNER_COLUMNS} FROM owners WHERE owner_id = ?1"),
                [owner.0],
                owner_from,
            )
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("owner {}", owner.0)))
    }

    fn owners(&self) -> Result<Vec<Owner>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!("SELECT {OWNER_COLUMNS} FROM owners ORDER BY name"))
            .map_err(db_err)?;
        let owners = statement
            .query_map([], owner_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(owners)
    }

    fn create_agent(
        &self,
        owner: OwnerId,
        name: &str,
        workspace: &str,
        now: Millis,
    ) -> Result<Agent> {
        let inner = self.lock();
        let result = inner.conn.execute(
            "INSERT INTO agents (owner_id, name, workspace, created_at)
             SELECT owner_id, ?2, ?3, ?4 FROM owners WHERE owner_id = ?1",
            params![owner.0, name, workspace, now],
        );
        match result {
            Ok(0) => Err(StoreError::NotFound(format!("owner {}", owner.0))),
            Ok(_) => Ok(Agent {
                id: AgentId(inner.conn.last_insert_rowid()),
                owner,
                name: name.into(),
                workspace: workspace.into(),
                created_at: now,
                mirror_refreshed_at: None,
                last_turn_at: None,
                last_wrapup_at: None,
                mirror: None,
            }),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                let taken = name_taken(&inner.conn, "agents", name)?;
                Err(crate::common::name_taken("agent", name, &taken))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    fn agent_by_name(&self, name: &str) -> Result<Option<Agent>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents WHERE name = ?1"
            ))
            .map_err(db_err)?
            .query_row([name], agent_from)
            .optional()
            .map_err(db_err)
    }

    fn agents(&self, owner: OwnerId) -> Result<Vec<Agent>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = ?1 ORDER BY name"
            ))
            .map_err(db_err)?;
        let agents = statement
            .query_map([owner.0], agent_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(agents)
    }

    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.agent_id = ?2 AND s.path = ?3"
            ))
            .map_err(db_err)?
            .query_row(params![owner.0, agent.0, path], skill_from)
            .optional()
            .map_err(db_err)
    }

    fn skill(&self, owner: OwnerId, skill: SkillId) -> Result<Skill> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.skill_id = ?2"
            ))
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], skill_from)
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill.0)))
    }

    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.agent_name = ?2 AND s.name = ?3
                 ORDER BY s.deleted_at IS NOT NULL, s.skill_id DESC LIMIT 1"
            ))
            .map_err(db_err)?
            .query_row(params![owner.0, agent_name, name], skill_from)
            .optional()
            .map_err(db_err)
    }

    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS} FROM versions v
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 AND v.digest = ?2 ORDER BY v.version_id"
            ))
            .map_err(db_err)?;
        let found = statement
            .query_map(params![owner.0, digest], |row| {
                Ok((skill_from(row)?, version_from_at(row, SKILL_COLUMN_COUNT)?))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(found)
    }

    fn version(&self, owner: OwnerId, version: VersionId) -> Result<Version> {
        let inner = self.lock();
        load_version(&inner.conn, owner, version)
    }

    fn match_script(
        &self,
        owner: OwnerId,
        snapshot: &ScriptSnapshot,
        now: Millis,
    ) -> Result<Matched> {
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let agent = load_agent(&tx, owner, snapshot.agent)?;
            let existing = tx
                .prepare_cached(&format!(
                    "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.agent_name = ?2 AND s.path = ?3"
                ))
                .map_err(db_err)?
                .query_row(params![owner.0, agent.name, snapshot.path], skill_from)
                .optional()
                .map_err(db_err)?;
            let new_skill = existing.is_none();
            let before = match &existing {
                Some(skill) => sharing_state(&tx, owner, skill.id)?,
                None => SharingState::default(),
            };
            let skill_id = match &existing {
                Some(skill) => {
                    if skill.deleted_at.is_some() || skill.agent.is_none() {
                        tx.execute(
                            "UPDATE skills SET deleted_at = NULL, agent_id = ?3 WHERE owner_id = ?1 AND skill_id = ?2",
                            params![owner.0, skill.id.0, agent.id.0],
                        )
                        .map_err(db_err)?;
                    }
                    skill.id
                }
                None => {
                    tx.execute(
                        "INSERT INTO skills (owner_id, agent_id, agent_name, name, path, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![owner.0, agent.id.0, agent.name, snapshot.name, snapshot.path, now],
                    )
                    .map_err(db_err)?;
                    SkillId(tx.last_insert_rowid())
                }
            };
            let found = tx
                .prepare_cached(&format!(
                    "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = ?1 AND v.skill_id = ?2 AND v.digest = ?3"
                ))
                .map_err(db_err)?
                .query_row(params![owner.0, skill_id.0, snapshot.digest], version_from)
                .optional()
                .map_err(db_err)?;
            let new_version = found.is_none();
            let version_id = match found {
                Some(version) => version.id,
                None => {
                    // An edit builds on the version the file had; a new file builds on its
                    // origin (a copy, a rename, a sibling's skill), if it has one.
                    let parent = match existing.as_ref().and_then(|s| s.current_version) {
                        Some(current) => Some((load_version(&tx, owner, current)?, Lineage::Edit)),
                        None => match snapshot.origin {
                            Some((origin, lineage)) => {
                                Some((load_version(&tx, owner, origin)?, lineage))
                            }
                            None => None,
                        },
                    };
                    let number: i64 = tx
                        .query_row(
                            "SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE owner_id = ?1 AND skill_id = ?2",
                            params![owner.0, skill_id.0],
                            |r| r.get(0),
                        )
                        .map_err(db_err)?;
                    let inherited = parent
                        .as_ref()
                        .map(|(p, _)| score::inherited_from_parent(p.score));
                    tx.execute(
                        "INSERT INTO versions (owner_id, skill_id, number, digest, code, parent_version_id, lineage,
                                               inherited, score, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                        params![
                            owner.0,
                            skill_id.0,
                            number,
                            snapshot.digest,
                            snapshot.code,
                            parent.as_ref().map(|(p, _)| p.id.0),
                            parent.as_ref().map(|(_, l)| l.as_str()),
                            inherited,
                            inherited.unwrap_or(0.0),
                            now
                        ],
                    )
                    .map_err(db_err)?;
                    VersionId(tx.last_insert_rowid())
                }
            };
            tx.execute(
                "UPDATE skills SET current_version_id = ?3 WHERE owner_id = ?1 AND skill_id = ?2",
                params![owner.0, skill_id.0, version_id.0],
            )
            .map_err(db_err)?;
            let new_tags = sorted(&snapshot.tags);
            if skill_tags(&tx, owner, skill_id)? != new_tags {
                tx.execute(
                    "UPDATE skills SET tags = ?3 WHERE owner_id = ?1 AND skill_id = ?2",
                    params![owner.0, skill_id.0, new_tags.join("\n")],
                )
                .map_err(db_err)?;
                tx.execute(
                    "DELETE FROM skill_tags WHERE owner_id = ?1 AND skill_id = ?2",
                    params![owner.0, skill_id.0],
                )
                .map_err(db_err)?;
                for tag in &snapshot.tags {
                    tx.execute(
                        "INSERT OR IGNORE INTO skill_tags (owner_id, skill_id, tag) VALUES (?1, ?2, ?3)",
                        params![owner.0, skill_id.0, tag],
                    )
                    .map_err(db_err)?;
                }
            }
            let header = &snapshot.header;
            tx.prepare_cached(
                "UPDATE skills SET header = ?3, goal = ?4, preconditions = ?5, params = ?6, result = ?7,
                        from_skill = ?8, topics = ?9, file_digest = COALESCE(?10, file_digest)
                 WHERE owner_id = ?1 AND skill_id = ?2",
            )
            .map_err(db_err)?
            .execute(params![
                owner.0,
                skill_id.0,
                header.state.as_str(),
                header.goal,
                header.preconditions,
                header.params,
                header.result,
                header.from,
                header.topics.join("\n"),
                snapshot.file_digest,
            ])
            .map_err(db_err)?;
            share_if_qualified(&tx, owner, skill_id, now)?;
            let sharing = note_sharing_change(&tx, owner, skill_id, &before, now)?;
            let skill = tx
                .query_row(
                    &format!("SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.skill_id = ?2"),
                    params![owner.0, skill_id.0],
                    skill_from,
                )
                .map_err(db_err)?;
            let version = load_version(&tx, owner, version_id)?;
            tx.commit().map_err(db_err)?;
            Ok(Matched {
                skill,
                version,
                new_skill,
                new_version,
                sharing,
            })
        })
    }

    fn record_use(&self, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse> {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let outcome = with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let row = tx
                .prepare_cached(
                    "SELECT v.skill_id, v.number, v.uses, v.ok, v.score, v.inherited, v.measure_key, v.peer_rate,
                            v.peer_checked_uses, s.tags,
                            s.header = 'skill' AND s.deleted_at IS NULL AND s.current_version_id = v.version_id
                                AND v.shared_at IS NULL
                     FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                     WHERE v.owner_id = ?1 AND v.version_id = ?2",
                )
                .map_err(db_err)?
                .query_row(params![owner.0, new_use.version.0], |r| {
                    Ok(VersionRow {
                        skill: SkillId(r.get(0)?),
                        number: r.get(1)?,
                        uses: r.get(2)?,
                        ok: r.get(3)?,
                        score: r.get(4)?,
                        inherited: r.get(5)?,
                        measure_key: r.get(6)?,
                        peer_rate: r.get(7)?,
                        peer_checked_uses: r.get(8)?,
                        tags: r.get(9)?,
                        may_share: r.get(10)?,
                    })
                })
                .optional()
                .map_err(db_err)?
                .ok_or_else(|| StoreError::NotFound(format!("version {}", new_use.version.0)))?;
            let stats = |uses, ok, score| VersionStats {
                id: new_use.version,
                skill: row.skill,
                number: row.number,
                uses,
                ok,
                score,
            };
            if let Some(event_id) = &new_use.event_id {
                let seen: Option<i64> = tx
                    .prepare_cached("SELECT use_id FROM uses WHERE owner_id = ?1 AND event_id = ?2")
                    .map_err(db_err)?
                    .query_row(params![owner.0, event_id], |r| r.get(0))
                    .optional()
                    .map_err(db_err)?;
                if seen.is_some() {
                    return Ok((false, stats(row.uses, row.ok, row.score), None, None));
                }
            }
            let outcome = &new_use.outcome;
            tx.prepare_cached(
                "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                                   deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure)
                 SELECT ?1, ?2, agent_id, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18
                 FROM agents WHERE owner_id = ?1 AND agent_id = ?3",
            )
            .map_err(db_err)?
            .execute(params![
                owner.0,
                new_use.version.0,
                new_use.agent.0,
                outcome.at,
                outcome.ok,
                outcome.duration_ms.min(i64::MAX as u64) as i64,
                json_map(&outcome.xp),
                json_map(&outcome.items),
                outcome.goal_progress,
                outcome.deaths,
                outcome.stuck,
                outcome.items_lost,
                new_use.source,
                new_use.call,
                new_use.output,
                new_use.event_id,
                new_use.recorded_at,
                outcome.failure,
            ])
            .map_err(db_err)
            .and_then(|n| if n == 1 { Ok(()) } else { Err(StoreError::NotFound(format!("agent {}", new_use.agent.0))) })?;

            // The window: from the cache when no other writer touched this version since it was
            // read, else from the table (which now holds the new use too).
            let cached = inner
                .windows
                .remove(&new_use.version.0)
                .filter(|w| w.uses == row.uses);
            let window = match cached {
                Some(mut cached) => {
                    insert_sample(&mut cached.samples, sample_from(outcome, new_use.agent));
                    cached.samples
                }
                None => read_window(&tx, owner, new_use.version)?,
            };
            let tags = lines_of(row.tags.clone());
            let mut window = window;
            // Newest-first in one slice, rotated in place (no copy of the samples).
            let contiguous: &[UseSample] = window.make_contiguous();
            let measure = Measure::choose(&tags, contiguous);
            let measure_key = measure.key();
            // The family's median is looked up again every PEER_REFRESH_USES uses of this
            // version (or when its measure changes), and kept in the version's row: the same
            // for every process, and no scan of the family's skills on every run.
            let refresh_peers = row.measure_key != measure_key
                || row
                    .peer_checked_uses
                    .is_none_or(|checked| row.uses - checked >= PEER_REFRESH_USES);
            let (peers, peer_checked_uses) = if tags.is_empty() {
                (None, None)
            } else if refresh_peers {
                (
                    peer_median_rate(&tx, owner, row.skill, &measure_key)?,
                    Some(row.uses),
                )
            } else {
                (row.peer_rate, row.peer_checked_uses)
            };
            let breakdown: ScoreBreakdown = score::score(&ScoreInput {
                window: contiguous,
                measure: &measure,
                peer_median_rate: peers,
                inherited: row.inherited,
            });
            tx.prepare_cached(
                "UPDATE versions SET uses = uses + 1, ok = ok + ?3, score = ?4, breakdown = ?5, measure_key = ?6,
                        rate_per_minute = ?7, last_used_at = MAX(COALESCE(last_used_at, ?8), ?8),
                        peer_rate = ?9, peer_checked_uses = ?10
                 WHERE owner_id = ?1 AND version_id = ?2",
            )
            .map_err(db_err)?
            .execute(params![
                owner.0,
                new_use.version.0,
                i64::from(outcome.ok),
                breakdown.total,
                serde_json::to_string(&breakdown).ok(),
                measure_key,
                breakdown.rate_per_minute,
                outcome.at,
                peers,
                peer_checked_uses,
            ])
            .map_err(db_err)?;
            // A headed script is shared right after the run that makes it qualify. The bar is
            // only looked up when the version could clear even the lowest one.
            let lowest = SharingBar::lowest();
            let shared = if row.may_share && lowest.cleared_by(row.uses + 1, breakdown.total) {
                let before = sharing_state(&tx, owner, row.skill)?;
                share_if_qualified(&tx, owner, row.skill, new_use.recorded_at)?;
                note_sharing_change(&tx, owner, row.skill, &before, new_use.recorded_at)?
            } else {
                None
            };
            tx.commit().map_err(db_err)?;
            Ok((
                true,
                stats(
                    row.uses + 1,
                    row.ok + i64::from(outcome.ok),
                    breakdown.total,
                ),
                Some(window),
                shared,
            ))
        })?;
        let (added, version, window, shared) = outcome;
        if let Some(samples) = window {
            if inner.windows.len() >= WINDOW_CACHE_LIMIT {
                inner.windows.clear();
            }
            inner.windows.insert(
                version.id.0,
                CachedWindow {
                    uses: version.uses,
                    samples,
                },
            );
        }
        Ok(RecordedUse {
            added,
            version,
            shared,
        })
    }

    fn record_snippet_use(
        &self,
        owner: OwnerId,
        new_use: &NewSnippetUse,
    ) -> Result<RecordedSnippetUse> {
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let agent = load_agent(&tx, owner, new_use.agent)?;
            let outcome = &new_use.outcome;
            // An event id already stored is a retry: it answers with the snippet that event
            // recorded, whatever the retry carries (another avatar's or changed code included).
            let recorded_before: Option<i64> = match &new_use.event_id {
                Some(event_id) => tx
                    .query_row(
                        "SELECT snippet_id FROM snippet_uses WHERE owner_id = ?1 AND event_id = ?2",
                        params![owner.0, event_id],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(db_err)?,
                None => None,
            };
            let added = recorded_before.is_none();
            if added {
                tx.execute(
                    "INSERT INTO snippets (owner_id, agent_id, digest, code, first_at, last_used_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                     ON CONFLICT (owner_id, agent_id, digest) DO NOTHING",
                    params![owner.0, agent.id.0, new_use.digest, new_use.code, outcome.at],
                )
                .map_err(db_err)?;
                let snippet_id: i64 = tx
                    .query_row(
                        "SELECT snippet_id FROM snippets WHERE owner_id = ?1 AND agent_id = ?2 AND digest = ?3",
                        params![owner.0, agent.id.0, new_use.digest],
                        |r| r.get(0),
                    )
                    .map_err(db_err)?;
                tx.execute(
                    "INSERT INTO snippet_uses (owner_id, snippet_id, agent_id, at, ok, duration_ms, xp, items,
                                               goal_progress, deaths, stuck, items_lost, output, event_id, recorded_at,
                                               failure)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?4, ?15)",
                    params![
                        owner.0,
                        snippet_id,
                        agent.id.0,
                        outcome.at,
                        outcome.ok,
                        outcome.duration_ms.min(i64::MAX as u64) as i64,
                        json_map(&outcome.xp),
                        json_map(&outcome.items),
                        outcome.goal_progress,
                        outcome.deaths,
                        outcome.stuck,
                        outcome.items_lost,
                        new_use.output,
                        new_use.event_id,
                        outcome.failure,
                    ],
                )
                .map_err(db_err)?;
                tx.execute(
                    "UPDATE snippets SET uses = uses + 1, ok = ok + ?3, last_used_at = MAX(last_used_at, ?4)
                     WHERE owner_id = ?1 AND snippet_id = ?2",
                    params![owner.0, snippet_id, i64::from(outcome.ok), outcome.at],
                )
                .map_err(db_err)?;
            }
            let snippet = match recorded_before {
                Some(snippet_id) => tx.query_row(
                    "SELECT snippet_id, agent_id, digest, code, uses, ok, first_at, last_used_at FROM snippets
                     WHERE owner_id = ?1 AND snippet_id = ?2",
                    params![owner.0, snippet_id],
                    snippet_from,
                ),
                None => tx.query_row(
                    "SELECT snippet_id, agent_id, digest, code, uses, ok, first_at, last_used_at FROM snippets
                     WHERE owner_id = ?1 AND agent_id = ?2 AND digest = ?3",
                    params![owner.0, agent.id.0, new_use.digest],
                    snippet_from,
                ),
            }
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            Ok(RecordedSnippetUse { added, snippet })
        })
    }

    fn snippets(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<Snippet>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT snippet_id, agent_id, digest, code, uses, ok, first_at, last_used_at FROM snippets
                 WHERE owner_id = ?1 AND agent_id = ?2 ORDER BY last_used_at DESC",
            )
            .map_err(db_err)?;
        let snippets = statement
            .query_map(params![owner.0, agent.0], snippet_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(snippets)
    }

    fn snippet_runs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SnippetRuns>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(SNIPPET_RUNS_SINCE)
            .map_err(db_err)?;
        let runs = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok(SnippetRuns {
                    snippet: SnippetId(r.get(0)?),
                    digest: r.get(1)?,
                    code: r.get(2)?,
                    ok: r.get(3)?,
                    runs: r.get(4)?,
                    last_run_at: r.get(5)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(runs)
    }

    fn skills(&self, owner: OwnerId, agent: Option<AgentId>) -> Result<Vec<SkillEntry>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS},
                        (SELECT COUNT(*) FROM versions c WHERE c.owner_id = s.owner_id AND c.skill_id = s.skill_id),
                        (SELECT COALESCE(SUM(c.uses), 0) FROM versions c WHERE c.owner_id = s.owner_id AND c.skill_id = s.skill_id),
                        (SELECT b.number FROM versions b WHERE b.owner_id = s.owner_id AND b.skill_id = s.skill_id
                            AND b.version_id <> v.version_id AND b.score > v.score ORDER BY b.score DESC LIMIT 1),
                        (SELECT MAX(b.score) FROM versions b WHERE b.owner_id = s.owner_id AND b.skill_id = s.skill_id
                            AND b.version_id <> v.version_id AND b.score > v.score),
                        s.header = 'skill' AND EXISTS (SELECT 1 FROM versions x WHERE x.owner_id = s.owner_id
                            AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                 FROM skills s JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
                 WHERE s.owner_id = ?1 AND (?2 IS NULL OR s.agent_id = ?2) AND s.deleted_at IS NULL
                 ORDER BY v.score DESC, s.agent_name, s.name"
            ))
            .map_err(db_err)?;
        let base = SKILL_COLUMN_COUNT + VERSION_COLUMN_COUNT;
        let entries = statement
            .query_map(params![owner.0, agent.map(|a| a.0)], |row| {
                let best_number: Option<i64> = row.get(base + 2)?;
                let best_score: Option<f64> = row.get(base + 3)?;
                Ok(SkillEntry {
                    skill: skill_from(row)?,
                    version: version_from_at(row, SKILL_COLUMN_COUNT)?,
                    version_count: row.get(base)?,
                    total_runs: row.get(base + 1)?,
                    best: best_number.zip(best_score),
                    family: row.get(base + 4)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(entries)
    }

    fn versions(&self, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = ?1 AND v.skill_id = ?2 ORDER BY v.number DESC"
            ))
            .map_err(db_err)?;
        let versions = statement
            .query_map(params![owner.0, skill.0], version_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(versions)
    }

    fn use_count(&self, owner: OwnerId) -> Result<i64> {
        let inner = self.lock();
        inner
            .conn
            .query_row(
                "SELECT COUNT(*) FROM uses WHERE owner_id = ?1",
                [owner.0],
                |r| r.get(0),
            )
            .map_err(db_err)
    }

    fn recent_outputs(
        &self,
        owner: OwnerId,
        agent: AgentId,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        let inner = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT output FROM (
                     SELECT output, at, use_id, 0 AS kind FROM uses
                     WHERE owner_id = ?1 AND agent_id = ?2 AND at < ?3 AND output IS NOT NULL
                     UNION ALL
                     SELECT output, at, use_id, 1 AS kind FROM snippet_uses
                     WHERE owner_id = ?1 AND agent_id = ?2 AND at < ?3 AND output IS NOT NULL
                 ) ORDER BY at DESC, kind, use_id DESC LIMIT ?4",
            )
            .map_err(db_err)?;
        let outputs = statement
            .query_map(params![owner.0, agent.0, before, limit], |r| r.get(0))
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(db_err)?;
        Ok(outputs)
    }

    fn recent_failures(
        &self,
        owner: OwnerId,
        skill: SkillId,
        limit: usize,
    ) -> Result<Vec<FailedRun>> {
        let inner = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT v.number, u.at, u.failure FROM uses u
                 JOIN versions v ON v.version_id = u.version_id
                 WHERE u.owner_id = ?1 AND v.owner_id = ?1 AND v.skill_id = ?2 AND u.ok = 0
                 ORDER BY u.at DESC, u.use_id DESC LIMIT ?3",
            )
            .map_err(db_err)?;
        let failures = statement
            .query_map(params![owner.0, skill.0, limit], |r| {
                Ok(FailedRun {
                    version: r.get(0)?,
                    at: r.get(1)?,
                    failure: r.get(2)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(failures)
    }

    fn script_runs(
        &self,
        owner: OwnerId,
        skill: SkillId,
        limit: usize,
    ) -> Result<Vec<crate::ScriptRun>> {
        crate::sqlite_views::script_runs(&self.lock().conn, owner, skill, limit)
    }

    fn database_size(&self) -> Result<Option<u64>> {
        crate::sqlite_views::database_size(&self.location)
    }

    fn gone_skills(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<SkillId>> {
        crate::sqlite_views::gone_skills(&self.lock().conn, owner, agent)
    }

    fn runs_per_day(&self, owner: OwnerId, since: Millis) -> Result<Vec<crate::DayRuns>> {
        crate::sqlite_views::runs_per_day(&self.lock().conn, owner, since)
    }

    fn note_wrapup(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "last_wrapup_at", at)
    }

    fn snippet_suggestions(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<HashMap<String, i64>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT group_key, suggested_runs FROM snippet_suggestions
                 WHERE owner_id = ?1 AND agent_id = ?2 AND suggested_at >= ?3",
            )
            .map_err(db_err)?;
        let rows = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<HashMap<String, i64>>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    fn note_snippet_suggestion(
        &self,
        owner: OwnerId,
        agent: AgentId,
        group_key: &str,
        runs: i64,
        at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "INSERT INTO snippet_suggestions (owner_id, agent_id, group_key, suggested_at, suggested_runs)
                 SELECT owner_id, agent_id, ?3, ?4, ?5 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (owner_id, agent_id, group_key)
                 DO UPDATE SET suggested_at = excluded.suggested_at, suggested_runs = excluded.suggested_runs",
                params![owner.0, agent.0, group_key, at, runs],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn set_agent_mirror(&self, owner: OwnerId, agent: AgentId, mirror: Option<&str>) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                "UPDATE agents SET mirror = ?3 WHERE owner_id = ?1 AND agent_id = ?2",
                params![owner.0, agent.0, mirror],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }

    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool> {
        let inner = self.lock();
        let added = inner
            .conn
            .execute(
                "INSERT INTO unrecorded_calls (owner_id, agent_id, event_id, at, reason, detail)
                 SELECT owner_id, agent_id, ?3, ?4, ?5, ?6 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (owner_id, agent_id, event_id) DO NOTHING",
                params![
                    owner.0,
                    call.agent.0,
                    call.event_id,
                    call.at,
                    call.reason.as_str(),
                    call.detail
                ],
            )
            .map_err(db_err)?;
        Ok(added > 0)
    }

    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT event_id, at, reason, detail FROM unrecorded_calls
                 WHERE owner_id = ?1 AND agent_id = ?2 AND at >= ?3 ORDER BY at, event_id",
            )
            .map_err(db_err)?;
        let rows = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Millis>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .filter_map(|(event_id, at, reason, detail)| {
                Some(UnrecordedCall {
                    agent,
                    event_id,
                    at,
                    reason: UnrecordedReason::parse(&reason)?,
                    detail,
                })
            })
            .collect())
    }

    fn set_eager_sharing(&self, owner: OwnerId, eager: bool) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                "UPDATE owners SET eager_sharing = ?2 WHERE owner_id = ?1",
                params![owner.0, eager],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("owner {}", owner.0)));
        }
        Ok(())
    }

    fn mark_file_gone(
        &self,
        owner: OwnerId,
        skill: SkillId,
        now: Millis,
    ) -> Result<Option<SharingChange>> {
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let before = sharing_state(&tx, owner, skill)?;
            let changed = tx
                .execute(
                    "UPDATE skills SET deleted_at = ?3, file_digest = NULL
                     WHERE owner_id = ?1 AND skill_id = ?2 AND deleted_at IS NULL",
                    params![owner.0, skill.0, now],
                )
                .map_err(db_err)?;
            let change = if changed > 0 {
                note_sharing_change(&tx, owner, skill, &before, now)?
            } else {
                None
            };
            tx.commit().map_err(db_err)?;
            Ok(change)
        })
    }

    fn share_qualified(
        &self,
        owner: OwnerId,
        agent: AgentId,
        now: Millis,
    ) -> Result<Vec<SharingChange>> {
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let lowest = SharingBar::lowest();
            let candidates: Vec<i64> = tx
                .prepare_cached(
                    "SELECT s.skill_id FROM skills s
                     JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
                     WHERE s.owner_id = ?1 AND s.agent_id = ?2 AND s.header = 'skill' AND s.deleted_at IS NULL
                       AND v.shared_at IS NULL AND v.uses >= ?3 AND v.score >= ?4
                     ORDER BY s.skill_id",
                )
                .map_err(db_err)?
                .query_map(params![owner.0, agent.0, lowest.runs, lowest.score], |r| r.get(0))
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_err)?;
            let mut changes = Vec::new();
            for skill in candidates {
                let skill = SkillId(skill);
                let before = sharing_state(&tx, owner, skill)?;
                share_if_qualified(&tx, owner, skill, now)?;
                changes.extend(note_sharing_change(&tx, owner, skill, &before, now)?);
            }
            tx.commit().map_err(db_err)?;
            Ok(changes)
        })
    }

    fn shared_skills(&self, owner: OwnerId) -> Result<Vec<SharedSkill>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, v.version_id, v.number, v.digest, v.uses, v.ok, v.score, v.shared_at,
                        v.breakdown, v.inherited, v.last_used_at
                 FROM skills s JOIN versions v ON v.skill_id = s.skill_id AND v.owner_id = s.owner_id
                 WHERE s.owner_id = ?1 AND s.header = 'skill' AND s.deleted_at IS NULL
                   AND EXISTS (SELECT 1 FROM versions x
                               WHERE x.owner_id = s.owner_id AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                 ORDER BY s.agent_name, s.name, s.skill_id, v.number DESC"
            ))
            .map_err(db_err)?;
        let mut rows = statement.query(params![owner.0]).map_err(db_err)?;
        let mut shared: Vec<SharedSkill> = Vec::new();
        let base = SKILL_COLUMN_COUNT;
        while let Some(row) = rows.next().map_err(db_err)? {
            let skill_id = SkillId(row.get(0).map_err(db_err)?);
            let version = VersionSummary {
                id: VersionId(row.get(base).map_err(db_err)?),
                number: row.get(base + 1).map_err(db_err)?,
                digest: row.get(base + 2).map_err(db_err)?,
                uses: row.get(base + 3).map_err(db_err)?,
                ok: row.get(base + 4).map_err(db_err)?,
                score: row.get(base + 5).map_err(db_err)?,
                shared_at: row.get(base + 6).map_err(db_err)?,
                breakdown: {
                    let json: Option<String> = row.get(base + 7).map_err(db_err)?;
                    json.and_then(|json| serde_json::from_str(&json).ok())
                },
                inherited: row.get(base + 8).map_err(db_err)?,
                last_used_at: row.get(base + 9).map_err(db_err)?,
            };
            match shared.last_mut() {
                Some(last) if last.skill.id == skill_id => last.versions.push(version),
                _ => shared.push(SharedSkill {
                    skill: skill_from(row).map_err(db_err)?,
                    versions: vec![version],
                }),
            }
        }
        Ok(shared)
    }

    fn sibling_use(&self, owner: OwnerId, skill: SkillId, since: Millis) -> Result<SiblingUse> {
        let inner = self.lock();
        let conn = &inner.conn;
        let author: Option<i64> = conn
            .prepare_cached("SELECT agent_id FROM skills WHERE owner_id = ?1 AND skill_id = ?2")
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], |r| r.get(0))
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill.0)))?;
        // A copy is a sibling's skill whose first version was built on one of this skill's
        // versions (copied from the mirror with its From: line); its later versions are its own
        // edits, so it is shown at its latest.
        let copies: Vec<(i64, String, i64)> = conn
            .prepare_cached(
                "SELECT c.skill_id, c.agent_name || '/' || c.name,
                        (SELECT MAX(l.number) FROM versions l WHERE l.owner_id = c.owner_id AND l.skill_id = c.skill_id)
                 FROM versions p
                 -- CROSS JOIN keeps this skill's few versions outside: copies are then found
                 -- through versions_by_parent, not by walking the family's versions.
                 CROSS JOIN versions f ON f.parent_version_id = p.version_id AND f.owner_id = p.owner_id AND f.lineage = 'sibling'
                 JOIN skills c ON c.skill_id = f.skill_id AND c.owner_id = f.owner_id
                 WHERE p.owner_id = ?1 AND p.skill_id = ?2 AND c.deleted_at IS NULL AND c.skill_id <> ?2
                 GROUP BY c.skill_id ORDER BY c.agent_name, c.name",
            )
            .map_err(db_err)?
            .query_map(params![owner.0, skill.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)?;
        let mut per_agent: HashMap<i64, ()> = HashMap::new();
        let mut runs = 0;
        let mut failures_since = 0;
        let mut usage = conn
            .prepare_cached(
                "SELECT u.agent_id, COUNT(*), COALESCE(SUM(u.ok = 0 AND u.at >= ?4), 0)
                 FROM versions v JOIN uses u ON u.version_id = v.version_id AND u.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 AND v.skill_id = ?2 AND u.agent_id IS NOT NULL
                   AND (?3 IS NULL OR u.agent_id <> ?3)
                 GROUP BY u.agent_id",
            )
            .map_err(db_err)?;
        for skill_id in std::iter::once(skill.0).chain(copies.iter().map(|c| c.0)) {
            let rows = usage
                .query_map(params![owner.0, skill_id, author, since], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(db_err)?;
            for row in rows {
                let (agent, count, failed) = row.map_err(db_err)?;
                per_agent.insert(agent, ());
                runs += count;
                failures_since += failed;
            }
        }
        Ok(SiblingUse {
            used_by: per_agent.len(),
            runs,
            failures_since,
            copies: copies.into_iter().map(|(_, label, n)| (label, n)).collect(),
        })
    }

    fn sharing_changes(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SharingChange>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT e.skill_id, s.agent_name || '/' || s.name, e.kind, e.version_number, e.reason, e.at
                 FROM sharing_events e JOIN skills s ON s.skill_id = e.skill_id AND s.owner_id = e.owner_id
                 WHERE e.owner_id = ?1 AND e.agent_id = ?2 AND e.at >= ?3
                 ORDER BY e.at, e.sharing_event_id",
            )
            .map_err(db_err)?;
        let changes = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                let kind: String = r.get(2)?;
                Ok(SharingChange {
                    skill: SkillId(r.get(0)?),
                    label: r.get(1)?,
                    kind: SharingKind::parse(&kind),
                    version: r.get(3)?,
                    reason: r.get(4)?,
                    at: r.get(5)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(changes)
    }

    fn replace_lessons(
        &self,
        owner: OwnerId,
        agent: AgentId,
        lessons: &[NewLesson],
        now: Millis,
    ) -> Result<LessonsChange> {
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            load_agent(&tx, owner, agent)?;
            let existing: HashMap<String, String> = tx
                .prepare_cached(
                    "SELECT digest, text FROM lessons WHERE owner_id = ?1 AND agent_id = ?2",
                )
                .map_err(db_err)?
                .query_map(params![owner.0, agent.0], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_err)?;
            let mut change = LessonsChange::default();
            let mut wanted: HashMap<String, &NewLesson> = HashMap::new();
            for lesson in lessons {
                wanted
                    .entry(mindrune_core::digest::sha256(lesson.text.as_bytes()))
                    .or_insert(lesson);
            }
            for (digest, text) in &existing {
                if !wanted.contains_key(digest) {
                    tx.execute(
                        "DELETE FROM lessons WHERE owner_id = ?1 AND agent_id = ?2 AND digest = ?3",
                        params![owner.0, agent.0, digest],
                    )
                    .map_err(db_err)?;
                    change.removed.push(text.clone());
                }
            }
            // Lessons keep the order of the log: a line further down is newer.
            let mut fresh: Vec<(&String, &&NewLesson)> = wanted.iter().collect();
            fresh.sort_by_key(|(_, lesson)| lesson.line);
            for (digest, lesson) in fresh {
                if existing.contains_key(digest) {
                    tx.execute(
                        "UPDATE lessons SET line = ?4 WHERE owner_id = ?1 AND agent_id = ?2 AND digest = ?3",
                        params![owner.0, agent.0, digest, lesson.line as i64],
                    )
                    .map_err(db_err)?;
                    change.kept += 1;
                } else {
                    tx.execute(
                        "INSERT INTO lessons (owner_id, agent_id, digest, text, line, first_seen_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![owner.0, agent.0, digest, lesson.text, lesson.line as i64, now],
                    )
                    .map_err(db_err)?;
                    change.added.push(lesson.text.clone());
                }
            }
            change.removed.sort();
            tx.commit().map_err(db_err)?;
            Ok(change)
        })
    }

    fn lessons(&self, owner: OwnerId) -> Result<Vec<Lesson>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT l.agent_id, a.name, l.text, l.line, l.first_seen_at
                 FROM lessons l JOIN agents a ON a.agent_id = l.agent_id AND a.owner_id = l.owner_id
                 WHERE l.owner_id = ?1
                 ORDER BY l.first_seen_at DESC, l.line DESC, l.lesson_id DESC",
            )
            .map_err(db_err)?;
        let lessons = statement
            .query_map(params![owner.0], |r| {
                Ok(Lesson {
                    agent: AgentId(r.get(0)?),
                    agent_name: r.get(1)?,
                    text: r.get(2)?,
                    line: r.get::<_, i64>(3)? as usize,
                    first_seen_at: r.get(4)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(lessons)
    }

    fn note_turn_end(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "last_turn_at", at)
    }

    fn note_mirror_refresh(&self, owner: OwnerId, agent: AgentId, at: Millis) -> Result<()> {
        self.set_agent_time(owner, agent, "mirror_refreshed_at", at)
    }

    fn delete_agent(&self, owner: OwnerId, agent: AgentId) -> Result<DeletedAgent> {
        let mut inner = self.lock();
        let result = with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            load_agent(&tx, owner, agent)?;
            // Its shared skills stay with the family; everything else it wrote goes.
            let kept = tx
                .execute(
                    "UPDATE skills SET agent_id = NULL
                     WHERE owner_id = ?1 AND agent_id = ?2 AND header = 'skill' AND deleted_at IS NULL
                       AND EXISTS (SELECT 1 FROM versions v WHERE v.owner_id = skills.owner_id
                                   AND v.skill_id = skills.skill_id AND v.shared_at IS NOT NULL)",
                    params![owner.0, agent.0],
                )
                .map_err(db_err)?;
            let doomed = "SELECT skill_id FROM skills WHERE owner_id = ?1 AND agent_id = ?2";
            let doomed_versions = format!(
                "SELECT version_id FROM versions WHERE owner_id = ?1 AND skill_id IN ({doomed})"
            );
            let removed: usize = tx
                .query_row(
                    "SELECT COUNT(*) FROM skills WHERE owner_id = ?1 AND agent_id = ?2",
                    params![owner.0, agent.0],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(db_err)? as usize;
            for statement in [
                format!(
                    "UPDATE versions SET parent_version_id = NULL
                     WHERE owner_id = ?1 AND parent_version_id IN ({doomed_versions})"
                ),
                format!(
                    "DELETE FROM uses WHERE owner_id = ?1 AND version_id IN ({doomed_versions})"
                ),
                format!(
                    "DELETE FROM sharing_events WHERE owner_id = ?1 AND skill_id IN ({doomed})"
                ),
                format!("DELETE FROM skill_tags WHERE owner_id = ?1 AND skill_id IN ({doomed})"),
                format!(
                    "UPDATE skills SET current_version_id = NULL WHERE owner_id = ?1 AND skill_id IN ({doomed})"
                ),
                format!("DELETE FROM versions WHERE owner_id = ?1 AND skill_id IN ({doomed})"),
                "DELETE FROM skills WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM snippet_uses WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM snippets WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM lessons WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM snippet_suggestions WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM unrecorded_calls WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM runner_tokens WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "DELETE FROM avatar_states WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "UPDATE uses SET agent_id = NULL WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
                "UPDATE sharing_events SET agent_id = NULL WHERE owner_id = ?1 AND agent_id = ?2"
                    .to_string(),
                "DELETE FROM agents WHERE owner_id = ?1 AND agent_id = ?2".to_string(),
            ] {
                let mut prepared = tx.prepare(&statement).map_err(db_err)?;
                let wants_agent = prepared.parameter_count() >= 2;
                if wants_agent {
                    prepared
                        .execute(params![owner.0, agent.0])
                        .map_err(db_err)?;
                } else {
                    prepared.execute(params![owner.0]).map_err(db_err)?;
                }
            }
            tx.commit().map_err(db_err)?;
            Ok(DeletedAgent {
                scripts_removed: removed,
                skills_kept: kept,
            })
        });
        // Cached windows of removed versions must not outlive them.
        inner.windows.clear();
        result
    }

    // The topic-tag vocabulary: global reference data, so no owner (see the trait).

    fn replace_vocabulary(
        &self,
        entries: &[crate::VocabularyEntry],
        now: Millis,
    ) -> Result<crate::VocabularyChange> {
        // By tag, first one given wins; sorted, so the digest does not depend on the order.
        let mut wanted: std::collections::BTreeMap<(String, String), &crate::VocabularyEntry> =
            std::collections::BTreeMap::new();
        for entry in entries {
            let tag = format!("{}:{}", entry.kind, entry.slug);
            if mindrune_core::topics::normalize_tag(&tag).as_deref() != Some(tag.as_str()) {
                return Err(StoreError::Conflict(format!(
                    "vocabulary entry `{tag}` is not a tag (kind:slug, lower case); nothing was changed"
                )));
            }
            wanted
                .entry((entry.kind.clone(), entry.slug.clone()))
                .or_insert(entry);
        }
        // Aliases are kept newline-joined, so a line break inside one would split it.
        let aliases_of = |entry: &crate::VocabularyEntry| {
            entry
                .aliases
                .iter()
                .map(|alias| alias.replace(['\n', '\r'], " "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let mut canonical = String::new();
        for ((kind, slug), entry) in &wanted {
            canonical.push_str(&format!(
                "{kind}\u{1f}{slug}\u{1f}{}\u{1f}{}\u{1f}{}\n",
                entry.title,
                entry.source.as_str(),
                aliases_of(entry)
            ));
        }
        let digest = mindrune_core::digest::sha256(canonical.as_bytes());
        let mut inner = self.lock();
        with_retry(|| {
            let tx = inner
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let existing: std::collections::HashSet<(String, String)> = tx
                .prepare_cached("SELECT kind, slug FROM vocabulary")
                .map_err(db_err)?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_err)?;
            let mut change = crate::VocabularyChange::default();
            for (kind, slug) in &existing {
                if !wanted.contains_key(&(kind.clone(), slug.clone())) {
                    tx.execute(
                        "DELETE FROM vocabulary WHERE kind = ?1 AND slug = ?2",
                        params![kind, slug],
                    )
                    .map_err(db_err)?;
                    change.removed.push(format!("{kind}:{slug}"));
                }
            }
            {
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT INTO vocabulary (kind, slug, title, source, aliases, added_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT (kind, slug) DO UPDATE
                         SET title = excluded.title, source = excluded.source, aliases = excluded.aliases",
                    )
                    .map_err(db_err)?;
                for ((kind, slug), entry) in &wanted {
                    upsert
                        .execute(params![
                            kind,
                            slug,
                            entry.title,
                            entry.source.as_str(),
                            aliases_of(entry),
                            now
                        ])
                        .map_err(db_err)?;
                    if existing.contains(&(kind.clone(), slug.clone())) {
                        change.kept += 1;
                    } else {
                        change.added.push(format!("{kind}:{slug}"));
                    }
                }
            }
            tx.execute(
                "INSERT INTO vocabulary_state (id, digest, entries, built_at) VALUES (1, ?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE
                 SET digest = excluded.digest, entries = excluded.entries, built_at = excluded.built_at",
                params![digest, wanted.len() as i64, now],
            )
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            change.removed.sort();
            Ok(change)
        })
    }

    fn vocabulary(&self) -> Result<Vec<crate::VocabularyEntry>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT kind, slug, title, source, aliases FROM vocabulary ORDER BY kind, slug",
            )
            .map_err(db_err)?;
        let entries = statement
            .query_map([], |r| {
                let source: String = r.get(3)?;
                Ok(crate::VocabularyEntry {
                    kind: r.get(0)?,
                    slug: r.get(1)?,
                    title: r.get(2)?,
                    // Only MindRune writes the column; an unknown value reads as a wiki page.
                    source: crate::VocabularySource::parse(&source)
                        .unwrap_or(crate::VocabularySource::Wiki),
                    aliases: lines_of(r.get(4)?),
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(entries)
    }

    fn disk_space(&self) -> Option<crate::DiskSpace> {
        let file = Path::new(&self.location);
        let folder = file.parent().filter(|f| !f.as_os_str().is_empty())?;
        let stat = rustix::fs::statvfs(folder).ok()?;
        Some(crate::DiskSpace {
            folder: folder.display().to_string(),
            available: stat.f_bavail.saturating_mul(stat.f_frsize),
        })
    }

    fn vocabulary_digest(&self) -> Result<Option<String>> {
        let inner = self.lock();
        inner
            .conn
            .query_row(
                "SELECT digest FROM vocabulary_state WHERE id = 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)
    }

    fn issue_runner_token(
        &self,
        owner: OwnerId,
        agent: AgentId,
        token_hash: &str,
        now: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        let inserted = inner
            .conn
            .execute(
                "INSERT INTO runner_tokens (owner_id, agent_id, token_hash, created_at)
                 SELECT owner_id, agent_id, ?3, ?4 FROM agents WHERE owner_id = ?1 AND agent_id = ?2",
                params![owner.0, agent.0, token_hash, now],
            )
            .map_err(db_err)?;
        if inserted == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }

    fn agent_by_runner_token(&self, token_hash: &str) -> Result<Option<Agent>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(&format!(
                "SELECT {AGENT_COLUMNS} FROM agents WHERE agent_id =
                   (SELECT agent_id FROM runner_tokens WHERE token_hash = ?1 AND revoked_at IS NULL)"
            ))
            .map_err(db_err)?
            .query_row([token_hash], agent_from)
            .optional()
            .map_err(db_err)
    }

    fn revoke_runner_tokens(&self, owner: OwnerId, agent: AgentId, now: Millis) -> Result<usize> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "UPDATE runner_tokens SET revoked_at = ?3
                 WHERE owner_id = ?1 AND agent_id = ?2 AND revoked_at IS NULL",
                params![owner.0, agent.0, now],
            )
            .map_err(db_err)
    }

    fn issue_operator_token(&self, token_hash: &str, now: Millis) -> Result<()> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "INSERT INTO operator_tokens (token_hash, created_at) VALUES (?1, ?2)",
                params![token_hash, now],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn operator_token_valid(&self, token_hash: &str) -> Result<bool> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(
                "SELECT 1 FROM operator_tokens WHERE token_hash = ?1 AND revoked_at IS NULL",
            )
            .map_err(db_err)?
            .query_row([token_hash], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(db_err)
    }

    fn create_session(
        &self,
        owner: OwnerId,
        session_hash: &str,
        csrf_token: &str,
        now: Millis,
        expires_at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        // Expired sessions are swept whenever a new one starts.
        inner
            .conn
            .execute(
                "DELETE FROM dashboard_sessions WHERE owner_id = ?1 AND expires_at <= ?2",
                params![owner.0, now],
            )
            .map_err(db_err)?;
        let inserted = inner
            .conn
            .execute(
                "INSERT INTO dashboard_sessions (owner_id, session_hash, csrf_token, created_at, expires_at)
                 SELECT owner_id, ?2, ?3, ?4, ?5 FROM owners WHERE owner_id = ?1",
                params![owner.0, session_hash, csrf_token, now, expires_at],
            )
            .map_err(db_err)?;
        if inserted == 0 {
            return Err(StoreError::NotFound(format!("owner {}", owner.0)));
        }
        Ok(())
    }

    fn session(&self, session_hash: &str, now: Millis) -> Result<Option<Session>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(
                "SELECT owner_id, csrf_token, expires_at FROM dashboard_sessions
                 WHERE session_hash = ?1 AND expires_at > ?2",
            )
            .map_err(db_err)?
            .query_row(params![session_hash, now], |r| {
                Ok(Session {
                    owner: OwnerId(r.get(0)?),
                    csrf_token: r.get(1)?,
                    expires_at: r.get(2)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn end_session(&self, owner: OwnerId, session_hash: &str) -> Result<()> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "DELETE FROM dashboard_sessions WHERE owner_id = ?1 AND session_hash = ?2",
                params![owner.0, session_hash],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        reported_at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                "INSERT INTO avatar_states (owner_id, agent_id, state, reported_at)
                 SELECT owner_id, agent_id, ?3, ?4 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (agent_id) DO UPDATE SET state = excluded.state, reported_at = excluded.reported_at
                 WHERE excluded.reported_at >= avatar_states.reported_at",
                params![owner.0, agent.0, state, reported_at],
            )
            .map_err(db_err)?;
        // A state older than the one kept changes nothing; an unknown agent is an error.
        if changed == 0 && agent_missing(&inner.conn, owner, agent)? {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }

    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(
                "SELECT agent_id, state, reported_at FROM avatar_states
                 WHERE owner_id = ?1 AND agent_id = ?2",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, agent.0], |r| {
                Ok(AvatarState {
                    agent: AgentId(r.get(0)?),
                    state: r.get(1)?,
                    reported_at: r.get(2)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn family_reuse(&self, owner: OwnerId, since: Millis) -> Result<FamilyReuse> {
        let inner = self.lock();
        let conn = &inner.conn;
        // A run is "from a family skill" when the avatar ran a sibling's version (an unchanged
        // copy from family-skills/ counts for the sibling's skill) or its own skill built on a
        // sibling's (a version with lineage `sibling` anywhere in the skill's history).
        let (runs, runs_from_family): (i64, i64) = conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(
                        (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                        OR s.skill_id IN (SELECT b.skill_id FROM versions b
                                          WHERE b.owner_id = ?1 AND b.lineage = 'sibling')), 0)
                 FROM uses u
                 JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE u.owner_id = ?1 AND u.at >= ?2 AND u.agent_id IS NOT NULL",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, since], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?;
        // Skills reused by a sibling: run by another avatar, or built on by a copy that ran.
        let skills_reused: i64 = conn
            .prepare_cached(
                "SELECT COUNT(DISTINCT reused) FROM (
                   SELECT s.skill_id AS reused
                   FROM uses u
                   JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                   JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                   WHERE u.owner_id = ?1 AND u.at >= ?2 AND u.agent_id IS NOT NULL
                     AND (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                   UNION
                   SELECT p.skill_id
                   FROM versions f
                   JOIN versions p ON p.version_id = f.parent_version_id AND p.owner_id = f.owner_id
                   WHERE f.owner_id = ?1 AND f.lineage = 'sibling' AND p.skill_id <> f.skill_id
                     AND EXISTS (SELECT 1 FROM versions cv
                                 JOIN uses u ON u.version_id = cv.version_id AND u.owner_id = cv.owner_id
                                 WHERE cv.owner_id = ?1 AND cv.skill_id = f.skill_id AND u.at >= ?2))",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, since], |r| r.get(0))
            .map_err(db_err)?;
        Ok(FamilyReuse {
            runs,
            runs_from_family,
            skills_reused,
        })
    }
    fn audit(&self, owner: OwnerId) -> Result<Vec<String>> {
        let inner = self.lock();
        let conn = &inner.conn;
        let versions = conn
            .prepare(
                "SELECT v.version_id, s.agent_name || '/' || s.name, v.uses, v.ok, v.score, v.inherited,
                        v.peer_rate, s.tags,
                        (SELECT COUNT(*) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id),
                        (SELECT COALESCE(SUM(u.ok), 0) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id)
                 FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 ORDER BY v.version_id",
            )
            .map_err(db_err)?
            .query_map([owner.0], |r| {
                Ok((
                    StoredVersion {
                        version: r.get(0)?,
                        label: r.get(1)?,
                        uses: r.get(2)?,
                        ok: r.get(3)?,
                        score: r.get(4)?,
                        inherited: r.get(5)?,
                        peer_rate: r.get(6)?,
                        tags: r.get(7)?,
                    },
                    r.get::<_, i64>(8)?,
                    r.get::<_, i64>(9)?,
                ))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        let mut problems = Vec::new();
        for (stored, counted_uses, counted_ok) in versions {
            let window = read_window(conn, owner, VersionId(stored.version))?;
            let window: Vec<UseSample> = window.into();
            problems.extend(audit_version(&stored, counted_uses, counted_ok, &window));
        }
        Ok(problems)
    }
}

/// Whether an owner's agent does not exist (an update that changed nothing, told apart from
/// one that had nothing to change).
fn agent_missing(conn: &Connection, owner: OwnerId, agent: AgentId) -> Result<bool> {
    conn.prepare_cached("SELECT 1 FROM agents WHERE owner_id = ?1 AND agent_id = ?2")
        .map_err(db_err)?
        .query_row(params![owner.0, agent.0], |_| Ok(()))
        .optional()
        .map(|found| found.is_none())
        .map_err(db_err)
}

impl SqliteStore {
    fn set_agent_time(
        &self,
        owner: OwnerId,
        agent: AgentId,
        column: &str,
        at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                &format!("UPDATE agents SET {column} = ?3 WHERE owner_id = ?1 AND agent_id = ?2"),
                params![owner.0, agent.0, at],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }
}

fn snippet_from(row: &Row<'_>) -> rusqlite::Result<Snippet> {
    Ok(Snippet {
        id: SnippetId(row.get(0)?),
        agent: row.get::<_, Option<i64>>(1)?.map(AgentId),
        digest: row.get(2)?,
        code: row.get(3)?,
        uses: row.get(4)?,
        ok: row.get(5)?,
        first_at: row.get(6)?,
        last_used_at: row.get(7)?,
    })
}
