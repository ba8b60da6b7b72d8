//! A mutex whose urgent lockers go ahead of the others: what lets a
//! WinningPoSt proof (bellperson's `*_in_priority` calls) take a device
//! that a long batch of PoRep partitions is using.
//!
//! Plain lockers wait while any urgent locker waits. A holder doing long,
//! divisible work (a batch, proof after proof) asks
//! [`UrgentFirstGuard::urgent_waiting`] between its pieces and, when one
//! waits, hands the lock over with [`UrgentFirstGuard::yield_to_urgent`],
//! which returns once the urgent work is done. Nothing is preempted: an
//! urgent locker waits for the piece in progress.

use parking_lot::{Condvar, Mutex, MutexGuard};

/// A value behind a lock that urgent lockers get first.
pub struct UrgentFirstMutex<T> {
    value: Mutex<T>,
    /// Urgent lockers waiting for `value` (not yet holding it).
    urgent: Mutex<usize>,
    /// Signalled when `urgent` falls to zero.
    no_urgent: Condvar,
}

impl<T> UrgentFirstMutex<T> {
    /// Puts `value` behind the lock.
    pub fn new(value: T) -> Self {
        Self {
            value: Mutex::new(value),
            urgent: Mutex::new(0),
            no_urgent: Condvar::new(),
        }
    }

    /// Waits for the value behind any urgent lockers.
    pub fn lock(&self) -> UrgentFirstGuard<'_, T> {
        loop {
            self.wait_for_no_urgent();
            let value = self.value.lock();
            if *self.urgent.lock() == 0 {
                return UrgentFirstGuard { value, owner: self };
            }
            // An urgent locker came while this one waited: it goes first
            // (a fair unlock hands the value to a parked thread).
            MutexGuard::unlock_fair(value);
        }
    }

    /// The value if nobody holds it and no urgent locker waits for it.
    pub fn try_lock(&self) -> Option<UrgentFirstGuard<'_, T>> {
        if *self.urgent.lock() != 0 {
            return None;
        }
        self.value
            .try_lock()
            .map(|value| UrgentFirstGuard { value, owner: self })
    }

    /// Waits for the value ahead of every plain locker: the holder keeps
    /// it until it lets go or yields, and no plain locker takes it
    /// meanwhile.
    pub fn lock_urgent(&self) -> UrgentFirstGuard<'_, T> {
        *self.urgent.lock() += 1;
        let value = self.value.lock();
        let mut urgent = self.urgent.lock();
        *urgent -= 1;
        if *urgent == 0 {
            self.no_urgent.notify_all();
        }
        UrgentFirstGuard { value, owner: self }
    }

    /// Whether someone holds the value now (it may change at once).
    pub fn is_locked(&self) -> bool {
        self.value.is_locked()
    }

    /// Whether an urgent locker waits now.
    pub fn urgent_waiting(&self) -> bool {
        *self.urgent.lock() != 0
    }

    fn wait_for_no_urgent(&self) {
        let mut urgent = self.urgent.lock();
        while *urgent != 0 {
            self.no_urgent.wait(&mut urgent);
        }
    }
}

/// The value of an [`UrgentFirstMutex`], held until dropped.
pub struct UrgentFirstGuard<'a, T> {
    value: MutexGuard<'a, T>,
    owner: &'a UrgentFirstMutex<T>,
}

impl<T> UrgentFirstGuard<'_, T> {
    /// Whether an urgent locker waits for this value: long work should
    /// finish its piece in progress and [`yield_to_urgent`](Self::yield_to_urgent).
    pub fn urgent_waiting(&self) -> bool {
        self.owner.urgent_waiting()
    }

    /// Lets the urgent lockers waiting now go first: unlocks, waits until
    /// they have taken the value, and locks it again once they are done.
    /// Returns at once when none waits.
    pub fn yield_to_urgent(&mut self) {
        if !self.urgent_waiting() {
            return;
        }
        let owner = self.owner;
        MutexGuard::unlocked_fair(&mut self.value, || owner.wait_for_no_urgent());
    }
}

impl<T> std::ops::Deref for UrgentFirstGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    /// Long enough for a thread to reach a lock and park there.
    const SETTLE: Duration = Duration::from_millis(100);

    /// Waits (within a generous bound, for loaded machines) until an
    /// urgent locker has announced itself.
    fn until_urgent_waits<T>(lock: &UrgentFirstMutex<T>) {
        let began = std::time::Instant::now();
        while !lock.urgent_waiting() {
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "no urgent locker came"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn an_urgent_locker_goes_ahead_of_plain_ones_queued_before_it() {
        let lock = UrgentFirstMutex::new(());
        let (order_tx, order) = mpsc::channel();
        thread::scope(|scope| {
            let held = lock.lock();
            assert!(lock.is_locked());
            for k in 0..3 {
                let order_tx = order_tx.clone();
                let lock = &lock;
                scope.spawn(move || {
                    let _guard = lock.lock();
                    order_tx.send(format!("plain {k}")).unwrap();
                });
            }
            thread::sleep(SETTLE);
            let order_tx = order_tx.clone();
            let lock = &lock;
            scope.spawn(move || {
                let _guard = lock.lock_urgent();
                order_tx.send("urgent".to_string()).unwrap();
            });
            until_urgent_waits(lock);
            assert!(held.urgent_waiting());
            drop(held);
        });
        drop(order_tx);
        let order: Vec<String> = order.iter().collect();
        assert_eq!(order.len(), 4, "{order:?}");
        assert_eq!(order[0], "urgent", "{order:?}");
    }

    #[test]
    fn a_holder_that_yields_gets_the_value_back_after_the_urgent_work() {
        let lock = UrgentFirstMutex::new(());
        let (order_tx, order) = mpsc::channel();
        thread::scope(|scope| {
            let mut guard = lock.lock();
            // Nothing waits: yielding returns at once, still holding.
            guard.yield_to_urgent();
            assert!(lock.try_lock().is_none());
            let urgent = {
                let lock = &lock;
                let order_tx = order_tx.clone();
                scope.spawn(move || {
                    let _guard = lock.lock_urgent();
                    order_tx.send("urgent ran").unwrap();
                    thread::sleep(SETTLE);
                    order_tx.send("urgent done").unwrap();
                })
            };
            // A batch of pieces, yielding between them.
            until_urgent_waits(&lock);
            for _ in 0..5 {
                if guard.urgent_waiting() {
                    guard.yield_to_urgent();
                    order_tx.send("batch resumed").unwrap();
                }
                thread::sleep(Duration::from_millis(5));
            }
            assert!(!guard.urgent_waiting());
            urgent.join().unwrap();
            // The guard is held again: nobody else gets the value.
            assert!(lock.try_lock().is_none());
        });
        drop(order_tx);
        let order: Vec<&str> = order.iter().collect();
        assert_eq!(order, ["urgent ran", "urgent done", "batch resumed"]);
    }

    #[test]
    fn try_lock_leaves_the_value_to_a_waiting_urgent_locker() {
        let lock = UrgentFirstMutex::new(7u32);
        thread::scope(|scope| {
            let held = lock.lock();
            let urgent = scope.spawn(|| *lock.lock_urgent());
            until_urgent_waits(&lock);
            assert!(lock.try_lock().is_none());
            drop(held);
            assert_eq!(urgent.join().unwrap(), 7);
        });
        assert!(!lock.urgent_waiting());
        assert!(!lock.is_locked());
        assert_eq!(lock.try_lock().map(|guard| *guard), Some(7));
    }

    #[test]
    fn urgent_lockers_take_turns_among_themselves() {
        let lock = UrgentFirstMutex::new(0u32);
        let inside = std::sync::atomic::AtomicU32::new(0);
        thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..50 {
                        let _guard = lock.lock_urgent();
                        assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0);
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
                scope.spawn(|| {
                    for _ in 0..50 {
                        let _guard = lock.lock();
                        assert_eq!(inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst), 0);
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                });
            }
        });
        assert!(!lock.urgent_waiting());
    }
}
