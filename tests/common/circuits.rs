//! Circuits shared by the tests, benchmarks and examples (included by path).
#![allow(dead_code)]

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::num::AllocatedNum;
use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_core::RngCore;

fn value<T: Copy>(v: &Option<T>) -> Result<T, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

/// SHA-256 of a message through bellpepper's gadgets; the digest, packed into
/// field elements, is the public input.
#[derive(Clone)]
pub struct Sha256Circuit {
    pub message_len: usize,
    pub message: Option<Vec<u8>>,
}

impl Sha256Circuit {
    pub fn new(message: Vec<u8>) -> Self {
        Self {
            message_len: message.len(),
            message: Some(message),
        }
    }

    pub fn blank(message_len: usize) -> Self {
        Self {
            message_len,
            message: None,
        }
    }

    /// About this many constraints per message byte, for sizing.
    pub const CONSTRAINTS_PER_BYTE: usize = 27_000 / 64;

    pub fn public_inputs(message: &[u8]) -> Vec<Scalar> {
        use sha2_digest::digest;
        multipack::compute_multipacking(&multipack::bytes_to_bits(&digest(message)))
    }
}

impl Circuit<Scalar> for Sha256Circuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut bits = Vec::with_capacity(self.message_len * 8);
        for i in 0..self.message_len {
            for j in 0..8 {
                let bit = self.message.as_ref().map(|m| (m[i] >> (7 - j)) & 1 == 1);
                let allocated = AllocatedBit::alloc(cs.namespace(|| format!("bit {i}.{j}")), bit)?;
                bits.push(Boolean::from(allocated));
            }
        }
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

/// A plain SHA-256 for the expected public input (bellpepper's gadget is the thing under test).
pub mod sha2_digest {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];

    pub fn digest(message: &[u8]) -> [u8; 32] {
        let mut h: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let mut padded = message.to_vec();
        padded.push(0x80);
        while padded.len() % 64 != 56 {
            padded.push(0);
        }
        padded.extend_from_slice(&((message.len() as u64) * 8).to_be_bytes());
        for block in padded.chunks(64) {
            let mut w = [0u32; 64];
            for t in 0..16 {
                w[t] = u32::from_be_bytes(block[4 * t..4 * t + 4].try_into().unwrap());
            }
            for t in 16..64 {
                let s0 = w[t - 15].rotate_right(7) ^ w[t - 15].rotate_right(18) ^ (w[t - 15] >> 3);
                let s1 = w[t - 2].rotate_right(17) ^ w[t - 2].rotate_right(19) ^ (w[t - 2] >> 10);
                w[t] = w[t - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[t - 7])
                    .wrapping_add(s1);
            }
            let mut v = h;
            for t in 0..64 {
                let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
                let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
                let t1 = v[7]
                    .wrapping_add(s1)
                    .wrapping_add(ch)
                    .wrapping_add(K[t])
                    .wrapping_add(w[t]);
                let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
                let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
                let t2 = s0.wrapping_add(maj);
                v = [
                    t1.wrapping_add(t2),
                    v[0],
                    v[1],
                    v[2],
                    v[3].wrapping_add(t1),
                    v[4],
                    v[5],
                    v[6],
                ];
            }
            for (a, b) in h.iter_mut().zip(v) {
                *a = a.wrapping_add(b);
            }
        }
        let mut out = [0u8; 32];
        for (i, word) in h.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

/// Mostly 0/1 witness values: bits, their XORs and ANDs; the public input
/// is the number of set bits.
#[derive(Clone)]
pub struct BooleanHeavy {
    pub num_bits: usize,
    pub bits: Option<Vec<bool>>,
}

impl BooleanHeavy {
    pub fn random(num_bits: usize, rng: &mut impl RngCore) -> Self {
        Self {
            num_bits,
            bits: Some((0..num_bits).map(|_| rng.next_u32() & 1 == 1).collect()),
        }
    }

    pub fn public_inputs(&self) -> Vec<Scalar> {
        let ones = self.bits.as_ref().unwrap().iter().filter(|b| **b).count();
        vec![Scalar::from(ones as u64)]
    }
}

impl Circuit<Scalar> for BooleanHeavy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut bits = Vec::with_capacity(self.num_bits);
        for i in 0..self.num_bits {
            let b = self.bits.as_ref().map(|b| b[i]);
            bits.push(Boolean::from(AllocatedBit::alloc(
                cs.namespace(|| format!("b{i}")),
                b,
            )?));
        }
        for i in 0..self.num_bits.saturating_sub(1) {
            Boolean::xor(cs.namespace(|| format!("xor{i}")), &bits[i], &bits[i + 1])?;
            Boolean::and(cs.namespace(|| format!("and{i}")), &bits[i], &bits[i + 1])?;
        }
        let count = self
            .bits
            .as_ref()
            .map(|b| Scalar::from(b.iter().filter(|x| **x).count() as u64));
        let input = cs.alloc_input(|| "count", || value(&count))?;
        let mut sum = LinearCombination::zero();
        for b in &bits {
            sum = sum + &b.lc(CS::one(), Scalar::ONE);
        }
        cs.enforce(|| "count", |_| sum, |lc| lc + CS::one(), |lc| lc + input);
        Ok(())
    }
}

/// Full field witness values: x_{i+1} = x_i² + i, the last one public.
#[derive(Clone)]
pub struct FieldHeavy {
    pub steps: usize,
    pub start: Option<Scalar>,
}

impl FieldHeavy {
    pub fn result(&self) -> Scalar {
        (0..self.steps).fold(self.start.unwrap(), |x, i| {
            x.square() + Scalar::from(i as u64)
        })
    }
}

impl Circuit<Scalar> for FieldHeavy {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = AllocatedNum::alloc(cs.namespace(|| "x0"), || value(&self.start))?;
        for i in 0..self.steps {
            let next_value = x.get_value().map(|v| v.square() + Scalar::from(i as u64));
            let next = if i + 1 == self.steps {
                AllocatedNum::alloc_input(cs.namespace(|| "out"), || value(&next_value))?
            } else {
                AllocatedNum::alloc(cs.namespace(|| format!("x{}", i + 1)), || {
                    value(&next_value)
                })?
            };
            cs.enforce(
                || format!("step {i}"),
                |lc| lc + x.get_variable(),
                |lc| lc + x.get_variable(),
                |lc| lc + next.get_variable() - (Scalar::from(i as u64), CS::one()),
            );
            x = next;
        }
        Ok(())
    }
}

/// Several public inputs, each the cube of a private value; one private value
/// appears only in C (it has no A or B point) and coefficients other than one appear.
#[derive(Clone)]
pub struct ManyInputs {
    pub values: Vec<Option<Scalar>>,
}

impl ManyInputs {
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let mut out: Vec<Scalar> = self.values.iter().map(|v| v.unwrap().cube()).collect();
        out.push(self.values.iter().map(|v| v.unwrap()).sum::<Scalar>() * Scalar::from(3u64));
        out
    }
}

impl Circuit<Scalar> for ManyInputs {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut total = LinearCombination::zero();
        for (i, v) in self.values.iter().enumerate() {
            let x = AllocatedNum::alloc(cs.namespace(|| format!("x{i}")), || value(v))?;
            let sq = x.square(cs.namespace(|| format!("sq{i}")))?;
            let cube_value = v.map(|v| v.cube());
            let cube = AllocatedNum::alloc_input(cs.namespace(|| format!("cube{i}")), || {
                value(&cube_value)
            })?;
            cs.enforce(
                || format!("cube{i}"),
                |lc| lc + sq.get_variable(),
                |lc| lc + x.get_variable(),
                |lc| lc + cube.get_variable(),
            );
            total = total + (Scalar::from(3u64), x.get_variable());
        }
        // `c_only` is used only in C: no A or B point for it.
        let sum_value: Option<Scalar> = self
            .values
            .iter()
            .try_fold(Scalar::ZERO, |acc, v| v.map(|v| acc + v))
            .map(|s| s * Scalar::from(3u64));
        let c_only = cs.alloc(|| "c_only", || value(&sum_value))?;
        cs.enforce(|| "sum", |_| total, |lc| lc + CS::one(), |lc| lc + c_only);
        let out = cs.alloc_input(|| "sum out", || value(&sum_value))?;
        cs.enforce(
            || "sum out",
            |lc| lc + CS::one(),
            |lc| lc + CS::one(),
            |lc| lc + out - c_only + CS::one(),
        );
        Ok(())
    }
}

/// Allocates an aux variable that no constraint uses: no key can be made for it.
#[derive(Clone)]
pub struct UnusedAux;

impl Circuit<Scalar> for UnusedAux {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(2u64)))?;
        cs.alloc(|| "unused", || Ok(Scalar::from(5u64)))?;
        cs.enforce(
            || "x*x",
            |lc| lc + x,
            |lc| lc + x,
            |lc| lc + (Scalar::from(4u64), CS::one()),
        );
        Ok(())
    }
}

/// Fails during synthesis.
#[derive(Clone)]
pub struct FailingCircuit;

impl Circuit<Scalar> for FailingCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        cs.alloc(|| "x", || Err(SynthesisError::DivisionByZero))?;
        Ok(())
    }
}

/// Field elements for `ManyInputs`.
pub fn random_scalars(n: usize, rng: &mut impl RngCore) -> Vec<Option<Scalar>> {
    (0..n).map(|_| Some(Scalar::random(&mut *rng))).collect()
}

/// FieldHeavy, or a circuit that fails or panics in synthesis.
#[derive(Clone)]
pub enum Mixed {
    Fine(FieldHeavy),
    Fails,
    Panics,
}

impl Circuit<Scalar> for Mixed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            Mixed::Fine(circuit) => circuit.synthesize(cs),
            Mixed::Fails => FailingCircuit.synthesize(cs),
            Mixed::Panics => panic!("synthesis panicked on purpose"),
        }
    }
}
