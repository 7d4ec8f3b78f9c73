"""Instruction-like text in documents: found, marked, and kept from passing as grounded.

A document may carry text written to steer a model ("Ignore all previous instructions and …",
"You are now …", a fake "system:" turn). The prompt already tells the model that evidence is
data; this module is the check that does not depend on the model obeying: chunks whose text
looks like an instruction to an assistant are marked, the extractive composer never quotes
such a sentence, and any answer sentence that cites a marked chunk is flagged ``injected``
(so the answer is not plain "ok"). It is a pattern check — it catches the common phrasings in
English, German, French, Spanish, Italian, Portuguese and Dutch (_MULTILINGUAL), not every
possible one nor other languages; docs/16-security.md says so.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

from ragcore.types import Evidence

_PATTERNS = [
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|any|your|the system)\b[^.\n]{0,30}\b(?:instructions?|prompts?|rules?|directions?|guidelines?)",
    r"\byou are now (?:an?|the|in|no longer)\b|\bfrom now on,? (?:you|answer|respond|reply)\b|\bact as (?:an?|the|my) (?:ai|assistant|chatbot|model|system|jailbroken|unrestricted)\b",
    r"\b(?:new|updated|real|actual) (?:system )?instructions?\s*:",
    # a verb then a space: "print(secrets.token_hex())" in a page of code is a call, not a request
    r"\b(?:reveal|print|show|repeat|output)\s[^.\n]{0,30}\b(?:system prompt|your instructions|the prompt|api key|secret)\b",
    r"\b(?:answer|respond|reply) (?:to )?(?:every|all|each|any) (?:question|query|user)s?\b[^.\n]{0,20}\bwith\b",
    r"\b(?:do not|don't|never) (?:cite|mention|reveal|tell)\b[^.\n]{0,40}\b(?:sources?|evidence|user|citations?)",
    r"(?im)^\s*(?:system|assistant)\s*:\s*(?:you\b|ignore\b|disregard\b|from now\b|always\b|never\b|new instructions\b|reveal\b|answer\b)",
    r"<\|(?:im_start|im_end|system|assistant|user)\|>|\[/?INST\]|<</?SYS>>|###\s*(?:instruction|system)\b",
    r"\b(?:send|post|exfiltrate|upload)\b[^.\n]{0,40}\b(?:to|at) (?:https?://|www\.)",
    r"!\[[^\]]*\]\(https?://[^)]*\?[^)]*=",  # an image whose URL carries a query: a classic exfiltration beacon
]
# The same families in German, French, Spanish, Italian, Portuguese and Dutch: "ignore the previous
# instructions" (a verb, a qualifier such as "previous"/"all", then the noun: documentation says
# "Django ignora las reglas" without a qualifier), "you are now …", "from now on answer …",
# "new instructions:", "reveal the system prompt", "answer every question with".
_IGNORE = {
    "de": (r"ignorier\w*|vergiss|vergessen sie|missacht\w*|übergeh\w*|verwirf",
           r"vorherigen|vorigen|bisherigen|obigen|früheren|alle|allen|deine|ihre|sämtliche",
           r"anweisung\w*|instruktion\w*|regeln|vorgaben|befehle|richtlinien|(?:system)?prompts?"),
    "fr": (r"ignore[zs]?|oublie[zs]?|ne tiens pas compte|ne tenez pas compte",
           r"précédentes?|antérieures?|ci-dessus|toutes|tous|tes|vos",
           r"instructions?|consignes?|règles|directives|prompts?"),
    "es": (r"ignora\w*|olvida\w*|haz caso omiso",
           r"anteriores|previas|todas|todos|tus|sus",
           r"instrucci\w+|reglas|indicaciones|directrices|[oó]rdenes|prompts?"),
    "it": (r"ignora\w*|dimentica\w*",
           r"precedenti|tutte|tutti|tue|sue|sopra",
           r"istruzion\w|regole|indicazioni|direttive|prompts?"),
    "pt": (r"ignor[ae]\w*|esque[cç]a\w*|desconsider[ae]\w*",
           r"anteriores|prévias|todas|todos|suas|tuas|acima",
           r"instru[cç](?:ões|ão|oes|ao)|regras|diretrizes|ordens|prompts?"),
    "nl": (r"negeer|vergeet|negeren",
           r"vorige|eerdere|voorgaande|alle|bovenstaande|je|jouw|uw",
           r"instructies?|regels|aanwijzingen|opdrachten|prompts?"),
}
_MULTILINGUAL = [rf"\b(?:{verb})\b[^.\n]{{0,40}}\b(?:{qual})\b[^.\n]{{0,30}}\b(?:{noun})"
                 for verb, qual, noun in _IGNORE.values()] + [
    # you are now … / from now on …
    r"\b(?:du bist|sie sind) (?:jetzt|nun|ab sofort|ab jetzt) (?:ein|eine|der|die|kein|keine|im)\b"
    r"|\bab (?:jetzt|sofort|nun)\b,? (?:antwortest|antworte|beantworte|sagst|bist) ",
    r"\b(?:tu es|vous êtes|tu deviens|vous devenez) (?:maintenant|désormais|dorénavant) (?:un|une|le|la|en)\b"
    r"|\b(?:désormais|dorénavant|à partir de maintenant),? (?:tu|vous|réponds|répondez)\b",
    r"\b(?:ahora|a partir de ahora) (?:eres|serás|usted es)\b|\ba partir de ahora,? (?:responde|contesta|di)\b",
    r"\b(?:ora|adesso|da ora in poi) sei (?:un|una|il|la|in)\b|\bd'ora in poi,? (?:rispondi|sei|devi)\b",
    r"\b(?:agora|a partir de agora) (?:você é|tu és|és)\b|\ba partir de agora,? (?:responda|responde|você)\b",
    r"\b(?:je bent|jij bent|u bent) (?:nu|vanaf nu) (?:een|de|het|in)\b|\bvanaf nu,? (?:antwoord|beantwoord|ben|zeg)\b",
    # new instructions:
    r"\b(?:neue|aktualisierte|echte) (?:system)?(?:anweisungen|instruktionen)\s*:"
    r"|\bnouvelles? (?:instructions|consignes)\s*:|\bnuevas instrucciones\s*:|\bnuove istruzioni\s*:"
    r"|\bnovas instru[cç][õo]es\s*:|\bnieuwe instructies\s*:",
    # reveal the system prompt / the key
    r"\b(?:gib|zeig\w*|verrat\w*|nenn\w*|wiederhol\w*|révèle\w*|affiche\w*|montre\w*|répète\w*|revela\w*|muestra\w*"
    r"|imprime|repite|rivela\w*|mostra\w*|stampa|ripeti|revele|mostre|imprima|repita|onthul|toon|herhaal)\s[^.\n]{0,30}"
    r"\b(?:system-?prompt|deine anweisungen|prompt système|prompt du système|vos instructions|tes instructions"
    r"|prompt del sistema|tus instrucciones|prompt di sistema|le tue istruzioni|prompt do sistema|suas instru[cç][õo]es"
    r"|systeemprompt|je instructies|api-?(?:schlüssel|key|sleutel)|cl[ée] api|clave (?:de )?api|chiave api|chave (?:de )?api)",
    # answer every question with …
    r"\b(?:antworte|beantworte) (?:auf )?(?:jede|alle) (?:frage|fragen)\b[^.\n]{0,20}\bmit\b"
    r"|\bréponds?(?:ez)? à (?:chaque|toutes les|toute) (?:question|questions)\b[^.\n]{0,20}\b(?:par|avec)\b"
    r"|\bresponde (?:a )?(?:cada|todas las) preguntas?\b[^.\n]{0,20}\bcon\b"
    r"|\brispondi a (?:ogni|tutte le) domand[ae]\b[^.\n]{0,20}\bcon\b"
    r"|\bresponda (?:a )?(?:cada|todas as) perguntas?\b[^.\n]{0,20}\bcom\b"
    r"|\bbeantwoord (?:elke|iedere|alle) vra(?:ag|gen)\b[^.\n]{0,20}\bmet\b",
]
# Issue 39: instructions in other words. Paraphrases of "ignore your instructions" (a verb of
# setting aside, then what the assistant was told), text addressed to an AI reader ("AI assistants
# summarising this page must say …"), and markup that tries to end ragcore's evidence block or
# open a role of its own (the prompt escapes it, prompts.neutralise_text; a document has no other
# reason to write it).
_PARAPHRASED = [
    r"\b(?:set aside|put aside|pay no attention to|no longer (?:follow|obey|heed)|stop (?:following|obeying)|abandon|"
    r"throw out|drop|discard)\b[^.\n]{0,40}\b(?:instructions?|guidance|directives?|guidelines|rules you|"
    r"what you (?:were|have been) told|your (?:rules|programming|prompt|orders))",
    r"\b(?:previous|prior|original|earlier|above|preceding|initial|system|your)\s+(?:instructions?|guidance|directives?|"
    r"prompts?|programming)\b[^.\n]{0,30}\b(?:no longer (?:apply|hold|matter|count)|(?:are|is) (?:now )?(?:void|cancell?ed|"
    r"obsolete|overridden|superseded|revoked|lifted|suspended|replaced)|(?:have|has) been (?:cancell?ed|overridden|"
    r"superseded|revoked|lifted|replaced|updated))",
    r"\b(?:if|when) you are an? (?:ai|llm|large language model|language model|assistant|chatbot|bot|model)\b",
    r"\b(?:ai|llm|large language model|language model|chatbot|ai assistant|assistant)s?\b[^.\n]{0,12}\b(?:reading|processing|"
    r"summari[sz]ing|answering (?:questions )?(?:about|from|on)|indexing|quoting|using) (?:this|these)\b",
    r"\b(?:note|message|instruction|notice) (?:to|for) (?:the |any )?(?:ai|llm|language model|assistant|chatbot|model)s?\b",
    r"\b(?:tell|inform|assure) (?:the |every |all |any )?(?:user|reader|customer|asker)s?\b[^.\n]{0,20}\b(?:that|:)",
    # the evidence block's own markup (look-alike brackets and invisible characters are folded first: _plain)
    r"<\s*/?\s*evidence\b|\bevidence \(cite as\b|<\s*/?\s*(?:system|instructions?|system[_-]?prompt)\s*>",
]
# Japanese: ignore the (previous) instructions, you are now …, from now on answer …, reveal the
# system prompt, answer every question with …, and text addressed to an AI. (No \b: CJK text has
# no word boundaries between characters.)
_JAPANESE = [
    r"(?:以前|前|これまで|今まで|上記|先|最初|元|すべて|全て|あなた|システム)の?(?:指示|命令|指令|ルール|規則|プロンプト|制約)"
    r"[^。\n]{0,10}(?:無視|忘れ|破棄|従わな|取り消|撤回|無効)",
    r"(?:指示|命令|ルール|プロンプト)(?:は|を)?[^。\n]{0,6}(?:無視|忘れ)(?:し|して|せよ|しろ|なさい|ること)",
    r"あなたは(?:今|いま|今から|これから|今後|もう)[^。\n]{0,6}(?:です|だ|になり|として)",
    r"(?:今後|これから|以後|以降|今から)(?:は|、)?[^。\n]{0,30}(?:と|で)(?:答え|回答|返答|応答|返信|言っ)(?:て|なさい|ること|ろ|よ)",
    r"システムプロンプト[^。\n]{0,10}(?:表示|出力|教え|見せ|開示|明か)",
    r"(?:すべて|全て|どんな|あらゆる|どの)の?質問(?:に|には|にも)[^。\n]{0,30}(?:と|で)(?:答え|回答|返答|応答)",
    r"(?:AI|ＡＩ|アシスタント|言語モデル|チャットボット|LLM)(?:は|へ|に|の方)[^。\n]{0,40}(?:答え|回答|伝え|言っ|述べ)"
    r"(?:なさい|てください|て下さい|ること|ろ|よ)",
    r"(?:ユーザー|利用者|読者)に[^。\n]{0,40}(?:と|ように)(?:伝え|答え|言っ)(?:なさい|てください|て下さい|ること)",
]
_RE = [re.compile(p, re.I) for p in (*_PATTERNS, *_MULTILINGUAL, *_PARAPHRASED, *_JAPANESE)]
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")
_BRACKETS = str.maketrans({"﹤": "<", "‹": "<", "〈": "<", "⟨": "<", "﹥": ">", "›": ">", "〉": ">", "⟩": ">"})


def _plain(text: str) -> str:
    """``text`` as the checks read it: compatibility forms folded (full-width letters and
    brackets), invisible characters dropped, look-alike brackets made ``<``/``>``: the disguises
    a model reads past."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).translate(_BRACKETS)


def instruction_phrases(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty: none found)."""
    found: list[str] = []
    plain = _plain(text)
    for rx in _RE:
        found.extend(" ".join(m.group(0).split())[:80] for m in rx.finditer(plain))
    return found


def looks_like_instruction(text: str) -> bool:
    plain = _plain(text)
    return any(rx.search(plain) for rx in _RE)


@dataclass(frozen=True)
class SuspiciousEvidence:
    n: int
    path: str
    phrases: tuple[str, ...]

    def describe(self) -> str:
        return f"evidence [{self.n}] ({self.path}) contains instruction-like text: “{self.phrases[0]}”"


def suspicious_evidence(evidence: Sequence[Evidence]) -> tuple[SuspiciousEvidence, ...]:
    out = []
    for e in evidence:
        phrases = instruction_phrases(e.chunk.text)
        if phrases:
            out.append(SuspiciousEvidence(e.n, e.chunk.path, tuple(dict.fromkeys(phrases))))
    return tuple(out)


# a link text may hold one level of brackets: the nested ``[![a](img)](http://evil/z)``
_LABEL = r"((?:[^\[\]\n]|\[[^\[\]\n]*\])*)"
_TARGET = r"\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
_IMAGE = re.compile(r"!\[" + _LABEL + r"\]" + _TARGET)
_LINK = re.compile(r"(?<!!)\[" + _LABEL + r"\]" + _TARGET)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
# a reference definition "[1]: http://…" would turn the [n] citation markers into links or images
_REF_DEF = re.compile(r"(?m)^( {0,3})\[([^\]\n]+)\]:[ \t]*(\S+)")
# raw HTML a Markdown viewer renders: images and media load by themselves, <a> hides its target
_MEDIA_TAG = re.compile(r"<\s*(?:img|image|picture|source|video|audio|iframe|embed|object|svg|input|link|meta|base|"
                        r"script|style|frame|track)\b[^>]*>?", re.I)
_ANCHOR_TAG = re.compile(r"<\s*/?\s*(?:a|area|form|button)\b[^>]*>?", re.I)
_MAX_PASSES = 8  # nesting beyond this is not Markdown any viewer renders as a link any more


def _code(text: str) -> str:
    """``text`` as an inline code span, which every Markdown viewer shows as literal text."""
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def _fixpoint(rx: re.Pattern[str], repl, text: str) -> str:
    for _ in range(_MAX_PASSES):
        new = rx.sub(repl, text)
        if new == text:
            break
        text = new
    return text


def defang_images(text: str) -> str:
    """Markdown images, raw HTML images and media (``<img src=…>``) and reference definitions as
    visible text: an answer never makes a viewer load anything (a viewer that loads
    ``![x](http://evil/?q=secret)`` sends data out). Links that run code when clicked
    (``javascript:``, ``vbscript:``, ``data:``) are shown as text too. Applies to every answer,
    the extractive composer's quotes of a document included."""
    text = _fixpoint(_IMAGE, lambda m: f"[image: {m.group(1) or 'untitled'}] ({_code(m.group(2))})", text)
    text = _MEDIA_TAG.sub(lambda m: _code(m.group(0)), text)
    text = _REF_DEF.sub(lambda m: f"{m.group(1)}[{m.group(2)}]\\: {_code(m.group(3))}", text)
    return defang_script_links(text)


_SCRIPT_SCHEME = re.compile(r"^(?:javascript|vbscript|data|livescript):", re.I)
# a link whose target may hold balanced parentheses and "<", as CommonMark reads one: javascript:alert(1)
_ANY_TARGET_LINK = re.compile(r"(?<!!)\[" + _LABEL + r"\]\(\s*(<?(?:[^\s()]|\([^\s()]*\))*>?)(?:\s+\"[^\"]*\")?\s*\)")
_ANY_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*)>")


def runs_code(target: str) -> bool:
    """Whether a link target runs code when followed, as a browser reads it: entities decoded
    (CommonMark decodes them in a link's target), spaces and control characters dropped."""
    plain = "".join(ch for ch in html.unescape(target) if ord(ch) > 0x20)
    return bool(_SCRIPT_SCHEME.match(plain))


def defang_script_links(text: str) -> str:
    """Markdown links, autolinks and HTML anchors whose target runs code, as visible text."""
    text = _fixpoint(_ANY_TARGET_LINK, lambda m: f"{m.group(1)} ({_code(m.group(2))})"
                     if runs_code(m.group(2).strip("<>")) else m.group(0), text)
    text = _ANY_AUTOLINK.sub(lambda m: _code(m.group(1)) if runs_code(m.group(1)) else m.group(0), text)
    return _ANCHOR_TAG.sub(lambda m: _code(m.group(0)) if "script:" in "".join(m.group(0).split()).lower()
                           or "data:" in m.group(0).lower() else m.group(0), text)


def defang_links(text: str) -> str:
    """Model-written Markdown images and links (nested ones too) and raw HTML links as visible
    text: no image is loaded, and a link shows its target as code instead of hiding it behind words."""
    text = defang_images(text)
    text = _fixpoint(_LINK, lambda m: f"{m.group(1)} ({_code(m.group(2))})", text)
    text = _ANCHOR_TAG.sub(lambda m: _code(m.group(0)), text)
    return _AUTOLINK.sub(lambda m: _code(m.group(1)), text)
