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

/// Bits of scalar per window of the fixed-base tables: one byte, 32 windows.
const WINDOW_BITS: usize = 8;
/// Scalars multiplied per parallel task (then normalized together).
const TASK_LEN: usize = 1 << 10;

/// Multiples of one base for fixed-base scalar multiplication:
/// `tables[w][d - 1] = d · 2^(8w) · base`, so k·base is 32 mixed additions.
struct FixedBase<G: PrimeCurve> {
    tables: Vec<Vec<G::Affine>>,
}

impl<G: PrimeCurve + Send + Sync> FixedBase<G>
where
    G::Affine: Send + Sync,
{
    fn new(base: G) -> Self {
        let windows = (Scalar::NUM_BITS as usize).div_ceil(WINDOW_BITS);
        let window_bases: Vec<G> = (0..windows)
            .scan(base, |b, _| {
                let current = *b;
                for _ in 0..WINDOW_BITS {
                    *b = b.double();
                }
                Some(current)
            })
            .collect();
        let tables = window_bases
            .into_par_iter()
            .map(|wb| {
                let multiples: Vec<G> = (1..1 << WINDOW_BITS)
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
        Self { tables }
    }

    fn mul(&self, scalar: &Scalar) -> G {
        let bytes = scalar.to_repr();
        let mut acc = G::identity();
        for (table, &digit) in self.tables.iter().zip(bytes.as_ref()) {
            if digit != 0 {
                acc += table[digit as usize - 1];
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

    let (g1_table, g2_table) = rayon::join(|| FixedBase::new(g1), || FixedBase::new(g2));

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
