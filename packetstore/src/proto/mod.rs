//! Wire formats: HTTP/1.1 request heads (`http`) and the Redis protocol
//! (`resp`: RESP2/RESP3 requests parsed into arguments that stay in the
//! pool buffers they arrived in, and replies). No connection state lives
//! here beyond one request's parse.

pub mod http;
pub mod resp;
