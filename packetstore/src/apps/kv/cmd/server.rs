//! Connection and server commands: PING, ECHO, QUIT, AUTH, HELLO, CLIENT,
//! INFO, TIME, RESET, DEBUG.

use crate::apps::kv::ops::{parse_i64, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer, PanicPoint};
use crate::store::db::StoreError;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("ping", -1, &["fast", "stale"], (0, 0, 0), "connection", "Returns PONG, or the argument.", KvServer::cmd_ping),
    cmd("echo", 2, &["fast"], (0, 0, 0), "connection", "Returns the argument.", KvServer::cmd_echo),
    cmd("debug", -2, &["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "DEBUG SLEEP, SET-ACTIVE-EXPIRE (--enable-debug-command); POWERFAIL, PANIC and PANIC-AT (test servers).", KvServer::cmd_debug),
    cmd("reset", 1, &["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"], (0, 0, 0), "connection", "Resets the connection: no transaction, no watched key, no subscription, RESP2, no name, not authenticated.", KvServer::cmd_reset),
    cmd("quit", -1, &["fast"], (0, 0, 0), "connection", "Closes the connection.", KvServer::cmd_quit),
    cmd("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi", "allow_busy"], (0, 0, 0), "server", "Stops the server: every reply sent, a checkpoint, then exit (the data is always durable: NOSAVE and SAVE change nothing).", KvServer::cmd_shutdown),
    cmd("auth", -2, &["noscript", "loading", "stale", "fast", "no_auth"], (0, 0, 0), "connection", "Authenticates the connection.", KvServer::cmd_auth),
    cmd("hello", -1, &["noscript", "loading", "stale", "fast", "no_auth"], (0, 0, 0), "connection", "Handshakes: protocol version, authentication, client name.", KvServer::cmd_hello),
    cmd("time", 1, &["random", "loading", "stale", "fast"], (0, 0, 0), "server", "Returns the server's time: seconds and microseconds.", KvServer::cmd_time),
    cmd("info", -1, &["random", "loading", "stale"], (0, 0, 0), "server", "Returns information and statistics about the server.", KvServer::cmd_info),
];

impl KvServer {
    fn cmd_ping(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        // A RESP2 subscriber's PING is answered in the subscriber's frame.
        if ctx.conn.subscriptions.is_some() && !ctx.conn.encoder.resp3 && ctx.argc() <= 2 {
            let message = if ctx.argc() == 2 { ctx.arg(1).into_owned() } else { Vec::new() };
            ctx.array(2);
            ctx.bulk(b"pong");
            ctx.bulk(&message);
            return Ok(());
        }
        match ctx.argc() {
            1 => ctx.out.push(b"+PONG\r\n"),
            2 => {
                let message = ctx.arg(1).into_owned();
                ctx.bulk(&message)
            }
            _ => ctx.error("ERR wrong number of arguments for 'ping' command"),
        }
        Ok(())
    }

    fn cmd_echo(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let message = ctx.arg(1).into_owned();
        ctx.bulk(&message);
        Ok(())
    }

    /// `DEBUG POWERFAIL <seed> <fences>`, for tests: the power fails at
    /// the `fences`-th fence or sync from now (or, `<seed> AT <unix-ms>`,
    /// at the first one from that moment), and the crash simulator
    /// keeps what a real failure there could keep (chosen by `seed`).
    /// Refused unless the server runs on the simulator
    /// (`--simulate-power-failures`, itself refused unless enabled).
    fn cmd_debug(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let sub = ctx.arg(1).to_ascii_uppercase();
        if sub == b"SLEEP" || sub == b"SET-ACTIVE-EXPIRE" {
            self.debug_runtime(ctx, &sub);
            return Ok(());
        }
        if sub != b"POWERFAIL" && sub != b"PANIC" && sub != b"PANIC-AT" {
            ctx.error("ERR DEBUG supports only SLEEP, SET-ACTIVE-EXPIRE (--enable-debug-command), POWERFAIL <seed> <fences>, PANIC and PANIC-AT <point> (tests)");
            return Ok(());
        }
        if (sub == b"PANIC" || sub == b"PANIC-AT") && self.config.settings.test_switches {
            self.debug_panic(ctx, &sub);
            return Ok(());
        }
        let Some(device) = self.config.power_switch.clone() else {
            let sub = String::from_utf8_lossy(&sub);
            ctx.error(&format!(
                "ERR DEBUG {sub} is disabled: it needs a server started with --simulate-power-failures (tests only)"
            ));
            return Ok(());
        };
        // A bug in a handler, on purpose: the client gets an error, the
        // server goes on.
        assert!(sub != b"PANIC", "DEBUG PANIC (a test of the command path's panic handling)");
        let usage =
            "ERR usage: DEBUG POWERFAIL <seed> <fences> | <seed> AT <unix-ms>, unsigned integers, fences at least 1";
        let number = |bytes: &[u8]| std::str::from_utf8(bytes).ok().and_then(|t| t.parse::<u64>().ok());
        if ctx.argc() == 5 && ctx.arg(3).eq_ignore_ascii_case(b"AT") {
            // Every node of a group armed for the same moment fails together.
            let (Some(seed), Some(unix_ms)) = (number(&ctx.arg(2)), number(&ctx.arg(4))) else {
                ctx.error(usage);
                return Ok(());
            };
            device.crash_at_time(std::time::UNIX_EPOCH + std::time::Duration::from_millis(unix_ms), seed);
            ctx.ok();
            return Ok(());
        }
        if ctx.argc() != 4 {
            ctx.error(usage);
            return Ok(());
        }
        let (Some(seed), Some(fences @ 1..)) = (number(&ctx.arg(2)), number(&ctx.arg(3))) else {
            ctx.error(usage);
            return Ok(());
        };
        device.crash_at_fence(device.fences() + fences, seed);
        ctx.ok();
        Ok(())
    }

    /// DEBUG PANIC (a panic in this handler) and DEBUG PANIC-AT STAGED |
    /// REPLIED | PEER-FRAME (the next write after staging its values, the
    /// next read after queueing its reply from the pool, or the next peer
    /// frame, on any path, panics): tests of the request paths' panic
    /// handling, with PACKETSTORE_ENABLE_TEST_SWITCHES=1 only.
    fn debug_panic(&mut self, ctx: &mut Ctx<'_>, sub: &[u8]) {
        // A bug in a handler, on purpose: the client gets an error, the
        // server goes on.
        assert!(sub != b"PANIC", "DEBUG PANIC (a test of the command path's panic handling)");
        let point = if ctx.argc() == 3 { ctx.conn.args.upper(2) } else { None };
        let point = match point.as_deref() {
            Some(b"STAGED") => PanicPoint::Staged,
            Some(b"REPLIED") => PanicPoint::Replied,
            Some(b"PEER-FRAME") => PanicPoint::PeerFrame,
            _ => return ctx.error("ERR usage: DEBUG PANIC-AT STAGED | REPLIED | PEER-FRAME"),
        };
        match self.across.as_ref() {
            Some(exchange) => exchange.arm_panic(point as u8 + 1),
            None => self.panic_at = Some(point),
        }
        ctx.ok();
    }

    /// DEBUG SLEEP <seconds> (the whole server sleeps, as Redis's does) and
    /// DEBUG SET-ACTIVE-EXPIRE <0|1> (the tick's expiry off or on), with
    /// `--enable-debug-command` only.
    fn debug_runtime(&mut self, ctx: &mut Ctx<'_>, sub: &[u8]) {
        if !self.config.debug_command {
            ctx.error("ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.");
            return;
        }
        let value = (ctx.argc() == 3).then(|| String::from_utf8_lossy(&ctx.arg(2)).into_owned());
        match (sub, value.as_deref()) {
            (b"SLEEP", Some(seconds)) => match seconds.parse::<f64>() {
                Ok(seconds) if (0.0..=3600.0).contains(&seconds) => {
                    std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
                    ctx.ok();
                }
                _ => ctx.error("ERR DEBUG SLEEP takes seconds from 0 to 3600"),
            },
            (b"SET-ACTIVE-EXPIRE", Some(flag @ ("0" | "1"))) => {
                self.active_expire = flag == "1";
                ctx.ok();
            }
            _ => ctx.error(SYNTAX),
        }
    }

    fn cmd_time(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        ctx.array(2);
        ctx.bulk(now.as_secs().to_string().as_bytes());
        ctx.bulk(now.subsec_micros().to_string().as_bytes());
        Ok(())
    }

    fn cmd_reset(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.forget_connection(ctx.buffers, ctx.conn);
        ctx.conn.encoder.resp3 = false;
        ctx.conn.reply = crate::apps::kv::kept::client::ReplyMode::On;
        ctx.conn.name = None;
        ctx.conn.authenticated = self.config.requirepass.is_none();
        ctx.out.push(b"+RESET\r\n");
        Ok(())
    }

    /// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the loop drains and
    /// stops as on SIGTERM. Every acknowledged write is already durable,
    /// so NOSAVE and SAVE change nothing; a script paused with writes is
    /// not finished, and its writes (one open group) are dropped at the
    /// next start, as Redis's SHUTDOWN NOSAVE drops them.
    fn cmd_shutdown(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut abort = false;
        let (mut save, mut nosave) = (false, false);
        for i in 1..ctx.argc() {
            match ctx.arg(i).to_ascii_uppercase().as_slice() {
                b"NOSAVE" => nosave = true,
                b"SAVE" => save = true,
                b"NOW" | b"FORCE" => {}
                b"ABORT" => abort = true,
                _ => {
                    ctx.error(crate::apps::kv::ops::SYNTAX);
                    return Ok(());
                }
            }
        }
        if (save && nosave) || (abort && ctx.argc() != 2) {
            ctx.error(crate::apps::kv::ops::SYNTAX);
            return Ok(());
        }
        if abort {
            ctx.error("ERR No shutdown in progress.");
            return Ok(());
        }
        tracing::warn!(client = ctx.conn.id, "SHUTDOWN: stopping");
        self.shutdown_requested = true;
        ctx.close = true;
        Ok(())
    }

    fn cmd_quit(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        ctx.ok();
        ctx.close = true;
        self.clients.quitting(ctx.conn.id);
        if let Some(exchange) = self.across.as_ref() {
            exchange.left(ctx.conn.id);
        }
        Ok(())
    }

    fn cmd_auth(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let result = match ctx.argc() {
            2 => self.check_password(None, &ctx.arg(1)),
            3 => self.check_password(Some(&ctx.arg(1)), &ctx.arg(2)),
            _ => {
                ctx.error(SYNTAX);
                return Ok(());
            }
        };
        match result {
            Ok(()) => {
                ctx.conn.authenticated = true;
                ctx.ok()
            }
            Err(why) => ctx.error(why),
        }
        Ok(())
    }

    fn cmd_hello(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let mut i = 1;
        let mut protocol = None;
        if ctx.argc() > 1 {
            match parse_i64(&ctx.arg(1)) {
                Some(v @ (2 | 3)) => protocol = Some(v),
                Some(_) => {
                    ctx.error("NOPROTO unsupported protocol version");
                    return Ok(());
                }
                None => {
                    ctx.error("ERR Protocol version is not an integer or out of range");
                    return Ok(());
                }
            }
            i = 2;
        }
        while i < ctx.argc() {
            match ctx.conn.args.upper(i).as_deref() {
                Some(b"AUTH") if i + 2 < ctx.argc() => {
                    if let Err(why) = self.check_password(Some(&ctx.arg(i + 1)), &ctx.arg(i + 2)) {
                        ctx.error(why);
                        return Ok(());
                    }
                    ctx.conn.authenticated = true;
                    i += 3;
                }
                Some(b"SETNAME") if i + 1 < ctx.argc() => {
                    ctx.conn.name = Some(ctx.arg(i + 1).into_owned());
                    i += 2;
                }
                _ => {
                    ctx.error(&format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&ctx.arg(i))));
                    return Ok(());
                }
            }
        }
        if self.config.requirepass.is_some() && !ctx.conn.authenticated {
            ctx.error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
            return Ok(());
        }
        if let Some(protocol) = protocol {
            ctx.conn.encoder.resp3 = protocol == 3;
        }
        let proto = if ctx.conn.encoder.resp3 { 3 } else { 2 };
        ctx.map(7);
        for (name, value) in [("server", "redis"), ("version", "7.0.0")] {
            ctx.bulk(name.as_bytes());
            ctx.bulk(value.as_bytes());
        }
        ctx.bulk(b"proto");
        ctx.int(proto);
        ctx.bulk(b"id");
        ctx.int(ctx.conn.id as i64);
        for (name, value) in [("mode", "standalone"), ("role", "master")] {
            ctx.bulk(name.as_bytes());
            ctx.bulk(value.as_bytes());
        }
        ctx.bulk(b"modules");
        ctx.array(0);
        Ok(())
    }

    fn cmd_info(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let asked: Vec<String> = (1..ctx.argc()).map(|i| String::from_utf8_lossy(&ctx.arg(i)).into_owned()).collect();
        let text = self.info_text(ctx.pool, ctx.buffers, &asked);
        let enc = ctx.enc();
        enc.verbatim(ctx.out.bytes(), &text);
        Ok(())
    }
}
