//! The load a benchmark's runners send: event batches as `POST /v1/events` bodies, and the
//! count of events an answer acknowledged.
//!
//! The runners share the machine's two cores with the server they measure, so the generator
//! keeps its own work small: each batch is serialized straight from borrowed, typed fields (the
//! scripts' texts are made once per runner), and an answer is read into the one field it needs,
//! rather than each building and dropping a `serde_json::Value` tree (a sixth of the runner
//! threads' time in `perf`). The bodies are what a runner sends: the same events, the same files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One runner's scripts, and the batches it sends.
pub(crate) struct RunnerLoad {
    agent: String,
    /// Each script's path, its `bun …` command line and its text.
    scripts: Vec<(String, String, String)>,
}

#[derive(Serialize)]
struct Batch<'a> {
    events: Vec<WireEvent<'a>>,
}

#[derive(Serialize)]
struct WireEvent<'a> {
    event: EventFields<'a>,
    files: BTreeMap<&'a str, FileText<'a>>,
}

#[derive(Serialize)]
struct EventFields<'a> {
    id: String,
    kind: &'static str,
    command: &'a str,
    cwd: &'static str,
    ok: bool,
    duration_ms: u64,
    measures: Measures,
}

#[derive(Serialize)]
struct Measures {
    xp: Xp,
}

#[derive(Serialize)]
struct Xp {
    #[serde(rename = "Woodcutting")]
    woodcutting: u64,
}

#[derive(Serialize)]
struct FileText<'a> {
    text: &'a str,
}

#[derive(Deserialize)]
struct Answer {
    results: Vec<Status>,
}

#[derive(Deserialize)]
struct Status {
    status: String,
}

impl RunnerLoad {
    /// `texts[k]` is the text of the runner's `bots/<agent>/chop-<k>.ts`.
    pub(crate) fn new(agent: &str, texts: Vec<String>) -> RunnerLoad {
        let scripts = texts
            .into_iter()
            .enumerate()
            .map(|(k, text)| {
                let path = format!("bots/{agent}/chop-{k}.ts");
                let command = format!("bun {path}");
                (path, command, text)
            })
            .collect();
        RunnerLoad {
            agent: agent.to_string(),
            scripts,
        }
    }

    /// The body of the batch of `batch` events from the runner's `seq`-th on: event `seq`
    /// runs script `seq % scripts`, and every eleventh fails (no XP).
    pub(crate) fn body(&self, seq: u64, batch: usize) -> Vec<u8> {
        let events = (seq..seq + batch as u64)
            .map(|seq| {
                let (path, command, text) = &self.scripts[(seq as usize) % self.scripts.len()];
                let ok = !seq.is_multiple_of(11);
                WireEvent {
                    event: EventFields {
                        id: format!("{}-{seq}", self.agent),
                        kind: "shell",
                        command,
                        cwd: "/work",
                        ok,
                        duration_ms: 30_000,
                        measures: Measures {
                            xp: Xp {
                                woodcutting: if ok { 250 } else { 0 },
                            },
                        },
                    },
                    files: BTreeMap::from([(path.as_str(), FileText { text })]),
                }
            })
            .collect();
        serde_json::to_vec(&Batch { events }).expect("a batch of plain fields serializes")
    }
}

/// How many events of an answer to `POST /v1/events` were recorded.
pub(crate) fn recorded(answer: &[u8]) -> Result<usize, serde_json::Error> {
    let answer: Answer = serde_json::from_slice(answer)?;
    Ok(answer
        .results
        .iter()
        .filter(|result| result.status == "recorded")
        .count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_the_events_a_runner_sends_each_with_its_script_file() {
        let load = RunnerLoad::new("runner07", vec!["a".into(), "b".into()]);
        let body: serde_json::Value = serde_json::from_slice(&load.body(10, 2)).unwrap();
        let events = body["events"].as_array().unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["event"]["id"], "runner07-10");
        assert_eq!(events[0]["event"]["command"], "bun bots/runner07/chop-0.ts");
        assert_eq!(events[0]["files"]["bots/runner07/chop-0.ts"]["text"], "a");
        assert_eq!(events[1]["event"]["id"], "runner07-11");
        assert_eq!(events[1]["event"]["ok"], false);
        assert_eq!(events[1]["event"]["measures"]["xp"]["Woodcutting"], 0);
        assert_eq!(events[1]["files"]["bots/runner07/chop-1.ts"]["text"], "b");
    }

    #[test]
    fn only_recorded_events_count_as_acknowledged() {
        let answer = br#"{"results":[{"status":"recorded","runs":[]},{"status":"rejected","error":"x"},{"status":"recorded"}]}"#;
        assert_eq!(recorded(answer).unwrap(), 2);
    }
}
