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
/// split has stopped without making it.
#[derive(Default)]
struct Arrival {
    value: OnceLock<SplitScalars>,
    closed: Mutex<bool>,
    changed: Condvar,
}

impl Arrival {
    fn publish(&self, scalars: SplitScalars) {
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
                return Some(scalars);
            }
            if *closed {
                return None;
            }
            self.changed.wait(&mut closed);
        }
    }

    /// The dense vector, if any, for the next proof's split.
    fn recycle(&mut self, buffers: &ScalarBuffers) {
        if let Some(SplitScalars {
            general: GeneralScalars::Dense(values),
            ..
        }) = self.value.take()
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
    /// Splits b, a and l in that order (b first: the G2 MSM, the longest,
    /// and b_g1 take it), each across the host's cores, publishing each as
    /// it is made; `started` dates the debug lines.
    pub fn split(self, witness: &ProverWitness<'_>, started: Instant) {
        let arrivals = &*self.0;
        let buffers = &*arrivals.buffers;
        let (input, aux) = (witness.input, witness.aux);
        let capacity = input.len() + aux.len();
        // A query that uses every variable takes the assignment as it is,
        // split in one pass; otherwise its values are gathered first.
        let b_takes_all = witness.b_input_density.uses_all_of(input.len())
            && witness.b_aux_density.uses_all_of(aux.len());
        let b = if b_takes_all {
            SplitScalars::from_parts(&[input, aux], buffers, capacity)
        } else {
            let mut b = buffers.take(capacity);
            b.fill(|b| {
                witness.b_input_density.par_select_into(input, b);
                witness.b_aux_density.par_select_into(aux, b);
            });
            SplitScalars::from_vec(b, buffers)
        };
        arrivals.b.publish(b);
        let b_done = started.elapsed();
        let a = if witness.a_aux_density.uses_all_of(aux.len()) {
            SplitScalars::from_parts(&[input, aux], buffers, capacity)
        } else {
            let mut a = buffers.take(capacity);
            a.fill(|a| {
                a.extend_from_slice(input);
                witness.a_aux_density.par_select_into(aux, a);
            });
            SplitScalars::from_vec(a, buffers)
        };
        arrivals.a.publish(a);
        let a_done = started.elapsed();
        arrivals
            .l
            .publish(SplitScalars::from_parts(&[aux], buffers, capacity));
        log::debug!(
            "scalars split: b {:.3} s, a {:.3} s, l {:.3} s after the proof's start",
            b_done.as_secs_f64(),
            a_done.as_secs_f64(),
            started.elapsed().as_secs_f64()
        );
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
    use blstrs::Scalar;
    use ff::Field;

    fn split_of(values: &[Scalar], buffers: &ScalarBuffers) -> SplitScalars {
        SplitScalars::from_slice(values, buffers, values.len())
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
}
