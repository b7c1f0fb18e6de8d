//! Goal: what a newcomer hit following the README on a fresh clone (issue
//! 35, item 11) stays fixed: the systemd recipe's service can read its
//! options; CONFIG GET reports the server's own settings; protected mode
//! refuses other hosts as Redis 7.0 does; a pool in a missing directory is
//! refused unless asked; a peer port on the network without a secret is
//! warned about; one-sided readers' tables do not pile up in /dev/shm.
//!
//! Method: each test runs the built binary as a user would, and checks
//! what the user sees (replies, exit status, messages, files). The systemd
//! recipe is checked without systemd: the unit and docs/operations.md are
//! parsed, the options file is installed as the docs say (root's, 0600),
//! what the unit's `LoadCredential=` makes systemd do is done by hand, and
//! the server runs under setpriv as an unprivileged user with the unit's
//! `ExecStart` options. Protected mode is checked from a network namespace
//! joined by a veth pair (a client from another host, as the server sees
//! it). These tests need root.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::{Server, TempPool};

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_packetstore")
}

/// A scratch directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!("packetstore-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program).args(args).status().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(status.success(), "{program} {args:?}: {status}");
}

// ---- a: the systemd recipe ----

/// A unit file's `Key=value` lines of section [Service].
fn service_keys(unit: &str) -> Vec<(String, String)> {
    let mut in_service = false;
    let mut keys = Vec::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service && !line.starts_with('#') {
            if let Some((key, value)) = line.split_once('=') {
                keys.push((key.to_string(), value.to_string()));
            }
        }
    }
    keys
}

/// The docs' `install ... contrib/packetstore.toml <path>` command:
/// (mode, path).
fn docs_config_install(docs: &str) -> (u32, String) {
    let line = docs
        .lines()
        .find(|l| l.starts_with("install ") && l.contains("contrib/packetstore.toml"))
        .expect("docs/operations.md installs contrib/packetstore.toml");
    let words: Vec<&str> = line.split_whitespace().collect();
    let mode = words[words.iter().position(|w| *w == "-m").expect("a mode") + 1];
    (u32::from_str_radix(mode, 8).unwrap(), words.last().unwrap().to_string())
}

/// The recipe of contrib/packetstore.service and docs/operations.md, run
/// as systemd would run it with `DynamicUser=yes`: the service, an
/// unprivileged user, must start with the options file installed as the
/// docs say.
#[test]
fn the_systemd_recipe_lets_its_dynamic_user_read_the_options() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let unit = std::fs::read_to_string(root.join("contrib/packetstore.service")).unwrap();
    let docs = std::fs::read_to_string(root.join("docs/operations.md")).unwrap();
    let keys = service_keys(&unit);
    let key = |name: &str| keys.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    assert_eq!(key("DynamicUser"), ["yes"], "the recipe runs as a dynamic user");
    let (mode, installed) = docs_config_install(&docs);
    assert_eq!(mode & 0o077, 0, "the options file (it may hold the password) is root's alone: {mode:o}");

    // What systemd does before ExecStart: LoadCredential=NAME:PATH copies
    // PATH, read as root, into a directory of the service's own (%d).
    let scratch = TempDir::new("systemd");
    let uid = 40_000 + std::process::id() % 20_000;
    let etc = scratch.0.join("etc");
    let credentials = scratch.0.join("credentials");
    let state = scratch.0.join("state");
    for dir in [&etc, &credentials, &state] {
        std::fs::create_dir_all(dir).unwrap();
    }
    // SAFETY: chown on paths this test made.
    let chown = |path: &Path| unsafe {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(libc::chown(c.as_ptr(), uid, uid), 0, "chown {}", path.display());
    };
    chown(&state);
    std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = etc.join(Path::new(&installed).file_name().unwrap());
    std::fs::copy(root.join("contrib/packetstore.toml"), &config).unwrap();
    std::fs::set_permissions(&config, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
    for credential in key("LoadCredential") {
        let (name, source) = credential.split_once(':').expect("LoadCredential=NAME:PATH");
        assert_eq!(source, installed, "the credential is the file the docs install");
        let copy = credentials.join(name);
        std::fs::copy(&config, &copy).unwrap();
        std::fs::set_permissions(&copy, std::os::unix::fs::PermissionsExt::from_mode(0o400)).unwrap();
        chown(&copy);
    }
    chown(&credentials);

    // ExecStart, with the unit's paths moved into the scratch directory.
    let exec = key("ExecStart").pop().expect("an ExecStart");
    let exec = exec
        .replace("%d", credentials.to_str().unwrap())
        .replace(&installed, config.to_str().unwrap())
        .replace("/var/lib/packetstore", state.to_str().unwrap());
    let mut words = exec.split_whitespace().skip(1);
    assert_eq!(words.next(), Some("serve"));
    // The binary where the unprivileged user may run it.
    let program = scratch.0.join("packetstore");
    std::fs::copy(binary(), &program).unwrap();
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid", &uid.to_string(), "--regid", &uid.to_string(), "--clear-groups", "--"])
        .arg(&program)
        .arg("serve")
        .args(words)
        .args(["--pool-size", "256MiB", "--ring-entries", "1024", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0"])
        .current_dir(&state)
        .stderr(Stdio::piped());
    let mut server = Server::start_command(&mut command);
    let mut client = server.client();
    assert_eq!(redis::cmd("PING").query::<String>(&mut client).unwrap(), "PONG");
    let _ = server.child.kill();
    let _ = server.child.wait();
}

// ---- b: CONFIG GET ----

fn config_get(client: &mut redis::Connection, name: &str) -> String {
    let pairs: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(client).unwrap();
    assert_eq!(pairs.len(), 2, "{name}: {pairs:?}");
    pairs[1].clone()
}

#[test]
fn config_get_reports_the_servers_own_settings() {
    let pool = TempPool::new("config-get");
    let server = Server::start(&pool.0, &["--connections-max", "20000", "--enable-debug-command"]);
    let mut client = server.client();
    assert_eq!(config_get(&mut client, "port"), server.resp.port().to_string());
    assert_eq!(config_get(&mut client, "bind"), "127.0.0.1");
    assert_eq!(config_get(&mut client, "maxclients"), "20000");
    assert_eq!(config_get(&mut client, "dir"), "/dev/shm", "the pool's directory");
    assert_eq!(config_get(&mut client, "protected-mode"), "yes");
    assert_eq!(config_get(&mut client, "enable-debug-command"), "yes");
    assert_eq!(config_get(&mut client, "appendonly"), "yes");
    assert_eq!(config_get(&mut client, "appendfsync"), "always");
    let info: String = redis::cmd("INFO").arg("server").query(&mut client).unwrap();
    assert!(info.contains(&format!("tcp_port:{}\r\n", server.resp.port())), "{info}");
    let info: String = redis::cmd("INFO").arg("clients").query(&mut client).unwrap();
    assert!(info.contains("maxclients:20000\r\n"), "{info}");
    // A setting of the command line is not taken at run time and then
    // ignored: it is refused, naming the flag.
    let error = redis::cmd("CONFIG").arg("SET").arg("port").arg("7000").query::<()>(&mut client).unwrap_err();
    assert!(error.to_string().contains("--resp"), "{error}");
    assert_eq!(config_get(&mut client, "port"), server.resp.port().to_string());
    // Its value now, set again, is accepted (Redis's own CONFIG sanity
    // test sets every parameter to what CONFIG GET read).
    let port = server.resp.port().to_string();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("port")
        .arg(&port)
        .arg("bind")
        .arg("127.0.0.1")
        .query::<()>(&mut client)
        .unwrap();
}

// ---- c: protected mode ----

/// A network namespace joined to this one by a veth pair: this side
/// 10.213.N.1, the namespace's 10.213.N.2. Deleted on drop.
struct OtherHost {
    ns: String,
    veth: String,
    here: String,
}

impl OtherHost {
    fn new() -> OtherHost {
        let id = std::process::id() % 250;
        let ns = format!("psprot{}", std::process::id());
        let veth = format!("psp{}", std::process::id() % 100_000);
        let (here, there) = (format!("10.213.{id}.1"), format!("10.213.{id}.2"));
        let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        let _ = Command::new("ip").args(["link", "del", &veth]).status();
        let host = OtherHost { ns: ns.clone(), veth: veth.clone(), here: here.clone() };
        run("ip", &["netns", "add", &ns]);
        run("ip", &["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns]);
        run("ip", &["addr", "add", &format!("{here}/24"), "dev", &veth]);
        run("ip", &["link", "set", &veth, "up"]);
        run("ip", &["-n", &ns, "addr", "add", &format!("{there}/24"), "dev", "eth0"]);
        run("ip", &["-n", &ns, "link", "set", "eth0", "up"]);
        run("ip", &["-n", &ns, "link", "set", "lo", "up"]);
        host
    }

    /// Sends `request` to `port` on this side's address from the other
    /// host; returns what came back before the server closed (or 3 s).
    fn send(&self, port: u16, request: &str) -> String {
        let script = "import socket,sys\n\
            s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=3)\n\
            s.sendall(sys.argv[3].encode().decode('unicode_escape').encode())\n\
            out=b''\n\
            try:\n  while True:\n    d=s.recv(65536)\n    if not d: break\n    out+=d\n\
            except Exception: pass\n\
            sys.stdout.write(out.decode())\n";
        let escaped = request.replace('\r', "\\r").replace('\n', "\\n");
        let output = Command::new("ip")
            .args(["netns", "exec", &self.ns, "python3", "-c", script, &self.here, &port.to_string(), &escaped])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    }
}

impl Drop for OtherHost {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        let _ = Command::new("ip").args(["link", "del", &self.veth]).status();
    }
}

const PING: &str = "*1\r\n$4\r\nPING\r\n";

#[test]
fn protected_mode_refuses_other_hosts_until_a_password_is_set_or_it_is_off() {
    let other = OtherHost::new();
    let pool = TempPool::new("protected");
    let server = Server::start(&pool.0, &["--http", "0.0.0.0:0", "--resp", "0.0.0.0:0"]);
    let (resp, http) = (server.resp.port(), server.http.port());
    let mut local = redis::Client::open(format!("redis://127.0.0.1:{resp}/")).unwrap().get_connection().unwrap();
    assert_eq!(redis::cmd("PING").query::<String>(&mut local).unwrap(), "PONG", "loopback is served");

    // Redis 7.0's words, then the connection closes.
    let denied = other.send(resp, PING);
    assert!(
        denied.starts_with("-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface.")
            && denied.ends_with("NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n")
            && denied.matches("\r\n").count() == 1,
        "{denied:?}"
    );
    let forbidden = other.send(http, "GET /kv/x HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(forbidden.starts_with("HTTP/1.1 403"), "{forbidden:?}");
    let info: String = redis::cmd("INFO").arg("clients").query(&mut local).unwrap();
    assert!(info.contains("rejected_connections:2\r\n"), "{info}");

    let () = redis::cmd("CONFIG").arg("SET").arg("protected-mode").arg("no").query(&mut local).unwrap();
    assert_eq!(other.send(resp, &format!("{PING}*1\r\n$4\r\nQUIT\r\n")), "+PONG\r\n+OK\r\n");

    // With a password, other hosts are asked for it instead.
    let () = redis::cmd("CONFIG").arg("SET").arg("protected-mode").arg("yes").query(&mut local).unwrap();
    let () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("s3cret").query(&mut local).unwrap();
    let reply = other.send(resp, &format!("{PING}*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n{PING}*1\r\n$4\r\nQUIT\r\n"));
    assert_eq!(reply, "-NOAUTH Authentication required.\r\n+OK\r\n+PONG\r\n+OK\r\n");
}

// ---- d: a pool in a missing directory ----

#[test]
fn a_pool_in_a_missing_directory_is_refused_unless_asked() {
    let scratch = TempDir::new("pool-dirs");
    let pool = scratch.0.join("no/such/dir/kv.pool");
    let listen = ["--http", "127.0.0.1:0", "--resp", "127.0.0.1:0", "--pool-size", "256MiB", "--ring-entries", "1024"];
    let mut child = Command::new(binary())
        .arg("serve")
        .arg("--pool")
        .arg(&pool)
        .args(listen)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = child.try_wait().unwrap().is_some_and(|status| !status.success());
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(refused, "a missing directory is refused: {stderr}");
    assert!(stderr.contains("does not exist") && stderr.contains("--create-dirs"), "{stderr}");
    assert!(!scratch.0.join("no").exists(), "nothing was created");

    let mut command = Command::new(binary());
    command.arg("serve").arg("--pool").arg(&pool).arg("--create-dirs").args(listen);
    drop(Server::start_command(&mut command));
    assert!(pool.exists(), "--create-dirs makes the directories");

    // The README's start: no --pool, packetstore-data/ under the current
    // directory, made when missing.
    let mut command = Command::new(binary());
    command.arg("serve").args(listen).current_dir(&scratch.0);
    drop(Server::start_command(&mut command));
    assert!(scratch.0.join("packetstore-data/kv.pool").exists());
}

// ---- e: a peer port on the network without a secret ----

#[test]
fn a_peer_port_on_the_network_without_a_secret_is_warned_about() {
    let port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let peers = format!("1=0.0.0.0:{},2=127.0.0.1:{}", port(), port());
    for (secret, warned) in [(&[][..], true), (&["--peer-secret", "s3cret"][..], false)] {
        let pool = TempPool::new(&format!("peer-exposure-{warned}"));
        let args = [&["--node-id", "1", "--peers", &peers][..], secret].concat();
        let server = Server::start(&pool.0, &args);
        let banner = server.banner().join("\n");
        assert_eq!(banner.contains("WARNING: INSECURE GROUP: the peer port"), warned, "{secret:?}: {banner}");
    }
}

// ---- f: one-sided readers' tables ----

/// The table a server with --one-sided-reads named in its start-up lines.
fn table_of(server: &Server) -> PathBuf {
    let banner = server.banner();
    let line = banner.iter().find_map(|l| l.strip_prefix("one-sided reads: table ")).expect("a table line");
    PathBuf::from(line.split(',').next().unwrap())
}

fn age(path: &Path, seconds: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds)).unwrap();
}

#[test]
fn readers_tables_go_with_their_servers() {
    // A clean stop removes the server's table.
    let pool = TempPool::new("table-stop");
    let mut server = Server::start(&pool.0, &["--one-sided-reads"]);
    let table = table_of(&server);
    assert!(table.exists());
    let mut client = server.client();
    let _ = redis::cmd("SHUTDOWN").query::<()>(&mut client);
    assert!(server.wait_exit(Duration::from_secs(20)), "SHUTDOWN stops the server");
    assert!(!table.exists(), "{} is left after a clean stop", table.display());

    // A start removes the tables of servers that are gone (old, mapped by
    // no process), not a running server's, nor one just made.
    let running_pool = TempPool::new("table-running");
    let running = Server::start(&running_pool.0, &["--one-sided-reads"]);
    let running_table = table_of(&running);
    age(&running_table, 60);
    let stale = PathBuf::from(format!("/dev/shm/packetstore-0-{}1.recent", std::process::id()));
    let fresh = PathBuf::from(format!("/dev/shm/packetstore-0-{}2.recent", std::process::id()));
    for path in [&stale, &fresh] {
        std::fs::write(path, b"a table whose server was killed").unwrap();
    }
    age(&stale, 60);
    let other = TempPool::new("table-start");
    drop(Server::start(&other.0, &[]));
    let (stale_left, fresh_left) = (stale.exists(), fresh.exists());
    let _ = std::fs::remove_file(&fresh);
    let _ = std::fs::remove_file(&stale);
    assert!(!stale_left, "a table whose server is gone is removed at start");
    assert!(fresh_left, "a table made a moment ago may be a starting server's");
    assert!(running_table.exists(), "a running server's table is kept");
    drop(running);
}

// ---- d: a redis.conf as the configuration ----

/// A Redis user's redis.conf given as `--config`: the directives that
/// apply set what they set in Redis (CONFIG GET reads them back, and they
/// act), those that cannot apply are ignored with a warning, a flag on the
/// command line wins over the file, and a directive packetstore does not
/// know, or a bad value, stops the start naming its line.
#[test]
fn a_redis_conf_configures_the_server() {
    let pool = TempPool::new("redis-conf");
    let conf = pool.0.with_extension("conf");
    let text = "# a Redis 7 file\nport 6390\nrequirepass \"s3cret pw\"\nmaxclients 123\n\
                notify-keyspace-events KEA\nslowlog-max-len 7\nhash-max-listpack-entries 64\n\
                appendonly no\nappendfsync everysec\ndaemonize yes\nsave \"\"\n";
    std::fs::write(&conf, text).unwrap();
    let log = pool.0.with_extension("log");
    let server = Server::start_logging(&pool.0, &["--config", conf.to_str().unwrap()], &log);
    // The command line's --resp 127.0.0.1:0 (Server::start's) wins over
    // the file's port 6390.
    assert_ne!(server.resp.port(), 6390);
    let client = redis::Client::open(format!("redis://:s3cret%20pw@{}/", server.resp)).unwrap();
    let mut client = client.get_connection().unwrap();
    assert_eq!(config_get(&mut client, "maxclients"), "123");
    assert_eq!(config_get(&mut client, "notify-keyspace-events"), "AKE");
    assert_eq!(config_get(&mut client, "slowlog-max-len"), "7");
    assert_eq!(config_get(&mut client, "hash-max-listpack-entries"), "64");
    assert_eq!(config_get(&mut client, "appendonly"), "yes", "every write is durable whatever the file says");
    assert_eq!(config_get(&mut client, "appendfsync"), "always");
    // The slow log keeps the file's 7 entries at most.
    redis::cmd("CONFIG").arg("SET").arg("slowlog-log-slower-than").arg("0").query::<()>(&mut client).unwrap();
    for _ in 0..20 {
        redis::cmd("PING").query::<String>(&mut client).unwrap();
    }
    assert_eq!(redis::cmd("SLOWLOG").arg("LEN").query::<i64>(&mut client).unwrap(), 7);
    // Keyspace notifications are on (KEA): a subscriber hears a SET.
    let listener = redis::Client::open(format!("redis://:s3cret%20pw@{}/", server.resp)).unwrap();
    let mut listener = listener.get_connection().unwrap();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("__keyevent@0__:set").unwrap();
    redis::cmd("SET").arg("k").arg("v").query::<()>(&mut client).unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(pubsub.get_message().unwrap().get_payload::<String>().unwrap(), "k");
    drop(pubsub);
    // CONFIG REWRITE writes the current values into the file, keeping its
    // comments; a restart from it has them.
    redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("allkeys-lru").query::<()>(&mut client).unwrap();
    redis::cmd("CONFIG").arg("SET").arg("slowlog-max-len").arg("9").query::<()>(&mut client).unwrap();
    // One the server applies to itself at once: still a change for the
    // file (the first version compared it with the changed server).
    redis::cmd("CONFIG").arg("SET").arg("protected-mode").arg("no").query::<()>(&mut client).unwrap();
    redis::cmd("CONFIG").arg("REWRITE").query::<()>(&mut client).unwrap();
    let rewritten = std::fs::read_to_string(&conf).unwrap();
    for line in [
        "# a Redis 7 file",
        "port 6390",
        "requirepass \"s3cret pw\"",
        "slowlog-max-len 9",
        "appendonly yes",
        "daemonize yes",
        "# Generated by CONFIG REWRITE",
        "maxmemory-policy allkeys-lru",
        "protected-mode no",
    ] {
        assert!(rewritten.lines().any(|l| l == line), "{line:?} in {rewritten}");
    }
    assert!(!rewritten.contains("slowlog-max-len 7"), "the old value's line is replaced: {rewritten}");
    drop(server);
    let server = Server::start(&pool.0, &["--config", conf.to_str().unwrap()]);
    let client = redis::Client::open(format!("redis://:s3cret%20pw@{}/", server.resp)).unwrap();
    let mut client = client.get_connection().unwrap();
    assert_eq!(config_get(&mut client, "maxmemory-policy"), "allkeys-lru");
    assert_eq!(config_get(&mut client, "slowlog-max-len"), "9");
    drop(server);
    // Without a config file there is nothing to rewrite, as in Redis.
    let plain = Server::start(&pool.0, &[]);
    let error = redis::cmd("CONFIG").arg("REWRITE").query::<()>(&mut plain.client()).unwrap_err();
    assert!(error.to_string().contains("running without a config file"), "{error}");
    drop(plain);
    let logged = std::fs::read_to_string(&log).unwrap();
    for ignored in ["appendonly no", "appendfsync everysec", "daemonize"] {
        assert!(logged.contains(ignored), "a warning names {ignored}: {logged}");
    }
    // What packetstore cannot honour, or does not know, stops the start.
    let fresh = pool.0.with_extension("refused");
    for (line, why) in [
        ("frobnicate yes", "line 2: 'frobnicate' is not a Redis 7.0 configuration parameter"),
        ("maxmemory lots", "line 2: maxmemory lots: argument must be a memory value"),
        ("unixsocket /tmp/r.sock", "line 2: unixsocket: packetstore listens on TCP only"),
    ] {
        std::fs::write(&conf, format!("port 6391\n{line}\n")).unwrap();
        let out = Command::new(binary())
            .args(["serve", "--pool", fresh.to_str().unwrap(), "--config", conf.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(why), "{line}: {stderr}");
        assert!(!fresh.exists(), "nothing was created for a refused start");
    }
    let _ = std::fs::remove_file(&conf);
    let _ = std::fs::remove_file(&log);
}

/// The redis.conf files Redis users have: Redis 7.0.15's test suite's own
/// (`tests/redis-suite/tests/assets/default.conf`) and the stock one of
/// Debian's redis-server package (installed by scripts/test.sh): each
/// starts the server as it is, its settings read back.
#[test]
fn stock_redis_conf_files_start_the_server() {
    let suite_conf = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/redis-suite/tests/assets/default.conf");
    let debian_conf = "/etc/redis/redis.conf";
    assert!(Path::new(debian_conf).exists(), "{debian_conf}: scripts/test.sh installs redis-server");
    for (conf, keyspace_events) in [(suite_conf, "AKE"), (debian_conf, "")] {
        let pool = TempPool::new("stock-conf");
        let server = Server::start(&pool.0, &["--config", conf]);
        let mut client = server.client();
        assert_eq!(config_get(&mut client, "notify-keyspace-events"), keyspace_events, "{conf}");
        redis::cmd("SET").arg("k").arg("v").query::<()>(&mut client).unwrap();
        assert_eq!(redis::cmd("GET").arg("k").query::<String>(&mut client).unwrap(), "v", "{conf}");
    }
}
