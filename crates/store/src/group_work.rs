//! What keeps a write group's work honest: inside it, only the group's handle may be used. The
//! store itself would wait for the very group its caller is running (SQLite's connection is the
//! group's until it ends; a PostgreSQL family write waits for the family's lock the group
//! holds), so a direct use would hang for ever without a word. Instead it panics, naming the
//! mistake. This is a check of the caller, not a mode: nothing behaves differently inside a
//! group but this refusal.

use std::cell::Cell;

thread_local! {
    static IN_GROUP_WORK: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as running a write group's work until dropped.
pub(crate) struct GroupWork {
    outer: bool,
}

impl GroupWork {
    pub(crate) fn begin() -> GroupWork {
        GroupWork {
            outer: IN_GROUP_WORK.replace(true),
        }
    }
}

impl GroupWork {
    /// Lets the group's handle itself run work of its own beside the group (a write for a
    /// family the group does not hold) until dropped.
    pub(crate) fn handle_runs_alone() -> GroupWork {
        GroupWork {
            outer: IN_GROUP_WORK.replace(false),
        }
    }
}

impl Drop for GroupWork {
    fn drop(&mut self) {
        IN_GROUP_WORK.set(self.outer);
    }
}

/// Panics when the calling thread is running a write group's work: the store was used directly
/// where the group's handle had to be.
pub(crate) fn refuse_inside_group_work() {
    if IN_GROUP_WORK.get() {
        panic!(
            "the store was used directly inside a write group's work, which would wait for that \
             group for ever: do the work through the group's handle (the `&dyn Recording` that \
             `Store::write_group` gives its work)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_lasts_as_long_as_the_group_s_work_and_nests() {
        refuse_inside_group_work();
        {
            let _outer = GroupWork::begin();
            {
                let _inner = GroupWork::begin();
            }
            assert!(std::panic::catch_unwind(refuse_inside_group_work).is_err());
        }
        refuse_inside_group_work();
    }
}
