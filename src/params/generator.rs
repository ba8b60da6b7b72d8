use bellpepper_core::{Circuit, SynthesisError};
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::{
    prime::{PrimeCurve, PrimeCurveAffine},
    Curve, Group,
};
use rand_core::RngCore;
use rayon::prelude::*;

use super::{ProvingKey, VerifyingKey};
use crate::backend::cpu::Domain;
use crate::synthesis::CircuitShape;
use crate::synthesis::Column;
use crate::Error;

/// Scalars multiplied per parallel task (then normalized together).
const TASK_LEN: usize = 1 << 10;
/// The widest fixed-base window: 2^16 multiples a window (100 MiB of G1
/// tables, 200 of G2).
const MAX_WINDOW_BITS: usize = 16;

/// The window width that makes the fewest additions for `count` scalars:
/// the tables cost 2^w a window and every scalar one a window, so a 2^24
/// key takes 16 bits (half the additions of 8) and a test's small one 8.
fn window_bits_for(count: usize) -> usize {
    let additions = |w: usize| (Scalar::NUM_BITS as usize).div_ceil(w) * ((1 << w) + count);
    (4..=MAX_WINDOW_BITS)
        .min_by_key(|&w| additions(w))
        .unwrap_or(8)
}

/// Multiples of one base for fixed-base scalar multiplication:
/// `tables[w][d - 1] = d · 2^(bits w) · base`, so k·base is one mixed
/// addition a window.
struct FixedBase<G: PrimeCurve> {
    bits: usize,
    tables: Vec<Vec<G::Affine>>,
}

impl<G: PrimeCurve + Send + Sync> FixedBase<G>
where
    G::Affine: Send + Sync,
{
    /// Tables of `bits`-wide windows (1..=16).
    fn new(base: G, bits: usize) -> Self {
        let windows = (Scalar::NUM_BITS as usize).div_ceil(bits);
        let window_bases: Vec<G> = (0..windows)
            .scan(base, |b, _| {
                let current = *b;
                for _ in 0..bits {
                    *b = b.double();
                }
                Some(current)
            })
            .collect();
        let tables = window_bases
            .into_par_iter()
            .map(|wb| {
                let multiples: Vec<G> = (1..1usize << bits)
                    .scan(G::identity(), |acc, _| {
                        *acc += wb;
                        Some(*acc)
                    })
                    .collect();
                let mut affine = vec![G::Affine::identity(); multiples.len()];
                G::batch_normalize(&multiples, &mut affine);
                affine
            })
            .collect();
        Self { bits, tables }
    }

    fn mul(&self, scalar: &Scalar) -> G {
        let repr = scalar.to_repr();
        let bytes = repr.as_ref();
        let mut acc = G::identity();
        for (w, table) in self.tables.iter().enumerate() {
            let digit = window_digit(bytes, w * self.bits, self.bits);
            if digit != 0 {
                acc += table[digit - 1];
            }
        }
        acc
    }

    fn mul_many(&self, scalars: &[Scalar]) -> Vec<G::Affine> {
        let mut out = vec![G::Affine::identity(); scalars.len()];
        out.par_chunks_mut(TASK_LEN)
            .zip(scalars.par_chunks(TASK_LEN))
            .for_each(|(out, scalars)| {
                let points: Vec<G> = scalars.iter().map(|s| self.mul(s)).collect();
                G::batch_normalize(&points, out);
            });
        out
    }
}

/// Bits `first..first + bits` (bits <= 16) of the little-endian `bytes`;
/// bits past the end read as zero.
fn window_digit(bytes: &[u8], first: usize, bits: usize) -> usize {
    let byte = first / 8;
    let mut word = 0u32;
    for (k, b) in bytes.iter().skip(byte).take(3).enumerate() {
        word |= u32::from(*b) << (8 * k);
    }
    ((word >> (first % 8)) & ((1 << bits) - 1)) as usize
}

/// Per-variable values of A, B, C at τ: Σ over rows of coefficient · L_row(τ).
struct QapAtTau {
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
}

fn evaluate_at_tau(shape: &CircuitShape, lagrange: &[Scalar]) -> [QapAtTau; 2] {
    let num_inputs = shape.num_inputs();
    let num_aux = shape.num_aux();
    let columns = |matrix: &crate::synthesis::SparseMatrix| {
        let mut inputs = vec![Scalar::ZERO; num_inputs];
        let mut aux = vec![Scalar::ZERO; num_aux];
        matrix.for_each_entry(|row, column, coeff| match column {
            Column::Input(i) => inputs[i] += coeff * lagrange[row],
            Column::Aux(i) => aux[i] += coeff * lagrange[row],
        });
        (inputs, aux)
    };
    let [a, b, c] = shape.matrices();
    let ((a, b), c) = rayon::join(|| rayon::join(|| columns(a), || columns(b)), || columns(c));
    [
        QapAtTau {
            a: a.0,
            b: b.0,
            c: c.0,
        },
        QapAtTau {
            a: a.1,
            b: b.1,
            c: c.1,
        },
    ]
}

/// (β·A + α·B + C) · inverse per variable: the ic and l queries' exponents.
fn combined(q: &QapAtTau, alpha: Scalar, beta: Scalar, inverse: Scalar) -> Vec<Scalar> {
    q.a.par_iter()
        .zip(&q.b)
        .zip(&q.c)
        .map(|((a, b), c)| (*a * beta + *b * alpha + c) * inverse)
        .collect()
}

/// Parameters for `circuit` from the given trapdoor, equal to bellperson's
/// `generate_parameters` for the same arguments.
#[allow(clippy::too_many_arguments)]
pub fn generate_parameters<C: Circuit<Scalar>>(
    circuit: C,
    g1: G1Projective,
    g2: G2Projective,
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    tau: Scalar,
) -> Result<ProvingKey, Error> {
    let shape = CircuitShape::record(circuit)?;
    generate_parameters_for_shape(&shape, g1, g2, alpha, beta, gamma, delta, tau)
}

/// Parameters for `circuit` from a trapdoor drawn from `rng` in bellperson's
/// order (g1, g2, α, β, γ, δ, τ). For tests and local use only: a real
/// deployment needs a trusted-setup ceremony.
pub fn generate_random_parameters<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<ProvingKey, Error> {
    generate_parameters_for_shape_random(&CircuitShape::record(circuit)?, rng)
}

/// [`generate_random_parameters`] for an already recorded shape.
pub fn generate_parameters_for_shape_random<R: RngCore>(
    shape: &CircuitShape,
    rng: &mut R,
) -> Result<ProvingKey, Error> {
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let [alpha, beta, gamma, delta, tau] = [(); 5].map(|_| Scalar::random(&mut *rng));
    generate_parameters_for_shape(shape, g1, g2, alpha, beta, gamma, delta, tau)
}

/// [`generate_parameters`] for an already recorded shape.
#[allow(clippy::too_many_arguments)]
pub fn generate_parameters_for_shape(
    shape: &CircuitShape,
    g1: G1Projective,
    g2: G2Projective,
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    tau: Scalar,
) -> Result<ProvingKey, Error> {
    let gamma_inv: Scalar =
        Option::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv: Scalar =
        Option::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let domain = Domain::new(shape.num_constraints())?;
    let m = domain.size();
    log::info!(
        "generating parameters: {} constraints, domain 2^{}, {} inputs, {} aux",
        shape.num_constraints(),
        m.trailing_zeros(),
        shape.num_inputs(),
        shape.num_aux()
    );

    // Every query but b_g2 is a G1 table's: h, a, b_g1, l (and ic).
    let g1_bits = window_bits_for(m + 3 * (shape.num_inputs() + shape.num_aux()));
    let g2_bits = window_bits_for(shape.num_inputs() + shape.num_aux());
    let (g1_table, g2_table) = rayon::join(
        || FixedBase::new(g1, g1_bits),
        || FixedBase::new(g2, g2_bits),
    );

    let mut tau_powers = vec![Scalar::ZERO; m];
    tau_powers
        .par_chunks_mut(TASK_LEN)
        .enumerate()
        .for_each(|(task, chunk)| {
            let mut p = tau.pow_vartime([(task * TASK_LEN) as u64]);
            for v in chunk {
                *v = p;
                p *= tau;
            }
        });

    // H query: τ^i · Z(τ) / δ for i < m - 1.
    let h_factor = domain.vanishing_at(tau) * delta_inv;
    let h_scalars: Vec<Scalar> = tau_powers[..m - 1]
        .par_iter()
        .map(|p| *p * h_factor)
        .collect();
    let h = g1_table.mul_many(&h_scalars);
    log::info!("generated h: {} points", h.len());

    // Lagrange basis at τ: the inverse NTT of the powers of τ.
    let mut lagrange = tau_powers;
    domain.intt(&mut lagrange);
    let [inputs, aux] = evaluate_at_tau(shape, &lagrange);

    let a_all: Vec<Scalar> = inputs.a.iter().chain(&aux.a).copied().collect();
    let b_all: Vec<Scalar> = inputs.b.iter().chain(&aux.b).copied().collect();
    let a = g1_table.mul_many(&a_all);
    let b_g1 = g1_table.mul_many(&b_all);
    let b_g2 = g2_table.mul_many(&b_all);
    log::info!("generated a, b_g1, b_g2");
    let ic = g1_table.mul_many(&combined(&inputs, alpha, beta, gamma_inv));
    let l = g1_table.mul_many(&combined(&aux, alpha, beta, delta_inv));
    log::info!("generated ic, l");
    // An aux variable in no constraint would leave L sparse: bellperson refuses it too.
    if l.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable.into());
    }

    let g1_affine = g1.to_affine();
    let g2_affine = g2.to_affine();
    let vk = VerifyingKey {
        alpha_g1: (g1_affine * alpha).to_affine(),
        beta_g1: (g1_affine * beta).to_affine(),
        beta_g2: (g2_affine * beta).to_affine(),
        gamma_g2: (g2_affine * gamma).to_affine(),
        delta_g1: (g1_affine * delta).to_affine(),
        delta_g2: (g2_affine * delta).to_affine(),
        ic,
    };
    let non_identity = |points: Vec<_>| -> Vec<_> {
        points
            .into_iter()
            .filter(|p: &G1Affine| !bool::from(p.is_identity()))
            .collect()
    };
    Ok(ProvingKey {
        vk,
        h,
        l,
        a: non_identity(a),
        b_g1: non_identity(b_g1),
        b_g2: b_g2
            .into_iter()
            .filter(|p| !bool::from(p.is_identity()))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::OsRng;

    fn edge_and_random_scalars() -> Vec<Scalar> {
        let mut scalars = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(u64::MAX),
            Scalar::from(1u64 << 16),
        ];
        scalars.extend((0..20).map(|_| Scalar::random(OsRng)));
        scalars
    }

    #[test]
    fn fixed_base_multiples_are_scalar_multiplications() {
        let g1 = G1Projective::random(OsRng);
        let scalars = edge_and_random_scalars();
        // Widths that divide 255 unevenly and evenly, narrow and the widest.
        for bits in [1, 4, 7, 8, 13, MAX_WINDOW_BITS] {
            let table = FixedBase::new(g1, bits);
            let expected: Vec<G1Affine> = scalars.iter().map(|s| (g1 * s).to_affine()).collect();
            assert_eq!(table.mul_many(&scalars), expected, "{bits}-bit windows");
        }
        let g2 = G2Projective::random(OsRng);
        let table = FixedBase::new(g2, 11);
        for s in &scalars {
            assert_eq!(table.mul(s), g2 * s);
        }
    }

    #[test]
    fn window_digits_read_little_endian_bits() {
        let bytes = [0b1010_1100u8, 0xff, 0x01];
        assert_eq!(window_digit(&bytes, 0, 8), 0b1010_1100);
        assert_eq!(window_digit(&bytes, 2, 4), 0b1011);
        assert_eq!(window_digit(&bytes, 4, 16), 0x1ffa);
        assert_eq!(window_digit(&bytes, 20, 16), 0, "past the end");
    }

    #[test]
    fn wide_windows_for_large_keys_only() {
        assert!(window_bits_for(100) <= 8);
        assert_eq!(window_bits_for(1 << 26), MAX_WINDOW_BITS);
        assert!(window_bits_for(1 << 18) > 8);
    }
}
