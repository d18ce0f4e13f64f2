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

use super::group_writes::{GroupWrites, OwnWrites, Waiting};
use super::statements::prepared;
use crate::rules::Rescore;
use crate::{NewUse, OwnerId};

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
            deferred: None,
        })
    }

    /// A handle for one statement on its own: PostgreSQL runs it in a transaction of its own,
    /// with its own snapshot, so a read of one statement needs no `BEGIN` and `COMMIT` (two of
    /// its three round trips). A second statement on it is a mistake of the caller's.
    pub(crate) fn one_statement(&mut self) -> Tx<'_> {
        let Conn { client, statements } = self;
        Tx {
            client,
            statements,
            open: false,
            end: TxEnd::OneStatement,
            deferred: None,
        }
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
            deferred: None,
        })
    }

    /// A piece of a write group's work that records a use: its use and rescore wait with the
    /// group's (`group`, see [`super::group_writes`]). Its savepoint is opened only when it
    /// runs a statement, after what the group's earlier work left waiting is written, and
    /// [`Tx::commit`] hands what it recorded to the group.
    pub(crate) fn deferring<'a>(&'a mut self, group: &'a mut GroupWrites) -> Tx<'a> {
        let Conn { client, statements } = self;
        Tx {
            client,
            statements,
            open: false,
            end: TxEnd::Savepoint,
            deferred: Some(Deferred {
                group,
                own: OwnWrites::default(),
            }),
        }
    }

    /// Writes what a write group left waiting, before other work of the group.
    pub(crate) fn write_waiting(&mut self, group: &mut GroupWrites) -> Result<(), postgres::Error> {
        let Conn { client, statements } = self;
        group.write(client, statements)
    }

    /// A query that needs nothing written first: a look-up that knows what the group's writes
    /// waiting in memory would change.
    pub(crate) fn query_as_is(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = prepared(&mut self.client, &mut self.statements, sql)?;
        self.client.query(&statement, params)
    }
}

/// What a [`Tx`] is the handle of, so it commits or rolls back the right thing.
#[derive(Clone, Copy)]
enum TxEnd {
    Transaction,
    Savepoint,
    /// No transaction of its own ([`Conn::one_statement`]); `open` says whether its statement ran.
    OneStatement,
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
    /// A recording piece of a write group's work: its uses and rescores wait in memory.
    deferred: Option<Deferred<'a>>,
}

/// What a recording piece of a write group's work does with the uses and rescores it records.
struct Deferred<'a> {
    /// The group's: what its earlier work recorded, and what it knows of its families.
    group: &'a mut GroupWrites,
    /// This piece's own: the group's once the piece is kept, dropped if it fails.
    own: OwnWrites,
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
                TxEnd::OneStatement => return,
            });
        }
    }
}

type Params<'p> = &'p [&'p (dyn ToSql + Sync)];

impl Tx<'_> {
    /// `sql` prepared, and, in a recording piece of a write group, every use and rescore that
    /// waits written first, so the statement sees them: the group's outside this piece's
    /// savepoint (opened now, on its first statement), then the piece's own inside it.
    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let TxEnd::OneStatement = self.end {
            debug_assert!(
                !self.open,
                "a second statement in one_statement's snapshot: {sql}"
            );
            self.open = true;
        }
        if let Some(deferred) = &mut self.deferred {
            if !self.open {
                deferred.group.write(self.client, self.statements)?;
                if let Err(err) = self.client.batch_execute("SAVEPOINT mindrune_write") {
                    deferred.group.lost = true;
                    return Err(err);
                }
                self.open = true;
            }
            deferred.own.waiting.write(self.client, self.statements)?;
        }
        prepared(self.client, self.statements, sql)
    }

    /// A read of one version's row or uses. In a recording piece of a write group that has
    /// written nothing of its own yet, it needs no savepoint (it changes nothing to take back)
    /// and only that version's waiting writes written first.
    pub(crate) fn query_of_version(
        &mut self,
        version: i64,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        self.read_in_piece(
            |own| own.is_empty(),
            |group| group.touches(version),
            sql,
            params,
        )
    }

    /// A read of versions, skills and their tags, never of uses (a family's peers). In a
    /// recording piece of a write group whose own rescore does not wait yet, it needs no
    /// savepoint, and its own waiting use need not be written: only the group's waiting writes.
    pub(crate) fn query_of_versions(
        &mut self,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        self.read_in_piece(
            |own| !own.has_rescores(),
            |group| !group.is_empty(),
            sql,
            params,
        )
    }

    /// A read in a recording piece of a write group, outside any savepoint when `own_allows`
    /// what the piece has waiting (else as any statement): the group's waiting writes first when
    /// `group_first` says the read needs them. A read that fails outside a savepoint leaves the
    /// group's transaction unusable, and the group is lost.
    fn read_in_piece(
        &mut self,
        own_allows: impl FnOnce(&Waiting) -> bool,
        group_first: impl FnOnce(&Waiting) -> bool,
        sql: &str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, postgres::Error> {
        let Some(deferred) = self
            .deferred
            .as_mut()
            .filter(|d| !self.open && own_allows(&d.own.waiting))
        else {
            return self.query(sql, params);
        };
        let read = (|| {
            if group_first(&deferred.group.waiting) {
                deferred.group.waiting.write(self.client, self.statements)?;
            }
            let statement = prepared(self.client, self.statements, sql)?;
            self.client.query(&statement, params)
        })();
        if read.is_err() {
            deferred.group.lost = true;
        }
        read
    }

    /// In a recording piece of a write group, keeps the use to be written with the group's
    /// others, answering as the insert would have: a retry when its event id was recorded by
    /// the group or stored before it, no such agent when the agent is not the family's.
    /// `None` outside a group: the insert is a statement.
    pub(crate) fn insert_use_later(
        &mut self,
        owner: OwnerId,
        new_use: &NewUse,
    ) -> Option<Result<crate::rules::UseInsert, postgres::Error>> {
        use crate::rules::UseInsert;
        let deferred = self.deferred.as_mut()?;
        let Tx {
            client, statements, ..
        } = self;
        let mut look_up = |sql: &str, params: Params<'_>| {
            prepared(client, statements, sql)
                .and_then(|statement| client.query_opt(&statement, params))
                .map(|row| row.is_some())
        };
        let answer = (|| {
            if let Some(event_id) = &new_use.event_id {
                let stored =
                    match deferred
                        .group
                        .event_recorded(Some(&deferred.own), owner, event_id)
                    {
                        Some(known) => known,
                        None => {
                            let stored = look_up(
                                "SELECT 1 FROM uses WHERE owner_id = $1 AND event_id = $2",
                                &[&owner.0, event_id],
                            )?;
                            deferred.group.note_stored(owner, event_id, stored);
                            stored
                        }
                    };
                if stored {
                    return Ok(Some(UseInsert::AlreadyRecorded));
                }
            }
            if !deferred.group.knows_agent(owner, new_use.agent.0) {
                let family = look_up(
                    "SELECT 1 FROM agents WHERE owner_id = $1 AND agent_id = $2",
                    &[&owner.0, &new_use.agent.0],
                )?;
                if !family {
                    return Ok(Some(UseInsert::NoSuchAgent));
                }
                deferred.group.note_agent(owner, new_use.agent.0);
            }
            Ok(None)
        })();
        match answer {
            Ok(Some(answer)) => return Some(Ok(answer)),
            Ok(None) => {}
            Err(err) => {
                // A look-up failing outside a savepoint leaves the transaction unusable.
                deferred.group.lost = true;
                return Some(Err(err));
            }
        }
        deferred.own.waiting.keep_use(owner, new_use);
        if let Some(event_id) = &new_use.event_id {
            deferred.own.note_event(owner, event_id);
        }
        Some(Ok(UseInsert::Inserted))
    }

    /// In a recording piece of a write group, keeps the rescore to be written with the
    /// group's others (added up per version); `Some(rescore)` back outside a group.
    pub(crate) fn rescore_later(
        &mut self,
        owner: OwnerId,
        version: i64,
        rescore: Rescore,
    ) -> Option<Rescore> {
        match &mut self.deferred {
            Some(deferred) => {
                deferred.own.waiting.keep_rescore(owner, version, rescore);
                None
            }
            None => Some(rescore),
        }
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
        if let Some(Deferred { group, own }) = self.deferred.take() {
            if self.open {
                // A failed release leaves the savepoint to be rolled back by the drop, and what
                // this piece recorded is dropped with it.
                self.client
                    .batch_execute("RELEASE SAVEPOINT mindrune_write")?;
                self.open = false;
            }
            group.keep(own);
            return Ok(());
        }
        let end = match self.end {
            TxEnd::Transaction => "COMMIT",
            TxEnd::Savepoint => "RELEASE SAVEPOINT mindrune_write",
            TxEnd::OneStatement => {
                self.open = false;
                return Ok(());
            }
        };
        let done = self.client.batch_execute(end);
        // A failed release leaves the savepoint to be rolled back by the drop.
        self.open = done.is_err() && matches!(self.end, TxEnd::Savepoint);
        done
    }
}
