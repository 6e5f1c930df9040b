//! The `k` largest values of a row as `torch.topk` picks them on the CPU, ties included.
//!
//! A router's scores tie (equal router rows, saturated probabilities), and which expert wins a
//! tie changes the output. ATen's CPU kernel (`topk_impl_loop`) orders `(value, index)` pairs with
//! "NaN first, then larger first" and runs libstdc++'s `std::partial_sort` when `64 k ≤ n`, else
//! `std::nth_element` for the `k`-th and `std::sort` of the `k − 1` before it. Neither is
//! stable, so the tie-break is the algorithms' own: they are reproduced here step for step
//! (introselect with median-of-three pivots and a final insertion sort; a binary heap). Checked
//! against torch 2.9 on 10,400 rows of heavily tied values, `n` from 5 to 512, `k` from 1 to 8
//! (`scripts/gen_parity_llm.py`'s MoE fixtures hold such ties).

type Pair = (f32, usize);

/// "Before" in ATen's largest-first order: NaN first, then the larger value.
fn before(x: &Pair, y: &Pair) -> bool {
    (x.0.is_nan() && !y.0.is_nan()) || x.0 > y.0
}

/// The indices of the `k` (≥ 1, ≤ `row.len()`) largest values, largest first, as
/// `torch.topk(row, k).indices` on the CPU.
pub(crate) fn torch_top_k(row: &[f32], k: usize) -> Vec<usize> {
    debug_assert!(k >= 1 && k <= row.len());
    let mut q: Vec<Pair> = row.iter().copied().zip(0..).collect();
    if k * 64 <= q.len() {
        partial_sort(&mut q, k);
    } else {
        nth_element(&mut q, k - 1);
        insertion_sort(&mut q[..k - 1]);
    }
    q[..k].iter().map(|&(_, index)| index).collect()
}

/// libstdc++'s `__introselect` (depth limit `2 ⌊log₂ n⌋`, then `__heap_select`).
fn nth_element(q: &mut [Pair], nth: usize) {
    let (mut first, mut last) = (0, q.len());
    let mut depth = 2 * (usize::BITS - 1 - q.len().leading_zeros()) as usize;
    while last - first > 3 {
        if depth == 0 {
            heap_select(&mut q[first..last], nth + 1 - first);
            q.swap(first, nth);
            return;
        }
        depth -= 1;
        let mid = first + (last - first) / 2;
        move_median_to_first(q, first, first + 1, mid, last - 1);
        let cut = unguarded_partition(q, first + 1, last, first);
        if cut <= nth {
            first = cut;
        } else {
            last = cut;
        }
    }
    insertion_sort(&mut q[first..last]);
}

fn move_median_to_first(q: &mut [Pair], result: usize, a: usize, b: usize, c: usize) {
    let median = if before(&q[a], &q[b]) {
        if before(&q[b], &q[c]) {
            b
        } else if before(&q[a], &q[c]) {
            c
        } else {
            a
        }
    } else if before(&q[a], &q[c]) {
        a
    } else if before(&q[b], &q[c]) {
        c
    } else {
        b
    };
    q.swap(result, median);
}

fn unguarded_partition(q: &mut [Pair], mut first: usize, mut last: usize, pivot: usize) -> usize {
    loop {
        while before(&q[first], &q[pivot]) {
            first += 1;
        }
        last -= 1;
        while before(&q[pivot], &q[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        q.swap(first, last);
        first += 1;
    }
}

/// libstdc++'s `__insertion_sort`.
fn insertion_sort(q: &mut [Pair]) {
    for i in 1..q.len() {
        let value = q[i];
        if before(&value, &q[0]) {
            q.copy_within(0..i, 1);
            q[0] = value;
        } else {
            let mut j = i;
            while before(&value, &q[j - 1]) {
                q[j] = q[j - 1];
                j -= 1;
            }
            q[j] = value;
        }
    }
}

/// libstdc++'s `partial_sort`: `__heap_select`, then `__sort_heap`.
fn partial_sort(q: &mut [Pair], k: usize) {
    heap_select(q, k);
    for last in (1..k).rev() {
        let value = q[last];
        q[last] = q[0];
        adjust_heap(&mut q[..last], 0, value);
    }
}

/// A heap of the first `k` holding the `k` first in order of all of `q`.
fn heap_select(q: &mut [Pair], k: usize) {
    if k >= 2 {
        for parent in (0..=(k - 2) / 2).rev() {
            let value = q[parent];
            adjust_heap(&mut q[..k], parent, value);
        }
    }
    for i in k..q.len() {
        if before(&q[i], &q[0]) {
            let value = q[i];
            q[i] = q[0];
            adjust_heap(&mut q[..k], 0, value);
        }
    }
}

/// libstdc++'s `__adjust_heap` (the hole sifted to a leaf, then `value` pushed up) on `heap`.
fn adjust_heap(heap: &mut [Pair], mut hole: usize, value: Pair) {
    let (len, top) = (heap.len(), hole);
    let mut child = hole;
    while child < len.saturating_sub(1) / 2 {
        child = 2 * (child + 1);
        if before(&heap[child], &heap[child - 1]) {
            child -= 1;
        }
        heap[hole] = heap[child];
        hole = child;
    }
    if len % 2 == 0 && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        heap[hole] = heap[child - 1];
        hole = child - 1;
    }
    while hole > top {
        let parent = (hole - 1) / 2;
        if !before(&heap[parent], &value) {
            break;
        }
        heap[hole] = heap[parent];
        hole = parent;
    }
    heap[hole] = value;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows whose torch 2.9 answers were printed by `torch.topk(torch.tensor(row), k).indices`:
    /// ties broken by the algorithms, not by the lower index.
    #[test]
    fn ties_go_where_torch_puts_them() {
        let p = [0.6362, 0.1526, 0.0043, 0.1526, 0.0543];
        assert_eq!(torch_top_k(&p, 2), vec![0, 3]);
        let p = [0.1661, 0.2292, 0.3264, 0.2292, 0.0492];
        assert_eq!(torch_top_k(&p, 2), vec![2, 1]);
        assert_eq!(torch_top_k(&[1.0; 7], 3).len(), 3);
        let mut wide = vec![0.5f32; 200];
        wide[7] = 0.9;
        let chosen = torch_top_k(&wide, 3);
        assert_eq!(chosen[0], 7);
        assert!(chosen.iter().all(|&i| i < 200));
    }

    /// Without ties, the k largest, largest first, on both paths (n ≥ 64 k takes the heap).
    #[test]
    fn distinct_values_come_out_sorted() {
        for n in [5usize, 9, 64, 130, 300] {
            let row: Vec<f32> = (0..n).map(|i| ((i * 37) % n) as f32).collect();
            for k in [1, 2, 3.min(n)] {
                let mut want: Vec<usize> = (0..n).collect();
                want.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
                assert_eq!(torch_top_k(&row, k), want[..k], "n {n} k {k}");
            }
        }
    }
}
