"""GraphTokenEncoder: shapes from the LLM size, empty graphs, relation awareness, invariances."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch, Data

from qgmem.model import EncoderConfig, GraphTokenEncoder


pytestmark = pytest.mark.usefixtures("one_thread")


CFG = EncoderConfig(node_dim=8, edge_dim=6, hidden=16, heads=4, layers=2, dropout=0.0, num_graph_tokens=3,
                    projector_hidden=32)


def graph(seed: int, n: int = 4, e: int = 3) -> Data:
    g = torch.Generator().manual_seed(seed)
    ei = torch.stack([torch.arange(e) % n, (torch.arange(e) + 1) % n])
    return Data(x=torch.randn(n, 8, generator=g), edge_index=ei, edge_attr=torch.randn(e, 6, generator=g), num_nodes=n)


def empty() -> Data:
    return Data(x=torch.zeros(0, 8), edge_index=torch.zeros(2, 0, dtype=torch.long), edge_attr=torch.zeros(0, 6),
                num_nodes=0)


def encoder(llm_hidden: int = 24) -> GraphTokenEncoder:
    torch.manual_seed(0)
    return GraphTokenEncoder.from_config(CFG, llm_hidden).eval()


def test_output_shape_follows_llm_hidden() -> None:
    for hidden in (24, 40):
        out = encoder(hidden)(Batch.from_data_list([graph(0), graph(1)]))
        assert out.shape == (2, 3, hidden)


def test_empty_graph_uses_learned_embedding_and_does_not_disturb_batch() -> None:
    enc = encoder()
    alone = enc(Batch.from_data_list([graph(0)]))
    mixed = enc(Batch.from_data_list([empty(), graph(0), empty()]))
    assert torch.isfinite(mixed).all()
    assert torch.allclose(mixed[1], alone[0], atol=1e-6)
    assert torch.allclose(mixed[0], mixed[2])
    with torch.no_grad():
        enc.encoder.empty.add_(1.0)
    assert not torch.allclose(enc(Batch.from_data_list([empty()]))[0], mixed[0])  # learned, not fixed


def test_relations_change_the_token() -> None:
    enc, g = encoder(), graph(0)
    g2 = g.clone()
    g2.edge_attr = g.edge_attr + 1.0
    a, b = enc(Batch.from_data_list([g])), enc(Batch.from_data_list([g2]))
    assert not torch.allclose(a, b, atol=1e-4)


def test_node_order_does_not_matter() -> None:
    enc, g = encoder(), graph(0, n=5, e=4)
    perm = torch.tensor([3, 0, 4, 1, 2])  # new position i holds old node perm[i]
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(5)
    gp = Data(x=g.x[perm], edge_index=inv[g.edge_index], edge_attr=g.edge_attr, num_nodes=5)
    assert torch.allclose(enc(Batch.from_data_list([g])), enc(Batch.from_data_list([gp])), atol=1e-5)


def test_direction_matters() -> None:
    enc, g = encoder(), graph(0, n=3, e=2)
    rev = Data(x=g.x, edge_index=g.edge_index.flip(0), edge_attr=g.edge_attr, num_nodes=3)
    assert not torch.allclose(enc(Batch.from_data_list([g])), enc(Batch.from_data_list([rev])), atol=1e-4)


def test_feature_dim_mismatch_is_a_clear_error() -> None:
    bad = Data(x=torch.randn(2, 5), edge_index=torch.tensor([[0], [1]]), edge_attr=torch.randn(1, 6), num_nodes=2)
    with pytest.raises(ValueError, match="node_dim=8"):
        encoder()(Batch.from_data_list([bad]))


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="divisible"):
        EncoderConfig(hidden=30, heads=4)


def _variant(**kw) -> GraphTokenEncoder:
    torch.manual_seed(0)
    cfg = EncoderConfig(**{**CFG.__dict__, **kw})
    return GraphTokenEncoder.from_config(cfg, 24).eval()


def test_edge_tokens_one_per_edge_in_order() -> None:
    enc = _variant(pooling="edges", num_graph_tokens=4)
    g = graph(0, n=4, e=3)
    out = enc(Batch.from_data_list([g, empty(), graph(1, n=3, e=2)]))
    assert out.shape == (3, 4, 24)
    # slots past a graph's edges (and every slot of an empty graph) hold the learned "no edge" token
    assert torch.allclose(out[0, 3], out[1, 0]) and torch.allclose(out[1, 0], out[1, 3])
    assert torch.allclose(out[2, 2], out[1, 0]) and not torch.allclose(out[0, 0], out[1, 0])
    # a graph alone gives what it gives in a batch; reversing its edges reverses its tokens
    alone = enc(Batch.from_data_list([g]))
    assert torch.allclose(alone[0], out[0], atol=1e-5)
    rev = g.clone()
    rev.edge_index, rev.edge_attr = g.edge_index.flip(1), g.edge_attr.flip(0)
    assert torch.allclose(enc(Batch.from_data_list([rev]))[0, :3], alone[0, :3].flip(0), atol=1e-5)
    # more edges than slots: the first (highest-ranked) edges are kept
    assert _variant(pooling="edges", num_graph_tokens=2)(Batch.from_data_list([g])).shape == (1, 2, 24)
    assert not enc.encoder.empty.requires_grad  # unused by edge tokens, so not trained or saved


def test_token_scale_matches_the_llm_embedding_norm() -> None:
    enc = _variant(token_scale="embedding")
    emb = torch.randn(50, 24) * 3.0
    enc.set_token_norm(emb)
    out = enc(Batch.from_data_list([graph(0), empty()]))
    target = emb.norm(dim=-1).mean()
    assert torch.allclose(out.norm(dim=-1), target.expand(2, 3), rtol=1e-4)
    with torch.no_grad():
        enc.gain.fill_(0.5)  # the learned gain moves the scale
    assert torch.allclose(enc(Batch.from_data_list([graph(0)])).norm(dim=-1), 0.5 * target.expand(1, 3), rtol=1e-4)


def test_unknown_pooling_or_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="pooling must be one of"):
        EncoderConfig(pooling="max")
    with pytest.raises(ValueError, match="token_scale must be one of"):
        EncoderConfig(token_scale="unit")
