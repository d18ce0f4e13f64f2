//! The avatars' face: rs-sdk avatars whose scripts become skills shared with their family.
//!
//! What only this face reads and writes lives here: the event contract a host reports a tool
//! call in, rs-sdk's printed output, lab-log lessons, topic tags and their vocabulary, the
//! sharing bar, the `family-skills/` texts and the start-up instructions. The mechanisms every
//! face shares (digests, the `@skill` header the digest strips, secrets, scores, shell lines)
//! stay at the crate's top.

pub mod event;
pub mod instructions;
pub mod lessons;
pub mod mirror_text;
pub mod rs_output;
pub mod sharing;
pub mod topics;
pub mod vocabulary;
