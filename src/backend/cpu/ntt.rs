use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::Error;

/// Butterfly blocks up to this many elements are finished in one cache-resident pass.
const LOCAL_BLOCK: usize = 1 << 12;
/// Elements per parallel task when a stage is split inside a block.
const TASK_LEN: usize = 1 << 10;
/// Points of the Lagrange basis a task computes: one field inversion and
/// one exponentiation each, a few percent of the chunk's products.
const LAGRANGE_CHUNK: usize = 1 << 12;

/// A radix-2 evaluation domain of size m = 2^k over the scalar field, with
/// the coset g·⟨ω⟩ for g the field's multiplicative generator (bellperson's choice).
#[derive(Clone, Debug)]
pub struct Domain {
    size: usize,
    omega: Scalar,
    omega_inv: Scalar,
    size_inv: Scalar,
}

impl Domain {
    /// The smallest domain holding `min_size` points (at least one).
    pub fn new(min_size: usize) -> Result<Self, Error> {
        let size = min_size.max(1).next_power_of_two();
        let log_size = size.trailing_zeros();
        if log_size >= Scalar::S {
            return Err(Error::DomainTooLarge(min_size));
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_size..Scalar::S {
            omega = omega.square();
        }
        Ok(Self {
            size,
            omega,
            omega_inv: omega.invert().unwrap(),
            size_inv: Scalar::from(size as u64).invert().unwrap(),
        })
    }

    /// m, the number of points.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The primitive m-th root of unity.
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// ω^-1.
    pub fn omega_inverse(&self) -> Scalar {
        self.omega_inv
    }

    /// m^-1, the inverse transform's scale.
    pub fn size_inverse(&self) -> Scalar {
        self.size_inv
    }

    /// Coefficients to evaluations at ω^i.
    pub fn ntt(&self, values: &mut [Scalar]) {
        assert_eq!(values.len(), self.size, "NTT input must fill the domain");
        ntt_in_place(values, self.omega);
    }

    /// Evaluations at ω^i to coefficients.
    pub fn intt(&self, values: &mut [Scalar]) {
        assert_eq!(values.len(), self.size, "NTT input must fill the domain");
        ntt_in_place(values, self.omega_inv);
        scale(values, self.size_inv);
    }

    /// Coefficients to evaluations at g·ω^i.
    pub fn coset_ntt(&self, values: &mut [Scalar]) {
        distribute_powers(values, Scalar::MULTIPLICATIVE_GENERATOR);
        self.ntt(values);
    }

    /// Evaluations at g·ω^i to coefficients.
    pub fn coset_intt(&self, values: &mut [Scalar]) {
        self.intt(values);
        distribute_powers(values, Scalar::MULTIPLICATIVE_GENERATOR.invert().unwrap());
    }

    /// Z(x) = x^m - 1 on the coset, the same at every point: g^m - 1.
    pub fn vanishing_on_coset(&self) -> Scalar {
        Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size as u64]) - Scalar::ONE
    }

    /// Z(x) = x^m - 1 at `x`.
    pub fn vanishing_at(&self, x: Scalar) -> Scalar {
        x.pow_vartime([self.size as u64]) - Scalar::ONE
    }

    /// The Lagrange basis at τ, L_i(τ) for i < m: the inverse NTT of τ's
    /// powers, by its closed form (τ^m − 1)/m · ω^i/(τ − ω^i), a few
    /// products a point where the transform takes log m.
    /// [`Error::TauInDomain`] where τ is a point of the domain (τ^m = 1):
    /// the form divides by zero there, and a key made at τ would be degenerate.
    pub fn lagrange_basis_at(&self, tau: Scalar) -> Result<Vec<Scalar>, Error> {
        let vanishing = self.vanishing_at(tau);
        if bool::from(vanishing.is_zero()) {
            return Err(Error::TauInDomain(self.size));
        }
        let factor = vanishing * self.size_inv;
        let mut basis = zeroed(self.size);
        basis
            .par_chunks_mut(LAGRANGE_CHUNK)
            .enumerate()
            .for_each(|(task, chunk)| {
                self.lagrange_chunk(chunk, task * LAGRANGE_CHUNK, tau, factor)
            });
        Ok(basis)
    }

    /// L_i(τ) for i from `first` on, into `out`. ω^i/(τ − ω^i) is
    /// 1/(τ·ω^-i − 1), so the chunk walks u = τ·ω^-i and inverts the
    /// differences u − 1 together (Montgomery's batch inversion: one field
    /// inversion a chunk); `factor` is (τ^m − 1)/m. No difference is zero
    /// where τ^m ≠ 1.
    fn lagrange_chunk(&self, out: &mut [Scalar], first: usize, tau: Scalar, factor: Scalar) {
        let mut u = tau * self.omega_inv.pow_vartime([first as u64]);
        let mut differences = Vec::with_capacity(out.len());
        // Forward: out[j] = the product of the differences before j.
        let mut product = Scalar::ONE;
        for v in out.iter_mut() {
            let difference = u - Scalar::ONE;
            *v = product;
            product *= difference;
            differences.push(difference);
            u *= self.omega_inv;
        }
        // Backward: `inverse` is factor / (the product of the differences up
        // to j), so out[j] · inverse = factor / difference j.
        let mut inverse = product.invert().unwrap() * factor;
        for (v, difference) in out.iter_mut().zip(&differences).rev() {
            *v *= inverse;
            inverse *= difference;
        }
    }
}

/// The coefficients of H = (A·B - C) / Z, given A, B, C as evaluations over
/// the domain (one per constraint, zero-padded to m): m - 1 values, the degree
/// bound of H, as bellperson's H query expects.
pub fn compute_h(domain: &Domain, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let to_coset = |values: &[Scalar]| {
        let mut v = vec![Scalar::ZERO; domain.size()];
        v[..values.len()].copy_from_slice(values);
        domain.intt(&mut v);
        domain.coset_ntt(&mut v);
        v
    };
    let ((mut a, b), c) = rayon::join(
        || rayon::join(|| to_coset(a), || to_coset(b)),
        || to_coset(c),
    );
    let z_inv = domain.vanishing_on_coset().invert().unwrap();
    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .with_min_len(TASK_LEN)
        .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
    domain.coset_intt(&mut a);
    a.truncate(domain.size() - 1);
    a
}

/// In-place radix-2 NTT: evaluations of the polynomial with coefficients
/// `values` at ω^0..ω^(n-1), n = values.len() a power of two, ω of order n.
pub fn ntt_in_place(values: &mut [Scalar], omega: Scalar) {
    let n = values.len();
    assert!(n.is_power_of_two(), "NTT length must be a power of two");
    if n == 1 {
        return;
    }
    bit_reverse(values);
    let twiddles = powers(omega, n / 2);

    let local = n.min(LOCAL_BLOCK);
    values
        .par_chunks_mut(local)
        .for_each(|block| run_stages(block, 1, local, &twiddles, n));

    let mut half = local;
    while half < n {
        let stride = n / (2 * half);
        for block in values.chunks_mut(2 * half) {
            let (lo, hi) = block.split_at_mut(half);
            lo.par_chunks_mut(TASK_LEN)
                .zip(hi.par_chunks_mut(TASK_LEN))
                .enumerate()
                .for_each(|(task, (lo, hi))| {
                    let first = task * TASK_LEN;
                    for j in 0..lo.len() {
                        butterfly(&mut lo[j], &mut hi[j], &twiddles[(first + j) * stride]);
                    }
                });
        }
        half *= 2;
    }
}

/// The stages with half-size from `first_half` up to `block_len / 2`, on one block.
fn run_stages(
    block: &mut [Scalar],
    first_half: usize,
    block_len: usize,
    twiddles: &[Scalar],
    n: usize,
) {
    let mut half = first_half;
    while half < block_len {
        let stride = n / (2 * half);
        for pair in block.chunks_mut(2 * half) {
            let (lo, hi) = pair.split_at_mut(half);
            for j in 0..half {
                butterfly(&mut lo[j], &mut hi[j], &twiddles[j * stride]);
            }
        }
        half *= 2;
    }
}

#[inline(always)]
fn butterfly(lo: &mut Scalar, hi: &mut Scalar, twiddle: &Scalar) {
    let t = *hi * twiddle;
    *hi = *lo - t;
    *lo += t;
}

fn bit_reverse(values: &mut [Scalar]) {
    let n = values.len();
    let bits = n.trailing_zeros();
    let shift = usize::BITS - bits;
    let permuted: Vec<Scalar> = (0..n)
        .into_par_iter()
        .with_min_len(TASK_LEN)
        .map(|i| values[i.reverse_bits() >> shift])
        .collect();
    values.copy_from_slice(&permuted);
}

/// `len` zeros, written by rayon's threads: `vec![Scalar::ZERO; len]`
/// fills (and faults in) every page on one thread, a second or more for
/// the GBs of a production key's vectors.
pub(crate) fn zeroed(len: usize) -> Vec<Scalar> {
    (0..len)
        .into_par_iter()
        .with_min_len(TASK_LEN)
        .map(|_| Scalar::ZERO)
        .collect()
}

/// base^0 .. base^(count-1), computed in parallel chunks.
pub(crate) fn powers(base: Scalar, count: usize) -> Vec<Scalar> {
    let mut out = zeroed(count);
    out.par_chunks_mut(TASK_LEN)
        .enumerate()
        .for_each(|(task, chunk)| {
            let mut p = base.pow_vartime([(task * TASK_LEN) as u64]);
            for v in chunk {
                *v = p;
                p *= base;
            }
        });
    out
}

/// values[i] *= g^i.
fn distribute_powers(values: &mut [Scalar], g: Scalar) {
    values
        .par_chunks_mut(TASK_LEN)
        .enumerate()
        .for_each(|(task, chunk)| {
            let mut p = g.pow_vartime([(task * TASK_LEN) as u64]);
            for v in chunk {
                *v *= p;
                p *= g;
            }
        });
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    values
        .par_iter_mut()
        .with_min_len(TASK_LEN)
        .for_each(|v| *v *= factor);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::{RngCore, SeedableRng};

    fn naive_evaluate(coeffs: &[Scalar], omega: Scalar) -> Vec<Scalar> {
        let mut x = Scalar::ONE;
        (0..coeffs.len())
            .map(|_| {
                let mut acc = Scalar::ZERO;
                for c in coeffs.iter().rev() {
                    acc = acc * x + c;
                }
                x *= omega;
                acc
            })
            .collect()
    }

    #[test]
    fn ntt_matches_naive_evaluation_and_inverts() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        for log in [0u32, 1, 2, 5, 9, 13] {
            let domain = Domain::new(1 << log).unwrap();
            let coeffs: Vec<Scalar> = (0..1 << log).map(|_| Scalar::random(&mut rng)).collect();
            let mut values = coeffs.clone();
            domain.ntt(&mut values);
            if log <= 9 {
                assert_eq!(
                    values,
                    naive_evaluate(&coeffs, domain.omega()),
                    "size 2^{log}"
                );
            }
            domain.intt(&mut values);
            assert_eq!(values, coeffs, "round trip 2^{log}");
            domain.coset_ntt(&mut values);
            domain.coset_intt(&mut values);
            assert_eq!(values, coeffs, "coset round trip 2^{log}");
        }
    }

    #[test]
    fn large_ntt_matches_pointwise_evaluation() {
        // Beyond LOCAL_BLOCK the global stages run; check a few points directly.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        let n = 1 << 15;
        let domain = Domain::new(n).unwrap();
        let coeffs: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let mut values = coeffs.clone();
        domain.ntt(&mut values);
        for i in [0usize, 1, 4095, 4096, 12345, n - 1] {
            let x = domain.omega().pow_vartime([i as u64]);
            let expected = coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c);
            assert_eq!(values[i], expected, "point {i}");
        }
    }

    #[test]
    fn lagrange_basis_is_the_inverse_ntt_of_the_powers() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(rand_core::OsRng.next_u64());
        // 2^13 spans two chunks, the others one.
        for m in [1usize, 2, 8, 1 << 10, 1 << 13] {
            let domain = Domain::new(m).unwrap();
            let tau = Scalar::random(&mut rng);
            let mut expected = powers(tau, m);
            domain.intt(&mut expected);
            assert_eq!(domain.lagrange_basis_at(tau).unwrap(), expected, "m = {m}");
        }
    }

    #[test]
    fn lagrange_basis_refuses_a_tau_in_the_domain() {
        let domain = Domain::new(8).unwrap();
        let tau = domain.omega().pow_vartime([3]);
        let error = domain.lagrange_basis_at(tau).unwrap_err();
        assert!(matches!(error, Error::TauInDomain(8)), "{error}");
        assert!(error.to_string().contains("degenerate"), "{error}");
        // m = 1: the domain is {1}.
        let error = Domain::new(1).unwrap().lagrange_basis_at(Scalar::ONE);
        assert!(matches!(error, Err(Error::TauInDomain(1))));
    }

    #[test]
    fn domain_sizes_round_up() {
        assert_eq!(Domain::new(0).unwrap().size(), 1);
        assert_eq!(Domain::new(5).unwrap().size(), 8);
        assert_eq!(Domain::new(8).unwrap().size(), 8);
    }
}
