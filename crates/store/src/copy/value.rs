//! Values as both databases read them, and the digest over a table's rows.

use std::cmp::Ordering;

use postgres::types::ToSql;
use rusqlite::types::ValueRef;
use sha2::{Digest as _, Sha256};

use super::tables::{Flag, Int, Kind, Real, Text};

/// One value, normalised: flags are `Int` 0/1, and a value reads the same from either side.
#[derive(Debug, Clone)]
pub(super) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    pub(super) fn flag(on: bool) -> Value {
        Value::Int(i64::from(on))
    }

    /// The same value, reals compared by their bits (as the digest sees them).
    pub(super) fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
            (Value::Text(a), Value::Text(b)) => a == b,
            _ => false,
        }
    }

    /// Key order: numbers by value, text by its bytes (as both sides sort them).
    pub(super) fn compare(&self, other: &Value) -> Ordering {
        fn rank(value: &Value) -> u8 {
            match value {
                Value::Null => 0,
                Value::Int(_) => 1,
                Value::Real(_) => 2,
                Value::Text(_) => 3,
            }
        }
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Real(a), Value::Real(b)) => a.total_cmp(b),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => rank(self).cmp(&rank(other)),
        }
    }

    /// The value as a statement parameter of its column's type.
    pub(super) fn param(&self, kind: Kind) -> &(dyn ToSql + Sync) {
        match (self, kind) {
            (Value::Null, Int) => &None::<i64>,
            (Value::Null, Flag) => &None::<bool>,
            (Value::Null, Real) => &None::<f64>,
            (Value::Null, Text) => &None::<String>,
            (Value::Int(v), Flag) => {
                if *v != 0 {
                    &true
                } else {
                    &false
                }
            }
            (Value::Int(v), _) => v,
            (Value::Real(v), _) => v,
            (Value::Text(v), _) => v,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Real(v) => write!(f, "{v}"),
            Value::Text(v) => write!(f, "{v:?}"),
        }
    }
}

/// A SQLite value as the column's kind keeps it; `Err` says what is wrong with it.
pub(super) fn from_sqlite(kind: Kind, value: ValueRef<'_>) -> std::result::Result<Value, String> {
    match (kind, value) {
        (_, ValueRef::Null) => Ok(Value::Null),
        (Int, ValueRef::Integer(v)) => Ok(Value::Int(v)),
        (Flag, ValueRef::Integer(v @ (0 | 1))) => Ok(Value::Int(v)),
        (Flag, ValueRef::Integer(v)) => Err(format!("holds {v} where a flag (0 or 1) belongs")),
        (Real, ValueRef::Real(v)) => Ok(Value::Real(v)),
        // SQLite may hand back a whole number kept in a REAL column as an integer.
        (Real, ValueRef::Integer(v)) => Ok(Value::Real(v as f64)),
        (Text, ValueRef::Text(bytes)) => match std::str::from_utf8(bytes) {
            Ok(text) if text.contains('\0') => {
                Err("holds text with a NUL character, which PostgreSQL cannot store".into())
            }
            Ok(text) => Ok(Value::Text(text.to_string())),
            Err(_) => Err("holds text that is not UTF-8, which PostgreSQL cannot store".into()),
        },
        (_, other) => Err(format!(
            "holds {} where {} belongs",
            sqlite_type(other),
            match kind {
                Int => "an integer",
                Flag => "a flag (0 or 1)",
                Real => "a real number",
                Text => "text",
            }
        )),
    }
}

pub(super) fn sqlite_type(value: ValueRef<'_>) -> &'static str {
    match value {
        ValueRef::Null => "NULL",
        ValueRef::Integer(_) => "an integer",
        ValueRef::Real(_) => "a real number",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    }
}

/// A PostgreSQL value as the column's kind keeps it.
pub(super) fn from_postgres(
    kind: Kind,
    row: &postgres::Row,
    at: usize,
) -> std::result::Result<Value, postgres::Error> {
    Ok(match kind {
        Int => row.try_get::<_, Option<i64>>(at)?.map(Value::Int),
        Flag => row.try_get::<_, Option<bool>>(at)?.map(Value::flag),
        Real => row.try_get::<_, Option<f64>>(at)?.map(Value::Real),
        Text => row.try_get::<_, Option<String>>(at)?.map(Value::Text),
    }
    .unwrap_or(Value::Null))
}

/// A table's row count and SHA-256 digest over its rows in key order.
///
/// Each value is fed as a tag byte and its bytes: NULL `0`; an integer (or flag, as 0/1) `1`
/// and its 8 big-endian bytes; a real `2` and its IEEE-754 bits as 8 big-endian bytes; text `3`,
/// its length as 8 big-endian bytes, then its UTF-8 bytes. Every row has the table's columns,
/// so the stream reads back one way only: NULL differs from 0 and from '', and ("ab", "c") from
/// ("a", "bc").
#[derive(Clone, Default)]
pub(crate) struct TableDigest {
    pub(super) hasher: Sha256,
    pub(super) rows: u64,
}

impl TableDigest {
    pub(super) fn add(&mut self, row: &[Value]) {
        for value in row {
            match value {
                Value::Null => self.hasher.update([0u8]),
                Value::Int(v) => {
                    self.hasher.update([1u8]);
                    self.hasher.update(v.to_be_bytes());
                }
                Value::Real(v) => {
                    self.hasher.update([2u8]);
                    self.hasher.update(v.to_bits().to_be_bytes());
                }
                Value::Text(v) => {
                    self.hasher.update([3u8]);
                    self.hasher.update((v.len() as u64).to_be_bytes());
                    self.hasher.update(v.as_bytes());
                }
            }
        }
        self.rows += 1;
    }

    /// The row count and the digest as `sha256:<hex>`.
    pub(super) fn finish(self) -> (u64, String) {
        let hash = self.hasher.finalize();
        (self.rows, mindrune_core::sha256_text(&hash))
    }
}
