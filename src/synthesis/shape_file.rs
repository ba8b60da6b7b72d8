//! Saving a recorded [`CircuitShape`] and loading it back, validated: a file
//! that does not describe a well-formed shape is an error, never a panic.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use super::{CircuitShape, SparseMatrix};
use crate::Error;

const MAGIC: &[u8; 8] = b"G16SHAPE";
const VERSION: u32 = 1;

/// Hands out bytes from a buffer, checking each count against what is left
/// before anything is allocated for it.
pub(super) struct ByteSource<'a> {
    bytes: &'a [u8],
}

impl<'a> ByteSource<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.bytes.len() {
            return Err(format!("needs {n} more bytes, {} remain", self.bytes.len()));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// A u64 count of items of `item_bytes` each, checked against the bytes left.
    pub(super) fn count(&mut self, item_bytes: usize) -> Result<usize, String> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"));
        if n.saturating_mul(item_bytes as u64) > self.bytes.len() as u64 {
            return Err(format!("count {n} exceeds the file"));
        }
        Ok(n as usize)
    }

    pub(super) fn u64s(&mut self, n: usize) -> Result<Vec<u64>, String> {
        let raw = self.take(n.checked_mul(8).ok_or("count overflows")?)?;
        Ok(raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }

    pub(super) fn u32s(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let raw = self.take(n.checked_mul(4).ok_or("count overflows")?)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }
}

impl CircuitShape {
    /// Writes the shape: magic, version, variable counts, then A, B, C.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(MAGIC)?;
        w.write_all(&VERSION.to_le_bytes())?;
        w.write_all(&(self.num_inputs() as u64).to_le_bytes())?;
        w.write_all(&(self.num_aux() as u64).to_le_bytes())?;
        for m in self.matrices() {
            m.write_to(&mut w)?;
        }
        Ok(())
    }

    /// Writes the shape to a file.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let mut w = BufWriter::new(File::create(path)?);
        self.write(&mut w)?;
        Ok(w.flush()?)
    }

    /// Reads a shape written by [`write`](Self::write), validating every count
    /// and index.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::parse(bytes).map_err(Error::MalformedShape)
    }

    /// Reads a shape file.
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::from_bytes(&std::fs::read(path)?)
    }

    fn parse(bytes: &[u8]) -> Result<Self, String> {
        let mut src = ByteSource { bytes };
        if src.take(8)? != MAGIC {
            return Err("not a circuit shape file".into());
        }
        let version = u32::from_le_bytes(src.take(4)?.try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(format!("shape file version {version}, expected {VERSION}"));
        }
        let num_inputs = src.count(0)?;
        let num_aux = src.count(0)?;
        if num_inputs == 0
            || num_inputs > u32::MAX as usize >> 1
            || num_aux > u32::MAX as usize >> 1
        {
            return Err("variable counts out of range".into());
        }
        let mut read = || SparseMatrix::read_from(&mut src, num_inputs, num_aux);
        let (a, b, c) = (read()?, read()?, read()?);
        if a.num_rows() != b.num_rows() || a.num_rows() != c.num_rows() {
            return Err("A, B and C have different row counts".into());
        }
        if !src.bytes.is_empty() {
            return Err(format!("{} trailing bytes", src.bytes.len()));
        }
        Ok(CircuitShape::from_matrices(num_inputs, num_aux, [a, b, c]))
    }
}
