//! Runx skill packages: the pure pieces the Skill Lab needs to agree with Runx byte for byte.
//!
//! Runx identifies a package version and a change plan by digests. Those digests only mean
//! something if we compute them exactly as Runx does, so this module holds the canonical JSON
//! (`runx.stable-json.v1`) and the package snapshot digest as pure functions; reading the
//! package folder from disk belongs to the crates that do I/O.

pub mod admission;
pub mod closure;
pub mod contracts;
pub mod inspect;
pub mod package;
pub mod receipt;
pub mod resources;
pub mod snapshot;
pub mod stable_json;
pub mod yaml;
