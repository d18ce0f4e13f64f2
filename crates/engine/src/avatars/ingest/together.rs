//! Recording many events in one write transaction of the store, for the cost of one commit, each
//! event exactly as [`Recorder::record_with`] records it: the runners' batches that arrive
//! together (the server's group commit), and a list of event lines (`bench record`'s batched
//! figure; `mindrune record` commits line by line, see `commands/record.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mindrune_core::{Event, EventError};
use mindrune_store::{Agent, OwnerId, StoreError, VersionId};

use super::{GroupedEvent, Ingest, IngestError, Recorded, Recorder};
use crate::workspace::{AgentFiles, LocalFiles, OneMoment};

impl Recorder<'_> {
    /// Records several batches of events at once, in one write transaction of the store
    /// ([`Store::write_group`](mindrune_store::Store::write_group)): each event exactly as [`Recorder::record_with`] records it, in
    /// order, for the cost of one commit. `owners` are the families the batches are for. An
    /// event's output may come prepared ([`Recorder::prepare`], with the same files).
    ///
    /// A batch whose event fails in the library stops there and answers that error (the events
    /// before it stay, recognised by their ids when it is sent again); an invalid event is
    /// answered for itself. When the transaction cannot commit, every batch answers the error and
    /// nothing of any is stored. An answer is final only once this returns: nothing is
    /// acknowledged before its commit.
    pub fn record_together(
        &self,
        owners: &[OwnerId],
        batches: &[Vec<GroupedEvent<'_>>],
    ) -> Vec<Result<Vec<Result<Recorded, IngestError>>, StoreError>> {
        let mut answers: Vec<Result<Vec<Result<Recorded, IngestError>>, StoreError>> =
            Vec::with_capacity(batches.len());
        let committed = self.store.write_group(owners, &mut |group| {
            answers.clear();
            let ingest = self.in_group(group);
            for batch in batches {
                let mut results = Vec::with_capacity(batch.len());
                let mut failed = ingest
                    .expect_uses(batch.iter().map(|(event, files, _)| (*event, Some(*files))))
                    .err();
                if failed.is_none() {
                    for (event, files, prepared) in batch {
                        match ingest.record_prepared(event, *files, *prepared) {
                            Err(IngestError::Store(err)) => {
                                failed = Some(err);
                                break;
                            }
                            other => results.push(other),
                        }
                    }
                }
                answers.push(match failed {
                    Some(err) => Err(err),
                    None => Ok(results),
                });
            }
            Ok(())
        });
        if let Err(err) = committed {
            // What this recorder learnt of the group's files names versions that were rolled
            // back with it.
            self.caches().files.clear();
            return batches.iter().map(|_| Err(err.clone())).collect();
        }
        answers
    }

    /// Parses and records several event lines in one write transaction of the store: each as
    /// [`Recorder::record_line`] records it, in order, for the cost of one commit. A line the
    /// library fails on ends the list there, its error last (the lines before it are stored).
    ///
    /// When the transaction cannot commit (a full disk), nothing of it was stored, and the lines
    /// are recorded again one at a time, each in its own transaction, so whatever still fits is
    /// stored and the first line that does not ends the list with its error.
    pub fn record_lines_together(&self, lines: &[&str]) -> Vec<Result<Recorded, IngestError>> {
        match self.try_lines_together(lines) {
            Ok(results) => results,
            Err(_) => {
                let mut results = Vec::with_capacity(lines.len());
                for line in lines {
                    let result = self.record_line(line);
                    let stop = matches!(result, Err(IngestError::Store(_)));
                    results.push(result);
                    if stop {
                        break;
                    }
                }
                results
            }
        }
    }

    fn try_lines_together(
        &self,
        lines: &[&str],
    ) -> Result<Vec<Result<Recorded, IngestError>>, StoreError> {
        // Each line is parsed once, and its avatar looked up once, for the owners the group
        // locks and for recording it.
        let events: Vec<Result<Event, EventError>> = lines
            .iter()
            .map(|line| mindrune_core::parse_line(line))
            .collect();
        let agents: Vec<Option<std::sync::Arc<Agent>>> = events
            .iter()
            .map(|event| {
                let event = event.as_ref().ok()?;
                self.agent(&event.agent).ok()
            })
            .collect();
        let mut owners: Vec<OwnerId> = agents.iter().flatten().map(|agent| agent.owner).collect();
        owners.sort_unstable_by_key(|owner| owner.0);
        owners.dedup();
        // The group is one moment: each workspace's files are stat'ed once in it.
        let mut workspaces: Vec<PathBuf> = agents
            .iter()
            .flatten()
            .map(|agent| PathBuf::from(&agent.workspace))
            .collect();
        workspaces.sort();
        workspaces.dedup();
        let local: Vec<LocalFiles<'_>> = workspaces.iter().map(|w| LocalFiles(w)).collect();
        let moments: HashMap<&Path, OneMoment<'_>> = workspaces
            .iter()
            .zip(&local)
            .map(|(workspace, files)| (workspace.as_path(), OneMoment::new(files)))
            .collect();
        let mut results = Vec::with_capacity(lines.len());
        let committed = self.store.write_group(&owners, &mut |group| {
            results.clear();
            let ingest = self.in_group(group);
            ingest.expect_uses(events.iter().zip(&agents).filter_map(|(event, agent)| {
                let event = event.as_ref().ok()?;
                let files = agent
                    .as_ref()
                    .and_then(|agent| moments.get(Path::new(&agent.workspace)))
                    .map(|moment| moment as &dyn AgentFiles);
                Some((event, files))
            }))?;
            for (event, agent) in events.iter().zip(&agents) {
                let result = match (event, agent) {
                    (Err(err), _) => Err(IngestError::Invalid {
                        field: err.field.clone(),
                        message: err.message.clone(),
                    }),
                    (Ok(event), Some(agent)) => match moments.get(Path::new(&agent.workspace)) {
                        Some(files) => ingest.record_prepared(event, files, None),
                        None => ingest.record(event),
                    },
                    // The avatar is unknown (or could not be read): `record` says which.
                    (Ok(event), None) => ingest.record(event),
                };
                let stop = matches!(result, Err(IngestError::Store(_)));
                results.push(result);
                if stop {
                    break;
                }
            }
            Ok(())
        });
        if let Err(err) = committed {
            self.caches().files.clear();
            return Err(err);
        }
        Ok(results)
    }
}

impl Ingest<'_> {
    /// Tells the store what a batch is about to record, family by family: its events' ids, and
    /// the versions their scripts are known to be at (with `files`, the files the events come
    /// with), so it can read them together ([`Recording::expect_uses`](mindrune_store::Recording::expect_uses)). An event whose avatar is
    /// unknown is left to its own recording, which says so.
    fn expect_uses<'e>(
        &self,
        events: impl Iterator<Item = (&'e Event, Option<&'e dyn AgentFiles>)>,
    ) -> Result<(), StoreError> {
        if !self.store.expects_uses() {
            return Ok(());
        }
        let mut by_family: Vec<(OwnerId, Vec<&str>, Vec<VersionId>)> = Vec::new();
        for (event, files) in events {
            let Ok(agent) = self.agent(&event.agent) else {
                continue;
            };
            let at = match by_family
                .iter()
                .position(|(owner, _, _)| *owner == agent.owner)
            {
                Some(at) => at,
                None => {
                    by_family.push((agent.owner, Vec::new(), Vec::new()));
                    by_family.len() - 1
                }
            };
            let (_, ids, versions) = &mut by_family[at];
            if let Some(id) = event.id.as_deref() {
                ids.push(id);
            }
            if let Some(files) = files {
                self.known_versions(&agent, event, files, versions);
            }
        }
        for (owner, ids, versions) in by_family {
            self.store.expect_uses(owner, &ids, &versions)?;
        }
        Ok(())
    }
}
