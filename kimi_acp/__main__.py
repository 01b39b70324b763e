"""`python -m kimi_acp` is `kimi`."""

from .cli import main

main()
