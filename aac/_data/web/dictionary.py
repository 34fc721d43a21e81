"""Wordnook, a dictionary API at https://api.wordnook.example (no authentication).
GET /v1/entries/{lang}/{word} returns {"word", "lang", "meanings": [{"part_of_speech", "definition"}, ...],
"phonetic"} for a word of language en or es (lower-cased before the lookup); another language is a 404
{"error": "unsupported language"}, an unknown word a 404 {"error": "no definitions found"}.
GET /v1/synonyms/{word}?max=N returns {"word", "synonyms": [...]} (English only; at most N, 1..10, default
10; outside is a 422); a word without synonyms gives an empty list.
GET /v1/random?seed=N returns one entry picked deterministically by the integer seed (default 0): the entry
at position seed modulo the number of English words, in alphabetical order."""

from aac.sandbox.web_service import HTTPError, Range, Service

api = Service("api.wordnook.example")

ENTRIES = {
    "en": {
        "bright": ("/brait/", [("adjective", "giving out much light"), ("adjective", "quick to learn")]),
        "harbor": ("/har-ber/", [("noun", "a sheltered place for ships"), ("verb", "to keep a thought in mind")]),
        "quiet": ("/kwai-et/", [("adjective", "making little noise")]),
        "swift": ("/swift/", [("adjective", "moving fast"), ("noun", "a small fast bird")]),
    },
    "es": {"rapido": ("/ra-pi-do/", [("adjetivo", "que se mueve deprisa")]),
           "puerto": ("/puer-to/", [("sustantivo", "lugar donde atracan los barcos")])},
}
SYNONYMS = {"bright": ["shining", "clever", "vivid"], "swift": ["fast", "quick", "rapid", "speedy"],
            "quiet": ["silent", "calm"]}


def _entry(lang, word):
    if lang not in ENTRIES:
        raise HTTPError(404, "unsupported language")
    word = word.lower()
    if word not in ENTRIES[lang]:
        raise HTTPError(404, "no definitions found")
    phonetic, meanings = ENTRIES[lang][word]
    return {"word": word, "lang": lang, "phonetic": phonetic,
            "meanings": [{"part_of_speech": p, "definition": d} for p, d in meanings]}


@api.route("GET", "/v1/entries/{lang}/{word}")
def entry(lang, word):
    return _entry(lang, word)


@api.route("GET", "/v1/synonyms/{word}", max=Range(1, 10))
def synonyms(word, max=10):
    return {"word": word.lower(), "synonyms": SYNONYMS.get(word.lower(), [])[:max]}


@api.route("GET", "/v1/random", seed=int)
def random_entry(seed=0):
    words = sorted(ENTRIES["en"])
    return _entry("en", words[seed % len(words)])


EXAMPLES = [
    ("GET", "/v1/entries/en/swift"),
    ("GET", "/v1/synonyms/bright", {"max": 2}),
]


def first_definition(word):
    """Look an English word up in the Wordnook dictionary and return its first definition, or None if the
    word is unknown or the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.wordnook.example/v1/entries/en/{word}", timeout=10)
        r.raise_for_status()
        return r.json()["meanings"][0]["definition"]
    except requests.RequestException:
        return None


def synonym_list(word, limit):
    """Get at most `limit` synonyms of an English word from the Wordnook dictionary. Return the list, or None
    if the request fails."""
    import json
    import urllib.error
    import urllib.parse
    import urllib.request

    url = f"https://api.wordnook.example/v1/synonyms/{urllib.parse.quote(word)}?max={limit}"
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read())["synonyms"]
    except urllib.error.HTTPError:
        return None


def parts_of_speech(lang, word):
    """List the parts of speech of a word's meanings (in order) in the Wordnook dictionary, for the language
    code lang. Return the list, or None if the request fails."""
    import requests

    try:
        r = requests.get(f"https://api.wordnook.example/v1/entries/{lang}/{word}", timeout=10)
        if r.status_code != 200:
            return None
        return [m["part_of_speech"] for m in r.json()["meanings"]]
    except requests.RequestException:
        return None


CASES = {
    "first_definition": [("harbor",), ("Quiet",), ("zebra",)],
    "synonym_list": [("swift", 2), ("quiet", 10), ("bright", 0)],
    "parts_of_speech": [("en", "swift"), ("es", "puerto"), ("fr", "port")],
}
