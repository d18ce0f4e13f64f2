//! The audit: a family's stored counters and scores against a recomputation from its uses, read
//! in one snapshot (the same rules as the SQLite backend's, in `common::audit_version`).

use super::records::read_window;
use super::rows::col;
use super::{PgResult, PgStore};
use crate::common::{StoredVersion, audit_version};
use crate::{OwnerId, Result, VersionId};

pub(super) fn audit(store: &PgStore, owner: OwnerId) -> Result<Vec<String>> {
    store.read(|tx| {
        let rows = tx.query(
            "SELECT v.version_id, s.agent_name || '/' || s.name, v.uses, v.ok, v.score, v.inherited,
                    v.peer_rate, s.tags,
                    (SELECT COUNT(*) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id),
                    (SELECT COUNT(*) FILTER (WHERE u.ok) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id)
             FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
             WHERE v.owner_id = $1 ORDER BY v.version_id",
            &[&owner.0],
        )?;
        let mut problems = Vec::new();
        for row in &rows {
            let stored = StoredVersion {
                version: col(row, 0)?,
                label: col(row, 1)?,
                uses: col(row, 2)?,
                ok: col(row, 3)?,
                score: col(row, 4)?,
                inherited: col(row, 5)?,
                peer_rate: col(row, 6)?,
                tags: col(row, 7)?,
            };
            let window = read_window(tx, owner, VersionId(stored.version))?;
            problems.extend(audit_version(
                &stored,
                col(row, 8)?,
                col(row, 9)?,
                &window,
            ));
        }
        PgResult::Ok(problems)
    })
}
