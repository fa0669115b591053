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
