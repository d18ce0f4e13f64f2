-- The owner's key is kept only as its digest (`sha256:` + 64 hex, the same rule as every token's
-- digest). The column is renamed so no reader mistakes it for the key; the keys still stored in
-- clear are digested in Rust right after this file runs, in the same transaction, so both
-- backends share one rule (`postgres::digest_plain_owner_keys`).
ALTER TABLE owners RENAME COLUMN api_key TO key_digest;
