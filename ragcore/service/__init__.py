"""`ragcore serve`: the engine over HTTP (REST, Server-Sent Events, a WebSocket) and an
OpenAI-compatible chat endpoint whose models are the collections. FastAPI on uvicorn; imported
only by `ragcore serve` (and tests), never on the `ragcore ask` path."""
