"""Jobs that train: data preparation, the graph-token trainer and the reranker trainer."""
