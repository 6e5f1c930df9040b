#!/usr/bin/env python3
"""Training throughput of Seq2SeqWithAttention (PyTorch), from the tutorial
"NLP Tutorial Module 7: Attention Mechanisms and Sequence-to-Sequence Models", on the same data as
`attnzoo train`, for the README's ratio.

    python scripts/bench_translation_torch.py [--pairs 2048] [--hidden 256] [--threads 2]

Reads the first --pairs training pairs of the fetched corpus (~/.cache/attnzoo/trans-de-en-*/),
tokenises them like attnzoo (words, inner apostrophes/hyphens, single punctuation marks; words
seen at least twice), batches them by length in batches of 64, and times one epoch of
forward + backward + Adam steps with full teacher forcing. Prints target tokens per second
(target words plus <eos>, as attnzoo's progress line counts them). The model is that
tutorial's, built with num_layers=1 and the given hidden size; attnzoo's counterpart:

    attnzoo train --out /tmp/bench --train-limit 2048 --epochs 1 --hidden 256   (its tok/s)

That tutorial's model does less work than attnzoo's Bahdanau RNN: its score is one linear layer
over [s; h] (no W1, W2, tanh), its encoder reads the padding and sums the two directions, and its
attention masks nothing. `--model attnzoo` times attnzoo's own architecture instead
(models/src/seq2seq/rnn.rs, `--model rnn --attention bahdanau`), written as a PyTorch user would:
a packed bidirectional nn.LSTM, the memory W_m [->h; <-h] and first state tanh(W_b [->h_last;
<-h_first]), Bahdanau et al.'s v^T tanh(W1 s_{t-1} + W2 h) with padding masked, an nn.LSTMCell
fed [E y_{t-1}; c_t], dropout 0.2 on embeddings and before the output layer.

For the Transformer recipe end to end (attnzoo's exact subword ids, batches and schedule, then
test BLEU after a time budget), see scripts/train_translation_torch.py.
"""
import argparse
import glob
import os
import re
import time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--pairs", type=int, default=2048)
parser.add_argument("--hidden", type=int, default=256)
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--model", choices=["tutorial", "attnzoo"], default="tutorial")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(42)


# ---- the tutorial's model, verbatim but for comments ----
class Encoder(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=2, dropout=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, num_layers, dropout=dropout if num_layers > 1 else 0.0,
                            batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        embedded = self.dropout(self.embedding(x))
        outputs, (hidden, cell) = self.lstm(embedded)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        return outputs, (hidden, cell)


class AttentionDecoder(nn.Module):
    def __init__(self, output_size, hidden_size, num_layers=2, dropout=0.1):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.output_size = output_size
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = nn.Linear(hidden_size * 2, 1)
        self.lstm = nn.LSTM(hidden_size * 2, hidden_size, num_layers, dropout=dropout if num_layers > 1 else 0.0,
                            batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, encoder_outputs, hidden, cell):
        embedded = self.dropout(self.embedding(x))
        attention_weights = self._calculate_attention(hidden[-1], encoder_outputs)
        context = torch.bmm(attention_weights.unsqueeze(1), encoder_outputs).squeeze(1)
        lstm_input = torch.cat([embedded.squeeze(1), context], dim=1).unsqueeze(1)
        lstm_out, (hidden, cell) = self.lstm(lstm_input, (hidden, cell))
        output = self.out(lstm_out.squeeze(1))
        return output, hidden, cell, attention_weights

    def _calculate_attention(self, hidden, encoder_outputs):
        batch_size, seq_len, hidden_size = encoder_outputs.size()
        hidden_repeated = hidden.unsqueeze(1).repeat(1, seq_len, 1)
        concat = torch.cat([hidden_repeated, encoder_outputs], dim=2)
        attention_scores = self.attention(concat).squeeze(2)
        return F.softmax(attention_scores, dim=1)


class Seq2SeqWithAttention(nn.Module):
    def __init__(self, input_size, output_size, hidden_size, num_layers=2, dropout=0.1):
        super().__init__()
        self.encoder = Encoder(input_size, hidden_size, num_layers, dropout)
        self.decoder = AttentionDecoder(output_size, hidden_size, num_layers, dropout)

    def forward(self, source, target):
        encoder_outputs, (hidden, cell) = self.encoder(source)
        hidden = hidden[:self.decoder.num_layers]
        cell = cell[:self.decoder.num_layers]
        outputs = []
        decoder_input = target[:, :1]
        for t in range(target.size(1)):
            output, hidden, cell, _ = self.decoder(decoder_input, encoder_outputs, hidden, cell)
            outputs.append(output)
            if t + 1 < target.size(1):
                decoder_input = target[:, t + 1:t + 2]  # teacher forcing
        return torch.stack(outputs, 1)


# ---- the same data, tokenised like attnzoo ----
class AttnzooBahdanau(nn.Module):
    """attnzoo's `--model rnn --attention bahdanau` (see the module docstring)."""

    def __init__(self, input_size, output_size, hidden_size, dropout=0.2):
        super().__init__()
        h = hidden_size
        self.source_embedding = nn.Embedding(input_size, h)
        self.target_embedding = nn.Embedding(output_size, h)
        self.encoder = nn.LSTM(h, h, batch_first=True, bidirectional=True)
        self.memory = nn.Linear(2 * h, h)
        self.bridge = nn.Linear(2 * h, h)
        self.w1, self.w2, self.v = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, 1)
        self.decoder = nn.LSTMCell(2 * h, h)
        self.out = nn.Linear(h, output_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, source, target):
        padding = source == PAD
        lengths = (~padding).sum(1).cpu()
        embedded = self.dropout(self.source_embedding(source))
        packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        states, (last, _) = self.encoder(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=source.size(1))
        state = torch.tanh(self.bridge(torch.cat([last[0], last[1]], 1)))
        cell = torch.zeros_like(state)
        memory = self.memory(states)
        keys = self.w2(memory)
        outputs = []
        for t in range(target.size(1)):
            embedded = self.dropout(self.target_embedding(target[:, t]))
            scores = self.v(torch.tanh(self.w1(state).unsqueeze(1) + keys)).squeeze(2)
            weights = F.softmax(scores.masked_fill(padding, float("-inf")), dim=1)
            context = torch.bmm(weights.unsqueeze(1), memory).squeeze(1)
            state, cell = self.decoder(torch.cat([embedded, context], 1), (state, cell))
            outputs.append(self.out(self.dropout(state)))
        return torch.stack(outputs, 1)


def tokenize(s):
    return re.findall(r"\w(?:[\w]|['’-](?=\w))*|[^\w\s]", s)


corpus = sorted(glob.glob(os.path.expanduser("~/.cache/attnzoo/trans-de-en-*/train.tsv")))[-1]
pairs = [line.rstrip("\n").split("\t") for line in open(corpus, encoding="utf-8")][: args.pairs]
PAD, BOS, EOS, UNK = 0, 1, 2, 3


def vocab(sentences):
    counts = Counter(t for s in sentences for t in tokenize(s))
    words = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: (-counts[w], w))
    return {w: i + 4 for i, w in enumerate(words)}


src_vocab, tgt_vocab = vocab(p[0] for p in pairs), vocab(p[1] for p in pairs)
examples = [([src_vocab.get(t, UNK) for t in tokenize(de)][:50], [tgt_vocab.get(t, UNK) for t in tokenize(en)][:49])
            for de, en in pairs]
examples.sort(key=lambda e: (len(e[0]), len(e[1])))
batches = [examples[i:i + 64] for i in range(0, len(examples), 64)]


def tensors(batch):
    s_len = max(len(s) for s, _ in batch)
    t_len = max(len(t) for _, t in batch) + 1
    src = torch.tensor([s + [PAD] * (s_len - len(s)) for s, _ in batch])
    tin = torch.tensor([[BOS] + t + [PAD] * (t_len - 1 - len(t)) for _, t in batch])
    tout = torch.tensor([t + [EOS] + [PAD] * (t_len - 1 - len(t)) for _, t in batch])
    return src, tin, tout, sum(len(t) + 1 for _, t in batch)


sizes = (len(src_vocab) + 4, len(tgt_vocab) + 4, args.hidden)
model = Seq2SeqWithAttention(*sizes, num_layers=1) if args.model == "tutorial" else AttnzooBahdanau(*sizes)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
model.train()
tokens, start = 0, time.perf_counter()
for batch in batches:
    src, tin, tout, n = tensors(batch)
    logits = model(src, tin)
    loss = loss_fn(logits.reshape(-1, logits.size(-1)), tout.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    tokens += n
elapsed = time.perf_counter() - start
print(f"PyTorch {torch.__version__}, {args.model} model, {args.threads} threads, {len(pairs)} pairs, hidden {args.hidden}, "
      f"vocab {len(src_vocab) + 4}/{len(tgt_vocab) + 4}: {tokens / elapsed:.0f} target tok/s ({elapsed:.1f} s)")
