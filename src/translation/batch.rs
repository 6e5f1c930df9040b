//! Examples as id sequences, batches bucketed by length, and their tensors.

use burn::tensor::{Bool, Device, Int, Tensor};

use super::checkpoint::Vocabularies;
use super::corpus::Pair;
use super::vocab::{BOS_ID, EOS_ID, PAD_ID};
use crate::padding::padded;

/// A source and target as ids, without specials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Example {
    /// Source ids, at most `max_len`.
    pub source: Vec<usize>,
    /// Target ids, at most `max_len - 1` (room for `<bos>`/`<eos>`).
    pub target: Vec<usize>,
}

impl Example {
    /// Target tokens the loss counts (`y_1 … y_n <eos>`), as many as the decoder's inputs
    /// (`<bos> y_1 … y_n`).
    pub fn target_tokens(&self) -> usize {
        self.target.len() + 1
    }
}

/// The tensors of one batch.
#[derive(Clone, Debug)]
pub struct Batch {
    /// `[B, S]`.
    pub source: Tensor<2, Int>,
    /// `[B, S]`, `true` = padding.
    pub source_padding: Tensor<2, Bool>,
    /// `[B, T]`: `<bos> y_1 … y_n <pad>…`.
    pub target_in: Tensor<2, Int>,
    /// `[B, T]`: `y_1 … y_n <eos> <pad>…`.
    pub target_out: Tensor<2, Int>,
    /// Real target tokens (with `<eos>`).
    pub target_tokens: usize,
}

/// A small deterministic generator (SplitMix64), so a seed fixes shuffling and teacher forcing.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Fisher–Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }
}

/// Ids of the pairs ([`Vocabularies::encode_pair`]), truncated to `max_len` tokens.
pub fn examples(pairs: &[Pair], vocab: &Vocabularies, max_len: usize) -> Vec<Example> {
    pairs
        .iter()
        .map(|pair| {
            let (mut source, mut target) = vocab.encode_pair(pair);
            source.truncate(max_len);
            target.truncate(max_len.saturating_sub(1));
            Example { source, target }
        })
        .collect()
}

/// Batches of at most `batch_size` examples of similar source length: shuffled, sorted by
/// length (stable, so equal lengths stay shuffled), cut into batches, batches shuffled.
pub fn bucketed(examples: &[Example], batch_size: usize, rng: &mut SplitMix) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..examples.len()).collect();
    rng.shuffle(&mut order);
    order.sort_by_key(|&i| (examples[i].source.len(), examples[i].target.len()));
    let mut batches: Vec<Vec<usize>> = order
        .chunks(batch_size.max(1))
        .map(<[usize]>::to_vec)
        .collect();
    rng.shuffle(&mut batches);
    batches
}

/// The tensors of the examples `indices`.
pub fn batch(examples: &[Example], indices: &[usize], device: &Device) -> Batch {
    let pick = |f: fn(&Example) -> Vec<usize>| {
        indices.iter().map(|&i| f(&examples[i])).collect::<Vec<_>>()
    };
    let (source, source_padding) = padded(&pick(|e| e.source.clone()), PAD_ID, device);
    let target_in = pick(|e| {
        [BOS_ID]
            .into_iter()
            .chain(e.target.iter().copied())
            .collect()
    });
    let target_out = pick(|e| e.target.iter().copied().chain([EOS_ID]).collect());
    let target_tokens = target_out.iter().map(Vec::len).sum();
    Batch {
        source,
        source_padding,
        target_in: padded(&target_in, PAD_ID, device).0,
        target_out: padded(&target_out, PAD_ID, device).0,
        target_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_every_example_once_and_similar_lengths_together() {
        let examples: Vec<Example> = (0..100)
            .map(|i| Example {
                source: vec![4; 1 + i % 17],
                target: vec![5; 2],
            })
            .collect();
        let batches = bucketed(&examples, 8, &mut SplitMix(7));
        let mut seen: Vec<usize> = batches.concat();
        seen.sort();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        for batch in &batches {
            let lengths: Vec<usize> = batch.iter().map(|&i| examples[i].source.len()).collect();
            assert!(
                lengths.iter().max().unwrap() - lengths.iter().min().unwrap() <= 2,
                "{lengths:?}"
            );
        }
        assert_eq!(
            bucketed(&examples, 8, &mut SplitMix(7)),
            batches,
            "the seed fixes the order"
        );
    }
}
