//! A request's panic, caught (issue 35). Every request path of the
//! key-value server runs its work inside a guard: a Redis command's
//! handler (`dispatch.rs`), an HTTP request (`rest.rs`), a frame of a peer
//! link (`replication.rs`). A bug that panics there answers that request
//! with an error (RESP `-ERR`, HTTP 500; a peer link is closed) and the
//! server serves on.
//!
//! Invariant: after a caught panic the request holds nothing. The reply
//! it had begun is dropped (its pool parts' references given back), the
//! buffer references it staged are given back (`pool/staging.rs`), and a
//! log group it opened is closed. Unless the store was caught between its
//! log and its tree (`Store::is_consistent`): then the panic goes on, the
//! process stops, and recovery replays the log (only a restart may go on).

use crate::apps::kv::state::{KvServer, PanicPoint};
use crate::io::outq::{Mark, OutQueue};
use crate::pool::buffers::{Buffers, StagingScope};
use crate::pool::file::Pool;

/// What a request's guard remembers from its start.
pub(super) struct Guard {
    scope: StagingScope,
    /// Where the request's reply begins.
    reply: Mark,
    /// Whether a log group was open before (a command inside EXEC or a
    /// script): a group the request opened itself is closed on a panic.
    group_before: bool,
    /// Whether a script was running and EXEC running its commands when it
    /// began (a call inside them): both are as they were after a panic,
    /// and the session of shards parked for the outer request stays.
    running_before: bool,
    in_exec_before: bool,
}

/// A panic's message.
pub(super) fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(text), _) => text.to_string(),
        (_, Some(text)) => text.clone(),
        _ => "a panic".to_string(),
    }
}

impl KvServer {
    /// Opens a request's guard: its staging scope and its reply's start.
    pub(super) fn guard_begin(&self, buffers: &mut Buffers, out: &OutQueue) -> Guard {
        let (running_before, in_exec_before) = (self.scripting.running, self.scripting.in_exec);
        let group_before = self.store.in_group();
        Guard { scope: buffers.begin_staging(), reply: out.end(), group_before, running_before, in_exec_before }
    }

    /// The request ended without a panic: what it still holds is owned
    /// elsewhere (its reply's parts).
    pub(super) fn guard_end(&self, buffers: &mut Buffers, guard: Guard) {
        buffers.end_staging(guard.scope);
    }

    /// The request panicked: resumes the panic if the store is between its
    /// log and its tree; otherwise drops the request's reply, gives back
    /// what it staged, closes a group it opened, counts the panic, and
    /// returns its message for the error reply.
    pub(super) fn guard_caught(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        out: &mut OutQueue,
        guard: Guard,
        panic: Box<dyn std::any::Any + Send>,
    ) -> String {
        if !self.store.is_consistent() {
            std::panic::resume_unwind(panic);
        }
        self.stats.errors += 1;
        self.stats.panics += 1;
        // The reply's parts were never staged: their references are the
        // queue's own.
        out.truncate(guard.reply, |buffer| {
            buffers.release_unstaged(buffer).expect("a reply part's reference");
        });
        let released = buffers.unwind_staging(guard.scope);
        self.stats.panic_refs_released += released;
        // A panic inside a script's step skips its own resets.
        (self.scripting.running, self.scripting.in_exec) = (guard.running_before, guard.in_exec_before);
        if !guard.running_before && !guard.in_exec_before {
            self.end_failed_session(pool, buffers);
        }
        // A group the request opened (a script's, EXEC's) is closed: what
        // it applied is in the tree, so it must be whole in the log too;
        // later commands must not join it.
        if !guard.group_before && self.store.in_group() {
            self.scripting.running = false;
            if let Err(error) = self.store.end_group(pool, buffers) {
                tracing::error!("closing the group of a failed request: {error}");
            }
        }
        self.staged_in_place = 0;
        self.staged_copied = 0;
        panic_text(&panic)
    }

    /// Shards parked for a request that failed on a bug (a script's
    /// session): its part here ends with theirs, as one transaction, and
    /// they are released.
    fn end_failed_session(&mut self, pool: &Pool, buffers: &mut Buffers) {
        let Some(mut session) = self.session.take() else { return };
        if self.store.group_records() > 0 {
            session.wrote_here();
        }
        if let Err(error) = self.across_end(pool, buffers, session) {
            tracing::error!("ending the session of a failed request: {error}");
        }
    }

    /// Runs `work` (one request) in a guard. Err: it panicked (the guard
    /// cleaned up after it), with the panic's message.
    pub(super) fn guarded<R>(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        out: &mut OutQueue,
        work: impl FnOnce(&mut KvServer, &mut Buffers, &mut OutQueue) -> R,
    ) -> Result<R, String> {
        let guard = self.guard_begin(buffers, out);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self, buffers, out)));
        match result {
            Ok(result) => {
                self.guard_end(buffers, guard);
                Ok(result)
            }
            Err(panic) => Err(self.guard_caught(pool, buffers, out, guard, panic)),
        }
    }

    /// A peer link's frame panicked: resumes the panic if the store is
    /// between its log and its tree; otherwise counts it and returns why
    /// the link closes. A frame runs without a staging scope: the records
    /// it lands are the link's (`Inbound`), given back when it closes.
    pub(super) fn peer_frame_panicked(&mut self, panic: Box<dyn std::any::Any + Send>) -> String {
        if !self.store.is_consistent() {
            std::panic::resume_unwind(panic);
        }
        self.stats.errors += 1;
        self.stats.panics += 1;
        format!("a frame failed on a bug ({})", panic_text(&panic))
    }

    /// A test switch (`DEBUG PANIC-AT`): panics if `point` is armed, once.
    /// On a sharded server the switch is the process's: the shard that
    /// runs the next such request panics.
    pub(super) fn panic_if_armed(&mut self, point: PanicPoint) {
        let shared = self.across.as_ref().is_some_and(|exchange| exchange.take_panic(point as u8 + 1));
        if shared || self.panic_at == Some(point) {
            self.panic_at = None;
            panic!("a panic injected by a test switch at {point:?}");
        }
    }
}
