//! The log (PASTE's Plog): records naming extents of retained buffers, in a
//! ring inside the pool's log region, committed in batches.
//!
//! # The commit path, step by step
//!
//! 1. `append`: the caller's data is already in pool buffers (received
//!    there, or written and declared). The log takes a reference on each
//!    buffer, computes the data CRC and writes the record at the tail,
//!    flushed as it is written (whole lines, streamed in the cache-line
//!    domain: `Pool::write_lines_flushed`). The data's lines are *flushed
//!    at step 3*, each line once, not at once as the paper's appendix A.2
//!    does: small values received together share lines, and a flush evicts
//!    the line on CPUs whose clwb does (AMD Zen), so flushing at once made
//!    the next command's parse and the tree's copy of the value miss. Only
//!    the fence makes a flush count, so the order of durability is the
//!    same.
//! 2. `release`: writes the record's 8-byte release mark (atomic) and
//!    flushes it; unless the record is the head (the oldest live record),
//!    which the head then moves past: step 3's anchor, under the same
//!    fence, says it is dead (a checkpoint releases its records oldest
//!    first, so it writes no mark at all). Its buffers are not freed yet.
//! 3. `commit`: flushes the batch's data (step 1); if the head moved or
//!    the batch appended anything, writes the
//!    anchor's `head_lsn` and `committed_lsn` (the end of the *previous*
//!    commit, which is already durable) and flushes the anchor's line.
//! 4. `commit`: one fence (sfence, or fdatasync/msync). Only now is the
//!    batch durable; the caller may acknowledge it.
//! 5. `commit`: the buffers of records released in the batch lose their
//!    references, and log space behind the new head becomes reusable.
//!
//! # Why one fence suffices
//!
//! A record is valid only if its lsn matches its position, both CRCs match
//! and its release mark is zero or exactly `lsn ^ RELEASE_MAGIC`. If power
//! fails before step 4, any subset of the batch's lines may have reached
//! the media, torn at 8-byte words: a record whose own lines or whose
//! data's lines are incomplete fails its CRCs. Recovery stops at the first
//! invalid record, which is always in the last, unacknowledged batch.
//!
//! # Recovery (`Log::recover`), referring to the steps
//!
//! | scan finds at lsn L                         | meaning               | action                         |
//! |---------------------------------------------|-----------------------|--------------------------------|
//! | valid record, release mark zero             | live                  | keep; reference its buffers    |
//! | valid record, release mark = L ^ magic      | released (step 2)     | skip                           |
//! | (before the anchor's head: never scanned)   | released as the head  | (step 2 without a mark)        |
//! | padding record                              | end of a lap          | skip to the next lap           |
//! | invalid, L >= anchor.committed_lsn          | torn batch (before 4) | end of log                     |
//! | invalid, L < anchor.committed_lsn           | corruption            | error, no repair               |
//! | past the end, valid, commit_lsn > end       | corruption            | error, no repair               |
//! | past the end, any header whose lsn fits     | torn batch remnant    | erase, so it never resurfaces  |
//!
//! The scan starts at the anchor's head and stops at the end, so it costs
//! the size of the live log (plus at most `LOG_BATCH_SIZE_MAX` of lookahead
//! past the end), not the size of the pool. What recovery found is then made
//! durable (records of the last batch re-flushed, fence, anchor, fence),
//! because after a process crash the page cache may hold records that never
//! reached the disk, and the next commit would otherwise vouch for them.
//!
//! Invariants: the log never writes over a record at or after the durable
//! head; a buffer named by a live record keeps a reference (so the
//! allocator never hands it out); records are 64-byte aligned and never
//! straddle the end of the ring.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::LogError;
use crate::limits::{CACHE_LINE_SIZE, KEY_SIZE_MAX, LOG_BATCH_SIZE_MAX, RECORD_EXTENTS_MAX, RECORD_SIZE_MAX};
use crate::log::record::{
    self, Extent, RecordHeader, EXTENT_SIZE, HEADER_SIZE, KIND_PAD, OFF_RELEASE_MARK, RELEASE_MAGIC,
};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::pool::layout::get_u64;
pub use crate::pool::layout::{
    ANCHOR_MAGIC, ANCHOR_OFF_COMMITTED_LSN, ANCHOR_OFF_HEAD_LSN, ANCHOR_OFF_MAGIC, ANCHOR_SIZE,
};

#[derive(Clone, Copy, Debug)]
struct Slot {
    lsn: u64,
    len: u32,
    extent_count: u32,
    released: bool,
}

/// A scan's usual end: the next position holds no record of this lap.
pub const END_OF_WRITTEN: &str = "end of the written log";

/// What recovery found and how long it took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub head_lsn: u64,
    pub end_lsn: u64,
    pub anchor_committed_lsn: u64,
    pub live_records: u64,
    pub live_data_bytes: u64,
    pub released_records: u64,
    pub log_bytes_scanned: u64,
    /// Headers of the interrupted batch found past the end and erased (by
    /// `inspect`: found, left in place).
    pub torn_records_erased: u64,
    pub referenced_buffers: u64,
    /// Why the scan stopped where it did.
    pub end_reason: &'static str,
    pub duration: Duration,
}

impl RecoveryReport {
    /// Why the scan ended, in words that read as normal when it is.
    pub fn end_words(&self) -> String {
        match self.end_reason {
            "" | END_OF_WRITTEN => END_OF_WRITTEN.to_string(),
            reason => format!("a record that did not validate ({reason}): a batch cut short, never acknowledged"),
        }
    }
}

impl std::fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "recovered {} live records ({} data bytes, {} buffers referenced), skipped {} released, \
             scanned {} log bytes [{}, {}) up to {}, erased {} torn records, in {:.3} ms",
            self.live_records,
            self.live_data_bytes,
            self.referenced_buffers,
            self.released_records,
            self.log_bytes_scanned,
            self.head_lsn,
            self.end_lsn,
            self.end_words(),
            self.torn_records_erased,
            self.duration.as_secs_f64() * 1e3
        )
    }
}

/// What one commit made durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitSummary {
    pub records: u64,
    pub releases: u64,
    pub log_bytes: u64,
    pub fenced: bool,
}

/// A commit whose fence is in flight: what it will make durable.
#[derive(Debug)]
pub struct CommitTicket {
    /// Tickets finish in the order they began.
    sequence: u64,
    end: u64,
    head: u64,
    unref: Vec<u32>,
    summary: CommitSummary,
}

/// A live record, read back from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordView {
    pub lsn: u64,
    pub kind: u16,
    pub tag: u64,
    pub key: Vec<u8>,
    pub extents: Vec<Extent>,
    pub data_len: u64,
    /// The CRC-32C of the bytes the extents name.
    pub data_crc: u32,
}

impl RecordView {
    /// The view of a validated record's bytes.
    fn new(lsn: u64, bytes: &[u8], header: &RecordHeader) -> RecordView {
        RecordView {
            lsn,
            kind: header.kind,
            tag: header.tag,
            key: record::key(bytes, header).to_vec(),
            extents: record::extents(bytes, header).collect(),
            data_len: header.data_len,
            data_crc: header.data_crc,
        }
    }
}

/// Space accounting of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogUsage {
    pub ring_size: u64,
    pub head_lsn: u64,
    pub tail_lsn: u64,
    pub durable_head_lsn: u64,
    pub live_records: u64,
    pub live_data_bytes: u64,
    /// Bytes an append may still use (before padding).
    pub free_bytes: u64,
}

pub struct Log {
    anchor_offset: u64,
    ring_offset: u64,
    ring_size: u64,
    buffer_size: u32,
    buffer_count: u32,
    /// The oldest record not released (or the tail).
    head: u64,
    /// The head as the anchor durably says: space before it is reusable.
    durable_head: u64,
    tail: u64,
    /// The end of the last commit: everything before it is durable.
    durable_end: u64,
    /// What the anchor says (or will, after the next fence) of `durable_end`.
    anchor_committed: u64,
    slots: VecDeque<Slot>,
    unref_at_commit: Vec<u32>,
    releases_in_batch: u64,
    records_in_batch: u64,
    live_records: u64,
    live_data_bytes: u64,
    poisoned: bool,
    read_only: bool,
    /// Where the batch not yet covered by a commit begins.
    batch_start: u64,
    /// Commits begun and finished: those in between are in flight, and
    /// finish in the order they began.
    commits_begun: u64,
    commits_finished: u64,
    scratch: Vec<u8>,
    /// Data ranges `[start, end)` (pool offsets, whole lines) of the
    /// records appended since the last commit began, not yet flushed.
    unflushed_data: Vec<(u64, u64)>,
    /// The `data_crc` of the last record appended: a caller that keeps the
    /// record's bytes elsewhere too (the tree's value) keeps its CRC with
    /// them instead of computing it again.
    last_data_crc: u32,
}

impl Log {
    /// Opens the pool's log: scans it from the anchor's head, rebuilds the
    /// tail and the references it holds on buffers (added to `buffers`,
    /// which must be fresh), and makes what it found durable.
    pub fn recover(pool: &Pool, buffers: &mut Buffers) -> Result<(Log, RecoveryReport), LogError> {
        Self::open(pool, 0, buffers, false)
    }

    /// Recovers log `index` of a pool with several (one per event loop);
    /// `buffers` must be that log's share (`Geometry::buffer_range`).
    pub fn recover_log(pool: &Pool, index: u32, buffers: &mut Buffers) -> Result<(Log, RecoveryReport), LogError> {
        Self::open(pool, index, buffers, false)
    }

    /// Scans and checks log `index` as `recover` does, but writes nothing:
    /// for `inspect`. The log it returns refuses appends, releases, commits.
    pub fn inspect(pool: &Pool, index: u32, buffers: &mut Buffers) -> Result<(Log, RecoveryReport), LogError> {
        Self::open(pool, index, buffers, true)
    }

    fn open(
        pool: &Pool,
        index: u32,
        buffers: &mut Buffers,
        read_only: bool,
    ) -> Result<(Log, RecoveryReport), LogError> {
        let start = Instant::now();
        let geometry = pool.geometry();
        let (first, count) = geometry.buffer_range(index);
        assert_eq!(buffers.owned(), first..first + count, "the buffers of log {index}");
        assert_eq!(buffers.free_count(), count, "recovery needs fresh buffers");
        let anchor_offset = geometry.log_region_offset(index);
        let (ring_offset, ring_size) = geometry.log_ring(index);
        let mut anchor = [0u8; ANCHOR_SIZE as usize];
        pool.read(anchor_offset, &mut anchor);
        if get_u64(&anchor, ANCHOR_OFF_MAGIC as usize) != ANCHOR_MAGIC {
            return Err(LogError::Corrupt { lsn: 0, reason: "the log anchor has a bad magic".into() });
        }
        let head = get_u64(&anchor, ANCHOR_OFF_HEAD_LSN as usize);
        let committed = get_u64(&anchor, ANCHOR_OFF_COMMITTED_LSN as usize);
        if head % 64 != 0 || committed % 64 != 0 {
            return Err(LogError::Corrupt {
                lsn: head,
                reason: format!("unaligned anchor (head {head}, committed {committed})"),
            });
        }
        let mut log = Log {
            anchor_offset,
            ring_offset,
            ring_size,
            buffer_size: geometry.buffer_size,
            buffer_count: geometry.buffer_count,
            head,
            durable_head: head,
            tail: head,
            durable_end: head,
            anchor_committed: committed,
            slots: VecDeque::new(),
            unref_at_commit: Vec::new(),
            releases_in_batch: 0,
            records_in_batch: 0,
            last_data_crc: 0,
            live_records: 0,
            live_data_bytes: 0,
            poisoned: false,
            read_only,
            batch_start: head,
            commits_begun: 0,
            commits_finished: 0,
            scratch: Vec::with_capacity(RECORD_SIZE_MAX),
            unflushed_data: Vec::new(),
        };
        let mut report = RecoveryReport { head_lsn: head, anchor_committed_lsn: committed, ..Default::default() };
        log.scan(pool, buffers, &mut report)?;
        let end = log.tail;
        if end < committed {
            return Err(LogError::Corrupt {
                lsn: end,
                reason: format!(
                    "invalid record ({}), but the log was committed up to lsn {committed}",
                    report.end_reason
                ),
            });
        }
        report.torn_records_erased = log.erase_past_end(pool, !read_only)?;
        if !read_only {
            log.make_recovered_durable(pool, head, committed)?;
        }
        report.end_lsn = end;
        report.live_records = log.live_records;
        report.live_data_bytes = log.live_data_bytes;
        report.log_bytes_scanned = end - head;
        report.referenced_buffers = u64::from(buffers.count() - buffers.free_count());
        report.duration = start.elapsed();
        Ok((log, report))
    }

    fn position(&self, lsn: u64) -> u64 {
        self.ring_offset + lsn % self.ring_size
    }

    /// Reads and fully validates the record at `lsn` into `self.scratch`:
    /// header, lsn, length within the lap, header CRC. Data is not checked.
    fn read_record(&mut self, pool: &Pool, lsn: u64) -> Result<RecordHeader, &'static str> {
        let room = self.ring_size - lsn % self.ring_size;
        let mut line = [0u8; HEADER_SIZE];
        pool.read(self.position(lsn), &mut line);
        let header = record::decode_header(&line)?;
        if header.lsn != lsn {
            return Err("lsn does not match the position");
        }
        if u64::from(header.record_len) > room {
            return Err("record runs past the end of the ring");
        }
        self.scratch.resize(record::checked_len(&header), 0);
        pool.read(self.position(lsn), &mut self.scratch);
        if record::header_crc(&self.scratch) != header.header_crc {
            return Err("header checksum mismatch");
        }
        Ok(header)
    }

    fn scan(&mut self, pool: &Pool, buffers: &mut Buffers, report: &mut RecoveryReport) -> Result<(), LogError> {
        let mut lsn = self.head;
        while lsn - self.head < self.ring_size {
            let header = match self.read_record(pool, lsn) {
                Ok(header) => header,
                Err(reason) => {
                    let mut line = [0u8; HEADER_SIZE];
                    pool.read(self.position(lsn), &mut line);
                    // Zeros, or a record of an earlier lap: the usual end.
                    let earlier_lap = record::decode_header(&line).is_ok_and(|h| h.lsn < lsn);
                    report.end_reason =
                        if line.iter().all(|&b| b == 0) || earlier_lap { END_OF_WRITTEN } else { reason };
                    break;
                }
            };
            let released = header.kind == KIND_PAD || header.release_mark == lsn ^ RELEASE_MAGIC;
            if !released && header.release_mark != 0 {
                report.end_reason = "release mark is neither zero nor this record's";
                break;
            }
            let slot = Slot { lsn, len: header.record_len, extent_count: header.extent_count, released };
            if released {
                report.released_records += u64::from(header.kind != KIND_PAD);
            } else {
                let extents: Vec<Extent> = record::extents(&self.scratch, &header).collect();
                if !self.data_is_intact(pool, &header, &extents) {
                    report.end_reason = "data checksum mismatch";
                    break;
                }
                for extent in &extents {
                    buffers.retain(extent.buffer).map_err(|error| LogError::Corrupt {
                        lsn,
                        reason: format!("record names buffer {}: {error}", extent.buffer),
                    })?;
                }
                self.live_records += 1;
                self.live_data_bytes += header.data_len;
            }
            self.slots.push_back(slot);
            lsn += u64::from(header.record_len);
        }
        self.tail = lsn;
        self.durable_end = lsn;
        self.batch_start = lsn;
        self.advance_head();
        self.durable_head = self.head;
        Ok(())
    }

    fn data_is_intact(&self, pool: &Pool, header: &RecordHeader, extents: &[Extent]) -> bool {
        if extents.iter().any(|e| e.check(self.buffer_count, self.buffer_size).is_err()) {
            return false;
        }
        let length: u64 = extents.iter().map(|e| u64::from(e.len)).sum();
        length == header.data_len && data_crc(pool, extents) == header.data_crc
    }

    /// Looks past the end for headers of the interrupted batch: one whose
    /// commit lsn says the end was committed proves corruption; the others
    /// are erased so that a later crash cannot bring them back.
    fn erase_past_end(&mut self, pool: &Pool, erase: bool) -> Result<u64, LogError> {
        let end = self.tail;
        let limit = (end + LOG_BATCH_SIZE_MAX).min(self.durable_head + self.ring_size);
        let mut erased = 0;
        let mut lsn = end;
        while lsn < limit {
            let mut line = [0u8; HEADER_SIZE];
            let at = self.position(lsn);
            pool.read(at, &mut line);
            if let Ok(header) = record::decode_header(&line) {
                if header.lsn == lsn {
                    if self.read_record(pool, lsn).is_ok() && header.commit_lsn > end {
                        return Err(LogError::Corrupt {
                            lsn: end,
                            reason: format!("invalid record, but the record at lsn {lsn} says it was committed"),
                        });
                    }
                    erased += 1;
                }
            }
            // Every header of this lap past the end, valid or torn: a torn
            // header whose first word is bad still holds the other words
            // of its record (this lsn, its key, its CRC), and a torn write
            // of a later record at this lsn (the same kind and length, so
            // the same first word) could supply that word and bring the
            // record back whole, though it was never acknowledged and this
            // recovery dropped it (the store's long crash test found one:
            // a DEL of cycle 1 replayed in cycle 2). A line whose lsn word
            // is this lsn was written in this lap; others (older laps,
            // released records a later scan may read again) stay.
            // Zeroed, its words are gone for good.
            let this_lap = get_u64(&line, record::OFF_LSN) == lsn;
            if erase && this_lap && line.iter().any(|&b| b != 0) {
                pool.write(at, &[0u8; HEADER_SIZE]);
                pool.flush(at, HEADER_SIZE as u64);
            }
            lsn += 64;
        }
        Ok(erased)
    }

    /// Makes everything recovery accepted durable, then records it in the
    /// anchor (two fences: the anchor must not vouch for records first).
    /// Records before `committed` were fenced by an earlier commit; those
    /// after it (the last batches) may exist only in the page cache.
    ///
    /// Every log byte scanned, `[scan_from, end)`, is flushed, released
    /// records and their marks included: the new anchor's `committed_lsn`
    /// vouches for all of them, and its `head_lsn` (a separate word) may not
    /// reach the media, so a later scan may start at `scan_from` again.
    fn make_recovered_durable(&mut self, pool: &Pool, scan_from: u64, committed: u64) -> Result<(), LogError> {
        let end = self.tail;
        let mut lsn = scan_from;
        while lsn < end {
            let room = self.ring_size - lsn % self.ring_size;
            let len = room.min(end - lsn);
            pool.flush(self.position(lsn), len);
            lsn += len;
        }
        let uncertain: Vec<Slot> =
            self.slots.iter().filter(|s| !s.released && s.lsn + u64::from(s.len) > committed).copied().collect();
        for slot in uncertain {
            if slot.extent_count > 0 {
                for extent in self.view_slot(pool, slot).extents {
                    pool.flush(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), u64::from(extent.len));
                }
            }
        }
        pool.fence().map_err(LogError::CommitFailed)?;
        self.write_anchor(pool, self.tail);
        pool.fence().map_err(LogError::CommitFailed)?;
        self.anchor_committed = self.tail;
        Ok(())
    }

    fn write_anchor(&mut self, pool: &Pool, committed: u64) {
        pool.store_u64(self.anchor_offset + ANCHOR_OFF_HEAD_LSN, self.head);
        pool.store_u64(self.anchor_offset + ANCHOR_OFF_COMMITTED_LSN, committed);
        pool.flush(self.anchor_offset, ANCHOR_SIZE);
    }

    fn advance_head(&mut self) {
        while self.slots.front().is_some_and(|s| s.released) {
            self.slots.pop_front();
        }
        self.head = self.slots.front().map_or(self.tail, |s| s.lsn);
    }

    /// The `data_crc` of the record the last successful `append` wrote.
    pub fn last_data_crc(&self) -> u32 {
        self.last_data_crc
    }

    /// Appends a record of application `kind` (1..) naming `extents`, whose
    /// bytes must already be in the pool; the caller holds a reference on
    /// each buffer. Returns the record's lsn. Durable after `commit`.
    pub fn append(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        kind: u16,
        tag: u64,
        key: &[u8],
        extents: &[Extent],
    ) -> Result<u64, LogError> {
        self.append_with_crc(pool, buffers, (kind, tag), key, extents, None)
    }

    /// `append` of bytes whose `data_crc` the caller has just computed
    /// (a replica checked a received record's CRC over them in place): it
    /// is not computed twice. Debug builds check it.
    pub fn append_with_crc(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        (kind, tag): (u16, u64),
        key: &[u8],
        extents: &[Extent],
        known_crc: Option<u32>,
    ) -> Result<u64, LogError> {
        self.check_writable()?;
        if kind == KIND_PAD {
            return Err(LogError::InvalidRecord("kind 0 is reserved".into()));
        }
        if key.len() > KEY_SIZE_MAX {
            return Err(LogError::InvalidRecord(format!("key of {} bytes exceeds {KEY_SIZE_MAX}", key.len())));
        }
        if extents.len() > RECORD_EXTENTS_MAX {
            return Err(LogError::InvalidRecord(format!("{} extents exceed {RECORD_EXTENTS_MAX}", extents.len())));
        }
        for extent in extents {
            extent.check(self.buffer_count, self.buffer_size).map_err(LogError::InvalidRecord)?;
            if !buffers.owned().contains(&extent.buffer) {
                return Err(LogError::InvalidRecord(format!("buffer {} belongs to another log", extent.buffer)));
            }
            if buffers.refs(extent.buffer) == 0 {
                return Err(LogError::InvalidRecord(format!("buffer {} is not held by the caller", extent.buffer)));
            }
        }
        let len = record::record_len(extents.len(), key.len()) as u64;
        let room = self.ring_size - self.tail % self.ring_size;
        let padding = if room < len { room } else { 0 };
        self.reserve(padding + len)?;
        for (retained, extent) in extents.iter().enumerate() {
            if let Err(error) = buffers.retain(extent.buffer) {
                for undo in &extents[..retained] {
                    buffers.release(undo.buffer).expect("just retained");
                }
                debug_assert!(matches!(error, crate::error::BufferError::TooManyRefs(_)));
                return Err(LogError::TooManyRefs { buffer: extent.buffer });
            }
        }
        if padding > 0 {
            self.write_padding(pool, padding);
        }
        let lsn = self.tail;
        let data_len: u64 = extents.iter().map(|e| u64::from(e.len)).sum();
        let data_crc = match known_crc {
            Some(crc) => {
                debug_assert_eq!(crc, data_crc(pool, extents), "a known CRC matches the bytes");
                crc
            }
            None => data_crc(pool, extents),
        };
        self.last_data_crc = data_crc;
        let mut scratch = std::mem::take(&mut self.scratch);
        record::encode(&mut scratch, kind, lsn, self.durable_end, tag, key, extents, data_len, data_crc);
        pool.write_lines_flushed(self.position(lsn), &scratch);
        self.scratch = scratch;
        for extent in extents {
            self.note_unflushed_data(pool.buffer_offset(extent.buffer) + u64::from(extent.offset), extent.len);
        }
        self.slots.push_back(Slot { lsn, len: len as u32, extent_count: extents.len() as u32, released: false });
        self.tail += len;
        self.records_in_batch += 1;
        self.live_records += 1;
        self.live_data_bytes += data_len;
        Ok(lsn)
    }

    /// Checks that `needed` bytes fit: behind the durable head, and within
    /// the batch limit.
    fn reserve(&self, needed: u64) -> Result<(), LogError> {
        let batch = self.tail + needed - self.durable_end;
        if batch > LOG_BATCH_SIZE_MAX {
            return Err(LogError::BatchFull { size: self.tail - self.durable_end, limit: LOG_BATCH_SIZE_MAX });
        }
        let free = self.ring_size - (self.tail - self.durable_head);
        if needed > free {
            return Err(LogError::LogFull { needed, free });
        }
        Ok(())
    }

    /// Remembers data to flush at the next commit, merged with the last
    /// range when they share or touch a line (values received together).
    fn note_unflushed_data(&mut self, offset: u64, len: u16) {
        if len == 0 {
            return;
        }
        let line = CACHE_LINE_SIZE as u64;
        let (start, end) = (offset / line * line, (offset + u64::from(len)).div_ceil(line) * line);
        match self.unflushed_data.last_mut() {
            Some(last) if start >= last.0 && start <= last.1 => last.1 = last.1.max(end),
            _ => self.unflushed_data.push((start, end)),
        }
    }

    /// Flushes the data of the records appended since the last commit
    /// began (step 1 defers it to step 3).
    fn flush_appended(&mut self, pool: &Pool) {
        for (start, end) in self.unflushed_data.drain(..) {
            pool.flush(start, end - start);
        }
    }

    fn write_padding(&mut self, pool: &Pool, len: u64) {
        let lsn = self.tail;
        let mut scratch = std::mem::take(&mut self.scratch);
        record::encode(&mut scratch, KIND_PAD, lsn, self.durable_end, 0, &[], &[], 0, 0);
        // The padding's length is the rest of the lap, not its encoded size.
        put_u32_record_len(&mut scratch, len as u32);
        let at = self.position(lsn);
        pool.write(at, &scratch);
        pool.flush(at, HEADER_SIZE as u64);
        self.scratch = scratch;
        self.slots.push_back(Slot { lsn, len: len as u32, extent_count: 0, released: true });
        self.tail += len;
    }

    /// Releases the live record at `lsn`: durable at the next commit, after
    /// which its buffers lose its references and its log space is reusable.
    pub fn release(&mut self, pool: &Pool, lsn: u64) -> Result<(), LogError> {
        self.check_writable()?;
        let index = self.slot_index(lsn).ok_or(LogError::NoSuchRecord(lsn))?;
        // Only the header and the extents: the key is not needed here, and
        // a checkpoint releases thousands of records in one turn.
        let start = self.position(lsn);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(HEADER_SIZE + self.slots[index].extent_count as usize * EXTENT_SIZE, 0);
        pool.read(start, &mut scratch);
        let header = record::decode_header(&scratch).expect("a record the log wrote");
        assert_eq!(header.extent_count, self.slots[index].extent_count, "record {lsn} changed under the log");
        self.unref_at_commit.extend(record::extents(&scratch, &header).map(|e| e.buffer));
        self.scratch = scratch;
        // The head record needs no mark: the head moves past it now, and
        // the anchor saying so is written at the next commit, under the
        // fence that would have covered the mark (a checkpoint releases its
        // records in order: one mark flush each was a tenth of a write's
        // CPU). Recovery replays an unmarked record the old head still
        // covers, as it must when a mark did not reach the media either.
        if index > 0 {
            let at = start + OFF_RELEASE_MARK as u64;
            pool.store_u64(at, lsn ^ RELEASE_MAGIC);
            pool.flush(at, 8);
        }
        self.slots[index].released = true;
        self.live_records -= 1;
        self.live_data_bytes -= header.data_len;
        self.releases_in_batch += 1;
        self.advance_head();
        Ok(())
    }

    fn slot_index(&self, lsn: u64) -> Option<usize> {
        let index = self.slots.binary_search_by_key(&lsn, |s| s.lsn).ok()?;
        (!self.slots[index].released).then_some(index)
    }

    /// Makes every append and release since the last commit durable with one
    /// fence (steps 3-5). After an error nothing more is accepted.
    pub fn commit(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<CommitSummary, LogError> {
        let Some(ticket) = self.begin_commit(pool)? else {
            return Ok(CommitSummary::default());
        };
        if let Err(error) = pool.fence() {
            self.fail_commit();
            return Err(LogError::CommitFailed(error));
        }
        Ok(self.finish_commit(ticket, buffers))
    }

    /// Step 3 of a commit whose fence the caller issues itself (an
    /// asynchronous fdatasync through io_uring): writes and flushes the
    /// anchor and returns what the fence will cover, or None when there is
    /// nothing to commit. Appends and releases may go on while the fence
    /// is in flight (they belong to the next commit), and further commits
    /// may begin; tickets must finish in the order they began. Call
    /// `finish_commit` once the fence succeeded, or `fail_commit` if not.
    pub fn begin_commit(&mut self, pool: &Pool) -> Result<Option<CommitTicket>, LogError> {
        self.check_writable()?;
        self.flush_appended(pool);
        let ticket = CommitTicket {
            sequence: self.commits_begun,
            end: self.tail,
            head: self.head,
            unref: std::mem::take(&mut self.unref_at_commit),
            summary: CommitSummary {
                records: self.records_in_batch,
                releases: self.releases_in_batch,
                log_bytes: self.tail - self.batch_start,
                fenced: true,
            },
        };
        if ticket.summary.records == 0 && ticket.summary.releases == 0 && ticket.summary.log_bytes == 0 {
            self.unref_at_commit = ticket.unref;
            return Ok(None);
        }
        if self.head != self.durable_head || self.anchor_committed != self.durable_end {
            self.write_anchor(pool, self.durable_end);
        }
        self.records_in_batch = 0;
        self.releases_in_batch = 0;
        // The next ticket covers only what comes after this one.
        self.batch_start = self.tail;
        self.commits_begun += 1;
        Ok(Some(ticket))
    }

    /// Steps 4-5 after the fence of `ticket` succeeded.
    pub fn finish_commit(&mut self, ticket: CommitTicket, buffers: &mut Buffers) -> CommitSummary {
        assert_eq!(ticket.sequence, self.commits_finished, "commits finish in the order they began");
        self.commits_finished += 1;
        self.anchor_committed = self.durable_end;
        self.durable_end = ticket.end;
        self.durable_head = ticket.head;
        for buffer in ticket.unref {
            buffers.release(buffer).expect("a released record's buffer was referenced");
        }
        ticket.summary
    }

    /// The fence of the ticket in flight failed: nothing after it may be
    /// acknowledged, and the log accepts nothing more.
    pub fn fail_commit(&mut self) {
        self.poisoned = true;
    }

    /// Makes every record appended so far durable now: their data's lines
    /// flushed, then one fence. No commit: the anchor and the batch's
    /// accounting are untouched, and the next commit covers these records
    /// again (a record whose bytes are durable is valid to recovery
    /// whether or not the anchor names it). For a transaction across
    /// shards, whose part must be durable before its shard answers anyone.
    pub fn persist_appended(&mut self, pool: &Pool) -> Result<(), LogError> {
        self.check_writable()?;
        self.flush_appended(pool);
        if let Err(error) = pool.fence() {
            self.poisoned = true;
            return Err(LogError::CommitFailed(error));
        }
        Ok(())
    }

    /// Vouches for the last commit in the anchor (one more fence), so that
    /// recovery treats nothing as a possibly torn batch: damage to the last
    /// record is then reported as corruption instead of being dropped as a
    /// torn write. For a clean shutdown, or an idle log.
    pub fn checkpoint(&mut self, pool: &Pool, buffers: &mut Buffers) -> Result<(), LogError> {
        self.commit(pool, buffers)?;
        if self.anchor_committed == self.durable_end && self.head == self.durable_head {
            return Ok(());
        }
        self.write_anchor(pool, self.durable_end);
        if let Err(error) = pool.fence() {
            self.poisoned = true;
            return Err(LogError::CommitFailed(error));
        }
        self.anchor_committed = self.durable_end;
        Ok(())
    }

    /// Reads the live record at `lsn`.
    pub fn view(&self, pool: &Pool, lsn: u64) -> Result<RecordView, LogError> {
        let index = self.slot_index(lsn).ok_or(LogError::NoSuchRecord(lsn))?;
        Ok(self.view_slot(pool, self.slots[index]))
    }

    /// Reads a record this log holds (live, or released and not reclaimed).
    fn view_slot(&self, pool: &Pool, slot: Slot) -> RecordView {
        let lsn = slot.lsn;
        let mut bytes = vec![0u8; slot.len as usize];
        pool.read(self.position(lsn), &mut bytes);
        let header = record::decode_header(&bytes).expect("a record the log wrote");
        RecordView::new(lsn, &bytes, &header)
    }

    /// The lsns of the live records, oldest first.
    pub fn live_lsns(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().filter(|s| !s.released).map(|s| s.lsn)
    }

    /// Copies the bytes a record's extents name, in order.
    pub fn read_data(&self, pool: &Pool, view: &RecordView) -> Vec<u8> {
        read_data(pool, view)
    }

    /// Bytes appended since the last commit began (at most
    /// `LOG_BATCH_SIZE_MAX`).
    pub fn batch_bytes(&self) -> u64 {
        self.tail - self.batch_start
    }

    pub fn usage(&self) -> LogUsage {
        LogUsage {
            ring_size: self.ring_size,
            head_lsn: self.head,
            tail_lsn: self.tail,
            durable_head_lsn: self.durable_head,
            live_records: self.live_records,
            live_data_bytes: self.live_data_bytes,
            free_bytes: self.ring_size - (self.tail - self.durable_head),
        }
    }

    fn check_writable(&self) -> Result<(), LogError> {
        if self.read_only {
            return Err(LogError::ReadOnly);
        }
        if self.poisoned {
            return Err(LogError::Poisoned);
        }
        Ok(())
    }

    /// True after a failed commit: the log accepts nothing more.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }
}

/// Copies the bytes a record's extents name, in order.
/// The CRC-32C of the bytes `extents` name, in order, read in place (a
/// record's `data_crc`). The caller holds a reference on each buffer, so
/// nothing stores into them meanwhile.
pub fn data_crc(pool: &Pool, extents: &[Extent]) -> u32 {
    extents.iter().fold(0, |crc, extent| {
        let offset = pool.buffer_offset(extent.buffer) + u64::from(extent.offset);
        // SAFETY: the buffer is referenced (by the caller in `append` and
        // `wire::land`, by nobody else during recovery) and nothing stores
        // into a referenced buffer while a record naming it is checked.
        let bytes = unsafe { pool.bytes(offset, extent.len as usize) };
        crate::util::crc::crc32c_append(crc, bytes)
    })
}

pub fn read_data(pool: &Pool, view: &RecordView) -> Vec<u8> {
    let mut data = Vec::with_capacity(view.data_len as usize);
    pool.read_extents(&view.extents, &mut data);
    data
}

/// Reads the record at `lsn` of log `index` without its `Log`: for another
/// event loop's published, immutable records. None if it does not
/// validate there (not a record of this lsn).
pub fn read_record_at(pool: &Pool, index: u32, lsn: u64) -> Option<RecordView> {
    let geometry = pool.geometry();
    let (ring_offset, ring_size) = geometry.log_ring(index);
    let at = ring_offset + lsn % ring_size;
    let mut line = [0u8; HEADER_SIZE];
    pool.read(at, &mut line);
    let header = record::decode_header(&line).ok()?;
    if header.lsn != lsn || u64::from(header.record_len) > ring_size - lsn % ring_size {
        return None;
    }
    let mut bytes = vec![0u8; record::checked_len(&header)];
    pool.read(at, &mut bytes);
    if record::header_crc(&bytes) != header.header_crc || header.kind == KIND_PAD {
        return None;
    }
    Some(RecordView::new(lsn, &bytes, &header))
}

/// What the first record of a log says, read without its `Log` and
/// without writing (`kind::infer`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogHead {
    /// No valid record at the head, which the anchor does not vouch for:
    /// recovery finds the log empty (its remnants, if any, never committed).
    Empty,
    /// A valid record (live or released) at the head, or just after the
    /// padding at the head.
    Record { lsn: u64, kind: u16, key_len: u16 },
    /// A bad anchor, or an invalid record the anchor says was committed.
    Damaged(String),
}

/// The first record of log `index`: the one at the anchor's head, or after
/// the padding there. Reads the anchor and at most two records.
pub fn head_of(pool: &Pool, index: u32) -> LogHead {
    let geometry = pool.geometry();
    let anchor_offset = geometry.log_region_offset(index);
    let (ring_offset, ring_size) = geometry.log_ring(index);
    let mut anchor = [0u8; ANCHOR_SIZE as usize];
    pool.read(anchor_offset, &mut anchor);
    if get_u64(&anchor, ANCHOR_OFF_MAGIC as usize) != ANCHOR_MAGIC {
        return LogHead::Damaged("the log anchor has a bad magic".into());
    }
    let mut lsn = get_u64(&anchor, ANCHOR_OFF_HEAD_LSN as usize);
    let committed = get_u64(&anchor, ANCHOR_OFF_COMMITTED_LSN as usize);
    // At most one padding record precedes the first record: it fills the
    // rest of a lap, and the next lap starts with a record or nothing.
    for _ in 0..2 {
        if let Some(view) = read_record_at(pool, index, lsn) {
            return LogHead::Record { lsn, kind: view.kind, key_len: view.key.len() as u16 };
        }
        let mut line = [0u8; HEADER_SIZE];
        pool.read(ring_offset + lsn % ring_size, &mut line);
        match record::decode_header(&line) {
            Ok(pad) if pad.kind == KIND_PAD && pad.lsn == lsn && record::header_crc(&line) == pad.header_crc => {
                lsn += u64::from(pad.record_len);
            }
            _ if lsn < committed => {
                return LogHead::Damaged(format!("no valid record at lsn {lsn}, which the log committed"));
            }
            _ => return LogHead::Empty,
        }
    }
    LogHead::Damaged(format!("padding follows padding at lsn {lsn}"))
}

fn put_u32_record_len(record: &mut [u8], len: u32) {
    crate::pool::layout::put_u32(record, record::OFF_RECORD_LEN, len);
    let crc = record::header_crc(record);
    crate::pool::layout::put_u32(record, record::OFF_HEADER_CRC, crc);
}
