"""Reading a run: the settings that produced it and its validation badges."""

from __future__ import annotations

from typing import Any, Mapping

from .model import CONTEXT_LABELS, Run


def config_stamp(answer: Mapping[str, Any]) -> dict[str, str]:
    """The settings that produced an answer, as short label → value pairs (no secrets)."""
    meta = answer.get("metadata") or {}
    cfg = meta.get("config") or {}
    llm = cfg.get("llm") or {}
    out: dict[str, str] = {"collection": str(meta.get("collection") or cfg.get("collection") or "?")}
    if meta.get("corpus_version"):
        out["corpus version"] = str(meta["corpus_version"])[:12]
    if meta.get("built_at"):
        out["built"] = str(meta["built_at"]).replace("T", " ").replace("+00:00", " UTC")
    out["context"] = CONTEXT_LABELS.get(str(meta.get("context", meta.get("mode"))), str(meta.get("context", meta.get("mode")) or "?"))
    if cfg and meta.get("context", meta.get("mode")) != "selection":  # a selection-only answer retrieves nothing
        out["retrieval"] = str(cfg.get("retrieval_mode", cfg.get("mode", "?")))
        out["top-K"] = str(cfg.get("top_k", "?"))
        thr = cfg.get("threshold")
        out["threshold"] = f"{thr:.2f}" if isinstance(thr, (int, float)) else str(thr)
        fusion = cfg.get("fusion", "?")
        out["fusion"] = f"rrf (k={cfg.get('rrf_k')})" if fusion == "rrf" else f"weighted (dense {cfg.get('dense_weight')})"
        out["dedupe"] = "on" if cfg.get("dedupe") else "off"
    gen = meta.get("generator")
    if not gen:
        gen = f"openai-{llm.get('api', 'chat')}:{llm['model']}" if llm.get("model") else "extractive"
    out["generator"] = str(gen)
    if llm.get("model"):
        out["temperature"] = str(llm.get("temperature"))
        out["API key"] = "set" if llm.get("api_key") else "not set"
    return out


def badges(run: Run) -> list[tuple[str, str]]:
    """(label, severity) for the validation badges: severity is ok | info | warn | error."""
    ans = run.answer
    val = ans.get("validation") or {}
    out: list[tuple[str, str]] = []
    sev = {"ok": "ok", "abstained": "info", "partial": "warn", "cancelled": "warn", "error": "error"}
    out.append((run.outcome, sev.get(run.outcome, "info")))
    # the extractive reader's confidence, beside the status once its calibration met its target (``decides``):
    # an uncalibrated level called right answers "low" (bench/results/reader.md), so until then it is not shown
    conf = ans.get("confidence") or None
    if conf and conf.get("decides", True) and run.outcome not in ("abstained", "error"):
        level = str(conf.get("level"))
        out.append((f"confidence {level} ({float(conf.get('value') or 0):.2f})",
                    {"high": "ok", "medium": "info"}.get(level, "warn")))
    for key, label in (("stripped", "stripped"), ("unsupported", "unsupported"), ("uncited", "uncited"), ("hedged", "hedged")):
        n = len(val.get(key) or [])
        if n:
            out.append((f"{n} {label}", "warn" if key != "hedged" else "info"))
    if run.outcome != "abstained" and ans.get("status") == "abstained":
        out.append(("abstained", "info"))
    for action in val.get("guardrail_actions") or []:
        if not str(action).startswith("abstained"):
            out.append((str(action).split(":")[0], "info"))
    return out


# --------------------------------------------------------------------------- diff of two runs
