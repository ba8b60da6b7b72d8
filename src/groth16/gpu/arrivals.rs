//! A proof's split scalars handed to its lanes one vector at a time: the
//! split makes b, then a, then l, and each lane starts as soon as its own
//! vector is there, so the GPU is busy a third of the split after the
//! proof's start instead of idle until all three are made (~100 ms of a
//! 2^24 proof on one H200).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::split::{GeneralScalars, ScalarBuffers, SplitScalars};
use crate::groth16::prover::ProverWitness;

/// One split vector, published once; waiters see it, or None once the
/// split has stopped without making it. Two arrivals may hold the same
/// vector (a and b where both queries use every variable).
#[derive(Default)]
struct Arrival {
    value: OnceLock<Arc<SplitScalars>>,
    closed: Mutex<bool>,
    changed: Condvar,
}

impl Arrival {
    fn publish(&self, scalars: Arc<SplitScalars>) {
        // Set under the lock, so a waiter between its check and its wait
        // cannot miss the wake-up.
        let closed = self.closed.lock();
        let _ = self.value.set(scalars);
        drop(closed);
        self.changed.notify_all();
    }

    fn close(&self) {
        *self.closed.lock() = true;
        self.changed.notify_all();
    }

    fn wait(&self) -> Option<&SplitScalars> {
        let mut closed = self.closed.lock();
        loop {
            if let Some(scalars) = self.value.get() {
                return Some(&**scalars);
            }
            if *closed {
                return None;
            }
            self.changed.wait(&mut closed);
        }
    }

    /// The dense vector, if any and not shared with another arrival still,
    /// for the next proof's split.
    fn recycle(&mut self, buffers: &ScalarBuffers) {
        let Some(shared) = self.value.take() else {
            return;
        };
        if let Ok(SplitScalars {
            general: GeneralScalars::Dense(values),
            ..
        }) = Arc::try_unwrap(shared)
        {
            buffers.give(values);
        }
    }
}

/// The l, a and b scalars of a proof as they arrive (b serves the G1 and
/// the G2 query). The dense vectors go back to the key's buffers when the
/// last holder (the split or the lanes) drops this.
pub(super) struct ScalarArrivals {
    l: Arrival,
    a: Arrival,
    b: Arrival,
    buffers: Arc<ScalarBuffers>,
}

impl ScalarArrivals {
    /// The arrivals, and the splitter that fills them from `buffers`.
    pub fn new(buffers: Arc<ScalarBuffers>) -> (ScalarSplitter, Arc<Self>) {
        let arrivals = Arc::new(Self {
            l: Arrival::default(),
            a: Arrival::default(),
            b: Arrival::default(),
            buffers,
        });
        (ScalarSplitter(arrivals.clone()), arrivals)
    }

    /// Waits for l's scalars (None: the split failed).
    pub fn l(&self) -> Option<&SplitScalars> {
        self.l.wait()
    }

    /// Waits for a's scalars (None: the split failed).
    pub fn a(&self) -> Option<&SplitScalars> {
        self.a.wait()
    }

    /// Waits for b's scalars (None: the split failed).
    pub fn b(&self) -> Option<&SplitScalars> {
        self.b.wait()
    }
}

impl Drop for ScalarArrivals {
    fn drop(&mut self) {
        for arrival in [&mut self.l, &mut self.a, &mut self.b] {
            arrival.recycle(&self.buffers);
        }
    }
}

/// The producing end of [`ScalarArrivals`]. Dropped, even by a panic in
/// the split, it closes what it did not publish, so no lane waits forever.
pub(super) struct ScalarSplitter(Arc<ScalarArrivals>);

impl ScalarSplitter {
    /// Splits b, then l and a side by side (b first: the G2 MSM, the
    /// longest, and b_g1 take it), each across the host's cores, publishing
    /// each as it is made; `started` dates the debug lines. Where b takes every
    /// variable and splits sparse (a witness of bits), l (b's aux part) and
    /// a (its inputs and the aux its density selects) are cut from b's
    /// split without another pass over the witness.
    pub fn split(self, witness: &ProverWitness<'_>, started: Instant) {
        let arrivals = &*self.0;
        let buffers = &*arrivals.buffers;
        let (input, aux) = (witness.input, witness.aux);
        let capacity = input.len() + aux.len();
        // A query that uses every variable takes the assignment as it is,
        // split in one pass; otherwise its values are gathered first.
        let b_takes_all = witness.b_input_density.uses_all_of(input.len())
            && witness.b_aux_density.uses_all_of(aux.len());
        let b = Arc::new(if b_takes_all {
            SplitScalars::from_parts(&[input, aux], buffers, capacity)
        } else {
            let mut b = buffers.take(capacity);
            b.fill(|b| {
                witness.b_input_density.par_select_into(input, b);
                witness.b_aux_density.par_select_into(aux, b);
            });
            SplitScalars::from_vec(b, buffers)
        });
        arrivals.b.publish(b.clone());
        let b_done = started.elapsed();
        // l and a are cut from b independently: made side by side, each
        // published when ready (the L lane waits for l, the G1 lane for a).
        let (l_done, a_done) = rayon::join(
            || {
                let l = b_takes_all
                    .then(|| b.tail_of(input.len()))
                    .flatten()
                    .unwrap_or_else(|| SplitScalars::from_parts(&[aux], buffers, capacity));
                arrivals.l.publish(Arc::new(l));
                started.elapsed()
            },
            || {
                arrivals
                    .a
                    .publish(a_of(witness, &b, b_takes_all, buffers, capacity));
                started.elapsed()
            },
        );
        log::debug!(
            "scalars split: b {:.3} s, l {:.3} s, a {:.3} s after the proof's start",
            b_done.as_secs_f64(),
            l_done.as_secs_f64(),
            a_done.as_secs_f64()
        );
    }
}

/// a's scalars: b's split where a's query also uses every variable, cut
/// from it where b takes all and a selects, else a pass of their own.
fn a_of(
    witness: &ProverWitness<'_>,
    b: &Arc<SplitScalars>,
    b_takes_all: bool,
    buffers: &ScalarBuffers,
    capacity: usize,
) -> Arc<SplitScalars> {
    let (input, aux) = (witness.input, witness.aux);
    // a's query always uses every input: with every aux variable too, its
    // scalars are b's, already split.
    let a_takes_all = witness.a_aux_density.uses_all_of(aux.len());
    if a_takes_all && b_takes_all {
        b.clone()
    } else if a_takes_all {
        Arc::new(SplitScalars::from_parts(&[input, aux], buffers, capacity))
    } else if let Some(a) = b_takes_all
        .then(|| b.selected_of(input.len(), witness.a_aux_density))
        .flatten()
    {
        Arc::new(a)
    } else {
        let mut a = buffers.take(capacity);
        a.fill(|a| {
            a.extend_from_slice(input);
            witness.a_aux_density.par_select_into(aux, a);
        });
        Arc::new(SplitScalars::from_vec(a, buffers))
    }
}

impl Drop for ScalarSplitter {
    fn drop(&mut self) {
        for arrival in [&self.0.l, &self.0.a, &self.0.b] {
            arrival.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesis::Density;
    use blstrs::Scalar;
    use ff::Field;

    fn split_of(values: &[Scalar], buffers: &ScalarBuffers) -> Arc<SplitScalars> {
        Arc::new(SplitScalars::from_slice(values, buffers, values.len()))
    }

    #[test]
    fn a_waiter_sees_a_vector_published_later() {
        let buffers = Arc::new(ScalarBuffers::default());
        let (splitter, arrivals) = ScalarArrivals::new(buffers.clone());
        let values = vec![Scalar::from(5u64); 100];
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| arrivals.b().map(|b| b.len));
            std::thread::sleep(std::time::Duration::from_millis(20));
            splitter.0.b.publish(split_of(&values, &buffers));
            assert_eq!(waiter.join().unwrap(), Some(100));
        });
    }

    #[test]
    fn a_dropped_splitter_closes_what_it_did_not_publish() {
        let buffers = Arc::new(ScalarBuffers::default());
        let (splitter, arrivals) = ScalarArrivals::new(buffers.clone());
        splitter
            .0
            .b
            .publish(split_of(&[Scalar::ONE, Scalar::ZERO], &buffers));
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| arrivals.l().is_none());
            drop(splitter);
            assert!(waiter.join().unwrap());
        });
        assert!(arrivals.a().is_none());
        assert_eq!(arrivals.b().map(|b| b.ones_count), Some(1));
    }

    #[test]
    fn a_split_that_panics_closes_its_arrivals() {
        let buffers = Arc::new(ScalarBuffers::default());
        let (splitter, arrivals) = ScalarArrivals::new(buffers);
        let panicked = std::thread::spawn(move || {
            let _splitter = splitter;
            panic!("a split that fails");
        })
        .join();
        assert!(panicked.is_err());
        assert!(arrivals.b().is_none() && arrivals.a().is_none() && arrivals.l().is_none());
    }

    #[test]
    fn dense_vectors_go_back_to_the_buffers_with_the_last_holder() {
        let buffers = Arc::new(ScalarBuffers::default());
        let (splitter, arrivals) = ScalarArrivals::new(buffers.clone());
        let general: Vec<Scalar> = (2..66u64).map(Scalar::from).collect();
        splitter.0.l.publish(split_of(&general, &buffers));
        assert_eq!(buffers.kept(), 0);
        drop(arrivals);
        assert_eq!(buffers.kept(), 0, "the splitter still holds them");
        drop(splitter);
        assert_eq!(buffers.kept(), 1);
    }

    #[test]
    fn a_vector_shared_by_a_and_b_goes_back_once() {
        let buffers = Arc::new(ScalarBuffers::default());
        let (splitter, arrivals) = ScalarArrivals::new(buffers.clone());
        let general: Vec<Scalar> = (2..66u64).map(Scalar::from).collect();
        let shared = split_of(&general, &buffers);
        splitter.0.b.publish(shared.clone());
        splitter.0.a.publish(shared);
        drop(splitter);
        let (a, b) = (arrivals.a().unwrap(), arrivals.b().unwrap());
        assert!(std::ptr::eq(a, b));
        drop(arrivals);
        assert_eq!(buffers.kept(), 1);
    }

    /// The dense values of a split or its (value, index) pairs, and its ones.
    fn contents(split: &SplitScalars) -> (Vec<(usize, Scalar)>, Vec<u64>) {
        let general: Vec<(usize, Scalar)> = match &split.general {
            GeneralScalars::Dense(values) => values.iter().copied().enumerate().collect(),
            GeneralScalars::Sparse { values, indices } => indices
                .iter()
                .map(|&i| i as usize)
                .zip(values.iter().copied())
                .collect(),
        };
        let general = general
            .into_iter()
            .filter(|(_, value)| !bool::from(value.is_zero()))
            .collect();
        (general, split.ones.clone())
    }

    /// What a query's split should hold: the selected values, their ones as
    /// bits and every other nonzero value with its place.
    fn expected(selected: &[Scalar]) -> (Vec<(usize, Scalar)>, Vec<u64>) {
        let mut ones = vec![0u64; selected.len().div_ceil(64)];
        let mut general = Vec::new();
        for (i, value) in selected.iter().enumerate() {
            if *value == Scalar::ONE {
                ones[i / 64] |= 1 << (i % 64);
            } else if !bool::from(value.is_zero()) {
                general.push((i, *value));
            }
        }
        (general, ones)
    }

    #[test]
    fn the_split_makes_each_query_s_scalars() {
        let input = vec![Scalar::ONE, Scalar::from(9u64)];
        // Mostly field elements (b splits dense), and mostly bits (b splits
        // sparse, and l comes from b's split).
        let aux_of = |general: fn(u64) -> bool| -> Vec<Scalar> {
            (0..10_000u64)
                .map(|i| match i % 7 {
                    0 => Scalar::ONE,
                    1 => Scalar::ZERO,
                    _ if general(i) => Scalar::from(i * 31 + 2),
                    _ => Scalar::from(i % 2),
                })
                .collect()
        };
        for aux in [aux_of(|_| true), aux_of(|i| i % 5 == 0)] {
            check_split(&input, &aux);
        }
    }

    fn check_split(input: &[Scalar], aux: &[Scalar]) {
        let all_of = |len: usize| {
            let mut density = Density::with_len(len);
            (0..len).for_each(|i| density.mark(i));
            density
        };
        let mut some_aux = Density::with_len(aux.len());
        (0..aux.len())
            .filter(|i| i % 3 != 0)
            .for_each(|i| some_aux.mark(i));
        let (all_input, all_aux) = (all_of(input.len()), all_of(aux.len()));
        // Every variable in both queries (a and b share one split), then b's
        // aux and then a's aux in part.
        for (a_aux, b_aux) in [
            (&all_aux, &all_aux),
            (&all_aux, &some_aux),
            (&some_aux, &all_aux),
        ] {
            let buffers = Arc::new(ScalarBuffers::default());
            let (splitter, arrivals) = ScalarArrivals::new(buffers);
            let witness = ProverWitness {
                input,
                aux,
                a_aux_density: a_aux,
                b_input_density: &all_input,
                b_aux_density: b_aux,
            };
            splitter.split(&witness, Instant::now());
            let select = |aux_density: &Density| -> Vec<Scalar> {
                let mut values = input.to_vec();
                values.extend(aux_density.select(aux).copied());
                values
            };
            assert_eq!(contents(arrivals.b().unwrap()), expected(&select(b_aux)));
            assert_eq!(contents(arrivals.a().unwrap()), expected(&select(a_aux)));
            assert_eq!(contents(arrivals.l().unwrap()), expected(aux));
            let shared = std::ptr::eq(arrivals.a().unwrap(), arrivals.b().unwrap());
            assert_eq!(shared, std::ptr::eq(a_aux, b_aux));
        }
    }
}
