"""An LLM-as-judge grader: a language model says whether an answer matches the reference.

:func:`judge` asks a judge model, for each (item id, question, reference answer(s), answer),
whether the answer is correct, with the fixed prompt :data:`DEFAULT_JUDGE_PROMPT` (or yours),
and reads its reply strictly (:func:`parse_verdict`). It goes through the elicitation runner
and its :class:`~calibkit.stated.store.ReplyStore`: every reply is committed before it is read,
runs sharing a store share the work, and a rerun after a crash asks only what has no stored
reply. A key holds the provider, the judge model, the prompt's sha256, the settings' hash and an
item id ``"<id>#<h>"`` whose ``h`` hashes the text sent (so the answer judged, the question and
the references): a changed answer, prompt or judge model is judged anew, an unchanged one never
twice. Each verdict is a :class:`~calibkit.stated.grade.Grade` whose grader is
``"judge:<provider>/<model>:<prompt sha256[:12]>"``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import InputError
from .._json import parse_json
from ._questions import Asking, ask_texts, read_rows, render
from ._runner import Unparsed, Validated
from .elicit import PROVIDERS, prompt_hash
from .grade import Grade
from .items import Item
from .store import ReplyRecord, ReplyStore

__all__ = ["DEFAULT_JUDGE_PROMPT", "JudgeRun", "judge", "parse_verdict"]

DEFAULT_JUDGE_PROMPT = """\
You are grading the answer to a question against its reference answer(s).
The answer is correct when it means the same as one of the reference answers (wording, case
and formatting may differ). It is incorrect when it is wrong, incomplete, gives several
different answers, or does not answer the question.

Question: {question}
Reference answer(s): {gold}
Answer to grade: {answer}

Reply with a single JSON object and nothing else: {"correct": true} or {"correct": false}"""

#: one-word verdicts, after stripping whitespace, quotes, asterisks and one final period
_WORDS = {"correct": True, "true": True, "yes": True, "incorrect": False, "false": False}
_WORDS["no"] = False
_STRIP = " \t\r\n\"'*`"


def _unfence(text: str) -> str:
    t = text.strip()
    if t.startswith("```") and t.endswith("```") and len(t) >= 6:
        t = t[3:-3]
        first, _, rest = t.partition("\n")
        if first.strip().lower() in ("", "json"):
            t = rest if rest else first
    return t.strip()


def parse_verdict(text: str) -> tuple[bool | None, str | None]:
    """A judge's verdict, read strictly: ``(True|False, None)`` or ``(None, reason)``.

    Two forms are read, the whole reply being one of them (surrounding whitespace and one
    Markdown code fence, plain or ``json``, are dropped):

    - a JSON object with the key ``"correct"`` whose value is a JSON boolean (``true`` or
      ``false``; the string ``"true"`` is not one); other keys are allowed and ignored;
    - one word, case-insensitive, after stripping quotes, asterisks and one final period:
      ``correct``, ``true``, ``yes`` (True) or ``incorrect``, ``false``, ``no`` (False).

    Anything else (an empty reply, two words, "probably correct") is no verdict.

    Examples
    --------
    >>> parse_verdict('{"correct": true}'), parse_verdict("Incorrect.")
    ((True, None), (False, None))
    >>> parse_verdict('{"correct": "yes"}')
    (None, "'correct' is not true or false")
    >>> parse_verdict("It is probably correct")
    (None, 'not a verdict')
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_verdict: text must be a string, got {type(text).__name__}")
    t = _unfence(text)
    if not t:
        return None, "empty reply"
    if t.startswith("{"):
        try:
            doc = parse_json(t, what="judge reply")
        except InputError:
            return None, "not valid JSON"
        if not isinstance(doc, dict) or "correct" not in doc:
            return None, "no 'correct' key"
        v = doc["correct"]
        if not isinstance(v, bool):
            return None, "'correct' is not true or false"
        return v, None
    word = t.strip(_STRIP)
    word = word[:-1] if word.endswith(".") else word
    verdict = _WORDS.get(word.strip(_STRIP).casefold())
    if verdict is None:
        return None, "not a verdict"
    return verdict, None


def _validate(text: str, logprobs: Any, item: Item, source: str) -> Validated | Unparsed:
    verdict, reason = parse_verdict(text)
    if verdict is None:
        return Unparsed(str(reason), final=False)
    return ("correct" if verdict else "incorrect"), None, None


@dataclass
class JudgeRun:
    """A judge's verdicts, one :class:`Grade` per item (in the order given), and the run's
    counters (as :class:`~calibkit.stated.elicit.ElicitationRun`'s)."""

    provider: str
    model: str
    grader: str
    prompt: str
    prompt_hash: str
    settings: dict[str, Any]
    settings_hash: str
    item_ids: list[str]
    grades: list[Grade]
    replies: list[ReplyRecord]
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    reused: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        verdicts = Counter(
            {True: "correct", False: "incorrect", None: "undecided"}[g.correct] for g in self.grades
        )
        return (
            f"{self.grader} items={len(self.grades)} verdicts={dict(verdicts)} "
            f"calls={self.calls} reused={self.reused} "
            f"tokens in/out={self.input_tokens}/{self.output_tokens}"
        )


def _golds(gold: Any, item_id: str) -> list[str]:
    golds = [gold] if isinstance(gold, str) else gold
    if (
        not isinstance(golds, list | tuple)
        or not golds
        or not all(isinstance(g, str) for g in golds)
    ):
        raise InputError(
            f"judge: item {item_id!r}: gold must be a string or a non-empty list of strings, "
            f"got {gold!r:.60}."
        )
    return list(golds)


def judge(
    items_with_answers: Iterable[Any],
    *,
    provider: str,
    model: str,
    store: ReplyStore | str | Path,
    prompt: str = DEFAULT_JUDGE_PROMPT,
    concurrency: int = 4,
    base_url: str | None = None,
    api_key_env: str | None = None,
    temperature: float | None = 0.0,
    max_tokens: int = 64,
    max_retries: int = 0,
    transient_retries: int = 5,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    timeout: float = 60.0,
    replay: str | Path | ReplyStore | None = None,
    lease_s: float = 30.0,
) -> JudgeRun:
    """Ask ``model`` whether each answer is correct; store every reply before it is read.

    Parameters
    ----------
    items_with_answers : iterable
        Mappings with ``id``, ``question``, ``gold`` (a reference answer, or a list of
        acceptable ones) and ``answer`` (the answer to judge, a string), or
        ``(id, question, gold, answer)`` tuples.
    provider, model : str
        The judge: ``"openai"`` (any OpenAI-compatible server through ``base_url``),
        ``"anthropic"`` or ``"replay"`` (replies stored by another provider for the same judge
        model, prompt and settings, or a JSON-lines file keyed by the key's item id).
    store : ReplyStore or path
        The reply store; rerunning with it resumes and asks nothing twice.
    prompt : str
        The judge prompt, with ``{question}``, ``{gold}`` (the references joined by " | ")
        and ``{answer}`` (required); its sha256 is part of every key and of the grader name.
    max_retries : int
        Extra attempts after a reply :func:`parse_verdict` reads no verdict from (default 0:
        at temperature 0 the same reply would come); then the grade is undecided, its reason
        ``"unparsed: <why> (malformed reply after n attempts)"``.
    concurrency, base_url, api_key_env, temperature, max_tokens, transient_retries, \
backoff_base, backoff_max, timeout, lease_s
        As for :func:`~calibkit.stated.elicit.elicit`.

    Returns
    -------
    JudgeRun
        ``grades[i]`` is the verdict on the i-th item: ``correct`` True or False, or None with
        the reason (no verdict in the reply, a permanent error, retries used up).

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> item = {"id": "q1", "question": "Capital of France?", "gold": "Paris", "answer": "paris"}
    >>> from calibkit.stated._questions import key_id, render
    >>> text = render(DEFAULT_JUDGE_PROMPT, {"question": item["question"], "gold": "Paris",
    ...                                      "answer": "paris"})
    >>> line = {"item_id": key_id("q1", text), "text": '{"correct": true}'}
    >>> _ = (folder / "replies.jsonl").write_text(json.dumps(line))
    >>> run = judge([item], provider="replay", model="m", store=folder / "j.sqlite",
    ...             replay=folder / "replies.jsonl")
    >>> run.grades[0].correct, run.grades[0].grader == f"judge:replay/m:{run.prompt_hash[:12]}"
    (True, True)
    """
    if provider not in PROVIDERS:
        raise InputError(f"judge: provider must be one of {PROVIDERS}, got {provider!r}")
    if not isinstance(prompt, str) or "{answer}" not in prompt:
        raise InputError(
            "judge: the prompt must hold {answer} (the answer to judge), and should hold "
            "{question} and {gold}."
        )
    rows = read_rows(items_with_answers, ("id", "question", "gold", "answer"), where="judge")
    grader = f"judge:{provider}/{model}:{prompt_hash(prompt)[:12]}"
    t = None if temperature is None else float(temperature)
    settings: dict[str, Any] = {"task": "judge", "temperature": t, "max_tokens": int(max_tokens)}
    texts = []
    for row in rows:
        golds = _golds(row["gold"], row["id"])
        values = {"question": row["question"], "gold": " | ".join(golds), "answer": row["answer"]}
        texts.append((row["id"], row["question"], render(prompt, values)))
    how = Asking.of(
        locals(), temperature=t, max_tokens=int(max_tokens), logprobs=False, top_logprobs=0
    )
    asked = ask_texts(
        texts,
        prompt=prompt,
        settings=settings,
        store=store,
        how=how,
        source="judge",
        validate=_validate,
    )
    recs, counters = asked.records, asked.counters
    return JudgeRun(
        provider=provider,
        model=model,
        grader=grader,
        prompt=prompt,
        prompt_hash=asked.prompt_hash,
        settings=settings,
        settings_hash=asked.settings_hash,
        item_ids=[r["id"] for r in rows],
        grades=[_grade(r, grader) for r in recs],
        replies=[r for r in recs if r is not None],
        input_tokens=counters.input_tokens,
        output_tokens=counters.output_tokens,
        calls=counters.calls,
        reused=counters.reused,
        status_counts=dict(Counter("missing" if r is None else r.status for r in recs)),
    )


def _grade(rec: ReplyRecord | None, grader: str) -> Grade:
    if rec is None:
        return Grade(None, grader, reason="not asked (the run stopped first)")
    if rec.status == "ok":
        return Grade(rec.answer == "correct", grader)
    if rec.status == "failed":
        return Grade(None, grader, reason=rec.error or "unparsed")
    status = "transient_error" if rec.status == "pending" else rec.status
    return Grade(None, grader, reason=f"{status}: {rec.error}" if rec.error else status)
