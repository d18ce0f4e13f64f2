//! The Runx package snapshot digest (`base_digest`, `candidate_digest`, `package_digest`).
//!
//! Runx hashes a package folder by walking it depth first, directory by directory, with each
//! directory's entries sorted by name bytes, and framing every file's relative path, mode and
//! contents with a length prefix. The walk itself is I/O and lives elsewhere; this module takes
//! the files already read and does the ordering and hashing, so the result can be checked
//! against Runx without touching a disk.

use std::cmp::Ordering;

use sha2::{Digest as _, Sha256};

use crate::digest;

/// Runx refuses a package with more files than this (`MAX_PACKAGE_FILES`).
pub const MAX_FILES: usize = 500;

/// Runx refuses a package whose files add up to more bytes than this (`MAX_PACKAGE_BYTES`).
pub const MAX_BYTES: u64 = 20 * 1024 * 1024;

/// Entry names Runx skips wherever they appear in the walk, files or folders alike.
pub const IGNORED: [&str; 4] = [".git", ".runx", "node_modules", "target"];

/// One regular file of a package, as the walk found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// The path relative to the package folder, with `/` separators and no leading `./`.
    pub path: String,
    /// The Unix mode including the file-type bits (`0o100644`, not `0o644`), because that is
    /// what Runx reads from `PermissionsExt::mode()`; a chmod therefore changes the digest.
    pub mode: u32,
    /// The file's bytes.
    pub contents: Vec<u8>,
}

/// The digest Runx gives a package folder that does not exist: `sha256("absent")`.
pub fn absent_digest() -> String {
    digest::sha256(b"absent")
}

/// The `sha256:<hex>` snapshot digest of a package's files, which must already be in Runx's
/// walk order (see [`walk_order`] and [`sort_in_walk_order`]); the order is part of the hash.
///
/// The hashed bytes are `b"directory\0"` and then, per file, `field(path) ‖ field(u32_be(mode))
/// ‖ field(contents)`, where `field(x) = u64_be(len(x)) ‖ x`.
pub fn snapshot_digest(files: &[SnapshotFile]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"directory\0");
    for file in files {
        field(&mut hasher, file.path.as_bytes());
        field(&mut hasher, &file.mode.to_be_bytes());
        field(&mut hasher, &file.contents);
    }
    digest::sha256_text(&hasher.finalize())
}

/// Feeds one length-prefixed field, so that no two different file lists hash the same bytes.
fn field(hasher: &mut Sha256, bytes: &[u8]) {
    // A `usize` always fits in a `u64` on the targets Rust supports.
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    hasher.update(len.to_be_bytes());
    hasher.update(bytes);
}

/// Compares two relative paths in the order a depth-first walk visits them when each
/// directory's entries are sorted by name bytes.
///
/// This is not a full-path sort: `a/b/c` and `a/z` (inside folder `a`) come before `a.txt`,
/// because the walk meets the entry `a` before `a.txt`, while a byte sort of whole paths puts
/// `a.txt` first (`.` is below `/`). Comparing path components one by one gives the walk's
/// order.
pub(crate) fn walk_order(a: &str, b: &str) -> Ordering {
    let mut left = a.split('/');
    let mut right = b.split('/');
    loop {
        match (left.next(), right.next()) {
            (Some(x), Some(y)) => match x.as_bytes().cmp(y.as_bytes()) {
                Ordering::Equal => {}
                unequal => return unequal,
            },
            // A path that is a prefix of another would be a file that is also a folder, which
            // a real walk never yields; putting the shorter first keeps the order total.
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (None, None) => return Ordering::Equal,
        }
    }
}

/// Sorts files into Runx's walk order, ready for [`snapshot_digest`].
pub fn sort_in_walk_order(files: &mut [SnapshotFile]) {
    files.sort_by(|x, y| walk_order(&x.path, &y.path));
}

/// Whether Runx skips an entry with this name during the walk.
pub(crate) fn is_ignored(name: &str) -> bool {
    IGNORED.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, mode: u32, contents: &[u8]) -> SnapshotFile {
        SnapshotFile {
            path: path.to_owned(),
            mode,
            contents: contents.to_vec(),
        }
    }

    fn hex_digest(bytes: &[u8]) -> String {
        let hash = Sha256::digest(bytes);
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// The framing written out byte by byte, independently of `field`, for two files.
    #[test]
    fn two_files_hash_the_documented_bytes() {
        let files = [
            file("SKILL.md", 0o100_644, b"---\nname: x\n---\n"),
            file("run.sh", 0o100_755, b"echo hi\n"),
        ];
        let mut bytes: Vec<u8> = b"directory\0".to_vec();
        // "SKILL.md" is 8 bytes, the mode 4, the contents 16.
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 8]);
        bytes.extend_from_slice(b"SKILL.md");
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 4]);
        bytes.extend_from_slice(&[0x00, 0x00, 0x81, 0xa4]); // 0o100644 = 0x81a4
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 16]);
        bytes.extend_from_slice(b"---\nname: x\n---\n");
        // "run.sh" is 6 bytes, the mode 4, the contents 8.
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 6]);
        bytes.extend_from_slice(b"run.sh");
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 4]);
        bytes.extend_from_slice(&[0x00, 0x00, 0x81, 0xed]); // 0o100755 = 0x81ed
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 8]);
        bytes.extend_from_slice(b"echo hi\n");
        assert_eq!(snapshot_digest(&files), hex_digest(&bytes));
    }

    #[test]
    fn an_empty_package_hashes_only_the_directory_tag() {
        assert_eq!(snapshot_digest(&[]), hex_digest(b"directory\0"));
    }

    #[test]
    fn a_missing_package_hashes_the_word_absent() {
        // `printf absent | sha256sum`, and the same through sha2 directly.
        assert_eq!(
            absent_digest(),
            "sha256:5ad38304b535c2987dbd24657c1a11b884984ff600d9f389deb0d4e634fee792"
        );
        assert_eq!(absent_digest(), hex_digest(b"absent"));
        assert_ne!(absent_digest(), snapshot_digest(&[]));
    }

    #[test]
    fn a_mode_change_changes_the_digest() {
        let before = [file("run.sh", 0o100_644, b"echo hi\n")];
        let after = [file("run.sh", 0o100_755, b"echo hi\n")];
        assert_ne!(snapshot_digest(&before), snapshot_digest(&after));
    }

    #[test]
    fn moving_bytes_between_fields_changes_the_digest() {
        // Without length prefixes these two would hash the same concatenation.
        let one = [file("ab", 0o100_644, b"c")];
        let two = [file("a", 0o100_644, b"bc")];
        assert_ne!(snapshot_digest(&one), snapshot_digest(&two));
    }

    #[test]
    fn walk_order_is_depth_first_per_directory_not_a_path_sort() {
        let mut paths = vec!["a.txt", "a/z", "b", "a/b/c", "A", "a/b.md", "a/b/a"];
        paths.sort_by(|x, y| walk_order(x, y));
        // Folder `a` is visited before the file `a.txt`, and inside `a` the folder `b` before
        // the file `b.md`, just as sorted directory listings walked depth first give.
        assert_eq!(
            paths,
            ["A", "a/b/a", "a/b/c", "a/b.md", "a/z", "a.txt", "b"]
        );

        let mut full_path_sorted = paths.clone();
        full_path_sorted.sort_unstable();
        assert_ne!(
            paths, full_path_sorted,
            "a plain sort would hash differently"
        );
        assert_eq!(walk_order("a/b/c", "a.txt"), Ordering::Less);
        assert_eq!(walk_order("a/z", "a.txt"), Ordering::Less);
        assert_eq!(walk_order("a/b/c", "a/z"), Ordering::Less);
        assert_eq!(walk_order("a/z", "a/z"), Ordering::Equal);
    }

    #[test]
    fn sorting_files_makes_the_digest_independent_of_input_order() {
        let mut one = vec![file("a.txt", 0o100_644, b"1"), file("a/b", 0o100_644, b"2")];
        let mut two = vec![file("a/b", 0o100_644, b"2"), file("a.txt", 0o100_644, b"1")];
        sort_in_walk_order(&mut one);
        sort_in_walk_order(&mut two);
        assert_eq!(one[0].path, "a/b");
        assert_eq!(snapshot_digest(&one), snapshot_digest(&two));
    }

    #[test]
    fn the_ignored_names_are_runx_s_four() {
        assert!(IGNORED.iter().all(|name| is_ignored(name)));
        assert!(!is_ignored("targets"));
        assert!(!is_ignored(".github"));
        assert_eq!(MAX_FILES, 500);
        assert_eq!(MAX_BYTES, 20_971_520);
    }
}
