//! Delivering the spool: the inbox taken into the outbox, then events and turns sent in batches.

use std::time::Instant;

use mindrune_engine::held_keys;
use serde::Serialize;

use super::client::Failure;
use super::files::OutboxTurn;
use super::spool::{self, Item, Kind, SpoolError};
use super::{Halt, MAX_BATCH_BYTES, Runner, RunnerError};
use crate::wire::{
    EventStatus, EventsAnswer, MirrorRequest, TurnAnswer, TurnRequest, WireBoundary, WireEvent,
};

/// One event of a batch: its outbox item and what is sent.
type Loaded = (Item, WireEvent);

impl Runner<'_> {
    /// Moves every inbox item, in order, into the outbox with what the server needs.
    pub(super) fn take_inbox(&mut self) -> Result<(), RunnerError> {
        let items = self.spool.inbox_items()?;
        if items.is_empty() {
            return Ok(());
        }
        let folder = self.folder();
        // Nothing leaves the inbox while the bot's password cannot be scrubbed: the items wait
        // there, and go on once bot.env can be read (or is removed).
        let scrubber = match folder.scrubber() {
            Ok(scrubber) => scrubber,
            // `--once` wants an answer: waiting for bot.env to be mended would never end.
            Err(err) if self.config.once => {
                return Err(RunnerError::Config(format!(
                    "{err}; the {} waiting call(s) stay in {}",
                    items.len(),
                    self.spool.inbox().display()
                )));
            }
            Err(err) => {
                tracing::error!(
                    "{err}; the {} waiting call(s) stay in {}",
                    items.len(),
                    self.spool.inbox().display()
                );
                return Ok(());
            }
        };
        for item in &items {
            // Written to the outbox before the runner stopped last time: the outbox copy is
            // complete (writes are atomic), so only the inbox file is left to delete.
            if self.spool.in_outbox(&item.name) {
                self.spool.remove(item)?;
                continue;
            }
            let Some(kind) = item.kind else {
                self.reject(
                    item,
                    &format!(
                        "inbox item {}: not a name the hook writes (`<millis>-<pid>-<n>-event.json` or `…-turn_end.json`); only `mindrune hook claude-code --relay` should write into {}",
                        item.name,
                        self.spool.inbox().display()
                    ),
                )?;
                continue;
            };
            let bytes = match std::fs::read(&item.path) {
                Ok(bytes) => bytes,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    return Err(SpoolError::Io {
                        action: "read",
                        path: item.path.clone(),
                        source,
                    }
                    .into());
                }
            };
            // The folder's look before its snapshot is read: a change made during the read
            // shows as a change later, never the other way round.
            let fingerprint = (kind == Kind::TurnEnd).then(|| folder.fingerprint());
            match folder.enrich(kind, &item.name, &bytes, &scrubber) {
                Ok(enriched) => {
                    self.spool.put_outbox(&item.name, &enriched)?;
                    self.spool.remove(item)?;
                    if let Some(fingerprint) = fingerprint {
                        self.boundary = (Instant::now(), fingerprint);
                    }
                }
                Err(reason) => {
                    self.reject(item, &format!("inbox item {}: {reason}", item.name))?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn reject(&mut self, item: &Item, reason: &str) -> Result<(), SpoolError> {
        let moved = self.spool.reject(item, reason)?;
        tracing::warn!("{reason}; moved to {}", moved.display());
        self.summary.rejected += 1;
        Ok(())
    }

    /// `--turn-every`: a turn end when `bots/<agent>/` changed and no turn ended for that long.
    pub(super) fn maybe_mark_turn(&mut self) -> Result<(), RunnerError> {
        let Some(every) = self.config.turn_every else {
            return Ok(());
        };
        if self.config.once || self.boundary.0.elapsed() < every {
            return Ok(());
        }
        if self.folder().fingerprint() != self.boundary.1 {
            spool::relay_turn_end(self.spool.root())?;
            tracing::info!(
                "bots/{}/ changed and no turn ended for {} s; marking a turn end",
                self.config.agent,
                every.as_secs()
            );
            // The fingerprint is taken when the item moves to the outbox.
            self.boundary.0 = Instant::now();
        }
        Ok(())
    }

    /// Sends the outbox, oldest first, until it is empty.
    pub(super) fn deliver_outbox(&mut self) -> Result<(), Halt> {
        while !self.stopping() {
            let items = self.spool.outbox_items()?;
            let Some(first) = items.first() else {
                return Ok(());
            };
            match first.kind {
                None => {
                    let reason = format!(
                        "outbox item {}: not a name the runner writes; only the runner should write into {}",
                        first.name,
                        self.spool.outbox().display()
                    );
                    self.reject(first, &reason)?;
                }
                Some(Kind::TurnEnd) => {
                    self.deliver_turn(first)?;
                    self.spool.note_delivery(mindrune_engine::now_millis());
                }
                Some(Kind::Event) => {
                    let mut batch = Vec::new();
                    let mut bytes = 0;
                    for item in &items {
                        if item.kind != Some(Kind::Event)
                            || batch.len() == self.config.max_batch
                            || (!batch.is_empty() && bytes + item.len + 1 > MAX_BATCH_BYTES)
                        {
                            break;
                        }
                        bytes += item.len + 1;
                        batch.push(item.clone());
                    }
                    self.deliver_events(batch)?;
                    self.spool.note_delivery(mindrune_engine::now_millis());
                }
            }
        }
        Ok(())
    }

    pub(super) fn read_outbox<T: serde::de::DeserializeOwned>(
        &mut self,
        item: &Item,
    ) -> Result<Option<T>, Halt> {
        let bytes = match std::fs::read(&item.path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(SpoolError::Io {
                    action: "read",
                    path: item.path.clone(),
                    source,
                }
                .into());
            }
        };
        match serde_json::from_slice(&bytes) {
            Ok(value) => Ok(Some(value)),
            Err(err) => {
                self.reject(
                    item,
                    &format!(
                        "outbox item {} is damaged ({err}); it cannot be sent",
                        item.name
                    ),
                )?;
                Ok(None)
            }
        }
    }

    pub(super) fn deliver_events(&mut self, items: Vec<Item>) -> Result<(), Halt> {
        let mut loaded = Vec::with_capacity(items.len());
        for item in items {
            if let Some(event) = self.read_outbox::<WireEvent>(&item)? {
                loaded.push((item, event));
            }
        }
        self.send_events(&loaded)
    }

    /// Sends one batch. When the server refuses it, the event it names is moved to
    /// `rejected/` and the others are sent again; when it names none, the batch is split in
    /// halves until the refused event is alone. The server checks a whole batch before it
    /// stores any of it, so a refused batch stored nothing.
    pub(super) fn send_events(&mut self, loaded: &[Loaded]) -> Result<(), Halt> {
        if loaded.is_empty() {
            return Ok(());
        }
        #[derive(Serialize)]
        struct Batch<'b> {
            events: Vec<&'b WireEvent>,
        }
        let body = serde_json::to_vec(&Batch {
            events: loaded.iter().map(|(_, event)| event).collect(),
        })
        .map_err(|err| Halt::Away(format!("cannot encode a batch: {err}")))?;
        match self.client.post::<EventsAnswer>("/v1/events", &body) {
            Ok(answer) => self.delivered(loaded, answer),
            Err(Failure::Refused {
                status,
                message,
                field,
            }) => {
                let index = field.as_deref().and_then(event_index);
                match index {
                    Some(index) if index < loaded.len() => {
                        let (item, _) = &loaded[index];
                        let reason = format!(
                            "the server refused event item {} ({status}: {}: {message})",
                            item.name,
                            field.as_deref().unwrap_or_default()
                        );
                        self.reject(item, &reason)?;
                        self.send_events(&loaded[..index])?;
                        self.send_events(&loaded[index + 1..])
                    }
                    _ if loaded.len() > 1 => {
                        let (first, second) = loaded.split_at(loaded.len() / 2);
                        self.send_events(first)?;
                        self.send_events(second)
                    }
                    _ => {
                        let reason = format!(
                            "the server refused event item {} ({status}: {message})",
                            loaded[0].0.name
                        );
                        self.reject(&loaded[0].0, &reason)?;
                        Ok(())
                    }
                }
            }
            Err(failure) => Err(self.halt(failure)),
        }
    }

    /// The server took a batch: each event is done, or refused on its own.
    pub(super) fn delivered(
        &mut self,
        loaded: &[Loaded],
        answer: EventsAnswer,
    ) -> Result<(), Halt> {
        if answer.results.len() != loaded.len() {
            tracing::warn!(
                "the server answered {} results for {} events; counting the batch as delivered",
                answer.results.len(),
                loaded.len()
            );
        }
        let (mut recorded, mut duplicate, mut ignored, mut refused) = (0, 0, 0, 0);
        for (index, (item, _)) in loaded.iter().enumerate() {
            let Some(result) = answer.results.get(index) else {
                self.spool.remove(item)?;
                continue;
            };
            for warning in &result.warnings {
                tracing::info!(event = %result.id, "{warning}");
            }
            match result.status {
                EventStatus::Rejected => {
                    refused += 1;
                    let reason = format!(
                        "the server refused event {} of item {}: {}",
                        result.id,
                        item.name,
                        result.error.as_deref().unwrap_or("no reason given")
                    );
                    self.reject(item, &reason)?;
                    continue;
                }
                EventStatus::Recorded => recorded += 1,
                EventStatus::Duplicate => duplicate += 1,
                EventStatus::Ignored => ignored += 1,
            }
            self.spool.remove(item)?;
        }
        self.summary.events_sent += loaded.len() - refused;
        tracing::info!(
            events = loaded.len(),
            recorded,
            duplicate,
            ignored,
            refused,
            "delivered a batch of events"
        );
        Ok(())
    }

    pub(super) fn deliver_turn(&mut self, item: &Item) -> Result<(), Halt> {
        let Some(turn) = self.read_outbox::<OutboxTurn>(item)? else {
            return Ok(());
        };
        let request = TurnRequest {
            boundary: WireBoundary::TurnEnd,
            files: turn.files,
            mirror: Some(MirrorRequest {
                have: held_keys(&self.mirror_dir),
            }),
        };
        let body = serde_json::to_vec(&request)
            .map_err(|err| Halt::Away(format!("cannot encode a turn: {err}")))?;
        match self.client.post::<TurnAnswer>("/v1/turns", &body) {
            Ok(answer) => {
                self.spool.remove(item)?;
                self.summary.turns_sent += 1;
                tracing::info!(report = %answer.report, "delivered a turn end");
                if let Some(mirror) = answer.mirror {
                    self.write_mirror(mirror, false)?;
                }
                Ok(())
            }
            Err(refused @ Failure::Refused { .. }) => {
                let reason = format!("the server refused turn end {} ({refused})", item.name);
                self.reject(item, &reason)?;
                Ok(())
            }
            Err(failure) => Err(self.halt(failure)),
        }
    }
}

/// `events[3].event.kind` → 3: the event of a batch the server named.
fn event_index(field: &str) -> Option<usize> {
    field
        .strip_prefix("events[")?
        .split(']')
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_s_field_names_the_refused_event() {
        assert_eq!(event_index("events[3].event.kind"), Some(3));
        assert_eq!(event_index("events[12]"), Some(12));
        assert_eq!(event_index("events"), None);
        assert_eq!(event_index("files.bots/x"), None);
    }
}
