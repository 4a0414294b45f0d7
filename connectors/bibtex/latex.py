"""LaTeX markup to plain Unicode text, and plain text back to BibTeX-safe LaTeX.

:func:`latex_to_text` reads the LaTeX that BibTeX fields contain (accents in all their
spellings, ``\\ss``-style letters, ``--``/``~``/ligatures, font commands, inline math) and
returns readable Unicode with whitespace collapsed and protective braces removed:
``{\\"o}`` and ``\\"{o}`` give ``ö``; ``$\\alpha$-divergence`` gives ``α-divergence``;
``$256 \\times 256$`` gives ``256 × 256``. A command it does not know keeps its name
without the backslash (``\\foo`` → ``foo``) rather than vanishing.

:func:`escape_latex` is the inverse used by the writer: it escapes the characters that
are special to (La)TeX or break BibTeX's brace counting, and leaves other Unicode as is.

BibTeX name lists: :func:`parse_names` turns ``Last, First and {Some Institute}`` into display
names (``First Last``); :func:`format_name` writes a display name back in ``Last, First``
form (institutions, recognised by :func:`is_institution`, in protective braces).
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["escape_latex", "format_name", "is_institution", "latex_to_text", "parse_names"]

# Accent commands -> combining character.
_ACCENTS = {
    "`": "\u0300", "'": "\u0301", "^": "\u0302", "~": "\u0303", "=": "\u0304",
    ".": "\u0307", '"': "\u0308", "u": "\u0306", "r": "\u030a", "H": "\u030b",
    "v": "\u030c", "d": "\u0323", "c": "\u0327", "k": "\u0328", "b": "\u0331", "t": "\u0361",
}
# Text-mode commands that stand for characters; like TeX, spaces after them are eaten.
_TEXT_SYMBOLS = {
    "ss": "ß", "SS": "SS", "o": "ø", "O": "Ø", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ",
    "aa": "å", "AA": "Å", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ", "dh": "ð", "DH": "Ð",
    "th": "þ", "TH": "Þ", "ng": "ŋ", "NG": "Ŋ", "dj": "đ", "DJ": "Đ",
    "textendash": "–", "textemdash": "—", "ldots": "…", "dots": "…", "textellipsis": "…",
    "copyright": "©", "textcopyright": "©", "textregistered": "®", "texttrademark": "™",
    "pounds": "£", "textsterling": "£", "euro": "€", "texteuro": "€", "S": "§", "P": "¶",
    "dag": "†", "ddag": "‡", "textdegree": "°", "textquoteleft": "‘", "textquoteright": "’",
    "textquotedblleft": "“", "textquotedblright": "”", "guillemotleft": "«",
    "guillemotright": "»", "textasciitilde": "~", "textasciicircum": "^",
    "textbackslash": "\\", "textbraceleft": "{", "textbraceright": "}", "textunderscore": "_",
    "textbar": "|", "textless": "<", "textgreater": ">", "textbullet": "•", "textdollar": "$",
    "textpercent": "%", "textampersand": "&", "textperiodcentered": "·", "texttimes": "×",
    "LaTeX": "LaTeX", "LaTeXe": "LaTeX2e", "TeX": "TeX", "BibTeX": "BibTeX", "hyphen": "-",
    "slash": "/", "textslash": "/", "nobreakspace": " ", "space": " ", "quad": " ",
    "qquad": " ", "enspace": " ", "thinspace": " ", "newline": " ", "par": " ", "break": " ",
}
# Math commands -> characters; a space written after them is kept (``a \leq b``).
_MATH_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "varpi": "ϖ", "rho": "ρ",
    "varrho": "ϱ", "sigma": "σ", "varsigma": "ς", "tau": "τ", "upsilon": "υ", "phi": "φ",
    "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ",
    "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Upsilon": "Υ",
    "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "times": "×", "cdot": "·", "div": "÷", "pm": "±", "mp": "∓", "leq": "≤", "le": "≤",
    "geq": "≥", "ge": "≥", "neq": "≠", "ne": "≠", "approx": "≈", "sim": "∼", "simeq": "≃",
    "equiv": "≡", "propto": "∝", "infty": "∞", "partial": "∂", "nabla": "∇", "sum": "∑",
    "prod": "∏", "int": "∫", "sqrt": "√", "in": "∈", "notin": "∉", "subset": "⊂",
    "subseteq": "⊆", "supset": "⊃", "cup": "∪", "cap": "∩", "forall": "∀", "exists": "∃",
    "neg": "¬", "wedge": "∧", "land": "∧", "vee": "∨", "lor": "∨", "to": "→",
    "rightarrow": "→", "leftarrow": "←", "Rightarrow": "⇒", "Leftarrow": "⇐",
    "leftrightarrow": "↔", "mapsto": "↦", "ell": "ℓ", "hbar": "ℏ", "emptyset": "∅",
    "varnothing": "∅", "circ": "∘", "star": "⋆", "ast": "∗", "langle": "⟨", "rangle": "⟩",
    "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊", "rfloor": "⌋", "mid": "|", "vert": "|",
    "Vert": "‖", "cdots": "…", "vdots": "⋮", "prime": "′", "top": "⊤", "perp": "⊥",
    "oplus": "⊕", "otimes": "⊗", "odot": "⊙", "ll": "≪", "gg": "≫", "degree": "°",
    "setminus": "∖", "colon": ":", "lbrace": "{", "rbrace": "}",
}
# Commands whose single argument is kept as text (font, case and box commands).
_KEEP_ARGUMENT = {
    "emph", "textbf", "textit", "textsc", "texttt", "textrm", "textsf", "textsl", "textup",
    "textmd", "textnormal", "mbox", "hbox", "text", "mathrm", "mathbf", "mathit", "mathsf",
    "mathtt", "mathcal", "mathfrak", "mathscr", "boldsymbol", "bm", "operatorname",
    "ensuremath", "underline", "uline", "textsuperscript", "textsubscript", "NoCaseChange",
    "nocase", "MakeUppercase", "MakeLowercase", "uppercase", "lowercase", "mkbibemph",
    "mkbibitalic", "mkbibbold", "bibstring", "textcolor", "overline", "hat", "bar", "vec",
    "tilde", "widehat", "widetilde", "dot", "ddot", "mathnormal",
}
_DOUBLE_STRUCK = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ", "1": "𝟙"}
_QUOTE_ARGUMENT = {"enquote", "mkbibquote", "textquote"}
_VERBATIM_ARGUMENT = {"url", "path", "doi", "nolinkurl"}
# Commands whose argument is dropped, and argument-less commands that produce nothing.
_DROP_ARGUMENT = {"cite", "citep", "citet", "citealp", "ref", "eqref", "label", "index",
                  "hspace", "vspace", "noopsort", "SortNoop", "footnote", "tag"}
_DROP = {
    "em", "bf", "it", "sc", "rm", "tt", "sf", "sl", "up", "md", "normalfont", "tiny",
    "scriptsize", "footnotesize", "small", "normalsize", "large", "Large", "LARGE", "huge",
    "Huge", "bfseries", "itshape", "scshape", "upshape", "mdseries", "slshape", "rmfamily",
    "sffamily", "ttfamily", "protect", "relax", "left", "right", "big", "Big", "bigg", "Bigg",
    "bigl", "bigr", "Bigl", "Bigr", "displaystyle", "textstyle", "limits", "nolimits",
    "allowbreak", "nobreak", "noindent", "unskip", "xspace", "null", "mathstrut", "ignorespaces",
}
_CONTROL_SYMBOLS = {
    "\\": " ", ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "-": "", "/": "", "@": "",
    "&": "&", "%": "%", "$": "$", "#": "#", "_": "_", "{": "{", "}": "}", "|": "‖",
    "(": "", ")": "", "[": "", "]": "",
}
_LETTERS = re.compile(r"[A-Za-z]+")
_PLAIN_RUN = re.compile(r"[^\\{}$~`'-]+")
_LIGATURES = (("---", "—"), ("--", "–"), ("``", "“"), ("''", "”"), ("~", " "))


class _Reader:
    """A recursive-descent reader over one LaTeX string."""

    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0

    def read(self, stop_at_brace: bool = False) -> str:
        out: list[str] = []
        s = self.s
        while self.i < len(s):
            plain = _PLAIN_RUN.match(s, self.i)
            if plain:
                out.append(plain.group())
                self.i = plain.end()
                continue
            ch = s[self.i]
            if ch == "}":
                if stop_at_brace:
                    self.i += 1
                    return "".join(out)
                self.i += 1  # stray closing brace: drop it
            elif ch == "{":
                self.i += 1
                out.append(self.read(stop_at_brace=True))
            elif ch == "\\":
                out.append(self._command(out))
            elif ch == "$":
                self.i += 1
            else:
                for latex, text in _LIGATURES:
                    if s.startswith(latex, self.i):
                        out.append(text)
                        self.i += len(latex)
                        break
                else:
                    out.append(ch)
                    self.i += 1
        return "".join(out)

    def _skip_spaces(self) -> bool:
        start = self.i
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1
        return self.i > start

    def _raw_group(self) -> str:
        """The verbatim text of a following ``{...}`` group (or '' when there is none)."""
        self._skip_spaces()
        if self.i >= len(self.s) or self.s[self.i] != "{":
            return ""
        depth, start = 0, self.i
        while self.i < len(self.s):
            ch = self.s[self.i]
            depth += (ch == "{") - (ch == "}")
            self.i += 1
            if depth == 0:
                break
        return self.s[start + 1:self.i - 1]

    def _argument(self) -> str:
        """The converted text of the next argument: a group, a command or one character."""
        self._skip_spaces()
        if self.i >= len(self.s):
            return ""
        ch = self.s[self.i]
        if ch == "{":
            self.i += 1
            return self.read(stop_at_brace=True)
        if ch == "\\":
            return self._command([])
        if ch == "}":
            return ""
        self.i += 1
        return ch

    def _command(self, out: list[str]) -> str:
        s = self.s
        self.i += 1  # the backslash
        if self.i >= len(s):
            return ""
        match = _LETTERS.match(s, self.i)
        if not match:  # control symbol: \" \' \& \% ...
            ch = s[self.i]
            self.i += 1
            if ch in _ACCENTS:
                return _accent(self._argument(), ch)
            return _CONTROL_SYMBOLS.get(ch, ch)
        name = match.group()
        self.i = match.end()
        if name in _ACCENTS:
            return _accent(self._argument(), name)
        if name in _TEXT_SYMBOLS or name in _DROP:
            self._skip_spaces()
            return _TEXT_SYMBOLS.get(name, "")
        if name in _KEEP_ARGUMENT:
            return self._argument()
        if name == "mathbb":
            return "".join(_DOUBLE_STRUCK.get(ch, ch) for ch in self._argument())
        if name in _QUOTE_ARGUMENT:
            return f"“{self._argument()}”"
        if name in _VERBATIM_ARGUMENT:
            return self._raw_group()
        if name == "href":
            self._raw_group()
            return self._argument()
        if name in _DROP_ARGUMENT:
            self._raw_group()
            return ""
        if name == "frac":
            return f"{self._argument()}/{self._argument()}"
        spaced = self._skip_spaces()
        if name in _MATH_SYMBOLS:
            return _MATH_SYMBOLS[name] + (" " if spaced else "")
        # Unknown command: keep its name, separated from the surrounding words.
        before = " " if out and out[-1][-1:].isalnum() else ""
        after = " " if spaced or (self.i < len(s) and (s[self.i] == "{" or s[self.i].isalnum())) else ""
        return before + name + after


def _accent(base: str, accent: str) -> str:
    if not base:
        return {"~": "~", "^": "^", "'": "'", "`": "`", '"': '"'}.get(accent, "")
    first = {"ı": "i", "ȷ": "j"}.get(base[0], base[0])
    return unicodedata.normalize("NFC", first + _ACCENTS[accent]) + base[1:]


def latex_to_text(value: str) -> str:
    """Plain Unicode text from a LaTeX/BibTeX field value (whitespace collapsed)."""
    if not value:
        return ""
    if any(ch in value for ch in "\\{}$~-`'"):
        value = _Reader(value).read()
    return " ".join(unicodedata.normalize("NFC", value).split())


_ESCAPES = {
    "\\": r"\textbackslash{}", "{": r"\textbraceleft{}", "}": r"\textbraceright{}",
    "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}
_ESCAPE_RE = re.compile("[" + re.escape("".join(_ESCAPES)) + "]")


def escape_latex(text: str) -> str:
    """Escape plain text for a braced BibTeX value (non-ASCII is left as UTF-8).

    Braces become ``\\textbraceleft{}``/``\\textbraceright{}`` rather than ``\\{``/``\\}``
    because BibTeX counts escaped braces too, so a lone ``\\{`` would unbalance the value.
    """
    return _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], " ".join(text.split()))


# --- BibTeX name lists ---------------------------------------------------------------------

_ORG_WORDS = frozenset(
    "research team group consortium collaboration project committee association society "
    "foundation institute university laboratory lab labs inc ltd corporation corp company "
    "organization organisation council agency department center centre network initiative "
    "alliance community contributors developers working board ministry commission federation "
    "openai deepmind google microsoft meta nvidia ai".split())


def _split_top_level(text: str, separator: re.Pattern) -> list[str]:
    """Split at matches of ``separator`` that are outside braces."""
    depth, depths = 0, []
    for ch in text:
        depths.append(depth)
        depth += (ch == "{") - (ch == "}")
    parts, last = [], 0
    for match in separator.finditer(text):
        if depths[match.start()] == 0 and match.start() >= last:
            parts.append(text[last:match.start()])
            last = match.end()
    parts.append(text[last:])
    return parts


def parse_names(value: str) -> list[str]:
    """Display names ("First Last Jr") from a BibTeX name list; ``others`` is dropped."""
    names = []
    for part in _split_top_level(value, re.compile(r"\s+and\s+", re.I)):
        if not part.strip() or part.strip().lower() == "others":
            continue
        pieces = [latex_to_text(p) for p in _split_top_level(part, re.compile(","))]
        if len(pieces) >= 3:
            pieces = [" ".join(pieces[2:]), pieces[0], pieces[1]]
        elif len(pieces) == 2:
            pieces = [pieces[1], pieces[0]]
        name = " ".join(" ".join(pieces).split())
        if name:
            names.append(name)
    return names


def is_institution(name: str) -> bool:
    """Whether a display name is an institution ("Google Research"), not a person."""
    tokens = re.findall(r"[a-z]+", name.lower())
    return len(name.split()) > 4 or any(ch.isdigit() or ch in "&@" for ch in name) or \
        any(t in _ORG_WORDS or t == "and" for t in tokens)


def format_name(name: str) -> str:
    """A display name in BibTeX's safest "Last, First" form; institutions in braces."""
    if is_institution(name):
        return "{" + escape_latex(name) + "}"
    if re.search(r",\s", name):  # already "Last, First"
        return escape_latex(name)
    words = [f"{{{w}}}" if "," in w else w for w in escape_latex(name).split()]
    if len(words) < 2:
        return " ".join(words)
    has_suffix = len(words) > 2 and words[-1].rstrip(".").lower() in ("jr", "sr", "ii", "iii", "iv")
    suffix = words.pop() if has_suffix else ""
    last = [words.pop()]
    while len(words) > 1 and words[-1][:1].islower():
        last.insert(0, words.pop())
    return ", ".join([" ".join(last)] + ([suffix] if suffix else []) + [" ".join(words)])
