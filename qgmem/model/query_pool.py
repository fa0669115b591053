"""Query-aware pooling: K graph tokens, each an attention over the graph's edges with the question as the query.

One mean over all nodes averages the asked-about fact with everything else in the working memory
(the single pooled token collapses to a constant across questions: bench/RESULTS.md); LGPT and
"Is One Token All It Takes?" pool with the query instead. Here each of the K tokens attends over the
edges (one per working-memory unit: subject state, object state, relation features), with scores from

- a bilinear term between the question (the mean of the LLM's embeddings of its tokens) and the edge,
- how well the edge's words are named in the question, per part (subject, relation, object): for each
  token of the part, its best cosine with a question token, averaged over the part's tokens, in the
  LLM's input-embedding space with the vocabulary's mean removed (so a name never seen in training
  still matches itself, and unrelated words score ~0),
- the edge's rank and time features (which of two states of a trace is the current one).

The bilinear term enters through a learned gate that starts at 0 (under Adam a wide layer's output moves
by ~lr x its width per step, which would scramble the attention in the first steps), so at
initialisation the attention follows the question-match and time scores.

A token is the projector of its attended edge states; with ``residual=True`` it is, first of all, the
attended edge's own words as LLM input embeddings (each token a learned mix of subject, relation and
object, initialised to read as the triple: K=1 the object, K=2 subject and object, K>=3 subject,
relation, object, repeating), plus the projector's output through a gate that starts at 0: at
initialisation a token that attends to one edge *is* that edge's words to the LLM, and training learns
how much correction (answer format, context) to add.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.utils import softmax as segment_softmax

PART_INIT = 4.0  # logit of a token's initial part (softmax weight ~0.96 over three parts)
MATCH_INIT = 8.0  # initial weight of the subject's and the relation's question-match score
# (the object's starts at 0: it is what a question asks for, so its words are rarely in the question)
# The rank/time weights are few and must move by several logits within tens of optimizer steps (which of two
# states is current); they enter the score scaled by this, which under Adam is their learning rate times it.
EXTRA_SCALE = 20.0


@dataclass
class EdgeWords:
    """The words of a batch's edges and questions in the LLM's input-embedding space."""

    subject: Tensor  # [E, H] mean embedding of each edge's subject name
    relation: Tensor  # [E, H]
    object: Tensor  # [E, H]
    match: Tensor  # [E, 3] question-match score of subject, relation, object
    question: Tensor  # [B, H] mean embedding of each question


def part_pattern(k: int) -> list[int]:
    """Initial part (0 subject, 1 relation, 2 object) of each of `k` tokens, so that they read as a triple."""
    if k == 1:
        return [2]
    if k == 2:
        return [0, 2]
    return [i % 3 for i in range(k)]


def question_match(tokens: Tensor, mask: Tensor, q_tokens: Tensor, q_mask: Tensor) -> Tensor:
    """``[N]``: for each text (its token embeddings ``[N, L, H]``), the mean over its tokens of the best
    cosine with a token of its question (``[N, Lq, H]``, that text's question gathered per row)."""
    a = nn.functional.normalize(tokens, dim=-1)
    b = nn.functional.normalize(q_tokens, dim=-1)
    sim = torch.bmm(a, b.transpose(1, 2)).masked_fill(~q_mask.unsqueeze(1), -1.0)  # [N, L, Lq]
    best = sim.max(-1).values.masked_fill(~mask, 0.0)
    return best.sum(-1) / mask.sum(-1).clamp_min(1)


class QueryPool(nn.Module):
    """Node states + edges + the question -> ``[B, tokens, llm_hidden]``."""

    def __init__(self, hidden: int, edge_in: int, extras: int, llm_hidden: int, tokens: int,
                 projector_hidden: int, residual: bool):
        super().__init__()
        self.tokens, self.extras, self.residual = int(tokens), int(extras), bool(residual)
        d = hidden
        self.d = d
        self.rel = nn.Linear(edge_in, hidden)
        self.q = nn.Linear(llm_hidden, tokens * d)
        self.query = nn.Parameter(torch.zeros(tokens, d))
        self.key = nn.Linear(3 * hidden, d)
        self.match_w = nn.Parameter(torch.tensor([[MATCH_INIT, MATCH_INIT, 0.0]] * tokens))
        self.time_w = nn.Parameter(torch.zeros(tokens, max(extras, 1)))
        self.bilinear_gate = nn.Parameter(torch.zeros(tokens))
        self.net = nn.Sequential(nn.Linear(3 * hidden, projector_hidden), nn.GELU(),
                                 nn.Linear(projector_hidden, llm_hidden))
        self.empty = nn.Parameter(torch.zeros(tokens, llm_hidden))  # tokens of a graph without edges
        if self.residual:
            self.net_gate = nn.Parameter(torch.zeros(tokens))
            logits = torch.zeros(tokens, 3)
            for k, p in enumerate(part_pattern(tokens)):
                logits[k, p] = PART_INIT
            self.parts = nn.Parameter(logits)
            self.gain = nn.Parameter(torch.ones(tokens))

    def forward(self, h: Tensor, edge_index: Tensor, edge_in: Tensor, batch: Tensor, num_graphs: int,
                words: EdgeWords) -> tuple[Tensor, Tensor]:
        """(tokens ``[B, K, llm_hidden]``, attention ``[E, K]`` over each graph's edges)."""
        llm_hidden = self.empty.size(-1)
        out = self.empty.to(h.dtype).expand(num_graphs, -1, -1).clone()
        if edge_index.size(1) == 0:
            return out, h.new_zeros((0, self.tokens))
        src, dst = edge_index
        graph = batch[src]
        c = torch.cat([h[src], h[dst], self.rel(edge_in)], dim=-1)  # [E, 3h]
        q = (self.q(words.question).view(num_graphs, self.tokens, self.d) + self.query)[graph]  # [E, K, d]
        score = self.bilinear_gate * (q * self.key(c).unsqueeze(1)).sum(-1) / self.d ** 0.5
        score = score + words.match @ self.match_w.T
        if self.extras:
            score = score + EXTRA_SCALE * (edge_in[:, -self.extras:] @ self.time_w.T)
        alpha = segment_softmax(score, graph, num_nodes=num_graphs)  # [E, K], sums to 1 per graph and token
        pooled = torch.zeros(num_graphs, self.tokens, c.size(-1), dtype=c.dtype, device=c.device)
        pooled.index_add_(0, graph, alpha.unsqueeze(-1) * c.unsqueeze(1))
        tokens = self.net(pooled)
        if self.residual:
            parts = torch.stack([words.subject, words.relation, words.object], dim=1)  # [E, 3, H]
            mix = torch.einsum("kp,eph->ekh", self.parts.softmax(-1), parts)  # [E, K, H]
            said = torch.zeros(num_graphs, self.tokens, llm_hidden, dtype=c.dtype, device=c.device)
            said.index_add_(0, graph, alpha.unsqueeze(-1) * mix)
            tokens = self.net_gate.view(1, -1, 1) * tokens + self.gain.view(1, -1, 1) * said
        has_edges = (torch.bincount(graph, minlength=num_graphs)[:num_graphs] > 0).view(-1, 1, 1)
        return torch.where(has_edges, tokens, out), alpha
