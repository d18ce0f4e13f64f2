//! `playbook_search`: finds skills by words, ranked by BM25 over SQLite FTS5 (`porter
//! unicode61`, so "reports" finds "report"), with a line on when to use each.
//!
//! The index lives in the ledger and is brought in step with the files before every search:
//! a skill whose fingerprint changed (by a card or by hand) is indexed again, one that is gone
//! or retired is dropped. Only active skills are found; drafts and retired skills are not
//! there to be followed.

use mindrune_core::{SkillFile, Status};

use super::{PlaybookError, Playbooks};
use super::{layout, ledger};

#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub name: String,
    /// When to use it: its `use_when`, else its trigger.
    pub when: String,
    pub carried: bool,
    /// BM25 (lower is a better match; FTS5's sign convention).
    pub(crate) rank: f64,
    /// The fields it owes (left out, or blank), reported wherever it is read.
    pub owed: Vec<&'static str>,
}

/// The longest query [`Playbooks::search`] takes, in bytes (MCP `playbook_search`, `mindrune
/// playbook search`): a description of the work fits many times over.
pub const MAX_QUERY_BYTES: usize = 4096;
/// The most distinct words of a query that are searched for. BM25 over FTS5 costs about the
/// square of the OR-ed terms (a 100 KB query of short words took seconds), so the query is
/// refused past this many rather than left to grow the work.
pub const MAX_QUERY_WORDS: usize = 64;

/// The words of a query as FTS5 terms: lowercased, each once, in the order first seen. Linear in
/// the query's length (one pass, a hash set). Refuses a query over [`MAX_QUERY_BYTES`] or with
/// more than [`MAX_QUERY_WORDS`] distinct words, saying the bound and what to do.
pub(crate) fn query_terms(query: &str) -> Result<Vec<String>, PlaybookError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(PlaybookError::refused(
            super::Rule::Invalid,
            format!(
                "the search query is {} bytes; at most {MAX_QUERY_BYTES} bytes are searched: search with a few words that describe the work",
                query.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut terms = Vec::new();
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let word = word.to_lowercase();
        if seen.contains(&word) {
            continue;
        }
        if terms.len() == MAX_QUERY_WORDS {
            return Err(PlaybookError::refused(
                super::Rule::Invalid,
                format!(
                    "the search query holds more than {MAX_QUERY_WORDS} distinct words; at most {MAX_QUERY_WORDS} are searched: search with a few words that describe the work"
                ),
            ));
        }
        terms.push(format!("\"{word}\""));
        seen.insert(word);
    }
    Ok(terms)
}

impl Playbooks {
    /// Finds live skills by the words of `query` (see [`query_terms`] for its bounds).
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, PlaybookError> {
        // The query is checked before any work, the index's sync included.
        let words = query_terms(query)?;
        self.sync_index()?;
        let carried = layout::carried(&self.workspace)?;
        let rows = self.ledger.read(|connection| {
            if words.is_empty() {
                // No words: every active skill, by name.
                return ledger::search_all(connection, limit);
            }
            ledger::search_matching(connection, &words.join(" OR "), limit)
        })?;
        Ok(rows
            .into_iter()
            .map(|(name, use_when, trigger, rank)| SearchHit {
                owed: layout::load(&layout::live_dir(&self.workspace, &name), &name)
                    .ok()
                    .flatten()
                    .and_then(|skill| skill.parsed.ok())
                    .map(|skill| mindrune_core::owed_fields(&skill))
                    .unwrap_or_default(),
                carried: carried.contains(&name),
                when: if use_when.trim().is_empty() {
                    trigger
                } else {
                    use_when
                },
                name,
                rank,
            })
            .collect())
    }

    /// Brings the index in step with the live, active skills on disk. Only files whose stamp
    /// (length, times, inode) changed since they were indexed are read again, and the
    /// workspace's write lock is taken only when something changed, so a search over an
    /// unchanged library is a directory listing, one `stat` per skill and one read query.
    fn sync_index(&self) -> Result<(), PlaybookError> {
        let on_disk = stamps(&layout::skills_dir(&self.workspace))?;
        let indexed = self.ledger.read(ledger::indexed_skills)?;
        let unchanged = on_disk.len() == indexed.len()
            && on_disk.iter().all(|(name, stamp)| {
                indexed
                    .iter()
                    .any(|row| &row.name == name && &row.stamp == stamp)
            });
        if unchanged {
            return Ok(());
        }
        self.ledger.locked(|tx| {
            // Read again under the lock: another process may have synced meanwhile.
            let indexed = ledger::indexed_skills(tx)?;
            for (name, stamp) in &on_disk {
                let current = indexed.iter().find(|row| &row.name == name);
                if current.is_some_and(|row| &row.stamp == stamp) {
                    continue;
                }
                let skill = layout::load(&layout::skills_dir(&self.workspace).join(name), name)
                    .ok()
                    .flatten();
                let fingerprint = skill
                    .as_ref()
                    .map(|skill| skill.fingerprint())
                    .unwrap_or_default();
                if let Some(row) = current.filter(|row| row.search_row >= 0) {
                    ledger::remove_search_row(tx, row.search_row)?;
                }
                let active = skill.as_ref().and_then(|skill| {
                    skill
                        .parsed
                        .as_ref()
                        .ok()
                        .filter(|parsed| parsed.status == Some(Status::Active))
                });
                let search_row = match active {
                    Some(parsed) => insert(tx, name, parsed)?,
                    None => -1,
                };
                ledger::note_indexed(tx, name, &fingerprint, search_row, stamp)?;
            }
            for row in &indexed {
                if !on_disk.iter().any(|(name, _)| name == &row.name) {
                    if row.search_row >= 0 {
                        ledger::remove_search_row(tx, row.search_row)?;
                    }
                    ledger::forget_indexed(tx, &row.name)?;
                }
            }
            Ok(())
        })
    }
}

/// Every addressable skill folder's name with its `SKILL.md` stamp (the same folders
/// `layout::list` reads), without reading any file.
fn stamps(folder: &std::path::Path) -> Result<Vec<(String, String)>, PlaybookError> {
    use std::os::unix::fs::MetadataExt as _;
    let entries = match std::fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(PlaybookError::Io {
                action: "list",
                path: folder.to_path_buf(),
                source: err,
            });
        }
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if [layout::PENDING, layout::REJECTED].contains(&name.as_str())
            || name.starts_with('.')
            || !entry.file_type().is_ok_and(|kind| kind.is_dir())
            || layout::check_name(&name).is_err()
        {
            continue;
        }
        let stamp = match std::fs::symlink_metadata(entry.path().join(layout::SKILL_FILE)) {
            Ok(meta) => format!(
                "{}:{}.{}:{}.{}:{}:{}",
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec(),
                meta.ino(),
                meta.is_file()
            ),
            Err(_) => "missing".to_owned(),
        };
        found.push((name, stamp));
    }
    found.sort();
    Ok(found)
}

/// Adds a skill's text to the index; returns its FTS row.
fn insert(tx: &rusqlite::Transaction<'_>, name: &str, skill: &SkillFile) -> rusqlite::Result<i64> {
    let steps: Vec<String> = skill
        .steps
        .iter()
        .flatten()
        .map(|step| match &step.tool {
            Some(tool) => format!("{} ({tool})", step.action),
            None => step.action.clone(),
        })
        .collect();
    // The name's hyphens become spaces so "weekly report" finds weekly-report.
    let steps = format!("{} {}", name.replace('-', " "), steps.join("\n"));
    ledger::add_search_row(
        tx,
        &ledger::SearchText {
            name,
            trigger: skill.trigger.as_deref().unwrap_or_default(),
            use_when: skill.use_when.as_deref().unwrap_or_default(),
            not_when: skill.not_when.as_deref().unwrap_or_default(),
            steps: &steps,
            body: &skill.body,
        },
    )
}
