//! Transparent huge pages for large buffers that are about to be written.
//!
//! A synthesized partition's vectors are tens of MiB each, fresh from the
//! allocator for every proof; their first writes fault in one 4 KiB page at
//! a time, and on a host whose huge pages are "madvise" only, that faulting
//! was a fifth of evaluating A/B/C. Asking for huge pages over the buffer
//! first makes it one fault per 2 MiB. It is a hint: where the kernel has
//! huge pages off, or elsewhere than Linux, nothing changes.

use std::mem::MaybeUninit;

/// Below this a buffer is not worth a system call (and holds no whole huge page).
const MIN_BYTES: usize = 4 << 20;

/// Advises huge pages over the whole 2 MiB pages inside `buffer`.
pub(super) fn advise<T>(buffer: &mut [MaybeUninit<T>]) {
    let bytes = std::mem::size_of_val(buffer);
    if bytes >= MIN_BYTES {
        advise_range(buffer.as_mut_ptr() as usize, bytes);
    }
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: [first, end) lies inside the caller's buffer, which it
        // borrows mutably; MADV_HUGEPAGE changes no contents, only how later
        // faults are served. A failure (huge pages off) leaves things as they were.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _bytes: usize) {}
