"""``python -m fictionworld.cli``: the same as the ``fictionworld`` console script."""

from fictionworld.cli import main

main()
