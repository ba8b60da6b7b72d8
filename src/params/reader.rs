use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use blstrs::{G1Affine, G2Affine};

use super::codec::{decode_points, CheckMode, EncodedPoint};
use super::{ParamsError, ProvingKey, VerifyingKey};

/// Points decoded per batch: bounds the memory a stream with a lying count can make us take.
const POINTS_PER_BATCH: usize = 1 << 16;

/// Reads sections of the `.params` layout, checking each count against the
/// bytes left (when the total length is known) before allocating for it.
struct SectionReader<R> {
    inner: R,
    remaining: Option<u64>,
    mode: CheckMode,
    buffer: Vec<u8>,
}

impl<R: Read> SectionReader<R> {
    fn new(inner: R, length: Option<u64>, mode: CheckMode) -> Self {
        Self {
            inner,
            remaining: length,
            mode,
            buffer: Vec::new(),
        }
    }

    /// Fails early when the known length cannot hold `needed` more bytes.
    fn ensure_available(&self, section: &'static str, needed: u64) -> Result<(), ParamsError> {
        match self.remaining {
            Some(available) if available < needed => Err(ParamsError::Truncated {
                section,
                needed,
                available,
            }),
            _ => Ok(()),
        }
    }

    /// Reads exactly `n` bytes into the internal buffer.
    fn fill(&mut self, section: &'static str, n: usize) -> Result<(), ParamsError> {
        self.ensure_available(section, n as u64)?;
        self.buffer.resize(n, 0);
        let mut got = 0;
        while got < n {
            match self.inner.read(&mut self.buffer[got..]) {
                Ok(0) => {
                    return Err(ParamsError::Truncated {
                        section,
                        needed: n as u64,
                        available: got as u64,
                    })
                }
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(r) = self.remaining.as_mut() {
            *r -= n as u64;
        }
        Ok(())
    }

    fn count(&mut self, section: &'static str) -> Result<usize, ParamsError> {
        self.fill(section, 4)?;
        let bytes: [u8; 4] = self.buffer[..4].try_into().expect("four bytes were read");
        Ok(u32::from_be_bytes(bytes) as usize)
    }

    fn point<P: EncodedPoint>(&mut self, section: &'static str) -> Result<P, ParamsError> {
        Ok(self.points::<P>(section, 1)?.remove(0))
    }

    fn points<P: EncodedPoint>(
        &mut self,
        section: &'static str,
        count: usize,
    ) -> Result<Vec<P>, ParamsError> {
        self.ensure_available(section, count as u64 * P::BYTES as u64)?;
        let mut points = Vec::with_capacity(count.min(POINTS_PER_BATCH));
        while points.len() < count {
            let batch = (count - points.len()).min(POINTS_PER_BATCH);
            self.fill(section, batch * P::BYTES)?;
            let decoded = decode_points::<P>(&self.buffer, self.mode, section, points.len())?;
            points.extend(decoded);
        }
        Ok(points)
    }

    fn counted_points<P: EncodedPoint>(
        &mut self,
        section: &'static str,
    ) -> Result<Vec<P>, ParamsError> {
        let count = self.count(section)?;
        self.points(section, count)
    }

    /// Fails if any byte follows.
    fn finish(mut self) -> Result<(), ParamsError> {
        let mut trailing = 0u64;
        let mut scratch = [0u8; 4096];
        loop {
            match self.inner.read(&mut scratch) {
                Ok(0) => break,
                Ok(k) => trailing += k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if trailing > 0 {
            return Err(ParamsError::TrailingBytes(trailing));
        }
        Ok(())
    }

    fn verifying_key(&mut self) -> Result<VerifyingKey, ParamsError> {
        Ok(VerifyingKey {
            alpha_g1: self.point::<G1Affine>("vk.alpha_g1")?,
            beta_g1: self.point::<G1Affine>("vk.beta_g1")?,
            beta_g2: self.point::<G2Affine>("vk.beta_g2")?,
            gamma_g2: self.point::<G2Affine>("vk.gamma_g2")?,
            delta_g1: self.point::<G1Affine>("vk.delta_g1")?,
            delta_g2: self.point::<G2Affine>("vk.delta_g2")?,
            ic: self.counted_points::<G1Affine>("vk.ic")?,
        })
    }

    fn proving_key(&mut self) -> Result<ProvingKey, ParamsError> {
        let vk = self.verifying_key()?;
        let h = self.counted_points("h")?;
        log::debug!("read h: {} points", h.len());
        let l = self.counted_points("l")?;
        log::debug!("read l: {} points", l.len());
        let a = self.counted_points("a")?;
        let b_g1 = self.counted_points("b_g1")?;
        let b_g2 = self.counted_points("b_g2")?;
        Ok(ProvingKey {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }
}

impl ProvingKey {
    /// Reads a whole key from a stream; anything after the last section is an error.
    pub fn read<R: Read>(reader: R, mode: CheckMode) -> Result<Self, ParamsError> {
        let mut sections = SectionReader::new(reader, None, mode);
        let key = sections.proving_key()?;
        sections.finish()?;
        Ok(key)
    }

    /// Reads a key held in memory.
    pub fn from_bytes(bytes: &[u8], mode: CheckMode) -> Result<Self, ParamsError> {
        let mut sections = SectionReader::new(bytes, Some(bytes.len() as u64), mode);
        let key = sections.proving_key()?;
        sections.finish()?;
        Ok(key)
    }

    /// Reads a `.params` file through a memory map, decoding points in parallel.
    pub fn read_file(path: impl AsRef<Path>, mode: CheckMode) -> Result<Self, ParamsError> {
        let file = File::open(path.as_ref())?;
        // SAFETY: the map is read-only and dropped before returning; a file
        // truncated underneath us by another process is outside our contract
        // (as for any mapped reader), which is why `read` exists too.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Self::from_bytes(&map, mode)
    }
}

impl VerifyingKey {
    /// Reads a verifying key from the front of a stream, leaving the rest unread.
    pub fn read<R: Read>(reader: R) -> Result<Self, ParamsError> {
        SectionReader::new(reader, None, CheckMode::Subgroup).verifying_key()
    }

    /// Reads a verifying key that fills `bytes` exactly.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ParamsError> {
        let mut sections = SectionReader::new(bytes, Some(bytes.len() as u64), CheckMode::Subgroup);
        let vk = sections.verifying_key()?;
        sections.finish()?;
        Ok(vk)
    }
}
