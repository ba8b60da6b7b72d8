use std::time::{Duration, Instant};

use bellpepper_core::SynthesisError;
use blstrs::{G1Projective, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve};

use super::Proof;
use crate::backend::cpu::{compute_h, msm, msm_with_density, Domain, MsmAffine};
use crate::params::{ProvingKey, VerifyingKey};
use crate::synthesis::{Assignment, Density};
use crate::Error;

fn expect_len(query: &'static str, available: usize, needed: usize) -> Result<(), Error> {
    if available == needed {
        Ok(())
    } else {
        Err(Error::KeyMismatch {
            query,
            needed,
            available,
        })
    }
}

/// Checks that every query of `key` has exactly the points the assignment's
/// circuit needs: a key made for another circuit would give a wrong proof.
pub fn check_key_fits(key: &ProvingKey, assignment: &Assignment) -> Result<(), Error> {
    KeySizes::of(key).check(assignment)
}

/// How many points each query of a proving key holds: all a prover needs to
/// check that a key fits a circuit, kept where the points are not (a key
/// resident on a GPU).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeySizes {
    pub ic: usize,
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b_g1: usize,
    pub b_g2: usize,
}

impl KeySizes {
    pub fn of(key: &ProvingKey) -> Self {
        Self {
            ic: key.vk.ic.len(),
            h: key.h.len(),
            l: key.l.len(),
            a: key.a.len(),
            b_g1: key.b_g1.len(),
            b_g2: key.b_g2.len(),
        }
    }

    /// Err unless every query matches what `assignment` needs.
    pub fn check(&self, assignment: &Assignment) -> Result<(), Error> {
        let n = assignment.num_constraints();
        if assignment.b.len() != n || assignment.c.len() != n {
            return Err(Error::ShapeMismatch(
                "A, B and C evaluations differ in length".into(),
            ));
        }
        self.check_witness(n, &ProverWitness::of(assignment))
    }

    /// Err unless every query matches what a circuit of `constraints`
    /// constraints with this witness needs.
    pub fn check_witness(&self, constraints: usize, w: &ProverWitness<'_>) -> Result<(), Error> {
        let domain = Domain::new(constraints)?;
        let inputs = w.input.len();
        let b_points = w.b_input_density.total() + w.b_aux_density.total();
        expect_len("ic", self.ic, inputs)?;
        expect_len("h", self.h, domain.size() - 1)?;
        expect_len("l", self.l, w.aux.len())?;
        expect_len("a", self.a, inputs + w.a_aux_density.total())?;
        expect_len("b_g1", self.b_g1, b_points)?;
        expect_len("b_g2", self.b_g2, b_points)
    }
}

/// What the MSMs read of a proof's synthesis: the witness and the query
/// densities (A, B and C evaluations are the H polynomial's alone).
#[derive(Clone, Copy)]
pub(crate) struct ProverWitness<'a> {
    pub input: &'a [Scalar],
    pub aux: &'a [Scalar],
    pub a_aux_density: &'a Density,
    pub b_input_density: &'a Density,
    pub b_aux_density: &'a Density,
}

impl<'a> ProverWitness<'a> {
    pub fn of(assignment: &'a Assignment) -> Self {
        Self {
            input: &assignment.input,
            aux: &assignment.aux,
            a_aux_density: &assignment.a_aux_density,
            b_input_density: &assignment.b_input_density,
            b_aux_density: &assignment.b_aux_density,
        }
    }
}

/// A verifying key that cannot make a sound proof (bellperson refuses it too).
pub(crate) fn check_delta(vk: &VerifyingKey) -> Result<(), Error> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(SynthesisError::UnexpectedIdentity.into());
    }
    Ok(())
}

/// The five MSMs of one proof.
pub(crate) struct MsmSums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// The proof from its MSMs, r and s:
/// A = α + a + rδ, B = β + b + sδ, C = h + l + sA + rB₁ - rsδ, expanded.
pub(crate) fn assemble(vk: &VerifyingKey, sums: &MsmSums, r: Scalar, s: Scalar) -> Proof {
    let proof_a = vk.delta_g1 * r + vk.alpha_g1 + sums.a;
    let proof_b = vk.delta_g2 * s + vk.beta_g2 + sums.b_g2;
    let proof_c = sums.a * s
        + sums.b_g1 * r
        + vk.delta_g1 * (r * s)
        + vk.alpha_g1 * s
        + vk.beta_g1 * r
        + sums.h
        + sums.l;
    Proof {
        a: proof_a.to_affine(),
        b: proof_b.to_affine(),
        c: proof_c.to_affine(),
    }
}

/// Where one proof's time went, stage by stage. Stages that run at once (the
/// CPU prover's H polynomial and MSMs, a GPU proof's lanes) overlap, so the
/// stages add up to more than the proof's wall time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageTimes {
    /// Host to device copies of a proof's inputs (GPU only; zero on the CPU).
    pub upload: Duration,
    /// The H polynomial: three inverse NTTs, three coset NTTs, one inverse coset NTT.
    pub h_polynomial: Duration,
    /// MSM over the h query.
    pub msm_h: Duration,
    /// MSM over the l query.
    pub msm_l: Duration,
    /// MSMs over the a query (inputs and aux).
    pub msm_a: Duration,
    /// MSMs over the b_g1 query.
    pub msm_b_g1: Duration,
    /// MSMs over the b_g2 query.
    pub msm_b_g2: Duration,
    /// Combining the MSMs with r, s and the verifying key.
    pub assembly: Duration,
}

/// Stage by stage, for totals over several proofs.
impl std::ops::AddAssign for StageTimes {
    fn add_assign(&mut self, other: Self) {
        self.combine(&other, |mine, theirs| mine + theirs);
    }
}

impl StageTimes {
    /// Each stage the longer of the two: for parts of a stage that ran at
    /// once (one MSM divided over devices).
    #[cfg(feature = "cuda")]
    pub(crate) fn keep_longer(&mut self, other: &Self) {
        self.combine(other, Duration::max);
    }

    fn combine(&mut self, other: &Self, f: impl Fn(Duration, Duration) -> Duration) {
        let mine = [
            &mut self.upload,
            &mut self.h_polynomial,
            &mut self.msm_h,
            &mut self.msm_l,
            &mut self.msm_a,
            &mut self.msm_b_g1,
            &mut self.msm_b_g2,
            &mut self.assembly,
        ];
        let theirs = [
            other.upload,
            other.h_polynomial,
            other.msm_h,
            other.msm_l,
            other.msm_a,
            other.msm_b_g1,
            other.msm_b_g2,
            other.assembly,
        ];
        for (slot, value) in mine.into_iter().zip(theirs) {
            *slot = f(*slot, value);
        }
    }
}

/// Runs `f`, adding its wall time to `slot`.
pub(crate) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    *slot += start.elapsed();
    out
}

/// Proves one synthesized circuit on the CPU with the given `r` and `s`.
pub fn prove(
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, Error> {
    prove_timed(key, assignment, r, s).map(|(proof, _)| proof)
}

/// [`prove`], also returning the time of each stage.
pub fn prove_timed(
    key: &ProvingKey,
    assignment: &Assignment,
    r: Scalar,
    s: Scalar,
) -> Result<(Proof, StageTimes), Error> {
    check_key_fits(key, assignment)?;
    let vk = &key.vk;
    check_delta(vk)?;
    let domain = Domain::new(assignment.num_constraints())?;
    let (input, aux) = (&assignment.input, &assignment.aux);
    let (a_input_bases, a_aux_bases) = key.a.split_at(input.len());
    let b_inputs = assignment.b_input_density.total();
    let (b1_input_bases, b1_aux_bases) = key.b_g1.split_at(b_inputs);
    let (b2_input_bases, b2_aux_bases) = key.b_g2.split_at(b_inputs);
    let msm_a = || -> Result<_, Error> {
        Ok(msm(a_input_bases, input)?
            + msm_with_density(a_aux_bases, &assignment.a_aux_density, aux)?)
    };
    let msm_b_g1 = || msm_b(b1_input_bases, b1_aux_bases, assignment);
    let msm_b_g2 = || msm_b(b2_input_bases, b2_aux_bases, assignment);

    // The H polynomial and the five MSMs run side by side: one blst MSM
    // does not keep every core busy to its end (its last window sums are
    // serial), and the NTTs have their own serial steps; together they
    // fill the gaps. The stage times therefore overlap.
    let [mut t_h, mut t_l, mut t_a, mut t_b1, mut t_b2] = [StageTimes::default(); 5];
    let (h, ((l, a), (b_g1, b_g2))) = rayon::join(
        || {
            let h_coeffs = timed(&mut t_h.h_polynomial, || {
                compute_h(&domain, &assignment.a, &assignment.b, &assignment.c)
            });
            timed(&mut t_h.msm_h, || msm(&key.h, &h_coeffs))
        },
        || {
            rayon::join(
                || {
                    rayon::join(
                        || timed(&mut t_l.msm_l, || msm(&key.l, aux)),
                        || timed(&mut t_a.msm_a, msm_a),
                    )
                },
                || {
                    rayon::join(
                        || timed(&mut t_b1.msm_b_g1, msm_b_g1),
                        || timed(&mut t_b2.msm_b_g2, msm_b_g2),
                    )
                },
            )
        },
    );
    let mut t: StageTimes = t_h;
    for part in [t_l, t_a, t_b1, t_b2] {
        t += part;
    }
    let sums = MsmSums {
        h: h?,
        l: l?,
        a: a?,
        b_g1: b_g1?,
        b_g2: b_g2?,
    };
    let proof = timed(&mut t.assembly, || assemble(vk, &sums, r, s));
    Ok((proof, t))
}

/// The MSM of one B query (G1 or G2): its input points over the inputs B
/// uses, its aux points over the aux variables B uses.
fn msm_b<P: MsmAffine>(
    input_bases: &[P],
    aux_bases: &[P],
    assignment: &Assignment,
) -> Result<P::Curve, Error>
where
    P::Curve: Send + Sync,
{
    Ok(
        msm_with_density(input_bases, &assignment.b_input_density, &assignment.input)?
            + msm_with_density(aux_bases, &assignment.b_aux_density, &assignment.aux)?,
    )
}

/// Proves several synthesized circuits, one `r` and `s` each.
pub fn prove_batch(
    key: &ProvingKey,
    assignments: &[Assignment],
    r_s: &[Scalar],
    s_s: &[Scalar],
) -> Result<Vec<Proof>, Error> {
    check_batch_lengths(assignments.len(), r_s.len(), s_s.len())?;
    // Each proof's MSMs already use every core; proving the batch in
    // parallel too would only add memory.
    assignments
        .iter()
        .zip(r_s.iter().zip(s_s))
        .map(|(assignment, (r, s))| prove(key, assignment, *r, *s))
        .collect()
}

/// One `r` and one `s` per circuit.
pub(crate) fn check_batch_lengths(circuits: usize, r: usize, s: usize) -> Result<(), Error> {
    if circuits == r && circuits == s {
        Ok(())
    } else {
        Err(Error::InvalidBatch(format!(
            "{circuits} circuits, {r} r values, {s} s values"
        )))
    }
}
