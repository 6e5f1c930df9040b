//! The lexicon `p_lex(e | f)` of a lexically biased translator ([`LexicalBias`], Arthur et al.
//! 2016), estimated as they do by IBM Model 1 (Brown et al. 1993, "The Mathematics of
//! Statistical Machine Translation") over token ids: the training sentences, each target ending
//! in `<eos>`, and the dictionary's word and phrase pairs, which end in nothing (a word does not
//! end its translation: with `<eos>` after every entry, IBM Model 1 gave each dictionary word
//! about half its mass on `<eos>`, and the bias cut translations short), each source with a NULL
//! token that takes what no word explains. Expectation–maximisation from uniform:
//!
//! `c(e, f) += t(e | f) / (t(e | NULL) + Σ_{f' ∈ source} t(e | f'))` for every target `e`,
//! source `f`; then `t(e | f) = c(e, f) / Σ_e' c(e', f)`.
//!
//! [`LexicalBias`]: attnzoo_models::seq2seq::LexicalBias

/// EM passes; Model 1's likelihood has one maximum and changes little after five.
pub const ITERATIONS: usize = 5;

/// `t(e | f)` for every source token `f < source_vocab` and target token `e < target_vocab`,
/// row-major `[source_vocab, target_vocab]`, from `(source, target)` id sequences (a sentence's
/// target with its `<eos>`, a dictionary entry's without): each row a distribution, or zeros for
/// a token that no pair holds. Ids at or past a vocabulary's size are ignored.
pub fn translation_table<'a>(
    pairs: impl IntoIterator<Item = (&'a [usize], &'a [usize])>,
    source_vocab: usize,
    target_vocab: usize,
    iterations: usize,
) -> Vec<f32> {
    let width = target_vocab;
    let uniform = 1.0 / width as f32;
    let mut table = vec![uniform; source_vocab * width];
    let mut null = vec![uniform; width];
    let mut counts = vec![0.0f32; source_vocab * width];
    let mut null_counts = vec![0.0f32; width];
    let sentences: Vec<(Vec<usize>, Vec<usize>)> = pairs
        .into_iter()
        .map(|(source, target)| {
            (
                source
                    .iter()
                    .copied()
                    .filter(|&f| f < source_vocab)
                    .collect(),
                target
                    .iter()
                    .copied()
                    .filter(|&e| e < target_vocab)
                    .collect(),
            )
        })
        .collect();
    for _ in 0..iterations {
        counts.fill(0.0);
        null_counts.fill(0.0);
        for (source, target) in &sentences {
            for &e in target {
                let total = null[e] + source.iter().map(|&f| table[f * width + e]).sum::<f32>();
                null_counts[e] += null[e] / total;
                for &f in source {
                    counts[f * width + e] += table[f * width + e] / total;
                }
            }
        }
        for (row, counted) in table.chunks_mut(width).zip(counts.chunks(width)) {
            normalise_into(row, counted);
        }
        normalise_into(&mut null, &null_counts);
    }
    table
}

/// `row = counts / Σ counts`, or zeros when nothing was counted.
fn normalise_into(row: &mut [f32], counts: &[f32]) {
    let sum: f32 = counts.iter().sum();
    for (p, &c) in row.iter_mut().zip(counts) {
        *p = if sum > 0.0 { c / sum } else { 0.0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_that_occur_together_align_and_rows_are_distributions() {
        // "das Haus" / "the house", "das Buch" / "the book", "ein Buch" / "a book":
        // 4 das, 5 Haus, 6 Buch, 7 ein → 4 the, 5 house, 6 book, 7 a.
        let pairs: [(&[usize], &[usize]); 3] =
            [(&[4, 5], &[4, 5]), (&[4, 6], &[4, 6]), (&[7, 6], &[7, 6])];
        let table = translation_table(pairs, 8, 8, 20);
        let t = |f: usize, e: usize| table[f * 8 + e];
        for (f, e) in [(4, 4), (5, 5), (6, 6), (7, 7)] {
            let best = (0..8).max_by(|&a, &b| t(f, a).total_cmp(&t(f, b))).unwrap();
            assert_eq!(best, e, "source {f}: {:?}", &table[f * 8..f * 8 + 8]);
        }
        assert!(t(6, 6) > 0.5, "Buch → book {}", t(6, 6));
        for f in 0..8 {
            let sum: f32 = table[f * 8..f * 8 + 8].iter().sum();
            let seen = (4..8).contains(&f);
            assert!(
                (sum - 1.0).abs() < 1e-5 && seen || sum == 0.0 && !seen,
                "row {f} sums to {sum}"
            );
        }
    }

    #[test]
    fn a_dictionary_entry_without_an_end_keeps_its_word_off_the_end() {
        use crate::translation::vocab::EOS_ID;
        // The sentence "4 6" / "5 6 <eos>" (6 a full stop), and the entry "4" / "5" given
        // without and with an <eos>.
        let table = |entry: &[usize]| {
            translation_table(
                [(&[4, 6][..], &[5, 6, EOS_ID][..]), (&[4], entry)],
                7,
                7,
                20,
            )
        };
        let (without, with) = (table(&[5]), table(&[5, EOS_ID]));
        let t = |table: &[f32], f: usize, e: usize| table[f * 7 + e];
        // Without: 4 → 5 (0.75) and the full stop ends the sentence (0.5 on <eos>).
        assert!(
            t(&without, 4, 5) > 0.7 && t(&without, 4, EOS_ID) < 0.2,
            "{without:?}"
        );
        assert!(t(&without, 6, EOS_ID) > 0.4, "{without:?}");
        // With: the word takes half its mass for <eos>, and the end from the full stop.
        assert!(
            t(&with, 4, EOS_ID) > 0.4 && t(&with, 6, EOS_ID) < 0.1,
            "{with:?}"
        );
    }
}
