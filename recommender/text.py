"""Text normalisation shared by identity matching, features and connectors.

Everything here is pure string work: no I/O, no third-party state.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

# scikit-learn's English stop-word list (sklearn.feature_extraction.text.ENGLISH_STOP_WORDS,
# BSD-3-Clause), held here so that counting words needs no scikit-learn import; a test checks
# it still equals scikit-learn's, and an index records the list it was built with.
ENGLISH_STOP_WORDS = frozenset("""
    a about above across after afterwards again against all almost alone along already also although
    always am among amongst amoungst amount an and another any anyhow anyone anything anyway
    anywhere are around as at back be became because become becomes becoming been before beforehand
    behind being below beside besides between beyond bill both bottom but by call can cannot cant co
    con could couldnt cry de describe detail do done down due during each eg eight either eleven
    else elsewhere empty enough etc even ever every everyone everything everywhere except few
    fifteen fifty fill find fire first five for former formerly forty found four from front full
    further get give go had has hasnt have he hence her here hereafter hereby herein hereupon hers
    herself him himself his how however hundred i ie if in inc indeed interest into is it its itself
    keep last latter latterly least less ltd made many may me meanwhile might mill mine more
    moreover most mostly move much must my myself name namely neither never nevertheless next nine
    no nobody none noone nor not nothing now nowhere of off often on once one only onto or other
    others otherwise our ours ourselves out over own part per perhaps please put rather re same see
    seem seemed seeming seems serious several she should show side since sincere six sixty so some
    somehow someone something sometime sometimes somewhere still such system take ten than that the
    their them themselves then thence there thereafter thereby therefore therein thereupon these
    they thick thin third this those though three through throughout thru thus to together too top
    toward towards twelve twenty two un under until up upon us very via was we well were what
    whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever
    whether which while whither who whoever whole whom whose why will with within without would yet
    you your yours yourself yourselves
""".split())
# Words every abstract uses whatever its topic; as features they only add noise, and as
# explanations ("new state", "propose") they explain nothing.
ACADEMIC_STOP_WORDS = frozenset("""
    abstract achieve achieves achieved approach approaches art based benchmark benchmarks demonstrate
    demonstrates existing experiments extensive furthermore however introduce introduces
    method methods new novel outperform outperforms paper performance present presents propose
    proposed proposes prior recent recently result results set show shows significantly state study
    superior task tasks use used uses using various wide widely work works
""".split())

STOP_WORDS = sorted(ENGLISH_STOP_WORDS | ACADEMIC_STOP_WORDS)

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_DOI_PREFIX_RE = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_DOI_RE = re.compile(r"\b(10\.\d{4,9}/\S+)", re.IGNORECASE)
# New-style (2007+) and old-style (hep-th/9901001) arXiv identifiers, with an optional version.
_ARXIV_NEW_RE = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
_ARXIV_OLD_RE = re.compile(r"\b([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?\b")
_ARXIV_CONTEXT_RE = re.compile(r"arxiv", re.IGNORECASE)


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")


def strip_accents(text: str) -> str:
    """Fold accents so that "Schölkopf" and "Scholkopf" compare equal."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    # Only non-ASCII characters can be combining marks: test those, not every character.
    return _NON_ASCII_RE.sub(lambda match: "" if unicodedata.combining(match.group()) else match.group(), decomposed)


class _NotAlphanumeric(dict):
    """A ``str.translate`` table: every character that is no letter or digit (``[\\W_]``) to a
    space, decided per character the first time it is seen."""

    def __missing__(self, code: int):
        value = code if chr(code).isalnum() else 32
        self[code] = value
        return value


_SPACE_FOR_NOT_ALPHANUMERIC = _NotAlphanumeric()


def words(text: str) -> list[str]:
    """Lower-cased, accent-folded word tokens (letters and digits).

    ``_WORD_RE.findall`` of the folded text: the runs of characters that ``[^\\W_]`` (the
    regular expression's letters and digits: ``str.isalnum``) matches; found by ``translate``
    and ``split``, which is several times faster (every paper's identity keys go through here)."""
    return strip_accents(text).lower().translate(_SPACE_FOR_NOT_ALPHANUMERIC).split()


@lru_cache(maxsize=1 << 16)
def normalize_title(title: str) -> str:
    """Canonical form of a title for identity matching.

    Case, accents, punctuation, LaTeX braces and spacing are ignored:
    ``"{GeoFlow}: Geometric Flows!"`` and ``"geoflow geometric flows"`` agree.
    """
    return " ".join(words(title))


# ASCII letters and digits kept, every other byte a space: :func:`words` of an ASCII text, on bytes.
_ASCII_WORD_BYTES = bytes(code if chr(code).isalnum() and code < 128 else 32 for code in range(256))


@lru_cache(maxsize=1 << 16)
def abstract_fingerprint(abstract: str) -> str:
    """A short, stable hash of an abstract's words (robust to spacing and punctuation): the
    SHA-1 of ``" ".join(words(abstract))``. An ASCII abstract (most) is done on its bytes, the
    same words 3x faster (every paper of a large collection has its fingerprint taken)."""
    if abstract.isascii():
        canonical = b" ".join(abstract.encode("ascii").lower().translate(_ASCII_WORD_BYTES).split())
    else:
        canonical = " ".join(words(abstract)).encode("utf-8")
    return hashlib.sha1(canonical).hexdigest()[:16]


def normalize_doi(value: str | None) -> str:
    """Bare lower-case DOI (``10.1234/abc``) from a DOI, ``doi:`` string or doi.org URL; '' if none."""
    if not value:
        return ""
    value = _DOI_PREFIX_RE.sub("", value.strip())
    match = _DOI_RE.search(value)
    if not match:
        return ""
    return match.group(1).rstrip(".,;)}]").lower()


def find_arxiv_id(*values: str | None) -> str:
    """The first arXiv identifier (without version) found in the given strings; '' if none.

    New-style identifiers (``2006.11239``) are accepted anywhere; old-style ones
    (``hep-th/9901001``) only in a string that mentions arXiv, to avoid false hits.
    """
    for value in values:
        if not value:
            continue
        match = _ARXIV_NEW_RE.search(value)
        if match and (_ARXIV_CONTEXT_RE.search(value) or re.fullmatch(r"\s*(?:\d{4}\.\d{4,5})(?:v\d+)?\s*", value)):
            return match.group(1)
        if _ARXIV_CONTEXT_RE.search(value):
            old = _ARXIV_OLD_RE.search(value)
            if old:
                return old.group(1)
    return ""


def surname(author: str) -> str:
    """Normalised family name of an author written "First Last" or "Last, First"."""
    author = author.strip()
    if not author:
        return ""
    if "," in author:
        family = author.split(",", 1)[0]
    else:
        parts = author.split()
        family = parts[-1] if parts else ""
    return " ".join(words(family))


def truncate(text: str, limit: int) -> str:
    """Shorten ``text`` to at most ``limit`` characters at a word boundary, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if text[limit - 1] != " ":  # cut inside a word: drop the partial word
        cut = cut.rsplit(" ", 1)[0]
    cut = cut.rstrip(" ,;:-")
    return cut + "…"


# --- Display titles for papers listed without one -------------------------------------------

_INTRO_VERB_RE = re.compile(
    r"\b(?:we|this (?:paper|work)|our (?:paper|work))\s+(?:\w+\s+)?"
    r"(?:propose|introduce|present|develop|design|put forward)s?\b\s*",
    re.IGNORECASE,
)
_NAMED_RE = re.compile(r"\b(?:named|called|dubbed|termed(?: as)?|coined)\s+", re.IGNORECASE)
# A method name: one token with a capital after its first character, or a digit beside
# letters (GeoFlow, PoE-Bridge, CDLM, Q-Sched, S(H)NAP, LaViDa-R1).
_NAME_TOKEN = r"[A-Za-z0-9][A-Za-z0-9\-\u2010\u2011()'.]*"
_LEADING_FILLER_RE = re.compile(
    r"^(?:(?:a|an|the|two|three|our|new|novel)\b[\s,]*)+",
    re.IGNORECASE,
)
_TITLE_WORD = r"[A-Z][\w\-\u2010\u2011]*"
_TITLE_WORD_OR_LINK = rf"(?:{_TITLE_WORD}|of|the|for|and|via|with|in|to|on)"
_EXPANSION_THEN_ACRONYM_RE = re.compile(
    rf"^({_TITLE_WORD}\s+(?:{_TITLE_WORD_OR_LINK}\s+){{0,6}}{_TITLE_WORD})\s*\((" + _NAME_TOKEN + r")\)"
)
_NAME_THEN_EXPANSION_RE = re.compile(rf"^({_NAME_TOKEN})\s*\(((?:{_TITLE_WORD}[\s]*){{2,9}})\)")
_TITLE_PHRASE_THEN_APPOSITION_RE = re.compile(rf"^((?:{_TITLE_WORD}\s+){{0,3}}{_TITLE_WORD}),\s+(?:a|an|the)\b")
_APPOSITION_NAME_RE = re.compile(rf"^[^,]{{0,40}},\s*({_NAME_TOKEN}),")
_CLAUSE_END_RE = re.compile(r"[,;:.!?]|\s(?:which|while|but|whereby)\s")
_PARENTHETICAL_RE = re.compile(r"\s*\([^()]*\)")
MAX_DERIVED_TITLE = 72


def _is_method_name(token: str) -> bool:
    letters = [ch for ch in token if ch.isalpha()]
    if len(token) < 3 or not letters:
        return False
    inner_capitals = sum(ch.isupper() for ch in token[1:])
    has_digit = any(ch.isdigit() for ch in token)
    return inner_capitals >= 1 or (has_digit and token[0].isupper())


def _strip_token(token: str) -> str:
    token = token.rstrip(".,;:'")
    if token.count("(") != token.count(")"):
        token = token.rstrip(")")
    return token


def _name_at(text: str) -> str:
    """A method name at the start of ``text`` ("GeoFlow, a ..." / "CDLM (Consistent ...)"), or ''."""
    text = _LEADING_FILLER_RE.sub("", text)
    match = _EXPANSION_THEN_ACRONYM_RE.match(text)
    if match and _is_method_name(_strip_token(match.group(2))):
        return f"{_strip_token(match.group(2))}: {match.group(1)}"
    match = _NAME_THEN_EXPANSION_RE.match(text)
    if match and _is_method_name(match.group(1)):
        return f"{match.group(1)}: {' '.join(match.group(2).split())}"
    first = _strip_token(text.split(maxsplit=1)[0]) if text.split() else ""
    if _is_method_name(first):
        return first
    match = _TITLE_PHRASE_THEN_APPOSITION_RE.match(text)
    if match:
        return match.group(1)
    match = _APPOSITION_NAME_RE.match(text)
    if match and _is_method_name(_strip_token(match.group(1))):
        return _strip_token(match.group(1))
    return ""


def _clause(text: str) -> str:
    text = _PARENTHETICAL_RE.sub("", text)
    match = _CLAUSE_END_RE.search(text)
    clause = text[: match.start()] if match else text
    clause = _LEADING_FILLER_RE.sub("", clause.strip())
    return clause[:1].upper() + clause[1:] if clause else ""


def derive_title(abstract: str) -> str:
    """A short display title for a paper known only by its abstract.

    In order of preference: the name of the method the abstract introduces ("we propose
    PoE-Bridge, ..." -> ``"PoE-Bridge"``, "Esoteric Language Models (Eso-LMs)" ->
    ``"Eso-LMs: Esoteric Language Models"``); the phrase naming the contribution ("we propose
    a novel variable-length tokenizer that ..." -> ``"Variable-length tokenizer that ..."``);
    the abstract's first clause. At most :data:`MAX_DERIVED_TITLE` characters.
    """
    text = " ".join(abstract.split())
    if not text:
        return ""
    contribution = ""
    for regex in (_NAMED_RE, _INTRO_VERB_RE):
        for match in regex.finditer(text):
            tail = text[match.end():]
            name = _name_at(tail)
            if name:
                return truncate(name, MAX_DERIVED_TITLE)
            if regex is _INTRO_VERB_RE and not contribution:
                contribution = _clause(tail)
    if len(contribution.split()) >= 3:
        return truncate(contribution, MAX_DERIVED_TITLE)
    return truncate(_clause(text), MAX_DERIVED_TITLE)
