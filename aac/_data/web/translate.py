"""Lingo, a translation API at https://api.lingo.example. Every request needs the header Authorization:
Bearer lg-trial-3 (401 otherwise). It translates word by word from a small glossary.
POST /v1/translate with a JSON body {"text", "target": language code, "source": optional code} returns
{"translation", "source", "target"}: each word of the text (lower-cased, punctuation dropped) replaced by
its glossary translation, unknown words kept as they are. Without a source the language is detected as in
/v1/detect. Languages: en, es, de, fr; another is a 422; source equal to target is a 422; an empty text is
a 422.
POST /v1/detect with {"text"} returns {"language", "confidence"}: the language with the most glossary words
in the text (ties: en, es, de, fr order), confidence = that share of the words, rounded to 2 decimals; no
known word gives {"language": null, "confidence": 0.0}.
GET /v1/languages returns {"languages": [{"code", "name"}, ...]}."""

import re

from aac.sandbox.web_service import HTTPError, OneOf, Service

api = Service("api.lingo.example", key_header="Authorization", key="lg-trial-3", bearer=True)

NAMES = {"en": "English", "es": "Spanish", "de": "German", "fr": "French"}
GLOSSARY = [
    {"en": "house", "es": "casa", "de": "haus", "fr": "maison"},
    {"en": "water", "es": "agua", "de": "wasser", "fr": "eau"},
    {"en": "good", "es": "bueno", "de": "gut", "fr": "bon"},
    {"en": "morning", "es": "manana", "de": "morgen", "fr": "matin"},
    {"en": "cat", "es": "gato", "de": "katze", "fr": "chat"},
    {"en": "the", "es": "el", "de": "der", "fr": "le"},
]
LANG = OneOf(*NAMES)


def _words(text):
    return re.findall(r"[a-z]+", text.lower())


def _detect(words):
    counts = {lang: sum(any(g[lang] == w for g in GLOSSARY) for w in words) for lang in NAMES}
    best = max(NAMES, key=lambda lang: counts[lang])
    if not counts[best]:
        return None, 0.0
    return best, round(counts[best] / len(words), 2)


@api.route("POST", "/v1/translate", target=LANG, source=LANG)
def translate(text, target, source=None):
    words = _words(text)
    if not words:
        raise HTTPError(422, "text must contain words")
    source = source or _detect(words)[0] or "en"
    if source == target:
        raise HTTPError(422, "source and target are the same language")
    table = {g[source]: g[target] for g in GLOSSARY}
    return {"translation": " ".join(table.get(w, w) for w in words), "source": source, "target": target}


@api.route("POST", "/v1/detect")
def detect(text):
    words = _words(text)
    language, confidence = _detect(words) if words else (None, 0.0)
    return {"language": language, "confidence": confidence}


@api.route("GET", "/v1/languages")
def languages():
    return {"languages": [{"code": c, "name": n} for c, n in NAMES.items()]}


EXAMPLES = [
    ("POST", "/v1/translate", {"text": "Good morning", "target": "de"}, {"Authorization": "Bearer lg-trial-3"}),
    ("GET", "/v1/languages", None, {"Authorization": "Bearer lg-trial-3"}),
]


def translate_text(text, source, target):
    """Translate a text from a source language to a target language (codes such as en, es, de, fr) with the
    Lingo API (bearer token lg-trial-3). Return the translation, or None if the request fails."""
    import requests

    try:
        r = requests.post("https://api.lingo.example/v1/translate",
                          json={"text": text, "source": source, "target": target},
                          headers={"Authorization": "Bearer lg-trial-3"}, timeout=10)
        r.raise_for_status()
        return r.json()["translation"]
    except requests.RequestException:
        return None


def language_of(text):
    """Detect the language of a text with the Lingo API (bearer token lg-trial-3). Return the language
    code, or None when it cannot tell or the request fails."""
    import httpx

    try:
        r = httpx.post("https://api.lingo.example/v1/detect", json={"text": text},
                       headers={"Authorization": "Bearer lg-trial-3"})
        r.raise_for_status()
        return r.json()["language"]
    except httpx.HTTPError:
        return None


CASES = {
    "translate_text": [("the cat", "en", "fr"), ("agua buena", "es", "en"), ("hello", "en", "en"),
                       ("good", "en", "it")],
    "language_of": [("le chat et la maison",), ("der Hund",), ("xyz qq",)],
}
