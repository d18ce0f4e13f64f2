//! The Runx package loader never panics on any X.yaml, SKILL.md or fixture bytes; whatever it
//! accepts can be inspected, and every refusal names one of the package's files.
//!
//! The input is the X.yaml bytes, then optionally a NUL and the SKILL.md bytes, then optionally
//! a NUL and one fixture's bytes. When SKILL.md is left out a minimal valid manual stands in, so
//! the fuzzer spends its time in X.yaml rather than on the frontmatter. Every `.js`/`.mjs` word
//! X.yaml mentions gets a module file, so a declared module does not stop every input at the
//! missing-module check before the inspection runs. When X.yaml names a `.json` file (an
//! external adapter's `manifest_path`), the third part is that file instead of a fixture.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{inspect_packets, PacketSchemas, failure_message};
use mindrune_core::{inspect_package, load_package};
use mindrune_core::SnapshotFile;

const MANUAL: &[u8] = b"---\nname: demo\ndescription: Fuzzed package.\n---\n\n# Demo\n";

fn file(path: &str, contents: &[u8]) -> SnapshotFile {
    SnapshotFile {
        path: path.to_owned(),
        mode: 0o100_644,
        contents: contents.to_vec(),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |byte| *byte == 0);
    let profile = parts.next().unwrap_or_default();
    let manual = parts.next().unwrap_or(MANUAL);
    let mut files = vec![file("SKILL.md", manual), file("X.yaml", profile)];
    let third = parts.next();
    let text = String::from_utf8_lossy(profile);
    let json_file = text
        .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | ',' | '"'))
        .find(|word| word.ends_with(".json") && !word.starts_with('/'));
    match (third, json_file) {
        (Some(bytes), Some(json)) => files.push(file(json, bytes)),
        (Some(bytes), None) => files.push(file("fixtures/case.yaml", bytes)),
        (None, _) => {}
    }
    for word in text.split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | ',' | '"')) {
        let word = word.strip_prefix("./").unwrap_or(word);
        if (word.ends_with(".mjs") || word.ends_with(".js"))
            && !files.iter().any(|known| known.path == word)
        {
            files.push(file(word, b"export default () => ({});\n"));
        }

    }
    match load_package(&files) {
        Ok(package) => {
            // No packet schemas and no nested packages: the fuzz input is one package alone.
            let inspection = inspect_packets(
                &package,
                &files,
                "fuzz",
                &PacketSchemas::new(),
                &|path: &std::path::Path| Err(format!("{} is not read here", path.display())),
            );
            // A step naming another folder, or a runner its package lacks, fails the whole
            // inspection, as Runx's does.
            match failure_message(&inspection) {
                Some(message) => assert!(
                    message.ends_with(" is not read here")
                        || message.starts_with("runner selection '"),
                    "{message}"
                ),
                None => assert_eq!(inspection["name"].as_str(), Some(package.name())),
            }
            let summary = inspect_package(&package);
            assert_eq!(summary["skill"].as_str(), Some(package.name()));
            assert_eq!(
                summary["counts"]["runners"].as_u64(),
                u64::try_from(package.runner_names().len()).ok()
            );
            assert!(package.profile_json().is_object());
        }
        Err(err) => {
            let message = err.to_string();
            assert!(
                files.iter().any(|file| file.path == err.file()),
                "{message}"
            );
            // Runx names the file it is about first; a missing declared file is named by its
            // own path, with the declaring file on the second line.
            assert!(
                message.starts_with(err.file())
                    || message.contains(&format!("\n  at {}:", err.file())),
                "{message}"
            );
            assert!(err.line().is_none_or(|line| line >= 1), "{message}");
        }
    }
});
