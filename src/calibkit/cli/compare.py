"""calibkit compare: two calibration records against the noise of a calibration that did not
move."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from .._errors import InputError
from ._common import (
    QuietOption,
    RequireSignatureOption,
    _check_quiet,
    _echo_warnings,
    _fail,
    _json_or_verdict,
    app,
)

# ----------------------------------------------------------------------------- compare


@app.command(
    help="Did calibration move beyond noise between two calibration records (written by "
    "calibkit audit --record)?\n\n"
    "Prints the change of ECE against its noise band (the changes that arise when calibration "
    "did not move, simulated from the records' per-bin sums), each bin's change of accuracy "
    "and gap with its interval (bins that moved away from the diagonal are flagged), and the "
    "change of the fitted temperature when both records carry one. Refuses records whose "
    "bins, event or outcome definition differ.\n\n"
    "Each record's digest is checked (an edited record is refused) and, when it is signed and "
    "CALIBKIT_RECORD_KEY holds the key, its HMAC-SHA256 signature (one that does not verify "
    "is refused); the output says for each record whether it was signed and verified, signed "
    "but not verified, or only digest-checked. A digest detects accidental edits, not a forger "
    "who recomputes it: for records from across a trust boundary sign them and pass "
    "--require-signature.\n\n"
    "Exit status 0 whether or not calibration moved; 2 when a record cannot be read, fails "
    "its checks, or the two cannot be compared."
)
def compare(
    old: Annotated[
        Path, typer.Argument(help="The earlier record (the reference).", show_default=False)
    ],
    new: Annotated[Path, typer.Argument(help="The later record.", show_default=False)],
    level: Annotated[
        float, typer.Option(help="Level of the noise band and of every bin's interval.")
    ] = 0.95,
    n_sims: Annotated[
        int, typer.Option(help="Simulated pairs of cohorts behind the noise band.")
    ] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the simulation.")] = 0,
    require_signature: RequireSignatureOption = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON (only that, on stdout).")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Did calibration move beyond noise between two calibration records?"""
    from ..record import compare_records, read_record
    from ..report.terminal import render_comparison

    _check_quiet(quiet, json_out, "compare")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            records = [read_record(p, require_signature=require_signature) for p in (old, new)]
            result = compare_records(*records, level=level, n_sims=n_sims, seed=seed)
        except InputError as exc:
            _fail(str(exc))
    _echo_warnings(caught)
    if _json_or_verdict(result, json_out=json_out, quiet=quiet):
        return
    from rich.console import Console

    render_comparison(result, Console(highlight=False))
