#!/usr/bin/env python3
"""Test BLEU and chrF2 by how well the corpus covers each German sentence's words: the test
split's 984 pairs fall into those whose every word is in some training sentence, those with a
word that only the lexicon has, and those with a word in neither (docs/MEASUREMENTS.md, "What
the test split allows").

    python3 scripts/coverage_bleu.py HYPOTHESES... [--corpus DIR]     (needs sacrebleu)

Each HYPOTHESES file holds one translation per test sentence, in order (`attnzoo translate
--checkpoint RUN --beam 5 < test.de`); the word-by-word dictionary lookup
(scripts/dictionary_baseline.py) is scored beside them. Words are `\\w+`, lowercased.
"""
import argparse
import glob
import os
import re

import sacrebleu

GROUPS = ["every word in a training sentence", "a word only in the lexicon", "a word in neither"]


def words(text):
    return re.findall(r"\w+", text.lower())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hypotheses", nargs="*", help="files of test translations, one per line")
    parser.add_argument("--corpus", help="the fetched corpus (default: the newest)")
    args = parser.parse_args()
    corpus = args.corpus or sorted(glob.glob(os.path.expanduser("~/.cache/attnzoo/trans-de-en-*")))[-1]
    read = lambda name: [line.rstrip("\n").split("\t")[:2] for line in open(os.path.join(corpus, name), encoding="utf-8")]
    in_training = {word for german, _ in read("train.tsv") for word in words(german)}
    entries = read("lexicon.tsv")
    in_lexicon = {word for german, _ in entries for word in words(german)}
    lookup = {}
    for german, english in entries:
        if " " not in german:
            lookup.setdefault(german.lower(), re.sub(r"^to ", "", english))
    test = read("test.tsv")
    group_of = [
        GROUPS[0] if all(w in in_training for w in words(german))
        else GROUPS[1] if all(w in in_training or w in in_lexicon for w in words(german))
        else GROUPS[2]
        for german, _ in test
    ]
    systems = [("dictionary lookup", [" ".join(lookup.get(w.lower(), w) for w in re.findall(r"\w+|[^\w\s]", german)) for german, _ in test])]
    for path in args.hypotheses:
        lines = open(path, encoding="utf-8").read().splitlines()
        if len(lines) != len(test):
            parser.error(f"{path} has {len(lines)} lines, the test split {len(test)}")
        systems.append((path, lines))
    print("| system | all | " + " | ".join(f"{g} ({group_of.count(g)})" for g in GROUPS) + " |")
    for name, hypotheses in systems:
        cells = []
        for group in [None] + GROUPS:
            chosen = [i for i, g in enumerate(group_of) if group in (None, g)]
            hyp, ref = [hypotheses[i] for i in chosen], [[test[i][1] for i in chosen]]
            cells.append(f"{sacrebleu.corpus_bleu(hyp, ref, force=True).score:.2f} / {sacrebleu.corpus_chrf(hyp, ref).score:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
