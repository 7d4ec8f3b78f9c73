"""Generation with an OpenAI-compatible endpoint: context packing, prompts, the request, the stream, error mapping and the whole-answer deadline."""
