//! A byte range inside one pool buffer: PASTE's {index:32, offset:16,
//! length:16}, the unit in which log records and tree values name data.
//!
//! Invariant: an extent is non-empty and lies inside its buffer
//! (`Extent::check`, which the log applies on append and recovery, and the
//! tree on insert and on reading a node or an index buffer back).

/// A byte range inside one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    pub buffer: u32,
    pub offset: u16,
    pub len: u16,
}

impl Extent {
    pub fn new(buffer: u32, offset: usize, len: usize) -> Extent {
        Extent {
            buffer,
            offset: u16::try_from(offset).expect("extent offset fits 16 bits"),
            len: u16::try_from(len).expect("extent length fits 16 bits"),
        }
    }

    /// Valid in a pool of `buffer_count` buffers of `buffer_size` bytes.
    pub fn check(&self, buffer_count: u32, buffer_size: u32) -> Result<(), String> {
        if self.buffer >= buffer_count {
            return Err(format!("extent names buffer {} of {buffer_count}", self.buffer));
        }
        if self.len == 0 || u32::from(self.offset) + u32::from(self.len) > buffer_size {
            return Err(format!(
                "extent [{}, +{}) of buffer {} does not fit a {buffer_size}-byte buffer",
                self.offset, self.len, self.buffer
            ));
        }
        Ok(())
    }
}
