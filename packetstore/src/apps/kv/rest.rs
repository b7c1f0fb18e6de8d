//! The key-value server over HTTP (PASTE's pKVS): `PUT`, `GET`, `HEAD` and
//! `DELETE /kv/<key>`, plus `GET /metrics`, guarded by `--requirepass`.
//!
//! Invariant: a PUT's body is received into pool buffers and stored where
//! it landed (or copied when small); a refused body (unauthorized,
//! oversized, a full pool) is never stored, and every buffer reference it
//! took is given back.

use crate::apps::kv::state::{Ctx, HttpBody, KvConn, KvServer, PanicPoint, HTTP, OTHER, READ, WRITE};
use crate::index::node::Value;
use crate::index::tree::value_extents;
use crate::io::app::{Persist, Progress, Release};
use crate::io::outq::OutQueue;
use crate::io::stream::Stream;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::http::{self, HeadError, Method};
use crate::store::db::{now_ms, value_len, Op, Store, StoreError, KEY_SIZE_MAX};
use crate::store::keyspace::string_key;

/// `%xx` escapes decoded; None if an escape is malformed.
pub fn percent_decode(text: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' {
            // Exactly two hex digits (from_str_radix alone would also take
            // a sign: "%+1").
            let digit = |at: usize| (*text.get(at)? as char).to_digit(16);
            out.push((digit(i + 1)? << 4 | digit(i + 2)?) as u8);
            i += 3;
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    Some(out)
}

/// How a response is written: whether it asks to keep the connection open,
/// and whether it goes back on a shard link, framed as a RESP bulk string
/// (`http_relay.rs`).
#[derive(Clone, Copy)]
pub(super) struct HttpReply {
    pub(super) keep_alive: bool,
    pub(super) framed: bool,
}

impl HttpReply {
    /// Appends a complete response with `body`.
    pub(super) fn respond(self, out: &mut Vec<u8>, status: u16, headers: &[(&str, u64)], body: &[u8]) {
        if !self.framed {
            return http::respond(out, status, headers, body, self.keep_alive);
        }
        let mut response = Vec::new();
        http::respond(&mut response, status, headers, body, self.keep_alive);
        bulk_header(out, response.len() as u64);
        out.extend_from_slice(&response);
        out.extend_from_slice(b"\r\n");
    }
}

impl HttpBody {
    /// The body of the request `head` for `key` (of `shard`, when another
    /// shard's), before its first byte.
    fn arriving(key: Vec<u8>, head: &http::RequestHead, shard: Option<u16>) -> HttpBody {
        let len = head.content_length;
        let (extents, copy_fill, refused) = (Vec::new(), None, false);
        HttpBody { key, keep_alive: head.keep_alive, remaining: len, len, extents, copy_fill, refused, shard }
    }
}

/// A RESP bulk string's header for `len` bytes.
fn bulk_header(out: &mut Vec<u8>, len: u64) {
    out.push(b'$');
    http::push_decimal(out, len);
    out.extend_from_slice(b"\r\n");
}

/// A request for a path that names no key: whether the connection closes,
/// and whether it counts as kind "other" (not a read or write of a key).
pub(super) struct PathRefused {
    close: bool,
    other: bool,
}

impl KvServer {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn serve_http(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut progress = Progress::default();
        // A request relayed to another shard is answered first; the
        // connection's next request waits for it.
        if conn.awaiting > 0 {
            let delivered = self.deliver_http(conn, out);
            if conn.awaiting > 0 {
                return progress;
            }
            if delivered > 0 && conn.http_close {
                progress.close = true;
                return progress;
            }
        }
        while progress.requests < requests_max && !progress.close && !out.is_full() {
            // A bug that panics answers 500 and closes this connection; the
            // server serves on (`guard.rs`).
            let step = self.guarded(pool, buffers, out, |server, buffers, out| {
                server.http_step(pool, buffers, conn, stream, out, &mut progress, release)
            });
            match step {
                Ok(true) => {}
                Ok(false) => break,
                Err(what) => {
                    tracing::error!("an HTTP request failed on a bug, answered 500: {what}");
                    let text = format!("internal error: the request was not run ({what})\n");
                    http::respond(out.bytes(), 500, &[], text.as_bytes(), false);
                    progress.close = true;
                    break;
                }
            }
        }
        progress
    }

    /// One step of `serve_http`: a request (or a body's end) served.
    /// False: stop serving this connection for now.
    #[allow(clippy::too_many_arguments)]
    fn http_step(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        progress: &mut Progress,
        release: &mut Release<'_>,
    ) -> bool {
        // HTTP has no BUSY: a request waits for a paused script's end
        // (its writes would join the script's open group).
        if self.scripting.paused.is_some() {
            self.scripting.deferred_wakes.push(conn.token);
            return false;
        }
        if conn.http.is_some() {
            if !self.take_http_body(pool, buffers, conn, stream, release) {
                return false;
            }
            let body = conn.http.take().expect("checked");
            progress.requests += 1;
            if let Some(shard) = body.shard.filter(|_| !body.refused) {
                self.relay_put(pool, buffers, conn, shard, body);
                return false;
            }
            progress.close |= !body.keep_alive;
            self.finish_put(pool, buffers, body, out);
            return true;
        }
        if stream.is_empty() {
            return false;
        }
        if !self.store.batch_has_room() {
            progress.more = true;
            return false;
        }
        let head = match http::parse_head(stream.prefix(http::HEAD_SIZE_MAX), self.config.value_size_max) {
            Ok(head) => head,
            Err(HeadError::Incomplete) => return false,
            Err(HeadError::Refuse(status, why)) => {
                http::respond(out.bytes(), status, &[], why.as_bytes(), false);
                self.stats.errors += 1;
                progress.close = true;
                return false;
            }
        };
        let target = stream.prefix(http::HEAD_SIZE_MAX)[head.target.clone()].to_vec();
        let authorized = self.http_authorized(&target, &head, stream.prefix(http::HEAD_SIZE_MAX));
        stream.consume(head.head_len, |segment| release(segment, buffers));
        self.stats.http_requests += 1;
        progress.requests += 1;
        progress.close |= !head.keep_alive;
        let before = (self.stats.errors, self.stats.refused_full);
        let kind = match head.method {
            Method::Get | Method::Head => READ,
            Method::Put | Method::Post | Method::Delete => WRITE,
        };
        if !authorized {
            // A refused body is not read: the connection closes.
            let keep_alive = head.keep_alive && head.content_length == 0;
            http::respond_unauthorized(out.bytes(), keep_alive);
            progress.close |= !keep_alive;
            self.count_request(HTTP, kind, before, true);
            return true;
        }
        if target == b"/metrics" && head.method == Method::Get && head.content_length == 0 {
            let served_here = self.http_metrics(pool, buffers, conn, out, head.keep_alive);
            progress.close &= served_here;
            self.count_request(HTTP, OTHER, before, false);
            return served_here;
        }
        let (key, shard) = match self.http_key(&target, &head, out) {
            Ok(key) => key,
            Err(refused) => {
                progress.close |= refused.close;
                self.count_request(HTTP, if refused.other { OTHER } else { kind }, before, true);
                return true;
            }
        };
        let failed = match head.method {
            Method::Put | Method::Post => {
                conn.http = Some(HttpBody::arriving(key, &head, shard));
                // Counted when the body is in; a close waits for the
                // body and its reply.
                progress.requests -= 1;
                progress.close = false;
                return true;
            }
            Method::Get | Method::Head | Method::Delete if head.content_length == 0 && shard.is_some() => {
                self.relay_request(conn, shard.expect("checked"), &head, &key);
                // The connection closes, if asked to, after the reply.
                progress.close = false;
                self.count_request(HTTP, kind, before, false);
                return false;
            }
            Method::Get | Method::Head | Method::Delete if head.content_length == 0 => {
                let (now, db) = (now_ms(), self.store.physical_db(0));
                let mut ctx = Ctx { pool, buffers, conn, out, now, db, close: false, failed: false };
                let reply = HttpReply { keep_alive: head.keep_alive, framed: false };
                match head.method {
                    Method::Delete => self.http_delete(&mut ctx, &key, reply),
                    method => self.http_get(&mut ctx, &key, method == Method::Get, reply),
                }
            }
            _ => {
                http::respond(out.bytes(), 405, &[], b"use GET, HEAD, PUT, POST or DELETE\n", false);
                progress.close = true;
                true
            }
        };
        self.count_request(HTTP, kind, before, failed);
        true
    }

    /// GET /metrics: answered here (true), or, on a sharded server's main
    /// port, every shard's figures gathered as one server's (false: the
    /// connection waits for them, and closes, if asked to, after them).
    fn http_metrics(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        out: &mut OutQueue,
        keep_alive: bool,
    ) -> bool {
        if let Some(shards) = self.config.settings.cluster.as_ref().map(|view| view.shards).filter(|&n| n > 1) {
            self.relay_metrics(conn, shards, keep_alive);
            return false;
        }
        let text = self.metrics_text(pool, buffers);
        http::respond_typed(out.bytes(), 200, http::METRICS_CONTENT_TYPE, text.as_bytes(), keep_alive);
        true
    }

    /// The key a `/kv/<key>` target names, and the shard that owns it when
    /// not this one (the request is relayed there). Otherwise the refusal
    /// is sent: 414 for a key too long, 404 for another path.
    fn http_key(
        &self,
        target: &[u8],
        head: &http::RequestHead,
        out: &mut OutQueue,
    ) -> Result<(Vec<u8>, Option<u16>), PathRefused> {
        match target.strip_prefix(b"/kv/").map(percent_decode) {
            Some(Some(key)) if !key.is_empty() && key.len() <= KEY_SIZE_MAX => {
                let shard = self.other_shard(&key);
                Ok((key, shard))
            }
            Some(Some(key)) if key.len() > KEY_SIZE_MAX => {
                http::respond(out.bytes(), 414, &[], b"key too long\n", false);
                Err(PathRefused { close: true, other: false })
            }
            _ => {
                let why = b"no such path: use /kv/<key> or /metrics\n";
                if head.content_length > 0 {
                    http::respond(out.bytes(), 404, &[], why, false);
                    Err(PathRefused { close: true, other: true })
                } else {
                    http::respond(out.bytes(), 404, &[], why, head.keep_alive);
                    Err(PathRefused { close: false, other: true })
                }
            }
        }
    }

    /// The shard that owns `key`, if another shard does.
    fn other_shard(&self, key: &[u8]) -> Option<u16> {
        use crate::apps::kv::cluster::{key_slot, owner};
        let view = self.config.settings.cluster.as_ref().filter(|view| view.shards > 1)?;
        let shard = owner(key_slot(key), view.shards);
        (shard != view.shard).then_some(shard)
    }

    /// Why this node's tree may not be read here (an HTTP request served
    /// on a follower): a snapshot or repair loading (the tree is part old,
    /// part new), or writes the group has not committed yet. Redis-protocol
    /// commands get LOADING and TRYAGAIN for the same (`dispatch.rs`).
    fn tree_unreadable(&self) -> Option<&'static str> {
        let replica = self.replica.as_ref()?;
        if replica.is_loading() {
            return Some("LOADING this node is loading a snapshot from the group's leader\n");
        }
        (!replica.is_leader() && replica.tree_index() > replica.commit_index())
            .then_some("TRYAGAIN this node holds writes the group has not committed: try again\n")
    }

    /// `GET` (`body`) or `HEAD /kv/<key>`: the value (from the pool
    /// buffers holding it when large), 404, or 500. True if it failed.
    pub(super) fn http_get(&mut self, ctx: &mut Ctx<'_>, key: &[u8], body: bool, reply: HttpReply) -> bool {
        if let Some(why) = self.tree_unreadable() {
            reply.respond(ctx.out.bytes(), 503, &[], why.as_bytes());
            return true;
        }
        self.stats.reads += 1;
        match self.store.get(ctx.pool, ctx.db, key, ctx.now) {
            Ok(Some(value)) => match self.reply_http_value(ctx, &value, body, reply) {
                Ok(()) => false,
                Err(error) => {
                    reply.respond(ctx.out.bytes(), 500, &[], error.to_string().as_bytes());
                    true
                }
            },
            Ok(None) => {
                reply.respond(ctx.out.bytes(), 404, &[], b"");
                false
            }
            Err(error) => {
                reply.respond(ctx.out.bytes(), 500, &[], error.to_string().as_bytes());
                true
            }
        }
    }

    /// `DELETE /kv/<key>`: 204 once durable, 404, or 500. True if it failed.
    pub(super) fn http_delete(&mut self, ctx: &mut Ctx<'_>, key: &[u8], reply: HttpReply) -> bool {
        if let Some(why) = self.tree_unreadable() {
            reply.respond(ctx.out.bytes(), 503, &[], why.as_bytes());
            return true;
        }
        let mut ops = Vec::new();
        let live = self.store.key_type(ctx.pool, ctx.db, key, ctx.now).map(|t| t.is_some());
        let result = live.and_then(|live| {
            self.delete_ops(ctx.pool, ctx.buffers, ctx.db, key, &mut ops)?;
            self.apply(ctx, &ops)?;
            Ok(live)
        });
        if let Ok(true) = result {
            self.http_wrote(ctx.pool, key);
        }
        let out = ctx.out.bytes();
        match result {
            Ok(true) => reply.respond(out, 204, &[], b""),
            Ok(false) => reply.respond(out, 404, &[], b""),
            Err(StoreError::ReadOnly) => {
                self.stats.errors += 1;
                let text = self.not_leader_text();
                reply.respond(out, 503, &[("Retry-After", 1)], text.as_bytes());
                return true;
            }
            Err(error) => {
                reply.respond(out, 500, &[], error.to_string().as_bytes());
                return true;
            }
        }
        false
    }

    /// Whether an HTTP request may proceed: no password is set, it is for
    /// /metrics left public (`--metrics-public`), or its `Authorization`
    /// carries the password.
    pub(super) fn http_authorized(&self, target: &[u8], head: &http::RequestHead, head_bytes: &[u8]) -> bool {
        if self.config.requirepass.is_none() || (target == b"/metrics" && self.config.metrics_public) {
            return true;
        }
        let password = head.authorization.clone().and_then(|range| http::authorization_password(&head_bytes[range]));
        password.is_some_and(|password| self.check_password(None, &password).is_ok())
    }

    /// A 200 with the value as its body (unless `body` is false: HEAD),
    /// from the pool or copied. On an error nothing is queued.
    fn reply_http_value(
        &mut self,
        ctx: &mut Ctx<'_>,
        value: &Value,
        body: bool,
        reply: HttpReply,
    ) -> Result<(), StoreError> {
        let len = value_len(value);
        let stored = match value {
            Value::Inline(_) => None,
            _ if body => Some(value_extents(ctx.pool, value)?),
            _ => None,
        };
        let body_len = if body { len } else { 0 };
        if reply.framed {
            let mut head = Vec::new();
            http::respond_head(&mut head, 200, &[], len as usize, reply.keep_alive);
            let bytes = ctx.out.bytes();
            bulk_header(bytes, head.len() as u64 + body_len);
            bytes.extend_from_slice(&head);
        } else {
            http::respond_head(ctx.out.bytes(), 200, &[], len as usize, reply.keep_alive);
        }
        match (body, value, stored) {
            (false, _, _) => {}
            (true, _, Some(extents)) if len >= self.config.zero_copy_min => {
                self.push_extents(ctx, &extents);
                self.stats.bytes_sent_zero_copy += len;
            }
            // Copied from the pool (or the leaf) straight into the reply.
            (true, Value::Inline(bytes), _) => {
                ctx.out.push(bytes);
                self.stats.bytes_sent_copied += len;
            }
            (true, _, extents) => {
                ctx.pool.read_extents(&extents.expect("read above"), ctx.out.bytes());
                self.stats.bytes_sent_copied += len;
            }
        }
        if reply.framed {
            ctx.out.push(b"\r\n");
        }
        Ok(())
    }

    /// Moves body bytes into the request; true when the whole body is in.
    pub(super) fn take_http_body(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        stream: &mut Stream,
        release: &mut Release<'_>,
    ) -> bool {
        let body = conn.http.as_mut().expect("a body in flight");
        let take = body.remaining.min(stream.len() as u64) as usize;
        if take > 0 {
            if !body.refused && buffers.free_count() < self.config.buffers_reserve {
                body.refused = true;
                buffers.release_extents(&body.extents).expect("the request's references");
                body.extents.clear();
            }
            let zero_copy = self.config.persist == Persist::ZeroCopy;
            if !body.refused
                && stream.keep(pool, buffers, take, zero_copy, &mut body.extents, &mut body.copy_fill).is_err()
            {
                body.refused = true;
                buffers.release_extents(&body.extents).expect("the request's references");
                body.extents.clear();
            }
            stream.consume(take, |segment| release(segment, buffers));
            body.remaining -= take as u64;
        }
        body.remaining == 0
    }

    pub(super) fn finish_put(&mut self, pool: &Pool, buffers: &mut Buffers, body: HttpBody, out: &mut OutQueue) {
        // The body's references are this request's from here: a panic
        // gives them back (`guard.rs`).
        buffers.adopt_staged(&body.extents);
        let before = (self.stats.errors, self.stats.refused_full);
        self.store_put(pool, buffers, body, out);
        self.count_request(HTTP, WRITE, before, false);
    }

    pub(super) fn store_put(&mut self, pool: &Pool, buffers: &mut Buffers, body: HttpBody, out: &mut OutQueue) {
        if body.refused {
            http::respond(out.bytes(), 507, &[], b"the pool is full: the value was not stored\n", body.keep_alive);
            self.stats.refused_full += 1;
            return;
        }
        let now = now_ms();
        let db = self.store.physical_db(0);
        let mut ops = Vec::new();
        let result = (|| {
            self.clear_for_string(pool, buffers, db, now, &body.key, false, &mut ops)?;
            // The op takes over the request's references.
            ops.push(Op::Put { key: string_key(db, &body.key), extents: body.extents.clone(), len: body.len });
            self.panic_if_armed(PanicPoint::Staged);
            let writes = self.store.check_room_for_write(buffers);
            writes.and_then(|()| self.store.apply(pool, buffers, &ops))
        })();
        Store::release_ops(buffers, &ops);
        if ops.is_empty() {
            buffers.release_extents(&body.extents).expect("the request's references");
        }
        if result.is_ok() {
            self.stage_bytes(body.len, true);
            self.count_write();
            self.http_wrote(pool, &body.key);
        }
        self.answer_put(result, out.bytes(), HttpReply { keep_alive: body.keep_alive, framed: false });
    }

    /// An HTTP write of `key` (database 0) is seen as a Redis command's
    /// is: the key's WATCHers fail, and clients tracking it are told.
    pub(super) fn http_wrote(&mut self, pool: &Pool, key: &[u8]) {
        if !self.watched.is_empty() {
            self.touch_watched(pool, (0, self.store.physical_db(0)), key, now_ms());
        }
        self.tracking_invalidate(key, None);
    }

    /// The response to a PUT whose value was stored (`result`): 204, or
    /// why not.
    pub(super) fn answer_put(&mut self, result: Result<(), StoreError>, out: &mut Vec<u8>, reply: HttpReply) {
        match result {
            Ok(()) => reply.respond(out, 204, &[], b""),
            Err(error) if error.is_full() => {
                self.stats.refused_full += 1;
                reply.respond(out, 507, &[], format!("{error}\n").as_bytes())
            }
            Err(StoreError::ReadOnly) => {
                // A follower of a replicated group: writes go to the leader.
                self.stats.errors += 1;
                let text = self.not_leader_text();
                reply.respond(out, 503, &[("Retry-After", 1)], text.as_bytes())
            }
            Err(error) => {
                self.stats.errors += 1;
                reply.respond(out, 500, &[], format!("{error}\n").as_bytes())
            }
        }
    }

    /// Why a write was refused in a group (503, with Retry-After): a leader
    /// just elected still applying its log, no leader yet, or a connection
    /// that stays on a follower (its first request was GET /metrics).
    fn not_leader_text(&self) -> String {
        match self.replica.as_ref() {
            Some(replica) if replica.is_leader() => {
                "this node was just elected the group's leader and is applying its log: try again\n".to_string()
            }
            Some(replica) if replica.leader_id() == 0 => {
                "the group has no leader yet (an election): try again\n".into()
            }
            Some(replica) => format!(
                "this connection is served by this follower, not the leader (node {}): its first request was \
                 GET /metrics; open a new connection for writes\n",
                replica.leader_id()
            ),
            None => "this node takes no writes\n".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn percent_escapes_take_exactly_two_hex_digits() {
        assert_eq!(percent_decode(b"a%20b%2F%2f"), Some(b"a b//".to_vec()));
        assert_eq!(percent_decode(b"%00%ff"), Some(vec![0, 255]));
        // Found by fuzzing (fuzz/regressions/http_head/percent-plus-sign):
        // u8::from_str_radix accepted a sign, so "%+1" decoded to 0x01.
        for bad in [&b"%+1"[..], b"%-1", b"%1", b"%", b"%zz", b"%1g"] {
            assert_eq!(percent_decode(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
