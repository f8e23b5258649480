//! [`InlineList`]: a short list stored inside its owner, spilling to the heap when it grows.
//!
//! Most lists of the allocator are tiny — a handle usually holds one address and a node owns
//! one or two blocks — but there are millions of them. Keeping the first few items inline
//! saves an allocation per list and, more importantly, the cache miss of following a pointer
//! to a separate heap block on every request. Items are kept in insertion (or `insert`)
//! order, exactly as a `Vec` would keep them.

/// A list keeping up to `N` items inline.
#[derive(Clone, Debug)]
pub(crate) enum InlineList<T: Default, const N: usize> {
    /// The first `len` items are the list; the rest are `T::default()` placeholders.
    Inline {
        len: u8,
        items: [T; N],
    },
    Spilled(Vec<T>),
}

impl<T: Default, const N: usize> Default for InlineList<T, N> {
    fn default() -> Self {
        InlineList::Inline {
            len: 0,
            items: std::array::from_fn(|_| T::default()),
        }
    }
}

impl<T: Default, const N: usize> InlineList<T, N> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            InlineList::Inline { len, items } => &items[..usize::from(*len)],
            InlineList::Spilled(v) => v,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// Inserts `item` at `index` (≤ len), shifting the later items up.
    pub(crate) fn insert(&mut self, index: usize, item: T) {
        match self {
            InlineList::Inline { len, items } if usize::from(*len) < N => {
                let n = usize::from(*len);
                assert!(index <= n, "insert index out of range");
                items[n] = item;
                items[index..=n].rotate_right(1);
                *len += 1;
            }
            InlineList::Inline { len, items } => {
                let mut v: Vec<T> = Vec::with_capacity(2 * N.max(1));
                v.extend(items[..usize::from(*len)].iter_mut().map(std::mem::take));
                v.insert(index, item);
                *self = InlineList::Spilled(v);
            }
            InlineList::Spilled(v) => v.insert(index, item),
        }
    }

    pub(crate) fn push(&mut self, item: T) {
        self.insert(self.len(), item);
    }

    /// Removes and returns the item at `index`, shifting the later items down.
    pub(crate) fn remove(&mut self, index: usize) -> T {
        match self {
            InlineList::Inline { len, items } => {
                let n = usize::from(*len);
                assert!(index < n, "remove index out of range");
                items[index..n].rotate_left(1);
                *len -= 1;
                std::mem::take(&mut items[n - 1])
            }
            InlineList::Spilled(v) => v.remove(index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_vec_inline_and_spilled() {
        let mut l: InlineList<u32, 2> = InlineList::default();
        let mut v: Vec<u32> = Vec::new();
        assert_eq!(l.len(), 0);
        for (i, x) in [(0, 5), (0, 3), (1, 4), (3, 9), (0, 1)] {
            l.insert(i, x);
            v.insert(i, x);
            assert_eq!(l.as_slice(), &v[..]);
        }
        assert!(matches!(l, InlineList::Spilled(_)));
        assert_eq!(l.remove(2), v.remove(2));
        assert_eq!(l.as_slice(), &v[..]);
        let mut l: InlineList<u32, 3> = InlineList::default();
        l.push(7);
        l.push(8);
        l.push(9);
        assert!(matches!(l, InlineList::Inline { .. }));
        assert_eq!(l.remove(0), 7);
        assert_eq!(l.as_slice(), &[8, 9]);
        assert_eq!(l.iter().copied().sum::<u32>(), 17);
        assert_eq!(l.len(), 2);
    }
}
