//! The hybrid read's other half: a one-sided reader asks the server over
//! its Redis port when it cannot prove an answer from the pool (eFactory's
//! fallback RPC). A minimal RESP2 client: one connection, made when first
//! needed and again after an error, commands sent one at a time.
//!
//! Owns: the connection, its selected database and authentication.
//!
//! Invariant: every size read from the server is bounded (`BULK_LEN_MAX`,
//! `LINE_SIZE_MAX`); a connection that failed or answered out of protocol
//! is dropped, never reused.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::proto::resp::{BULK_LEN_MAX, LINE_SIZE_MAX};

/// How long a fallback waits for the server.
pub const FALLBACK_TIMEOUT: Duration = Duration::from_secs(5);

/// A server's reply to a fallback command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Bulk(Option<Vec<u8>>),
    Integer(i64),
    Status(String),
    Error(String),
}

/// The connection to the server, made on demand.
pub struct Fallback {
    address: String,
    password: Option<String>,
    connection: Option<Connection>,
}

struct Connection {
    reader: BufReader<TcpStream>,
    db: u8,
}

impl Fallback {
    /// A fallback to the server at `address` (`host:port`), authenticating
    /// with `password` if given. Connects at the first command.
    pub fn new(address: &str, password: Option<&str>) -> Fallback {
        Fallback { address: address.to_string(), password: password.map(str::to_string), connection: None }
    }

    /// Sends `args` in database `db` and reads the reply.
    pub fn command(&mut self, db: u8, args: &[&[u8]]) -> io::Result<Reply> {
        let result = self.try_command(db, args);
        if result.is_err() {
            self.connection = None;
        }
        result
    }

    fn try_command(&mut self, db: u8, args: &[&[u8]]) -> io::Result<Reply> {
        if self.connection.is_none() {
            self.connection = Some(self.connect()?);
        }
        let connection = self.connection.as_mut().expect("connected above");
        if connection.db != db {
            expect_ok(connection.call(&[b"SELECT", db.to_string().as_bytes()])?)?;
            connection.db = db;
        }
        connection.call(args)
    }

    fn connect(&self) -> io::Result<Connection> {
        let address = std::net::ToSocketAddrs::to_socket_addrs(&self.address)?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("no address for {}", self.address)))?;
        let stream = TcpStream::connect_timeout(&address, FALLBACK_TIMEOUT)?;
        stream.set_read_timeout(Some(FALLBACK_TIMEOUT))?;
        stream.set_write_timeout(Some(FALLBACK_TIMEOUT))?;
        stream.set_nodelay(true)?;
        let mut connection = Connection { reader: BufReader::new(stream), db: 0 };
        if let Some(password) = &self.password {
            expect_ok(connection.call(&[b"AUTH", password.as_bytes()])?)?;
        }
        Ok(connection)
    }
}

fn expect_ok(reply: Reply) -> io::Result<()> {
    match reply {
        Reply::Status(_) => Ok(()),
        Reply::Error(error) => Err(io::Error::other(format!("the server refused: {error}"))),
        other => Err(protocol(&format!("unexpected reply {other:?}"))),
    }
}

fn protocol(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("the server's reply: {what}"))
}

impl Connection {
    fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        let mut request = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            request.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            request.extend_from_slice(arg);
            request.extend_from_slice(b"\r\n");
        }
        self.reader.get_mut().write_all(&request)?;
        self.read_reply()
    }

    fn read_line(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        let read = (&mut self.reader).take(LINE_SIZE_MAX as u64).read_until(b'\n', &mut line)?;
        if read == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
        }
        if !line.ends_with(b"\r\n") {
            return Err(protocol("a line without CRLF, or too long"));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn read_reply(&mut self) -> io::Result<Reply> {
        let line = self.read_line()?;
        let (&kind, rest) = line.split_first().ok_or_else(|| protocol("an empty line"))?;
        let text = || String::from_utf8_lossy(rest).into_owned();
        let number = || text().parse::<i64>().map_err(|_| protocol("a bad number"));
        match kind {
            b'+' => Ok(Reply::Status(text())),
            b'-' => Ok(Reply::Error(text())),
            b':' => Ok(Reply::Integer(number()?)),
            b'$' => {
                let len = number()?;
                if len < 0 {
                    return Ok(Reply::Bulk(None));
                }
                if len as u64 > BULK_LEN_MAX {
                    return Err(protocol("a bulk string over the limit"));
                }
                let mut bytes = vec![0u8; len as usize + 2];
                io::Read::read_exact(&mut self.reader, &mut bytes)?;
                if !bytes.ends_with(b"\r\n") {
                    return Err(protocol("a bulk string without CRLF"));
                }
                bytes.truncate(len as usize);
                Ok(Reply::Bulk(Some(bytes)))
            }
            _ => Err(protocol("an unexpected reply type")),
        }
    }
}
