//! A connection's outgoing bytes: replies in order, as inline bytes and
//! references to pool bytes (zero-copy reads), with a "ready" mark saying
//! how far they may be sent (the rest waits for a commit).
//!
//! Owns: the inline reply bytes not yet sent, and one buffer reference per
//! pool part not yet sent. A pool part's bytes are a value stored in the
//! pool; the reference keeps its buffer from being reused (by the receive
//! ring, a compaction or the allocator) until the part has been sent.
//!
//! Positions are absolute counts since the connection opened: `inline`
//! counts inline bytes, `parts` pool parts, so a [`Mark`] taken at the end
//! of a turn stays valid while earlier bytes are sent and dropped.
//!
//! Back-pressure: `is_full` says the peer is `pause_bytes` behind reading;
//! the applications stop serving its requests, and the engine stops
//! reading them, until it catches up.
//!
//! Inline bytes handed to an asynchronous send must not move until it
//! completes: io_uring reads them when the socket has room, which may be a
//! later turn, after more replies were appended (a `Vec` that grew would
//! have freed them: the kernel sent whatever the allocator put there, and
//! peer links saw framing and CRC errors). So the inline bytes are chunks:
//! appends go to the open chunk, and `pin_for_send` seals it before its
//! bytes are sent; a sealed chunk is never written again, and is dropped
//! once sent.
//!
//! Invariant: the parts are sorted by the inline position they sit at;
//! every part in the queue holds exactly one reference on its buffer, which
//! is given back (through the caller's release function) when the part has
//! been sent or the queue is cleared.

use std::collections::VecDeque;

/// The largest drained chunk kept for reuse (larger ones are freed).
const SPARE_CAPACITY_MAX: usize = 256 << 10;

/// A position in the queue: everything pushed before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    inline: u64,
    parts: u64,
}

impl Mark {
    /// Whether `self` is at or after `other` (marks of one queue are
    /// ordered in both counts).
    pub fn covers(&self, other: Mark) -> bool {
        self.inline >= other.inline && self.parts >= other.parts
    }
}

struct Part {
    /// The absolute inline position the part sits at (before the inline
    /// byte with that position).
    at: u64,
    ptr: *const u8,
    len: u32,
    buffer: u32,
}

#[derive(Default)]
pub struct OutQueue {
    /// Sealed inline chunks (their bytes never move or change), the first
    /// from absolute position `sealed_base`, each after the one before.
    sealed: VecDeque<Vec<u8>>,
    sealed_base: u64,
    /// The open chunk, appended to, from absolute position `inline_base`
    /// (the end of the sealed chunks). None of its bytes is sent or in
    /// flight: sending seals it first.
    inline: Vec<u8>,
    inline_base: u64,
    /// A drained chunk kept for its capacity.
    spare: Vec<u8>,
    /// Pool parts from absolute index `parts_base`.
    parts: VecDeque<Part>,
    parts_base: u64,
    /// Inline bytes sent (absolute), and bytes of the front part sent.
    sent_inline: u64,
    sent_part: u32,
    /// How far the queue may be sent.
    ready: Mark,
    /// Bytes of the parts in the queue (sent or not).
    parts_bytes: u64,
    /// `is_full` above this many unsent bytes (0: never full).
    pause_bytes: u64,
}

// SAFETY: the part pointers refer to pool memory whose buffers the queue
// holds references on; a queue is used by one thread at a time.
unsafe impl Send for OutQueue {}

impl OutQueue {
    pub fn new() -> OutQueue {
        OutQueue::default()
    }

    /// The inline bytes, to append replies to.
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.inline
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.inline.extend_from_slice(bytes);
    }

    /// Appends `len` pool bytes at `ptr`, of pool buffer `buffer`.
    ///
    /// # Safety
    /// The caller has taken a reference on `buffer` that the queue now owns,
    /// and `ptr..ptr+len` lies in that buffer: the bytes stay valid and
    /// unwritten while the reference is held.
    pub unsafe fn push_pool(&mut self, buffer: u32, ptr: *const u8, len: u32) {
        assert!(len > 0, "an empty pool part");
        let at = self.inline_base + self.inline.len() as u64;
        self.parts.push_back(Part { at, ptr, len, buffer });
        self.parts_bytes += u64::from(len);
    }

    /// Sets the back-pressure threshold: `is_full` once this many bytes
    /// are unsent (0: never).
    pub fn set_pause_bytes(&mut self, bytes: u64) {
        self.pause_bytes = bytes;
    }

    /// Whether the peer is so far behind reading replies that no more
    /// requests should be served for it until it catches up.
    pub fn is_full(&self) -> bool {
        self.pause_bytes != 0 && self.unsent_len() >= self.pause_bytes
    }

    /// Unsent bytes that may still be queued before `is_full`.
    pub fn room(&self) -> u64 {
        if self.pause_bytes == 0 {
            u64::MAX
        } else {
            self.pause_bytes.saturating_sub(self.unsent_len())
        }
    }

    /// The end of everything pushed so far.
    pub fn end(&self) -> Mark {
        Mark { inline: self.inline_base + self.inline.len() as u64, parts: self.parts_base + self.parts.len() as u64 }
    }

    /// Allows sending up to `mark` (never moves back).
    pub fn set_ready(&mut self, mark: Mark) {
        assert!(self.end().covers(mark), "a mark beyond the queue's end");
        if mark.covers(self.ready) {
            self.ready = mark;
        }
    }

    /// Allows sending everything pushed so far.
    pub fn ready_all(&mut self) {
        self.set_ready(self.end());
    }

    /// Whether anything is queued and not sent (ready or not).
    pub fn is_empty(&self) -> bool {
        self.sent_inline == self.inline_base + self.inline.len() as u64 && self.parts.is_empty()
    }

    /// Whether ready bytes wait to be sent.
    pub fn has_ready(&self) -> bool {
        self.sent_inline < self.ready.inline || self.parts_base < self.ready.parts
    }

    /// Bytes queued and not yet sent (inline and pool).
    pub fn unsent_len(&self) -> u64 {
        let inline = self.inline_base + self.inline.len() as u64 - self.sent_inline;
        inline + self.parts_bytes - u64::from(self.sent_part)
    }

    /// Seals the open chunk if any of its bytes are ready, so that the
    /// slices given for an asynchronous send stay where they are until it
    /// completes (see the module's comment).
    pub fn pin_for_send(&mut self) {
        if self.ready.inline > self.inline_base {
            let spare = std::mem::take(&mut self.spare);
            let open = std::mem::replace(&mut self.inline, spare);
            if self.sealed.is_empty() {
                self.sealed_base = self.inline_base;
            }
            self.inline_base += open.len() as u64;
            self.sealed.push_back(open);
        }
    }

    /// The inline bytes from absolute position `pos` up to `end`, as far
    /// as they are contiguous (one chunk).
    fn inline_run(&self, pos: u64, end: u64) -> &[u8] {
        if pos >= self.inline_base {
            let from = (pos - self.inline_base) as usize;
            return &self.inline[from..(end - self.inline_base) as usize];
        }
        let mut base = self.sealed_base;
        for chunk in &self.sealed {
            let chunk_end = base + chunk.len() as u64;
            if pos < chunk_end {
                return &chunk[(pos - base) as usize..(end.min(chunk_end) - base) as usize];
            }
            base = chunk_end;
        }
        unreachable!("an inline position before the open chunk is in a sealed one")
    }

    /// The ready, unsent bytes as up to `max` slices, in order. Returns
    /// the number of bytes they hold. An asynchronous send calls
    /// `pin_for_send` first.
    pub fn slices(&self, max: usize, mut emit: impl FnMut(*const u8, usize)) -> usize {
        let mut total = 0;
        let mut count = 0;
        let mut pos = self.sent_inline;
        let mut part_index = 0usize;
        let mut part_offset = self.sent_part;
        while count < max {
            let next_part =
                self.parts.get(part_index).filter(|_| self.parts_base + (part_index as u64) < self.ready.parts);
            let inline_end = next_part.map_or(self.ready.inline, |p| p.at.min(self.ready.inline));
            if pos < inline_end {
                let run = self.inline_run(pos, inline_end);
                emit(run.as_ptr(), run.len());
                total += run.len();
                count += 1;
                pos += run.len() as u64;
                continue;
            }
            match next_part {
                Some(part) if part.at == pos => {
                    // SAFETY: inside the part (offset < len), see `push_pool`.
                    let ptr = unsafe { part.ptr.add(part_offset as usize) };
                    emit(ptr, (part.len - part_offset) as usize);
                    total += (part.len - part_offset) as usize;
                    count += 1;
                    part_index += 1;
                    part_offset = 0;
                }
                _ => break,
            }
        }
        total
    }

    /// Marks `n` ready bytes sent; parts fully sent give their reference
    /// back through `release`.
    pub fn advance(&mut self, mut n: usize, mut release: impl FnMut(u32)) {
        while n > 0 {
            let front = self.parts.front();
            let inline_end = front.map_or(self.ready.inline, |p| p.at.min(self.ready.inline));
            if self.sent_inline < inline_end {
                let take = (inline_end - self.sent_inline).min(n as u64);
                self.sent_inline += take;
                n -= take as usize;
                continue;
            }
            let part = front.expect("advancing past the ready bytes");
            assert!(
                part.at == self.sent_inline && self.parts_base < self.ready.parts,
                "advancing past the ready bytes"
            );
            let left = part.len - self.sent_part;
            if (n as u64) < u64::from(left) {
                self.sent_part += n as u32;
                n = 0;
            } else {
                n -= left as usize;
                self.sent_part = 0;
                let part = self.parts.pop_front().expect("checked");
                self.parts_base += 1;
                self.parts_bytes -= u64::from(part.len);
                release(part.buffer);
            }
        }
        self.compact();
    }

    /// Drops sealed chunks once sent (keeping one for its capacity), and
    /// the open chunk's bytes once all sent. The open chunk holds no sent
    /// bytes otherwise: sending seals it first.
    fn compact(&mut self) {
        while let Some(front) = self.sealed.front() {
            let front_end = self.sealed_base + front.len() as u64;
            if front_end > self.sent_inline {
                break;
            }
            let mut chunk = self.sealed.pop_front().expect("checked");
            self.sealed_base = front_end;
            if chunk.capacity() > self.spare.capacity() && chunk.capacity() <= SPARE_CAPACITY_MAX {
                chunk.clear();
                self.spare = chunk;
            }
        }
        if self.sealed.is_empty() && self.sent_inline == self.inline_base + self.inline.len() as u64 {
            self.inline.clear();
            self.inline_base = self.sent_inline;
        }
        debug_assert!(self.sent_inline <= self.inline_base || self.sealed.is_empty());
    }

    /// Drops what was pushed after `mark` (a request that failed half way
    /// through its reply: a caught panic), giving each dropped part's
    /// reference back through `release`. Nothing after `mark` may be ready:
    /// a reply is made ready only after its request ended.
    pub fn truncate(&mut self, mark: Mark, mut release: impl FnMut(u32)) {
        assert!(self.end().covers(mark), "a mark beyond the queue's end");
        assert!(mark.covers(self.ready), "truncating bytes already made ready");
        while self.parts_base + self.parts.len() as u64 > mark.parts {
            let part = self.parts.pop_back().expect("counted");
            self.parts_bytes -= u64::from(part.len);
            release(part.buffer);
        }
        if mark.inline >= self.inline_base {
            self.inline.truncate((mark.inline - self.inline_base) as usize);
            return;
        }
        // The mark is in a sealed chunk, past the ready bytes (none of its
        // bytes after the mark is in flight): shortening a Vec moves nothing.
        self.inline.clear();
        self.inline_base = mark.inline;
        let mut start = self.sealed_base + self.sealed.iter().map(|c| c.len() as u64).sum::<u64>();
        while let Some(mut last) = self.sealed.pop_back() {
            start -= last.len() as u64;
            if start < mark.inline {
                last.truncate((mark.inline - start) as usize);
                self.sealed.push_back(last);
                break;
            }
        }
    }

    /// Drops everything unsent (the connection is gone); every part's
    /// reference goes back through `release`.
    pub fn clear(&mut self, mut release: impl FnMut(u32)) {
        for part in self.parts.drain(..) {
            release(part.buffer);
            self.parts_base += 1;
        }
        self.parts_bytes = 0;
        let end = self.end();
        self.sealed.clear();
        self.inline_base = end.inline;
        self.inline.clear();
        self.sent_inline = end.inline;
        self.sent_part = 0;
        self.ready = Mark { inline: end.inline, parts: self.parts_base };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(queue: &OutQueue, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        // SAFETY: the test's parts point at static data.
        queue.slices(max, |ptr, len| out.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, len) }));
        out
    }

    static VALUE: &[u8] = b"0123456789";

    #[test]
    fn parts_interleave_with_inline_bytes() {
        let mut queue = OutQueue::new();
        queue.push(b"$10\r\n");
        // SAFETY: static data; the "reference" is the test's counter.
        unsafe { queue.push_pool(7, VALUE.as_ptr(), 10) };
        queue.push(b"\r\n+OK\r\n");
        assert_eq!(collect(&queue, 16), b"", "nothing is ready yet");
        queue.ready_all();
        assert_eq!(collect(&queue, 16), b"$10\r\n0123456789\r\n+OK\r\n");
        assert_eq!(collect(&queue, 2), b"$10\r\n0123456789");
        let mut released = Vec::new();
        queue.advance(8, |b| released.push(b));
        assert_eq!(collect(&queue, 16), b"3456789\r\n+OK\r\n");
        assert!(released.is_empty());
        queue.advance(7, |b| released.push(b));
        assert_eq!(released, vec![7], "a part sent whole gives its reference back");
        queue.advance(7, |b| released.push(b));
        assert!(queue.is_empty());
        assert!(!queue.has_ready());
    }

    #[test]
    fn truncate_drops_a_failed_reply_and_its_parts() {
        let mut queue = OutQueue::new();
        queue.push(b"+OK\r\n");
        queue.ready_all();
        let mark = queue.end();
        queue.push(b"$10\r\n");
        // SAFETY: static data; the "reference" is the test's counter.
        unsafe { queue.push_pool(9, VALUE.as_ptr(), 10) };
        queue.push(b"\r\n");
        let mut released = Vec::new();
        queue.truncate(mark, |b| released.push(b));
        assert_eq!(released, vec![9], "the dropped part gives its reference back");
        queue.push(b"-ERR x\r\n");
        queue.ready_all();
        assert_eq!(collect(&queue, 16), b"+OK\r\n-ERR x\r\n");
    }

    #[test]
    fn ready_mark_holds_later_replies() {
        let mut queue = OutQueue::new();
        queue.push(b"first ");
        let mark = queue.end();
        // SAFETY: static data.
        unsafe { queue.push_pool(1, VALUE.as_ptr(), 4) };
        queue.push(b" later");
        queue.set_ready(mark);
        assert_eq!(collect(&queue, 16), b"first ");
        queue.advance(6, |_| panic!("no part was sent"));
        assert!(!queue.has_ready());
        assert!(!queue.is_empty());
        queue.ready_all();
        assert_eq!(collect(&queue, 16), b"0123 later");
        let mut released = 0;
        queue.clear(|_| released += 1);
        assert_eq!(released, 1);
        assert!(queue.is_empty());
        queue.push(b"again");
        queue.ready_all();
        assert_eq!(collect(&queue, 16), b"again");
    }

    #[test]
    fn adjacent_parts_and_a_part_first() {
        let mut queue = OutQueue::new();
        // SAFETY: static data.
        unsafe {
            queue.push_pool(1, VALUE.as_ptr(), 3);
            queue.push_pool(2, VALUE.as_ptr().add(3), 3);
        }
        queue.push(b"!");
        queue.ready_all();
        assert_eq!(collect(&queue, 16), b"012345!");
        assert_eq!(queue.unsent_len(), 7);
        let mut released = Vec::new();
        queue.advance(4, |b| released.push(b));
        assert_eq!(released, vec![1]);
        assert_eq!(collect(&queue, 16), b"45!");
        queue.advance(3, |b| released.push(b));
        assert_eq!(released, vec![1, 2]);
        assert!(queue.is_empty());
    }

    /// Bytes given to a send stay where they were, whatever is appended
    /// before it completes (io_uring reads them when the socket has room).
    #[test]
    fn bytes_in_flight_never_move() {
        let mut queue = OutQueue::new();
        queue.push(b"*3\r\n$1\r\nM\r\n");
        queue.ready_all();
        queue.pin_for_send();
        let mut in_flight = Vec::new();
        queue.slices(16, |ptr, len| in_flight.push((ptr, len)));
        // Far more than the chunk's capacity: a single Vec would move.
        for _ in 0..10_000 {
            queue.push(b"later replies, appended while the send is in flight\r\n");
        }
        queue.ready_all();
        // SAFETY: the pointers are into the queue's sealed chunk, alive.
        let seen: Vec<u8> =
            in_flight.iter().flat_map(|&(ptr, len)| unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec()).collect();
        assert_eq!(seen, b"*3\r\n$1\r\nM\r\n");
        let sent: usize = in_flight.iter().map(|&(_, len)| len).sum();
        queue.advance(sent - 3, |_| {});
        queue.pin_for_send();
        let rest = collect(&queue, 16);
        assert!(rest.starts_with(b"M\r\nlater replies"), "{:?}", &rest[..20]);
        assert_eq!(rest.len() as u64, queue.unsent_len());
        queue.advance(rest.len(), |_| {});
        assert!(queue.is_empty());
        assert!(queue.sealed.is_empty(), "sent chunks are dropped");
    }

    #[test]
    fn full_counts_unsent_inline_and_pool_bytes() {
        let mut queue = OutQueue::new();
        assert!(!queue.is_full() && queue.room() == u64::MAX, "no threshold: never full");
        queue.set_pause_bytes(8);
        queue.push(b"abc");
        // SAFETY: static data.
        unsafe { queue.push_pool(1, VALUE.as_ptr(), 4) };
        assert_eq!((queue.unsent_len(), queue.room(), queue.is_full()), (7, 1, false));
        queue.push(b"d");
        assert!(queue.is_full());
        queue.ready_all();
        queue.advance(5, |_| {});
        assert_eq!((queue.unsent_len(), queue.is_full()), (3, false), "sent bytes no longer count");
        queue.clear(|_| {});
        assert_eq!(queue.unsent_len(), 0);
    }
}
