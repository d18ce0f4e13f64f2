//! The pool's connections, each with its prepared statements, and the transaction handle the
//! SQL modules use.
//!
//! Why a statement cache: the driver prepares a statement given as text anew on every call,
//! one round trip to parse it before the one that runs it. Recording a use runs a dozen
//! statements while it holds its family's lock, so preparing each once per connection halves
//! the round trips in the lock and lets PostgreSQL keep their plans. r2d2_postgres's manager
//! keeps no per-connection state, hence this small manager of our own.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use postgres::types::ToSql;
use postgres::{Client, Config, NoTls, Row, Statement};

/// Statements kept per connection; past this the cache starts over (some SQL is built per call,
/// such as a list of placeholders, and must not grow it without bound).
const STATEMENT_CACHE_LIMIT: usize = 256;

/// One pooled connection and the statements prepared on it.
pub(crate) struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Deref for Conn {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

impl Conn {
    /// Starts a transaction with `begin`, which is sent as it is in one round trip: `BEGIN …`
    /// and, for a write, the statement taking its advisory lock (the driver's own transaction
    /// would spend a round trip on each). Its statements are prepared through this
    /// connection's cache.
    pub(crate) fn begin(&mut self, begin: &str) -> Result<Tx<'_>, postgres::Error> {
        let Conn { client, statements } = self;
        if let Err(err) = client.batch_execute(begin) {
            // `BEGIN` may have run before the lock failed: leave the connection outside any
            // transaction for its next user.
            let _ = client.batch_execute("ROLLBACK");
            return Err(err);
        }
        Ok(Tx {
            client,
            statements,
            open: true,
            end: TxEnd::Transaction,
        })
    }

    /// Starts a savepoint inside the transaction this connection has open (a write group's):
    /// its commit releases it, and dropped without one it rolls back to it, leaving the
    /// transaction's earlier work and the transaction usable.
    pub(crate) fn savepoint(&mut self) -> Result<Tx<'_>, postgres::Error> {
        let Conn { client, statements } = self;
        client.batch_execute("SAVEPOINT mindrune_write")?;
        Ok(Tx {
            client,
            statements,
            open: true,
            end: TxEnd::Savepoint,
        })
    }
}

/// What a [`Tx`] is the handle of, so it commits or rolls back the right thing.
#[derive(Clone, Copy)]
enum TxEnd {
    Transaction,
    Savepoint,
}

/// Connects with one configuration (URL, schema, timeouts) for the pool.
#[derive(Debug)]
pub(crate) struct Manager {
    pub config: Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
    }
}

/// A transaction on a pooled connection. It answers the driver's calls that the SQL modules
/// use, taking SQL text and preparing it once per connection. Dropped without a commit (an
/// error, a panic), it rolls back, as the driver's own transaction does.
pub(crate) struct Tx<'a> {
    client: &'a mut Client,
    statements: &'a mut HashMap<String, Statement>,
    open: bool,
    end: TxEnd,
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            // A connection that cannot even roll back is broken; the pool sees it as closed and
            // replaces it, so there is nothing more to do with the error.
            let _ = self.client.batch_execute(match self.end {
                TxEnd::Transaction => "ROLLBACK",
                TxEnd::Savepoint => {
                    "ROLLBACK TO SAVEPOINT mindrune_write; RELEASE SAVEPOINT mindrune_write"
                }
            });
        }
    }
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl Tx<'_> {
    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        if self.statements.len() >= STATEMENT_CACHE_LIMIT {
            self.statements.clear();
        }
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    pub(crate) fn query(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query(&statement, params)
    }

    pub(crate) fn query_one(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query_one(&statement, params)
    }

    pub(crate) fn query_opt(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.query_opt(&statement, params)
    }

    pub(crate) fn execute(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.client.execute(&statement, params)
    }

    pub(crate) fn commit(mut self) -> Result<(), postgres::Error> {
        let end = match self.end {
            TxEnd::Transaction => "COMMIT",
            TxEnd::Savepoint => "RELEASE SAVEPOINT mindrune_write",
        };
        let done = self.client.batch_execute(end);
        // A failed release leaves the savepoint to be rolled back by the drop.
        self.open = done.is_err() && matches!(self.end, TxEnd::Savepoint);
        done
    }
}
