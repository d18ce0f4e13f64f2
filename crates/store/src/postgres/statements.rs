//! The statements a PostgreSQL connection has prepared, kept with it: a recording's
//! connection ([`super::conn`]) and a write group's waiting rescores
//! ([`super::group_writes`]) both prepare through here.

use std::collections::HashMap;

use postgres::{Client, Statement};

/// Statements kept per connection; past this the cache starts over (some SQL is built per call,
/// such as a list of placeholders, and must not grow it without bound).
const STATEMENT_CACHE_LIMIT: usize = 256;

/// `sql` prepared on `client`, once per connection.
pub(crate) fn prepared(
    client: &mut Client,
    statements: &mut HashMap<String, Statement>,
    sql: &str,
) -> Result<Statement, postgres::Error> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = client.prepare(sql)?;
    if statements.len() >= STATEMENT_CACHE_LIMIT {
        statements.clear();
    }
    statements.insert(sql.to_string(), statement.clone());
    Ok(statement)
}
