//! Bitmaps of a split's ones cut from another split's: a tail of them
//! (l's from b's), or the ones a density selects (a's from b's), without a
//! pass over the scalars.

use rayon::prelude::*;

/// Bits [skip, skip + len) of `bits` as a bitmap of their own.
pub(super) fn shifted_bits(bits: &[u64], skip: usize, len: usize) -> Vec<u64> {
    let (word, shift) = (skip / 64, skip % 64);
    let at = |w: usize| bits.get(w).copied().unwrap_or(0);
    let mut shifted: Vec<u64> = (0..len.div_ceil(64))
        .into_par_iter()
        .map(|w| match shift {
            0 => at(word + w),
            _ => (at(word + w) >> shift) | (at(word + w + 1) << (64 - shift)),
        })
        .collect();
    if let Some(last) = shifted.last_mut().filter(|_| len % 64 != 0) {
        *last &= low_bits(len % 64);
    }
    shifted
}

/// The first `head` bits of `bits`, then of the `tail` bits after them
/// those whose place `selected` marks (bit j of `selected` for tail bit
/// j), in order.
pub(super) fn selected_bits(bits: &[u64], head: usize, selected: &[u64], tail: usize) -> Vec<u64> {
    let tail_bits = shifted_bits(bits, head, tail);
    // Each selecting word's bits, packed, and how many: in parallel, then
    // laid end to end.
    let packed: Vec<(u64, usize)> = selected
        .par_iter()
        .zip(&tail_bits)
        .enumerate()
        .map(|(w, (&mask, &from))| {
            let mask = mask & low_bits(tail.saturating_sub(w * 64).min(64));
            let (mut out, mut count, mut rest) = (0u64, 0, mask);
            while rest != 0 {
                out |= ((from >> rest.trailing_zeros()) & 1) << count;
                count += 1;
                rest &= rest - 1;
            }
            (out, count)
        })
        .collect();
    let mut writer = BitWriter::default();
    for w in 0..head.div_ceil(64) {
        writer.push(bits.get(w).copied().unwrap_or(0), (head - w * 64).min(64));
    }
    for (out, count) in packed {
        writer.push(out, count);
    }
    writer.words
}

/// Number of set bits of `words` before each word.
pub(super) fn ranks_before(words: &[u64]) -> Vec<usize> {
    let mut before = 0;
    words
        .iter()
        .map(|word| {
            let here = before;
            before += word.count_ones() as usize;
            here
        })
        .collect()
}

/// A word with its low `n` bits set (n at most 64).
pub(super) fn low_bits(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Bits appended in runs of up to 64.
#[derive(Default)]
struct BitWriter {
    words: Vec<u64>,
    len: usize,
}

impl BitWriter {
    /// Appends the low `count` bits of `bits`.
    fn push(&mut self, bits: u64, count: usize) {
        if count == 0 {
            return;
        }
        let bits = bits & low_bits(count);
        let offset = self.len % 64;
        match self.words.last_mut() {
            Some(last) if offset != 0 => {
                *last |= bits << offset;
                if offset + count > 64 {
                    self.words.push(bits >> (64 - offset));
                }
            }
            _ => self.words.push(bits),
        }
        self.len += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn bit(bits: &[u64], i: usize) -> bool {
        bits[i / 64] >> (i % 64) & 1 == 1
    }

    fn bitmap(flags: &[bool]) -> Vec<u64> {
        let mut words = vec![0u64; flags.len().div_ceil(64)];
        for (i, _) in flags.iter().enumerate().filter(|(_, set)| **set) {
            words[i / 64] |= 1 << (i % 64);
        }
        words
    }

    #[test]
    fn selected_bits_are_the_head_then_the_selected_tail_bits_in_order() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for (head, tail) in [(0, 0), (0, 200), (1, 64), (63, 65), (64, 1000), (130, 7)] {
            let flags: Vec<bool> = (0..head + tail).map(|_| rng.gen()).collect();
            let chosen: Vec<bool> = (0..tail).map(|_| rng.gen_bool(0.7)).collect();
            let mut want: Vec<bool> = flags[..head].to_vec();
            want.extend((0..tail).filter(|&j| chosen[j]).map(|j| flags[head + j]));
            let mut selected = bitmap(&chosen);
            // Stray bits past the tail select nothing.
            if let Some(last) = selected.last_mut().filter(|_| tail % 64 != 0) {
                *last |= !low_bits(tail % 64);
            }
            let got = selected_bits(&bitmap(&flags), head, &selected, tail);
            assert_eq!(got, bitmap(&want), "head {head}, tail {tail}");
            assert!((0..want.len()).all(|i| bit(&got, i) == want[i]));
        }
    }

    #[test]
    fn ranks_count_the_bits_before_each_word() {
        assert_eq!(ranks_before(&[0b1011, 0, u64::MAX, 1]), vec![0, 3, 3, 67]);
        assert!(ranks_before(&[]).is_empty());
    }
}
