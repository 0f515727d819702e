"""``python -m calibkit.cli``: the same as the ``calibkit`` command."""

from . import main

if __name__ == "__main__":
    main()
