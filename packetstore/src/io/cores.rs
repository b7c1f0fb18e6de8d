//! Event loops per core: running one application on the io_uring engine
//! or the epoll baseline (`run_loop`), and N loops on one port (`Loops`),
//! each on its own thread with its own ring, its own share of the pool's
//! buffers and its own application (which owns its log).
//!
//! Owns: the loops' threads, the SO_REUSEPORT listeners after the first,
//! and the gate that holds every loop back until all have recovered. It
//! knows applications only through [`App`] and what their recovery
//! returns as an opaque report, so it never reaches the log or the store.
//!
//! Invariants: no loop serves before every loop has recovered (a request
//! to one loop may name what another loop's recovery restores); a loop
//! that fails to recover stops every other before it serves; a loop that
//! returns hands its outcome to the caller's `finished` on its own thread
//! at once, so the caller can end the process before another loop
//! acknowledges anything more.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::io::app::App;
use crate::io::engine::{Engine, EngineConfig};
use crate::io::epoll::{CommitPolicy, EpollServer};
use crate::pool::buffers::Buffers;
use crate::pool::file::Pool;

/// Why an event loop stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error("setting up the io_uring engine: {0}")]
    UringSetup(io::Error),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Runs `app` on one event loop until `stop`: the io_uring engine, or with
/// `policy` the epoll loop (with `config.wake_fd` as its wake-up).
/// `on_ready` runs once the loop is set up, before it serves. Returns
/// whether the loop drained (sent every reply) before it stopped.
pub fn run_loop<A: App>(
    pool: &Pool,
    buffers: &mut Buffers,
    app: &mut A,
    policy: Option<CommitPolicy>,
    config: EngineConfig,
    listeners: Vec<OwnedFd>,
    (stop, on_ready): (&AtomicBool, impl FnOnce()),
) -> Result<bool, LoopError> {
    match policy {
        None => {
            let mut engine = Engine::new(pool, buffers, app, config, listeners).map_err(LoopError::UringSetup)?;
            on_ready();
            engine.run(stop)?;
            Ok(engine.is_drained())
        }
        Some(policy) => {
            let mut server = EpollServer::new(pool, buffers, app, config.listen, policy, listeners)?;
            if let Some(fd) = config.wake_fd {
                server.set_wake_fd(fd)?;
            }
            on_ready();
            server.run(stop)?;
            Ok(server.is_drained())
        }
    }
}

/// A loop that could not start: its recovery's error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(pub String);

/// N event loops serving one port.
pub struct Loops<'a> {
    pub pool: &'a Pool,
    /// The epoll loop with this commit policy; None: the io_uring engine.
    pub policy: Option<CommitPolicy>,
    /// The whole server's configuration: each loop takes its share of
    /// `connections_max`.
    pub config: EngineConfig,
    /// One listener per loop, all on one port (`bind_reuse_port`).
    pub listeners: Vec<OwnedFd>,
    pub stop: &'a AtomicBool,
}

/// What one loop's recovery made: its application, and a report the
/// caller reads on its own thread once the loop is ready to serve.
pub type Recovered<A, R> = Result<(A, R), String>;

impl Loops<'_> {
    /// Runs one loop per listener, each on its own thread, until stopped.
    ///
    /// Loop `index` takes the pool's buffer range `index`, and `recover`
    /// builds its application (recovering its log). Once every loop has
    /// recovered and set up its event loop, `started` receives their
    /// reports on the calling thread, in the order the loops became ready.
    /// A loop whose recovery
    /// fails makes `run` return that error, and no loop serves. When a
    /// loop returns (its setup failed, or it stopped), `finished` gets its
    /// index and outcome on the loop's thread (to end the process on an
    /// error, say).
    pub fn run<A, R, E>(
        self,
        recover: impl Fn(u32, &mut Buffers) -> Recovered<A, R> + Sync,
        finished: impl Fn(u32, Result<bool, LoopError>) + Sync,
        started: impl FnOnce(Vec<R>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        A: App,
        R: Send,
        E: From<StartError>,
    {
        let count = u32::try_from(self.listeners.len()).expect("at most u32::MAX loops");
        let gate = RecoveredGate { recovered: AtomicU32::new(0), failed: AtomicBool::new(false), loops: count };
        let (ready, reports) = mpsc::channel::<Result<R, String>>();
        let (gate, recover, finished) = (&gate, &recover, &finished);
        std::thread::scope(|scope| {
            for (index, listener) in (0..count).zip(self.listeners) {
                let ready = ready.clone();
                // Each loop takes its share of the connection limit.
                let config = EngineConfig {
                    connections_max: self.config.connections_max.div_ceil(count as usize),
                    ..self.config.clone()
                };
                let (pool, policy, stop) = (self.pool, self.policy, self.stop);
                scope.spawn(move || {
                    let one = OneLoop { pool, index, policy, config, stop, gate };
                    let outcome = one.serve(listener, recover, &ready);
                    finished(index, outcome);
                });
            }
            drop(ready);
            let mut ready_reports = Vec::with_capacity(count as usize);
            for _ in 0..count {
                match reports.recv() {
                    Ok(Ok(report)) => ready_reports.push(report),
                    Ok(Err(error)) => return Err(E::from(StartError(error))),
                    Err(_) => return Err(E::from(StartError("an event loop failed to start".to_string()))),
                }
            }
            started(ready_reports)
        })
    }
}

/// One of `Loops`' loops, on its thread.
struct OneLoop<'a> {
    pool: &'a Pool,
    index: u32,
    policy: Option<CommitPolicy>,
    config: EngineConfig,
    stop: &'a AtomicBool,
    gate: &'a RecoveredGate,
}

impl OneLoop<'_> {
    /// Recovers, waits for the other loops, sets up and serves. A failed
    /// recovery or setup is reported on `ready` (and opens the gate's
    /// failure, so the others stop); the loop then returns Ok.
    fn serve<A: App, R>(
        self,
        listener: OwnedFd,
        recover: &(impl Fn(u32, &mut Buffers) -> Recovered<A, R> + Sync),
        ready: &mpsc::Sender<Result<R, String>>,
    ) -> Result<bool, LoopError> {
        let (first, count) = self.pool.geometry().buffer_range(self.index);
        let mut buffers = Buffers::range(first, count);
        let (mut app, report) = match recover(self.index, &mut buffers) {
            Ok(recovered) => recovered,
            Err(error) => {
                self.gate.failed.store(true, Ordering::SeqCst);
                let _ = ready.send(Err(error));
                return Ok(false);
            }
        };
        if !self.gate.wait_for_all(self.stop) {
            return Ok(false);
        }
        let on_ready = || {
            let _ = ready.send(Ok(report));
        };
        run_loop(self.pool, &mut buffers, &mut app, self.policy, self.config, vec![listener], (self.stop, on_ready))
    }
}

/// The loops serve only once every loop has recovered its log: a request
/// may name a record of another loop's log, which is in the shared index
/// only after that loop's recovery (a loop serving early answered 404 for
/// an acknowledged body: found by the CLI's tests/restart.rs).
struct RecoveredGate {
    recovered: AtomicU32,
    failed: AtomicBool,
    loops: u32,
}

impl RecoveredGate {
    /// This loop has recovered: waits for the others. False if one failed
    /// or the server is stopping (then this loop does not serve).
    fn wait_for_all(&self, stop: &AtomicBool) -> bool {
        self.recovered.fetch_add(1, Ordering::SeqCst);
        while self.recovered.load(Ordering::SeqCst) < self.loops {
            if self.failed.load(Ordering::SeqCst) || stop.load(Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

/// `count` listeners on the port of `first` (already bound, with
/// SO_REUSEPORT): `first` and `count - 1` more, so that the kernel spreads
/// the connections over `count` loops. An error names the loop whose
/// listener could not be bound.
pub fn listeners_on_port(first: OwnedFd, count: u32, nonblocking: bool) -> Result<Vec<OwnedFd>, (u32, io::Error)> {
    let addr = crate::io::net::local_addr(&first).map_err(|error| (0, error))?;
    let mut listeners = vec![first];
    for index in 1..count {
        listeners.push(crate::io::net::listen(addr, true, nonblocking).map_err(|error| (index, error))?);
    }
    Ok(listeners)
}

/// Each connection is a descriptor: lifts the soft limit on open files to
/// the hard one.
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: valid out-parameter; then the same struct, adjusted, as input.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// The CPUs this process may run on (its affinity mask), in order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most size_of::<cpu_set_t>() bytes into it.
    let set = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        set
    };
    // SAFETY: CPU_ISSET reads the set within its size (cpu < CPU_SETSIZE).
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect())
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes
    // within it (cpu < CPU_SETSIZE is checked); pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {cpu} is beyond CPU_SETSIZE")));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
