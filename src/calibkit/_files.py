"""Writing files: the one atomic writer, and the check that an output is not an input.

Every file calibkit writes (a table, a calibrator, a record, a figure, an HTML report) is written
to a temporary file beside its target, flushed to disk, and renamed over the target, so a reader
sees the old file or the whole new one, never part of one, even after a crash or a full disk.
The temporary file gets the permissions of the file it replaces, or those a new file gets from
the umask (without touching the process's umask, which other threads may be using), and carries
the writer's process id in its name, so temporaries left by a killed process are removed by the
next write to the same target.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._errors import InputError

__all__ = ["atomic_path", "check_outputs", "write_atomic"]

_SUFFIX = ".calibkit-tmp"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _remove_stale(folder: Path, name: str) -> None:
    """Remove temporaries of ``name`` left by processes that no longer run."""
    prefix = f".{name}."
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(_SUFFIX)):
            continue
        pid_text = entry.name[len(prefix) :].split(".", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _fresh(folder: Path, name: str) -> Path:
    for _ in range(100):
        path = folder / f".{name}.{os.getpid()}.{secrets.token_hex(6)}{_SUFFIX}"
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        return path
    raise FileExistsError(f"no free temporary name beside {name!r}")  # pragma: no cover


def _fsync(path: Path, *, directory: bool = False) -> None:
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # pragma: no cover - some file systems cannot open a folder
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - a folder on some file systems
        if not directory:
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, where: str) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on success it is flushed to disk and
    renamed over ``path``, on any failure it is removed and ``path`` is left as it was.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit._files import atomic_path
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target, where="example") as tmp:
    ...     _ = tmp.write_text("whole")
    >>> target.read_text(), sorted(p.name for p in target.parent.iterdir())
    ('whole', ['out.txt'])
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(
            f"{where}: the folder {str(folder)!r} for {target.name!r} does not exist; "
            "create it first."
        )
    if target.is_dir():
        raise InputError(f"{where}: {str(target)!r} is a folder; give a file name.")
    _remove_stale(folder, target.name)
    tmp = _fresh(folder, target.name)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, target.stat().st_mode & 0o7777)  # a replaced file keeps its mode
        yield tmp
        _fsync(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync(folder, directory=True)


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, where: str) -> Path:
    """Write text (UTF-8) or bytes to ``path`` atomically (see :func:`atomic_path`)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path, where=where) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(payload)
    return Path(path)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def check_outputs(
    outputs: Iterable[tuple[str, str | os.PathLike[str] | None]],
    inputs: Iterable[str | os.PathLike[str] | None],
    *,
    where: str,
) -> None:
    """Refuse an output that is one of the inputs (it would replace the data it was computed
    from) or that two outputs share. ``outputs`` are ``(option, path)`` pairs for the message.

    Examples
    --------
    >>> from calibkit._files import check_outputs
    >>> check_outputs([("--record", "a.json")], ["a.json"], where="audit")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: audit: --record 'a.json' is the input file 'a.json'; ...
    """
    ins = [Path(p) for p in inputs if p is not None]
    seen: list[tuple[str, Path]] = []
    for option, out in outputs:
        if out is None:
            continue
        target = Path(out)
        for source in ins:
            if _same_file(target, source):
                raise InputError(
                    f"{where}: {option} {str(target)!r} is the input file {str(source)!r}; "
                    "writing it would replace the data it was computed from. Choose another "
                    "output path."
                )
        for other_option, other in seen:
            if _same_file(target, other):
                raise InputError(
                    f"{where}: {option} and {other_option} both name {str(target)!r}; give "
                    "each output its own path."
                )
        seen.append((option, target))
