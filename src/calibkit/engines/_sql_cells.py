"""The SQL that reads one column by the rules of :mod:`calibkit.io._rules`: a CSV cell's number
(the same pattern pyarrow applies for the memory and stream engines), TRUE/FALSE, missing and NaN
cells, and the counts of each problem, for DuckDB and Spark alike."""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import InputError
from ..io import rules


@dataclass(frozen=True)
class Dialect:
    """What differs between DuckDB's and Spark's SQL."""

    name: str
    quote_char: str
    param_char: str

    def quote(self, name: str) -> str:
        q = self.quote_char
        return q + name.replace(q, q + q) + q

    def param(self, name: str) -> str:
        """The marker of the named query parameter ``name`` (a value bound by the engine, never
        spliced into the SQL text; a marker may appear several times)."""
        return self.param_char + name


DUCKDB = Dialect("duckdb", '"', "$")
SPARK = Dialect("spark", "`", ":")


_INF = "CAST('Infinity' AS DOUBLE)"
_NAN = "CAST('NaN' AS DOUBLE)"


@dataclass(frozen=True)
class Column:
    """One column the plan reads, in the role it plays, with the SQL that reads it by the rules
    of :mod:`calibkit.io._rules`: ``kind`` is its type class ("number", "bool", "text", or
    "cell" for a CSV/TSV column read as text), ``index`` its place in the plan."""

    name: str
    role: str
    kind: str
    dialect: Dialect
    index: int
    #: Whether this is the plan's weight column (read as numbers, named so in messages).
    weight: bool = False

    @property
    def title(self) -> str:
        """How messages name the column: by its role, but plain "column" for a score."""
        if self.weight:
            return "weight column"
        if self.role == "compare":  # read in the order confidence, prediction, label
            return "prediction column" if self.index == 1 else "label column"
        return {"label": "label column", "outcome": "outcome column"}.get(self.role, "column")

    @property
    def q(self) -> str:
        return self.dialect.quote(self.name)

    @property
    def trimmed(self) -> str:
        return f"trim(BOTH ' ' FROM {self.q})"  # spaces only, as pyarrow's utf8_trim(" ")

    def _among(self, words: tuple[str, ...]) -> str:
        listed = ", ".join("'" + w + "'" for w in words)
        return f"lower({self.trimmed}) IN ({listed})"

    def _matches(self, expr: str) -> str:
        """Whether ``expr`` is a number by :data:`~calibkit.io._rules.NUMBER` (written without
        backslashes or quotes, so it needs no escaping in either dialect)."""
        if self.dialect.name == "duckdb":
            return f"regexp_full_match({expr}, '{rules.NUMBER}')"
        return f"({expr} RLIKE '{rules.NUMBER}')"

    @property
    def number(self) -> str:
        """The value as DOUBLE when it is a number (NULL otherwise): a CSV cell by the rules."""
        if self.kind == "cell":
            t = self.trimmed
            digits = f"CASE WHEN {t} LIKE '+%' THEN substr({t}, 2) ELSE {t} END"
            return (
                f"CASE WHEN {self._matches(t)} THEN CAST({digits} AS DOUBLE) "
                f"WHEN {self._among(rules.POSITIVE_INFINITY)} THEN {_INF} "
                f"WHEN {self._among(rules.NEGATIVE_INFINITY)} THEN -{_INF} END"
            )
        if self.kind == "bool":
            return f"CAST(CAST({self.q} AS INT) AS DOUBLE)"
        if self.kind == "number":
            return f"CAST({self.q} AS DOUBLE)"
        return "CAST(NULL AS DOUBLE)"

    @property
    def text(self) -> str:
        """The value as text, for the comparison of a prediction with a label."""
        if self.kind == "cell":
            return self.trimmed
        return self.q if self.kind == "text" else "CAST(NULL AS STRING)"

    @property
    def value(self) -> str:
        """The value as DOUBLE for a score, a label or an outcome (NULL where the cell is
        missing or not admitted; NaN where it is NaN)."""
        if self.kind == "cell":
            number = self.number.removesuffix(" END")
            words = ""
            if self.role in rules.ROLES_WITH_WORDS:
                words = (
                    f" WHEN {self._among(rules.TRUE)} THEN 1.0e0"
                    f" WHEN {self._among(rules.FALSE)} THEN 0.0e0"
                )
            return f"{number}{words} WHEN {self._among(rules.NAN)} THEN {_NAN} END"
        if self.kind == "text":  # an outcome written 1/0, TRUE/FALSE
            return (
                f"CASE lower(trim({self.q})) WHEN 'true' THEN 1.0e0 WHEN '1' THEN 1.0e0 "
                "WHEN 'false' THEN 0.0e0 WHEN '0' THEN 0.0e0 END"
            )
        return self.number

    def flags(self) -> dict[str, str]:
        """0/1 expressions of this column's problems: m (missing), n (NaN), x (text that is
        not admitted), h (text, for a compared CSV column)."""
        missing = f"{self.q} IS NULL"
        if self.kind == "cell":
            missing += f" OR {self._among(rules.MISSING)}"
        out = {"m": missing}
        if self.kind == "cell":
            out["n"] = self._among(rules.NAN)
            known = f"{missing} OR {out['n']} OR ({self.number}) IS NOT NULL"
            if self.role in rules.ROLES_WITH_WORDS:
                known += f" OR {self._among(rules.TRUE + rules.FALSE)}"
            if self.role == "compare":
                out["h"] = f"NOT ({known})"
            else:
                out["x"] = f"NOT ({known})"
        elif self.kind == "number":
            out["n"] = f"isnan({self.number})"
        elif self.kind == "text" and self.role == "outcome":
            out["x"] = f"{self.q} IS NOT NULL AND ({self.value}) IS NULL"
        return {k: f"CASE WHEN {v} THEN 1 ELSE 0 END" for k, v in out.items()}


def mixed(text: Column, number: Column, where: str) -> InputError:
    """The prediction and the label written differently (text and numbers)."""
    return InputError(
        f"{where}: column {text.name!r} holds text but {number.name!r} holds numbers; "
        "prediction and label must be written the same way to be compared."
    )
