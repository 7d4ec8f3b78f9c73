"""The engine: ``Engine`` (one per process), the answerer and its typed stages, the event producer, follow-ups, selections and collection administration. Calls go down from here, never back up."""
