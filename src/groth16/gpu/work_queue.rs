//! A batch's proofs handed out one at a time to the devices proving it:
//! each takes the next one nobody has taken, so a faster device (or one
//! whose key was already resident) proves more of them.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The indices 0..len, each taken once, by any number of threads.
pub(crate) struct WorkQueue {
    next: AtomicUsize,
    len: usize,
    stopped: AtomicBool,
}

impl WorkQueue {
    pub fn new(len: usize) -> Self {
        Self {
            next: AtomicUsize::new(0),
            len,
            stopped: AtomicBool::new(false),
        }
    }

    /// The next index nobody has taken; None once all are taken or the
    /// queue was stopped.
    pub fn take(&self) -> Option<usize> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed);
        (index < self.len).then_some(index)
    }

    /// No more indices for anyone: one device failed, so the batch fails
    /// and the others stop after their proofs in flight.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }
}

/// The items proved by each device, by index, back in index order; None
/// where an index is missing (or came twice).
pub(crate) fn in_order<T>(len: usize, parts: Vec<Vec<(usize, T)>>) -> Option<Vec<T>> {
    let mut slots: Vec<Option<T>> = (0..len).map(|_| None).collect();
    for (index, item) in parts.into_iter().flatten() {
        let slot = slots.get_mut(index)?;
        if slot.replace(item).is_some() {
            return None;
        }
    }
    slots.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_is_taken_once_across_threads() {
        let queue = WorkQueue::new(10_000);
        let parts: Vec<Vec<(usize, usize)>> = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        std::iter::from_fn(|| queue.take())
                            .map(|index| (index, index * 2))
                            .collect()
                    })
                })
                .collect();
            takers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let merged = in_order(10_000, parts).expect("each index once");
        assert!(merged.iter().enumerate().all(|(i, v)| *v == 2 * i));
        assert_eq!(queue.take(), None);
    }

    #[test]
    fn a_stopped_queue_hands_out_nothing_more() {
        let queue = WorkQueue::new(5);
        assert_eq!(queue.take(), Some(0));
        queue.stop();
        assert_eq!(queue.take(), None);
        assert_eq!(WorkQueue::new(0).take(), None);
    }

    #[test]
    fn missing_or_repeated_indices_are_no_batch() {
        assert_eq!(
            in_order(3, vec![vec![(2, 'c'), (0, 'a')], vec![(1, 'b')]]),
            Some(vec!['a', 'b', 'c'])
        );
        assert_eq!(in_order(3, vec![vec![(0, 'a'), (2, 'c')]]), None);
        assert_eq!(
            in_order(2, vec![vec![(0, 'a'), (1, 'b')], vec![(1, 'b')]]),
            None
        );
        assert_eq!(in_order(1, vec![vec![(0, 'a'), (5, 'x')]]), None);
        assert_eq!(in_order::<char>(0, Vec::new()), Some(Vec::new()));
    }
}
