use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::codec::EncodedPoint;
use super::{ProvingKey, VerifyingKey};

fn write_count<W: Write>(writer: &mut W, count: usize) -> io::Result<()> {
    let count = u32::try_from(count)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "section exceeds u32 points"))?;
    writer.write_all(&count.to_be_bytes())
}

fn write_points<W: Write, P: EncodedPoint>(writer: &mut W, points: &[P]) -> io::Result<()> {
    write_count(writer, points.len())?;
    for p in points {
        writer.write_all(&p.encode())?;
    }
    Ok(())
}

impl VerifyingKey {
    /// Writes the verifying key in bellperson's layout.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        writer.write_all(&self.alpha_g1.encode())?;
        writer.write_all(&self.beta_g1.encode())?;
        writer.write_all(&self.beta_g2.encode())?;
        writer.write_all(&self.gamma_g2.encode())?;
        writer.write_all(&self.delta_g1.encode())?;
        writer.write_all(&self.delta_g2.encode())?;
        write_points(&mut writer, &self.ic)
    }
}

impl ProvingKey {
    /// Writes the key in bellperson's `.params` layout.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_points(&mut writer, &self.h)?;
        write_points(&mut writer, &self.l)?;
        write_points(&mut writer, &self.a)?;
        write_points(&mut writer, &self.b_g1)?;
        write_points(&mut writer, &self.b_g2)
    }

    /// Writes the key to a file.
    pub fn write_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let mut writer = BufWriter::with_capacity(1 << 20, File::create(path)?);
        self.write(&mut writer)?;
        writer.flush()
    }
}
