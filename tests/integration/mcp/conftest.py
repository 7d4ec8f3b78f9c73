"""The MCP server's tests reuse the service tests' served guide (tests/integration/service/conftest.py):
a real `ragcore serve` app on 127.0.0.1 over three pages of the bundled guide, the real ONNX model."""

from tests.integration.service.conftest import guide_data, llm_server, start_server  # noqa: F401
