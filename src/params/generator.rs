use bellpepper_core::{Circuit, SynthesisError};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use super::fixed_base::{window_bits_for, FixedBase, Multiplier, OnHost};
use super::host_memory;
use super::{ProvingKey, VerifyingKey};
use crate::backend::cpu::{powers, zeroed, Domain};
use crate::synthesis::{CircuitShape, SparseMatrix};
use crate::Error;

/// One matrix's values at τ per variable, inputs then aux: Σ over its rows
/// of coefficient · L_row(τ).
type AtTau = (Vec<Scalar>, Vec<Scalar>);

fn at_tau(shape: &CircuitShape, matrix: &SparseMatrix, lagrange: &[Scalar]) -> AtTau {
    matrix.transpose_times(
        &lagrange[..matrix.num_rows()],
        shape.num_inputs(),
        shape.num_aux(),
    )
}

/// (β·A + α·B + C) · inverse per variable: the ic and l queries' exponents.
fn combined(
    [a, b, c]: [&[Scalar]; 3],
    alpha: Scalar,
    beta: Scalar,
    inverse: Scalar,
) -> Vec<Scalar> {
    a.par_iter()
        .zip(b)
        .zip(c)
        .map(|((a, b), c)| (*a * beta + *b * alpha + c) * inverse)
        .collect()
}

/// Runs `host` on a thread of its own while `device` runs on this one (a
/// device guard is not Sync): a key's host steps hide behind its
/// multiplications.
fn beside<H: Send, D>(host: impl FnOnce() -> H + Send, device: impl FnOnce() -> D) -> (H, D) {
    std::thread::scope(|scope| {
        let host = scope.spawn(host);
        let device = device();
        let host = host
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (host, device)
    })
}

/// A key's secret values, as a trusted setup would draw them: the
/// generators and α, β, γ, δ, τ. Whoever knows them can forge proofs, so
/// [`Trapdoor::random`] is for tests and local use only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trapdoor {
    /// The G1 generator the key is made over.
    pub g1: G1Projective,
    /// The G2 generator the key is made over.
    pub g2: G2Projective,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ.
    pub gamma: Scalar,
    /// δ.
    pub delta: Scalar,
    /// τ, the point the QAP is evaluated at.
    pub tau: Scalar,
}

impl Trapdoor {
    /// Draws a trapdoor from `rng` in bellperson's order (g1, g2, α, β, γ,
    /// δ, τ), so the same rng gives bellperson's key.
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        let g1 = G1Projective::random(&mut *rng);
        let g2 = G2Projective::random(&mut *rng);
        let [alpha, beta, gamma, delta, tau] = [(); 5].map(|_| Scalar::random(&mut *rng));
        Self {
            g1,
            g2,
            alpha,
            beta,
            gamma,
            delta,
            tau,
        }
    }
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
    generate_key(shape, &Trapdoor::random(rng), &OnHost)
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
    let trapdoor = Trapdoor {
        g1,
        g2,
        alpha,
        beta,
        gamma,
        delta,
        tau,
    };
    generate_key(shape, &trapdoor, &OnHost)
}

/// The key for `shape` and `trapdoor` with every fixed-base scalar
/// multiplication (h, l, a, b_g1 in G1, b_g2 in G2) on the guard's GPU; the
/// QAP's evaluation at τ stays on the host's cores. Byte for byte the key
/// [`generate_parameters_for_shape`] makes from the same trapdoor.
///
/// ```no_run
/// # use groth16_gpu::synthesis::CircuitShape;
/// use groth16_gpu::device::DeviceMutex;
/// use groth16_gpu::params::{generate_parameters_for_shape_on_gpu, Trapdoor};
/// # fn run(shape: &CircuitShape) -> Result<(), groth16_gpu::Error> {
/// let device = DeviceMutex::get(0)?;
/// let trapdoor = Trapdoor::random(&mut rand_core::OsRng);
/// let key = generate_parameters_for_shape_on_gpu(shape, &trapdoor, &device.lock())?;
/// # Ok(()) }
/// ```
#[cfg(feature = "cuda")]
pub fn generate_parameters_for_shape_on_gpu(
    shape: &CircuitShape,
    trapdoor: &Trapdoor,
    guard: &crate::device::DeviceGuard<'_>,
) -> Result<ProvingKey, Error> {
    generate_key(shape, trapdoor, &super::fixed_base::OnDevice::new(guard))
}

/// Logs how long a step of key generation took, at info level.
fn logged<T>(what: &str, step: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let value = step();
    log::info!(
        "key generation: {what} in {:.3} s",
        start.elapsed().as_secs_f64()
    );
    value
}

fn generate_key(
    shape: &CircuitShape,
    trapdoor: &Trapdoor,
    multiplier: &impl Multiplier,
) -> Result<ProvingKey, Error> {
    let Trapdoor {
        g1,
        g2,
        alpha,
        beta,
        gamma,
        delta,
        tau,
    } = *trapdoor;
    let gamma_inv: Scalar =
        Option::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inv: Scalar =
        Option::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    // Every point would be the identity; a and b rely on g·s being one only for s = 0.
    if bool::from(g1.is_identity() | g2.is_identity()) {
        return Err(SynthesisError::UnexpectedIdentity.into());
    }
    let domain = Domain::new(shape.num_constraints())?;
    let m = domain.size();
    host_memory::ensure_fits(
        &format!("generating a key for a domain of 2^{}", m.trailing_zeros()),
        host_memory::key_generation_bytes(m, shape.num_inputs(), shape.num_aux()),
        host_memory::available_bytes(),
    )?;
    log::info!(
        "generating parameters: {} constraints, domain 2^{}, {} inputs, {} aux",
        shape.num_constraints(),
        m.trailing_zeros(),
        shape.num_inputs(),
        shape.num_aux()
    );

    // First: it refuses a τ in the domain before any point is made (the
    // Lagrange basis, made later, divides by τ^m − 1).
    let vanishing = domain.vanishing_at(tau);
    if bool::from(vanishing.is_zero()) {
        return Err(Error::TauInDomain(m));
    }
    // Every query but b_g2 is a G1 table's: h, a, b_g1, l (and ic).
    let g1_bits = window_bits_for(m + 3 * (shape.num_inputs() + shape.num_aux()));
    let g2_bits = window_bits_for(shape.num_inputs() + shape.num_aux());
    let g1_table = logged("G1 window table", || FixedBase::new(g1, g1_bits));

    let tau_powers = logged("powers of tau", || powers(tau, m));
    // H query: τ^i · Z(τ) / δ for i < m - 1.
    let h_factor = vanishing * delta_inv;
    let h_scalars: Vec<Scalar> = tau_powers[..m - 1]
        .par_iter()
        .map(|p| *p * h_factor)
        .collect();
    drop(tau_powers);
    // Each multiplication runs (on the device, where there is one) beside
    // the host's work for the next: h needs only powers of τ, a only A at
    // τ, b only B, l all three; the G2 table is built on a thread of its
    // own meanwhile, in the host's gaps. The peak memory of these pairs is
    // in host_memory::key_generation_bytes.
    let [a_matrix, b_matrix, c_matrix] = shape.matrices();
    let (h, a, b_g1, ic, l, b_g2) = std::thread::scope(|scope| -> Result<_, Error> {
        let g2_table = scope.spawn(|| logged("G2 window table", || FixedBase::new(g2, g2_bits)));
        let (lagrange_and_a, h) = beside(
            || -> Result<_, Error> {
                let lagrange = logged("Lagrange basis at tau", || domain.lagrange_basis_at(tau))?;
                let a_at_tau = logged("A at tau", || at_tau(shape, a_matrix, &lagrange));
                Ok((lagrange, a_at_tau))
            },
            || logged("h", || multiplier.g1(&g1_table, &h_scalars)),
        );
        let h = h?;
        let (lagrange, a_at_tau) = lagrange_and_a?;
        drop(h_scalars);
        // a and b keep only the variables whose point is not the identity,
        // those of nonzero scalars (g1 and g2 are not the identity).
        let a_scalars = nonzero(&a_at_tau.0, &a_at_tau.1);
        let (b_at_tau, a) = beside(
            || logged("B at tau", || at_tau(shape, b_matrix, &lagrange)),
            || logged("a", || multiplier.g1(&g1_table, &a_scalars)),
        );
        let a = a?;
        drop(a_scalars);
        let b_scalars = nonzero(&b_at_tau.0, &b_at_tau.1);
        // C at τ, then ic's and l's exponents, beside b_g1.
        let (ic_and_l_scalars, b_g1) = beside(
            || {
                let c_at_tau = logged("C at tau", || at_tau(shape, c_matrix, &lagrange));
                drop(lagrange);
                let inputs = [&a_at_tau.0, &b_at_tau.0, &c_at_tau.0].map(Vec::as_slice);
                let aux = [&a_at_tau.1, &b_at_tau.1, &c_at_tau.1].map(Vec::as_slice);
                (
                    combined(inputs, alpha, beta, gamma_inv),
                    combined(aux, alpha, beta, delta_inv),
                )
            },
            || logged("b_g1", || multiplier.g1(&g1_table, &b_scalars)),
        );
        let b_g1 = b_g1?;
        drop((a_at_tau, b_at_tau));
        let (ic_scalars, l_scalars) = ic_and_l_scalars;
        let ic = multiplier.g1(&g1_table, &ic_scalars)?;
        let l = logged("l", || multiplier.g1(&g1_table, &l_scalars))?;
        drop(l_scalars);
        let g2_table = g2_table
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let b_g2 = logged("b_g2", || multiplier.g2(&g2_table, &b_scalars))?;
        Ok((h, a, b_g1, ic, l, b_g2))
    })?;
    // An aux variable in no constraint would leave L sparse: bellperson refuses it too.
    if l.par_iter().any(|p| bool::from(p.is_identity())) {
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
    Ok(ProvingKey {
        vk,
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// The nonzero scalars of `inputs` then `aux`, in order, gathered on
/// rayon's threads (a production key's are GBs): each chunk's are counted,
/// then copied to their place.
fn nonzero(inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 14;
    let is_nonzero = |s: &&Scalar| !bool::from(s.is_zero());
    let chunks: Vec<&[Scalar]> = inputs.chunks(CHUNK).chain(aux.chunks(CHUNK)).collect();
    let counts: Vec<usize> = chunks
        .par_iter()
        .map(|chunk| chunk.iter().filter(is_nonzero).count())
        .collect();
    let mut out = zeroed(counts.iter().sum());
    let mut rest = out.as_mut_slice();
    let mut places = Vec::with_capacity(chunks.len());
    for count in counts {
        let (place, tail) = std::mem::take(&mut rest).split_at_mut(count);
        places.push(place);
        rest = tail;
    }
    places
        .into_par_iter()
        .zip(chunks)
        .for_each(|(place, chunk)| {
            for (slot, s) in place.iter_mut().zip(chunk.iter().filter(is_nonzero)) {
                *slot = *s;
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesis::CircuitShape;
    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use rand_core::OsRng;

    /// x · x = y over one aux x and one input y: a domain of 4 points
    /// (the constraint and the two inputs' rows).
    struct Square;

    impl Circuit<Scalar> for Square {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
            cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }

    #[test]
    fn a_tau_in_the_domain_is_refused() {
        let shape = CircuitShape::record(Square).unwrap();
        let domain = Domain::new(shape.num_constraints()).unwrap();
        let mut trapdoor = Trapdoor::random(&mut OsRng);
        trapdoor.tau = domain.omega().pow_vartime([3]);
        let error = generate_key(&shape, &trapdoor, &OnHost).unwrap_err();
        assert!(
            matches!(error, Error::TauInDomain(m) if m == domain.size()),
            "{error}"
        );
        trapdoor.tau += Scalar::ONE;
        generate_key(&shape, &trapdoor, &OnHost).unwrap();
    }

    #[test]
    fn an_identity_generator_is_refused() {
        let shape = CircuitShape::record(Square).unwrap();
        let trapdoor = Trapdoor::random(&mut OsRng);
        for t in [
            Trapdoor {
                g1: G1Projective::identity(),
                ..trapdoor
            },
            Trapdoor {
                g2: G2Projective::identity(),
                ..trapdoor
            },
        ] {
            let error = generate_key(&shape, &t, &OnHost).unwrap_err();
            assert!(matches!(
                error,
                Error::Synthesis(SynthesisError::UnexpectedIdentity)
            ));
        }
    }

    #[test]
    fn nonzero_scalars_keep_their_order_across_chunks() {
        let value = |i: usize| {
            if i % 3 == 0 || (40_000..50_000).contains(&i) {
                Scalar::ZERO
            } else {
                Scalar::from(i as u64)
            }
        };
        let all: Vec<Scalar> = (0..100_000).map(value).collect();
        let expected: Vec<Scalar> = all
            .iter()
            .copied()
            .filter(|s| !bool::from(s.is_zero()))
            .collect();
        for split in [0, 5, 16_384, 70_000, 100_000] {
            assert_eq!(
                nonzero(&all[..split], &all[split..]),
                expected,
                "split {split}"
            );
        }
    }
}
