"""Encoders: the dense embedding model (bundled int8 ONNX MiniLM) and the sparse BM25 encoder."""
