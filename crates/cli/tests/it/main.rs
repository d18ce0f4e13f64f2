//! The one integration-test binary: runs the real `mindrune` on real files in temp dirs.

mod family;
mod family_input;
mod hook;
mod mirror_crash;
mod record;
mod runner;
mod setup;
mod tags;
mod util;
mod wrapup;
