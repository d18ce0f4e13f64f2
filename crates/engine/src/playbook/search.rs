//! `playbook_search`: finds skills by words, ranked by BM25 over SQLite FTS5 (`porter
//! unicode61`, so "reports" finds "report"), with a line on when to use each.
//!
//! The index lives in the ledger and is brought in step with the files before every search:
//! a skill whose fingerprint changed (by a card or by hand) is indexed again, one that is gone
//! or retired is dropped. Only active skills are found; drafts and retired skills are not
//! there to be followed.

use rusqlite::params;

use mindrune_core::playbook_file::{SkillFile, Status};

use super::layout;
use super::{PlaybookError, Playbooks};

#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub name: String,
    /// When to use it: its `use_when`, else its trigger.
    pub when: String,
    pub carried: bool,
    /// BM25 (lower is a better match; FTS5's sign convention).
    pub rank: f64,
}

impl Playbooks {
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, PlaybookError> {
        self.sync_index()?;
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .map(|word| format!("\"{}\"", word.to_lowercase()))
            .collect();
        let carried = layout::carried(&self.workspace)?;
        let rows: Vec<(String, String, String, f64)> = self.ledger.read(|connection| {
            if words.is_empty() {
                // No words: every active skill, by name.
                let mut statement = connection.prepare(
                    "SELECT name, use_when, trigger, 0.0 FROM skill_search ORDER BY name LIMIT ?1",
                )?;
                return statement
                    .query_map([limit as i64], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
                    .collect();
            }
            let mut statement = connection.prepare(
                "SELECT name, use_when, trigger, bm25(skill_search, 10.0, 5.0, 5.0, 1.0, 2.0, 1.0) AS rank \
                 FROM skill_search WHERE skill_search MATCH ?1 ORDER BY rank LIMIT ?2",
            )?;
            statement
                .query_map(params![words.join(" OR "), limit as i64], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })?
                .collect()
        })?;
        Ok(rows
            .into_iter()
            .map(|(name, use_when, trigger, rank)| SearchHit {
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

    /// Brings the index in step with the live, active skills on disk.
    fn sync_index(&self) -> Result<(), PlaybookError> {
        let skills = layout::list(&layout::skills_dir(&self.workspace))?;
        self.ledger.locked(|tx| {
            let indexed: Vec<(String, String, i64)> = {
                let mut statement = tx.prepare("SELECT name, fingerprint, search_row FROM skill_indexed")?;
                statement
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?
            };
            let mut keep = std::collections::HashSet::new();
            for skill in &skills {
                let Ok(parsed) = &skill.parsed else { continue };
                if parsed.status != Some(Status::Active) {
                    continue;
                }
                keep.insert(skill.name.clone());
                let fingerprint = skill.fingerprint();
                let current = indexed.iter().find(|(name, _, _)| name == &skill.name);
                if let Some((_, indexed_fingerprint, _)) = current
                    && indexed_fingerprint == &fingerprint
                {
                    continue;
                }
                if let Some((_, _, row)) = current {
                    tx.execute("DELETE FROM skill_search WHERE rowid = ?1", [row])?;
                }
                insert(tx, &skill.name, parsed)?;
                let row = tx.last_insert_rowid();
                tx.execute(
                    "INSERT OR REPLACE INTO skill_indexed (name, fingerprint, search_row) VALUES (?1, ?2, ?3)",
                    params![skill.name, fingerprint, row],
                )?;
            }
            for (name, _, row) in &indexed {
                if !keep.contains(name) {
                    tx.execute("DELETE FROM skill_search WHERE rowid = ?1", [row])?;
                    tx.execute("DELETE FROM skill_indexed WHERE name = ?1", [name])?;
                }
            }
            Ok(())
        })
    }
}

fn insert(
    tx: &rusqlite::Transaction<'_>,
    name: &str,
    skill: &SkillFile,
) -> rusqlite::Result<usize> {
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
    tx.execute(
        "INSERT INTO skill_search (name, trigger, use_when, not_when, steps, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            name,
            skill.trigger.clone().unwrap_or_default(),
            skill.use_when.clone().unwrap_or_default(),
            skill.not_when.clone().unwrap_or_default(),
            format!("{} {}", name.replace('-', " "), steps.join("\n")),
            skill.body,
        ],
    )
}
