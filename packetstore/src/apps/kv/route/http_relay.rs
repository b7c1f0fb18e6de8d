//! HTTP on a sharded server: a request for a key another shard owns is
//! run there and answered here, so every key works on the one HTTP port.
//!
//! The request goes on this shard's link to the owner as one command,
//! `PACKETSTORE-HTTP method keep-alive key [value]` (a PUT's whole body
//! read out of this shard's pool once); the owner runs it with the same
//! code as a local request and answers with the complete HTTP response
//! as a RESP bulk string (a large value's bytes sent from its pool buffers,
//! zero copy), which goes to the client as it is.
//!
//! Owns: the relay of one connection's request and the owner's side of it.
//!
//! Invariants: an HTTP connection has at most one request relayed at a
//! time and reads no later request before its response is sent, so
//! responses keep the requests' order; a connection that asked to close
//! closes after that response, not before.

use crate::apps::kv::rest::HttpReply;
use crate::apps::kv::shard_link::Client;
use crate::apps::kv::state::{Ctx, HttpBody, KvConn, KvServer, HTTP, WRITE};
use crate::io::outq::OutQueue;
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;
use crate::proto::http;
use crate::store::db::{now_ms, KEY_SIZE_MAX};
use crate::store::keyspace::string_key;

/// The command a shard sends another for an HTTP request (answered only
/// on a shard link).
pub(in crate::apps::kv) const HTTP_ON_SHARD: &[u8] = b"PACKETSTORE-HTTP";
const HTTP_GET: &[u8] = b"GET";
const HTTP_HEAD: &[u8] = b"HEAD";
const HTTP_DELETE: &[u8] = b"DELETE";
const HTTP_PUT: &[u8] = b"PUT";
/// `PACKETSTORE-HTTP METRICS keep-alive -`: the shard's /metrics
/// exposition, a part of the main port's (`relay_metrics`).
const HTTP_METRICS: &[u8] = b"METRICS";

/// The keep-alive argument of `HTTP_ON_SHARD`.
fn keep_alive_arg(keep_alive: bool) -> &'static [u8] {
    if keep_alive {
        b"1"
    } else {
        b"0"
    }
}

/// One relayed request's reply (a RESP frame) as the client's HTTP
/// response: a bulk string is the response itself; an error (the link
/// to the shard closed: the request may or may not have run) is a 503.
fn response_of_reply(frame: &[u8], keep_alive: bool, out: &mut Vec<u8>) {
    let header_end = frame.windows(2).position(|pair| pair == b"\r\n").map_or(frame.len(), |at| at + 2);
    match frame.first() {
        Some(b'$') if header_end + 2 <= frame.len() => out.extend_from_slice(&frame[header_end..frame.len() - 2]),
        Some(b'-') => {
            let why = String::from_utf8_lossy(&frame[1..header_end.saturating_sub(2).max(1)]);
            let text = format!("the key's shard did not answer: {why}\n");
            http::respond(out, 503, &[("Retry-After", 1)], text.as_bytes(), keep_alive);
        }
        _ => {
            tracing::error!("an HTTP request relayed to another shard got a reply that is no response");
            http::respond(out, 500, &[], b"internal error: the key's shard answered no response\n", keep_alive);
        }
    }
}

impl KvServer {
    /// Sends `request` (method, keep-alive, key, value) to `shard` for
    /// `conn`, which then waits for its response (`deliver_http`).
    fn relay_http(&mut self, conn: &mut KvConn, shard: u16, request: &[&[u8]], keep_alive: bool) {
        assert_eq!(conn.awaiting, 0, "one HTTP request relayed at a time");
        let client = Client { token: conn.token, id: conn.id, db: 0, resp3: false, tag: None };
        let mut args = Vec::with_capacity(request.len() + 1);
        args.push(HTTP_ON_SHARD);
        args.extend_from_slice(request);
        self.links.send(shard, client, &args, (false, false));
        conn.awaiting = 1;
        conn.awaiting_shard = shard;
        conn.http_close = !keep_alive;
    }

    /// GET /metrics on a sharded server's main port: every shard's
    /// exposition, merged into one as one server's (`span::Merge::Metrics`);
    /// `conn` waits for it as for a relayed request.
    pub(in crate::apps::kv) fn relay_metrics(&mut self, conn: &mut KvConn, shards: u16, keep_alive: bool) {
        assert_eq!(conn.awaiting, 0, "one HTTP request relayed at a time");
        let client = Client { token: conn.token, id: conn.id, db: 0, resp3: false, tag: None };
        let args: [&[u8]; 4] = [HTTP_ON_SHARD, HTTP_METRICS, keep_alive_arg(keep_alive), b"-"];
        let parts: Vec<(u16, Vec<&[u8]>)> = (0..shards).map(|shard| (shard, args.to_vec())).collect();
        let home = self.shard_index();
        self.links.send_span((client, home), &parts, crate::apps::kv::span::Merge::Metrics { keep_alive }, false);
        conn.awaiting = 1;
        conn.awaiting_shard = crate::apps::kv::state::SPANNING;
        conn.http_close = !keep_alive;
    }

    /// A GET, HEAD or DELETE (`head`) of `shard`'s `key`, relayed there.
    pub(in crate::apps::kv) fn relay_request(
        &mut self,
        conn: &mut KvConn,
        shard: u16,
        head: &http::RequestHead,
        key: &[u8],
    ) {
        let method = match head.method {
            http::Method::Get => HTTP_GET,
            http::Method::Head => HTTP_HEAD,
            http::Method::Delete => HTTP_DELETE,
            other => panic!("{other:?} has a body: relay_put"),
        };
        self.relay_http(conn, shard, &[method, keep_alive_arg(head.keep_alive), key], head.keep_alive);
    }

    /// A PUT of another shard's key whose body is all in: read out of
    /// this shard's pool (its buffers given back) and relayed.
    pub(in crate::apps::kv) fn relay_put(
        &mut self,
        pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut KvConn,
        shard: u16,
        body: HttpBody,
    ) {
        let mut value = Vec::with_capacity(body.len as usize);
        pool.read_extents(&body.extents, &mut value);
        buffers.release_extents(&body.extents).expect("the request's references");
        let keep_alive = keep_alive_arg(body.keep_alive);
        self.relay_http(conn, shard, &[HTTP_PUT, keep_alive, &body.key, &value], body.keep_alive);
        let before = (self.stats.errors, self.stats.refused_full);
        self.count_request(HTTP, WRITE, before, false);
    }

    /// The response to the connection's relayed request, once in: queued
    /// on `out`. Returns how many came (0 or 1).
    pub(in crate::apps::kv) fn deliver_http(&mut self, conn: &mut KvConn, out: &mut OutQueue) -> u32 {
        let Some((bytes, replies)) = self.links.take_delivered(conn.token, conn.id) else { return 0 };
        assert!(replies <= conn.awaiting, "more replies than HTTP requests relayed");
        conn.awaiting -= replies;
        let mut at = 0;
        while at < bytes.len() {
            let Ok(Some(len)) = crate::proto::resp::reply_len(&bytes[at..]) else {
                tracing::error!("an HTTP request relayed to another shard got a partial reply");
                break;
            };
            // A push (no client of a link tracks keys) is not a response.
            if bytes[at] != b'>' {
                response_of_reply(&bytes[at..at + len], !conn.http_close, out.bytes());
            }
            at += len;
        }
        replies
    }

    /// The owner's side: runs `HTTP_ON_SHARD`'s request from another
    /// shard's link, its response as one bulk string. A shard whose
    /// script is paused answers 503 (a local request waits instead: a
    /// link is every client's and must not stall).
    /// `http_for_shard` in a guard, as a local request runs: a bug that
    /// panics answers 500 (and gives back what the request held); the
    /// shard serves on.
    pub(in crate::apps::kv) fn http_for_shard_guarded(&mut self, ctx: &mut Ctx<'_>) {
        let keep_alive = ctx.argc() > 2 && ctx.arg(2).as_ref() == b"1";
        let guard = self.guard_begin(ctx.buffers, ctx.out);
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.http_for_shard(ctx)));
        match ran {
            Ok(()) => self.guard_end(ctx.buffers, guard),
            Err(panic) => {
                let what = self.guard_caught(ctx.pool, ctx.buffers, ctx.out, guard, panic);
                tracing::error!("an HTTP request relayed from another shard failed on a bug, answered 500: {what}");
                let text = format!("internal error: the request was not run ({what})\n");
                HttpReply { keep_alive, framed: true }.respond(ctx.out.bytes(), 500, &[], text.as_bytes());
            }
        }
    }

    fn http_for_shard(&mut self, ctx: &mut Ctx<'_>) {
        if ctx.argc() == 4 && ctx.arg(1).as_ref() == HTTP_METRICS {
            // A part of the main port's /metrics: this shard's exposition.
            let text = self.metrics_text(ctx.pool, ctx.buffers);
            ctx.bulk(text.as_bytes());
            return;
        }
        let put = ctx.argc() == 5 && ctx.arg(1).as_ref() == HTTP_PUT;
        let key = ctx.arg(3).into_owned();
        if !(ctx.argc() == 4 || put) || key.is_empty() || key.len() > KEY_SIZE_MAX {
            ctx.error("ERR PACKETSTORE-HTTP GET|HEAD|DELETE|PUT keep-alive key [value]");
            return;
        }
        let reply = HttpReply { keep_alive: ctx.arg(2).as_ref() == b"1", framed: true };
        if self.scripting.paused.is_some() {
            let text = b"a script is running on the key's shard: try again\n";
            reply.respond(ctx.out.bytes(), 503, &[("Retry-After", 1)], text);
            return;
        }
        (ctx.now, ctx.db) = (now_ms(), self.store.physical_db(0));
        let method = ctx.arg(1).into_owned();
        match method.as_slice() {
            HTTP_PUT if put => self.http_put_arg(ctx, &key, reply),
            HTTP_GET | HTTP_HEAD => {
                self.http_get(ctx, &key, method == HTTP_GET, reply);
            }
            HTTP_DELETE => {
                self.http_delete(ctx, &key, reply);
            }
            _ => ctx.error("ERR PACKETSTORE-HTTP GET|HEAD|DELETE|PUT keep-alive key [value]"),
        }
    }

    /// A relayed PUT: the value (argument 4) stored where it was received
    /// on the link, as a local PUT stores its body.
    fn http_put_arg(&mut self, ctx: &mut Ctx<'_>, key: &[u8], reply: HttpReply) {
        let mut ops = Vec::new();
        let built = self.build_ops(ctx, &mut ops, |server, ctx, ops| {
            server.clear_for_string(ctx.pool, ctx.buffers, ctx.db, ctx.now, key, false, ops)?;
            ops.push(server.put_arg(ctx, string_key(ctx.db, key), 4)?);
            Ok(())
        });
        let result = built.and_then(|()| self.apply(ctx, &ops));
        if result.is_ok() {
            self.http_wrote(ctx.pool, key);
        }
        self.answer_put(result, ctx.out.bytes(), reply);
    }
}
