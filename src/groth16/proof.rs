use std::io::{Read, Write};

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;

use crate::Error;

/// Bytes of an encoded proof: A and C compressed in G1 (48 each), B in G2 (96).
pub const PROOF_BYTES: usize = 192;

/// A Groth16 proof (A, B, C), encoded as bellperson encodes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// A in G1.
    pub a: G1Affine,
    /// B in G2.
    pub b: G2Affine,
    /// C in G1.
    pub c: G1Affine,
}

impl Proof {
    /// bellperson's 192-byte encoding: A, B, C compressed.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes exactly [`PROOF_BYTES`] bytes, checking each point is in its
    /// prime-order subgroup and not the identity (as bellperson does).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() != PROOF_BYTES {
            return Err(Error::MalformedProof("a proof is exactly 192 bytes"));
        }
        let a = decode_g1(&bytes[..48], "A is not a valid compressed G1 point")?;
        let b_bytes: &[u8; 96] = bytes[48..144].try_into().expect("96 bytes");
        let b: G2Affine = Option::from(G2Affine::from_compressed(b_bytes)).ok_or(
            Error::MalformedProof("B is not a valid compressed G2 point"),
        )?;
        let c = decode_g1(&bytes[144..], "C is not a valid compressed G1 point")?;
        if bool::from(a.is_identity() | b.is_identity() | c.is_identity()) {
            return Err(Error::MalformedProof("a proof point is the identity"));
        }
        Ok(Self { a, b, c })
    }

    /// Writes the 192-byte encoding.
    pub fn write<W: Write>(&self, mut writer: W) -> std::io::Result<()> {
        writer.write_all(&self.to_bytes())
    }

    /// Reads one 192-byte proof.
    pub fn read<R: Read>(mut reader: R) -> Result<Self, Error> {
        let mut bytes = [0u8; PROOF_BYTES];
        reader.read_exact(&mut bytes)?;
        Self::from_bytes(&bytes)
    }

    /// Decodes `count` proofs laid end to end, as bellperson's `read_many`
    /// (how Filecoin keeps a sector's partition proofs), over the cores:
    /// each point's subgroup check is a scalar multiplication. Bytes that
    /// are not exactly `count` proofs, or any proof that [`from_bytes`]
    /// refuses, is an error.
    ///
    /// [`from_bytes`]: Self::from_bytes
    pub fn read_many(bytes: &[u8], count: usize) -> Result<Vec<Self>, Error> {
        if Some(bytes.len()) != count.checked_mul(PROOF_BYTES) {
            return Err(Error::MalformedProof(
                "proofs laid end to end are 192 bytes each",
            ));
        }
        bytes
            .par_chunks_exact(PROOF_BYTES)
            .map(Self::from_bytes)
            .collect()
    }
}

fn decode_g1(bytes: &[u8], what: &'static str) -> Result<G1Affine, Error> {
    let raw: &[u8; 48] = bytes.try_into().expect("48 bytes");
    Option::from(G1Affine::from_compressed(raw)).ok_or(Error::MalformedProof(what))
}
