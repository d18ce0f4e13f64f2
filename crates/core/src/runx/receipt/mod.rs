//! `runx.receipt.v1`: the signed, content-addressed record every Skill Lab terminal path seals.
//!
//! A receipt is only worth something if anyone can recompute it, so the digest, the id and the
//! signature follow Runx's own code exactly:
//!
//! - **Canonical form** (`runx.receipt.c14n.v1`, Runx `crates/runx-receipts/src/canonical.rs`):
//!   object keys sorted by bytes at every level, no whitespace, strings escaped as serde_json
//!   escapes them, numbers as serde_json prints them. For strings, booleans, nulls and integers
//!   these are the bytes `runx.stable-json.v1` writes too; the two differ for fractional and
//!   exponent numbers (`100.0` here, `100` in stable JSON), and
//!   [`canonical_json`] writes them as Runx's serde writer does.
//! - **Digest**: `sha256:<hex>` of the canonical form of the receipt without `signature`,
//!   `digest` and `metadata` (`canonical_receipt_body_digest`). `metadata` is a local read aid
//!   and deliberately unsigned.
//! - **Id**: `sha256:<hex>` of the canonical form without those three fields and also without
//!   `id` and `lineage` (`content_addressed_receipt_id`). Runx computes it first and then the
//!   digest (`runtime/src/receipts/seal.rs`, `seal_receipt_unvalidated`), so the digest commits
//!   the id. Leaving `lineage` out lets a parent commit its children's ids without a cycle.
//! - **Signature** (`runtime/src/receipts/signing.rs`): Ed25519 over the UTF-8 bytes of the
//!   digest *string* (`sha256:<hex>`), written `base64:` + URL-safe base64 without padding;
//!   Runx also accepts standard base64 when reading, and so do we.
//! - **Issuer**: `{type, kid, public_key_sha256}` where `public_key_sha256` is `sha256:<hex>` of
//!   the raw 32-byte public key. The public key itself is *not* in the receipt: Runx's verifier
//!   looks the `kid` up in a trusted key set and then checks that the key hashes to
//!   `public_key_sha256`. [`verify`] does the same with [`VerifyOptions::trusted_keys`].
//! - **Local development**: Runx's unsigned development mode writes `sig:` + digest, which
//!   proves nothing; [`verify`] accepts it only when
//!   [`VerifyOptions::allow_local_development_signatures`] is set.
//!
//! The draft types below serialize field for field as Runx's `runx-contracts` types do
//! (`crates/runx-contracts/src/receipt.rs`): the same optional fields are left out when absent,
//! and the same ones are written as `null` or `[]`, because the digest covers those bytes.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer as _};
use serde::Serialize;
use serde_json::{Map, Value};

pub use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::digest;

mod draft;
mod shape;
use draft::Issuer;
pub use draft::{
    Authority, Commitment, CommitmentScope, CriterionBinding, CriterionStatus, Disposition,
    Enforcement, Idempotency, IssuerType, ReceiptDraft, Reference, ReferenceType, Seal, Subject,
};
use shape::check_shape;

/// The schema tag of a receipt.
pub(crate) const RECEIPT_SCHEMA: &str = "runx.receipt.v1";
/// The canonicalization a receipt's digest and id are computed under.
pub(crate) const RECEIPT_CANONICALIZATION: &str = "runx.receipt.c14n.v1";
/// The only signature algorithm `runx.receipt.v1` allows.
pub(crate) const SIGNATURE_ALGORITHM: &str = "Ed25519";
/// The prefix of a real signature value.
pub(crate) const SIGNATURE_PREFIX: &str = "base64:";
/// The prefix of Runx's local-development pseudo-signature (`sig:` + body digest).
pub const LOCAL_DEVELOPMENT_SIGNATURE_PREFIX: &str = "sig:";
/// How MindRune names a local receipt key: this prefix plus the first 16 hex digits of the
/// public key's SHA-256, so the name changes whenever the key does.
pub(crate) const KEY_ID_PREFIX: &str = "mindrune-lab-ed25519-";

const ID_PREFIX: &str = "sha256:";
const FILE_PREFIX: &str = "sha256-";
const FILE_SUFFIX: &str = ".json";

/// Every top-level field Runx's `Receipt` type knows; it denies any other.
const TOP_LEVEL_FIELDS: [&str; 16] = [
    "schema",
    "id",
    "created_at",
    "canonicalization",
    "issuer",
    "signature",
    "digest",
    "idempotency",
    "subject",
    "authority",
    "signals",
    "decisions",
    "acts",
    "seal",
    "lineage",
    "metadata",
];
const DISPOSITIONS: [&str; 8] = [
    "closed",
    "deferred",
    "superseded",
    "declined",
    "blocked",
    "failed",
    "killed",
    "timed_out",
];
const CRITERION_STATUSES: [&str; 5] =
    ["verified", "failed", "pending", "not_applicable", "unknown"];
const ACT_FORMS: [&str; 5] = ["revision", "reply", "review", "observation", "verification"];
const ISSUER_TYPES: [&str; 4] = ["local", "hosted", "ci", "verifier"];
const COMMITMENT_SCOPES: [&str; 5] = ["input", "output", "stdout", "stderr", "error"];

/// Why a receipt could not be sealed or did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    /// The receipt is not a well-formed `runx.receipt.v1` document; `field` is the dotted path.
    #[error("malformed runx.receipt.v1 receipt: `{field}` {problem}")]
    Malformed { field: String, problem: String },
    /// The body no longer hashes to the recorded digest: something signed was changed.
    #[error(
        "receipt digest mismatch: the receipt records {recorded} but its body hashes to {computed}; it was changed after it was sealed"
    )]
    DigestMismatch { recorded: String, computed: String },
    /// The recorded id is not the content address of the body.
    #[error(
        "receipt id mismatch: the receipt records id {recorded} but its content address is {computed}"
    )]
    IdMismatch { recorded: String, computed: String },
    /// The signature was not made by the named key over this receipt's digest.
    #[error("receipt signature does not verify for key {kid}: {reason}")]
    BadSignature { kid: String, reason: String },
    /// No trusted key has the issuer's key id.
    #[error(
        "receipt is signed by key {kid} ({public_key_sha256}), which is not among the trusted keys; verify with that key's public key"
    )]
    UnknownSigner {
        kid: String,
        public_key_sha256: String,
    },
    /// The trusted key with the issuer's key id is not the key the issuer names.
    #[error(
        "receipt issuer {kid} names public key {recorded}, but the trusted key with that id is {expected}"
    )]
    KeyHashMismatch {
        kid: String,
        recorded: String,
        expected: String,
    },
    /// A `sig:<digest>` pseudo-signature where a real one is required.
    #[error(
        "receipt carries a local-development pseudo-signature (sig:<digest>), which proves nothing; it is accepted only when local-development signatures are allowed"
    )]
    LocalDevelopmentSignatureRefused,
    /// A draft that would not make a valid receipt; `field` is the receipt path it lands at.
    #[error("cannot seal receipt: `{field}` {problem}")]
    InvalidDraft { field: String, problem: String },
}

fn malformed(field: impl Into<String>, problem: impl Into<String>) -> ReceiptError {
    ReceiptError::Malformed {
        field: field.into(),
        problem: problem.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// The draft: what a caller knows when a path ends.
// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
// Keys.
// ---------------------------------------------------------------------------------------------

/// `sha256:<hex>` of the raw 32-byte public key: what `issuer.public_key_sha256` records.
pub(crate) fn public_key_sha256(key: &VerifyingKey) -> String {
    digest::sha256(key.as_bytes())
}

/// The variable `runx verify` reads the trusted key's id from.
pub const RUNX_VERIFY_KID_ENV: &str = "RUNX_RECEIPT_VERIFY_KID";
/// The variable `runx verify` reads the trusted Ed25519 public key from (base64).
pub const RUNX_VERIFY_PUBLIC_KEY_ENV: &str = "RUNX_RECEIPT_VERIFY_ED25519_PUBLIC_KEY_BASE64";

/// The raw 32-byte public key in standard base64, as `runx verify` takes it in
/// [`RUNX_VERIFY_PUBLIC_KEY_ENV`] (it decodes URL-safe and standard base64 alike).
pub fn public_key_base64(key: &VerifyingKey) -> String {
    STANDARD.encode(key.as_bytes())
}

/// The key id MindRune gives a local key: [`KEY_ID_PREFIX`] plus 16 hex digits of its hash.
pub fn key_id(key: &VerifyingKey) -> String {
    let hash = public_key_sha256(key);
    let hex = hash.strip_prefix(ID_PREFIX).unwrap_or(&hash);
    format!("{KEY_ID_PREFIX}{}", &hex[..16])
}

/// A public key a verifier trusts, under the key id receipts name it by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedKey {
    pub kid: String,
    pub key: VerifyingKey,
}

impl TrustedKey {
    pub fn new(kid: impl Into<String>, key: VerifyingKey) -> Self {
        Self {
            kid: kid.into(),
            key,
        }
    }

    /// A key under the id [`seal`] gives it ([`key_id`]).
    pub fn local(key: VerifyingKey) -> Self {
        Self {
            kid: key_id(&key),
            key,
        }
    }
}

/// What [`verify`] trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyOptions {
    /// The keys a real signature may come from; the receipt names one by `issuer.kid`.
    pub trusted_keys: Vec<TrustedKey>,
    /// Accept Runx's `sig:<digest>` pseudo-signature, which only shows the digest was copied.
    pub allow_local_development_signatures: bool,
}

impl VerifyOptions {
    pub fn trusting(keys: impl IntoIterator<Item = TrustedKey>) -> Self {
        Self {
            trusted_keys: keys.into_iter().collect(),
            allow_local_development_signatures: false,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Canonical form, digest and id.
// ---------------------------------------------------------------------------------------------

/// The `runx.receipt.c14n.v1` text of a value. Numbers are written as serde_json writes them,
/// which is what Runx's canonical writer calls (`write_json_fragment`): integers as integers,
/// every other number by the shortest round-trip form (`0.5`, `100.0`, `1e-7`, `1e+21`).
pub(crate) fn canonical_json(value: &Value) -> Result<String, ReceiptError> {
    let mut out = String::new();
    write_canonical(value, &mut out);
    Ok(out)
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        // serde_json's `Display` for a number is its serializer's output (itoa for integers,
        // ryu for floats); a `Value` never holds a non-finite float.
        Value::Number(number) => {
            let _ = write!(out, "{number}");
        }
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Sorting here rather than trusting the map's order keeps the bytes right even if
            // serde_json's `preserve_order` feature is switched on somewhere in the build.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}

/// A JSON string as serde_json writes it, which is what Runx's canonicalizer calls.
fn write_string(text: &str, out: &mut String) {
    out.push_str(&Value::String(text.to_owned()).to_string());
}

/// The receipt object without the named top-level fields.
fn without(receipt: &Value, fields: &[&str]) -> Result<Value, ReceiptError> {
    let object = receipt
        .as_object()
        .ok_or_else(|| malformed("receipt", "is not a JSON object"))?;
    Ok(Value::Object(
        object
            .iter()
            .filter(|(key, _)| !fields.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    ))
}

/// The signed body's digest: everything but `signature`, `digest` and `metadata`.
pub(crate) fn body_digest(receipt: &Value) -> Result<String, ReceiptError> {
    let body = without(receipt, &["signature", "digest", "metadata"])?;
    Ok(digest::sha256(canonical_json(&body)?.as_bytes()))
}

/// The content address: the body also without `id` and `lineage`.
pub(crate) fn content_address(receipt: &Value) -> Result<String, ReceiptError> {
    let identity = without(
        receipt,
        &["signature", "digest", "metadata", "id", "lineage"],
    )?;
    Ok(digest::sha256(canonical_json(&identity)?.as_bytes()))
}

/// The file a receipt is stored in: `sha256:<hex>` becomes `sha256-<hex>.json`, since a colon
/// is not allowed in a Windows file name. Other ids have no file name.
pub fn receipt_file_name(id: &str) -> Option<String> {
    let hex = id.strip_prefix(ID_PREFIX)?;
    is_sha256_hex(hex).then(|| format!("{FILE_PREFIX}{hex}{FILE_SUFFIX}"))
}

/// The receipt id a store file name stands for, the inverse of [`receipt_file_name`].
pub fn receipt_id_from_file_name(name: &str) -> Option<String> {
    let hex = name.strip_suffix(FILE_SUFFIX)?.strip_prefix(FILE_PREFIX)?;
    is_sha256_hex(hex).then(|| format!("{ID_PREFIX}{hex}"))
}

fn is_sha256_hex(hex: &str) -> bool {
    hex.len() == 64 && hex.bytes().all(|byte| byte.is_ascii_hexdigit())
}

// ---------------------------------------------------------------------------------------------
// Sealing and verifying.
// ---------------------------------------------------------------------------------------------

/// Builds the full `runx.receipt.v1` receipt for a draft, signed with `key`: the issuer is the
/// key's id and hash, the id and digest are computed as Runx computes them, and the signature
/// covers the digest. The result is verified against the key before it is returned, so a
/// draft that would not verify (an empty required string, a timestamp that is not RFC 3339
/// UTC, a reference type outside Runx's list) is refused here as [`ReceiptError::InvalidDraft`].
pub fn seal(draft: &ReceiptDraft, key: &SigningKey) -> Result<Value, ReceiptError> {
    let verifying = key.verifying_key();
    let issuer = Issuer {
        issuer_type: draft.issuer_type,
        kid: key_id(&verifying),
        public_key_sha256: public_key_sha256(&verifying),
    };
    let sealed = seal_with_issuer(draft, &issuer, key).and_then(|receipt| {
        verify(
            &receipt,
            &VerifyOptions::trusting([TrustedKey::local(verifying)]),
        )?;
        Ok(receipt)
    });
    sealed.map_err(|err| match err {
        ReceiptError::Malformed { field, problem } => ReceiptError::InvalidDraft { field, problem },
        other => other,
    })
}

fn seal_with_issuer(
    draft: &ReceiptDraft,
    issuer: &Issuer,
    key: &SigningKey,
) -> Result<Value, ReceiptError> {
    let mut body = Map::new();
    body.insert("schema".to_owned(), Value::from(RECEIPT_SCHEMA));
    body.insert(
        "created_at".to_owned(),
        Value::from(draft.created_at.as_str()),
    );
    body.insert(
        "canonicalization".to_owned(),
        Value::from(RECEIPT_CANONICALIZATION),
    );
    body.insert("issuer".to_owned(), to_value("issuer", issuer)?);
    body.insert(
        "idempotency".to_owned(),
        to_value("idempotency", &draft.idempotency)?,
    );
    body.insert("subject".to_owned(), to_value("subject", &draft.subject)?);
    body.insert(
        "authority".to_owned(),
        to_value("authority", &draft.authority)?,
    );
    body.insert("signals".to_owned(), to_value("signals", &draft.signals)?);
    // Runx always writes `decisions`; the Skill Lab records its reasoning in acts instead.
    body.insert("decisions".to_owned(), Value::Array(Vec::new()));
    body.insert("acts".to_owned(), to_value("acts", &draft.acts)?);
    body.insert("seal".to_owned(), to_value("seal", &draft.seal)?);
    if let Some(lineage) = &draft.lineage {
        body.insert("lineage".to_owned(), to_value("lineage", lineage)?);
    }
    if let Some(metadata) = &draft.metadata {
        body.insert("metadata".to_owned(), Value::Object(metadata.clone()));
    }
    let mut receipt = Value::Object(body);
    let id = content_address(&receipt)?;
    insert(&mut receipt, "id", Value::from(id));
    let digest = body_digest(&receipt)?;
    let signature = sign_digest(&digest, key);
    insert(&mut receipt, "digest", Value::from(digest));
    insert(
        &mut receipt,
        "signature",
        serde_json::json!({ "alg": SIGNATURE_ALGORITHM, "value": signature }),
    );
    Ok(receipt)
}

/// The signature value for a body digest: `base64:` + URL-safe, unpadded Ed25519 bytes.
fn sign_digest(digest: &str, key: &SigningKey) -> String {
    let signature: Signature = key.sign(digest.as_bytes());
    format!(
        "{SIGNATURE_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(signature.to_bytes())
    )
}

fn insert(receipt: &mut Value, field: &str, value: Value) {
    if let Value::Object(map) = receipt {
        map.insert(field.to_owned(), value);
    }
}

fn to_value<T: Serialize>(field: &str, value: &T) -> Result<Value, ReceiptError> {
    serde_json::to_value(value).map_err(|err| ReceiptError::InvalidDraft {
        field: field.to_owned(),
        problem: err.to_string(),
    })
}

/// A receipt whose shape, digest and id check out, before any signature is looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity {
    pub id: String,
    pub digest: String,
}

/// How a verified receipt's signature was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureCheck {
    /// A real Ed25519 signature by a trusted key.
    Ed25519,
    /// A `sig:<digest>` pseudo-signature, accepted because the caller allowed it.
    LocalDevelopment,
}

/// What [`verify`] established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    pub id: String,
    pub digest: String,
    /// `issuer.kid`.
    pub kid: String,
    pub signature: SignatureCheck,
    pub disposition: String,
    pub reason_code: String,
}

/// Checks a receipt's shape, then that its body still hashes to its digest, then that its id
/// is its content address. Needs no key, so a store can refuse an inconsistent receipt
/// before writing it; [`verify`] adds the signature.
pub fn check_integrity(receipt: &Value) -> Result<Integrity, ReceiptError> {
    check_shape(receipt)?;
    let recorded_digest = top_string(receipt, "digest");
    let computed_digest = body_digest(receipt)?;
    if recorded_digest != computed_digest {
        return Err(ReceiptError::DigestMismatch {
            recorded: recorded_digest.to_owned(),
            computed: computed_digest,
        });
    }
    let recorded_id = top_string(receipt, "id");
    let computed_id = content_address(receipt)?;
    if recorded_id != computed_id {
        return Err(ReceiptError::IdMismatch {
            recorded: recorded_id.to_owned(),
            computed: computed_id,
        });
    }
    Ok(Integrity {
        id: computed_id,
        digest: computed_digest,
    })
}

/// Verifies a receipt: [`check_integrity`], then the signature over the digest, by the trusted
/// key the issuer names (whose hash must be `issuer.public_key_sha256`), or a pseudo-signature
/// when the options allow it.
pub fn verify(receipt: &Value, options: &VerifyOptions) -> Result<VerifiedReceipt, ReceiptError> {
    let Integrity { id, digest } = check_integrity(receipt)?;
    let kid = receipt["issuer"]["kid"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let value = receipt["signature"]["value"].as_str().unwrap_or_default();
    let signature = if let Some(named) = value.strip_prefix(LOCAL_DEVELOPMENT_SIGNATURE_PREFIX) {
        if !options.allow_local_development_signatures {
            return Err(ReceiptError::LocalDevelopmentSignatureRefused);
        }
        if named != digest {
            return Err(ReceiptError::BadSignature {
                kid,
                reason: format!("the pseudo-signature names {named}, not the body digest {digest}"),
            });
        }
        SignatureCheck::LocalDevelopment
    } else if let Some(encoded) = value.strip_prefix(SIGNATURE_PREFIX) {
        let bytes = URL_SAFE_NO_PAD
            .decode(encoded)
            .or_else(|_| STANDARD.decode(encoded))
            .map_err(|_| malformed("signature.value", "is not valid base64 after `base64:`"))?;
        let signature = Signature::from_slice(&bytes)
            .map_err(|_| malformed("signature.value", "does not hold 64 signature bytes"))?;
        let key = trusted_key(receipt, &kid, options)?;
        key.verify_strict(digest.as_bytes(), &signature)
            .map_err(|_| ReceiptError::BadSignature {
                kid: kid.clone(),
                reason: "it was not made by that key over this receipt's digest".to_owned(),
            })?;
        SignatureCheck::Ed25519
    } else {
        return Err(malformed(
            "signature.value",
            "starts with neither `base64:` (a signature) nor `sig:` (a local-development pseudo-signature)",
        ));
    };
    Ok(VerifiedReceipt {
        id,
        digest,
        kid,
        signature,
        disposition: receipt["seal"]["disposition"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        reason_code: receipt["seal"]["reason_code"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    })
}

/// The trusted key the issuer names: found by key id as Runx does, then bound by hash.
fn trusted_key<'a>(
    receipt: &Value,
    kid: &str,
    options: &'a VerifyOptions,
) -> Result<&'a VerifyingKey, ReceiptError> {
    let recorded = receipt["issuer"]["public_key_sha256"]
        .as_str()
        .unwrap_or_default();
    let mut named = options
        .trusted_keys
        .iter()
        .filter(|key| key.kid == kid)
        .peekable();
    let Some(first) = named.peek().map(|key| public_key_sha256(&key.key)) else {
        return Err(ReceiptError::UnknownSigner {
            kid: kid.to_owned(),
            public_key_sha256: recorded.to_owned(),
        });
    };
    named
        .find(|key| public_key_sha256(&key.key) == recorded)
        .map(|key| &key.key)
        .ok_or_else(|| ReceiptError::KeyHashMismatch {
            kid: kid.to_owned(),
            recorded: recorded.to_owned(),
            expected: first,
        })
}

fn top_string<'a>(receipt: &'a Value, field: &str) -> &'a str {
    receipt[field].as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Shape: the parts of `schemas/receipt.schema.json` a verifier leans on.
// ---------------------------------------------------------------------------------------------
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::draft::{
        Act, ActForm, Closure, InputContext, Intent, Lineage, REFERENCE_TYPES, SuccessCriterion,
    };
    use super::*;
    use crate::runx::stable_json;

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    fn draft() -> ReceiptDraft {
        let closed_at = "2026-05-22T10:00:00Z";
        let enforcement = Enforcement::for_profile(
            "mindrune.lab.enforcement.v1",
            Vec::new(),
            Vec::new(),
            Vec::new(),
        )
        .unwrap();
        let mut draft = ReceiptDraft::new(
            "2026-05-22T09:59:58Z",
            Idempotency::from_inputs(
                &json!({"runner": "build", "objective": "note"}),
                &json!({"trigger": "cli"}),
                &json!({"base_digest": "sha256:00"}),
            )
            .unwrap(),
            Subject {
                kind: "graph".to_owned(),
                reference: Reference::new(ReferenceType::Harness, "runx:harness:skill-lab-build"),
                input_context: Some(InputContext {
                    source: "runx:signal:cli".to_owned(),
                    preview: "build a decision-note skill".to_owned(),
                    value_hash:
                        "sha256:1111111111111111111111111111111111111111111111111111111111111111"
                            .to_owned(),
                }),
                commitments: vec![
                    Commitment::stable_json(
                        CommitmentScope::Output,
                        &json!({"verdict": "unchanged"}),
                    )
                    .unwrap(),
                ],
            },
            Authority::new(
                Reference::new(ReferenceType::Principal, "runx:principal:local_operator"),
                enforcement,
            ),
            Seal::terminal(
                Disposition::Closed,
                "graph_closed",
                "skill-lab build sealed",
                closed_at,
                vec![
                    CriterionBinding::new("apply_verified", CriterionStatus::Verified)
                        .with_summary("the applied package digest equals the candidate digest"),
                ],
            ),
        );
        draft.signals = vec![Reference::new(ReferenceType::Signal, "runx:signal:cli")];
        draft.acts = vec![Act {
            id: "act_apply".to_owned(),
            form: ActForm::Revision,
            intent: Intent {
                purpose: "Commit the validated bundle".to_owned(),
                legitimacy: "The operator invoked the build runner".to_owned(),
                success_criteria: vec![SuccessCriterion {
                    criterion_id: "apply_verified".to_owned(),
                    statement: "The package equals the replayed candidate".to_owned(),
                    required: true,
                }],
                constraints: vec!["no writes outside target_dir".to_owned()],
                derived_from: Vec::new(),
            },
            summary: "applied 2 writes".to_owned(),
            criterion_bindings: vec![CriterionBinding::new(
                "apply_verified",
                CriterionStatus::Verified,
            )],
            by: None,
            source_refs: Vec::new(),
            target_refs: vec![Reference::new(
                ReferenceType::Artifact,
                "runx:artifact:skills/decision-note",
            )],
            artifact_refs: Vec::new(),
            context_ref: None,
            closure: Closure {
                disposition: Disposition::Closed,
                reason_code: "validated_and_applied".to_owned(),
                summary: "applied".to_owned(),
                closed_at: closed_at.to_owned(),
            },
        }];
        draft.lineage = Some(Lineage {
            children: vec![
                Reference::new(ReferenceType::Receipt, "runx:receipt:sha256:2222222222222222222222222222222222222222222222222222222222222222")
                    .with_locator("sha256:3333333333333333333333333333333333333333333333333333333333333333"),
            ],
            ..Lineage::default()
        });
        let mut metadata = Map::new();
        metadata.insert("skill_name".to_owned(), json!("skill-lab"));
        draft.metadata = Some(metadata);
        draft
    }

    fn trusting(key: &SigningKey) -> VerifyOptions {
        VerifyOptions::trusting([TrustedKey::local(key.verifying_key())])
    }

    /// Every path to a leaf of the signed body, so a test can change each one in turn.
    fn leaf_paths(value: &Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (key, child) in map {
                    path.push(key.clone());
                    leaf_paths(child, path, out);
                    path.pop();
                }
            }
            Value::Array(items) if !items.is_empty() => {
                for (index, child) in items.iter().enumerate() {
                    path.push(index.to_string());
                    leaf_paths(child, path, out);
                    path.pop();
                }
            }
            _ => out.push(path.clone()),
        }
    }

    fn leaf_mut<'a>(value: &'a mut Value, path: &[String]) -> &'a mut Value {
        path.iter().fold(value, |value, step| match value {
            Value::Array(items) => &mut items[step.parse::<usize>().unwrap()],
            other => &mut other[step.as_str()],
        })
    }

    #[test]
    fn seal_then_verify_round_trips() {
        let key = key(7);
        let receipt = seal(&draft(), &key).unwrap();
        let verified = verify(&receipt, &trusting(&key)).unwrap();
        assert_eq!(verified.id, receipt["id"].as_str().unwrap());
        assert_eq!(verified.digest, receipt["digest"].as_str().unwrap());
        assert_eq!(verified.signature, SignatureCheck::Ed25519);
        assert_eq!(verified.disposition, "closed");
        assert_eq!(verified.reason_code, "graph_closed");
        assert_eq!(verified.kid, key_id(&key.verifying_key()));
        assert!(verified.kid.starts_with(KEY_ID_PREFIX));
        assert_eq!(
            receipt["issuer"],
            json!({
                "type": "local",
                "kid": verified.kid,
                "public_key_sha256": public_key_sha256(&key.verifying_key()),
            })
        );
        let signature = receipt["signature"]["value"].as_str().unwrap();
        let encoded = signature.strip_prefix("base64:").unwrap();
        assert_eq!(
            encoded.len(),
            86,
            "64 bytes are 86 unpadded base64 characters"
        );
        assert!(
            !encoded.contains(['+', '/', '=']),
            "URL-safe and unpadded: {encoded}"
        );
        // Sealing is deterministic: Ed25519 signatures are, and nothing else varies.
        assert_eq!(seal(&draft(), &key).unwrap(), receipt);
    }

    #[test]
    fn sealed_receipt_has_runx_shape() {
        let receipt = seal(&draft(), &key(7)).unwrap();
        assert_eq!(receipt["schema"], "runx.receipt.v1");
        assert_eq!(receipt["canonicalization"], "runx.receipt.c14n.v1");
        assert_eq!(receipt["signature"]["alg"], "Ed25519");
        assert_eq!(receipt["decisions"], json!([]));
        assert_eq!(
            receipt["authority"]["attenuation"],
            json!({"parent_authority_ref": null, "subset_proof": null}),
            "Runx writes both attenuation fields even when empty"
        );
        assert!(receipt["authority"].get("mandate_ref").is_none());
        assert!(receipt["acts"][0].get("by").is_none());
        assert_eq!(receipt["lineage"]["sync"], json!([]));
        assert!(receipt["lineage"].get("parent").is_none());
        assert_eq!(
            receipt["seal"]["last_observed_at"],
            receipt["seal"]["closed_at"]
        );
        assert_eq!(
            receipt["subject"]["commitments"][0]["canonicalization"],
            "runx.stable-json.v1"
        );
    }

    #[test]
    fn flipping_any_body_field_breaks_the_digest() {
        let key = key(7);
        let receipt = seal(&draft(), &key).unwrap();
        let body = without(&receipt, &["signature", "digest", "metadata"]).unwrap();
        let mut paths = Vec::new();
        leaf_paths(&body, &mut Vec::new(), &mut paths);
        assert!(
            paths.len() > 40,
            "the draft should cover most of the shape: {}",
            paths.len()
        );
        let mut digest_mismatches = 0;
        for path in &paths {
            let mut tampered = receipt.clone();
            let leaf = leaf_mut(&mut tampered, path);
            *leaf = match leaf {
                Value::String(text) => Value::String(format!("{text}x")),
                Value::Bool(flag) => Value::Bool(!*flag),
                Value::Null => json!({"type": "principal", "uri": "runx:principal:intruder"}),
                Value::Array(_) => json!([{"type": "signal", "uri": "runx:signal:extra"}]),
                Value::Object(_) => json!({"type": "signal", "uri": "runx:signal:extra"}),
                Value::Number(_) => json!(1),
            };
            match verify(&tampered, &trusting(&key)) {
                Err(ReceiptError::DigestMismatch { .. }) => digest_mismatches += 1,
                // Changing a constant or an enumerated value makes the receipt malformed
                // first, which must name the field that was changed.
                Err(ReceiptError::Malformed { field, .. }) => {
                    let dotted = path.join(".");
                    let bracketed = field.replace('[', ".").replace(']', "");
                    assert_eq!(bracketed, dotted, "malformed error names the changed field");
                }
                other => panic!("changing {path:?} was not caught: {other:?}"),
            }
        }
        assert!(
            digest_mismatches * 2 > paths.len(),
            "{digest_mismatches} of {}",
            paths.len()
        );
    }

    #[test]
    fn flipping_metadata_keeps_the_receipt_valid() {
        let key = key(7);
        let mut receipt = seal(&draft(), &key).unwrap();
        receipt["metadata"]["skill_name"] = json!("renamed read aid");
        receipt["metadata"]["float_is_fine_here"] = json!(0.5);
        assert!(verify(&receipt, &trusting(&key)).is_ok());
        receipt.as_object_mut().unwrap().remove("metadata");
        assert!(verify(&receipt, &trusting(&key)).is_ok());
    }

    #[test]
    fn receipt_from_another_key_fails() {
        let ours = key(7);
        let theirs = key(9);
        let receipt = seal(&draft(), &theirs).unwrap();
        assert_eq!(
            verify(&receipt, &trusting(&ours)),
            Err(ReceiptError::UnknownSigner {
                kid: key_id(&theirs.verifying_key()),
                public_key_sha256: public_key_sha256(&theirs.verifying_key()),
            })
        );
        // A receipt that claims our issuer but was signed by another key.
        let issuer = Issuer {
            issuer_type: IssuerType::Local,
            kid: key_id(&ours.verifying_key()),
            public_key_sha256: public_key_sha256(&ours.verifying_key()),
        };
        let forged = seal_with_issuer(&draft(), &issuer, &theirs).unwrap();
        assert!(matches!(
            verify(&forged, &trusting(&ours)),
            Err(ReceiptError::BadSignature { .. })
        ));
        // A trusted key under the issuer's id that is not the key the issuer names.
        let options = VerifyOptions::trusting([TrustedKey::new(
            key_id(&theirs.verifying_key()),
            ours.verifying_key(),
        )]);
        assert!(matches!(
            verify(&receipt, &options),
            Err(ReceiptError::KeyHashMismatch { .. })
        ));
    }

    #[test]
    fn id_excludes_id_and_lineage_but_the_digest_commits_both() {
        let key = key(7);
        let first = seal(&draft(), &key).unwrap();
        let mut rewired = draft();
        rewired.lineage = Some(Lineage {
            parent: Some(Reference::new(
                ReferenceType::Receipt,
                "runx:receipt:parent",
            )),
            ..Lineage::default()
        });
        let second = seal(&rewired, &key).unwrap();
        assert_eq!(first["id"], second["id"], "lineage is outside the id");
        assert_ne!(
            first["digest"], second["digest"],
            "lineage is inside the digest"
        );
        let mut no_lineage = draft();
        no_lineage.lineage = None;
        assert_eq!(seal(&no_lineage, &key).unwrap()["id"], first["id"]);

        let mut renamed = first.clone();
        renamed["id"] = json!("sha256:anything");
        assert_eq!(
            content_address(&renamed).unwrap(),
            first["id"].as_str().unwrap()
        );

        let mut changed = draft();
        changed.seal.summary = "another summary".to_owned();
        assert_ne!(seal(&changed, &key).unwrap()["id"], first["id"]);
    }

    #[test]
    fn wrong_id_with_matching_digest_is_an_id_mismatch() {
        let key = key(7);
        let mut receipt = seal(&draft(), &key).unwrap();
        let wrong = "sha256:4444444444444444444444444444444444444444444444444444444444444444";
        receipt["id"] = json!(wrong);
        let digest = body_digest(&receipt).unwrap();
        receipt["signature"]["value"] = json!(sign_digest(&digest, &key));
        receipt["digest"] = json!(digest);
        match verify(&receipt, &trusting(&key)) {
            Err(ReceiptError::IdMismatch { recorded, .. }) => assert_eq!(recorded, wrong),
            other => panic!("expected an id mismatch, got {other:?}"),
        }
    }

    #[test]
    fn tampered_signature_is_a_bad_signature() {
        let key = key(7);
        let mut receipt = seal(&draft(), &key).unwrap();
        let other_digest =
            "sha256:5555555555555555555555555555555555555555555555555555555555555555";
        receipt["signature"]["value"] = json!(sign_digest(other_digest, &key));
        assert!(matches!(
            verify(&receipt, &trusting(&key)),
            Err(ReceiptError::BadSignature { .. })
        ));
        receipt["signature"]["value"] = json!("base64:AAAA");
        assert!(matches!(
            verify(&receipt, &trusting(&key)),
            Err(ReceiptError::Malformed { field, .. }) if field == "signature.value"
        ));
    }

    #[test]
    fn standard_base64_signatures_are_accepted_as_runx_does() {
        let key = key(7);
        let mut receipt = seal(&draft(), &key).unwrap();
        let digest = receipt["digest"].as_str().unwrap().to_owned();
        let signature: Signature = key.sign(digest.as_bytes());
        receipt["signature"]["value"] =
            json!(format!("base64:{}", STANDARD.encode(signature.to_bytes())));
        assert!(verify(&receipt, &trusting(&key)).is_ok());
    }

    #[test]
    fn malformed_receipts_name_the_field() {
        let key = key(7);
        let receipt = seal(&draft(), &key).unwrap();
        // Each case breaks one field of a good receipt.
        type Case = (&'static str, fn(&mut Value));
        let cases: [Case; 6] = [
            ("seal", |r: &mut Value| {
                r.as_object_mut().unwrap().remove("seal");
            }),
            ("issuer.kid", |r: &mut Value| r["issuer"]["kid"] = json!("")),
            ("created_at", |r: &mut Value| {
                r["created_at"] = json!("2026-05-22 10:00")
            }),
            ("surprise", |r: &mut Value| r["surprise"] = json!(true)),
            ("acts[0].closure.disposition", |r: &mut Value| {
                r["acts"][0]["closure"]["disposition"] = json!("done")
            }),
            ("signature.alg", |r: &mut Value| {
                r["signature"]["alg"] = json!("RS256")
            }),
        ];
        for (field, change) in cases {
            let mut broken = receipt.clone();
            change(&mut broken);
            match verify(&broken, &trusting(&key)) {
                Err(ReceiptError::Malformed { field: named, .. }) => assert_eq!(named, field),
                other => panic!("{field}: expected malformed, got {other:?}"),
            }
        }
        assert!(matches!(
            verify(&json!([]), &trusting(&key)),
            Err(ReceiptError::Malformed { field, .. }) if field == "receipt"
        ));
    }

    #[test]
    fn invalid_drafts_are_refused_at_seal() {
        let key = key(7);
        let mut bad_time = draft();
        bad_time.seal.closed_at = "2026-05-22T10:00:00+02:00".to_owned();
        assert!(matches!(
            seal(&bad_time, &key),
            Err(ReceiptError::InvalidDraft { field, .. }) if field == "seal.closed_at"
        ));
        let mut empty_reason = draft();
        empty_reason.seal.reason_code.clear();
        assert!(matches!(
            seal(&empty_reason, &key),
            Err(ReceiptError::InvalidDraft { field, .. }) if field == "seal.reason_code"
        ));
    }

    /// Runx writes a receipt's numbers through serde_json (`write_json_fragment`), so a
    /// fractional or exponent number keeps serde's form, not stable JSON's.
    #[test]
    fn fractional_numbers_canonicalise_as_serde_writes_them() {
        let value: Value = serde_json::from_str(
            r#"{"a": 0.5, "b": 100.0, "c": 1e-7, "d": 1e21, "e": -2.25e-10, "f": 7}"#,
        )
        .unwrap();
        assert_eq!(
            canonical_json(&value).unwrap(),
            r#"{"a":0.5,"b":100.0,"c":1e-7,"d":1e+21,"e":-2.25e-10,"f":7}"#
        );
        assert_eq!(
            canonical_json(&value).unwrap(),
            serde_json::to_string(&value).unwrap()
        );

        let key = key(5);
        let mut fractional = draft();
        fractional.authority.terms = vec![json!({"limit": 0.5, "ceiling": 1e21})];
        let receipt = seal(&fractional, &key).unwrap();
        assert_eq!(receipt["authority"]["terms"][0]["limit"], json!(0.5));
        assert_eq!(
            verify(&receipt, &trusting(&key)).unwrap().kid,
            key_id(&key.verifying_key())
        );
    }

    #[test]
    fn a_reference_type_outside_runx_list_is_refused_with_runx_words() {
        let key = key(6);
        let mut receipt = seal(&draft(), &key).unwrap();
        receipt["authority"]["actor_ref"]["type"] = json!("actor");
        let err = check_integrity(&receipt).unwrap_err().to_string();
        assert!(
            err.contains("authority.actor_ref.type")
                && err.contains(
                    "receipt_parse_error: unknown variant `actor`, expected one of `github_issue`"
                ),
            "{err}"
        );
        for (kind, name) in ReferenceType::ALL.into_iter().zip(REFERENCE_TYPES) {
            assert_eq!(kind.as_str(), name);
            let value = serde_json::to_value(Reference::new(kind, "runx:x")).unwrap();
            assert_eq!(value["type"], json!(name));
        }
    }

    #[test]
    fn local_development_signatures_need_permission() {
        let key = key(7);
        let mut receipt = seal(&draft(), &key).unwrap();
        let digest = receipt["digest"].as_str().unwrap().to_owned();
        receipt["signature"]["value"] = json!(format!("sig:{digest}"));
        assert_eq!(
            verify(&receipt, &trusting(&key)),
            Err(ReceiptError::LocalDevelopmentSignatureRefused)
        );
        let allowed = VerifyOptions {
            allow_local_development_signatures: true,
            ..VerifyOptions::default()
        };
        assert_eq!(
            verify(&receipt, &allowed).unwrap().signature,
            SignatureCheck::LocalDevelopment
        );
        receipt["signature"]["value"] = json!("sig:sha256:pending");
        assert!(matches!(
            verify(&receipt, &allowed),
            Err(ReceiptError::BadSignature { .. })
        ));
    }

    /// Runx's own `fixtures/contracts/harness-spine/receipt-success.json`, as its
    /// `runx-receipt-c14n-v1.oracles.json` writes it, with the digests that oracle pins.
    #[test]
    fn reproduces_runx_oracle_receipt() {
        let text = include_str!("../../../tests/data/runx-receipt-success.json");
        let receipt: Value = serde_json::from_str(text).unwrap();
        assert_eq!(canonical_json(&receipt).unwrap(), text.trim_end());
        assert_eq!(
            digest::sha256(canonical_json(&receipt).unwrap().as_bytes()),
            "sha256:c7f2ec7047aaf087e4d2344c475ed0d47f38e8d9cd49efd816ef6413230c4a72"
        );
        assert_eq!(
            body_digest(&receipt).unwrap(),
            "sha256:9a5e2c1e399216cd9a6f5bd9e2f33997a2578e2a51507d9d63b53e66903f5c74"
        );
        assert_eq!(
            content_address(&receipt).unwrap(),
            "sha256:74d7e59802c366410de0acbc29460494ffe6d617563ea8135688968401b909e1"
        );
        assert_eq!(receipt["id"], json!(content_address(&receipt).unwrap()));
        // Its signature is the local-development `sig:<digest>`.
        assert_eq!(
            verify(&receipt, &VerifyOptions::default()),
            Err(ReceiptError::LocalDevelopmentSignatureRefused)
        );
        let allowed = VerifyOptions {
            allow_local_development_signatures: true,
            ..VerifyOptions::default()
        };
        let verified = verify(&receipt, &allowed).unwrap();
        assert_eq!(verified.kid, "fixture-key");
        assert_eq!(verified.disposition, "closed");
    }

    #[test]
    fn canonical_json_matches_stable_json_for_receipt_values() {
        let value = json!({"b": [1, -2, true, null], "a": "line\nbreak \u{1f} \u{2028} é", "c": {"z": 18446744073709551615u64}});
        assert_eq!(
            canonical_json(&value).unwrap(),
            "{\"a\":\"line\\nbreak \\u001f \u{2028} é\",\"b\":[1,-2,true,null],\"c\":{\"z\":18446744073709551615}}"
        );
        let small = json!({"b": [1, -2, true, null], "a": "line\nbreak \u{1f} é"});
        assert_eq!(
            canonical_json(&small).unwrap(),
            stable_json::to_stable_json(&small).unwrap()
        );
    }

    #[test]
    fn file_names_map_sha256_ids() {
        let hex = "74d7e59802c366410de0acbc29460494ffe6d617563ea8135688968401b909e1";
        let id = format!("sha256:{hex}");
        let name = receipt_file_name(&id).unwrap();
        assert_eq!(name, format!("sha256-{hex}.json"));
        assert_eq!(
            receipt_id_from_file_name(&name).as_deref(),
            Some(id.as_str())
        );
        assert_eq!(receipt_file_name("sha256:abc"), None);
        assert_eq!(receipt_file_name("hrn_rcpt_graph_step"), None);
        assert_eq!(
            receipt_file_name(&format!("sha256:{}", "g".repeat(64))),
            None
        );
        assert_eq!(receipt_id_from_file_name("index.json"), None);
        assert_eq!(
            receipt_id_from_file_name(&format!("sha256-{hex}.json.tmp")),
            None
        );
    }
}
