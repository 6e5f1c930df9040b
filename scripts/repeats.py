#!/usr/bin/env python3
"""How many lines of each file say a word bigram twice ("the station of the station").

    python3 scripts/repeats.py references.txt translations.txt ...
"""
import re
import sys


def repeats(line):
    words = re.findall(r"\w+|[^\w\s]", line.lower())
    bigrams = list(zip(words, words[1:]))
    return len(bigrams) != len(set(bigrams))


for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as lines:
        flags = [repeats(line) for line in lines]
    print(f"{path}: {sum(flags)} of {len(flags)} lines repeat a word bigram")
