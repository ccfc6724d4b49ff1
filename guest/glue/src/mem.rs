//! `memcmp` and `bcmp` for the plugin, eight bytes at a time.
//!
//! On `wasm32-unknown-unknown` the standard library's are compiler-builtins' byte loops,
//! and in the sandbox every turn of a loop pays the CPU budget's epoch check. The
//! plugin compares long, mostly equal strings on every update (the semantic equality
//! of two statuses: image IDs, container IDs, messages; map keys; condition types), so
//! those loops were a twentieth of a changed `set-pod-status` in the sandbox. These
//! compare a word per turn; they take the place of compiler-builtins' weak symbols
//! when the plugin is linked. Natively nothing changes: the platform's are used.

/// Compares `n` bytes at `a` and `b` as C's `memcmp` does: zero when equal, else the
/// difference of the first differing bytes (as unsigned).
///
/// # Safety
///
/// `a` and `b` must each be valid for reads of `n` bytes.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while n - i >= 8 {
        // SAFETY: i + 8 <= n, and both are valid for n bytes.
        let (x, y) = unsafe { (a.add(i).cast::<u64>().read_unaligned(), b.add(i).cast::<u64>().read_unaligned()) };
        if x != y {
            // The first differing byte is the lowest one that differs: little-endian.
            let at = i + ((u64::from_le(x) ^ u64::from_le(y)).trailing_zeros() / 8) as usize;
            // SAFETY: at < i + 8 <= n.
            return unsafe { i32::from(*a.add(at)) - i32::from(*b.add(at)) };
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

#[cfg(target_arch = "wasm32")]
mod symbols {
    /// C's `memcmp`, for the plugin (see the module's docs).
    ///
    /// # Safety
    ///
    /// As C's: `a` and `b` valid for reads of `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: the caller's contract is the function's.
        unsafe { super::compare(a, b, n) }
    }

    /// `bcmp`: zero when the `n` bytes are equal (what `==` on slices and strings
    /// compiles to).
    ///
    /// # Safety
    ///
    /// As C's: `a` and `b` valid for reads of `n` bytes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
        // SAFETY: the caller's contract is the function's.
        unsafe { super::compare(a, b, n) }
    }
}

#[cfg(test)]
mod tests {
    use super::compare;

    fn sign(x: i32) -> i32 {
        x.signum()
    }

    /// Every length up to three words, equal and differing at every position, in
    /// either direction, agrees with the slices' own ordering; and the difference is
    /// that of the first differing bytes.
    #[test]
    fn agrees_with_slice_ordering_at_every_length_and_position() {
        for n in 0..=24 {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37).wrapping_add(1)).collect();
            // SAFETY: both are n bytes long.
            assert_eq!(unsafe { compare(a.as_ptr(), a.clone().as_ptr(), n) }, 0, "equal, {n} bytes");
            for at in 0..n {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[at] = b[at].wrapping_add(delta);
                    let expected = i32::from(a[at]) - i32::from(b[at]);
                    // SAFETY: both are n bytes long.
                    let got = unsafe { compare(a.as_ptr(), b.as_ptr(), n) };
                    assert_eq!(got, expected, "{n} bytes, differing at {at} by {delta}");
                    assert_eq!(sign(got), a.cmp(&b) as i32, "{n} bytes, differing at {at}");
                    // SAFETY: both are n bytes long.
                    assert_eq!(unsafe { compare(b.as_ptr(), a.as_ptr(), n) }, -expected);
                }
            }
        }
    }

    /// A later difference in the same word does not hide the first one.
    #[test]
    fn the_first_difference_decides() {
        let a = *b"abcdefgh-ijk";
        let b = *b"abXdefgZ-ijk";
        // SAFETY: both are 12 bytes long.
        let got = unsafe { compare(a.as_ptr(), b.as_ptr(), a.len()) };
        assert_eq!(got, i32::from(b'c') - i32::from(b'X'));
    }
}
