//! Where a shell line writes (the host guard's reading of a `Bash` call) never panics, and
//! every path it reports is absolute and normalised: a `..` left in one could walk the guard's
//! comparison out of a kept place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{ShellContext, shell_line_writes};
use mindrune_core::Target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let roots = ["/work"];
        let writes = shell_line_writes(
            text,
            &ShellContext {
                cwd: Some("/work/notes"),
                workspace_roots: &roots,
            },
        );
        for write in &writes.writes {
            if let Target::Path(path) | Target::Glob(path) = &write.target {
                assert!(path.starts_with('/'), "relative path {path:?}");
                assert!(
                    !path.split('/').any(|c| c == ".." || c == "."),
                    "unnormalised path {path:?}"
                );
            }
        }
    }
});
