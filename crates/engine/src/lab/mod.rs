//! The Skill Lab: digest-bound authoring of Runx skill packages (`../shared/spec/skill-lab.txt`).
//!
//! The pure pieces (canonical JSON, the snapshot digest, the package model, the contracts and
//! their admission rules, receipt digests) live in `mindrune_core::runx`; this module holds what
//! touches the disk or spawns: reading a package folder, the apply transaction, harness replay
//! and the receipt store.
//!
//! Architecture invariant: nothing here writes inside a target package except the verified
//! commit of `apply`, which either leaves every byte as it was or lands the exact candidate the
//! harness replayed.

pub mod agent_acts;
pub mod apply;
pub mod apply_error;
pub mod commit;
pub mod harness;
pub mod inspect;
pub mod receipt_store;
pub mod runners;
pub mod seal;
pub mod snapshot_walk;
pub mod validate;
