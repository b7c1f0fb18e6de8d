//! The I/O layer: event loops that move bytes between sockets and pool
//! buffers and know applications only through the `App` trait. The
//! io_uring engine (`engine`, with its provided-buffer ring `bufring` and
//! the kernel feature probe `probe`), the epoll baseline (`epoll`), a
//! connection's received bytes (`stream`) and outgoing bytes (`outq`),
//! connection slots, listening sockets (`net`), and running one loop or N
//! loops on one port, each with its own ring and buffers (`cores`); and a
//! switch's ports (`ports`): AF_XDP over the pool's buffers (`xdp`).
//!
//! It stands on the pool only: it never reaches the log, the index, the
//! store, the wire formats or the applications.

pub mod app;
mod bufring;
pub mod cores;
pub mod dial;
pub mod engine;
pub mod epoll;
pub mod net;
pub mod outq;
pub mod packet;
pub mod ports;
pub mod probe;
mod slots;
pub mod stream;
pub mod xdp;

pub use app::App;
