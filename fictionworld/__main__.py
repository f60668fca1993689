"""``python -m fictionworld``: the same as the ``fictionworld`` console script (and
``python -m fictionworld.cli``)."""

from fictionworld.cli import main

main()
