//! The staging ledger (issue 35): which buffer references a request took
//! for itself while it runs, so that a request whose handler panics gives
//! them back instead of leaking them.
//!
//! A request stages references in locals (the `Put` ops it builds, the
//! extents of a value it copies, a body it received) and gives them back
//! before it ends, whatever the outcome (`Store::release_ops`). A panic
//! unwinds past that release: the locals are dropped, the references are
//! not. The ledger counts, per buffer, the references taken through the
//! staging calls (`Buffers::retain_staged`, `Buffers::adopt_staged` for
//! a body the request took over or copied) since the
//! request began, less the releases of the same buffer since; what is left
//! when a panic is caught is what the request still held.
//!
//! Scopes nest (EXEC and scripts run commands inside a command): each has
//! its own counts; a release pairs with the innermost scope that staged the
//! buffer. A scope that ends normally forgets its counts (what a request
//! still holds then belongs to a longer-lived owner, such as a reply
//! queue); one that ends in a panic releases them.
//!
//! Invariant: the ledger never names more references on a buffer than the
//! buffer's count holds that were taken in the scope: every entry was one
//! taken reference, and a release removes at most one entry. So undoing it
//! can leak (a release of someone else's reference on the same buffer paired
//! with a staged one) but never frees a reference it did not take.

use crate::util::idhash::IdHashMap;

/// Scopes deeper than this are a bug (EXEC inside a script inside EXEC is
/// refused by the commands themselves; a few levels suffice).
const STAGING_DEPTH_MAX: usize = 16;

#[derive(Default)]
pub(crate) struct Staging {
    /// Per scope, outermost first, the staged references by buffer index.
    /// Maps past `depth` are kept empty for reuse. Keyed by buffer index
    /// with the id hasher (issue 36: SipHash here was 2% of a SET).
    scopes: Vec<IdHashMap<u32, u32>>,
    depth: usize,
}

/// A scope's identity, handed back when it ends: scopes end in the order
/// they began.
#[must_use = "a staging scope must be ended or unwound"]
#[derive(Debug)]
pub struct StagingScope(usize);

impl Staging {
    pub(crate) fn begin(&mut self) -> StagingScope {
        assert!(self.depth < STAGING_DEPTH_MAX, "staging scopes nested deeper than {STAGING_DEPTH_MAX}");
        if self.scopes.len() == self.depth {
            self.scopes.push(IdHashMap::default());
        }
        debug_assert!(self.scopes[self.depth].is_empty(), "a fresh scope starts empty");
        self.depth += 1;
        StagingScope(self.depth)
    }

    /// A reference on `buffer` taken by the innermost scope (none: no
    /// request is running, nothing to note).
    pub(crate) fn note_taken(&mut self, buffer: u32) {
        if let Some(scope) = self.depth.checked_sub(1) {
            *self.scopes[scope].entry(buffer).or_insert(0) += 1;
        }
    }

    /// A reference on `buffer` given back: pairs with the innermost scope
    /// that staged one.
    pub(crate) fn note_given_back(&mut self, buffer: u32) {
        for scope in self.scopes[..self.depth].iter_mut().rev() {
            if scope.is_empty() {
                continue;
            }
            if let Some(count) = scope.get_mut(&buffer) {
                *count -= 1;
                if *count == 0 {
                    scope.remove(&buffer);
                }
                return;
            }
        }
    }

    /// Ends the innermost scope; returns what it still held (buffer,
    /// references), for the caller to forget or give back.
    pub(crate) fn end(&mut self, scope: StagingScope) -> Vec<(u32, u32)> {
        self.leave(scope).drain().collect()
    }

    /// Ends the innermost scope as `end` does, answering only how many
    /// references it still held (no list: every request ends a scope).
    pub(crate) fn end_counted(&mut self, scope: StagingScope) -> u64 {
        self.leave(scope).drain().map(|(_, refs)| u64::from(refs)).sum()
    }

    /// Closes the innermost scope; its ledger, for the caller to empty.
    fn leave(&mut self, scope: StagingScope) -> &mut IdHashMap<u32, u32> {
        assert_eq!(scope.0, self.depth, "staging scopes end in the order they began");
        self.depth -= 1;
        &mut self.scopes[self.depth]
    }
}
