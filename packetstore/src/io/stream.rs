//! A connection's received bytes: an ordered stream over segments.
//!
//! Owns: the segments a connection has received and not yet consumed, in
//! order. A segment is the bytes one receive put into one buffer: a pool
//! buffer (zero copy: the bytes are already where they will be persisted)
//! or a private buffer (the copy and epoll paths). A request may straddle
//! segments, and one segment may hold several requests (pipelining).
//!
//! A peer that trickles bytes (one per receive) would otherwise pin one
//! receive buffer, or one slot of a shared one, per byte: `coalesce` copies
//! a stream of many small segments into one the stream owns.
//!
//! Invariant: the stream holds one reference on the buffer of every segment
//! it holds; a segment's memory stays valid and is not written (the engine
//! does not hand its buffer back to the kernel) until the segment is fully
//! consumed and passed to the caller's release function.

use std::collections::VecDeque;

use crate::error::BufferError;
use crate::pool::buffers::Buffers;
use crate::pool::extent::Extent;
use crate::pool::file::Pool;

/// Where a segment's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A pool buffer, by index: the bytes can be logged in place.
    Pool(u32),
    /// A private buffer of the receiving loop, by its id there.
    Private(u32),
    /// Memory the stream owns: small segments coalesced (`coalesce`).
    /// Released by the stream itself; callers' release functions never see
    /// one.
    Heap,
}

#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub source: Source,
    /// Address of the segment's first byte, and the byte's offset in its
    /// buffer (for pool extents).
    ptr: *const u8,
    offset: u32,
    len: u32,
}

impl Segment {
    /// # Safety
    /// `ptr..ptr+len` must stay valid and unwritten until this segment is
    /// released by `Stream::consume`; for a pool segment, `ptr` must be the
    /// address of byte `offset` of pool buffer `source`.
    pub unsafe fn new(source: Source, ptr: *const u8, offset: u32, len: u32) -> Segment {
        assert!(len > 0, "empty segment");
        Segment { source, ptr, offset, len }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: guaranteed by the contract of `Segment::new`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len as usize) }
    }

    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[derive(Default)]
pub struct Stream {
    segments: VecDeque<Segment>,
    /// The memory of `Heap` segments, in stream order: boxes turned into
    /// raw pointers (`Box::into_raw`), so that moving them never
    /// invalidates the segments' pointers into them; freed on release or
    /// drop.
    heap: VecDeque<std::ptr::NonNull<[u8]>>,
    /// Bytes of the front segment already consumed.
    front_consumed: u32,
    len: usize,
    scratch: Vec<u8>,
}

// SAFETY: the raw pointers refer to pool or loop-owned memory that the
// stream holds references on; a stream is used by one thread at a time.
unsafe impl Send for Stream {}

impl Drop for Stream {
    fn drop(&mut self) {
        for memory in self.heap.drain(..) {
            // SAFETY: from `Box::leak` in `coalesce`; the stream and its
            // segments go now.
            drop(unsafe { Box::from_raw(memory.as_ptr()) });
        }
    }
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    pub fn push(&mut self, segment: Segment) {
        self.len += segment.len as usize;
        self.segments.push_back(segment);
    }

    /// Unconsumed bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Segments held (for accounting).
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The unconsumed bytes of the front segment, without copying.
    #[inline]
    pub fn front(&self) -> &[u8] {
        match self.segments.front() {
            Some(front) => {
                let bytes = &front.bytes()[self.front_consumed as usize..];
                // SAFETY: re-borrow with the stream's lifetime; see `Segment::new`.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) }
            }
            None => &[],
        }
    }

    /// Up to `max` leading bytes, contiguous: borrowed from the front
    /// segment when it holds them all, otherwise gathered into a scratch
    /// buffer (bounded by `max`, the request-head limit).
    pub fn prefix(&mut self, max: usize) -> &[u8] {
        let want = max.min(self.len);
        let Some(front) = self.segments.front() else { return &[] };
        let front_bytes = &front.bytes()[self.front_consumed as usize..];
        if front_bytes.len() >= want {
            // SAFETY: re-borrow with the stream's lifetime; see `Segment::new`.
            return unsafe { std::slice::from_raw_parts(front_bytes.as_ptr(), want) };
        }
        self.scratch.clear();
        let mut skip = self.front_consumed as usize;
        for segment in &self.segments {
            let bytes = &segment.bytes()[skip..];
            skip = 0;
            let take = bytes.len().min(want - self.scratch.len());
            self.scratch.extend_from_slice(&bytes[..take]);
            if self.scratch.len() == want {
                break;
            }
        }
        &self.scratch
    }

    /// Calls `f` with the leading `n` bytes, slice by slice.
    #[inline]
    pub fn for_each_slice(&self, n: usize, mut f: impl FnMut(&[u8])) {
        assert!(n <= self.len, "asked for {n} of {} bytes", self.len);
        // Most reads lie in the front segment: one call, no walk.
        let front = self.front();
        if front.len() >= n {
            f(&front[..n]);
            return;
        }
        let mut left = n;
        let mut skip = self.front_consumed as usize;
        for segment in &self.segments {
            if left == 0 {
                break;
            }
            let bytes = &segment.bytes()[skip..];
            skip = 0;
            let take = bytes.len().min(left);
            f(&bytes[..take]);
            left -= take;
        }
    }

    /// Appends the pool extents of the leading `n` bytes to `out`; false
    /// (and `out` unchanged) if any of them is not in a pool buffer.
    pub fn pool_extents(&self, n: usize, out: &mut Vec<Extent>) -> bool {
        assert!(n <= self.len);
        let start = out.len();
        let mut left = n;
        let mut skip = self.front_consumed;
        for segment in &self.segments {
            if left == 0 {
                break;
            }
            let Source::Pool(buffer) = segment.source else {
                out.truncate(start);
                return false;
            };
            let available = segment.len - skip;
            let take = available.min(left as u32);
            out.push(Extent::new(buffer, (segment.offset + skip) as usize, take as usize));
            left -= take as usize;
            skip = 0;
        }
        true
    }

    /// Keeps the leading `n` bytes as part of a value, appending extents to
    /// `extents`: the received buffers themselves when `zero_copy` and they
    /// are pool buffers (one new reference on each), else a copy packed
    /// into pool buffers (`Buffers::copy_packed`, with `fill`). Returns
    /// whether they were kept zero copy; on a full pool the error, with the
    /// extents added so far left for the caller to release. Nothing is
    /// consumed.
    pub fn keep(
        &self,
        pool: &Pool,
        buffers: &mut Buffers,
        n: usize,
        zero_copy: bool,
        extents: &mut Vec<Extent>,
        fill: &mut Option<usize>,
    ) -> Result<bool, BufferError> {
        let start = extents.len();
        if zero_copy && self.pool_extents(n, extents) {
            for extent in &extents[start..] {
                buffers.retain(extent.buffer).expect("a received buffer takes another reference");
            }
            // A later copy must not pack into a received buffer.
            *fill = None;
            return Ok(true);
        }
        let mut result = Ok(());
        self.for_each_slice(n, |bytes| {
            if result.is_ok() {
                result = buffers.copy_packed(pool, extents, fill, bytes);
            }
        });
        result.map(|()| false)
    }

    /// Drops the leading `n` bytes; each segment fully consumed is passed
    /// to `release`, which must give its buffer back.
    #[inline]
    pub fn consume(&mut self, mut n: usize, mut release: impl FnMut(Segment)) {
        assert!(n <= self.len, "consuming {n} of {} bytes", self.len);
        self.len -= n;
        // Within the front segment (most of a parse's steps): one add.
        if let Some(front) = self.segments.front() {
            if n < (front.len - self.front_consumed) as usize {
                self.front_consumed += n as u32;
                return;
            }
        }
        while n > 0 {
            let front = *self.segments.front().expect("bytes left imply a segment");
            let available = (front.len - self.front_consumed) as usize;
            if n < available {
                self.front_consumed += n as u32;
                return;
            }
            n -= available;
            self.front_consumed = 0;
            let segment = self.segments.pop_front().expect("checked");
            self.release_one(segment, &mut release);
        }
    }

    /// Releases every segment (the connection is closing).
    pub fn clear(&mut self, mut release: impl FnMut(Segment)) {
        while let Some(segment) = self.segments.pop_front() {
            self.release_one(segment, &mut release);
        }
        self.front_consumed = 0;
        self.len = 0;
    }

    /// Copies the unconsumed bytes into one segment the stream owns and
    /// releases the segments they came from. For a stream of many small
    /// segments (a peer trickling bytes): bounds the receive buffers and
    /// the segment list it pins, and lets a head be parsed without
    /// gathering. Values received from then on are copied, not kept in
    /// place: the bytes are no longer in the pool.
    pub fn coalesce(&mut self, mut release: impl FnMut(Segment)) {
        if self.segments.len() <= 1 {
            return;
        }
        let mut bytes = Vec::with_capacity(self.len);
        self.for_each_slice(self.len, |slice| bytes.extend_from_slice(slice));
        let len = self.len;
        self.clear(&mut release);
        let memory = std::ptr::NonNull::from(Box::leak(bytes.into_boxed_slice()));
        // SAFETY: the memory stays allocated, and unwritten, until this
        // segment is released (`release_one` frees it).
        let segment = unsafe { Segment::new(Source::Heap, memory.as_ptr() as *const u8, 0, len as u32) };
        self.heap.push_back(memory);
        self.push(segment);
    }

    fn release_one(&mut self, segment: Segment, release: &mut impl FnMut(Segment)) {
        if segment.source == Source::Heap {
            let memory = self.heap.pop_front().expect("a heap segment owns memory");
            assert_eq!(memory.as_ptr() as *const u8, segment.ptr, "heap segments are released in order");
            // SAFETY: from `Box::leak` in `coalesce`; its only segment is
            // released now, so nothing points into it any more.
            drop(unsafe { Box::from_raw(memory.as_ptr()) });
        } else {
            release(segment);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream_of(chunks: &[&'static [u8]]) -> Stream {
        let mut stream = Stream::new();
        for (i, chunk) in chunks.iter().enumerate() {
            // SAFETY: static data, never written.
            stream.push(unsafe { Segment::new(Source::Pool(i as u32), chunk.as_ptr(), 10, chunk.len() as u32) });
        }
        stream
    }

    #[test]
    fn prefix_gathers_across_segments() {
        let mut stream = stream_of(&[b"GET / H", b"TTP/1.1\r\n", b"\r\nrest"]);
        assert_eq!(stream.prefix(100), b"GET / HTTP/1.1\r\n\r\nrest");
        assert_eq!(stream.prefix(3), b"GET");
        let mut released = Vec::new();
        stream.consume(8, |s| released.push(s.source));
        assert_eq!(released, vec![Source::Pool(0)]);
        assert_eq!(stream.prefix(4), b"TP/1");
        assert_eq!(stream.len(), 22 - 8);
    }

    #[test]
    fn extents_follow_offsets() {
        let mut stream = stream_of(&[b"abcdef", b"ghij"]);
        stream.consume(2, |_| panic!("nothing fully consumed"));
        let mut extents = Vec::new();
        assert!(stream.pool_extents(6, &mut extents));
        assert_eq!(extents, vec![Extent::new(0, 12, 4), Extent::new(1, 10, 2)]);
        let mut all = Vec::new();
        stream.for_each_slice(6, |s| all.extend_from_slice(s));
        assert_eq!(all, b"cdefgh");
    }

    #[test]
    fn private_segments_have_no_extents() {
        let mut stream = Stream::new();
        // SAFETY: static data.
        stream.push(unsafe { Segment::new(Source::Private(3), b"xyz".as_ptr(), 0, 3) });
        let mut extents = vec![Extent::new(9, 0, 1)];
        assert!(!stream.pool_extents(2, &mut extents));
        assert_eq!(extents.len(), 1);
        let mut released = 0;
        stream.clear(|_| released += 1);
        assert_eq!((released, stream.len()), (1, 0));
    }

    #[test]
    fn coalesce_owns_the_bytes_and_releases_the_segments() {
        let mut stream = Stream::new();
        let text: &'static [u8] = b"GET /kv/slow HTTP/1.1\r\n\r\n";
        for (i, byte) in text.iter().enumerate() {
            // SAFETY: static bytes.
            stream.push(unsafe { Segment::new(Source::Private(i as u32), byte, 0, 1) });
        }
        stream.consume(4, |_| {});
        let mut released = Vec::new();
        stream.coalesce(|segment| released.push(segment.source));
        assert_eq!(released.len(), text.len() - 4, "every remaining segment is released");
        assert_eq!(stream.segment_count(), 1);
        assert_eq!(stream.front(), &text[4..]);
        // More arrives; coalescing again folds the heap segment in.
        // SAFETY: static bytes.
        stream.push(unsafe { Segment::new(Source::Private(99), b"xy".as_ptr(), 0, 2) });
        released.clear();
        stream.coalesce(|segment| released.push(segment.source));
        assert_eq!(released, vec![Source::Private(99)], "a heap segment is the stream's own to release");
        let mut all = Vec::new();
        stream.for_each_slice(stream.len(), |bytes| all.extend_from_slice(bytes));
        assert_eq!(all, [&text[4..], b"xy"].concat());
        stream.consume(stream.len(), |segment| panic!("released {segment:?} to the caller"));
        assert!(stream.heap.is_empty() && stream.is_empty());
    }
}
