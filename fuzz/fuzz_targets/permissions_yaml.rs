//! The `permissions.yaml` reader never panics, and whatever it accepts renders to a file that
//! reads back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::Permissions;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match Permissions::parse(&text) {
        Ok(permissions) => {
            let rendered = permissions.render();
            assert_eq!(Permissions::parse(&rendered), Ok(permissions), "{rendered}");
        }
        Err(err) => {
            assert!(err.line >= 1, "{err}");
            let _ = err.to_string();
        }
    }
});
