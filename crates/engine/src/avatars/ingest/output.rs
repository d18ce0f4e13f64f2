//! A call's output: prepared (parsed, scrubbed, cut to the tail kept) and measured into the
//! run's outcome.

use std::sync::Arc;

use mindrune_core::Scrubber;
use mindrune_core::{Call, Event};
use mindrune_core::{RunOutput, command_cuts_output, measure_against, parse_run_output};
use mindrune_store::{Millis, Outcome};

use super::{IngestError, OUTPUT_TAIL_BYTES};

/// Whether the run was cut before it said how it ended. No verdict, no "ok": a run cut before
/// how it ended, by a runner that exits 0 on a throw, is neither ok nor failed. It is kept as a
/// call of unknown outcome (out of the score, counted in the wrap-up), and it ends the chain of
/// states the next run is measured along.
///
/// Cut means: the command pipes through `tail`/`head`, or the output starts in the middle of a
/// state dump (its `## …` parts without the state's header). An output that simply prints no
/// rs-sdk sections (a script's own `console.log`) is not cut: its exit status stands.
pub(super) fn outcome_unknown(event: &Event, parsed: Option<&RunOutput>) -> bool {
    match (&event.call, parsed) {
        (Call::ExecuteCode { .. }, _) | (_, None) => false,
        (call, Some(out)) => {
            let piped = match call {
                Call::Shell { command, .. } => command_cuts_output(command),
                _ => false,
            };
            let mid_state = !out.state_seen
                && event
                    .output
                    .as_deref()
                    .is_some_and(|text| text.lines().any(|line| line.starts_with("## ")));
            event.ok != Some(false) && !out.verdict_seen && (piped || mid_state)
        }
    }
}

/// Whether bun said it found no file at `relative` for this failed call (`error: Module not
/// found "bots/ash/chop-trees.ts"`): the script never started.
pub(super) fn bun_found_no_file(event: &Event, relative: &str) -> bool {
    event.ok == Some(false)
        && event.output.as_deref().is_some_and(|output| {
            output.lines().any(|line| {
                line.trim_start().starts_with("error: Module not found")
                    && line.trim_end().trim_end_matches('"').ends_with(relative)
            })
        })
}

/// Whether measuring this call needs the avatar's previous state: only for what the host did
/// not measure itself.
pub(super) fn needs_previous(event: &Event) -> bool {
    event.measures.is_none() || event.damage.is_none()
}

/// The measured outcome of a call: the host's `measures`/`damage` when given, else what
/// rs-sdk printed, read against the avatar's previous run (`previous`). A run whose output
/// ends in an rs-sdk error failed even when the host (the shell's exit status) said it was ok:
/// `… | tail -30` and the fork runner, which exits 0 on a throw or a timeout, are ordinary.
pub(super) fn measure(
    event: &Event,
    output: Option<&RunOutput>,
    previous: Option<&RunOutput>,
    at: Millis,
) -> Result<Outcome, IngestError> {
    let output_failed = output.is_some_and(|out| out.failed);
    let ok = match (event.ok, output) {
        (Some(ok), _) => ok && !output_failed,
        (None, Some(out)) if out.execution_status.is_some() => {
            out.execution_status.as_deref() == Some("success")
        }
        (None, Some(out)) if out.failed => false,
        (None, Some(out)) if out.xp_line_seen || out.state_seen => true,
        _ => {
            return Err(IngestError::field(
                "ok",
                "is missing and the output does not say how the run ended; give `ok` (true or false)",
            ));
        }
    };
    let facts = output.map(|out| measure_against(out, previous));
    let mut outcome = Outcome {
        at,
        ok,
        duration_ms: event
            .duration_ms
            .or(output.and_then(|o| o.elapsed_ms))
            .unwrap_or(0),
        failure: if ok {
            None
        } else {
            facts.as_ref().and_then(|f| f.failure.clone())
        },
        ..Outcome::default()
    };
    match &event.measures {
        Some(measures) => {
            outcome.xp = measures.xp.clone();
            outcome.items = measures.items.clone();
            outcome.goal_progress = measures.goal_progress.unwrap_or(0.0);
        }
        None => {
            if let Some(facts) = &facts {
                outcome.xp = facts.xp.clone();
                outcome.items = facts.items.clone();
                outcome.unmeasured = facts.unmeasured.map(str::to_owned);
            }
        }
    }
    match &event.damage {
        Some(damage) => {
            outcome.deaths = damage.deaths;
            outcome.stuck = damage.stuck;
            outcome.items_lost = damage.items_lost;
        }
        None => {
            if let Some(facts) = &facts {
                outcome.deaths = u32::from(facts.died);
                outcome.stuck = facts.stuck;
                outcome.items_lost = facts.items_lost;
            }
        }
    }
    Ok(outcome)
}

/// What recording an event needs of its output that the library does not give: made by
/// [`Recorder::prepare`] (or while recording, when it was not).
#[derive(Debug, Clone, Default)]
pub struct PreparedOutput {
    /// The output as rs-sdk printed it, parsed.
    pub(super) parsed: Option<Arc<RunOutput>>,
    /// The scrubbed end of the output, as it is stored.
    pub(super) stored: Option<String>,
    /// The parse of `stored`, when scrubbing and the cut left the output as it came (then it
    /// is `parsed`): the avatar's next run is measured against the stored output.
    pub(super) stored_parse: Option<Arc<RunOutput>>,
}

pub(super) fn prepare_output(event: &Event, scrubber: &Scrubber) -> PreparedOutput {
    let Some(raw) = event.output.as_deref() else {
        return PreparedOutput::default();
    };
    let parsed = Arc::new(parse_run_output(raw));
    let stored = scrub_tail(scrubber, raw);
    let stored_parse = (stored == raw).then(|| parsed.clone());
    PreparedOutput {
        parsed: Some(parsed),
        stored: Some(stored),
        stored_parse,
    }
}

/// The scrubbed end of a run's output, cut at a character boundary.
fn scrub_tail(scrubber: &Scrubber, text: &str) -> String {
    // Scrub before cutting, so a secret that straddles the cut is still found whole.
    let scrubbed = scrubber.scrub(text).text;
    if scrubbed.len() <= OUTPUT_TAIL_BYTES {
        return scrubbed.into_owned();
    }
    let mut start = scrubbed.len() - OUTPUT_TAIL_BYTES;
    while !scrubbed.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &scrubbed[start..])
}
