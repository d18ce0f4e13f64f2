//! The one integration-test binary: runs the real `mindrune` on real files in temp dirs.

mod family;
mod hook;
mod record;
mod util;
