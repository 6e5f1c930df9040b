#!/usr/bin/env python3
"""Word-by-word dictionary lookup on the test split: the scale against which the translation
models' BLEU is read (docs/MEASUREMENTS.md).

    python3 scripts/dictionary_baseline.py [CORPUS_DIR]      (needs sacrebleu)

Each German word (and punctuation mark) of a test sentence is replaced by the English of the
first single-word lexicon entry for it, compared lowercased, with a leading "to " dropped;
words the lexicon lacks are kept. CORPUS_DIR defaults to the newest fetched corpus. The same
rule in Rust is `DictionaryLookup` (src/translation/lookup.rs), which `attnzoo demo` prints.
"""
import argparse
import glob
import os
import re

import sacrebleu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", help="the fetched corpus (default: the newest)")
    corpus = parser.parse_args().corpus or sorted(
        glob.glob(os.path.expanduser("~/.cache/attnzoo/trans-de-en-*")))[-1]
    lexicon = {}
    with open(os.path.join(corpus, "lexicon.tsv"), encoding="utf-8") as lines:
        for line in lines:
            german, english = line.rstrip("\n").split("\t")[:2]
            if " " not in german:
                lexicon.setdefault(german.lower(), re.sub(r"^to ", "", english))
    with open(os.path.join(corpus, "test.tsv"), encoding="utf-8") as lines:
        pairs = [line.rstrip("\n").split("\t")[:2] for line in lines]
    hypotheses = [
        " ".join(lexicon.get(word.lower(), word) for word in re.findall(r"\w+|[^\w\s]", german))
        for german, _ in pairs
    ]
    references = [[english for _, english in pairs]]
    print(f"{len(pairs)} test pairs, {len(lexicon)} lexicon words")
    print(sacrebleu.corpus_bleu(hypotheses, references, force=True))
    print(sacrebleu.corpus_chrf(hypotheses, references))


if __name__ == "__main__":
    main()
