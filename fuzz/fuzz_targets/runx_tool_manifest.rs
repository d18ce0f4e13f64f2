//! A package's local tool manifest (`tools/demo/echo/manifest.json`) never makes the Runx
//! package loader panic, whatever its bytes; a refusal names a file of the package or a field
//! of the tool's source, as Runx's does.
//!
//! The input is the manifest's bytes, then optionally a NUL and the bytes of the tool's script
//! (`tools/demo/echo/run.mjs`), so the fuzzer reaches both the manifest's fields and the
//! script's import and `require` scan.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{SnapshotFile, load_package};

const MANUAL: &[u8] = b"---\nname: demo\ndescription: Fuzzed tool.\n---\n\n# Demo\n";
const PROFILE: &[u8] = b"skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    \
graph:\n      name: demo\n      result_from: [echo]\n      steps:\n        - id: echo\n          \
tool: demo.echo\n";
const MANIFEST: &str = "tools/demo/echo/manifest.json";

fn file(path: &str, contents: &[u8]) -> SnapshotFile {
    SnapshotFile {
        path: path.to_owned(),
        mode: 0o100_644,
        contents: contents.to_vec(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |byte| *byte == 0);
    let manifest = parts.next().unwrap_or_default();
    let script = parts.next().unwrap_or(b"console.log('hi');\n");
    let files = vec![
        file("SKILL.md", MANUAL),
        file("X.yaml", PROFILE),
        file(MANIFEST, manifest),
        file("tools/demo/echo/run.mjs", script),
    ];
    if let Err(err) = load_package(&files) {
        // The first line opens with the place: one of the package's files (with its line,
        // where the refusal is the Lab's own words), the manifest's `name`, or a field of the
        // tool's source (Runx's words).
        let text = err.to_string();
        let place = text.split(": ").next().unwrap_or_default();
        let place = place.split(':').next().unwrap_or_default();
        let named = files.iter().any(|file| file.path == place)
            || place == format!("{MANIFEST}.name")
            || place.starts_with("source.");
        assert!(named, "a refusal names no file or field: {text}");
    }
});
