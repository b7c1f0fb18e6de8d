//! Goal: the io_uring engine opens the connections an application asks for
//! (dials) and holds the replies of an application that acknowledges
//! externally until it says so (what replication builds on).
//!
//! Method: a toy application on a real engine, over a pool on /dev/shm.
//! It dials an echo server (a std thread), sends a line, and records what
//! comes back; it dials a closed port and must hear ConnectionRefused. A
//! client's request gets a reply that must not arrive before the test
//! raises the application's acknowledged count, and must arrive after.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use packetstore::io::app::{App, ConnToken, Dial, Persist, Progress, Release, DIALED};
use packetstore::io::engine::{Engine, EngineConfig};
use packetstore::io::outq::OutQueue;
use packetstore::io::stream::Stream;
use packetstore::{Buffers, Geometry, PersistOptions, Pool};

#[derive(Default)]
struct Shared {
    echoed: Mutex<Vec<u8>>,
    failures: Mutex<Vec<(usize, std::io::ErrorKind)>>,
    acknowledged: AtomicU64,
}

struct Toy {
    shared: Arc<Shared>,
    dials: Vec<Dial>,
    dialed: Option<ConnToken>,
    wake: Vec<ConnToken>,
    sent_hello: bool,
    dirty: bool,
    begun: u64,
}

enum ToyConn {
    Client,
    Dialed,
}

impl App for Toy {
    type Conn = ToyConn;
    type Ticket = ();

    fn persist(&self) -> Persist {
        Persist::ZeroCopy
    }

    fn connect(&mut self, listener: usize, token: ConnToken) -> ToyConn {
        if listener >= DIALED {
            self.dialed = Some(token);
            self.wake.push(token);
            ToyConn::Dialed
        } else {
            ToyConn::Client
        }
    }

    fn on_input(
        &mut self,
        _pool: &Pool,
        buffers: &mut Buffers,
        conn: &mut ToyConn,
        stream: &mut Stream,
        out: &mut OutQueue,
        _requests_max: usize,
        release: &mut Release<'_>,
    ) -> Progress {
        let mut bytes = Vec::new();
        stream.for_each_slice(stream.len(), |s| bytes.extend_from_slice(s));
        let n = stream.len();
        stream.consume(n, |segment| release(segment, buffers));
        match conn {
            ToyConn::Dialed => {
                if !self.sent_hello {
                    self.sent_hello = true;
                    out.push(b"hello\n");
                }
                self.shared.echoed.lock().unwrap().extend_from_slice(&bytes);
            }
            ToyConn::Client => {
                if !bytes.is_empty() {
                    out.push(b"reply\n");
                    self.dirty = true;
                }
            }
        }
        Progress { requests: usize::from(!bytes.is_empty()), close: false, more: false, waits: false }
    }

    fn abandon(&mut self, _buffers: &mut Buffers, _conn: &mut ToyConn) {}

    fn needs_commit(&self) -> bool {
        self.dirty
    }

    fn writes_pending(&self) -> bool {
        self.dirty
    }

    fn commit(&mut self, _pool: &Pool, _buffers: &mut Buffers) -> std::io::Result<()> {
        self.dirty = false;
        Ok(())
    }

    fn begin_commit(&mut self, _pool: &Pool, _buffers: &mut Buffers) -> std::io::Result<Option<()>> {
        if !self.dirty {
            return Ok(None);
        }
        self.dirty = false;
        self.begun += 1;
        Ok(Some(()))
    }

    fn finish_commit(&mut self, _pool: &Pool, _buffers: &mut Buffers, _ticket: ()) -> std::io::Result<()> {
        Ok(())
    }

    fn fail_commit(&mut self) {}

    fn take_dials(&mut self, dials: &mut Vec<Dial>) {
        dials.append(&mut self.dials);
    }

    fn dial_failed(&mut self, id: usize, error: std::io::Error) {
        self.shared.failures.lock().unwrap().push((id, error.kind()));
    }

    fn take_wakeups(&mut self, wake: &mut Vec<ConnToken>) {
        wake.append(&mut self.wake);
    }

    fn tick_interval(&self) -> Option<Duration> {
        Some(Duration::from_millis(5))
    }

    fn acknowledges_externally(&self) -> bool {
        true
    }

    fn commits_acknowledged(&self) -> u64 {
        self.shared.acknowledged.load(Ordering::Relaxed)
    }
}

fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

#[test]
fn dials_and_external_acknowledgements() {
    let echo = TcpListener::bind("127.0.0.1:0").unwrap();
    let echo_addr = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut socket, _) = echo.accept().unwrap();
        let mut buf = [0u8; 64];
        while let Ok(n) = socket.read(&mut buf) {
            if n == 0 || socket.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let refused = closed_port();
    let shared = Arc::new(Shared::default());
    let stop = Arc::new(AtomicBool::new(false));
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let loop_shared = shared.clone();
    let loop_stop = stop.clone();
    let server = std::thread::spawn(move || {
        let path = std::path::PathBuf::from(format!("/dev/shm/packetstore-engine-test-{}.pool", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let geometry = Geometry { buffer_size: 2048, buffer_count: 1024, log_size: 64 * 1024, log_count: 1 };
        let pool = Pool::create(&path, geometry, &PersistOptions::default()).unwrap();
        let mut buffers = Buffers::new(geometry.buffer_count);
        let mut app = Toy {
            shared: loop_shared,
            dials: vec![
                Dial { id: 7, addr: echo_addr, timeout: Duration::from_secs(2) },
                Dial { id: 8, addr: refused, timeout: Duration::from_secs(2) },
            ],
            dialed: None,
            wake: Vec::new(),
            sent_hello: false,
            dirty: false,
            begun: 0,
        };
        let config = EngineConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ring_entries: 64,
            incremental: false,
            ..EngineConfig::default()
        };
        let mut engine = Engine::new(&pool, &mut buffers, &mut app, config, Vec::new()).unwrap();
        addr_tx.send(engine.local_addr().unwrap()).unwrap();
        engine.run(&loop_stop).unwrap();
        drop(engine);
        let _ = std::fs::remove_file(&path);
    });
    let addr = addr_rx.recv().unwrap();
    // The dial to the echo server carries "hello" there and back.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while shared.echoed.lock().unwrap().as_slice() != b"hello\n" {
        assert!(
            std::time::Instant::now() < deadline,
            "echo: {:?}, failures {:?}",
            shared.echoed.lock().unwrap(),
            shared.failures.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(shared.failures.lock().unwrap().as_slice(), &[(8, std::io::ErrorKind::ConnectionRefused)]);
    // A reply waits for the acknowledgement.
    let mut client = TcpStream::connect(addr).unwrap();
    client.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    client.write_all(b"request\n").unwrap();
    let mut buf = [0u8; 16];
    let early = client.read(&mut buf);
    assert!(early.is_err(), "a reply left before its commit was acknowledged: {early:?}");
    shared.acknowledged.store(1, Ordering::Relaxed);
    client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let n = client.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"reply\n");
    stop.store(true, Ordering::Relaxed);
    drop(client);
    server.join().unwrap();
}
