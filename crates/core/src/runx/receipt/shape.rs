//! Shape: the parts of `schemas/receipt.schema.json` a verifier leans on, checked field by
//! field with the path of the field that is wrong.

use serde_json::{Map, Value};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::draft::REFERENCE_TYPES;
use super::{
    ACT_FORMS, COMMITMENT_SCOPES, CRITERION_STATUSES, DISPOSITIONS, ISSUER_TYPES,
    RECEIPT_CANONICALIZATION, RECEIPT_SCHEMA, ReceiptError, SIGNATURE_ALGORITHM, TOP_LEVEL_FIELDS,
    malformed,
};

pub(super) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

pub(super) fn object<'a>(
    value: &'a Value,
    path: &str,
) -> Result<&'a Map<String, Value>, ReceiptError> {
    value
        .as_object()
        .ok_or_else(|| malformed(path, "must be a JSON object"))
}

pub(super) fn required<'a>(
    map: &'a Map<String, Value>,
    parent: &str,
    name: &str,
) -> Result<&'a Value, ReceiptError> {
    map.get(name)
        .ok_or_else(|| malformed(join(parent, name), "is missing"))
}

pub(super) fn string<'a>(
    map: &'a Map<String, Value>,
    parent: &str,
    name: &str,
) -> Result<&'a str, ReceiptError> {
    required(map, parent, name)?
        .as_str()
        .ok_or_else(|| malformed(join(parent, name), "must be a string"))
}

pub(super) fn non_empty<'a>(
    map: &'a Map<String, Value>,
    parent: &str,
    name: &str,
) -> Result<&'a str, ReceiptError> {
    let text = string(map, parent, name)?;
    if text.is_empty() {
        return Err(malformed(join(parent, name), "must not be empty"));
    }
    Ok(text)
}

pub(super) fn constant(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    expected: &str,
) -> Result<(), ReceiptError> {
    let text = string(map, parent, name)?;
    if text != expected {
        return Err(malformed(
            join(parent, name),
            format!("must be {expected:?}, not {text:?}"),
        ));
    }
    Ok(())
}

pub(super) fn one_of(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    allowed: &[&str],
) -> Result<(), ReceiptError> {
    let text = string(map, parent, name)?;
    if !allowed.contains(&text) {
        return Err(malformed(
            join(parent, name),
            format!("is {text:?}, not one of {}", allowed.join(", ")),
        ));
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the pattern Runx's schema gives every timestamp, and a
/// real date and time.
pub(super) fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|part| part.iter().all(u8::is_ascii_digit))
    };
    let shape = bytes.len() >= 20
        && digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes[10] == b'T'
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16)
        && bytes[16] == b':'
        && digits(17..19)
        && match &bytes[19..] {
            [b'Z'] => true,
            [b'.', fraction @ .., b'Z'] => {
                !fraction.is_empty() && fraction.iter().all(u8::is_ascii_digit)
            }
            _ => false,
        };
    shape && OffsetDateTime::parse(text, &Rfc3339).is_ok()
}

pub(super) fn timestamp(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
) -> Result<(), ReceiptError> {
    let text = string(map, parent, name)?;
    if !is_timestamp(text) {
        return Err(malformed(
            join(parent, name),
            format!("is {text:?}, not an RFC 3339 UTC timestamp such as 2026-05-22T00:00:00Z"),
        ));
    }
    Ok(())
}

/// An optional array: absent is fine (Runx defaults it), present must be an array whose items
/// each pass `item`.
pub(super) fn array_of(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    item: impl Fn(&Value, &str) -> Result<(), ReceiptError>,
) -> Result<(), ReceiptError> {
    let Some(value) = map.get(name) else {
        return Ok(());
    };
    let path = join(parent, name);
    let items = value
        .as_array()
        .ok_or_else(|| malformed(&path, "must be an array"))?;
    for (index, value) in items.iter().enumerate() {
        item(value, &format!("{path}[{index}]"))?;
    }
    Ok(())
}

pub(super) fn optional(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    check: impl Fn(&Value, &str) -> Result<(), ReceiptError>,
) -> Result<(), ReceiptError> {
    match map.get(name) {
        None | Some(Value::Null) => Ok(()),
        Some(value) => check(value, &join(parent, name)),
    }
}

pub(super) fn reference(value: &Value, path: &str) -> Result<(), ReceiptError> {
    let map = object(value, path)?;
    let kind = string(map, path, "type")?;
    if !REFERENCE_TYPES.contains(&kind) {
        // Runx's own words for it (serde's unknown-variant refusal under `receipt_parse_error`),
        // so a receipt `runx verify` would refuse is refused here the same way.
        return Err(malformed(
            join(path, "type"),
            format!(
                "is {kind:?}: receipt_parse_error: unknown variant `{kind}`, expected one of {}",
                REFERENCE_TYPES
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    non_empty(map, path, "uri")?;
    if map.contains_key("observed_at") {
        timestamp(map, path, "observed_at")?;
    }
    Ok(())
}

pub(super) fn binding(value: &Value, path: &str) -> Result<(), ReceiptError> {
    let map = object(value, path)?;
    string(map, path, "criterion_id")?;
    one_of(map, path, "status", &CRITERION_STATUSES)?;
    array_of(map, path, "evidence_refs", reference)?;
    array_of(map, path, "verification_refs", reference)
}

pub(super) fn closure(value: &Value, path: &str) -> Result<(), ReceiptError> {
    let map = object(value, path)?;
    one_of(map, path, "disposition", &DISPOSITIONS)?;
    non_empty(map, path, "reason_code")?;
    non_empty(map, path, "summary")?;
    timestamp(map, path, "closed_at")
}

pub(super) fn act(value: &Value, path: &str) -> Result<(), ReceiptError> {
    let map = object(value, path)?;
    non_empty(map, path, "id")?;
    one_of(map, path, "form", &ACT_FORMS)?;
    let intent_path = join(path, "intent");
    let intent = object(required(map, path, "intent")?, &intent_path)?;
    string(intent, &intent_path, "purpose")?;
    string(intent, &intent_path, "legitimacy")?;
    array_of(intent, &intent_path, "derived_from", reference)?;
    non_empty(map, path, "summary")?;
    array_of(map, path, "criterion_bindings", binding)?;
    for refs in ["source_refs", "target_refs", "artifact_refs"] {
        array_of(map, path, refs, reference)?;
    }
    optional(map, path, "context_ref", reference)?;
    closure(required(map, path, "closure")?, &join(path, "closure"))
}

pub(super) fn commitment(value: &Value, path: &str) -> Result<(), ReceiptError> {
    let map = object(value, path)?;
    one_of(map, path, "scope", &COMMITMENT_SCOPES)?;
    constant(map, path, "algorithm", "sha256")?;
    non_empty(map, path, "value")?;
    non_empty(map, path, "canonicalization")?;
    Ok(())
}

pub(super) fn check_shape(receipt: &Value) -> Result<(), ReceiptError> {
    let map = object(receipt, "receipt")?;
    if let Some(unknown) = map
        .keys()
        .find(|key| !TOP_LEVEL_FIELDS.contains(&key.as_str()))
    {
        return Err(malformed(
            unknown.as_str(),
            "is not a runx.receipt.v1 field",
        ));
    }
    constant(map, "", "schema", RECEIPT_SCHEMA)?;
    non_empty(map, "", "id")?;
    timestamp(map, "", "created_at")?;
    constant(map, "", "canonicalization", RECEIPT_CANONICALIZATION)?;
    non_empty(map, "", "digest")?;

    let issuer = object(required(map, "", "issuer")?, "issuer")?;
    one_of(issuer, "issuer", "type", &ISSUER_TYPES)?;
    non_empty(issuer, "issuer", "kid")?;
    non_empty(issuer, "issuer", "public_key_sha256")?;

    let signature = object(required(map, "", "signature")?, "signature")?;
    constant(signature, "signature", "alg", SIGNATURE_ALGORITHM)?;
    non_empty(signature, "signature", "value")?;

    let idempotency = object(required(map, "", "idempotency")?, "idempotency")?;
    for key in ["intent_key", "trigger_fingerprint", "content_hash"] {
        non_empty(idempotency, "idempotency", key)?;
    }

    let subject = object(required(map, "", "subject")?, "subject")?;
    non_empty(subject, "subject", "kind")?;
    reference(required(subject, "subject", "ref")?, "subject.ref")?;
    optional(subject, "subject", "input_context", |value, path| {
        let context = object(value, path)?;
        non_empty(context, path, "source")?;
        string(context, path, "preview")?;
        non_empty(context, path, "value_hash")?;
        Ok(())
    })?;
    array_of(subject, "subject", "commitments", commitment)?;

    let authority = object(required(map, "", "authority")?, "authority")?;
    reference(
        required(authority, "authority", "actor_ref")?,
        "authority.actor_ref",
    )?;
    for refs in ["grant_refs", "scope_refs", "authority_proof_refs"] {
        array_of(authority, "authority", refs, reference)?;
    }
    object(
        required(authority, "authority", "attenuation")?,
        "authority.attenuation",
    )?;
    optional(authority, "authority", "mandate_ref", reference)?;
    let enforcement = object(
        required(authority, "authority", "enforcement")?,
        "authority.enforcement",
    )?;
    non_empty(enforcement, "authority.enforcement", "profile_hash")?;

    array_of(map, "", "signals", reference)?;
    array_of(map, "", "decisions", |value, path| {
        object(value, path).map(|_| ())
    })?;
    array_of(map, "", "acts", act)?;

    let seal = object(required(map, "", "seal")?, "seal")?;
    one_of(seal, "seal", "disposition", &DISPOSITIONS)?;
    non_empty(seal, "seal", "reason_code")?;
    non_empty(seal, "seal", "summary")?;
    timestamp(seal, "seal", "closed_at")?;
    timestamp(seal, "seal", "last_observed_at")?;
    array_of(seal, "seal", "criteria", binding)?;

    optional(map, "", "lineage", |value, path| {
        let lineage = object(value, path)?;
        for single in ["parent", "previous", "resume_ref"] {
            optional(lineage, path, single, reference)?;
        }
        array_of(lineage, path, "children", reference)
    })?;
    optional(map, "", "metadata", |value, path| {
        object(value, path).map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_follow_runx_pattern() {
        assert!(is_timestamp("2026-05-22T00:00:00Z"));
        assert!(is_timestamp("2026-05-22T00:00:00.123Z"));
        assert!(!is_timestamp("2026-05-22T00:00:00.Z"));
        assert!(!is_timestamp("2026-05-22T00:00:00+00:00"));
        assert!(!is_timestamp("2026-13-22T00:00:00Z"));
        assert!(!is_timestamp("2026-05-22"));
    }
}
