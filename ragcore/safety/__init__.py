"""Safety: guardrails on answers, marking of instructions written in documents (prompt injection), and redaction of secrets in messages."""
