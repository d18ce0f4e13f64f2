//! Where Skill Lab receipts live on disk, and the local key that signs them.
//!
//! Receipts are stored as Runx stores them (`runtime/src/receipts/store.rs`): one compact JSON
//! file per receipt, named by its content-addressed id with the colon mapped to a dash
//! (`sha256-<hex>.json`), in `<repo_root>/.runx/receipts` or `$RUNX_RECEIPT_DIR`. A receipt is
//! written once: a temp file beside the target, fsynced, moved into place without replacing
//! anything, and the folder fsynced, so a crash leaves either no receipt or the whole one, and
//! a different body under an existing name is refused rather than overwritten.
//!
//! The signing key is a raw 32-byte Ed25519 seed in `<repo_root>/.runx/keys/
//! receipt-signing.ed25519` (or the file `$MINDRUNE_LAB_SIGNING_KEY` names), mode 0600. It is
//! made on first use, atomically, so two processes starting at once still agree on one key.

use std::ffi::OsStr;
use std::fmt;
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, ErrorKind, Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use mindrune_core::{
    ReceiptError, SigningKey, TrustedKey, VerifyingKey, check_receipt_integrity, receipt_file_name,
    receipt_id_from_file_name, receipt_key_id,
};
use serde_json::Value;

use crate::atomic_file::sync_dir;

/// Overrides the receipt folder, as it does for Runx.
pub(crate) const RECEIPT_DIR_ENV: &str = "RUNX_RECEIPT_DIR";
/// Names the signing key file to use instead of the repository's own.
pub const SIGNING_KEY_ENV: &str = "MINDRUNE_LAB_SIGNING_KEY";
/// Receipts are a few kilobytes; anything far larger is not one and is not read into memory.
const MAX_RECEIPT_BYTES: u64 = 8 * 1024 * 1024;
/// An Ed25519 seed.
const SEED_BYTES: usize = 32;

/// Why the receipt store could not do what was asked. Every message names the path.
#[derive(Debug, thiserror::Error)]
pub enum ReceiptStoreError {
    #[error(
        "receipt store {} is not a directory; point {RECEIPT_DIR_ENV} at a directory or move that file away",
        .0.display()
    )]
    NotADirectory(PathBuf),
    #[error("refusing to store receipt {id}: {source}")]
    Inconsistent { id: String, source: ReceiptError },
    #[error(
        "cannot store receipt {id:?}: only sha256:<hex> content-addressed ids have a file name in the store"
    )]
    InvalidId { id: String },
    #[error(
        "a different receipt is already stored at {}; receipts are never overwritten, so compare the two and move the stale file away by hand",
        .path.display()
    )]
    Conflict { path: PathBuf },
    #[error(
        "no receipt {id} in {}; list that folder to see which receipts it holds",
        .dir.display()
    )]
    NotFound { id: String, dir: PathBuf },
    #[error("no receipt file at {}", .0.display())]
    MissingFile(PathBuf),
    #[error("{} is not a runx.receipt.v1 receipt: {message}", .path.display())]
    NotAReceipt { path: PathBuf, message: String },
    #[error(
        "{} holds receipt {recorded}, but its file name says {expected}; restore the original file or rename it to match",
        .path.display()
    )]
    IdFileNameMismatch {
        path: PathBuf,
        recorded: String,
        expected: String,
    },
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn store_io(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ReceiptStoreError {
    let path = path.to_path_buf();
    move |source| ReceiptStoreError::Io {
        action,
        path,
        source,
    }
}

/// A receipt read from the store (or from a file named directly).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredReceipt {
    /// The receipt's own `id`.
    pub id: String,
    pub path: PathBuf,
    pub receipt: Value,
}

/// One receipt file found by [`ReceiptStore::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedReceipt {
    /// The id the file name stands for.
    pub id: String,
    pub path: PathBuf,
}

/// A folder of `sha256-<hex>.json` receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptStore {
    dir: PathBuf,
}

impl ReceiptStore {
    /// `<repo_root>/.runx/receipts`, where Runx keeps a workspace's receipts.
    pub fn default_dir(repo_root: &Path) -> PathBuf {
        repo_root.join(".runx").join("receipts")
    }

    /// The folder to use: the override when one is set and not empty (a relative one is taken
    /// from the repository root, so the lab finds the same folder whatever directory it runs
    /// in), else [`ReceiptStore::default_dir`].
    pub fn resolve_dir(repo_root: &Path, override_dir: Option<&OsStr>) -> PathBuf {
        match override_dir {
            Some(dir) if !dir.is_empty() => repo_root.join(dir),
            _ => Self::default_dir(repo_root),
        }
    }

    /// The store for a repository, honouring `$RUNX_RECEIPT_DIR`.
    pub fn for_repo(repo_root: &Path) -> Result<Self, ReceiptStoreError> {
        let override_dir = std::env::var_os(RECEIPT_DIR_ENV);
        Self::open(Self::resolve_dir(repo_root, override_dir.as_deref()))
    }

    /// A store in `dir`. A missing folder is fine (the first [`ReceiptStore::store`] makes
    /// it); anything else that is not a folder is refused now rather than at the first write.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, ReceiptStoreError> {
        let dir = dir.into();
        match fs::metadata(&dir) {
            Ok(meta) if !meta.is_dir() => Err(ReceiptStoreError::NotADirectory(dir)),
            Ok(_) => Ok(Self { dir }),
            Err(err) if err.kind() == ErrorKind::NotFound => Ok(Self { dir }),
            Err(err) => Err(store_io("read", &dir)(err)),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the receipt with this id is (or would be) stored.
    pub fn path_for(&self, id: &str) -> Result<PathBuf, ReceiptStoreError> {
        receipt_file_name(id)
            .map(|name| self.dir.join(name))
            .ok_or_else(|| ReceiptStoreError::InvalidId { id: id.to_owned() })
    }

    /// Writes a receipt under its id and returns the file. The receipt must be well formed and
    /// its digest and id must be its own (no key is needed for that; `mindrune lab verify`
    /// checks the signature). Storing the same receipt again is a no-op; a different receipt
    /// under the same name is refused.
    pub fn store(&self, receipt: &Value) -> Result<PathBuf, ReceiptStoreError> {
        let integrity =
            check_receipt_integrity(receipt).map_err(|source| ReceiptStoreError::Inconsistent {
                id: receipt["id"].as_str().unwrap_or("(no id)").to_owned(),
                source,
            })?;
        let path = self.path_for(&integrity.id)?;
        if let Some(existing) = read_existing(&path)? {
            return same_or_conflict(existing, receipt, path);
        }
        fs::create_dir_all(&self.dir).map_err(store_io("create", &self.dir))?;
        // Compact JSON, as Runx writes it; the digest does not depend on the layout.
        let bytes = receipt.to_string().into_bytes();
        let temp = temp_beside(&path);
        write_new_file(&temp, &bytes, 0o600).map_err(store_io("write", &temp))?;
        let placed = place_without_replacing(&temp, &path).map_err(store_io("write", &path))?;
        sync_dir(&self.dir).map_err(store_io("sync", &self.dir))?;
        if !placed {
            // Another writer got there between the check above and the move.
            let existing = read_existing(&path)?.unwrap_or(Value::Null);
            return same_or_conflict(existing, receipt, path);
        }
        Ok(path)
    }

    /// Reads a receipt by id (`sha256:<hex>`), by store file name (`sha256-<hex>` with or
    /// without `.json`), or by path: anything containing a `/` is a path, so write
    /// `./sha256-<hex>.json` for such a file in the current directory. A file named like a
    /// store file must hold the receipt its name says. The signature is not checked here.
    pub fn load(&self, id_or_path: impl AsRef<Path>) -> Result<StoredReceipt, ReceiptStoreError> {
        let given = id_or_path.as_ref();
        let (path, by_id) = match bare_receipt_id(given) {
            Some(id) => (self.path_for(&id)?, Some(id)),
            None => (given.to_path_buf(), None),
        };
        let receipt = match read_receipt(&path)? {
            Some(receipt) => receipt,
            None => {
                return Err(match by_id {
                    Some(id) => ReceiptStoreError::NotFound {
                        id,
                        dir: self.dir.clone(),
                    },
                    None => ReceiptStoreError::MissingFile(path),
                });
            }
        };
        let Some(id) = receipt["id"].as_str().map(str::to_owned) else {
            return Err(ReceiptStoreError::NotAReceipt {
                path,
                message: "it has no string `id`".to_owned(),
            });
        };
        let named = path
            .file_name()
            .and_then(OsStr::to_str)
            .and_then(receipt_id_from_file_name);
        if let Some(expected) = named
            && expected != id
        {
            return Err(ReceiptStoreError::IdFileNameMismatch {
                path,
                recorded: id,
                expected,
            });
        }
        Ok(StoredReceipt { id, path, receipt })
    }

    /// The receipt files in the store, by id. Other files (Runx's `index.json`, temp files,
    /// anything not named `sha256-<hex>.json`) are skipped; a missing folder holds none.
    pub fn list(&self) -> Result<Vec<ListedReceipt>, ReceiptStoreError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(store_io("list", &self.dir)(err)),
        };
        let mut receipts = Vec::new();
        for entry in entries {
            let entry = entry.map_err(store_io("list", &self.dir))?;
            let Some(id) = entry
                .file_name()
                .to_str()
                .and_then(receipt_id_from_file_name)
            else {
                continue;
            };
            let is_file = entry
                .file_type()
                .map_err(store_io("list", &entry.path()))?
                .is_file();
            if is_file {
                receipts.push(ListedReceipt {
                    id,
                    path: entry.path(),
                });
            }
        }
        receipts.sort_by(|left, right| left.id.cmp(&right.id));
        Ok(receipts)
    }
}

/// The receipt id a bare argument stands for, when it is one of the store's own spellings.
fn bare_receipt_id(given: &Path) -> Option<String> {
    let text = given.to_str()?;
    if text.contains('/') {
        return None;
    }
    if receipt_file_name(text).is_some() {
        return Some(text.to_owned());
    }
    receipt_id_from_file_name(text).or_else(|| receipt_id_from_file_name(&format!("{text}.json")))
}

fn same_or_conflict(
    existing: Value,
    receipt: &Value,
    path: PathBuf,
) -> Result<PathBuf, ReceiptStoreError> {
    if existing == *receipt {
        Ok(path)
    } else {
        Err(ReceiptStoreError::Conflict { path })
    }
}

/// What an existing file at a receipt's name holds, for the overwrite check: `None` when
/// there is no file, `Null` when it is not JSON (which then differs from any receipt).
fn read_existing(path: &Path) -> Result<Option<Value>, ReceiptStoreError> {
    match read_receipt(path) {
        Ok(value) => Ok(value),
        Err(ReceiptStoreError::NotAReceipt { .. }) => Ok(Some(Value::Null)),
        Err(err) => Err(err),
    }
}

/// Reads and parses a receipt file; `None` when there is none.
fn read_receipt(path: &Path) -> Result<Option<Value>, ReceiptStoreError> {
    // O_NONBLOCK keeps a FIFO planted under a receipt's name from hanging the read.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(store_io("open", path)(err)),
    };
    let not_a_receipt = |message: String| ReceiptStoreError::NotAReceipt {
        path: path.to_path_buf(),
        message,
    };
    let meta = file.metadata().map_err(store_io("inspect", path))?;
    if !meta.is_file() {
        return Err(not_a_receipt("it is not a regular file".to_owned()));
    }
    let mut text = String::new();
    let read = file
        .take(MAX_RECEIPT_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|err| match err.kind() {
            ErrorKind::InvalidData => not_a_receipt("it is not UTF-8 text".to_owned()),
            _ => store_io("read", path)(err),
        })?;
    if read as u64 > MAX_RECEIPT_BYTES {
        return Err(not_a_receipt(format!(
            "it is larger than {MAX_RECEIPT_BYTES} bytes"
        )));
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|err| not_a_receipt(format!("it is not JSON ({err})")))
}

// -------------------------------------------------------------------------------------------
// The local signing key.
// -------------------------------------------------------------------------------------------

/// Why the signing key could not be loaded or made. Every message names the file and says
/// how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum SigningKeyError {
    #[error(
        "no receipt signing key at {}; {SIGNING_KEY_ENV} must name an existing 32-byte key file (unset it to use the repository's own key)",
        .0.display()
    )]
    Missing(PathBuf),
    #[error(
        "receipt signing key {} is not a regular file; put the key file there, or remove it so a new key is made",
        .0.display()
    )]
    NotAFile(PathBuf),
    #[error(
        "receipt signing key {} can be read or written by group or others (mode {mode:03o}); run `chmod 600 {}`",
        .path.display(),
        .path.display()
    )]
    TooOpen { path: PathBuf, mode: u32 },
    #[error(
        "receipt signing key {} is {size} bytes, not a 32-byte Ed25519 seed; restore the right file, or delete it so a new key is made (receipts signed with the old key then verify only with the old public key)",
        .path.display()
    )]
    WrongSize { path: PathBuf, size: u64 },
    #[error("cannot get random bytes for a new receipt signing key at {}: {message}", .path.display())]
    Random { path: PathBuf, message: String },
    #[error("cannot {action} receipt signing key {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

fn key_io(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SigningKeyError {
    let path = path.to_path_buf();
    move |source| SigningKeyError::Io {
        action,
        path,
        source,
    }
}

/// The workspace's receipt signing key and the file it came from.
pub struct LocalSigningKey {
    path: PathBuf,
    key: SigningKey,
}

impl fmt::Debug for LocalSigningKey {
    // The seed never appears in logs or panics; the key id is enough to tell keys apart.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LocalSigningKey")
            .field("path", &self.path)
            .field("kid", &self.kid())
            .finish_non_exhaustive()
    }
}

impl LocalSigningKey {
    /// `<repo_root>/.runx/keys/receipt-signing.ed25519`.
    pub fn default_path(repo_root: &Path) -> PathBuf {
        repo_root
            .join(".runx")
            .join("keys")
            .join("receipt-signing.ed25519")
    }

    /// The repository's key, or the one `$MINDRUNE_LAB_SIGNING_KEY` names.
    pub fn for_repo(repo_root: &Path) -> Result<Self, SigningKeyError> {
        let override_path = std::env::var_os(SIGNING_KEY_ENV);
        Self::for_repo_with(repo_root, override_path.as_deref())
    }

    /// As [`LocalSigningKey::for_repo`] with the override given. A named key file must exist
    /// (a relative name is taken from the repository root): making a fresh key at a mistyped
    /// path would sign receipts nobody can verify with the key they meant. The repository's
    /// own key is made on first use.
    pub fn for_repo_with(
        repo_root: &Path,
        override_path: Option<&OsStr>,
    ) -> Result<Self, SigningKeyError> {
        match override_path {
            Some(path) if !path.is_empty() => Self::load(&repo_root.join(path)),
            _ => Self::load_or_create(&Self::default_path(repo_root)),
        }
    }

    /// Reads a key file: a regular file of exactly 32 bytes that only its owner can read or
    /// write.
    pub fn load(path: &Path) -> Result<Self, SigningKeyError> {
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => file,
            Err(err) if err.kind() == ErrorKind::NotFound => {
                return Err(SigningKeyError::Missing(path.to_path_buf()));
            }
            Err(err) => return Err(key_io("open", path)(err)),
        };
        let meta = file.metadata().map_err(key_io("inspect", path))?;
        if !meta.is_file() {
            return Err(SigningKeyError::NotAFile(path.to_path_buf()));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SigningKeyError::TooOpen {
                path: path.to_path_buf(),
                mode,
            });
        }
        let wrong_size = |size: u64| SigningKeyError::WrongSize {
            path: path.to_path_buf(),
            size,
        };
        if meta.len() != SEED_BYTES as u64 {
            return Err(wrong_size(meta.len()));
        }
        // Reading one byte past the seed catches a file that grew after it was measured.
        let mut bytes = Vec::with_capacity(SEED_BYTES + 1);
        file.take(SEED_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(key_io("read", path))?;
        let seed: [u8; SEED_BYTES] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| wrong_size(bytes.len() as u64))?;
        Ok(Self {
            path: path.to_path_buf(),
            key: SigningKey::from_bytes(&seed),
        })
    }

    /// Reads the key file, making it first if there is none: 32 random bytes written to a
    /// mode-0600 temp file in the key folder (itself made mode 0700), then moved into place
    /// only if no key appeared meanwhile, in which case that key is used.
    pub fn load_or_create(path: &Path) -> Result<Self, SigningKeyError> {
        match Self::load(path) {
            Err(SigningKeyError::Missing(_)) => {}
            other => return other,
        }
        let folder = path.parent().unwrap_or(Path::new("."));
        if let Some(above) = folder
            .parent()
            .filter(|above| !above.as_os_str().is_empty())
        {
            fs::create_dir_all(above).map_err(key_io("create the folder of", path))?;
        }
        match DirBuilder::new().mode(0o700).create(folder) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
            Err(err) => return Err(key_io("create the folder of", path)(err)),
        }
        let mut seed = [0u8; SEED_BYTES];
        getrandom::fill(&mut seed).map_err(|err| SigningKeyError::Random {
            path: path.to_path_buf(),
            message: err.to_string(),
        })?;
        let temp = temp_beside(path);
        write_new_file(&temp, &seed, 0o600).map_err(key_io("write", path))?;
        place_without_replacing(&temp, path).map_err(key_io("create", path))?;
        sync_dir(folder).map_err(key_io("sync the folder of", path))?;
        // Whether this process's key or a concurrent one landed, the file is the key.
        Self::load(path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    pub fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The `issuer.kid` receipts signed with this key carry.
    pub fn kid(&self) -> String {
        receipt_key_id(&self.verifying_key())
    }

    /// This key as a verifier trusts it.
    pub fn trusted_key(&self) -> TrustedKey {
        TrustedKey::local(self.verifying_key())
    }
}

// -------------------------------------------------------------------------------------------
// Atomic file placement.
// -------------------------------------------------------------------------------------------

/// A temp name beside `path`, hidden and unique to this process and moment, so it is never
/// mistaken for a receipt or a key.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    path.with_file_name(format!(".{name}.tmp.{}-{nanos}", std::process::id()))
}

/// Creates `path` (never following a symlink, never reusing a file), writes it in full and
/// fsyncs it; removes it again if any of that fails.
fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if written.is_err() {
        let _ = fs::remove_file(path);
    }
    written
}

/// Moves a written temp file to `path` unless something is already there: `Ok(true)` when it
/// landed, `Ok(false)` when an existing file was kept. A hard link is the no-replace move
/// std offers; where the filesystem has no hard links, a rename after a fresh check leaves a
/// window only as wide as two concurrent writers of the same name.
fn place_without_replacing(temp: &Path, path: &Path) -> io::Result<bool> {
    let placed = match fs::hard_link(temp, path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(_) => match fs::symlink_metadata(path) {
            Ok(_) => Ok(false),
            Err(err) if err.kind() == ErrorKind::NotFound => fs::rename(temp, path).map(|()| true),
            Err(err) => Err(err),
        },
    };
    // After a link (or a failure) the temp name is left over; after a rename it is already
    // gone. A leftover that cannot be removed is hidden and harmless, so it does not turn a
    // placed file into an error.
    let _ = fs::remove_file(temp);
    placed
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_core::{
        Authority, Enforcement, Idempotency, ReceiptDisposition, ReceiptDraft, Reference,
        ReferenceType, Seal, Subject, VerifyOptions, seal_receipt, verify_receipt,
    };
    use serde_json::json;

    fn draft(summary: &str) -> ReceiptDraft {
        let enforcement =
            Enforcement::for_profile("mindrune.lab.test", Vec::new(), Vec::new(), Vec::new())
                .unwrap();
        ReceiptDraft::new(
            "2026-05-22T00:00:00Z",
            Idempotency::from_inputs(&json!("intent"), &json!("trigger"), &json!(summary)).unwrap(),
            Subject {
                kind: "graph".to_owned(),
                reference: Reference::new(ReferenceType::Harness, "runx:harness:skill-lab-build"),
                input_context: None,
                commitments: Vec::new(),
            },
            Authority::new(
                Reference::new(ReferenceType::Principal, "runx:principal:local_operator"),
                enforcement,
            ),
            Seal::terminal(
                ReceiptDisposition::Closed,
                "graph_closed",
                summary,
                "2026-05-22T00:00:01Z",
                Vec::new(),
            ),
        )
    }

    fn sealed(summary: &str) -> Value {
        seal_receipt(&draft(summary), &SigningKey::from_bytes(&[7; 32])).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn store_writes_the_content_addressed_file_and_load_finds_it_every_way() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(ReceiptStore::default_dir(root.path())).unwrap();
        let receipt = sealed("sealed");
        let id = receipt["id"].as_str().unwrap().to_owned();
        let hex = id.strip_prefix("sha256:").unwrap();

        let path = store.store(&receipt).unwrap();
        assert_eq!(
            path,
            root.path()
                .join(format!(".runx/receipts/sha256-{hex}.json"))
        );
        assert_eq!(
            names(store.dir()),
            [format!("sha256-{hex}.json")],
            "no temp file left"
        );
        let written: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(written, receipt);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let by_name = format!("sha256-{hex}");
        let by_file = format!("sha256-{hex}.json");
        for given in [id.as_str(), by_name.as_str(), by_file.as_str()] {
            let loaded = store.load(given).unwrap();
            assert_eq!(
                (loaded.id.as_str(), &loaded.path, &loaded.receipt),
                (id.as_str(), &path, &receipt)
            );
        }
        assert_eq!(store.load(&path).unwrap().receipt, receipt);
    }

    #[test]
    fn storing_again_is_a_no_op_and_a_different_body_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(root.path()).unwrap();
        let receipt = sealed("sealed");
        let path = store.store(&receipt).unwrap();
        assert_eq!(store.store(&receipt).unwrap(), path);

        // Metadata is outside the id, so this is a different file under the same name.
        let mut relabelled = receipt.clone();
        relabelled["metadata"] = json!({"skill_name": "another"});
        let err = store.store(&relabelled).unwrap_err();
        assert!(
            matches!(&err, ReceiptStoreError::Conflict { path: at } if *at == path),
            "{err}"
        );
        assert!(err.to_string().contains(&path.display().to_string()));
        let kept: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        assert_eq!(kept, receipt);

        fs::write(&path, b"not json").unwrap();
        assert!(matches!(
            store.store(&receipt),
            Err(ReceiptStoreError::Conflict { .. })
        ));
    }

    #[test]
    fn store_refuses_a_receipt_that_is_not_its_own_content() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(root.path().join("receipts")).unwrap();
        let mut tampered = sealed("sealed");
        tampered["seal"]["summary"] = json!("edited after sealing");
        let err = store.store(&tampered).unwrap_err();
        assert!(
            matches!(
                &err,
                ReceiptStoreError::Inconsistent {
                    source: ReceiptError::DigestMismatch { .. },
                    ..
                }
            ),
            "{err}"
        );
        assert!(!store.dir().exists(), "nothing was written");
    }

    #[test]
    fn load_refuses_a_file_whose_name_is_another_receipt() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(root.path()).unwrap();
        let first = sealed("first");
        let second = sealed("second");
        let path = store.store(&first).unwrap();
        fs::write(&path, second.to_string()).unwrap();
        let err = store.load(first["id"].as_str().unwrap()).unwrap_err();
        assert!(
            matches!(err, ReceiptStoreError::IdFileNameMismatch { .. }),
            "{err}"
        );
    }

    #[test]
    fn load_reports_what_is_missing() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(root.path().join("receipts")).unwrap();
        let id = format!("sha256:{}", "a".repeat(64));
        let err = store.load(&id).unwrap_err();
        assert!(matches!(err, ReceiptStoreError::NotFound { .. }), "{err}");
        assert!(err.to_string().contains(&store.dir().display().to_string()));
        let missing = root.path().join("elsewhere/receipt.json");
        assert!(matches!(
            store.load(&missing),
            Err(ReceiptStoreError::MissingFile(_))
        ));
        let junk = root.path().join("junk.json");
        fs::write(&junk, "[1,").unwrap();
        assert!(matches!(
            store.load(&junk),
            Err(ReceiptStoreError::NotAReceipt { .. })
        ));
    }

    #[test]
    fn list_returns_receipts_by_id_and_skips_other_files() {
        let root = tempfile::tempdir().unwrap();
        let store = ReceiptStore::open(root.path().join("receipts")).unwrap();
        assert_eq!(
            store.list().unwrap(),
            Vec::new(),
            "a missing folder holds no receipts"
        );
        let mut ids: Vec<String> = ["one", "two", "three"]
            .iter()
            .map(|summary| {
                let receipt = sealed(summary);
                store.store(&receipt).unwrap();
                receipt["id"].as_str().unwrap().to_owned()
            })
            .collect();
        ids.sort();
        for other in ["index.json", "effect-state.json", "notes.txt"] {
            fs::write(store.dir().join(other), "{}").unwrap();
        }
        fs::write(
            store
                .dir()
                .join(format!(".sha256-{}.json.tmp.1-2", "b".repeat(64))),
            "",
        )
        .unwrap();
        fs::create_dir(store.dir().join(format!("sha256-{}.json", "c".repeat(64)))).unwrap();
        let listed = store.list().unwrap();
        let listed_ids: Vec<&str> = listed.iter().map(|entry| entry.id.as_str()).collect();
        assert_eq!(listed_ids, ids);
        for entry in &listed {
            assert_eq!(store.load(&entry.path).unwrap().id, entry.id);
        }
    }

    #[test]
    fn the_store_folder_can_be_overridden_and_must_be_a_folder() {
        let root = Path::new("/repo");
        assert_eq!(
            ReceiptStore::resolve_dir(root, None),
            Path::new("/repo/.runx/receipts")
        );
        assert_eq!(
            ReceiptStore::resolve_dir(root, Some(OsStr::new(""))),
            Path::new("/repo/.runx/receipts")
        );
        assert_eq!(
            ReceiptStore::resolve_dir(root, Some(OsStr::new("out/receipts"))),
            Path::new("/repo/out/receipts")
        );
        assert_eq!(
            ReceiptStore::resolve_dir(root, Some(OsStr::new("/tmp/receipts"))),
            Path::new("/tmp/receipts")
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        fs::write(&file, "").unwrap();
        let err = ReceiptStore::open(&file).unwrap_err();
        assert!(err.to_string().contains(RECEIPT_DIR_ENV), "{err}");
    }

    #[test]
    fn the_signing_key_is_made_once_with_owner_only_permissions() {
        let root = tempfile::tempdir().unwrap();
        let path = LocalSigningKey::default_path(root.path());
        let made = LocalSigningKey::for_repo_with(root.path(), None).unwrap();
        assert_eq!(made.path(), path);
        assert_eq!(fs::metadata(&path).unwrap().len(), 32);
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let folder = path.parent().unwrap();
        assert_eq!(
            fs::metadata(folder).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(
            names(folder),
            ["receipt-signing.ed25519"],
            "no temp file left"
        );

        let again = LocalSigningKey::load_or_create(&path).unwrap();
        assert_eq!(again.verifying_key(), made.verifying_key());
        assert!(format!("{again:?}").contains(&again.kid()));

        let receipt = seal_receipt(&draft("signed"), made.signing_key()).unwrap();
        let store = ReceiptStore::open(ReceiptStore::default_dir(root.path())).unwrap();
        let stored = store.load(store.store(&receipt).unwrap()).unwrap();
        let verified = verify_receipt(
            &stored.receipt,
            &VerifyOptions::trusting([again.trusted_key()]),
        )
        .unwrap();
        assert_eq!(verified.kid, made.kid());
    }

    #[test]
    fn a_key_others_can_read_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        LocalSigningKey::load_or_create(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let err = LocalSigningKey::load(&path).unwrap_err();
        assert!(
            matches!(err, SigningKeyError::TooOpen { mode: 0o640, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("chmod 600 {}", path.display())),
            "{err}"
        );
        assert!(
            matches!(
                LocalSigningKey::load_or_create(&path),
                Err(SigningKeyError::TooOpen { .. })
            ),
            "a refused key is never replaced"
        );
    }

    #[test]
    fn a_key_of_the_wrong_size_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write_new_file(&path, &[1; 31], 0o600).unwrap();
        let err = LocalSigningKey::load_or_create(&path).unwrap_err();
        assert!(
            matches!(err, SigningKeyError::WrongSize { size: 31, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("32-byte"), "{err}");
        fs::create_dir(dir.path().join("folder")).unwrap();
        assert!(matches!(
            LocalSigningKey::load(&dir.path().join("folder")),
            Err(SigningKeyError::NotAFile(_))
        ));
    }

    #[test]
    fn a_named_key_must_exist_and_is_used_instead_of_the_repository_key() {
        let root = tempfile::tempdir().unwrap();
        let err = LocalSigningKey::for_repo_with(root.path(), Some(OsStr::new("keys/ci.ed25519")))
            .unwrap_err();
        assert!(
            matches!(&err, SigningKeyError::Missing(path) if path.ends_with("keys/ci.ed25519"))
        );
        assert!(err.to_string().contains(SIGNING_KEY_ENV), "{err}");
        assert!(
            !LocalSigningKey::default_path(root.path()).exists(),
            "no key was made"
        );

        let named = root.path().join("ci.ed25519");
        write_new_file(&named, &[3; 32], 0o600).unwrap();
        let key = LocalSigningKey::for_repo_with(root.path(), Some(named.as_os_str())).unwrap();
        assert_eq!(
            key.verifying_key(),
            SigningKey::from_bytes(&[3; 32]).verifying_key()
        );
        assert!(!LocalSigningKey::default_path(root.path()).exists());
    }

    #[test]
    fn placing_never_replaces_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "first").unwrap();
        let temp = temp_beside(&target);
        write_new_file(&temp, b"second", 0o600).unwrap();
        assert!(!place_without_replacing(&temp, &target).unwrap());
        assert_eq!(fs::read_to_string(&target).unwrap(), "first");
        assert_eq!(names(dir.path()), ["target"]);
    }
}
