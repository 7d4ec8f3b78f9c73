"""Settings: one frozen, validated ``RagcoreSettings`` (every ``RAGCORE_*`` variable), the LLM endpoint settings and where they come from, and the app's settings file."""
