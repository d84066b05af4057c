//! Stable sorting through one instantiation of the standard library's sort for the whole
//! binary. Each `sort_by`/`sort_by_key` call with its own closure instantiates the whole stable
//! sort again, about 3.5 KB of code each: 53 of them were 200 KB of the x86-64 release binary
//! (its budget is 4.5 MB). Here the comparator goes behind `&dyn`, the indices are sorted once,
//! and the slice is permuted in place; a call site costs a few hundred bytes.
//!
//! Collecting into a `BTreeMap`, a `BTreeSet` or serde_json's `Map` (a `BTreeMap`) sorts the
//! items first, with its own instantiation of the stable sort per item and iterator type;
//! [`collect_map`] fills them by insertion instead, with no sort at all.

use std::cmp::Ordering;

/// The stable order of `n` items under `cmp` (by index): the one sort instantiated.
fn order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| cmp(a, b));
    idx
}

/// Rearranges `v` so that position `k` holds what was at `order[k]` (a permutation of the
/// indices), by following its cycles with swaps.
fn permute<T>(v: &mut [T], order: &[usize]) {
    let mut done = vec![false; v.len()];
    for start in 0..v.len() {
        let mut cur = start;
        while !done[cur] {
            done[cur] = true;
            let next = order[cur];
            if next == start {
                break;
            }
            v.swap(cur, next);
            cur = next;
        }
    }
}

/// `v.sort_by(cmp)`: stable.
pub fn sort_by<T>(v: &mut [T], cmp: impl Fn(&T, &T) -> Ordering) {
    let order = {
        let items: &[T] = v;
        order(items.len(), &|a, b| cmp(&items[a], &items[b]))
    };
    permute(v, &order);
}

/// `v.sort_by_key(key)`: stable.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

/// `v.sort()`: stable.
pub fn sort<T: Ord>(v: &mut [T]) {
    sort_by(v, T::cmp);
}

/// `items.collect()` into a `BTreeMap`, `BTreeSet` or serde_json `Map`, without the sort that
/// `FromIterator` instantiates for each item and iterator type (about 4 KB of the x86-64
/// binary each): the items are inserted in turn. The result is the same map: a repeated key
/// keeps its last value either way (its key is equal, so indistinguishable for strings and
/// numbers).
pub fn collect_map<C: Default + Extend<I::Item>, I: IntoIterator>(items: I) -> C {
    let mut c = C::default();
    c.extend(items);
    c
}

/// Floats ascending in their total order (`f64::total_cmp`), in place.
pub fn sort_f64(v: &mut [f64]) {
    v.sort_by(f64::total_cmp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::XorShift64;

    #[test]
    fn sorts_as_the_standard_library_does_and_stays_stable() {
        let mut rng = XorShift64::new(7);
        for n in [0, 1, 2, 3, 10, 100, 1000] {
            let v: Vec<(u8, usize)> = (0..n).map(|i| (rng.below(5) as u8, i)).collect();
            let mut mine = v.clone();
            sort_by_key(&mut mine, |x| x.0);
            let mut std = v.clone();
            std.sort_by_key(|x| x.0);
            assert_eq!(mine, std, "n {n}");
            let mut rev = v.clone();
            sort_by(&mut rev, |a, b| b.0.cmp(&a.0));
            let mut std = v;
            std.sort_by_key(|b| std::cmp::Reverse(b.0));
            assert_eq!(rev, std, "n {n} descending");
        }
        let mut s = vec!["b".to_string(), "a".into(), "c".into(), "a".into()];
        sort(&mut s);
        assert_eq!(s, ["a", "a", "b", "c"]);
        let mut f = vec![2.0, -0.0, 0.0, f64::NAN, -1.0];
        sort_f64(&mut f);
        assert_eq!(&f[..4], &[-1.0, -0.0, 0.0, 2.0]);
        assert!(f[4].is_nan());
    }

    #[test]
    fn collect_map_builds_the_map_collect_builds() {
        use std::collections::{BTreeMap, BTreeSet};
        let items = [("b", 1), ("a", 2), ("b", 3), ("c", 4), ("a", 5)];
        let mine: BTreeMap<&str, i32> = collect_map(items);
        let std: BTreeMap<&str, i32> = items.into_iter().collect();
        assert_eq!(mine, std);
        assert_eq!(
            mine.into_iter().collect::<Vec<_>>(),
            [("a", 5), ("b", 3), ("c", 4)]
        );
        let set: BTreeSet<&str> = collect_map(items.map(|(k, _)| k));
        assert_eq!(set.into_iter().collect::<Vec<_>>(), ["a", "b", "c"]);
    }
}
