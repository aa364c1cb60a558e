"""A plain PyTorch training script in the shape of pytorch/examples' word_language_model
(data.py, model.py, main.py and generate.py in one file): a word-level Dictionary / Corpus,
`batchify` and `get_batch` over a (tokens, batch) layout, an `RNNModel(rnn_type, ...)` built
with `getattr(nn, rnn_type)` ('LSTM', 'GRU') or nn.RNN ('RNN_TANH', 'RNN_RELU') with
`repackage_hidden` (`h.detach()`) between batches, a `TransformerModel` of
nn.TransformerEncoder layers with a `PositionalEncoding` buffer (`register_buffer`) and a
square subsequent mask, nn.NLLLoss over log_softmax outputs,
`torch.nn.utils.clip_grad_norm_`, plain SGD written as `p.data.add_(p.grad, alpha=-lr)`, the
learning rate divided by 4 when validation stops improving, and generation by
`torch.multinomial` over `output.div(temperature).exp()`. The corpus is a small synthetic
text instead of Wikitext-2.

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import TransformerEncoder, TransformerEncoderLayer

SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the bird"]
VERBS = ["sees", "likes", "follows", "watches"]
OBJECTS = ["the river", "a red ball", "the small house", "the garden"]


def make_lines(n, offset=0):
    """Sentences of a tiny grammar (subject verb object), deterministic."""
    lines = []
    for i in range(offset, offset + n):
        lines.append(f"{SUBJECTS[i % 5]} {VERBS[(i // 5) % 4]} {OBJECTS[(i * 7) % 4]} .")
    return lines


###############################################################################
# data.py
###############################################################################

class Dictionary:
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self):
        self.dictionary = Dictionary()
        self.train = self.tokenize(make_lines(120))
        self.valid = self.tokenize(make_lines(40, offset=120))
        self.test = self.tokenize(make_lines(40, offset=160))

    def tokenize(self, lines):
        """Tokenizes a text file."""
        # Add words to the dictionary
        for line in lines:
            words = line.split() + ['<eos>']
            for word in words:
                self.dictionary.add_word(word)

        # Tokenize file content
        idss = []
        for line in lines:
            words = line.split() + ['<eos>']
            ids = []
            for word in words:
                ids.append(self.dictionary.word2idx[word])
            idss.append(torch.tensor(ids).type(torch.int64))
        ids = torch.cat(idss)

        return ids


###############################################################################
# model.py
###############################################################################

class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            try:
                nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            except KeyError as e:
                raise ValueError("""An invalid option for `--model` was supplied,
                                 options are ['LSTM', 'GRU', 'RNN_TANH' or 'RNN_RELU']""") from e
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

        # Optionally tie weights as in:
        # "Using the Output Embedding to Improve Language Models" (Press & Wolf 2016)
        # https://arxiv.org/abs/1608.05859
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight

        self.init_weights()

        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


# Temporarily leave PositionalEncoding module here. Will be moved somewhere else.
class PositionalEncoding(nn.Module):
    r"""Inject some information about the relative or absolute position of the tokens in the
    sequence. The positional encodings have the same dimension as the embeddings, so that the
    two can be summed. Here, we use sine and cosine functions of different frequencies.
    """

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        r"""Inputs of forward function
        Args:
            x: the sequence fed to the positional encoder model (required).
        Shape:
            x: [sequence length, batch size, embed dim]
            output: [sequence length, batch size, embed dim]
        """

        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Module):
    """Container module with an encoder, a recurrent or transformer module, and a decoder."""

    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        encoder_layers = TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, 0.0)
        return mask

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None

        src = self.encoder(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.transformer_encoder(src, self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


###############################################################################
# main.py
###############################################################################

# Starting from sequential data, batchify arranges the dataset into columns.
# For instance, with the alphabet as the sequence and batch size 4, we'd get
# ┌ a g m s ┐
# │ b h n t │
# │ c i o u │
# │ d j p v │
# │ e k q w │
# └ f l r x ┘.
# These columns are treated as independent by the model, which means that the
# dependence of e. g. 'g' on 'f' can not be learned, but allows more efficient
# batch processing.
def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""

    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


# get_batch subdivides the source data into chunks of length bptt.
# If source is equal to the example output of the batchify function, with
# a bptt-limit of 2, we'd get the following two Variables for i = 0:
# ┌ a g m s ┐ ┌ b h n t ┐
# └ b h n t ┘ └ c i o u ┘
# Note that despite the name of the function, the subdivison of data is not
# done along the batch dimension (i.e. dimension 1), since that was handled
# by the batchify function. The chunks are along dimension 0, corresponding
# to the seq_len dimension in the LSTM.
def get_batch(source, i, bptt=8):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def build_model(model_type, ntokens, emsize=32, nhid=32, nlayers=2, nhead=2, dropout=0.2,
                tied=False):
    if model_type == 'Transformer':
        return TransformerModel(ntokens, emsize, nhead, nhid, nlayers, dropout)
    return RNNModel(model_type, ntokens, emsize, nhid, nlayers, dropout, tied)


def evaluate(model, data_source, ntokens, criterion, bptt=8, eval_batch_size=10):
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.
    if not isinstance(model, TransformerModel):
        hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i, bptt)
            if isinstance(model, TransformerModel):
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                output, hidden = model(data, hidden)
                hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train(model_type='Transformer', epochs=4, seed=1111, lr=5.0, clip=0.25, batch_size=5,
          bptt=8, tied=False):
    """Training loss of every batch, validation loss of every epoch, and the test loss of the
    best model."""
    # Set the random seed manually for reproducibility.
    torch.manual_seed(seed)
    corpus = Corpus()
    eval_batch_size = 10
    train_data = batchify(corpus.train, batch_size)
    val_data = batchify(corpus.valid, eval_batch_size)
    test_data = batchify(corpus.test, eval_batch_size)

    ntokens = len(corpus.dictionary)
    model = build_model(model_type, ntokens, tied=tied)
    criterion = nn.NLLLoss()

    train_losses, val_losses = [], []
    best_val_loss = None
    best_state = None
    for _ in range(epochs):
        # Turn on training mode which enables dropout.
        model.train()
        if model_type != 'Transformer':
            hidden = model.init_hidden(batch_size)
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            # Starting each batch, we detach the hidden state from how it was previously
            # produced. If we didn't, the model would try backpropagating all the way to
            # start of the dataset.
            model.zero_grad()
            if model_type == 'Transformer':
                output = model(data)
                output = output.view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()

            # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)

            train_losses.append(loss.item())

        val_loss = evaluate(model, val_data, ntokens, criterion, bptt, eval_batch_size)
        val_losses.append(val_loss)
        # Save the model if the validation loss is the best we've seen so far.
        if not best_val_loss or val_loss < best_val_loss:
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation
            # dataset.
            lr /= 4.0

    # Load the best saved model.
    model.load_state_dict(best_state)
    test_loss = evaluate(model, test_data, ntokens, criterion, bptt, eval_batch_size)
    return train_losses, val_losses, test_loss, model, corpus


###############################################################################
# generate.py
###############################################################################

def generate(model, corpus, words=12, temperature=1.0, seed=1111):
    """Word ids sampled from the model, one at a time, starting from a random word."""
    torch.manual_seed(seed)
    model.eval()
    is_transformer_model = isinstance(model, TransformerModel)
    ntokens = len(corpus.dictionary)
    if not is_transformer_model:
        hidden = model.init_hidden(1)
    input = torch.randint(ntokens, (1, 1), dtype=torch.long)

    out = []
    with torch.no_grad():  # no tracking history
        for _ in range(words):
            if is_transformer_model:
                output = model(input, False)
                word_weights = output[-1].squeeze().div(temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                word_tensor = torch.Tensor([[word_idx]]).long()
                input = torch.cat([input, word_tensor], 0)
            else:
                output, hidden = model(input, hidden)
                word_weights = output.squeeze().div(temperature).exp().cpu()
                word_idx = torch.multinomial(word_weights, 1)[0]
                input.fill_(word_idx)
            out.append(int(word_idx))
    return out


def make_data():
    corpus = Corpus()
    return batchify(corpus.train, 10), len(corpus.dictionary)


def loss_fn(model, batch):
    """One batch's NLL loss (the parity bench's entry point): `batch` is (data, targets) for
    the Transformer or (data, targets, hidden) for a recurrent model."""
    criterion = nn.NLLLoss()
    if isinstance(model, TransformerModel):
        data, targets = batch
        output = model(data).view(-1, model.decoder.out_features)
    else:
        data, targets, hidden = batch
        output, _ = model(data, repackage_hidden(hidden))
    return criterion(output, targets)


if __name__ == "__main__":
    for model_type in ['Transformer', 'LSTM', 'GRU', 'RNN_TANH']:
        train_losses, val_losses, test_loss, model, corpus = train(model_type)
        ids = generate(model, corpus)
        words = ' '.join(corpus.dictionary.idx2word[i] for i in ids)
        print(f"{model_type}: train {train_losses[0]:.3f} -> {train_losses[-1]:.3f}  val "
              + " ".join(f"{v:.3f}" for v in val_losses)
              + f"  test {test_loss:.3f} (ppl {math.exp(test_loss):.2f})  | {words}")
