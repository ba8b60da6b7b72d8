//! Many projective points to affine with one inversion a batch, through
//! blst's Montgomery-trick conversion. group's default `batch_normalize`,
//! which blstrs keeps, inverts once a point: for a key's fixed-base
//! tables and queries that inversion cost more than the point's additions.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::prime::PrimeCurve;

// The casts below rely on blstrs' points being #[repr(transparent)] over
// blst's: check what can be checked at compile time.
const _: () = assert!(std::mem::size_of::<G1Projective>() == std::mem::size_of::<blst_p1>());
const _: () = assert!(std::mem::align_of::<G1Projective>() == std::mem::align_of::<blst_p1>());
const _: () = assert!(std::mem::size_of::<G2Projective>() == std::mem::size_of::<blst_p2>());
const _: () = assert!(std::mem::align_of::<G2Projective>() == std::mem::align_of::<blst_p2>());

/// A projective group whose points blst converts to affine in batches.
pub trait BatchAffine: PrimeCurve {
    /// `out[i]` = `points[i]` in affine form (the identity as blst's all
    /// zeros, as `to_affine` gives it); the lengths must be equal.
    fn batch_to_affine(points: &[Self], out: &mut [Self::Affine]);
}

impl BatchAffine for G1Projective {
    fn batch_to_affine(points: &[Self], out: &mut [G1Affine]) {
        assert_eq!(points.len(), out.len(), "a slot per point");
        if points.is_empty() {
            return;
        }
        // blst walks a pointer list and, at its first null, goes on through
        // the memory after the last pointer: [first, null] is the array.
        let list = [points.as_ptr().cast::<blst_p1>(), std::ptr::null()];
        // SAFETY: G1Projective and G1Affine are #[repr(transparent)] over
        // blst_p1 and blst_p1_affine (sizes checked above); `points` holds
        // points.len() values and `out` as many slots, which blst writes
        // (it also uses them as scratch before).
        unsafe {
            blst::blst_p1s_to_affine(
                out.as_mut_ptr().cast::<blst_p1_affine>(),
                list.as_ptr(),
                points.len(),
            )
        }
    }
}

impl BatchAffine for G2Projective {
    fn batch_to_affine(points: &[Self], out: &mut [G2Affine]) {
        assert_eq!(points.len(), out.len(), "a slot per point");
        if points.is_empty() {
            return;
        }
        let list = [points.as_ptr().cast::<blst_p2>(), std::ptr::null()];
        // SAFETY: as for G1, over blst_p2 and blst_p2_affine.
        unsafe {
            blst::blst_p2s_to_affine(
                out.as_mut_ptr().cast::<blst_p2_affine>(),
                list.as_ptr(),
                points.len(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::{prime::PrimeCurveAffine, Group};
    use rand_core::OsRng;

    /// Random points with identities among them (first, inside, last), in
    /// batches that cross blst's strides (1536 G1, 768 G2 points).
    fn check<G: BatchAffine>(len: usize) {
        let mut points: Vec<G> = (0..len).map(|_| G::random(OsRng)).collect();
        for i in [0, len / 2, len - 1] {
            points[i] = G::identity();
        }
        points[1] = points[2];
        let mut out = vec![G::Affine::identity(); len];
        G::batch_to_affine(&points, &mut out);
        for (i, (p, a)) in points.iter().zip(&out).enumerate() {
            assert!(p.to_affine() == *a, "point {i} of {len}");
        }
    }

    #[test]
    fn batches_equal_one_point_at_a_time() {
        for len in [3, 1537, 3100] {
            check::<G1Projective>(len);
        }
        for len in [3, 769, 1600] {
            check::<G2Projective>(len);
        }
        let mut one = [G1Affine::identity()];
        G1Projective::batch_to_affine(&[G1Projective::generator()], &mut one);
        assert_eq!(one[0], G1Affine::generator());
    }
}
