"""The HTML report: self-contained (no URL, no script), well-formed, atomic, and right in a real
headless Chromium.

The browser test drives Debian's ``chromium`` over the Chrome DevTools Protocol through
``--remote-debugging-pipe``: commands go to the browser on file descriptor 3 and replies come
back on descriptor 4, each a JSON message ended by a NUL byte. That needs only the standard
library (no websocket, no port, no driver package). The test loads a control page first (a
broken image and a console error) to prove the checks can fail, then the report with the
network emulated offline, and checks that every image decoded to a non-zero natural size, that
nothing was logged as an error, that nothing was requested but the file itself and its
``data:`` images, and saves a full-page screenshot under the test's temporary folder.

.ci/run installs Chromium, so the browser test fails (it does not skip) where the browser is
missing; set ``CALIBKIT_SKIP_BROWSER=1`` to skip it on a machine without one.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import calibkit as ck
from calibkit.decide.decision_report import decision_report
from calibkit.report.html import render_report, write_report

# ----------------------------------------------------------------------------- data


def _logits(n: int, seed: int, n_classes: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident logits: the labels follow softmax(z / 2.5)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 3, (n, n_classes))
    p = ck.softmax(z / 2.5)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return z, np.minimum(y, n_classes - 1)


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    z, y = _logits(3000, seed=1)
    audit = ck.audit(z, y, from_logits=True, n_boot=100, n_sims=100)
    ledger = ck.compare_calibration(ck.TemperatureScaling(), z, y, n_sims=100)
    cal, held = ck.stratified_split(y, calibration_fraction=0.5, seed=0)
    before = ck.audit(z[held], y[held], from_logits=True, n_boot=50, n_sims=50)
    after_p = ledger.calibrator.predict_proba(z[held])
    after = ck.audit(after_p, y[held], n_boot=50, n_sims=50)
    policy = decision_report(z[:1500], y[:1500], z[1500:], y[1500:], l_wrong=10, l_defer=1)
    record = {
        "$schema": "https://example.org/calibration-record.schema.json",
        "model": {"name": "toy <model> & co", "card": "http://example.org/card"},
        "audit": audit.to_dict(),
    }
    return {
        "audit": audit,
        "ledger": ledger,
        "policy": policy,
        "record": record,
        "before": before,
        "after": after,
    }


@pytest.fixture(scope="module")
def report(results, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    return write_report(path, **results)


# ----------------------------------------------------------------------------- parsing

VOID = {"meta", "img", "br", "hr", "link", "input", "col", "area", "base", "wbr", "source"}


class Page(HTMLParser):
    """The parts of a report the tests read; raises on a misnested or unclosed element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: dict[str, list[list[str]]] = {}
        self.text: dict[str, str] = {}  # text of elements by id, and of the title
        self._table: str | None = None
        self._in_body = False
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._capture: list[tuple[str, str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag not in VOID:
            self.stack.append(tag)
        ident = attributes.get("id")
        if tag == "title" or ident:
            self._capture.append((tag, ident or tag, []))
        if tag == "table":
            self._table = ident or f"table{len(self.rows)}"
            self.rows[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if self._capture and self._capture[-1][0] == tag:
            _, key, parts = self._capture.pop()
            self.text[key] = "".join(parts)
        if tag == "td" and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.rows[self._table].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        for _, _, parts in self._capture:
            parts.append(data)


def parse(text: str) -> Page:
    page = Page()
    page.feed(text)
    page.close()
    assert page.stack == [], f"unclosed elements: {page.stack}"
    return page


# ----------------------------------------------------------------------------- no URL

#: XML namespace names are identifiers, never fetched: the only "http://" an inline SVG may hold.
NAMESPACES = re.compile(
    r'\sxmlns(?::[A-Za-z][\w.-]*)?="http://www\.w3\.org/'
    r'(?:2000/svg|1999/xlink|1999/xhtml|XML/1998/namespace)"'
)


def test_the_file_holds_no_url_but_namespace_names(report):
    text = report.read_text(encoding="utf-8")
    rest = NAMESPACES.sub("", text)
    assert re.search(r"https?://", rest, flags=re.IGNORECASE) is None
    assert "//" not in re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", rest).replace(
        "&#58;//", ""
    )  # not even a protocol-relative //host reference


def test_every_reference_is_inline_and_nothing_runs(report):
    page = parse(report.read_text(encoding="utf-8"))
    for tag, attrs in page.tags:
        assert tag not in {"script", "link", "iframe", "object", "embed", "base"}, tag
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if "src" in attrs:
            assert (attrs["src"] or "").startswith("data:image/png;base64,")
        if "href" in attrs:
            assert (attrs["href"] or "").startswith("#")
    style = report.read_text(encoding="utf-8").split("</style>")[0]
    assert "@import" not in style and "url(" not in style and "@font-face" not in style


def test_a_url_in_user_text_reads_the_same_but_is_not_in_the_file(tmp_path, results):
    path = write_report(
        tmp_path / "r.html", audit=results["audit"], title="Model from https://example.org/m"
    )
    text = path.read_text(encoding="utf-8")
    assert "https://" not in text
    assert parse(text).text["title"] == "Model from https://example.org/m"


# ----------------------------------------------------------------------------- structure


def test_it_parses_with_one_row_per_bin_and_every_section(report, results):
    audit = results["audit"]
    page = parse(report.read_text(encoding="utf-8"))
    bins = page.rows["reliability-table"]
    assert len(bins) == audit.n_bins == len(audit.table.rows)
    assert [int(r[1].replace(",", "")) for r in bins] == audit.table.count.tolist()
    assert [r[0] for r in bins] == audit.table.bin_labels()
    full = [r for r in bins if r[1] != "0"]
    assert all(re.fullmatch(r"\[0\.\d{4}, [01]\.\d{4}\]", r[-1]) for r in full)  # intervals
    metrics = page.rows["metrics-table"]
    assert [(r[0], r[1], r[2]) for r in metrics] == [
        (name.strip(), value, note) for name, value, note in audit.metric_rows()
    ]
    assert audit.verdict() in page.text["summary"]
    assert len(page.rows["ledger-table"]) == len(results["ledger"].table_rows())
    assert len(page.rows["policy-table"]) == len(results["policy"].rows)
    binning = page.text["binning"]
    assert "M (bins)15" in binning and "right-closed" in binning and "uniform" in binning
    assert ", ".join(f"{e:.6g}" for e in audit.table.edges) in binning
    images = [a for t, a in page.tags if t == "img"]
    assert len(images) == 3  # reliability, before/after, risk-coverage
    assert all(a.get("alt") for a in images)


def test_title_and_headings_say_what_was_audited(report):
    page = parse(report.read_text(encoding="utf-8"))
    what = "top-label confidence of a 5-class model, N = 3,000"
    assert page.text["title"] == f"Calibration report: {what}"
    headings = [t for t, _ in page.tags if t == "h2"]
    assert len(headings) == 7


def test_the_record_is_collapsed_json_that_round_trips(report, results):
    text = report.read_text(encoding="utf-8")
    page = parse(text)
    assert re.search(r"<details>\s*<summary>", text) and "<details open" not in text
    assert json.loads(page.text["record-json"]) == results["record"]


def test_empty_bins_stay_as_rows_and_text_is_escaped(tmp_path):
    rng = np.random.default_rng(3)
    p = rng.uniform(0.6, 0.9, 400)
    audit = ck.audit(p, (rng.random(400) < p).astype(int), n_boot=20, n_sims=20)
    title = '<script>alert("x")</script> & more'
    text = write_report(tmp_path / "r.html", audit=audit, title=title).read_text("utf-8")
    assert "<script>" not in text
    page = parse(text)
    assert page.text["title"] == title
    rows = page.rows["reliability-table"]
    assert len(rows) == 15 and sum(r[1] == "0" for r in rows) == int((audit.table.count == 0).sum())
    assert all(r[2:] == ["-"] * 5 for r in rows if r[1] == "0")


def test_each_part_alone(tmp_path, results):
    for key in ("ledger", "policy", "record"):
        page = parse(write_report(tmp_path / f"{key}.html", **{key: results[key]}).read_text())
        assert "reliability-table" not in page.rows
    page = parse(
        render_report(ledger=results["ledger"], before=results["before"], after=results["after"])
    )
    assert sum(t == "img" for t, _ in page.tags) == 1
    assert "TemperatureScaling" in page.text["title"]


def test_decision_sections_show_what_their_text_shows():
    """Three actions, guaranteed risk and the binary threshold each get a section whose table
    cells and lines are those of the objects' own text (the terminal prints the same)."""
    z, y = _logits(2000, seed=3)
    val, test = slice(0, 1000), slice(1000, None)
    costs = {"l_wrong": 10, "l_defer": 1, "l_ask": 0.5, "l_ask_wrong": 4}
    actions = ck.choose_actions(probs=z[val], labels=y[val], from_logits=True, **costs)
    held = actions.evaluate(probs=z[test], labels=y[test], from_logits=True)
    g = ck.guaranteed_threshold(probs=z[val], labels=y[val], from_logits=True, target_risk=0.2)
    checked = g.evaluate(probs=z[test], labels=y[test], from_logits=True)
    s = z[:, 1] - z[:, 0]
    binary = ck.binary_policy_table(
        s[val],
        y[val] == 1,
        s[test],
        y[test] == 1,
        from_logits=True,
        l_false_positive=1,
        l_false_negative=20,
    )
    page = parse(render_report(actions=held, guarantee=checked, binary=binary))
    assert page.rows["actions-table"] == [list(r) for r in actions.table_rows()]
    assert page.rows["binary-table"] == [list(r) for r in binary.table_rows()]
    text = page.text["actions"]
    assert held.describe() in text and actions.notes()[0] in text
    head, body, promise = str(g).split("\n")
    assert page.text["guarantee-threshold"] == head + body
    assert checked.describe() in page.text["guarantee"] and promise in page.text["guarantee"]
    assert binary.notes()[0] in page.text["binary"]
    assert "a binary decision on P(y = 1), 1,000 test cases" in page.text["title"]
    # the choices alone (no held-out data) are reported too, without the held-out line
    alone = parse(render_report(actions=actions, guarantee=g))
    assert held.describe() not in alone.text["actions"]
    assert checked.describe() not in alone.text["guarantee"]


def test_bad_input_says_what_to_pass(tmp_path, results):
    with pytest.raises(ck.InputError, match="nothing to report; pass audit="):
        write_report(tmp_path / "r.html")
    with pytest.raises(ck.InputError, match=r"audit must be a Audit \(from ck.audit"):
        write_report(tmp_path / "r.html", audit=results["ledger"])
    with pytest.raises(ck.InputError, match="pass before= and after= together"):
        write_report(tmp_path / "r.html", before=results["before"])
    with pytest.raises(ck.InputError, match="does not exist; create it first"):
        write_report(tmp_path / "no" / "r.html", audit=results["audit"])
    with pytest.raises(ck.InputError, match="record must be JSON-ready"):
        write_report(tmp_path / "r.html", record={"x": object()})
    with pytest.raises(ck.InputError, match="actions must be a ActionChoice or ActionsEvaluation"):
        write_report(tmp_path / "r.html", actions=results["policy"])
    with pytest.raises(ck.InputError, match="binary must be a BinaryPolicyTable"):
        write_report(tmp_path / "r.html", binary=results["policy"])
    assert list(tmp_path.iterdir()) == []


def test_figures_stay_bounded_for_many_predictions(tmp_path):
    """Nothing is drawn per prediction: 200 000 distinct confidences make a small file."""
    z, y = _logits(200_000, seed=2)
    policy = decision_report(z[:1000], y[:1000], z[1000:], y[1000:], l_wrong=10, l_defer=1)
    assert policy.curve.threshold.size > 150_000
    path = write_report(tmp_path / "r.html", policy=policy)
    assert path.stat().st_size < 400_000


# ----------------------------------------------------------------------------- atomic


def test_a_failing_write_leaves_no_file(tmp_path, results, monkeypatch):
    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_report(tmp_path / "r.html", audit=results["audit"])
    assert list(tmp_path.iterdir()) == []  # neither the report nor the temporary file


def test_a_failing_write_keeps_the_old_report(tmp_path, results, monkeypatch):
    path = tmp_path / "r.html"
    path.write_text("old report")
    path.chmod(0o640)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", refuse)
        with pytest.raises(PermissionError):
            write_report(path, audit=results["audit"])
    assert path.read_text() == "old report" and [p.name for p in tmp_path.iterdir()] == ["r.html"]
    write_report(path, audit=results["audit"])
    assert path.read_text().startswith("<!DOCTYPE html>")
    assert path.stat().st_mode & 0o777 == 0o640  # the old file's permissions are kept
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


# ----------------------------------------------------------------------------- browser

CONTROL_PAGE = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>control</title></head><body>'
    '<img src="missing.png" alt="broken"><script>console.error("control error")</script>'
    "</body></html>"
)

PROBE = """JSON.stringify({
  images: [...document.images].map(i => ({alt: i.alt, complete: i.complete,
    w: i.naturalWidth, h: i.naturalHeight, shown: i.getBoundingClientRect().width})),
  svgs: [...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width),
  bins: document.querySelectorAll('#reliability-table tbody tr').length,
  recordShown: document.getElementById('record-json')?.checkVisibility(),
  recordOpen: document.querySelector('details')?.open,
  width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight,
})"""


def find_chromium() -> str | None:
    names = [os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]
    for name in names:
        found = shutil.which(name) if name else None
        if found:
            return found
    return None


class Chromium:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3 in, fd 4 out)."""

    def __init__(self, binary: str, folder: Path, *, timeout: float = 20.0) -> None:
        self.deadline = time.monotonic() + timeout
        self.events: list[dict[str, Any]] = []
        self._buffer = b""
        self._id = 0
        to_browser, self._send_fd = os.pipe()
        self._recv_fd, from_browser = os.pipe()

        def child() -> None:  # the browser reads commands on fd 3 and writes replies to fd 4
            a = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = folder / "chromium.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [
                    binary,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--hide-scrollbars",
                    f"--user-data-dir={folder / 'profile'}",
                    "--remote-debugging-pipe",
                    "--window-size=1200,2400",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=child,
                close_fds=False,  # our own descriptors are not inheritable (PEP 446)
                start_new_session=True,
            )
        os.close(to_browser)
        os.close(from_browser)
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call(
            "Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = self.deadline - time.monotonic()
            ready, _, _ = select.select([self._recv_fd], [], [], max(left, 0))
            if not ready:
                raise TimeoutError(f"Chromium did not answer in time; see {self.log}")
            chunk = os.read(self._recv_fd, 1 << 20)
            if not chunk:
                raise EOFError(f"Chromium closed the pipe; see {self.log}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: bool = False
    ) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._send_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def load(self, path: Path) -> list[dict[str, Any]]:
        """Open a file, wait for its load event; return the events it caused."""
        self.events = []
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive())
        self.call("Runtime.evaluate", {"expression": "1", "awaitPromise": True}, session=True)
        return self.events

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"])
        return result["result"]["value"]

    def screenshot(self, path: Path, *, width: int, height: int, scale: float = 1.0) -> Path:
        clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}
        shot = self.call(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
            session=True,
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.call("Browser.close")
                self.process.wait(timeout=5)
        except (OSError, TimeoutError, EOFError, RuntimeError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)  # the browser we started, only
                self.process.wait()
            os.close(self._send_fd)
            os.close(self._recv_fd)


def problems(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions, logged errors and requests that left the file."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            found.append(f"console: {[a.get('value') for a in params['args']]}")
        elif method == "Runtime.exceptionThrown":
            found.append(f"exception: {params['exceptionDetails'].get('text')}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not (url.startswith("data:") or url == params.get("documentURL")):
                found.append(f"request: {url[:80]}")
    return found


@pytest.fixture
def chromium(tmp_path):
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CALIBKIT_SKIP_BROWSER"):
            pytest.skip("no Chromium and CALIBKIT_SKIP_BROWSER is set")
        pytest.fail("the HTML report is tested in Chromium: apt-get install -y chromium")
    browser = Chromium(binary, tmp_path)
    try:
        yield browser
    finally:
        browser.close()


def test_report_renders_in_headless_chromium(chromium, report, tmp_path, results):
    control = tmp_path / "control.html"
    control.write_text(CONTROL_PAGE, encoding="utf-8")
    caught = problems(chromium.load(control))
    assert any("control error" in p for p in caught), caught  # the checks can fail
    assert any("ERR_FILE_NOT_FOUND" in p for p in caught), caught
    assert json.loads(chromium.evaluate(PROBE))["images"][0]["w"] == 0

    chromium.call("Network.emulateNetworkConditions", NETWORK_OFF, session=True)
    assert problems(chromium.load(report)) == []
    seen = json.loads(chromium.evaluate(PROBE))
    assert len(seen["images"]) == 3
    for image in seen["images"]:
        assert image["complete"] and image["w"] > 0 and image["h"] > 0, image
        assert 0 < image["shown"] <= 1200, image
    assert all(w > 0 for w in seen["svgs"])
    assert seen["bins"] == results["audit"].n_bins
    assert seen["recordShown"] is False and seen["recordOpen"] is False  # collapsed
    assert seen["width"] <= 1200  # nothing overflows the window sideways
    shot = chromium.screenshot(tmp_path / "report.png", width=1200, height=seen["height"])
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1200  # IHDR width
    assert problems(chromium.events) == []


NETWORK_OFF = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}


def test_monitor_section_and_its_check() -> None:
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 1, 900)
    y = (rng.random(900) < p).astype(int)
    monitor = ck.monitor(p, y, by=np.repeat(["w1", "w2", "w3"], 300), n_boot=30, n_sims=30)
    page = render_report(monitor=monitor)
    assert "<title>Calibration report: calibration by group, 3 groups</title>" in page
    assert '<section id="monitor">\n<h2>Calibration by group</h2>' in page
    assert page.count('<table id="monitor-table">') == 1 and page.count("<img ") == 1
    with pytest.raises(ck.InputError, match=r"monitor= takes the result of ck.monitor\(...\)"):
        render_report(monitor=ck.audit(p, y, n_boot=20, n_sims=20))
