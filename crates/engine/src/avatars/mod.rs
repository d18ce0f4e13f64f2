//! The avatars' face: an rs-sdk avatar's tool calls recorded as uses of its scripts, its turn
//! ends, its wrap-ups, its topic tags, and the `family-skills/` mirror written from its
//! family's answer.
//!
//! The mechanisms more than one face uses (the hook decoder and the host guard, contained reads
//! of a workspace, atomic files, the agent runner, child processes) stay at the crate's top.

pub mod alerts;
pub mod attention;
pub mod family;
pub mod ingest;
pub mod mirror_writer;
pub mod snippets;
pub mod tags;
pub mod turn;
pub mod wrapup;
